// Package tetest is the conformance suite for rpc.TaskExecutorGateway implementations: anything
// that registers with the ResourceManager and runs tasks, as taskexecutor.TaskExecutor does. It
// checks RequestSlot (idempotent for the same allocation, refused for a slot another allocation
// holds), SubmitTask into a slot not allocated to the job, fencing (a stale ResourceManagerID,
// JobMasterID or disconnect changes nothing and matches rpc.ErrFencingTokenMismatch; so does a
// checkpoint trigger, confirmation or abort of an earlier JobMaster session), a checkpoint
// trigger for an attempt that does not run there (declined with CheckpointDeclinedTaskNotReady,
// not an error of the call), operator events (SendOperatorEventToTask reaches the running task's
// handler exactly once and in order, is refused for an attempt that does not run there with
// rpc.ErrTaskNotRunning and for an earlier session with rpc.ErrFencingTokenMismatch, and answers
// the handler's error), FreeSlot of
// an unknown allocation and of a running one, and the heartbeat answers to the ResourceManager and
// the JobMaster.
//
// The cases named TaskExecutorNotifier/… check a gateway that also implements the optional
// rpc.TaskExecutorNotifier (as the in-process TaskExecutor does): that NotifyRequestSlot,
// NotifyFreeSlot and NotifyDisconnectJobMaster behave as RequestSlot, FreeSlot and
// DisconnectJobMaster (the same allocation, offer, cancellation and announcement to the
// ResourceManager; refused where those are, a stale token with rpc.ErrFencingTokenMismatch),
// call their done exactly once with that error, and come before every call made after they
// returned (a waiting call right after one sees its effect). A gateway that does not implement
// it (a transport's client proxy) passes them: each logs (t.Log) that it was not applicable.
//
// The case ResourceManagerDisconnector/… checks a gateway that also implements the optional
// rpc.ResourceManagerDisconnector (the in-process TaskExecutor, and transport/grpc's proxy of
// one): a disconnect carrying another ResourceManagerID than the registration's is refused with
// rpc.ErrFencingTokenMismatch and the TaskExecutor does not register again; the current
// ResourceManager's makes it register again, once, with its slots as they are (the slot it holds
// listed under its allocation), and its slot requests are still taken. A gateway without it
// passes, logging that it was not applicable.
//
// Run it from the implementation's tests:
//
//	func TestConformance(t *testing.T) {
//		tetest.TestTaskExecutor(t, func(t *testing.T, env tetest.Env) rpc.TaskExecutorGateway {
//			te := mytaskexecutor.Start(env.RPC, env.ResourceID, env.Address, env.ResourceManagerAddress, env.NumSlots)
//			t.Cleanup(func() { te.Close() })
//			return te
//		})
//	}
//
// Each case starts a fake ResourceManager and a fake JobMaster on a fresh in-process rpc.Service
// and asks newTaskExecutor for the implementation, which must register its gateway under
// env.Address, register with the ResourceManager at env.ResourceManagerAddress, run the task code
// named InvokableFinish, InvokableBlock and InvokableEvents, and close itself when the case ends
// (t.Cleanup).
// TestTaskExecutor runs in real time; TestTaskExecutorInBubble runs each case inside its own
// testing/synctest bubble, and there also checks that nothing more was sent.
// TestTaskExecutorOver runs the cases in real time over a transport of the implementation's
// choice, so the TaskExecutor can run in another process. No case sleeps: each
// waits for what it expects for at most Timeout.
package tetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/internal/notifytest"
	"github.com/jobgraph/jobgraph/rpc"
)

// Timeout bounds every wait of the suite (virtual time in a bubble).
const Timeout = 10 * time.Second

// The task code a TaskExecutor under test must run.
const (
	// InvokableFinish returns nil at once: the task FINISHES.
	InvokableFinish = "tetest.finish"
	// InvokableBlock runs until its task is canceled (its context ends), then returns.
	InvokableBlock = "tetest.block"
	// InvokableEvents sets an operator event handler that sends every event it is given back to
	// the coordinator unchanged (SendEventToCoordinator), except the event EventFail, for which
	// it returns an error whose text contains HandlerRefused; then it waits for mail (the
	// Environment's Yield) until its task is canceled. The suite deploys it with
	// HasOperatorCoordinator set.
	InvokableEvents = "tetest.events"
	// EventFail is the event InvokableEvents's handler refuses, with an error containing
	// HandlerRefused.
	EventFail      = "fail"
	HandlerRefused = "tetest: the handler refused the event"
)

// Env is what newTaskExecutor gets for one case.
type Env struct {
	// RPC is the case's Service: register the gateway there, and reach the ResourceManager and
	// the JobMaster through it.
	RPC rpc.Service
	// ResourceID and Address name the TaskExecutor; register the gateway under Address.
	ResourceID jobgraph.ResourceID
	Address    string
	// ResourceManagerAddress is where the fake ResourceManager listens.
	ResourceManagerAddress string
	// NumSlots is how many slots the TaskExecutor must have (2), each of the same profile.
	NumSlots int
}

