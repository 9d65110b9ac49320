package taskexecutor

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

var ctx = context.Background()

func TestNewValidatesAndDefaults(t *testing.T) {
	_, err := New(Config{})
	assert.EqualError(t, err, "taskexecutor: Config.RPC is required")
	_, err = New(Config{RPC: rpc.NewLocalService(), NumSlots: -1})
	assert.EqualError(t, err, "taskexecutor: Config.NumSlots is -1; want at least 1")

	te, err := New(Config{RPC: rpc.NewLocalService(), Logger: discard})
	require.NoError(t, err)
	defer te.Close()
	assert.Regexp(t, `^taskexecutor-[0-9a-f]{12}$`, string(te.ResourceID()))
	assert.Equal(t, string(te.ResourceID()), te.Address())
	r, err := te.SlotReport(ctx)
	require.NoError(t, err)
	assert.Equal(t, rpc.SlotReport{Slots: []rpc.SlotStatus{{
		SlotID:          rpc.SlotID{ResourceID: te.ResourceID(), SlotNumber: 0},
		ResourceProfile: jobgraph.ResourceProfile{CPUCores: 1},
	}}}, r)
}

func TestStartRegistersWithTheResourceManager(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		te := c.startTE(1, 2)

		got, err := rpc.Connect[rpc.TaskExecutorGateway](ctx, c.svc, "taskexecutor-1")
		require.NoError(t, err)
		assert.Same(t, te, got)
		free := func(n int) rpc.SlotStatus {
			return rpc.SlotStatus{SlotID: rpc.SlotID{ResourceID: "te-1", SlotNumber: n}, ResourceProfile: jobgraph.ResourceProfile{CPUCores: 1}}
		}
		assert.Equal(t, []rpc.TaskExecutorRegistration{{
			ResourceID:          "te-1",
			Address:             "taskexecutor-1",
			TotalResource:       jobgraph.ResourceProfile{CPUCores: 2},
			DefaultSlotResource: jobgraph.ResourceProfile{CPUCores: 1},
			SlotReport:          rpc.SlotReport{Slots: []rpc.SlotStatus{free(0), free(1)}},
		}}, c.rm.registers)
		assert.EqualError(t, te.Start(ctx), "TaskExecutor te-1: already started")

		te.Close()
		_, err = c.svc.Lookup(ctx, "taskexecutor-1")
		assert.ErrorIs(t, err, rpc.ErrUnknownAddress, "Close unregisters")
		assert.ErrorIs(t, te.CancelTask(ctx, attemptID(1, 0, 0)), ErrClosed)
		assert.ErrorIs(t, te.HeartbeatFromResourceManager(ctx, "rm"), ErrClosed)
		assert.ErrorIs(t, te.ReleasePartitions(ctx, jobID(1), nil), ErrClosed)
	})
}

// After Close every public method that returns an error returns ErrClosed (and rpc.ErrClosed),
// naming the TaskExecutor; nothing internal leaks. It is an rpc.UnreachableError: a closed
// TaskExecutor is gone for its callers, as Flink's stopped RpcEndpoint is (an RPC to its
// terminated actor fails with RecipientUnreachableException), so heartbeats count it toward
// heartbeat.rpc-failure-threshold.
func TestEveryMethodAfterCloseReturnsErrClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		require.NoError(t, te.Close())
		require.NoError(t, te.Close(), "closing twice is harmless")

		_, reportErr := te.SlotReport(ctx)
		slot := rpc.SlotID{ResourceID: "te-1"}
		for name, err := range map[string]error{
			"Start":                        te.Start(ctx),
			"SlotReport":                   reportErr,
			"RequestSlot":                  te.RequestSlot(ctx, slot, jobID(1), allocID(2), jobgraph.ResourceProfile{}, jmAddr, jmToken(1), rmToken(9)),
			"SubmitTask":                   te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "a", allocID(1))),
			"CancelTask":                   te.CancelTask(ctx, attemptID(1, 0, 0)),
			"FreeSlot":                     te.FreeSlot(ctx, allocID(1), nil),
			"ReleasePartitions":            te.ReleasePartitions(ctx, jobID(1), nil),
			"DisconnectJobMaster":          te.DisconnectJobMaster(ctx, jmToken(1), jobID(1), nil),
			"HeartbeatFromJobMaster":       te.HeartbeatFromJobMaster(ctx, "jm"),
			"HeartbeatFromResourceManager": te.HeartbeatFromResourceManager(ctx, "rm"),
			"DisconnectResourceManager":    te.DisconnectResourceManager(ctx, rmToken(9), nil),
			"CrashTask":                    te.CrashTask(attemptID(1, 0, 0), nil),
		} {
			assert.ErrorIs(t, err, ErrClosed, name)
			assert.ErrorIs(t, err, rpc.ErrClosed, name)
			assert.EqualError(t, err, "TaskExecutor te-1: taskexecutor: closed", name)
			assert.True(t, rpc.IsUnreachable(err), "a closed TaskExecutor is gone: %s", name)
		}
	})
}

