// Package jmtest is the conformance suite for the JobMaster side of rpc.TaskExecutionStateNotifier:
// the optional one-way form of rpc.JobMasterGateway.UpdateTaskExecutionState that the in-process
// jobmaster.DefaultJobMaster implements and a TaskExecutor reports its tasks' states through when
// its JobMaster's gateway has it. The suite checks every promise of the interface's doc comment:
// NotifyTaskExecutionState queues the state as UpdateTaskExecutionState would deliver it —
// fenced by the JobMasterID (a stale token's state is dropped and done hears a *rpc.FencingError),
// applied in the order of the calls, and before every call the gateway takes after it returned
// (UpdateTaskExecutionState, HeartbeatFromTaskExecutor with its rpc.ExecutionDeploymentReport: a
// state counts as delivered once the call returned) — and returns at once, also while the
// JobMaster's loop is busy; done, which may be nil, is called exactly once with the error
// UpdateTaskExecutionState would have returned (nil also for an attempt it does not know),
// never on the caller's goroutine while the JobMaster takes calls, never two at once (on the
// JobMaster's main loop), and once the JobMaster is closed on the caller's goroutine before the
// call returns, with the same error as UpdateTaskExecutionState's.
//
// A gateway that does not implement rpc.TaskExecutionStateNotifier (a transport's client proxy)
// passes every case: each logs (t.Log) that it was not applicable.
//
// Run it from the implementation's tests:
//
//	func TestConformance(t *testing.T) {
//		jmtest.TestJobMaster(t, func(t *testing.T, env jmtest.Env) jmtest.JobMaster {
//			jm := myjobmaster.Start(env.RPC, env.ResourceManagerAddress, env.JobGraph, env.JobMasterID)
//			return jmtest.JobMaster{Gateway: jm, RequestJobStatus: jm.RequestJobStatus, Close: jm.Close}
//		})
//	}
//
// The in-process JobMaster runs it so (jobmaster's conformance_test.go): jobmaster.NewFactory
// with env.JobGraph and a jobmaster.Config of env.RPC and env.ResourceManagerAddress, then
// Factory.Create(ctx, env.JobMasterID); Gateway is its Gateway(), RequestJobStatus its method,
// Close func() { jm.Close() } (its Close returns the archived graph, which Close here drops) and
// ErrClosed jobmaster.ErrClosed.
//
// Each case serves a fake ResourceManager and a fake TaskExecutor on a fresh in-process
// rpc.Service and asks newJobMaster for a JobMaster running env.JobGraph (one vertex,
// VertexName, of parallelism 2 running Invokable, restart strategy none) under the session
// env.JobMasterID, that resolves addresses through env.RPC and registers with the
// ResourceManager at env.ResourceManagerAddress. The suite then registers its TaskExecutor with
// the JobMaster (RegisterTaskExecutor), offers it two slots (OfferSlots, both must be accepted)
// and waits until both subtasks are deployed there (SubmitTask or SubmitTasks with
// env.JobMasterID): the two attempts it reports states for. The fake TaskExecutor runs nothing;
// every state comes from the suite. No case sleeps: each waits for what it expects for at most
// Timeout.
//
// TestJobMaster runs in real time; TestJobMasterInBubble runs each case inside its own
// testing/synctest bubble, where "nothing else happened" checks are exact. Flink has no such
// suite: its JobMasterGateway.updateTaskExecutionState returns a future the TaskExecutor does
// not wait for, which this interface makes explicit.
package jmtest

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

const (
	// VertexName and Invokable name the one vertex of env.JobGraph and its task code, which the
	// suite's TaskExecutor never runs.
	VertexName = "jmtest-vertex"
	Invokable  = "jmtest.task"
	// Parallelism is the vertex's parallelism: the suite reports states for both subtasks.
	Parallelism = 2
)

