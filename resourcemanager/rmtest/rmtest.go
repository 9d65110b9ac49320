// Package rmtest is the conformance suite for the ResourceManager side of
// rpc.ResourceManagerNotifier: the optional one-way forms of
// rpc.ResourceManagerGateway.DeclareRequiredResources and DisconnectJobMaster that the in-process
// resourcemanager.ResourceManager implements and a JobMaster sends its declarations and its
// disconnect through when its ResourceManager's gateway has them. The suite checks every promise
// of the interface's doc comment: NotifyRequiredResources and NotifyJobMasterDisconnected queue
// the call as the gateway method would make it — fenced by the ResourceManagerID (rm) and by the
// JobMasterID (a stale one changes nothing and done hears a *rpc.FencingError), applied in the
// order of the calls, and before every call the gateway takes after they returned (a
// declaration made before a waiting DisconnectJobMaster has its slots requested; a disconnect
// made before a waiting DeclareRequiredResources has it refused, and the job's earlier
// requirements cleared) — and return at once, also while the ResourceManager's loop is busy;
// done, which may be nil, is called exactly once with the error the gateway method would have
// returned, never on the caller's goroutine while the ResourceManager takes calls, never two at
// once (on the ResourceManager's main loop), and once the ResourceManager is closed on the
// caller's goroutine before the call returns, with the gateway method's error.
//
// A gateway that does not implement rpc.ResourceManagerNotifier (a transport's client proxy)
// passes every case: each logs (t.Log) that it was not applicable.
//
// Run it from the implementation's tests:
//
//	func TestConformance(t *testing.T) {
//		rmtest.TestResourceManager(t, func(t *testing.T, env rmtest.Env) rmtest.ResourceManager {
//			rm := myresourcemanager.Start(env.RPC)
//			return rmtest.ResourceManager{Gateway: rm, Close: rm.Close}
//		})
//	}
//
// The in-process ResourceManager runs it so (resourcemanager's conformance_test.go):
// resourcemanager.New with a Config of a ResourceID, an Address and env.RPC, then Start; Gateway
// is the *ResourceManager, Close func() { rm.Close() } (its Close returns an error, which the
// caller checks) and ErrClosed resourcemanager.ErrClosed.
//
// Each case asks newResourceManager for a started ResourceManager that resolves addresses
// through env.RPC, a fresh in-process rpc.Service, and leads with one ResourceManagerID for the
// whole case (no leader election). The suite serves a fake TaskExecutor and a fake JobMaster
// there, registers the TaskExecutor with two free slots (RegisterTaskExecutor, whose answer is
// the ResourceManagerID the suite's calls carry) and the JobMaster of one job
// (RegisterJobMaster), and observes the declarations through the slots the ResourceManager
// requests of the TaskExecutor (RequestSlot, which the fake answers nil), and the
// registration through the gateway's answers. A declaration for a job whose JobMaster is not
// registered, or disconnected, must fail, as Flink's ResourceManager.declareRequiredResources
// fails it ("Could not find registered job manager"). No case sleeps: each waits for what it
// expects for at most Timeout.
//
// TestResourceManager runs in real time; TestResourceManagerInBubble runs each case inside its
// own testing/synctest bubble, where "nothing else was requested" checks are exact. Flink has no
// such suite: a JobMaster's declareRequiredResources and disconnectJobManager return futures it
// does not wait for, which this interface makes explicit.
package rmtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
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

// Env is what newResourceManager gets for one case.
type Env struct {
	// RPC is the case's in-process Service: the ResourceManager resolves the TaskExecutors and
	// JobMasters that register with it through it (the suite serves its fakes there).
	RPC rpc.Service
}

// ResourceManager is what newResourceManager returns.
type ResourceManager struct {
	// Gateway is the ResourceManager's gateway under test; it may implement
	// rpc.ResourceManagerNotifier.
	Gateway rpc.ResourceManagerGateway
	// Close closes the ResourceManager: afterwards its gateway's methods return its closed
	// error. The suite calls it exactly once per case, in the case that checks a closed
	// ResourceManager and at the end of every other. Required.
	Close func()
	// ErrClosed, if not nil, is the sentinel the ResourceManager's closed error matches
	// (errors.Is), resourcemanager.ErrClosed for the in-process one; the suite checks the
	// gateway's and done's closed errors against it as well as against rpc.ErrClosed, which every
	// endpoint's closed error matches.
	ErrClosed error
}