func TestRequestSlotOffersTheSlotToTheJobMaster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		te := c.startTE(1, 2)
		c.allocate(te, 1, allocID(1))
		synctest.Wait()

		assert.Equal(t, []registerCall{{jmToken(1), rpc.TaskExecutorRegistration{
			ResourceID: "te-1", Address: "taskexecutor-1", DefaultSlotResource: jobgraph.ResourceProfile{CPUCores: 1},
		}}}, c.jm.registers)
		assert.Equal(t, []offerCall{{jmToken(1), "te-1", []rpc.SlotOffer{
			{AllocationID: allocID(1), SlotIndex: 1, ResourceProfile: jobgraph.ResourceProfile{CPUCores: 0.5}},
		}}}, c.jm.offers)

		r, err := te.SlotReport(ctx)
		require.NoError(t, err)
		assert.Equal(t, allocID(1), r.Slots[1].AllocationID)
		assert.Equal(t, jobID(1), r.Slots[1].JobID)
		assert.True(t, r.Slots[0].AllocationID.IsZero())

		// A second slot for the same job: offered, without registering again.
		c.allocate(te, 0, allocID(2))
		synctest.Wait()
		assert.Len(t, c.jm.registers, 1)
		require.Len(t, c.jm.offers, 2)
		assert.Equal(t, []rpc.SlotOffer{{AllocationID: allocID(2), SlotIndex: 0, ResourceProfile: jobgraph.ResourceProfile{CPUCores: 0.5}}}, c.jm.offers[1].Offers)
		assert.Empty(t, c.rm.notifications())
	})
}

func TestRequestSlotIsIdempotentAndRefusesAnOccupiedSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		te := c.startTE(1, 2)
		c.allocate(te, 0, allocID(1))
		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		assert.Len(t, c.jm.offers, 1, "asking twice for the same allocation offers once")

		slot0 := rpc.SlotID{ResourceID: "te-1", SlotNumber: 0}
		err := te.RequestSlot(ctx, slot0, jobID(1), allocID(2), jobgraph.ResourceProfile{}, jmAddr, jmToken(1), rmToken(9))
		assert.ErrorIs(t, err, ErrSlotOccupied)
		assert.EqualError(t, err, "TaskExecutor te-1: slot 0 is active for allocation "+allocID(1).String()+
			" of job "+jobID(1).String()+", cannot allocate it to "+allocID(2).String()+": slot occupied")

		err = te.RequestSlot(ctx, rpc.SlotID{ResourceID: "te-1", SlotNumber: 1}, jobID(1), allocID(1), jobgraph.ResourceProfile{}, jmAddr, jmToken(1), rmToken(9))
		assert.ErrorIs(t, err, ErrSlotOccupied, "one allocation, one slot")

		err = te.RequestSlot(ctx, rpc.SlotID{ResourceID: "te-1", SlotNumber: 2}, jobID(1), allocID(3), jobgraph.ResourceProfile{}, jmAddr, jmToken(1), rmToken(9))
		assert.ErrorIs(t, err, ErrSlotNotFound)
		err = te.RequestSlot(ctx, rpc.SlotID{ResourceID: "te-2", SlotNumber: 1}, jobID(1), allocID(3), jobgraph.ResourceProfile{}, jmAddr, jmToken(1), rmToken(9))
		assert.ErrorIs(t, err, ErrSlotNotFound)
		err = te.RequestSlot(ctx, rpc.SlotID{ResourceID: "te-1", SlotNumber: 1}, jobID(1), allocID(3), jobgraph.ResourceProfile{CPUCores: 2}, jmAddr, jmToken(1), rmToken(9))
		assert.EqualError(t, err, "TaskExecutor te-1: slot 1 offers {cpu=1}, less than the {cpu=2} asked for")

		// A request from another ResourceManager than the one te-1 registered with (rmToken(9))
		// is fenced off and allocates nothing: slot 1 stays free for the current one.
		err = te.RequestSlot(ctx, rpc.SlotID{ResourceID: "te-1", SlotNumber: 1}, jobID(1), allocID(3), jobgraph.ResourceProfile{}, jmAddr, jmToken(1), rmToken(8))
		requireFencingError(t, err, rmToken(9).String(), rmToken(8).String())
		synctest.Wait()
		assert.Len(t, c.jm.offers, 1, "nothing offered")
		r, err := te.SlotReport(ctx)
		require.NoError(t, err)
		assert.True(t, r.Slots[1].AllocationID.IsZero(), "slot 1 is still free")
		require.NoError(t, te.RequestSlot(ctx, rpc.SlotID{ResourceID: "te-1", SlotNumber: 1}, jobID(1), allocID(3), jobgraph.ResourceProfile{}, jmAddr, jmToken(1), rmToken(9)))
	})
}