// TestTaskExecutor runs the conformance suite, one subtest per case, in real time.
func TestTaskExecutor(t *testing.T, newTaskExecutor func(t *testing.T, env Env) rpc.TaskExecutorGateway) {
	run(t, localTransport, newTaskExecutor, false)
}

// Transport is the rpc.Service the suite's fakes are served on, for TestTaskExecutorOver.
type Transport struct {
	// NewService returns a fresh Service for one case; the suite registers its fake
	// ResourceManager and JobMaster on it and closes it when the case ends.
	NewService func(t *testing.T) rpc.Service
	// Address returns the address under which what is registered on svc as name is reached
	// from any process (the suite registers under it and hands it out, as
	// Env.ResourceManagerAddress and as the JobMaster's address in RequestSlot).
	Address func(svc rpc.Service, name string) string
}

// localTransport is the in-process Service, where an endpoint's name is its address.
var localTransport = Transport{
	NewService: func(*testing.T) rpc.Service { return rpc.NewLocalService() },
	Address:    func(_ rpc.Service, name string) string { return name },
}

// TestTaskExecutorOver runs the conformance suite, one subtest per case, in real time, with the
// suite's fakes on tr's Service: newTaskExecutor may start the TaskExecutor anywhere (another
// process) as long as it registers with the ResourceManager at env.ResourceManagerAddress, and
// returns a gateway to it (a client stub of env.RPC, say). env.Address is then only the name
// to register under; the suite reaches the TaskExecutor at the address its registration names.
func TestTaskExecutorOver(t *testing.T, tr Transport, newTaskExecutor func(t *testing.T, env Env) rpc.TaskExecutorGateway) {
	run(t, tr, newTaskExecutor, false)
}

// TestTaskExecutorInBubble runs the conformance suite with each case inside a testing/synctest
// bubble. Only for implementations whose goroutines all end when they are closed and that do no
// real I/O.
func TestTaskExecutorInBubble(t *testing.T, newTaskExecutor func(t *testing.T, env Env) rpc.TaskExecutorGateway) {
	run(t, localTransport, newTaskExecutor, true)
}

var cases = []struct {
	name string
	run  func(s *suite)
}{
	{"RequestSlot/IdempotentForTheSameAllocation", requestSlotIdempotent},
	{"RequestSlot/SlotOccupiedByAnotherAllocation", requestSlotOccupied},
	{"SubmitTask/IntoASlotNotAllocatedToTheJob", submitIntoForeignSlot},
	{"SubmitTasks/EachDescriptorAsSubmitTask", submitTasksEach},
	{"Fencing/StaleResourceManagerID", fencingStaleResourceManager},
	{"Fencing/StaleJobMasterID", fencingStaleJobMaster},
	{"Fencing/StaleDisconnectJobMaster", fencingStaleDisconnect},
	{"FreeSlot/UnknownAllocationIsANoOp", freeUnknownSlot},
	{"FreeSlot/CancelsTheTaskAndTellsTheResourceManager", freeRunningSlot},
	{"Heartbeat/AnswersTheResourceManagerWithItsSlots", heartbeatResourceManager},
	{"Heartbeat/AnswersTheJobMasterWithItsSlots", heartbeatJobMaster},
	{"Checkpoint/StaleJobMasterIDChangesNothing", checkpointStaleJobMaster},
	{"Checkpoint/UnknownAttemptIsDeclinedNotReady", checkpointUnknownAttempt},
	{"OperatorEvents/ReachTheRunningTaskOnceInOrder", eventsInOrder},
	{"OperatorEvents/UnknownAttemptIsNotRunning", eventsUnknownAttempt},
	{"OperatorEvents/StaleJobMasterIDChangesNothing", eventsStaleJobMaster},
	{"OperatorEvents/TheHandlersErrorComesBack", eventsHandlerError},
	// Only for a gateway that implements rpc.TaskExecutorNotifier; see notifier.go.
	{"TaskExecutorNotifier/RequestSlotAllocatesAndOffersAsRequestSlot", notifierRequestSlot},
	{"TaskExecutorNotifier/RequestSlotRefusedAsRequestSlot", notifierRequestSlotRefused},
	{"TaskExecutorNotifier/FreeSlotFreesAsFreeSlot", notifierFreeSlot},
	{"TaskExecutorNotifier/FreeSlotCancelsTheRunningTask", notifierFreeRunningSlot},
	{"TaskExecutorNotifier/DisconnectJobMasterFencedAsDisconnectJobMaster", notifierDisconnectJobMaster},
	// Only for a gateway that implements rpc.ResourceManagerDisconnector; see disconnect.go.
	{"ResourceManagerDisconnector/StaleRefusedCurrentRegistersAgain", disconnectorRegistersAgain},
}

const (
	rmAddress = "tetest-resourcemanager"
	jmAddress = "tetest-jobmaster"
	teID      = jobgraph.ResourceID("tetest-taskexecutor")
)

// suite is what one case sees.
type suite struct {
	t        *testing.T
	ctx      context.Context
	inBubble bool
	rm       *fakeResourceManager
	jm       *fakeJobMaster
	te       rpc.TaskExecutorGateway
	job      jobgraph.JobID
	// rmAddr and jmAddr are where the fakes are reached (rmAddress and jmAddress in-process).
	rmAddr, jmAddr string
}