// TestResourceManager runs the conformance suite, one subtest per case, in real time.
func TestResourceManager(t *testing.T, newResourceManager func(t *testing.T, env Env) ResourceManager) {
	run(t, newResourceManager, false)
}

// TestResourceManagerInBubble runs the conformance suite with each case inside a
// testing/synctest bubble. Only for implementations whose goroutines all end when they are
// closed and that do no real I/O.
func TestResourceManagerInBubble(t *testing.T, newResourceManager func(t *testing.T, env Env) ResourceManager) {
	run(t, newResourceManager, true)
}

var cases = []struct {
	name string
	run  func(s *suite)
}{
	{"ResourceManagerNotifier/RequiredResourcesBeforeALaterCall", declaredBeforeLaterCall},
	{"ResourceManagerNotifier/AppliedInCallOrderBeforeALaterCall", appliedInOrder},
	{"ResourceManagerNotifier/RequiredResourcesFencedByResourceManagerID", declareStaleResourceManager},
	{"ResourceManagerNotifier/RequiredResourcesFencedByJobMasterID", declareStaleJobMaster},
	{"ResourceManagerNotifier/RequiredResourcesRefusedAsDeclareRequiredResources", declareRefused},
	{"ResourceManagerNotifier/JobMasterDisconnectedFencedByResourceManagerID", disconnectStaleResourceManager},
	{"ResourceManagerNotifier/JobMasterDisconnectedFencedByJobMasterID", disconnectStaleJobMaster},
	{"ResourceManagerNotifier/JobMasterDisconnectedClearsTheRequirements", disconnectClears},
	{"ResourceManagerNotifier/ReturnsAtOnceWhileTheResourceManagerIsBusy", returnsAtOnce},
	{"ResourceManagerNotifier/ClosedAnswersOnTheCallersGoroutine", closedAnswers},
}

const (
	teAddress = "rmtest-taskexecutor"
	teID      = jobgraph.ResourceID("rmtest-taskexecutor")
	jmAddress = "rmtest-jobmaster"
	jmID      = jobgraph.ResourceID("rmtest-jobmaster")
)

// slotProfile is the profile of every slot the suite's TaskExecutors offer; the suite's
// requirements ask for jobgraph.UnknownResourceProfile, which any slot serves.
var slotProfile = jobgraph.ResourceProfile{CPUCores: 1}

// suite is what one case sees.
type suite struct {
	*notifytest.Case
	env Env
	rm  ResourceManager
	n   rpc.ResourceManagerNotifier
	te  *fakeTaskExecutor
	// rmID is the ResourceManagerID the registrations answered; job and token the registered
	// JobMaster's job and JobMasterID.
	rmID  jobgraph.ResourceManagerID
	job   jobgraph.JobID
	token jobgraph.JobMasterID
}

func run(t *testing.T, newResourceManager func(t *testing.T, env Env) ResourceManager, inBubble bool) {
	for _, c := range cases {
		notifytest.RunCase(t, c.name, inBubble, Timeout, func(nc *notifytest.Case) {
			t := nc.T
			s := &suite{Case: nc, env: Env{RPC: nc.RPC},
				te: &fakeTaskExecutor{id: teID, changes: &nc.Changes}, job: jobgraph.NewJobID(), token: jobgraph.NewJobMasterID()}
			require.NoError(t, nc.RPC.Register(teAddress, s.te))
			require.NoError(t, nc.RPC.Register(jmAddress, fakeJobMaster{}))
			s.rm = newResourceManager(t, s.env)
			require.NotNil(t, s.rm.Gateway, "newResourceManager returned no Gateway")
			require.NotNil(t, s.rm.Close, "newResourceManager returned no Close")
			nc.Recipient(s.rm.Close)
			n, ok := s.rm.Gateway.(rpc.ResourceManagerNotifier)
			if !ok {
				t.Logf("not applicable: the gateway under test (%T) does not implement rpc.ResourceManagerNotifier; the case passes", s.rm.Gateway)
				return
			}
			s.n = n
			s.register()
			c.run(s)
		})
	}
}

