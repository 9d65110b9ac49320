package hascenarios

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// runnerScenarios are the JobManagerRunner (jobmaster.LeadershipRunner) scenarios over the
// backend's JobMaster leader election. Owner: helper "hadisp".
//
// Each runs one job's LeadershipRunner on a client of the backend: its election is the client's
// JobMasterLeaderElection(job) (wrapped to record every callback and confirmation), its
// JobResultStore the client's, its JobMasters fakes the scenario ends, holds or fails. A
// revocation is Backend.Revoke of the runner's client, so on a backend with one leadership per
// client (ha/file, ha/etcd) it revokes everything the client leads and the grant that follows
// is the client's next session (ha/file: its next poll; ha/etcd: its next campaign), while
// ha/embedded revokes and grants again at once. "Before leadership" is a runner whose client is
// a standby: another client leads first (a placeholder contender on its JobMaster election of
// the job, which on ha/file and ha/etcd makes that client lead everything) and the runner is
// granted once that client's process exits. Every scenario applies to every backend.
var runnerScenarios = []scenario{
	{name: "Runner: status INITIALIZING before leadership", run: runnerInitializingBeforeLeadership},
	{name: "Runner: cancel before leadership is CANCELLING until the first leader's JobMaster cancels", run: runnerCancelBeforeLeadership},
	{name: "Runner: losing leadership suspends the JobMaster and is INITIALIZING again until the next leader's runs", run: runnerLosingLeadership},
	{name: "Runner: losing leadership clears a pending cancel: INITIALIZING again, the next leader's JobMaster runs", run: runnerLosingLeadershipClearsCancel},
	{name: "Runner: ten queued revoke/grant pairs start at most 2 JobMasters", run: runnerQueuedLeadershipChanges},
	{name: "Runner: a result from an outdated leader is ignored; closing the runner then yields SUSPENDED", run: runnerOutdatedLeaderResult},
	{name: "Runner: closing the runner yields SUSPENDED and leaves the election", run: runnerCloseSuspends},
	{name: "Runner: a dirty entry for the job at grant is FAILED as already done, without a JobMaster", run: runnerDirtyEntryAtGrant},
	{name: "Runner: a JobMaster that fails to be created is an initialization failure with exactly one exception-history entry", run: runnerCreateFails},
}

const runnerJobName = "wordcount"

// runnerFixture is one job's LeadershipRunner on a client of the backend.
type runnerFixture struct {
	e        *Env
	client   ha.Services
	job      jobgraph.JobID
	log      *eventLog
	jms      *jobMasters
	election *recordedElection
	runner   *jobmaster.LeadershipRunner
	created  window // when the runner was made
}

// newRunnerFixture makes (and does not start) the runner of job on client; the scenario's end
// closes it, before the clients close.
func newRunnerFixture(e *Env, client ha.Services, job jobgraph.JobID) *runnerFixture {
	log := newEventLog()
	f := &runnerFixture{e: e, client: client, job: job, log: log, jms: newJobMasters(log)}
	f.election = newRecordedElection(client.JobMasterLeaderElection(job), log)
	factory := f.jms.factory(job, runnerJobName, jobgraph.Batch)
	f.created = around(func() { f.runner = jobmaster.NewLeadershipRunner(factory, f.election, client.JobResultStore()) })
	e.T.Cleanup(f.runner.Close)
	return f
}

// standbyRunner makes the runner of a new job on a client that does not lead: another client,
// returned, leads the job's JobMaster election first.
func standbyRunner(e *Env) (f *runnerFixture, leader ha.Services) {
	job := jobgraph.NewJobID()
	leader = e.Open()
	lead(e, leader.JobMasterLeaderElection(job))
	return newRunnerFixture(e, e.Open(), job), leader
}

func (f *runnerFixture) status() jobgraph.JobStatus {
	f.e.T.Helper()
	s, err := f.runner.RequestJobStatus(context.Background())
	require.NoError(f.e.T, err)
	return s
}