func run(t *testing.T, tr Transport, newTaskExecutor func(t *testing.T, env Env) rpc.TaskExecutorGateway, inBubble bool) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := func(t *testing.T) {
				svc := tr.NewService(t)
				t.Cleanup(func() { assert.NoError(t, svc.Close()) })
				ctx, cancel := context.WithTimeout(t.Context(), Timeout)
				t.Cleanup(cancel)
				s := &suite{t: t, ctx: ctx, inBubble: inBubble, job: jobgraph.NewJobID(),
					rm: &fakeResourceManager{id: jobgraph.NewResourceManagerID(), events: &notifytest.Changes{}},
					jm: &fakeJobMaster{token: jobgraph.NewJobMasterID(), events: &notifytest.Changes{}}}
				s.rmAddr, s.jmAddr = tr.Address(svc, rmAddress), tr.Address(svc, jmAddress)
				require.NoError(t, svc.Register(s.rmAddr, s.rm))
				require.NoError(t, svc.Register(s.jmAddr, s.jm))
				s.te = newTaskExecutor(t, Env{RPC: svc, ResourceID: teID, Address: string(teID), ResourceManagerAddress: s.rmAddr, NumSlots: 2})
				require.NotNil(t, s.te, "newTaskExecutor returned nil")
				s.waitFor("the TaskExecutor registers with the ResourceManager", func() bool { return len(s.rm.registrations()) > 0 })
				reg := s.rm.registrations()[0]
				require.Equal(t, teID, reg.ResourceID, "it registers under env.ResourceID")
				gw, err := rpc.Connect[rpc.TaskExecutorGateway](ctx, svc, reg.Address)
				require.NoError(t, err, "its registration's address resolves to its gateway")
				require.NotNil(t, gw)
				c.run(s)
			}
			if inBubble {
				synctest.Test(t, body)
			} else {
				body(t)
			}
		})
	}
}

// waitFor waits until cond holds, for at most Timeout; cond is evaluated after every event the
// fakes record.
func (s *suite) waitFor(what string, cond func() bool) {
	s.t.Helper()
	for {
		rmCh, jmCh := s.rm.events.Changed(), s.jm.events.Changed()
		if cond() {
			return
		}
		select {
		case <-rmCh:
		case <-jmCh:
		case <-s.ctx.Done():
			s.t.Fatalf("waited %v for: %s", Timeout, what)
		}
	}
}

// settle lets everything in flight happen: in a bubble, until every goroutine is blocked; in real
// time there is no such point, and the "nothing more" checks after it are weaker.
func (s *suite) settle() {
	if s.inBubble {
		synctest.Wait()
	}
}

func (s *suite) slot(n int) rpc.SlotID { return rpc.SlotID{ResourceID: teID, SlotNumber: n} }

// allocate requests slot n for the suite's job under a and waits until it is offered (and
// accepted) at the fake JobMaster.
func (s *suite) allocate(n int, a jobgraph.AllocationID) {
	s.t.Helper()
	require.NoError(s.t, s.te.RequestSlot(s.ctx, s.slot(n), s.job, a, jobgraph.ResourceProfile{}, s.jmAddr, s.jm.token, s.rm.id))
	s.waitFor("the slot is offered to the JobMaster", func() bool { return slices.Contains(s.jm.offered(), a) })
}

// tdd describes one attempt of a one-subtask vertex running invokable in allocation a.
func (s *suite) tdd(job jobgraph.JobID, a jobgraph.AllocationID, invokable string) rpc.TaskDeploymentDescriptor {
	attempt := jobgraph.ExecutionAttemptID{ExecutionGraphID: jobgraph.NewExecutionGraphID(),
		ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: jobgraph.NewJobVertexID()}}
	return rpc.TaskDeploymentDescriptor{JobID: job, ExecutionAttemptID: attempt, AllocationID: a,
		TaskName: "v (1/1)", VertexName: "v", Invokable: invokable, Parallelism: 1, MaxParallelism: 128}
}

// running submits an InvokableBlock task into a and waits until it reports RUNNING.
func (s *suite) running(a jobgraph.AllocationID) jobgraph.ExecutionAttemptID {
	s.t.Helper()
	d := s.tdd(s.job, a, InvokableBlock)
	require.NoError(s.t, s.te.SubmitTask(s.ctx, s.jm.token, d))
	s.waitFor("the task runs", func() bool {
		return slices.Contains(s.jm.statesOf(d.ExecutionAttemptID), jobgraph.ExecutionStateRunning)
	})
	return d.ExecutionAttemptID
}