// freeSlots is a slot report of n free slots of te.
func freeSlots(te jobgraph.ResourceID, n int) rpc.SlotReport {
	var r rpc.SlotReport
	for i := range n {
		r.Slots = append(r.Slots, rpc.SlotStatus{SlotID: rpc.SlotID{ResourceID: te, SlotNumber: i}, ResourceProfile: slotProfile})
	}
	return r
}

// register registers the fake TaskExecutor with two free slots and the fake JobMaster of s.job.
func (s *suite) register() {
	s.T.Helper()
	rmID, err := s.rm.Gateway.RegisterTaskExecutor(s.Ctx, rpc.TaskExecutorRegistration{ResourceID: teID, Address: teAddress,
		TotalResource: jobgraph.ResourceProfile{CPUCores: 2}, DefaultSlotResource: slotProfile, SlotReport: freeSlots(teID, 2)})
	require.NoError(s.T, err, "the TaskExecutor registers")
	s.rmID = rmID
	rmID, err = s.rm.Gateway.RegisterJobMaster(s.Ctx, s.token, jmID, jmAddress, s.job)
	require.NoError(s.T, err, "the JobMaster registers")
	require.Equal(s.T, s.rmID, rmID, "both registrations answer the ResourceManagerID")
}

// requirements asks for n slots of any profile for s.job, offered at the JobMaster's address.
func (s *suite) requirements(n int) rpc.ResourceRequirements {
	return rpc.ResourceRequirements{JobID: s.job, TargetAddress: jmAddress,
		Requirements: []rpc.ResourceRequirement{{Profile: jobgraph.UnknownResourceProfile, Count: n}}}
}

// declare is NotifyRequiredResources with a fresh callback.
func (s *suite) declare(rm jobgraph.ResourceManagerID, token jobgraph.JobMasterID, reqs rpc.ResourceRequirements) *notifytest.Callback {
	cb := s.New()
	cb.Notify(func(done func(error)) { s.n.NotifyRequiredResources(rm, token, reqs, done) })
	return cb
}

var cause = rpc.Failure(errors.New("rmtest: the job ended"))

// disconnect is NotifyJobMasterDisconnected with a fresh callback.
func (s *suite) disconnect(rm jobgraph.ResourceManagerID, token jobgraph.JobMasterID) *notifytest.Callback {
	cb := s.New()
	cb.Notify(func(done func(error)) { s.n.NotifyJobMasterDisconnected(rm, token, s.job, cause, done) })
	return cb
}

// answer waits (at most Timeout) until cb is called and returns its error, failing the case
// unless it was called exactly once, and not on the caller's goroutine inside the Notify call:
// an open ResourceManager calls done on its main loop.
func (s *suite) answer(cb *notifytest.Callback, what string) error {
	s.T.Helper()
	select {
	case <-cb.Called():
	case <-s.Ctx.Done():
		s.T.Fatalf("waited %v for done of %s", Timeout, what)
	}
	s.Settle()
	calls := cb.Calls()
	require.Len(s.T, calls, 1, "done of %s is called exactly once", what)
	assert.False(s.T, calls[0].DuringNotify && calls[0].Goroutine == calls[0].Caller,
		"done of %s ran on the caller's goroutine inside the Notify call, while the ResourceManager takes calls", what)
	return calls[0].Err
}

// fenced checks that done of what heard a *rpc.FencingError with the text of callErr, the
// waiting call's answer to the same arguments.
func (s *suite) fenced(cb *notifytest.Callback, callErr error, what string) {
	s.T.Helper()
	var fe *rpc.FencingError
	require.ErrorAs(s.T, callErr, &fe, "the gateway method refuses %s", what)
	got := s.answer(cb, what)
	require.ErrorAs(s.T, got, &fe, "done of %s hears a *rpc.FencingError", what)
	assert.ErrorIs(s.T, got, rpc.ErrFencingTokenMismatch)
	assert.Empty(s.T, notifytest.SameError(got, callErr), "done of %s hears what the gateway method answers", what)
}