func (f *runnerFixture) isDone() bool {
	select {
	case <-f.runner.Done():
		return true
	default:
		return false
	}
}

// requestJob returns the runner's archived graph and the window it was asked in.
func (f *runnerFixture) requestJob() (*executiongraph.ArchivedExecutionGraph, window) {
	f.e.T.Helper()
	var a *executiongraph.ArchivedExecutionGraph
	var err error
	at := around(func() { a, err = f.runner.RequestJob(context.Background()) })
	require.NoError(f.e.T, err)
	return a, at
}

// tokens are the JobMasterIDs of every Create call, in order, and how many saw their context end.
func (f *runnerFixture) tokens() ([]jobgraph.JobMasterID, int) { return f.jms.state(runnerJobName) }

// awaitResult waits for the runner's result and returns it with the window it came in.
func (f *runnerFixture) awaitResult() (jobmaster.Result, window) {
	f.e.T.Helper()
	w := window{from: f.created.from}
	awaitClosed(f.e, f.runner.Done(), "the runner's result")
	w.to = time.Now()
	return f.runner.Result(), w
}

// assertSparse checks an archived graph the runner made itself: no vertices, the job's identity,
// INITIALIZING stamped within initialized (when the runner was made, or for a JobMaster that
// failed to come up when its creation began), a terminal status stamped within at and any other
// at the INITIALIZING instant (exact instants in a bubble), and the cause as the failure and the
// exception history's one global entry.
func (f *runnerFixture) assertSparse(a *executiongraph.ArchivedExecutionGraph, status jobgraph.JobStatus, cause error, initialized, at window) {
	t := f.e.T
	t.Helper()
	require.NotNil(t, a)
	assert.Equal(t, f.job, a.JobID)
	assert.Equal(t, runnerJobName, a.JobName)
	assert.Equal(t, jobgraph.Batch, a.JobType)
	assert.Equal(t, status, a.Status)
	assert.Empty(t, a.JobVertices)
	require.Len(t, a.StatusTimestamps, map[bool]int{true: 1, false: 2}[status == jobgraph.JobStatusInitializing])
	initAt := a.StatusTimestamp(jobgraph.JobStatusInitializing)
	assertIn(f.e, initAt, initialized, "INITIALIZING")
	if status.IsTerminal() {
		assertIn(f.e, a.StatusTimestamp(status), at, status.String())
	} else {
		assert.Equal(t, initAt, a.StatusTimestamp(status), "a status that is not terminal is stamped when the job was initialized")
	}
	if cause == nil {
		assert.Nil(t, a.FailureCause)
		assert.Empty(t, a.ExceptionHistory)
		return
	}
	require.NotNil(t, a.FailureCause)
	assert.Equal(t, cause.Error(), a.FailureCause.Message)
	assert.Equal(t, []jobgraph.ExceptionHistoryEntry{{Message: cause.Error(), Timestamp: a.StatusTimestamp(status), Subtask: -1}}, a.ExceptionHistory,
		"the failure is the exception history's one global entry")
}

// awaitConfirmed waits until the runner confirmed its n-th session with the address of its
// job's c-th Create call.
func (f *runnerFixture) awaitConfirmed(n, c int) {
	f.e.T.Helper()
	f.log.await(f.e, fmt.Sprintf("confirm L%d jobmaster/%d", n, c))
}