func TestDeclinedOfferFreesTheSlotAndTellsTheResourceManager(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.jm.decline[allocID(2)] = true
		te := c.startTE(1, 2)
		c.allocate(te, 0, allocID(1))
		c.allocate(te, 1, allocID(2))
		synctest.Wait()

		assert.Equal(t, []notifyCall{{"te-1", rpc.SlotID{ResourceID: "te-1", SlotNumber: 1}, allocID(2)}}, c.rm.notifications())
		r, err := te.SlotReport(ctx)
		require.NoError(t, err)
		assert.Equal(t, allocID(1), r.Slots[0].AllocationID)
		assert.True(t, r.Slots[1].AllocationID.IsZero(), "declined slot is free again")
	})
}

func TestOfferToAnUnreachableJobMasterFreesTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		te := c.startTE(1, 1)
		err := te.RequestSlot(ctx, rpc.SlotID{ResourceID: "te-1"}, jobID(1), allocID(1), jobgraph.ResourceProfile{}, "nowhere", jmToken(1), rmToken(9))
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, []notifyCall{{"te-1", rpc.SlotID{ResourceID: "te-1"}, allocID(1)}}, c.rm.notifications())

		c.jm.offerErr = errors.New("offers closed")
		c.allocate(te, 0, allocID(2))
		synctest.Wait()
		assert.Len(t, c.rm.notifications(), 2)
		r, err := te.SlotReport(ctx)
		require.NoError(t, err)
		assert.True(t, r.Slots[0].AllocationID.IsZero())
	})
}

func TestSubmitTaskWithAStaleJobMasterIDIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		started := false
		c.reg.Register("noop", func(context.Context, Environment) error { started = true; return nil })
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()

		err := te.SubmitTask(ctx, jmToken(2), tdd(1, 0, "noop", allocID(1)))
		require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
		var fe *rpc.FencingError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, rpc.FencingError{Endpoint: "TaskExecutor te-1", Expected: jmToken(1).String(), Got: jmToken(2).String()}, *fe)
		synctest.Wait()
		assert.False(t, started)
		assert.Equal(t, 0, c.jm.numStates())
	})
}

func TestANewJobMasterLeaderGetsTheSlotsAndTheOldTokenIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.reg.Register("noop", func(context.Context, Environment) error { return nil })
		te := c.startTE(1, 2)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()

		// The job's JobMaster lost leadership; the new leader (token 2) gets a slot.
		err := te.RequestSlot(ctx, rpc.SlotID{ResourceID: "te-1", SlotNumber: 1}, jobID(1), allocID(2),
			jobgraph.ResourceProfile{}, jmAddr, jmToken(2), rmToken(9))
		require.NoError(t, err)
		synctest.Wait()
		require.Len(t, c.jm.registers, 2)
		assert.Equal(t, jmToken(2), c.jm.registers[1].Token, "registers afresh with the new leader")
		require.Len(t, c.jm.offers, 2)
		assert.Equal(t, jmToken(2), c.jm.offers[1].Token)

		assert.ErrorIs(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "noop", allocID(1))), rpc.ErrFencingTokenMismatch)
		require.NoError(t, te.SubmitTask(ctx, jmToken(2), tdd(1, 0, "noop", allocID(1))))
		synctest.Wait()
		assert.Equal(t, jmToken(2), c.jm.lastState(t, attemptID(1, 0, 0)).Token)
	})
}