// requested waits until te has been asked for n slots, lets everything in flight happen, and
// checks there were exactly n, each for the registered JobMaster of s.job under s.rmID.
func (s *suite) requested(te *fakeTaskExecutor, n int, token jobgraph.JobMasterID, job jobgraph.JobID) {
	s.T.Helper()
	s.WaitFor(fmt.Sprintf("%d slot requests at %s", n, te.id), func() bool { return len(te.requested()) >= n })
	s.Settle()
	got := te.requested()
	require.Len(s.T, got, n, "slot requests at %s", te.id)
	var slots []rpc.SlotID
	for _, r := range got {
		assert.Equal(s.T, slotRequest{slot: r.slot, job: job, allocation: r.allocation, address: jmAddress, token: token, rm: s.rmID}, r,
			"a slot requested for the declaring JobMaster, fenced by the ResourceManagerID")
		assert.False(s.T, r.allocation.IsZero(), "an allocation")
		slots = append(slots, r.slot)
	}
	slices.SortFunc(slots, func(a, b rpc.SlotID) int { return a.SlotNumber - b.SlotNumber })
	assert.Equal(s.T, len(slots), len(slices.Compact(slots)), "each slot requested once")
}

// A declaration made through the notifier (with a nil done) comes before a waiting
// DisconnectJobMaster made after it returned: its two slots are requested, for the JobMaster, at
// its address, under the ResourceManagerID. A ResourceManager that took the disconnect first
// would refuse the declaration of a job no longer registered and request nothing.
func declaredBeforeLaterCall(s *suite) {
	s.n.NotifyRequiredResources(s.rmID, s.token, s.requirements(2), nil) // done may be nil
	require.NoError(s.T, s.rm.Gateway.DisconnectJobMaster(s.Ctx, s.rmID, s.token, s.job, cause), "the later disconnect")
	s.requested(s.te, 2, s.token, s.job)
}

// Notifications are applied in the order of the calls, and before a waiting call made after
// the last returned: a declaration (applied: one slot requested), the disconnect (nil), a
// declaration after it (refused: the job's JobMaster is gone), and the waiting
// DeclareRequiredResources after them is refused too, with the error the third one's done heard.
// Applied in another order, the first declaration is the refused one (or none is); applied
// after the waiting call, that call succeeds.
func appliedInOrder(s *suite) {
	first := s.declare(s.rmID, s.token, s.requirements(1))
	gone := s.disconnect(s.rmID, s.token)
	late := s.declare(s.rmID, s.token, s.requirements(1))
	callErr := s.rm.Gateway.DeclareRequiredResources(s.Ctx, s.rmID, s.token, s.requirements(1))
	require.Error(s.T, callErr, "a declaration made after the disconnect returned: the job has no registered JobMaster")
	require.NoError(s.T, s.answer(first, "the first declaration"))
	require.NoError(s.T, s.answer(gone, "the disconnect"))
	lateErr := s.answer(late, "the declaration after the disconnect")
	require.Error(s.T, lateErr, "the declaration after the disconnect is refused")
	assert.Empty(s.T, notifytest.SameError(lateErr, callErr), "done hears what DeclareRequiredResources answers")
	s.requested(s.te, 1, s.token, s.job)
}

// A declaration carrying another ResourceManagerID than the registrations' is fenced as
// DeclareRequiredResources is (a *rpc.FencingError with the waiting call's text) and changes
// nothing: the waiting declaration of one slot made after it is all the ResourceManager
// requests. One that applied the stale declaration of two requests both slots.
func declareStaleResourceManager(s *suite) {
	stale := jobgraph.NewResourceManagerID()
	callErr := s.rm.Gateway.DeclareRequiredResources(s.Ctx, stale, s.token, s.requirements(2))
	cb := s.declare(stale, s.token, s.requirements(2))
	require.NoError(s.T, s.rm.Gateway.DeclareRequiredResources(s.Ctx, s.rmID, s.token, s.requirements(1)))
	s.fenced(cb, callErr, "a declaration with a stale ResourceManagerID")
	s.requested(s.te, 1, s.token, s.job)
}

// A declaration carrying another JobMasterID than the registered JobMaster's is fenced the same
// way and changes nothing.
func declareStaleJobMaster(s *suite) {
	stale := jobgraph.NewJobMasterID()
	callErr := s.rm.Gateway.DeclareRequiredResources(s.Ctx, s.rmID, stale, s.requirements(2))
	cb := s.declare(s.rmID, stale, s.requirements(2))
	require.NoError(s.T, s.rm.Gateway.DeclareRequiredResources(s.Ctx, s.rmID, s.token, s.requirements(1)))
	s.fenced(cb, callErr, "a declaration with a stale JobMasterID")
	s.requested(s.te, 1, s.token, s.job)
}

