package tetest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// The cases of rpc.TaskExecutorNotifier. A gateway that does not implement it (a transport's
// proxy) passes them: each then only logs that it was not applicable.

// notifier returns the gateway as an rpc.TaskExecutorNotifier, or false (having logged that the
// case is not applicable) when it is none.
func (s *suite) notifier() (rpc.TaskExecutorNotifier, bool) {
	n, ok := s.te.(rpc.TaskExecutorNotifier)
	if !ok {
		s.t.Logf("not applicable: the gateway under test (%T) does not implement rpc.TaskExecutorNotifier; the case passes", s.te)
	}
	return n, ok
}

// callback is a notifier's done: it records every call, and called is closed at the first.
type callback struct {
	mu     sync.Mutex
	errs   []error
	called chan struct{}
}

func newCallback() *callback { return &callback{called: make(chan struct{})} }

// done is what the suite hands the notifier; it never blocks.
func (c *callback) done(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
	if len(c.errs) == 1 {
		close(c.called)
	}
}

func (c *callback) calls() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.errs)
}

// answer waits (at most Timeout) until c is called, lets everything in flight happen, and
// returns the error c was called with, failing the case unless c was called exactly once.
func (s *suite) answer(c *callback, what string) error {
	s.t.Helper()
	select {
	case <-c.called:
	case <-s.ctx.Done():
		s.t.Fatalf("waited %v for the callback of %s", Timeout, what)
	}
	s.settle()
	calls := c.calls()
	require.Len(s.t, calls, 1, "the callback of %s is called exactly once", what)
	return calls[0]
}

// onceMore fails the case unless each callback is still called exactly once (checked again at the
// end of a case: in real time a second call may come late).
func (s *suite) onceMore(cs ...*callback) {
	s.t.Helper()
	s.settle()
	for i, c := range cs {
		assert.Len(s.t, c.calls(), 1, "callback %d is called exactly once", i)
	}
}

// slotsReported asks the TaskExecutor for a heartbeat (again every 10 ms, as a ResourceManager
// asks every heartbeat.interval, until one is answered: a TaskExecutor may still be taking its
// registration's answer) and returns the first slot report that comes back after the call, by
// slot: the allocation and the job holding it, zero when free.
func (s *suite) slotsReported() map[rpc.SlotID][2]string {
	s.t.Helper()
	before := len(s.rm.heartbeatReports())
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for len(s.rm.heartbeatReports()) == before {
		changed := s.rm.events.Changed()
		require.NoError(s.t, s.te.HeartbeatFromResourceManager(s.ctx, "tetest-rm"))
		if len(s.rm.heartbeatReports()) > before {
			break
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-s.ctx.Done():
			s.t.Fatalf("waited %v for: the TaskExecutor answers the ResourceManager's heartbeat", Timeout)
		}
	}
	report := s.rm.heartbeatReports()[before]
	got := map[rpc.SlotID][2]string{}
	for _, st := range report.Slots {
		got[st.SlotID] = [2]string{st.AllocationID.String(), st.JobID.String()}
	}
	return got
}

// freeSlot is how slotsReported shows a free slot.
var freeSlot = [2]string{jobgraph.AllocationID{}.String(), jobgraph.JobID{}.String()}

// NotifyRequestSlot allocates the slot and offers it as RequestSlot does: a call made after it
// returned sees the slot allocated (the heartbeat's slot report lists it, RequestSlot of another
// allocation is refused), the allocation is offered to the JobMaster once, asking again through
// the notifier is a no-op answered nil, and a task runs in the slot.
func notifierRequestSlot(s *suite) {
	n, ok := s.notifier()
	if !ok {
		return
	}
	a, b := jobgraph.NewAllocationID(), jobgraph.NewAllocationID()
	first, again := newCallback(), newCallback()
	n.NotifyRequestSlot(s.slot(0), s.job, a, jobgraph.ResourceProfile{}, s.jmAddr, s.jm.token, s.rm.id, first.done)
	require.Error(s.t, s.te.RequestSlot(s.ctx, s.slot(0), s.job, b, jobgraph.ResourceProfile{}, s.jmAddr, s.jm.token, s.rm.id),
		"a RequestSlot made after the notification finds slot 0 held")
	assert.Equal(s.t, map[rpc.SlotID][2]string{s.slot(0): {a.String(), s.job.String()}, s.slot(1): freeSlot},
		s.slotsReported(), "a heartbeat asked for after the notification reports the slot allocated")
	require.NoError(s.t, s.answer(first, "NotifyRequestSlot"))
	n.NotifyRequestSlot(s.slot(0), s.job, a, jobgraph.ResourceProfile{}, s.jmAddr, s.jm.token, s.rm.id, again.done)
	require.NoError(s.t, s.answer(again, "NotifyRequestSlot of the same slot and allocation"), "asking again is a no-op")
	s.waitFor("the slot is offered to the JobMaster", func() bool { return slices.Contains(s.jm.offered(), a) })
	s.settle()
	assert.Equal(s.t, []jobgraph.AllocationID{a}, s.jm.offered(), "the allocation is offered once; the refused one never")
	assert.Empty(s.t, s.rm.freed(), "nothing is freed")
	d := s.tdd(s.job, a, InvokableFinish)
	require.NoError(s.t, s.te.SubmitTask(s.ctx, s.jm.token, d), "a task runs in the slot")
	s.waitFor("the task finishes", func() bool {
		return slices.Contains(s.jm.statesOf(d.ExecutionAttemptID), jobgraph.ExecutionStateFinished)
	})
	s.onceMore(first, again)
}