// A JobMaster may deploy into a slot as soon as it accepted it, before the TaskExecutor has
// seen the answer to its offer.
func TestSubmitTaskBeforeTheOfferAnswerArrived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.reg.Register("noop", func(context.Context, Environment) error { return nil })
		answer := make(chan struct{})
		c.jm.offerHook = func() { <-answer }
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait() // OfferSlots is in progress

		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "noop", allocID(1))))
		synctest.Wait()
		close(answer)
		synctest.Wait()
		assert.Equal(t, []jobgraph.ExecutionState{
			jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFinished,
		}, c.jm.statesOf(attemptID(1, 0, 0)))
		assert.Empty(t, c.rm.notifications(), "the slot stays allocated")
		r, err := te.SlotReport(ctx)
		require.NoError(t, err)
		assert.Equal(t, allocID(1), r.Slots[0].AllocationID)
	})
}

func TestSubmitTaskNeedsTheSlotOfItsJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.reg.Register("noop", func(context.Context, Environment) error { return nil })
		te := c.startTE(1, 1)

		err := te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "noop", allocID(1)))
		assert.ErrorIs(t, err, ErrSlotNotFound)
		assert.EqualError(t, err, "TaskExecutor te-1: cannot deploy v1 (1/2): no slot allocated for allocation "+allocID(1).String()+": slot not found")

		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		d := tdd(1, 0, "noop", allocID(1))
		d.JobID = jobID(2)
		err = te.SubmitTask(ctx, jmToken(1), d)
		assert.ErrorIs(t, err, ErrSlotNotFound)
		synctest.Wait()
		assert.Equal(t, 0, c.jm.numStates())
	})
}

func TestTaskReportsInitializingRunningFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		var info TaskInfo
		c.reg.Register("noop", func(_ context.Context, env Environment) error { info = env.Info(); return nil })
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()

		d := tdd(1, 1, "noop", allocID(1))
		d.Config = []byte("cfg")
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), d))
		synctest.Wait()

		a := attemptID(1, 1, 0)
		assert.Equal(t, []jobgraph.ExecutionState{
			jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFinished,
		}, c.jm.statesOf(a))
		assert.Equal(t, stateCall{jmToken(1), rpc.TaskExecutionState{ExecutionAttemptID: a, State: jobgraph.ExecutionStateFinished}}, c.jm.lastState(t, a))
		assert.Equal(t, TaskInfo{
			JobID: jobID(1), ExecutionAttemptID: a, TaskName: "v1 (2/2)", VertexName: "v1",
			SubtaskIndex: 1, Parallelism: 2, MaxParallelism: 128, Config: []byte("cfg"),
		}, info)

		// The finished task is gone: cancelling it finds nothing.
		assert.ErrorIs(t, te.CancelTask(ctx, a), ErrTaskNotFound)
	})
}

// As in Flink (unregisterTaskAndNotifyFinalState), a task has left its slot by the time its
// final state reaches the JobMaster, so the JobMaster may free the slot at once.
func TestTaskLeavesItsSlotBeforeItsFinalStateIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.reg.Register("noop", func(context.Context, Environment) error { return nil })
		te := c.startTE(1, 1)
		a := attemptID(1, 0, 0)
		var cancelErr error
		var freed rpc.SlotReport
		c.jm.stateHook = func(s rpc.TaskExecutionState) {
			if s.State == jobgraph.ExecutionStateFinished {
				cancelErr = te.CancelTask(ctx, a)
				require.NoError(t, te.FreeSlot(ctx, allocID(1), nil))
				freed, _ = te.SlotReport(ctx)
			}
		}
		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "noop", allocID(1))))
		synctest.Wait()
		assert.ErrorIs(t, cancelErr, ErrTaskNotFound)
		require.Len(t, freed.Slots, 1)
		assert.True(t, freed.Slots[0].AllocationID.IsZero(), "freed at once, not left releasing")
	})
}

func TestFailingTaskReportsFailedWithItsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		boom := errors.New("boom: bad record 17")
		c.reg.Register("fail", func(context.Context, Environment) error { return boom })
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()

		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "fail", allocID(1))))
		synctest.Wait()
		a := attemptID(1, 0, 0)
		assert.Equal(t, []jobgraph.ExecutionState{
			jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFailed,
		}, c.jm.statesOf(a))
		last := c.jm.lastState(t, a)
		assert.Equal(t, &jobgraph.ErrorInfo{Message: "boom: bad record 17"}, last.State.Failure, "plain data: the text, no codes")
		assert.Equal(t, "boom: bad record 17", last.State.Failure.Message)
		assert.Equal(t, jmToken(1), last.Token)
	})
}

func TestPanickingTaskFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.reg.Register("panic", func(context.Context, Environment) error { panic("nil map") })
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "panic", allocID(1))))
		synctest.Wait()
		last := c.jm.lastState(t, attemptID(1, 0, 0))
		assert.Equal(t, jobgraph.ExecutionStateFailed, last.State.State)
		assert.Contains(t, last.State.Failure.Message, `task code "panic" of v1 (1/2) panicked: nil map`)
	})
}

func TestCancelTaskReportsCanceledOnceTheTaskReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		release := make(chan struct{})
		c.reg.Register("wait", func(ctx context.Context, _ Environment) error {
			<-ctx.Done()
			<-release // keeps running a while after the cancel
			return ctx.Err()
		})
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		a := attemptID(1, 0, 0)
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "wait", allocID(1))))
		synctest.Wait()
		assert.Equal(t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning}, c.jm.statesOf(a))

		require.NoError(t, te.CancelTask(ctx, a))
		synctest.Wait()
		assert.Equal(t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning}, c.jm.statesOf(a),
			"not CANCELED while the task code still runs")
		close(release)
		synctest.Wait()
		assert.Equal(t, []jobgraph.ExecutionState{
			jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateCanceled,
		}, c.jm.statesOf(a))

		err := te.CancelTask(ctx, attemptID(7, 0, 0))
		assert.ErrorIs(t, err, ErrTaskNotFound)
		assert.EqualError(t, err, "TaskExecutor te-1: cannot cancel execution "+attemptID(7, 0, 0).String()+": task not found")
	})
}

func TestMissingTaskCodeFailsTheTaskNamingIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.reg.Register("b", func(context.Context, Environment) error { return nil })
		c.reg.Register("a", func(context.Context, Environment) error { return nil })
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()

		d := tdd(1, 0, "foo", allocID(1))
		d.ProducedPartitions = []rpc.ResultPartitionDeploymentDescriptor{{
			ResultPartitionID: partID(1, 0, d.ExecutionAttemptID), ResultType: jobgraph.Blocking, NumberOfSubpartitions: 1,
		}}
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), d), "a missing task code is a task failure, not an RPC error")
		synctest.Wait()
		a := attemptID(1, 0, 0)
		assert.Equal(t, []jobgraph.ExecutionState{jobgraph.ExecutionStateFailed}, c.jm.statesOf(a))
		last := c.jm.lastState(t, a)
		assert.Equal(t, `task code "foo" is not registered on TaskExecutor te-1 (registered: a, b)`, last.State.Failure.Message)
		assert.Equal(t, []string{"taskexecutor.unknown-invokable"}, last.State.Failure.Codes)
		assert.ErrorIs(t, last.State.Failure.Err(), ErrUnknownInvokable, "the sentinel matches on the JobMaster's side")

		// Its partition is failed, so a reader does not wait for it forever.
		g, err := c.shuffle.newGate(jobID(1), rpc.InputGateDeploymentDescriptor{
			ResultType: jobgraph.Blocking, Partitions: []rpc.ResultPartitionID{partID(1, 0, a)}, ConsumedSubpartitionIndex: 0,
		})
		require.NoError(t, err)
		defer g.close()
		_, err = g.Next(ctx)
		assert.ErrorIs(t, err, ErrProducerFailed)
		assert.ErrorIs(t, err, ErrUnknownInvokable)
	})
}

func TestUnknownInvokableErrorWithNothingRegistered(t *testing.T) {
	e := &UnknownInvokableError{Name: "x", TaskExecutor: "te-9"}
	assert.EqualError(t, e, `task code "x" is not registered on TaskExecutor te-9 (registered: none)`)
}

func TestCrashTaskFailsTheTaskWithTheError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.reg.Register("wait", func(ctx context.Context, _ Environment) error { <-ctx.Done(); return nil })
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		a := attemptID(1, 0, 0)
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "wait", allocID(1))))
		synctest.Wait()

		crash := errors.New("disk on fire")
		require.NoError(t, te.CrashTask(a, crash))
		synctest.Wait()
		last := c.jm.lastState(t, a)
		assert.Equal(t, jobgraph.ExecutionStateFailed, last.State.State)
		assert.Equal(t, "disk on fire", last.State.Failure.Message)
		assert.ErrorIs(t, te.CrashTask(a, crash), ErrTaskNotFound)
	})
}