// Env is what newJobMaster gets for one case.
type Env struct {
	// RPC is the case's in-process Service: the JobMaster resolves the ResourceManager and the
	// TaskExecutor through it (the suite registers them there).
	RPC rpc.Service
	// ResourceManagerAddress is where the fake ResourceManager listens; it answers
	// RegisterJobMaster and takes every declaration.
	ResourceManagerAddress string
	// JobGraph is the job to run: VertexName of Parallelism running Invokable, with
	// jobgraph.NoRestart, so that a FAILED attempt fails the job.
	JobGraph *jobgraph.JobGraph
	// JobMasterID is the leader session the JobMaster runs under: its fencing token.
	JobMasterID jobgraph.JobMasterID
}

// JobMaster is what newJobMaster returns.
type JobMaster struct {
	// Gateway is the JobMaster's gateway under test; it may implement
	// rpc.TaskExecutionStateNotifier.
	Gateway rpc.JobMasterGateway
	// RequestJobStatus reads the job's status back (jobmaster.JobMaster.RequestJobStatus). The
	// suite calls it only after a gateway call returned, and expects it to see every state the
	// gateway applied before that call (the JobMaster's own loop orders it so). Required.
	RequestJobStatus func(ctx context.Context) (jobgraph.JobStatus, error)
	// Close closes the JobMaster: afterwards its gateway's methods return its closed error. The
	// suite calls it exactly once per case, in the case that checks a closed JobMaster and at the
	// end of every other. Required.
	Close func()
	// ErrClosed, if not nil, is the sentinel the JobMaster's closed error matches (errors.Is),
	// jobmaster.ErrClosed for the in-process one; the suite checks UpdateTaskExecutionState's
	// and done's closed errors against it as well as against rpc.ErrClosed, which every
	// endpoint's closed error matches.
	ErrClosed error
}

// TestJobMaster runs the conformance suite, one subtest per case, in real time.
func TestJobMaster(t *testing.T, newJobMaster func(t *testing.T, env Env) JobMaster) {
	run(t, newJobMaster, false)
}

// TestJobMasterInBubble runs the conformance suite with each case inside a testing/synctest
// bubble. Only for implementations whose goroutines all end when they are closed and that do no
// real I/O.
func TestJobMasterInBubble(t *testing.T, newJobMaster func(t *testing.T, env Env) JobMaster) {
	run(t, newJobMaster, true)
}

var cases = []struct {
	name string
	run  func(s *suite)
}{
	{"TaskExecutionStateNotifier/AppliedInCallOrderBeforeALaterCall", appliedInOrder},
	{"TaskExecutionStateNotifier/StaleTokenFencedAndDropped", staleTokenFenced},
	{"TaskExecutionStateNotifier/UnknownAttemptAnsweredAsUpdateTaskExecutionState", unknownAttempt},
	{"TaskExecutionStateNotifier/ReturnsAtOnceWhileTheJobMasterIsBusy", returnsAtOnce},
	{"TaskExecutionStateNotifier/DeliveredBeforeALaterHeartbeat", deliveredBeforeHeartbeat},
	{"TaskExecutionStateNotifier/ClosedAnswersOnTheCallersGoroutine", closedAnswers},
}

const (
	rmAddress = "jmtest-resourcemanager"
	teAddress = "jmtest-taskexecutor"
	teID      = jobgraph.ResourceID("jmtest-taskexecutor")
)

// suite is what one case sees.
type suite struct {
	*notifytest.Case
	env Env
	jm  JobMaster
	n   rpc.TaskExecutionStateNotifier
	te  *fakeTaskExecutor
	// a and b are the deployed attempts of subtasks 0 and 1, in allocations allocA and allocB.
	a, b           jobgraph.ExecutionAttemptID
	allocA, allocB jobgraph.AllocationID
}