// NotifyRequestSlot is refused where RequestSlot is, with the same error class, and allocates
// nothing: a stale ResourceManagerID (rpc.ErrFencingTokenMismatch) and a slot another
// allocation holds.
func notifierRequestSlotRefused(s *suite) {
	n, ok := s.notifier()
	if !ok {
		return
	}
	stale := jobgraph.NewResourceManagerID()
	a, b := jobgraph.NewAllocationID(), jobgraph.NewAllocationID()
	callErr := s.te.RequestSlot(s.ctx, s.slot(0), s.job, a, jobgraph.ResourceProfile{}, s.jmAddr, s.jm.token, stale)
	require.ErrorIs(s.t, callErr, rpc.ErrFencingTokenMismatch, "RequestSlot with a stale ResourceManagerID")
	fenced := newCallback()
	n.NotifyRequestSlot(s.slot(0), s.job, a, jobgraph.ResourceProfile{}, s.jmAddr, s.jm.token, stale, fenced.done)
	// Slot 0 is still free for the current ResourceManager, in a call made after the notification.
	s.allocate(0, b)
	require.ErrorIs(s.t, s.answer(fenced, "NotifyRequestSlot with a stale ResourceManagerID"), rpc.ErrFencingTokenMismatch,
		"the error class RequestSlot's is")

	c := jobgraph.NewAllocationID()
	require.Error(s.t, s.te.RequestSlot(s.ctx, s.slot(0), s.job, c, jobgraph.ResourceProfile{}, s.jmAddr, s.jm.token, s.rm.id),
		"RequestSlot of a slot another allocation holds")
	occupied := newCallback()
	n.NotifyRequestSlot(s.slot(0), s.job, c, jobgraph.ResourceProfile{}, s.jmAddr, s.jm.token, s.rm.id, occupied.done)
	assert.Equal(s.t, map[rpc.SlotID][2]string{s.slot(0): {b.String(), s.job.String()}, s.slot(1): freeSlot},
		s.slotsReported(), "slot 0 still held by the allocation that had it")
	require.Error(s.t, s.answer(occupied, "NotifyRequestSlot of a slot another allocation holds"))
	s.settle()
	assert.Equal(s.t, []jobgraph.AllocationID{b}, s.jm.offered(), "only the current ResourceManager's allocation is offered")
	assert.Empty(s.t, s.rm.freed(), "nothing is freed")
	s.running(b) // b still holds slot 0
	s.onceMore(fenced, occupied)
}

// NotifyFreeSlot frees the slot as FreeSlot does: an idle slot is free for a call made after the
// notification (reported free, taken by another allocation) and the ResourceManager is told once;
// an unknown allocation is answered nil and frees nothing.
func notifierFreeSlot(s *suite) {
	n, ok := s.notifier()
	if !ok {
		return
	}
	a, b := jobgraph.NewAllocationID(), jobgraph.NewAllocationID()
	s.allocate(0, a)
	unknown := newCallback()
	n.NotifyFreeSlot(jobgraph.NewAllocationID(), rpc.Failure(context.Canceled), unknown.done)
	require.NoError(s.t, s.answer(unknown, "NotifyFreeSlot of an unknown allocation"), "an unknown allocation is free already")
	assert.Empty(s.t, s.rm.freed(), "nothing is freed")

	freed := newCallback()
	n.NotifyFreeSlot(a, rpc.Failure(context.Canceled), freed.done)
	require.NoError(s.t, s.te.RequestSlot(s.ctx, s.slot(0), s.job, b, jobgraph.ResourceProfile{}, s.jmAddr, s.jm.token, s.rm.id),
		"another allocation takes slot 0 in a call made after the notification")
	assert.Equal(s.t, map[rpc.SlotID][2]string{s.slot(0): {b.String(), s.job.String()}, s.slot(1): freeSlot},
		s.slotsReported(), "a heartbeat asked for after it reports slot 0 held by the new allocation")
	require.NoError(s.t, s.answer(freed, "NotifyFreeSlot"))
	s.waitFor("the ResourceManager is told", func() bool { return slices.Contains(s.rm.freed(), a) })
	s.waitFor("the new allocation is offered", func() bool { return slices.Contains(s.jm.offered(), b) })
	s.settle()
	assert.Equal(s.t, []rpc.SlotID{s.slot(0)}, s.rm.freedSlots(), "the ResourceManager is told of slot 0 once")
	assert.Equal(s.t, []jobgraph.AllocationID{a}, s.rm.freed())
	s.onceMore(unknown, freed)
}