func requestSlotIdempotent(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	require.NoError(s.t, s.te.RequestSlot(s.ctx, s.slot(0), s.job, a, jobgraph.ResourceProfile{}, s.jmAddr, s.jm.token, s.rm.id),
		"asking again for the same slot and allocation succeeds")
	s.settle()
	n := 0
	for _, o := range s.jm.offered() {
		if o == a {
			n++
		}
	}
	assert.Equal(s.t, 1, n, "the allocation is offered once")
	assert.Empty(s.t, s.rm.freed(), "nothing is freed")
	// The slot works: a task runs in it.
	d := s.tdd(s.job, a, InvokableFinish)
	require.NoError(s.t, s.te.SubmitTask(s.ctx, s.jm.token, d))
	s.waitFor("the task finishes", func() bool {
		return slices.Contains(s.jm.statesOf(d.ExecutionAttemptID), jobgraph.ExecutionStateFinished)
	})
}

func requestSlotOccupied(s *suite) {
	a, b := jobgraph.NewAllocationID(), jobgraph.NewAllocationID()
	s.allocate(0, a)
	require.Error(s.t, s.te.RequestSlot(s.ctx, s.slot(0), s.job, b, jobgraph.ResourceProfile{}, s.jmAddr, s.jm.token, s.rm.id),
		"slot 0 is held by another allocation")
	require.Error(s.t, s.te.RequestSlot(s.ctx, s.slot(0), jobgraph.NewJobID(), b, jobgraph.ResourceProfile{}, s.jmAddr, s.jm.token, s.rm.id),
		"nor can another job take it")
	s.settle()
	assert.NotContains(s.t, s.jm.offered(), b, "the refused allocation is never offered")
	// a still holds slot 0: a task of the job runs there.
	s.running(a)
}

func submitIntoForeignSlot(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	other := s.tdd(jobgraph.NewJobID(), a, InvokableFinish)
	require.Error(s.t, s.te.SubmitTask(s.ctx, s.jm.token, other), "the slot is allocated to another job")
	unknown := s.tdd(s.job, jobgraph.NewAllocationID(), InvokableFinish)
	require.Error(s.t, s.te.SubmitTask(s.ctx, s.jm.token, unknown), "no slot is allocated under that allocation")
	// The refused ones never run; the job's own task does.
	d := s.tdd(s.job, a, InvokableFinish)
	require.NoError(s.t, s.te.SubmitTask(s.ctx, s.jm.token, d))
	s.waitFor("the task finishes", func() bool {
		return slices.Contains(s.jm.statesOf(d.ExecutionAttemptID), jobgraph.ExecutionStateFinished)
	})
	s.settle()
	assert.Empty(s.t, s.jm.statesOf(other.ExecutionAttemptID))
	assert.Empty(s.t, s.jm.statesOf(unknown.ExecutionAttemptID))
}

// SubmitTasks answers for each descriptor what SubmitTask would have: the job's own task runs,
// one for another job's slot, one for an unknown allocation and one with a stale JobMasterID are
// refused, and errs is nil when every descriptor started.
func submitTasksEach(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	ok := s.tdd(s.job, a, InvokableFinish)
	other := s.tdd(jobgraph.NewJobID(), a, InvokableFinish)
	unknown := s.tdd(s.job, jobgraph.NewAllocationID(), InvokableFinish)
	errs, err := s.te.SubmitTasks(s.ctx, s.jm.token, []rpc.TaskDeploymentDescriptor{other, ok, unknown})
	require.NoError(s.t, err)
	require.Len(s.t, errs, 3)
	assert.Error(s.t, errs[0], "the slot is allocated to another job")
	assert.NoError(s.t, errs[1], "the job's own task starts")
	assert.Error(s.t, errs[2], "no slot is allocated under that allocation")
	s.waitFor("the task finishes", func() bool {
		return slices.Contains(s.jm.statesOf(ok.ExecutionAttemptID), jobgraph.ExecutionStateFinished)
	})

	b := jobgraph.NewAllocationID()
	s.allocate(1, b)
	stale := s.tdd(s.job, b, InvokableFinish)
	errs, err = s.te.SubmitTasks(s.ctx, jobgraph.NewJobMasterID(), []rpc.TaskDeploymentDescriptor{stale})
	require.NoError(s.t, err)
	require.Len(s.t, errs, 1)
	assert.ErrorIs(s.t, errs[0], rpc.ErrFencingTokenMismatch, "a JobMasterID other than the slot's")
	errs, err = s.te.SubmitTasks(s.ctx, s.jm.token, []rpc.TaskDeploymentDescriptor{stale})
	require.NoError(s.t, err)
	assert.Nil(s.t, errs, "all started")
	s.waitFor("the task finishes", func() bool {
		return slices.Contains(s.jm.statesOf(stale.ExecutionAttemptID), jobgraph.ExecutionStateFinished)
	})
	s.settle()
	assert.Empty(s.t, s.jm.statesOf(other.ExecutionAttemptID))
	assert.Empty(s.t, s.jm.statesOf(unknown.ExecutionAttemptID))
}

func fencingStaleResourceManager(s *suite) {
	a := jobgraph.NewAllocationID()
	err := s.te.RequestSlot(s.ctx, s.slot(0), s.job, a, jobgraph.ResourceProfile{}, s.jmAddr, s.jm.token, jobgraph.NewResourceManagerID())
	require.ErrorIs(s.t, err, rpc.ErrFencingTokenMismatch, "a ResourceManagerID other than the registration's")
	s.settle()
	assert.NotContains(s.t, s.jm.offered(), a, "nothing is allocated")
	// Slot 0 is still free for the current ResourceManager.
	s.allocate(0, jobgraph.NewAllocationID())
}