func run(t *testing.T, newJobMaster func(t *testing.T, env Env) JobMaster, inBubble bool) {
	for _, c := range cases {
		notifytest.RunCase(t, c.name, inBubble, Timeout, func(nc *notifytest.Case) {
			t := nc.T
			s := &suite{Case: nc, te: &fakeTaskExecutor{changes: &nc.Changes}}
			g := jobgraph.New("jmtest", jobgraph.Streaming)
			g.AddVertex(VertexName, Invokable, Parallelism)
			g.RestartStrategy = jobgraph.NoRestart()
			s.env = Env{RPC: nc.RPC, ResourceManagerAddress: rmAddress, JobGraph: g, JobMasterID: jobgraph.NewJobMasterID()}
			require.NoError(t, nc.RPC.Register(rmAddress, &fakeResourceManager{id: jobgraph.NewResourceManagerID()}))
			require.NoError(t, nc.RPC.Register(teAddress, s.te))
			s.jm = newJobMaster(t, s.env)
			require.NotNil(t, s.jm.Gateway, "newJobMaster returned no Gateway")
			require.NotNil(t, s.jm.Close, "newJobMaster returned no Close")
			nc.Recipient(s.jm.Close)
			n, ok := s.jm.Gateway.(rpc.TaskExecutionStateNotifier)
			if !ok {
				t.Logf("not applicable: the gateway under test (%T) does not implement rpc.TaskExecutionStateNotifier; the case passes", s.jm.Gateway)
				return
			}
			require.NotNil(t, s.jm.RequestJobStatus, "newJobMaster returned no RequestJobStatus")
			s.n = n
			s.deploy()
			c.run(s)
		})
	}
}

// deploy registers the fake TaskExecutor with the JobMaster, offers two slots and waits until
// both subtasks are deployed to them.
func (s *suite) deploy() {
	s.T.Helper()
	token := s.env.JobMasterID
	require.NoError(s.T, s.jm.Gateway.RegisterTaskExecutor(s.Ctx, token, rpc.TaskExecutorRegistration{ResourceID: teID, Address: teAddress}),
		"the JobMaster takes the suite's TaskExecutor")
	offers := []rpc.SlotOffer{{AllocationID: jobgraph.NewAllocationID(), SlotIndex: 0}, {AllocationID: jobgraph.NewAllocationID(), SlotIndex: 1}}
	accepted, err := s.jm.Gateway.OfferSlots(s.Ctx, token, teID, offers)
	require.NoError(s.T, err)
	require.ElementsMatch(s.T, offers, accepted, "the JobMaster accepts both slots its two subtasks need")
	s.WaitFor("both subtasks are deployed to the suite's TaskExecutor", func() bool { return len(s.te.deployed()) >= Parallelism })
	s.Settle() // the JobMaster has the answers to its deployments
	tdds := s.te.deployed()
	require.Len(s.T, tdds, Parallelism, "one deployment per subtask")
	slices.SortFunc(tdds, func(x, y submitted) int { return x.tdd.SubtaskIndex - y.tdd.SubtaskIndex })
	for i, d := range tdds {
		require.Equal(s.T, token, d.token, "deployed under the session's JobMasterID")
		require.Equal(s.T, s.env.JobGraph.JobID, d.tdd.JobID)
		require.Equal(s.T, i, d.tdd.SubtaskIndex)
	}
	s.a, s.allocA = tdds[0].tdd.ExecutionAttemptID, tdds[0].tdd.AllocationID
	s.b, s.allocB = tdds[1].tdd.ExecutionAttemptID, tdds[1].tdd.AllocationID
}

// state is a TaskExecutionState of attempt; a FAILED one carries a failure.
func state(attempt jobgraph.ExecutionAttemptID, st jobgraph.ExecutionState) rpc.TaskExecutionState {
	ts := rpc.TaskExecutionState{ExecutionAttemptID: attempt, State: st}
	if st == jobgraph.ExecutionStateFailed {
		ts.Failure = rpc.Failure(errors.New("jmtest: the task failed"))
	}
	return ts
}

// notify makes one notification with a fresh callback, which the case's end checks was called
// exactly once.
func (s *suite) notify(token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, st jobgraph.ExecutionState) *notifytest.Callback {
	cb := s.New()
	cb.Notify(func(done func(error)) { s.n.NotifyTaskExecutionState(token, state(attempt, st), done) })
	return cb
}

// answer waits (at most Timeout) until cb is called and returns its error, failing the case
// unless it was called exactly once, and not on the caller's goroutine inside the Notify call:
// an open JobMaster calls done on its main loop.
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
		"done of %s ran on the caller's goroutine inside NotifyTaskExecutionState, while the JobMaster takes calls", what)
	return calls[0].Err
}