// Scenario: status INITIALIZING before leadership. The runner's client is a standby: it reports
// INITIALIZING with a sparse graph, creates no JobMaster and confirms nothing; once the leading
// client's process exits, the runner is granted and its JobMaster runs fenced by that session.
func runnerInitializingBeforeLeadership(e *Env) {
	t := e.T
	f, leader := standbyRunner(e)
	require.NoError(t, f.runner.Start())
	e.Settle()
	assert.Equal(t, jobgraph.JobStatusInitializing, f.status())
	a, at := f.requestJob()
	f.assertSparse(a, jobgraph.JobStatusInitializing, nil, f.created, at)
	assert.False(t, f.isDone())
	tokens, _ := f.tokens()
	assert.Empty(t, tokens, "no JobMaster without leadership")
	assert.Empty(t, f.election.confirmations())
	assert.True(t, pending(e, f.election.callbacks), "not granted while another client leads")

	e.Exit(leader)
	s := f.election.awaitGrant(e)
	jm := await(e, f.jms.created, "the JobMaster")
	f.awaitConfirmed(1, 1)
	assert.Equal(t, jobgraph.JobMasterID(s), jm.token, "fenced by the session granted")
	assert.Equal(t, []confirmation{{"jobmaster/1", s}}, f.election.confirmations())
	assert.True(t, f.election.HasLeadership(s))
	assert.Equal(t, jobgraph.JobStatusRunning, f.status())
}

// Scenario: cancel before leadership → CANCELLING. A cancel before leadership is pending, not
// done: the job reports CANCELLING and the first leader session's JobMaster is canceled as soon
// as it exists (Flink's testCancellationChangesJobStatusToCancelling).
func runnerCancelBeforeLeadership(e *Env) {
	t := e.T
	f, leader := standbyRunner(e)
	require.NoError(t, f.runner.Start())
	require.NoError(t, f.runner.Cancel(context.Background()))
	assert.Equal(t, jobgraph.JobStatusCancelling, f.status())
	a, at := f.requestJob()
	f.assertSparse(a, jobgraph.JobStatusCancelling, nil, f.created, at)
	assert.False(t, f.isDone(), "the job is canceled by its JobMaster, once there is one")
	e.Settle()
	tokens, _ := f.tokens()
	assert.Empty(t, tokens)

	e.Exit(leader)
	s := f.election.awaitGrant(e)
	jm := await(e, f.jms.created, "the JobMaster")
	res, _ := f.awaitResult()
	assert.NoError(t, res.Err)
	assert.Same(t, jm.Result().Archived, res.Archived)
	assert.Equal(t, jobgraph.JobStatusCanceled, res.Archived.Status)
	assert.Equal(t, fakeState{status: jobgraph.JobStatusCanceled, cancels: 1}, jm.state())
	assert.Equal(t, jobgraph.JobMasterID(s), jm.token)
	assert.Equal(t, jobgraph.JobStatusCanceled, f.status())
	e.Settle()
	tokens, canceled := f.tokens()
	assert.Equal(t, []jobgraph.JobMasterID{jm.token}, tokens)
	assert.Equal(t, 0, canceled)
	assert.NoError(t, f.runner.Cancel(context.Background()), "canceling again is a no-op")
	assert.Equal(t, 1, jm.state().cancels)
}