func fencingStaleJobMaster(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	d := s.tdd(s.job, a, InvokableFinish)
	err := s.te.SubmitTask(s.ctx, jobgraph.NewJobMasterID(), d)
	require.ErrorIs(s.t, err, rpc.ErrFencingTokenMismatch, "a JobMasterID other than the slot's")
	s.settle()
	assert.Empty(s.t, s.jm.statesOf(d.ExecutionAttemptID), "the task never ran")
	require.NoError(s.t, s.te.SubmitTask(s.ctx, s.jm.token, d), "the same deployment with the slot's token runs")
	s.waitFor("the task finishes", func() bool {
		return slices.Contains(s.jm.statesOf(d.ExecutionAttemptID), jobgraph.ExecutionStateFinished)
	})
}

func fencingStaleDisconnect(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	attempt := s.running(a)
	err := s.te.DisconnectJobMaster(s.ctx, jobgraph.NewJobMasterID(), s.job, rpc.Failure(context.Canceled))
	require.ErrorIs(s.t, err, rpc.ErrFencingTokenMismatch, "an earlier session's disconnect")
	s.settle()
	assert.Equal(s.t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning},
		withoutRepeats(s.jm.statesOf(attempt)), "the task keeps running")
	assert.Empty(s.t, s.rm.freed(), "no slot is freed")

	// The current session's disconnect fails the task and frees the slot.
	require.NoError(s.t, s.te.DisconnectJobMaster(s.ctx, s.jm.token, s.job, rpc.Failure(context.Canceled)))
	s.waitFor("the task fails and the slot is freed", func() bool {
		return slices.Contains(s.jm.statesOf(attempt), jobgraph.ExecutionStateFailed) && slices.Contains(s.rm.freed(), a)
	})
}

func checkpointStaleJobMaster(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	attempt := s.running(a)
	stale := jobgraph.NewJobMasterID()
	now := time.Unix(1700000000, 0)
	err := s.te.TriggerCheckpoint(s.ctx, stale, attempt, 3, now, checkpoint.CheckpointPropertiesFor(checkpoint.Checkpoint))
	require.ErrorIs(s.t, err, rpc.ErrFencingTokenMismatch, "a trigger of an earlier session")
	require.ErrorIs(s.t, s.te.ConfirmCheckpoint(s.ctx, stale, attempt, 3, now), rpc.ErrFencingTokenMismatch, "a confirmation of an earlier session")
	require.ErrorIs(s.t, s.te.AbortCheckpoint(s.ctx, stale, attempt, 3, now), rpc.ErrFencingTokenMismatch, "an abort of an earlier session")
	unknown := s.tdd(s.job, a, InvokableBlock).ExecutionAttemptID
	require.ErrorIs(s.t, s.te.TriggerCheckpoint(s.ctx, stale, unknown, 3, now, checkpoint.CheckpointPropertiesFor(checkpoint.Checkpoint)),
		rpc.ErrFencingTokenMismatch, "a trigger of an earlier session for an attempt that does not run here")
	s.settle()
	assert.Empty(s.t, s.jm.checkpointReports(), "nothing is acknowledged or declined")
	assert.Equal(s.t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning},
		withoutRepeats(s.jm.statesOf(attempt)), "the task keeps running")
}

func checkpointUnknownAttempt(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	unknown := s.tdd(s.job, a, InvokableBlock).ExecutionAttemptID
	now := time.Unix(1700000000, 0)
	require.NoError(s.t, s.te.TriggerCheckpoint(s.ctx, s.jm.token, unknown, 7, now, checkpoint.CheckpointPropertiesFor(checkpoint.Checkpoint)),
		"a trigger of an attempt that does not run here is not an error of the call")
	s.waitFor("the TaskExecutor declines the checkpoint", func() bool { return len(s.jm.checkpointReports()) > 0 })
	got := s.jm.checkpointReports()[0]
	assert.Equal(s.t, checkpointReport{declined: true, attempt: unknown, id: 7, reason: checkpoint.CheckpointDeclinedTaskNotReady},
		checkpointReport{declined: got.declined, attempt: got.attempt, id: got.id, reason: got.reason})
	require.NoError(s.t, s.te.ConfirmCheckpoint(s.ctx, s.jm.token, unknown, 7, now), "a confirmation of an unknown attempt is ignored")
	require.NoError(s.t, s.te.AbortCheckpoint(s.ctx, s.jm.token, unknown, 7, now), "an abort of an unknown attempt is ignored")
	s.settle()
	assert.Len(s.t, s.jm.checkpointReports(), 1, "nothing more is sent")
}

// runningEvents submits an InvokableEvents task into a and waits until it reports RUNNING.
func (s *suite) runningEvents(a jobgraph.AllocationID) jobgraph.ExecutionAttemptID {
	s.t.Helper()
	d := s.tdd(s.job, a, InvokableEvents)
	d.HasOperatorCoordinator = true
	require.NoError(s.t, s.te.SubmitTask(s.ctx, s.jm.token, d))
	s.waitFor("the task runs", func() bool {
		return slices.Contains(s.jm.statesOf(d.ExecutionAttemptID), jobgraph.ExecutionStateRunning)
	})
	return d.ExecutionAttemptID
}