// update is the waiting call: UpdateTaskExecutionState.
func (s *suite) update(token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, st jobgraph.ExecutionState) (bool, error) {
	return s.jm.Gateway.UpdateTaskExecutionState(s.Ctx, token, state(attempt, st))
}

// status reads the job's status back.
func (s *suite) status() jobgraph.JobStatus {
	s.T.Helper()
	st, err := s.jm.RequestJobStatus(s.Ctx)
	require.NoError(s.T, err, "RequestJobStatus")
	return st
}

// finishB reports the second subtask FINISHED with the waiting call, which must apply it; with
// the first subtask FINISHED before, the job is then FINISHED.
func (s *suite) finishB() {
	s.T.Helper()
	applied, err := s.update(s.env.JobMasterID, s.b, jobgraph.ExecutionStateFinished)
	require.NoError(s.T, err)
	require.True(s.T, applied, "subtask 1 finishes")
	assert.Equal(s.T, jobgraph.JobStatusFinished, s.status(), "both subtasks FINISHED: so is the job")
}

// A series of states for one attempt is applied in the order of the calls, and before a
// waiting call made after the last returned: INITIALIZING, RUNNING (with a nil done), FINISHED,
// then a FAILED that comes too late to count. A JobMaster applying them in another order fails
// the attempt (RUNNING before INITIALIZING goes back, an illegal transition; FAILED before
// FINISHED fails it) and so the job, whose restart strategy is none; one applying them after the
// waiting UpdateTaskExecutionState(RUNNING) makes that call apply (true) to an attempt still
// deploying. Each done hears nil: what UpdateTaskExecutionState answers, also for the late
// FAILED it does not apply.
func appliedInOrder(s *suite) {
	token := s.env.JobMasterID
	initializing := s.notify(token, s.a, jobgraph.ExecutionStateInitializing)
	s.n.NotifyTaskExecutionState(token, state(s.a, jobgraph.ExecutionStateRunning), nil) // done may be nil
	finished := s.notify(token, s.a, jobgraph.ExecutionStateFinished)
	late := s.notify(token, s.a, jobgraph.ExecutionStateFailed)
	applied, err := s.update(token, s.a, jobgraph.ExecutionStateRunning)
	require.NoError(s.T, err)
	assert.False(s.T, applied, "subtask 0 FINISHED before this later call: its RUNNING is not applied")
	assert.Equal(s.T, jobgraph.JobStatusRunning, s.status(), "nothing failed: subtask 0 FINISHED, subtask 1 still deploying")
	require.NoError(s.T, s.answer(initializing, "INITIALIZING"))
	require.NoError(s.T, s.answer(finished, "FINISHED"))
	require.NoError(s.T, s.answer(late, "the late FAILED"), "UpdateTaskExecutionState answers a state of a FINISHED attempt with (false, nil)")
	s.finishB()
}

// A notification with a token other than the session's is fenced as UpdateTaskExecutionState
// is: done hears a *rpc.FencingError (rpc.ErrFencingTokenMismatch) with the text the waiting call
// answers, and the state is dropped — a later call finds both attempts still deploying (their
// RUNNING applies) and the job RUNNING. A JobMaster that applies a stale FAILED fails subtask 0
// and the job; one that applies a stale FINISHED makes subtask 1's RUNNING not apply.
func staleTokenFenced(s *suite) {
	token, stale := s.env.JobMasterID, jobgraph.NewJobMasterID()
	_, callErr := s.update(stale, s.a, jobgraph.ExecutionStateFailed)
	var fe *rpc.FencingError
	require.ErrorAs(s.T, callErr, &fe, "UpdateTaskExecutionState with a stale token")
	failed := s.notify(stale, s.a, jobgraph.ExecutionStateFailed)
	finished := s.notify(stale, s.b, jobgraph.ExecutionStateFinished)
	applied, err := s.update(token, s.a, jobgraph.ExecutionStateRunning)
	require.NoError(s.T, err)
	assert.True(s.T, applied, "subtask 0 is still deploying: the stale FAILED was dropped")
	applied, err = s.update(token, s.b, jobgraph.ExecutionStateRunning)
	require.NoError(s.T, err)
	assert.True(s.T, applied, "subtask 1 is still deploying: the stale FINISHED was dropped")
	assert.Equal(s.T, jobgraph.JobStatusRunning, s.status())
	for _, n := range []struct {
		cb   *notifytest.Callback
		what string
	}{{failed, "the stale FAILED"}, {finished, "the stale FINISHED"}} {
		got := s.answer(n.cb, n.what)
		require.ErrorAs(s.T, got, &fe, "done of %s hears a *rpc.FencingError", n.what)
		assert.ErrorIs(s.T, got, rpc.ErrFencingTokenMismatch)
	}
	assert.Empty(s.T, notifytest.SameError(failed.Calls()[0].Err, callErr), "done hears what UpdateTaskExecutionState answers")
}