func TestFreeSlotCancelsItsTasksThenTellsTheResourceManager(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		release := make(chan struct{})
		c.reg.Register("wait", func(ctx context.Context, _ Environment) error { <-ctx.Done(); <-release; return nil })
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		a := attemptID(1, 0, 0)
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "wait", allocID(1))))
		synctest.Wait()

		require.NoError(t, te.FreeSlot(ctx, allocID(1), rpc.Failure(errors.New("job done"))))
		synctest.Wait()
		assert.Empty(t, c.rm.notifications(), "the slot is freed only once its task has returned")
		err := te.SubmitTask(ctx, jmToken(1), tdd(1, 1, "wait", allocID(1)))
		assert.ErrorIs(t, err, ErrSlotNotFound, "no new task into a slot being freed")

		close(release)
		synctest.Wait()
		assert.Equal(t, jobgraph.ExecutionStateCanceled, c.jm.lastState(t, a).State.State)
		assert.Equal(t, []notifyCall{{"te-1", rpc.SlotID{ResourceID: "te-1"}, allocID(1)}}, c.rm.notifications())
		r, err := te.SlotReport(ctx)
		require.NoError(t, err)
		assert.True(t, r.Slots[0].AllocationID.IsZero())

		assert.NoError(t, te.FreeSlot(ctx, allocID(1), nil), "freeing a free slot is a no-op")
		assert.Len(t, c.rm.notifications(), 1)

		// The slot can be allocated again, and the job registers with its JobMaster afresh.
		c.allocate(te, 0, allocID(2))
		synctest.Wait()
		assert.Len(t, c.jm.registers, 2)
	})
}

func TestDisconnectJobMasterFailsTasksAndFreesSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.reg.Register("wait", func(ctx context.Context, _ Environment) error { <-ctx.Done(); return ctx.Err() })
		c.reg.Register("produce", func(ctx context.Context, env Environment) error { return env.Output(0).Emit(ctx, 0, 1) })
		te := c.startTE(1, 2)
		c.allocate(te, 0, allocID(1))
		c.allocate(te, 1, allocID(2))
		synctest.Wait()

		p := tdd(2, 0, "produce", allocID(2))
		pid := partID(2, 0, p.ExecutionAttemptID)
		p.ProducedPartitions = []rpc.ResultPartitionDeploymentDescriptor{{ResultPartitionID: pid, ResultType: jobgraph.Blocking, NumberOfSubpartitions: 1}}
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), p))
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "wait", allocID(1))))
		synctest.Wait()
		require.Equal(t, 1, c.shuffle.Len())

		// An earlier leader's disconnect is fenced off: nothing fails, nothing is freed.
		err := te.DisconnectJobMaster(ctx, jmToken(7), jobID(1), rpc.Failure(errors.New("old leader closing")))
		require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
		synctest.Wait()
		assert.Equal(t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning}, c.jm.statesOf(attemptID(1, 0, 0)))
		assert.Empty(t, c.rm.notifications(), "no slot freed")
		assert.Equal(t, 1, c.shuffle.Len(), "no partition released")

		require.NoError(t, te.DisconnectJobMaster(ctx, jmToken(1), jobID(1), rpc.Failure(errors.New("leadership lost"))))
		synctest.Wait()
		last := c.jm.lastState(t, attemptID(1, 0, 0))
		assert.Equal(t, jobgraph.ExecutionStateFailed, last.State.State)
		assert.Equal(t, "JobMaster of job "+jobID(1).String()+" disconnected from TaskExecutor te-1: leadership lost", last.State.Failure.Message)
		assert.Len(t, c.rm.notifications(), 2)
		assert.Equal(t, 0, c.shuffle.Len(), "the job's partitions produced here are released")

		err = te.SubmitTask(ctx, jmToken(1), tdd(1, 1, "wait", allocID(1)))
		assert.ErrorIs(t, err, ErrSlotNotFound)
	})
}