// A declaration the gateway method refuses for what it declares — a job no JobMaster registered
// for, a negative count — is answered with that method's error, and changes nothing.
func declareRefused(s *suite) {
	other := s.requirements(1)
	other.JobID = jobgraph.NewJobID()
	negative := s.requirements(-1)
	for _, c := range []struct {
		what string
		reqs rpc.ResourceRequirements
	}{{"a declaration for a job with no registered JobMaster", other}, {"a declaration of a negative count", negative}} {
		callErr := s.rm.Gateway.DeclareRequiredResources(s.Ctx, s.rmID, s.token, c.reqs)
		require.Error(s.T, callErr, "DeclareRequiredResources refuses %s", c.what)
		got := s.answer(s.declare(s.rmID, s.token, c.reqs), c.what)
		assert.Empty(s.T, notifytest.SameError(got, callErr), "done of %s hears what DeclareRequiredResources answers", c.what)
	}
	require.NoError(s.T, s.rm.Gateway.DeclareRequiredResources(s.Ctx, s.rmID, s.token, s.requirements(1)))
	s.requested(s.te, 1, s.token, s.job)
}

// A disconnect carrying another ResourceManagerID than the registrations' is fenced as
// DisconnectJobMaster is and leaves the JobMaster registered: a waiting declaration made after
// it is taken and its slot requested. One that applied it refuses that declaration.
func disconnectStaleResourceManager(s *suite) {
	stale := jobgraph.NewResourceManagerID()
	callErr := s.rm.Gateway.DisconnectJobMaster(s.Ctx, stale, s.token, s.job, cause)
	cb := s.disconnect(stale, s.token)
	require.NoError(s.T, s.rm.Gateway.DeclareRequiredResources(s.Ctx, s.rmID, s.token, s.requirements(1)),
		"the JobMaster is still registered")
	s.fenced(cb, callErr, "a disconnect with a stale ResourceManagerID")
	s.requested(s.te, 1, s.token, s.job)
}

// A disconnect of an earlier session (another JobMasterID than the registered JobMaster's) is
// fenced the same way and leaves the current JobMaster registered.
func disconnectStaleJobMaster(s *suite) {
	stale := jobgraph.NewJobMasterID()
	callErr := s.rm.Gateway.DisconnectJobMaster(s.Ctx, s.rmID, stale, s.job, cause)
	cb := s.disconnect(s.rmID, stale)
	require.NoError(s.T, s.rm.Gateway.DeclareRequiredResources(s.Ctx, s.rmID, s.token, s.requirements(1)),
		"the current JobMaster is still registered")
	s.fenced(cb, callErr, "a disconnect of an earlier session")
	s.requested(s.te, 1, s.token, s.job)
}

// The current session's disconnect drops the JobMaster and clears the job's requirements: of
// three slots declared, two are requested at once and one waits for a free slot; after the
// disconnect a waiting declaration of the job is refused, and a TaskExecutor registering later
// with one free slot gives it to another job's declaration — not to the dropped job's
// outstanding one. A ResourceManager that forgets the JobMaster but keeps its requirements hands
// that slot to the old job, and the other job's slot is never requested.
func disconnectClears(s *suite) {
	require.NoError(s.T, s.rm.Gateway.DeclareRequiredResources(s.Ctx, s.rmID, s.token, s.requirements(3)))
	s.requested(s.te, 2, s.token, s.job)
	gone := s.disconnect(s.rmID, s.token)
	require.Error(s.T, s.rm.Gateway.DeclareRequiredResources(s.Ctx, s.rmID, s.token, s.requirements(3)),
		"a declaration made after the disconnect returned: the job has no registered JobMaster")
	require.NoError(s.T, s.answer(gone, "the disconnect"))

	te2 := &fakeTaskExecutor{id: "rmtest-taskexecutor-2", changes: &s.Changes}
	require.NoError(s.T, s.env.RPC.Register(string(te2.id), te2))
	rmID, err := s.rm.Gateway.RegisterTaskExecutor(s.Ctx, rpc.TaskExecutorRegistration{ResourceID: te2.id, Address: string(te2.id),
		TotalResource: slotProfile, DefaultSlotResource: slotProfile, SlotReport: freeSlots(te2.id, 1)})
	require.NoError(s.T, err)
	require.Equal(s.T, s.rmID, rmID)
	job2, token2 := jobgraph.NewJobID(), jobgraph.NewJobMasterID()
	rmID, err = s.rm.Gateway.RegisterJobMaster(s.Ctx, token2, "rmtest-jobmaster-2", jmAddress, job2)
	require.NoError(s.T, err)
	require.Equal(s.T, s.rmID, rmID)
	reqs := s.requirements(1)
	reqs.JobID = job2
	require.NoError(s.T, s.rm.Gateway.DeclareRequiredResources(s.Ctx, s.rmID, token2, reqs))
	s.requested(te2, 1, token2, job2)
	assert.Len(s.T, s.te.requested(), 2, "nothing more of the first TaskExecutor")
}