// A state of an attempt the JobMaster does not know is answered as UpdateTaskExecutionState
// answers it: (false, nil), so done hears nil — not an error of its own — and nothing changes:
// both attempts still deploying, the job RUNNING. Catches a notifier that makes "not applied"
// an error, or a JobMaster that fails the job for a stranger's FAILED.
func unknownAttempt(s *suite) {
	token := s.env.JobMasterID
	unknown := jobgraph.ExecutionAttemptID{ExecutionGraphID: s.a.ExecutionGraphID,
		ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: jobgraph.NewJobVertexID()}}
	applied, callErr := s.update(token, unknown, jobgraph.ExecutionStateFailed)
	require.NoError(s.T, callErr, "UpdateTaskExecutionState of an unknown attempt")
	require.False(s.T, applied)
	cb := s.notify(token, unknown, jobgraph.ExecutionStateFailed)
	applied, err := s.update(token, s.a, jobgraph.ExecutionStateRunning)
	require.NoError(s.T, err)
	assert.True(s.T, applied, "subtask 0 is still deploying")
	assert.Equal(s.T, jobgraph.JobStatusRunning, s.status())
	assert.NoError(s.T, s.answer(cb, "the unknown attempt's FAILED"))
}

// NotifyTaskExecutionState returns at once, also while the JobMaster's main loop is busy: the
// first notification's done blocks (the case breaks done's no-blocking rule on purpose, to hold
// the loop it is called on), and three more notifications return meanwhile, none of their dones
// called until it is released — they are queued, not applied on the caller's goroutine nor on
// another goroutine beside the loop. Once released they are applied in order (subtask 0 RUNNING
// then FINISHED; the stale FAILED of subtask 1 dropped with a *rpc.FencingError). A
// NotifyTaskExecutionState that waits for its state to be applied never returns here.
func returnsAtOnce(s *suite) {
	token := s.env.JobMasterID
	hold := s.NewHolding()
	go hold.Notify(func(done func(error)) {
		s.n.NotifyTaskExecutionState(token, state(s.a, jobgraph.ExecutionStateInitializing), done)
	})
	select {
	case <-hold.Inside():
	case <-s.Ctx.Done():
		s.T.Fatalf("waited %v for done of the first notification", Timeout)
	}
	running, finished, stale := s.New(), s.New(), s.New()
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		running.Notify(func(done func(error)) {
			s.n.NotifyTaskExecutionState(token, state(s.a, jobgraph.ExecutionStateRunning), done)
		})
		finished.Notify(func(done func(error)) {
			s.n.NotifyTaskExecutionState(token, state(s.a, jobgraph.ExecutionStateFinished), done)
		})
		stale.Notify(func(done func(error)) {
			s.n.NotifyTaskExecutionState(jobgraph.NewJobMasterID(), state(s.b, jobgraph.ExecutionStateFailed), done)
		})
	}()
	select {
	case <-returned:
	case <-s.Ctx.Done():
		s.T.Fatalf("NotifyTaskExecutionState did not return within %v while the JobMaster was busy in an earlier notification's done", Timeout)
	}
	s.Settle()
	for i, cb := range []*notifytest.Callback{running, finished, stale} {
		assert.Empty(s.T, cb.Calls(), "done of notification %d ran while the loop was held by an earlier one's", i+1)
	}
	hold.Release()
	require.NoError(s.T, s.answer(hold, "INITIALIZING"))
	require.NoError(s.T, s.answer(running, "RUNNING"))
	require.NoError(s.T, s.answer(finished, "FINISHED"))
	var fe *rpc.FencingError
	require.ErrorAs(s.T, s.answer(stale, "the stale FAILED"), &fe)
	applied, err := s.update(token, s.a, jobgraph.ExecutionStateRunning)
	require.NoError(s.T, err)
	assert.False(s.T, applied, "subtask 0 FINISHED")
	assert.Equal(s.T, jobgraph.JobStatusRunning, s.status(), "nothing failed")
	s.finishB()
}

