package taskexecutor

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/logtest"
	"github.com/jobgraph/jobgraph/rpc"
)

// A task that returned reports its final state without waiting for the TaskExecutor's loop: it
// queues its unregistration there and reports. Whatever the JobMaster then sends (FreeSlot)
// comes after the unregistration, so the slot is free at once.
func TestFinalStateIsReportedWithoutWaitingForTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		finish := make(chan struct{})
		c.reg.Register("wait", func(context.Context, Environment) error { <-finish; return nil })
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "wait", allocID(1))))
		synctest.Wait()

		held, gate := make(chan struct{}), make(chan struct{})
		te.loop.Execute(func() { close(held); <-gate })
		<-held
		close(finish)
		synctest.Wait()
		states := c.jm.statesOf(attemptID(1, 0, 0))
		freed := make(chan error, 1)
		go func() { freed <- te.FreeSlot(ctx, allocID(1), nil) }() // as the JobMaster does next
		synctest.Wait()
		close(gate)
		require.NoError(t, <-freed)
		synctest.Wait()
		assert.Equal(t, []jobgraph.ExecutionState{
			jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFinished,
		}, states, "FINISHED reported while the loop was held")
		r, err := te.SlotReport(ctx)
		require.NoError(t, err)
		assert.True(t, r.Slots[0].AllocationID.IsZero(), "the slot is free: the task had left it before FreeSlot ran")
		require.Len(t, c.rm.notifications(), 1, "the ResourceManager heard of the free slot")
	})
}

// notifyingJobMaster is a fakeJobMaster that also takes states without its caller waiting
// (rpc.TaskExecutionStateNotifier, as the in-process JobMaster): it records them and keeps the
// done callbacks for the test to call.
type notifyingJobMaster struct {
	*fakeJobMaster
	mu       sync.Mutex
	notified []jobgraph.ExecutionState
	dones    []func(error)
}

func (n *notifyingJobMaster) NotifyTaskExecutionState(_ jobgraph.JobMasterID, state rpc.TaskExecutionState, done func(error)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notified = append(n.notified, state.State)
	n.dones = append(n.dones, done)
}

func (n *notifyingJobMaster) snapshot() ([]jobgraph.ExecutionState, []func(error)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.notified), slices.Clone(n.dones)
}

// A task whose JobMaster's gateway is a TaskExecutionStateNotifier reports every state through
// it, without waiting for any answer: the task ends and leaves its slot with none of the done
// callbacks called, and UpdateTaskExecutionState is never called. A refused report is logged on
// the TaskExecutor's side.
func TestTaskStatesGoThroughTheNotifierWithoutWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		jm := &notifyingJobMaster{fakeJobMaster: c.jm}
		c.svc.Unregister(jmAddr)
		require.NoError(t, c.svc.Register(jmAddr, jm))
		c.reg.Register("noop", func(context.Context, Environment) error { return nil })
		logger, logged := logtest.NewRecorder(slog.LevelWarn)
		te, err := New(Config{ResourceID: "te-1", Address: "taskexecutor-1", NumSlots: 1, Registry: c.reg, RPC: c.svc,
			ResourceManagerAddress: rmAddr, Shuffle: c.shuffle, Logger: logger})
		require.NoError(t, err)
		defer func() { require.NoError(t, te.Close()) }()
		require.NoError(t, te.Start(ctx))
		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "noop", allocID(1))))
		synctest.Wait()

		states, dones := jm.snapshot()
		assert.Equal(t, []jobgraph.ExecutionState{
			jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFinished,
		}, states)
		assert.Equal(t, 0, c.jm.numStates(), "no UpdateTaskExecutionState call")
		require.NoError(t, te.FreeSlot(ctx, allocID(1), nil))
		r, err := te.SlotReport(ctx)
		require.NoError(t, err)
		assert.True(t, r.Slots[0].AllocationID.IsZero(), "the task left its slot with no answer to its reports")
		require.Len(t, dones, 3)
		dones[0](nil)
		dones[1](nil)
		dones[2](assert.AnError)
		synctest.Wait()
		require.Len(t, logged(), 1)
		assert.Equal(t, "reporting a task state failed", logged()[0].Msg)
		assert.Contains(t, logged()[0].Attrs, "state=FINISHED")
	})
}