func TestKillStopsAnsweringAndCancelsTasksSilently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.reg.Register("wait", func(ctx context.Context, _ Environment) error { <-ctx.Done(); return ctx.Err() })
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		a := attemptID(1, 0, 0)
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "wait", allocID(1))))
		synctest.Wait()
		reported := c.jm.numStates()

		te.Kill()
		synctest.Wait()
		assert.Equal(t, reported, c.jm.numStates(), "a killed TaskExecutor reports nothing")
		assert.Empty(t, c.rm.notifications())

		slot := rpc.SlotID{ResourceID: "te-1"}
		for name, err := range map[string]error{
			"RequestSlot":                  te.RequestSlot(ctx, slot, jobID(1), allocID(2), jobgraph.ResourceProfile{}, jmAddr, jmToken(1), rmToken(9)),
			"SubmitTask":                   te.SubmitTask(ctx, jmToken(1), tdd(1, 1, "wait", allocID(1))),
			"CancelTask":                   te.CancelTask(ctx, a),
			"FreeSlot":                     te.FreeSlot(ctx, allocID(1), nil),
			"ReleasePartitions":            te.ReleasePartitions(ctx, jobID(1), nil),
			"DisconnectJobMaster":          te.DisconnectJobMaster(ctx, jmToken(1), jobID(1), nil),
			"HeartbeatFromJobMaster":       te.HeartbeatFromJobMaster(ctx, "jm"),
			"HeartbeatFromResourceManager": te.HeartbeatFromResourceManager(ctx, "rm"),
			"DisconnectResourceManager":    te.DisconnectResourceManager(ctx, rmToken(9), nil),
			"CrashTask":                    te.CrashTask(a, nil),
		} {
			assert.ErrorIs(t, err, ErrKilled, name)
			assert.EqualError(t, err, "TaskExecutor te-1: taskexecutor: killed", name)
			// As a transport's error for a peer whose process is gone: heartbeat senders count it
			// toward heartbeat.rpc-failure-threshold.
			assert.True(t, rpc.IsUnreachable(err), name)
		}
		_, err := te.SlotReport(ctx)
		assert.ErrorIs(t, err, ErrKilled)
		assert.True(t, rpc.IsUnreachable(err))
		te.Close()
		assert.Equal(t, reported, c.jm.numStates())
	})
}

func TestCloseCancelsRunningTasksAndWaitsForThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		var returned atomic.Int32
		c.reg.Register("wait", func(ctx context.Context, env Environment) error {
			defer returned.Add(1)
			_, err := env.Input(0).Next(ctx) // waits for a producer that never comes
			return err
		})
		te := c.startTE(1, 2)
		c.allocate(te, 0, allocID(1))
		c.allocate(te, 1, allocID(2))
		synctest.Wait()
		for sub, a := range []jobgraph.AllocationID{allocID(1), allocID(2)} {
			d := tdd(3, sub, "wait", a)
			d.InputGates = []rpc.InputGateDeploymentDescriptor{{
				ResultType: jobgraph.PipelinedBounded, Partitions: []rpc.ResultPartitionID{partID(1, 0, attemptID(1, 0, 0))}, ConsumedSubpartitionIndex: sub,
			}}
			require.NoError(t, te.SubmitTask(ctx, jmToken(1), d))
		}
		synctest.Wait()
		te.Close()
		assert.Equal(t, int32(2), returned.Load(), "Close returns after the task goroutines")
		assert.Equal(t, 0, c.shuffle.Len(), "the readers' placeholder partition is gone with them")
	})
}