// NotifyRequiredResources and NotifyJobMasterDisconnected return at once, also while the
// ResourceManager's main loop is busy: the first notification's done blocks (the case breaks
// done's no-blocking rule on purpose, to hold the loop it is called on), and three more
// notifications return meanwhile, none of their dones called until it is released — they are
// queued, not applied on the caller's goroutine nor beside the loop. Once released they are
// applied in order: the declaration (one slot), the disconnect, the refused declaration. A
// notifier that waits for its call to be applied never returns here.
func returnsAtOnce(s *suite) {
	stale := jobgraph.NewResourceManagerID()
	hold := s.NewHolding()
	go hold.Notify(func(done func(error)) { s.n.NotifyRequiredResources(stale, s.token, s.requirements(2), done) })
	select {
	case <-hold.Inside():
	case <-s.Ctx.Done():
		s.T.Fatalf("waited %v for done of the first notification", Timeout)
	}
	first, gone, late := s.New(), s.New(), s.New()
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		first.Notify(func(done func(error)) { s.n.NotifyRequiredResources(s.rmID, s.token, s.requirements(1), done) })
		gone.Notify(func(done func(error)) { s.n.NotifyJobMasterDisconnected(s.rmID, s.token, s.job, cause, done) })
		late.Notify(func(done func(error)) { s.n.NotifyRequiredResources(s.rmID, s.token, s.requirements(1), done) })
	}()
	select {
	case <-returned:
	case <-s.Ctx.Done():
		s.T.Fatalf("the notifications did not return within %v while the ResourceManager was busy in an earlier one's done", Timeout)
	}
	s.Settle()
	for i, cb := range []*notifytest.Callback{first, gone, late} {
		assert.Empty(s.T, cb.Calls(), "done of notification %d ran while the loop was held by an earlier one's", i+1)
	}
	assert.Empty(s.T, s.te.requested(), "nothing requested while the loop is held")
	hold.Release()
	var fe *rpc.FencingError
	require.ErrorAs(s.T, s.answer(hold, "the stale declaration"), &fe)
	require.NoError(s.T, s.answer(first, "the declaration"))
	require.NoError(s.T, s.answer(gone, "the disconnect"))
	require.Error(s.T, s.answer(late, "the declaration after the disconnect"))
	s.requested(s.te, 1, s.token, s.job)
}