func eventsInOrder(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	attempt := s.runningEvents(a)
	var want []sentEvent
	for i := range 10 {
		ev := []byte(fmt.Sprintf("event-%d", i))
		require.NoError(s.t, s.te.SendOperatorEventToTask(s.ctx, s.jm.token, attempt, ev), "event %d", i)
		want = append(want, sentEvent{attempt: attempt, event: string(ev)})
	}
	s.waitFor("the task sends every event back", func() bool { return len(s.jm.operatorEvents()) >= len(want) })
	s.settle()
	assert.Equal(s.t, want, s.jm.operatorEvents(), "each event reached the handler once, in order")
	assert.Equal(s.t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning},
		withoutRepeats(s.jm.statesOf(attempt)), "the task keeps running")
}

func eventsUnknownAttempt(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	s.runningEvents(a)
	unknown := s.tdd(s.job, a, InvokableEvents).ExecutionAttemptID
	err := s.te.SendOperatorEventToTask(s.ctx, s.jm.token, unknown, []byte("lost"))
	require.ErrorIs(s.t, err, rpc.ErrTaskNotRunning, "an attempt that does not run here")
	s.settle()
	assert.Empty(s.t, s.jm.operatorEvents(), "no task handled it")
}

func eventsStaleJobMaster(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	attempt := s.runningEvents(a)
	err := s.te.SendOperatorEventToTask(s.ctx, jobgraph.NewJobMasterID(), attempt, []byte("stale"))
	require.ErrorIs(s.t, err, rpc.ErrFencingTokenMismatch, "an event of an earlier session")
	s.settle()
	assert.Empty(s.t, s.jm.operatorEvents(), "nothing was delivered")
	require.NoError(s.t, s.te.SendOperatorEventToTask(s.ctx, s.jm.token, attempt, []byte("current")))
	s.waitFor("the current session's event comes back", func() bool { return len(s.jm.operatorEvents()) > 0 })
	assert.Equal(s.t, []sentEvent{{attempt: attempt, event: "current"}}, s.jm.operatorEvents())
}

func eventsHandlerError(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	attempt := s.runningEvents(a)
	err := s.te.SendOperatorEventToTask(s.ctx, s.jm.token, attempt, []byte(EventFail))
	require.Error(s.t, err)
	assert.ErrorContains(s.t, err, HandlerRefused, "the handler's error is the answer")
	s.waitFor("the task fails", func() bool {
		return slices.Contains(s.jm.statesOf(attempt), jobgraph.ExecutionStateFailed)
	})
	assert.Empty(s.t, s.jm.operatorEvents())
}

func freeUnknownSlot(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	require.NoError(s.t, s.te.FreeSlot(s.ctx, jobgraph.NewAllocationID(), rpc.Failure(context.Canceled)), "an unknown allocation is free already")
	s.settle()
	assert.Empty(s.t, s.rm.freed(), "nothing is freed")
	s.running(a) // a still holds its slot
}

func freeRunningSlot(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	attempt := s.running(a)
	require.NoError(s.t, s.te.FreeSlot(s.ctx, a, rpc.Failure(context.Canceled)))
	s.waitFor("the task is canceled and the ResourceManager told", func() bool {
		return slices.Contains(s.jm.statesOf(attempt), jobgraph.ExecutionStateCanceled) && slices.Contains(s.rm.freed(), a)
	})
	assert.Equal(s.t, []rpc.SlotID{s.slot(0)}, s.rm.freedSlots())
	require.NoError(s.t, s.te.FreeSlot(s.ctx, a, nil), "freeing again is a no-op")
	// The slot is free again: another allocation takes it.
	s.allocate(0, jobgraph.NewAllocationID())
}

func heartbeatResourceManager(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(1, a)
	require.NoError(s.t, s.te.HeartbeatFromResourceManager(s.ctx, "tetest-rm"))
	s.waitFor("the TaskExecutor answers with its slot report", func() bool { return len(s.rm.heartbeatReports()) > 0 })
	report := s.rm.heartbeatReports()[0]
	got := map[rpc.SlotID][2]string{}
	for _, st := range report.Slots {
		got[st.SlotID] = [2]string{st.AllocationID.String(), st.JobID.String()}
	}
	assert.Equal(s.t, map[rpc.SlotID][2]string{
		s.slot(0): {jobgraph.AllocationID{}.String(), jobgraph.JobID{}.String()},
		s.slot(1): {a.String(), s.job.String()},
	}, got, "every slot, free or allocated")
}