// Scenario: losing leadership → INITIALIZING again. The revoked session's JobMaster is closed
// (SUSPENDED there), the runner reports INITIALIZING with a sparse graph and is not done; the
// next session's JobMaster (held until the scenario lets it come up) gets a new JobMasterID, and
// the job's leader retrieval reports it with its address. (That the retrieval reports no leader
// in between is not asserted: ha/file's retrieval polls, and the client may hold the lock again
// by its next poll.)
func runnerLosingLeadership(e *Env) {
	t := e.T
	f := newRunnerFixture(e, e.Open(), jobgraph.NewJobID())
	leaders := follow(e, f.client.JobMasterLeaderRetrieval(f.job))
	release := f.jms.hold(2)
	require.NoError(t, f.runner.Start())
	s1 := f.election.awaitGrant(e)
	first := await(e, f.jms.created, "L1's JobMaster")
	f.awaitConfirmed(1, 1)
	assert.Equal(t, jobgraph.JobMasterID(s1), first.token)
	leaders.awaitLeader(e, confirmation{"jobmaster/1", s1})

	e.Revoke(f.client)
	f.election.awaitRevoke(e)
	awaitClosed(e, first.closedCh, "the close of L1's JobMaster")
	assert.Equal(t, fakeState{status: jobgraph.JobStatusSuspended, closed: 1}, first.state(), "the old JobMaster is closed: SUSPENDED there")
	assert.Equal(t, jobgraph.JobStatusInitializing, f.status())
	a, at := f.requestJob()
	f.assertSparse(a, jobgraph.JobStatusInitializing, nil, f.created, at)
	assert.False(t, f.isDone(), "a suspended JobMaster does not end the runner")
	assert.False(t, f.election.HasLeadership(s1))

	s2 := f.election.awaitGrant(e)
	e.Settle()
	assert.Equal(t, jobgraph.JobStatusInitializing, f.status(), "until the next session's JobMaster exists")
	release()
	second := await(e, f.jms.created, "L2's JobMaster")
	f.awaitConfirmed(2, 2)
	assert.NotEqual(t, s1, s2)
	assert.Equal(t, jobgraph.JobMasterID(s2), second.token, "a new JobMasterID for the new session")
	assert.True(t, f.election.HasLeadership(s2))
	assert.Equal(t, []confirmation{{"jobmaster/1", s1}, {"jobmaster/2", s2}}, f.election.confirmations())
	leaders.awaitLeader(e, confirmation{"jobmaster/2", s2})
	assert.Equal(t, jobgraph.JobStatusRunning, f.status())

	second.end(jobgraph.JobStatusFinished)
	res, _ := f.awaitResult()
	assert.Same(t, second.Result().Archived, res.Archived)
	tokens, canceled := f.tokens()
	assert.Equal(t, []jobgraph.JobMasterID{first.token, second.token}, tokens)
	assert.Equal(t, 0, canceled)
}

// Scenario: losing leadership → INITIALIZING again, with a cancel pending. A cancel is for the
// current leader: losing leadership before its JobMaster existed clears it, the job reports
// INITIALIZING again, and the next leader's JobMaster runs it (Flink's
// testJobStatusCancellingIsClearedOnLeadershipLoss).
func runnerLosingLeadershipClearsCancel(e *Env) {
	t := e.T
	f := newRunnerFixture(e, e.Open(), jobgraph.NewJobID())
	f.jms.hold(1) // the first session's JobMaster never comes up
	release := f.jms.hold(2)
	require.NoError(t, f.runner.Start())
	s1 := f.election.awaitGrant(e)
	assert.Equal(t, 1, await(e, f.jms.calls, "the first session's Create"))
	require.NoError(t, f.runner.Cancel(context.Background()))
	e.Settle()
	assert.Equal(t, jobgraph.JobStatusCancelling, f.status(), "pending while the JobMaster is created")

	e.Revoke(f.client)
	f.election.awaitRevoke(e)
	assert.Equal(t, jobgraph.JobStatusInitializing, f.status())
	a, at := f.requestJob()
	f.assertSparse(a, jobgraph.JobStatusInitializing, nil, f.created, at)
	assert.False(t, f.isDone())

	s2 := f.election.awaitGrant(e)
	release()
	jm := await(e, f.jms.created, "L2's JobMaster")
	f.awaitConfirmed(2, 2)
	assert.Equal(t, jobgraph.JobMasterID(s2), jm.token)
	assert.Equal(t, fakeState{status: jobgraph.JobStatusRunning}, jm.state(), "the next leader's JobMaster is not canceled")
	assert.Equal(t, jobgraph.JobStatusRunning, f.status())
	assert.False(t, f.isDone())
	tokens, canceled := f.tokens()
	assert.Equal(t, []jobgraph.JobMasterID{jobgraph.JobMasterID(s1), jobgraph.JobMasterID(s2)}, tokens)
	assert.Equal(t, 1, canceled, "the revoked session's Create saw its context end")
	assert.Equal(t, []confirmation{{"jobmaster/2", s2}}, f.election.confirmations())
}