// Once the ResourceManager is closed, done is called before the Notify call returns, on the
// caller's goroutine, with the error the gateway method returns for the same arguments (the
// same text, matching rpc.ErrClosed and ResourceManager.ErrClosed as it does) — for both
// notifiers, current and stale tokens; a nil done is allowed there too. Catches a closed
// notifier that drops the call without calling done, calls it later or on another goroutine, or
// with another error.
func closedAnswers(s *suite) {
	s.Close()
	staleRM, staleJM := jobgraph.NewResourceManagerID(), jobgraph.NewJobMasterID()
	for _, c := range []struct {
		what    string
		current bool
		call    func() error
		notify  func(done func(error))
	}{
		{"NotifyRequiredResources", true,
			func() error { return s.rm.Gateway.DeclareRequiredResources(s.Ctx, s.rmID, s.token, s.requirements(1)) },
			func(done func(error)) { s.n.NotifyRequiredResources(s.rmID, s.token, s.requirements(1), done) }},
		{"NotifyRequiredResources with a stale ResourceManagerID", false,
			func() error { return s.rm.Gateway.DeclareRequiredResources(s.Ctx, staleRM, s.token, s.requirements(1)) },
			func(done func(error)) { s.n.NotifyRequiredResources(staleRM, s.token, s.requirements(1), done) }},
		{"NotifyJobMasterDisconnected", true,
			func() error { return s.rm.Gateway.DisconnectJobMaster(s.Ctx, s.rmID, s.token, s.job, cause) },
			func(done func(error)) { s.n.NotifyJobMasterDisconnected(s.rmID, s.token, s.job, cause, done) }},
		{"NotifyJobMasterDisconnected with a stale JobMasterID", false,
			func() error { return s.rm.Gateway.DisconnectJobMaster(s.Ctx, s.rmID, staleJM, s.job, cause) },
			func(done func(error)) { s.n.NotifyJobMasterDisconnected(s.rmID, staleJM, s.job, cause, done) }},
	} {
		callErr := c.call()
		require.Error(s.T, callErr, "the gateway method of a closed ResourceManager: %s", c.what)
		if c.current {
			assert.ErrorIs(s.T, callErr, rpc.ErrClosed, "a closed endpoint's error: %s", c.what)
			if s.rm.ErrClosed != nil {
				assert.ErrorIs(s.T, callErr, s.rm.ErrClosed, "the ResourceManager's closed error: %s", c.what)
			}
		}
		cb := s.New()
		cb.Notify(c.notify)
		calls := cb.Calls()
		require.Len(s.T, calls, 1, "done of %s was called once before the call returned", c.what)
		assert.True(s.T, calls[0].DuringNotify, "done of %s ran inside the call", c.what)
		assert.Equal(s.T, calls[0].Caller, calls[0].Goroutine, "done of %s ran on the caller's goroutine", c.what)
		assert.Empty(s.T, notifytest.SameError(calls[0].Err, callErr, s.rm.ErrClosed), "done of %s hears what the gateway method answers", c.what)
	}
	// A nil done: nothing to call.
	s.n.NotifyRequiredResources(s.rmID, s.token, s.requirements(1), nil)
	s.n.NotifyJobMasterDisconnected(s.rmID, s.token, s.job, cause, nil)
	s.Settle()
	assert.Empty(s.T, s.te.requested(), "a closed ResourceManager requests nothing")
}

// ---- fakes ----

// slotRequest is one RequestSlot a fake TaskExecutor took.
type slotRequest struct {
	slot       rpc.SlotID
	job        jobgraph.JobID
	allocation jobgraph.AllocationID
	address    string
	token      jobgraph.JobMasterID
	rm         jobgraph.ResourceManagerID
}

// fakeTaskExecutor records the slot requests (answering nil: allocated) and answers everything
// else with nil.
type fakeTaskExecutor struct {
	id      jobgraph.ResourceID
	changes *notifytest.Changes // fired at every slot request

	mu       sync.Mutex
	requests []slotRequest
}

func (f *fakeTaskExecutor) requested() []slotRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

func (f *fakeTaskExecutor) RequestSlot(_ context.Context, slot rpc.SlotID, job jobgraph.JobID, allocation jobgraph.AllocationID, _ jobgraph.ResourceProfile, address string, token jobgraph.JobMasterID, rm jobgraph.ResourceManagerID) error {
	f.mu.Lock()
	f.requests = append(f.requests, slotRequest{slot: slot, job: job, allocation: allocation, address: address, token: token, rm: rm})
	f.mu.Unlock()
	f.changes.Fire()
	return nil
}

func (f *fakeTaskExecutor) SubmitTask(context.Context, jobgraph.JobMasterID, rpc.TaskDeploymentDescriptor) error {
	return errors.New("rmtest: the TaskExecutor runs no tasks")
}

func (f *fakeTaskExecutor) SubmitTasks(context.Context, jobgraph.JobMasterID, []rpc.TaskDeploymentDescriptor) ([]error, error) {
	return nil, errors.New("rmtest: the TaskExecutor runs no tasks")
}