// NotifyFreeSlot of a running slot cancels its task as FreeSlot does: a task submitted after the
// notification is refused, the running one is reported CANCELED, and once it returned the
// ResourceManager is told.
func notifierFreeRunningSlot(s *suite) {
	n, ok := s.notifier()
	if !ok {
		return
	}
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	attempt := s.running(a)
	freed := newCallback()
	n.NotifyFreeSlot(a, rpc.Failure(context.Canceled), freed.done)
	late := s.tdd(s.job, a, InvokableFinish)
	require.Error(s.t, s.te.SubmitTask(s.ctx, s.jm.token, late), "a task submitted after the notification finds its slot being freed")
	require.NoError(s.t, s.answer(freed, "NotifyFreeSlot"))
	s.waitFor("the task is canceled and the ResourceManager told", func() bool {
		return slices.Contains(s.jm.statesOf(attempt), jobgraph.ExecutionStateCanceled) && slices.Contains(s.rm.freed(), a)
	})
	s.settle()
	assert.Equal(s.t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateCanceled},
		withoutRepeats(s.jm.statesOf(attempt)))
	assert.Empty(s.t, s.jm.statesOf(late.ExecutionAttemptID), "the refused task never ran")
	assert.Equal(s.t, []rpc.SlotID{s.slot(0)}, s.rm.freedSlots())
	// The slot is free again: another allocation takes it.
	s.allocate(0, jobgraph.NewAllocationID())
	s.onceMore(freed)
}

// NotifyDisconnectJobMaster is fenced as DisconnectJobMaster is (an earlier session's is
// answered with rpc.ErrFencingTokenMismatch and changes nothing) and the current session's fails
// the job's task and frees its slot: a task submitted after the notification is refused.
func notifierDisconnectJobMaster(s *suite) {
	n, ok := s.notifier()
	if !ok {
		return
	}
	a := jobgraph.NewAllocationID()
	s.allocate(0, a)
	attempt := s.running(a)
	stale := jobgraph.NewJobMasterID()
	callErr := s.te.DisconnectJobMaster(s.ctx, stale, s.job, rpc.Failure(context.Canceled))
	require.ErrorIs(s.t, callErr, rpc.ErrFencingTokenMismatch, "DisconnectJobMaster of an earlier session")
	fenced := newCallback()
	n.NotifyDisconnectJobMaster(stale, s.job, rpc.Failure(context.Canceled), fenced.done)
	// The job's slot still takes tasks in a call made after the stale notification.
	d := s.tdd(s.job, a, InvokableFinish)
	require.NoError(s.t, s.te.SubmitTask(s.ctx, s.jm.token, d), "the stale disconnect left the slot to the job")
	require.ErrorIs(s.t, s.answer(fenced, "NotifyDisconnectJobMaster of an earlier session"), rpc.ErrFencingTokenMismatch,
		"the error class DisconnectJobMaster's is")
	s.waitFor("the task finishes", func() bool {
		return slices.Contains(s.jm.statesOf(d.ExecutionAttemptID), jobgraph.ExecutionStateFinished)
	})
	s.settle()
	assert.Equal(s.t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning},
		withoutRepeats(s.jm.statesOf(attempt)), "the task keeps running")
	assert.Empty(s.t, s.rm.freed(), "no slot is freed")

	disconnected := newCallback()
	n.NotifyDisconnectJobMaster(s.jm.token, s.job, rpc.Failure(context.Canceled), disconnected.done)
	late := s.tdd(s.job, a, InvokableFinish)
	require.Error(s.t, s.te.SubmitTask(s.ctx, s.jm.token, late), "a task submitted after the disconnect finds no slot of the job")
	require.NoError(s.t, s.answer(disconnected, "NotifyDisconnectJobMaster of the current session"))
	s.waitFor("the task fails and the slot is freed", func() bool {
		return slices.Contains(s.jm.statesOf(attempt), jobgraph.ExecutionStateFailed) && slices.Contains(s.rm.freed(), a)
	})
	s.settle()
	assert.Equal(s.t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFailed},
		withoutRepeats(s.jm.statesOf(attempt)))
	assert.Empty(s.t, s.jm.statesOf(late.ExecutionAttemptID), "the refused task never ran")
	assert.Equal(s.t, []rpc.SlotID{s.slot(0)}, s.rm.freedSlots())
	s.onceMore(fenced, disconnected)
}