// Scenario: ten queued revoke/grant pairs start at most 2 processes. While the first session's
// JobMaster is slow to close, ten revocations of the runner's client, each followed by the grant
// of its next session, reach the runner; all but the last are skipped: one JobMaster more, not
// ten (Flink's testSkippingOfEnqueuedLeadershipOperations). The pairs are ten Backend.Revoke
// calls, each after the grant of the one before arrived: ha/embedded grants at once, ha/file at
// its next poll and ha/etcd when its campaign wins, and a client that does not lead has nothing
// to revoke.
func runnerQueuedLeadershipChanges(e *Env) {
	t := e.T
	f := newRunnerFixture(e, e.Open(), jobgraph.NewJobID())
	require.NoError(t, f.runner.Start())
	s1 := f.election.awaitGrant(e)
	first := await(e, f.jms.created, "L1's JobMaster")
	f.awaitConfirmed(1, 1)
	release := f.jms.gateCloses()

	var last ha.SessionID
	for range 10 {
		e.Revoke(f.client)
		f.election.awaitRevoke(e)
		last = f.election.awaitGrant(e)
	}
	awaitClosed(e, first.closing, "the close of L1's JobMaster")
	e.Settle()
	assert.Equal(t, 0, first.state().closed, "the first JobMaster is still closing")
	assert.Equal(t, jobgraph.JobStatusInitializing, f.status())
	tokens, _ := f.tokens()
	assert.Len(t, tokens, 1, "nothing starts before the first JobMaster is closed")

	release()
	second := await(e, f.jms.created, "the last session's JobMaster")
	f.awaitConfirmed(11, 2)
	tokens, canceled := f.tokens()
	assert.Equal(t, []jobgraph.JobMasterID{jobgraph.JobMasterID(s1), jobgraph.JobMasterID(last)}, tokens,
		"one JobMaster for the last session, none for the nine before it")
	assert.Equal(t, 0, canceled)
	assert.Equal(t, jobgraph.JobMasterID(last), second.token)
	assert.Equal(t, fakeState{status: jobgraph.JobStatusSuspended, closed: 1}, first.state())
	assert.Equal(t, []confirmation{{"jobmaster/1", s1}, {"jobmaster/2", last}}, f.election.confirmations())
	assert.Equal(t, jobgraph.JobStatusRunning, f.status())

	f.runner.Close()
	assert.Equal(t, fakeState{status: jobgraph.JobStatusSuspended, closed: 1}, second.state())
	assert.True(t, pending(e, f.jms.created), "no JobMaster after the last session's")
}

// Scenario: a result from an outdated leader is ignored; closing the runner yields SUSPENDED.
// The JobMaster of a revoked session that finishes its job while it shuts down does not end the
// runner; closed then, the runner's result is its own SUSPENDED sparse graph (Flink's
// testResultFutureCompletionOfOutdatedLeaderIsIgnored). The next session's JobMaster is held, so
// the runner has none when it closes.
func runnerOutdatedLeaderResult(e *Env) {
	t := e.T
	f := newRunnerFixture(e, e.Open(), jobgraph.NewJobID())
	require.NoError(t, f.runner.Start())
	f.election.awaitGrant(e)
	jm := await(e, f.jms.created, "L1's JobMaster")
	f.awaitConfirmed(1, 1)
	f.jms.hold(2) // never released: only the runner's Close ends the next session's Create
	release := f.jms.gateCloses()

	e.Revoke(f.client)
	f.election.awaitRevoke(e)
	awaitClosed(e, jm.closing, "the close of L1's JobMaster")
	jm.end(jobgraph.JobStatusFinished) // while its Close is still under way
	e.Settle()
	assert.False(t, f.isDone(), "a result of a revoked session does not complete the runner")
	assert.Equal(t, jobgraph.JobStatusInitializing, f.status())
	release()
	awaitClosed(e, jm.closedCh, "the end of L1's JobMaster's close")
	e.Settle()
	assert.Equal(t, fakeState{status: jobgraph.JobStatusFinished, closed: 1}, jm.state())
	assert.False(t, f.isDone())

	at := around(f.runner.Close)
	res := f.runner.Result()
	assert.NoError(t, res.Err)
	f.assertSparse(res.Archived, jobgraph.JobStatusSuspended, nil, f.created, at)
}