// The in-process TaskExecutor takes RequestSlot, FreeSlot and DisconnectJobMaster without the
// caller waiting (rpc.TaskExecutorNotifier): each returns with the loop held, runs there in
// order, fenced as the gateway method is, and done hears what the method would have returned;
// a killed TaskExecutor refuses them at once with its unreachable error.
func TestNotifierQueuesFencedSlotCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		te := c.startTE(1, 1)
		synctest.Wait()
		var n rpc.TaskExecutorNotifier = te
		var got []error
		record := func(err error) { got = append(got, err) }
		slot := rpc.SlotID{ResourceID: te.ResourceID(), SlotNumber: 0}
		held, gate := make(chan struct{}), make(chan struct{})
		te.loop.Execute(func() { close(held); <-gate })
		<-held
		n.NotifyRequestSlot(slot, jobID(1), allocID(1), jobgraph.ResourceProfile{}, jmAddr, jmToken(1), rmToken(8), record)
		n.NotifyRequestSlot(slot, jobID(1), allocID(1), jobgraph.ResourceProfile{}, jmAddr, jmToken(1), rmToken(9), record)
		n.NotifyDisconnectJobMaster(jmToken(2), jobID(1), nil, record)
		assert.Empty(t, got, "nothing ran while the loop is held")
		close(gate)
		synctest.Wait()
		require.Len(t, got, 3)
		assert.ErrorIs(t, got[0], rpc.ErrFencingTokenMismatch, "another ResourceManagerID")
		assert.NoError(t, got[1])
		assert.ErrorIs(t, got[2], rpc.ErrFencingTokenMismatch, "another JobMasterID")
		r, err := te.SlotReport(ctx)
		require.NoError(t, err)
		assert.Equal(t, allocID(1), r.Slots[0].AllocationID)

		got = nil
		n.NotifyFreeSlot(allocID(1), nil, record)
		synctest.Wait()
		require.Equal(t, []error{nil}, got)
		r, err = te.SlotReport(ctx)
		require.NoError(t, err)
		assert.True(t, r.Slots[0].AllocationID.IsZero(), "freed")

		te.Kill()
		got = nil
		n.NotifyFreeSlot(allocID(1), nil, record)
		require.Len(t, got, 1, "answered at once")
		assert.ErrorIs(t, got[0], ErrKilled)
		assert.True(t, rpc.IsUnreachable(got[0]))
	})
}

// A closing or closed TaskExecutor refuses the notifier's calls at once with its closed error,
// as the gateway methods do: also while its loop still runs what was queued before Close.
func TestNotifierAfterCloseAnswersClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		te := c.startTE(1, 1)
		synctest.Wait()
		held, gate := make(chan struct{}), make(chan struct{})
		te.loop.Execute(func() { close(held); <-gate })
		<-held
		closed := make(chan error, 1)
		go func() { closed <- te.Close() }()
		synctest.Wait() // Close waits for the held loop
		var closing error
		te.NotifyFreeSlot(allocID(1), nil, func(err error) { closing = err })
		close(gate)
		require.NoError(t, <-closed)
		assert.ErrorIs(t, closing, ErrClosed, "refused while the loop drains")
		var got []error
		record := func(err error) { got = append(got, err) }
		te.NotifyFreeSlot(allocID(1), nil, record)
		te.NotifyDisconnectJobMaster(jmToken(1), jobID(1), nil, record)
		te.NotifyRequestSlot(rpc.SlotID{ResourceID: te.ResourceID()}, jobID(1), allocID(1), jobgraph.ResourceProfile{}, jmAddr, jmToken(1), rmToken(9), record)
		require.Len(t, got, 3, "answered at once")
		for _, err := range got {
			assert.ErrorIs(t, err, ErrClosed)
		}
		assert.ErrorIs(t, te.FreeSlot(ctx, allocID(1), nil), ErrClosed, "as the gateway method answers")
	})
}