func (f *fakeTaskExecutor) CancelTask(context.Context, jobgraph.ExecutionAttemptID) error { return nil }

func (f *fakeTaskExecutor) FreeSlot(context.Context, jobgraph.AllocationID, *jobgraph.ErrorInfo) error {
	return nil
}

func (f *fakeTaskExecutor) ReleasePartitions(context.Context, jobgraph.JobID, []rpc.ResultPartitionID) error {
	return nil
}

func (f *fakeTaskExecutor) DisconnectJobMaster(context.Context, jobgraph.JobMasterID, jobgraph.JobID, *jobgraph.ErrorInfo) error {
	return nil
}

func (f *fakeTaskExecutor) HeartbeatFromJobMaster(context.Context, jobgraph.ResourceID) error {
	return nil
}

func (f *fakeTaskExecutor) HeartbeatFromResourceManager(context.Context, jobgraph.ResourceID) error {
	return nil
}

func (f *fakeTaskExecutor) TriggerCheckpoint(context.Context, jobgraph.JobMasterID, jobgraph.ExecutionAttemptID, checkpoint.CheckpointID, time.Time, checkpoint.CheckpointProperties) error {
	return nil
}

func (f *fakeTaskExecutor) ConfirmCheckpoint(context.Context, jobgraph.JobMasterID, jobgraph.ExecutionAttemptID, checkpoint.CheckpointID, time.Time) error {
	return nil
}

func (f *fakeTaskExecutor) AbortCheckpoint(context.Context, jobgraph.JobMasterID, jobgraph.ExecutionAttemptID, checkpoint.CheckpointID, time.Time) error {
	return nil
}

func (f *fakeTaskExecutor) SendOperatorEventToTask(context.Context, jobgraph.JobMasterID, jobgraph.ExecutionAttemptID, []byte) error {
	return nil
}

// fakeJobMaster answers every call of the ResourceManager with nil.
type fakeJobMaster struct{}

func (fakeJobMaster) UpdateTaskExecutionState(context.Context, jobgraph.JobMasterID, rpc.TaskExecutionState) (bool, error) {
	return false, nil
}

func (fakeJobMaster) RegisterTaskExecutor(context.Context, jobgraph.JobMasterID, rpc.TaskExecutorRegistration) error {
	return nil
}

func (fakeJobMaster) OfferSlots(_ context.Context, _ jobgraph.JobMasterID, _ jobgraph.ResourceID, offers []rpc.SlotOffer) ([]rpc.SlotOffer, error) {
	return offers, nil
}

func (fakeJobMaster) FailSlot(context.Context, jobgraph.JobMasterID, jobgraph.ResourceID, jobgraph.AllocationID, *jobgraph.ErrorInfo) error {
	return nil
}

func (fakeJobMaster) DisconnectTaskExecutor(context.Context, jobgraph.JobMasterID, jobgraph.ResourceID, *jobgraph.ErrorInfo) error {
	return nil
}

func (fakeJobMaster) DisconnectResourceManager(context.Context, jobgraph.JobMasterID, jobgraph.ResourceManagerID, *jobgraph.ErrorInfo) error {
	return nil
}

func (fakeJobMaster) HeartbeatFromTaskExecutor(context.Context, jobgraph.ResourceID, rpc.AllocatedSlotReport) error {
	return nil
}

func (fakeJobMaster) HeartbeatFromResourceManager(context.Context, jobgraph.ResourceID) error {
	return nil
}

func (fakeJobMaster) AcknowledgeCheckpoint(context.Context, jobgraph.JobMasterID, jobgraph.JobID, checkpoint.AcknowledgeCheckpoint) error {
	return nil
}

func (fakeJobMaster) DeclineCheckpoint(context.Context, jobgraph.JobMasterID, jobgraph.JobID, checkpoint.DeclineCheckpoint) error {
	return nil
}

func (fakeJobMaster) SendOperatorEventToCoordinator(context.Context, jobgraph.JobMasterID, jobgraph.ExecutionAttemptID, []byte) error {
	return nil
}

var (
	_ rpc.TaskExecutorGateway = (*fakeTaskExecutor)(nil)
	_ rpc.JobMasterGateway    = fakeJobMaster{}
)