// TestPipelineAcrossTaskExecutors runs source (2 subtasks) → sum (1 subtask) over a
// PIPELINED_BOUNDED data set, the sum on another TaskExecutor sharing the shuffle, deployed first.
func TestPipelineAcrossTaskExecutors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		const n = 10_000
		c.reg.Register("source", func(ctx context.Context, env Environment) error {
			out := env.Output(0)
			for i := range n {
				if err := out.Emit(ctx, 0, env.Info().SubtaskIndex*n+i); err != nil {
					return err
				}
			}
			return nil
		})
		var sum, count int
		c.reg.Register("sum", func(ctx context.Context, env Environment) error {
			in := env.Input(0)
			for {
				r, err := in.Next(ctx)
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
				sum += r.(int)
				count++
			}
		})
		te1 := c.startTE(1, 2)
		te2 := c.startTE(2, 1)
		c.allocate(te1, 0, allocID(1))
		c.allocate(te1, 1, allocID(2))
		c.allocate(te2, 0, allocID(3))
		synctest.Wait()

		sink := tdd(2, 0, "sum", allocID(3))
		var srcs []rpc.TaskDeploymentDescriptor
		gate := rpc.InputGateDeploymentDescriptor{DataSetID: dataSet(1), ResultType: jobgraph.PipelinedBounded}
		for sub, a := range []jobgraph.AllocationID{allocID(1), allocID(2)} {
			d := tdd(1, sub, "source", a)
			pid := partID(1, sub, d.ExecutionAttemptID)
			d.ProducedPartitions = []rpc.ResultPartitionDeploymentDescriptor{{ResultPartitionID: pid, ResultType: jobgraph.PipelinedBounded, NumberOfSubpartitions: 1}}
			gate.Partitions = append(gate.Partitions, pid)
			srcs = append(srcs, d)
		}
		sink.InputGates = []rpc.InputGateDeploymentDescriptor{gate}
		require.NoError(t, te2.SubmitTask(ctx, jmToken(1), sink))
		for _, d := range srcs {
			require.NoError(t, te1.SubmitTask(ctx, jmToken(1), d))
		}
		synctest.Wait()

		for _, a := range []jobgraph.ExecutionAttemptID{attemptID(1, 0, 0), attemptID(1, 1, 0), attemptID(2, 0, 0)} {
			assert.Equal(t, []jobgraph.ExecutionState{
				jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFinished,
			}, c.jm.statesOf(a), a.String())
		}
		assert.Equal(t, 2*n, count)
		assert.Equal(t, (2*n-1)*2*n/2, sum)
		assert.Equal(t, 0, c.shuffle.Len(), "pipelined partitions read to the end are dropped")
	})
}

// A failing producer fails its pipelined consumer with an error naming the partition.
func TestProducerFailureReachesTheConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.reg.Register("source", func(ctx context.Context, env Environment) error {
			if err := env.Output(0).Emit(ctx, 0, "x"); err != nil {
				return err
			}
			return errors.New("source broke")
		})
		c.reg.Register("sink", func(ctx context.Context, env Environment) error {
			for {
				if _, err := env.Input(0).Next(ctx); err != nil {
					return err
				}
			}
		})
		te := c.startTE(1, 2)
		c.allocate(te, 0, allocID(1))
		c.allocate(te, 1, allocID(2))
		synctest.Wait()
		src := tdd(1, 0, "source", allocID(1))
		pid := partID(1, 0, src.ExecutionAttemptID)
		src.ProducedPartitions = []rpc.ResultPartitionDeploymentDescriptor{{ResultPartitionID: pid, ResultType: jobgraph.Pipelined, NumberOfSubpartitions: 1}}
		sink := tdd(2, 0, "sink", allocID(2))
		sink.InputGates = []rpc.InputGateDeploymentDescriptor{{ResultType: jobgraph.Pipelined, Partitions: []rpc.ResultPartitionID{pid}, ConsumedSubpartitionIndex: 0}}
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), sink))
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), src))
		synctest.Wait()

		assert.Equal(t, "source broke", c.jm.lastState(t, attemptID(1, 0, 0)).State.Failure.Message)
		last := c.jm.lastState(t, attemptID(2, 0, 0))
		assert.Equal(t, jobgraph.ExecutionStateFailed, last.State.State)
		assert.Equal(t, "result partition "+partitionName(pid)+": producer failed: source broke", last.State.Failure.Message)
		assert.ErrorIs(t, last.State.Failure.Err(), ErrProducerFailed)
	})
}

func TestInputAndOutputIndexOutOfRange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		var inErr, outErr error
		c.reg.Register("t", func(ctx context.Context, env Environment) error {
			_, inErr = env.Input(0).Next(ctx)
			outErr = env.Output(2).Emit(ctx, 0, 1)
			return nil
		})
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "t", allocID(1))))
		synctest.Wait()
		assert.EqualError(t, inErr, "v1 (1/2): input 0 out of range [0, 0)")
		assert.EqualError(t, outErr, "v1 (1/2): output 2 out of range [0, 0)")
	})
}

// requireFencingError requires err to be the *rpc.FencingError of a refused fenced call (it
// matches rpc.ErrFencingTokenMismatch) with the token the TaskExecutor expected and the one it
// got, as their String forms.
func requireFencingError(t *testing.T, err error, expected, got string) {
	t.Helper()
	require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
	var fe *rpc.FencingError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, expected, fe.Expected)
	assert.Equal(t, got, fe.Got)
}