// A state counts as delivered once NotifyTaskExecutionState returned (rpc.ExecutionDeploymentReport):
// subtask 0 is reported FINISHED, then a heartbeat of its TaskExecutor whose deployment report
// lists only subtask 1 — what a TaskExecutor sends once it handed the final state over. A
// JobMaster that takes the heartbeat before the state finds subtask 0 missing, fails it as a
// lost deployment and fails the job; this one keeps RUNNING, and FINISHED once subtask 1 is.
// (In real time the JobMaster may not yet count subtask 0's deployment as acknowledged when the
// heartbeat comes, and then would not fail it either: the check is exact in a bubble.)
func deliveredBeforeHeartbeat(s *suite) {
	token := s.env.JobMasterID
	initializing := s.notify(token, s.a, jobgraph.ExecutionStateInitializing)
	running := s.notify(token, s.a, jobgraph.ExecutionStateRunning)
	finished := s.notify(token, s.a, jobgraph.ExecutionStateFinished)
	require.NoError(s.T, s.jm.Gateway.HeartbeatFromTaskExecutor(s.Ctx, teID, rpc.AllocatedSlotReport{
		JobID: s.env.JobGraph.JobID, Slots: []jobgraph.AllocationID{s.allocA, s.allocB},
		ExecutionDeploymentReport: &rpc.ExecutionDeploymentReport{Executions: []jobgraph.ExecutionAttemptID{s.b}},
	}))
	assert.Equal(s.T, jobgraph.JobStatusRunning, s.status(), "subtask 0 FINISHED before the heartbeat: not a lost deployment")
	for _, cb := range []*notifytest.Callback{initializing, running, finished} {
		require.NoError(s.T, s.answer(cb, "a state of subtask 0"))
	}
	s.finishB()
}

// Once the JobMaster is closed, done is called before NotifyTaskExecutionState returns, on the
// caller's goroutine, with the error UpdateTaskExecutionState returns for the same arguments
// (the same text, matching rpc.ErrClosed and JobMaster.ErrClosed as it does) — for the
// session's token, a stale one and an unknown attempt; a nil done is allowed there too. Catches
// a closed notifier that drops the call without calling done, calls it later or on another
// goroutine, or with another error (nil, or its own).
func closedAnswers(s *suite) {
	token := s.env.JobMasterID
	s.Close()
	unknown := jobgraph.ExecutionAttemptID{ExecutionGraphID: s.a.ExecutionGraphID,
		ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: jobgraph.NewJobVertexID()}}
	for _, c := range []struct {
		what    string
		token   jobgraph.JobMasterID
		attempt jobgraph.ExecutionAttemptID
		state   jobgraph.ExecutionState
	}{
		{"the session's RUNNING of subtask 0", token, s.a, jobgraph.ExecutionStateRunning},
		{"a stale token's FAILED of subtask 1", jobgraph.NewJobMasterID(), s.b, jobgraph.ExecutionStateFailed},
		{"the session's FINISHED of an unknown attempt", token, unknown, jobgraph.ExecutionStateFinished},
	} {
		_, callErr := s.update(c.token, c.attempt, c.state)
		require.Error(s.T, callErr, "UpdateTaskExecutionState of a closed JobMaster: %s", c.what)
		if c.token == token {
			assert.ErrorIs(s.T, callErr, rpc.ErrClosed, "a closed endpoint's error: %s", c.what)
			if s.jm.ErrClosed != nil {
				assert.ErrorIs(s.T, callErr, s.jm.ErrClosed, "the JobMaster's closed error: %s", c.what)
			}
		}
		cb := s.notify(c.token, c.attempt, c.state)
		calls := cb.Calls()
		require.Len(s.T, calls, 1, "done of %s was called once before NotifyTaskExecutionState returned", c.what)
		assert.True(s.T, calls[0].DuringNotify, "done of %s ran inside the call", c.what)
		assert.Equal(s.T, calls[0].Caller, calls[0].Goroutine, "done of %s ran on the caller's goroutine", c.what)
		assert.Empty(s.T, notifytest.SameError(calls[0].Err, callErr, s.jm.ErrClosed), "done of %s hears what UpdateTaskExecutionState answers", c.what)
	}
	s.n.NotifyTaskExecutionState(token, state(s.a, jobgraph.ExecutionStateFinished), nil) // a nil done: nothing to call
}