func heartbeatJobMaster(s *suite) {
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	attempt := s.running(a)
	// The TaskExecutor may still be applying the JobMaster's answer to its slot offer (the
	// fake's OfferSlots has returned, the TaskExecutor's loop has not seen the answer yet), and a
	// TaskExecutor rightly ignores heartbeats of a JobMaster it is not connected to. A JobMaster
	// asks again every heartbeat.interval; so does the suite, every 10 ms, until it is answered.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for len(s.jm.heartbeatReports()) == 0 {
		require.NoError(s.t, s.te.HeartbeatFromJobMaster(s.ctx, "tetest-jm"))
		select {
		case <-s.jm.events.Changed():
		case <-tick.C:
		case <-s.ctx.Done():
			s.t.Fatalf("waited %v for: the TaskExecutor answers the JobMaster", Timeout)
		}
	}
	report := s.jm.heartbeatReports()[0]
	// A TaskExecutor that reports its executions (rpc.ExecutionDeploymentReport) lists the
	// running one; one that does not sends none, and its JobMaster reconciles nothing.
	if deployed := report.ExecutionDeploymentReport; deployed != nil {
		assert.Equal(s.t, []jobgraph.ExecutionAttemptID{attempt}, deployed.Executions, "the ExecutionDeploymentReport lists the running task")
	}
	report.ExecutionDeploymentReport = nil
	assert.Equal(s.t, rpc.AllocatedSlotReport{JobID: s.job, Slots: []jobgraph.AllocationID{a}}, report)
}

func withoutRepeats(states []jobgraph.ExecutionState) []jobgraph.ExecutionState {
	return slices.Compact(slices.Clone(states))
}

// ---- fakes ----

type freedSlot struct {
	slot       rpc.SlotID
	allocation jobgraph.AllocationID
}

// fakeResourceManager answers registrations with id and records what the TaskExecutor sends.
type fakeResourceManager struct {
	id     jobgraph.ResourceManagerID
	events *notifytest.Changes // fired at every record

	mu         sync.Mutex
	regs       []rpc.TaskExecutorRegistration
	frees      []freedSlot
	heartbeats []rpc.SlotReport
}

func (f *fakeResourceManager) record(fn func()) {
	f.mu.Lock()
	fn()
	f.mu.Unlock()
	f.events.Fire()
}

func (f *fakeResourceManager) registrations() []rpc.TaskExecutorRegistration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.regs)
}

func (f *fakeResourceManager) freed() []jobgraph.AllocationID {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []jobgraph.AllocationID
	for _, fr := range f.frees {
		out = append(out, fr.allocation)
	}
	return out
}

func (f *fakeResourceManager) freedSlots() []rpc.SlotID {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []rpc.SlotID
	for _, fr := range f.frees {
		out = append(out, fr.slot)
	}
	return out
}

func (f *fakeResourceManager) heartbeatReports() []rpc.SlotReport {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.heartbeats)
}

func (f *fakeResourceManager) RegisterTaskExecutor(_ context.Context, r rpc.TaskExecutorRegistration) (jobgraph.ResourceManagerID, error) {
	f.record(func() { f.regs = append(f.regs, r) })
	return f.id, nil
}

func (f *fakeResourceManager) SendSlotReport(context.Context, jobgraph.ResourceManagerID, jobgraph.ResourceID, rpc.SlotReport) error {
	return nil
}

func (f *fakeResourceManager) NotifySlotAvailable(_ context.Context, rm jobgraph.ResourceManagerID, _ jobgraph.ResourceID, slot rpc.SlotID, a jobgraph.AllocationID) error {
	if rm != f.id {
		// The suite checks that a TaskExecutor's calls carry the token its registration got.
		return &rpc.FencingError{Endpoint: "tetest ResourceManager", Expected: f.id.String(), Got: rm.String()}
	}
	f.record(func() { f.frees = append(f.frees, freedSlot{slot, a}) })
	return nil
}

func (f *fakeResourceManager) DisconnectTaskExecutor(context.Context, jobgraph.ResourceManagerID, jobgraph.ResourceID, *jobgraph.ErrorInfo) error {
	return nil
}

func (f *fakeResourceManager) RegisterJobMaster(context.Context, jobgraph.JobMasterID, jobgraph.ResourceID, string, jobgraph.JobID) (jobgraph.ResourceManagerID, error) {
	return f.id, nil
}

func (f *fakeResourceManager) DeclareRequiredResources(context.Context, jobgraph.ResourceManagerID, jobgraph.JobMasterID, rpc.ResourceRequirements) error {
	return nil
}

func (f *fakeResourceManager) DisconnectJobMaster(context.Context, jobgraph.ResourceManagerID, jobgraph.JobMasterID, jobgraph.JobID, *jobgraph.ErrorInfo) error {
	return nil
}

func (f *fakeResourceManager) HeartbeatFromTaskExecutor(_ context.Context, rm jobgraph.ResourceManagerID, _ jobgraph.ResourceID, report rpc.SlotReport) error {
	if rm != f.id {
		// The suite checks that a TaskExecutor's calls carry the token its registration got.
		return &rpc.FencingError{Endpoint: "tetest ResourceManager", Expected: f.id.String(), Got: rm.String()}
	}
	f.record(func() { f.heartbeats = append(f.heartbeats, report) })
	return nil
}

func (f *fakeResourceManager) HeartbeatFromJobMaster(context.Context, jobgraph.ResourceManagerID, jobgraph.ResourceID) error {
	return nil
}