// Scenario: closing the runner yields SUSPENDED. Close before the job ends: the result is
// SUSPENDED, the JobMaster is closed once (SUSPENDED there), and the runner has left the
// election; a second Close is harmless.
func runnerCloseSuspends(e *Env) {
	t := e.T
	f := newRunnerFixture(e, e.Open(), jobgraph.NewJobID())
	require.NoError(t, f.runner.Start())
	s := f.election.awaitGrant(e)
	jm := await(e, f.jms.created, "the JobMaster")
	f.awaitConfirmed(1, 1)
	assert.Equal(t, []confirmation{{"jobmaster/1", s}}, f.election.confirmations())

	f.runner.Close()
	require.True(t, f.isDone())
	res := f.runner.Result()
	assert.NoError(t, res.Err)
	require.NotNil(t, res.Archived)
	assert.Equal(t, jobgraph.JobStatusSuspended, res.Archived.Status)
	assert.Equal(t, f.job, res.Archived.JobID)
	assert.Equal(t, fakeState{status: jobgraph.JobStatusSuspended, closed: 1}, jm.state())
	assert.False(t, f.election.HasLeadership(s), "the runner left the election")
	f.runner.Close() // twice is harmless
	assert.Equal(t, 1, jm.state().closed)
}

// Scenario: a dirty entry for the job at grant → FAILED as already done. An earlier leader's
// process left the job's dirty JobResult; the runner of the next process reads it at its grant
// and ends FAILED as already done, without a JobMaster and without confirming.
func runnerDirtyEntryAtGrant(e *Env) {
	t := e.T
	job := jobgraph.NewJobID()
	earlierLeader(e, func(c ha.Services) {
		require.NoError(t, c.JobResultStore().CreateDirty(context.Background(), jobgraph.JobResult{JobID: job, Status: jobgraph.JobStatusFinished}))
	})
	f := newRunnerFixture(e, e.Open(), job)
	require.NoError(t, f.runner.Start())
	res, at := f.awaitResult()
	require.ErrorIs(t, res.Err, jobmaster.ErrJobAlreadyDone)
	assert.EqualError(t, res.Err, fmt.Sprintf("job already done: job %s is in the JobResultStore", job))
	f.assertSparse(res.Archived, jobgraph.JobStatusFailed, res.Err, f.created, at)
	assert.Equal(t, jobgraph.JobStatusFailed, f.status())
	e.Settle()
	tokens, _ := f.tokens()
	assert.Empty(t, tokens, "no JobMaster for a job that is done")
	assert.Empty(t, f.election.confirmations(), "nothing confirmed")
}

// Scenario: a JobMaster that fails to be created: the result is an initialization failure with
// exactly one exception-history entry, and nothing is confirmed.
func runnerCreateFails(e *Env) {
	t := e.T
	f := newRunnerFixture(e, e.Open(), jobgraph.NewJobID())
	boom := errors.New("no such invokable: read-files")
	f.jms.failCreates(boom)
	require.NoError(t, f.runner.Start())
	res, at := f.awaitResult()
	require.ErrorIs(t, res.Err, jobmaster.ErrJobInitialization)
	require.ErrorIs(t, res.Err, boom)
	assert.EqualError(t, res.Err, fmt.Sprintf("job initialization failed: job %s: no such invokable: read-files", f.job))
	f.assertSparse(res.Archived, jobgraph.JobStatusFailed, res.Err, window{f.created.from, at.to}, at)
	require.Len(t, res.Archived.ExceptionHistory, 1, "exactly one exception-history entry: the initialization failure")
	assert.Equal(t, jobgraph.ExceptionHistoryEntry{Message: res.Err.Error(), Timestamp: res.Archived.StatusTimestamp(jobgraph.JobStatusFailed), Subtask: -1},
		res.Archived.ExceptionHistory[0])
	e.Settle()
	assert.Empty(t, f.election.confirmations(), "a JobMaster that never came up is never confirmed")
}