// ---- fakes ----

// submitted is one deployment the fake TaskExecutor took.
type submitted struct {
	token jobgraph.JobMasterID
	tdd   rpc.TaskDeploymentDescriptor
}

// fakeTaskExecutor records the deployments and answers everything else with nil; it runs
// nothing and reports nothing by itself.
type fakeTaskExecutor struct {
	mu      sync.Mutex
	submits []submitted
	changes *notifytest.Changes // fired at every deployment
}

func (f *fakeTaskExecutor) deployed() []submitted {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.submits)
}

func (f *fakeTaskExecutor) record(token jobgraph.JobMasterID, tdds ...rpc.TaskDeploymentDescriptor) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tdd := range tdds {
		f.submits = append(f.submits, submitted{token: token, tdd: tdd})
	}
	f.changes.Fire()
}

func (f *fakeTaskExecutor) RequestSlot(context.Context, rpc.SlotID, jobgraph.JobID, jobgraph.AllocationID, jobgraph.ResourceProfile, string, jobgraph.JobMasterID, jobgraph.ResourceManagerID) error {
	return fmt.Errorf("jmtest: the TaskExecutor takes no slot requests")
}

func (f *fakeTaskExecutor) SubmitTask(_ context.Context, token jobgraph.JobMasterID, tdd rpc.TaskDeploymentDescriptor) error {
	f.record(token, tdd)
	return nil
}

func (f *fakeTaskExecutor) SubmitTasks(_ context.Context, token jobgraph.JobMasterID, tdds []rpc.TaskDeploymentDescriptor) ([]error, error) {
	f.record(token, tdds...)
	return nil, nil
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

// fakeResourceManager answers a JobMaster's registration with id and takes everything else.
type fakeResourceManager struct {
	id jobgraph.ResourceManagerID
}

func (f *fakeResourceManager) RegisterTaskExecutor(context.Context, rpc.TaskExecutorRegistration) (jobgraph.ResourceManagerID, error) {
	return f.id, nil
}

func (f *fakeResourceManager) SendSlotReport(context.Context, jobgraph.ResourceManagerID, jobgraph.ResourceID, rpc.SlotReport) error {
	return nil
}

func (f *fakeResourceManager) NotifySlotAvailable(context.Context, jobgraph.ResourceManagerID, jobgraph.ResourceID, rpc.SlotID, jobgraph.AllocationID) error {
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

func (f *fakeResourceManager) HeartbeatFromTaskExecutor(context.Context, jobgraph.ResourceManagerID, jobgraph.ResourceID, rpc.SlotReport) error {
	return nil
}

func (f *fakeResourceManager) HeartbeatFromJobMaster(context.Context, jobgraph.ResourceManagerID, jobgraph.ResourceID) error {
	return nil
}

var (
	_ rpc.TaskExecutorGateway    = (*fakeTaskExecutor)(nil)
	_ rpc.ResourceManagerGateway = (*fakeResourceManager)(nil)
)