// fakeJobMaster accepts every registration and offer fenced by token and records the task states.
type fakeJobMaster struct {
	token  jobgraph.JobMasterID
	events *notifytest.Changes // fired at every record

	mu         sync.Mutex
	offers     []jobgraph.AllocationID
	states     map[jobgraph.ExecutionAttemptID][]jobgraph.ExecutionState
	heartbeats []rpc.AllocatedSlotReport
	reports    []checkpointReport
	opEvents   []sentEvent
}

// sentEvent is an operator event the fake JobMaster took.
type sentEvent struct {
	attempt jobgraph.ExecutionAttemptID
	event   string
}

func (f *fakeJobMaster) operatorEvents() []sentEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.opEvents)
}

func (f *fakeJobMaster) SendOperatorEventToCoordinator(_ context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, event []byte) error {
	if err := f.fence(token); err != nil {
		return err
	}
	f.record(func() { f.opEvents = append(f.opEvents, sentEvent{attempt: attempt, event: string(event)}) })
	return nil
}

// checkpointReport is an acknowledgement or a decline the fake JobMaster took.
type checkpointReport struct {
	declined bool
	attempt  jobgraph.ExecutionAttemptID
	id       checkpoint.CheckpointID
	reason   checkpoint.CheckpointFailureReason
}

func (f *fakeJobMaster) checkpointReports() []checkpointReport {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reports)
}

func (f *fakeJobMaster) record(fn func()) {
	f.mu.Lock()
	fn()
	f.mu.Unlock()
	f.events.Fire()
}

func (f *fakeJobMaster) fence(token jobgraph.JobMasterID) error {
	if token != f.token {
		return &rpc.FencingError{Endpoint: "tetest JobMaster", Expected: f.token.String(), Got: token.String()}
	}
	return nil
}

func (f *fakeJobMaster) offered() []jobgraph.AllocationID {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.offers)
}

func (f *fakeJobMaster) statesOf(a jobgraph.ExecutionAttemptID) []jobgraph.ExecutionState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.states[a])
}

func (f *fakeJobMaster) heartbeatReports() []rpc.AllocatedSlotReport {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.heartbeats)
}

func (f *fakeJobMaster) UpdateTaskExecutionState(_ context.Context, token jobgraph.JobMasterID, st rpc.TaskExecutionState) (bool, error) {
	if err := f.fence(token); err != nil {
		return false, err
	}
	f.record(func() {
		if f.states == nil {
			f.states = make(map[jobgraph.ExecutionAttemptID][]jobgraph.ExecutionState)
		}
		f.states[st.ExecutionAttemptID] = append(f.states[st.ExecutionAttemptID], st.State)
	})
	return true, nil
}

func (f *fakeJobMaster) RegisterTaskExecutor(_ context.Context, token jobgraph.JobMasterID, _ rpc.TaskExecutorRegistration) error {
	return f.fence(token)
}

func (f *fakeJobMaster) OfferSlots(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.ResourceID, offers []rpc.SlotOffer) ([]rpc.SlotOffer, error) {
	if err := f.fence(token); err != nil {
		return nil, err
	}
	f.record(func() {
		for _, o := range offers {
			f.offers = append(f.offers, o.AllocationID)
		}
	})
	return offers, nil
}

func (f *fakeJobMaster) FailSlot(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.ResourceID, _ jobgraph.AllocationID, _ *jobgraph.ErrorInfo) error {
	return f.fence(token)
}

func (f *fakeJobMaster) DisconnectTaskExecutor(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.ResourceID, _ *jobgraph.ErrorInfo) error {
	return f.fence(token)
}

func (f *fakeJobMaster) DisconnectResourceManager(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.ResourceManagerID, _ *jobgraph.ErrorInfo) error {
	return f.fence(token)
}

func (f *fakeJobMaster) HeartbeatFromTaskExecutor(_ context.Context, _ jobgraph.ResourceID, report rpc.AllocatedSlotReport) error {
	f.record(func() { f.heartbeats = append(f.heartbeats, report) })
	return nil
}

func (f *fakeJobMaster) HeartbeatFromResourceManager(context.Context, jobgraph.ResourceID) error {
	return nil
}

func (f *fakeJobMaster) AcknowledgeCheckpoint(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.JobID, ack checkpoint.AcknowledgeCheckpoint) error {
	if err := f.fence(token); err != nil {
		return err
	}
	f.record(func() { f.reports = append(f.reports, checkpointReport{attempt: ack.Attempt, id: ack.CheckpointID}) })
	return nil
}

func (f *fakeJobMaster) DeclineCheckpoint(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.JobID, d checkpoint.DeclineCheckpoint) error {
	if err := f.fence(token); err != nil {
		return err
	}
	f.record(func() {
		f.reports = append(f.reports, checkpointReport{declined: true, attempt: d.Attempt, id: d.CheckpointID, reason: d.Reason})
	})
	return nil
}

var (
	_ rpc.ResourceManagerGateway = (*fakeResourceManager)(nil)
	_ rpc.JobMasterGateway       = (*fakeJobMaster)(nil)
)
