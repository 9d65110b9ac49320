package jobmaster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/internal/gopool"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// fakeJobMaster is a JobMaster whose job ends when the test says so.
type fakeJobMaster struct {
	job     jobgraph.JobID
	name    string
	token   jobgraph.JobMasterID
	address string

	mu      sync.Mutex
	status  jobgraph.JobStatus
	closed  int
	cancels int
	done    chan struct{}
	result  jobmaster.Result
	// closeGate, when set, makes Close wait until it is closed (a slow shutdown).
	closeGate chan struct{}
}

func (f *fakeJobMaster) Address() string               { return f.address }
func (f *fakeJobMaster) Gateway() rpc.JobMasterGateway { return nil }
func (f *fakeJobMaster) Done() <-chan struct{}         { return f.done }
func (f *fakeJobMaster) Result() jobmaster.Result      { <-f.done; return f.result }

func (f *fakeJobMaster) archiveLocked() *executiongraph.ArchivedExecutionGraph {
	return executiongraph.NewSparseArchivedExecutionGraph(f.job, f.name, jobgraph.Batch, f.status, nil, time.Now(), time.Now())
}

// end finishes the job with status, as a JobMaster does when the job is globally terminal.
func (f *fakeJobMaster) end(status jobgraph.JobStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.status.IsTerminal() {
		panic(fmt.Sprintf("fakeJobMaster: end(%s) after %s", status, f.status))
	}
	f.status = status
	f.result = jobmaster.Result{Archived: f.archiveLocked()}
	close(f.done)
}

func (f *fakeJobMaster) Cancel(ctx context.Context) error {
	f.mu.Lock()
	f.cancels++
	f.mu.Unlock()
	f.end(jobgraph.JobStatusCanceled)
	return nil
}

func (f *fakeJobMaster) RequestJobStatus(ctx context.Context) (jobgraph.JobStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, nil
}

func (f *fakeJobMaster) RequestJob(ctx context.Context) (*executiongraph.ArchivedExecutionGraph, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.archiveLocked(), nil
}

// Close suspends a job that has not ended; Done stays open then, as the interface says.
func (f *fakeJobMaster) Close() *executiongraph.ArchivedExecutionGraph {
	f.mu.Lock()
	gate := f.closeGate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed++
	if !f.status.IsTerminal() {
		f.status = jobgraph.JobStatusSuspended
	}
	return f.archiveLocked()
}

type fakeState struct {
	status  jobgraph.JobStatus
	closed  int
	cancels int
}

func (f *fakeJobMaster) state() fakeState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fakeState{f.status, f.closed, f.cancels}
}

// fakeFactory creates fakeJobMasters. Create number n (1-based) waits for gates[n] when set, and
// fails with err when set.
type fakeFactory struct {
	job  jobgraph.JobID
	name string

	mu       sync.Mutex
	gates    map[int]chan struct{}
	err      error
	tokens   []jobgraph.JobMasterID // of every Create call, in order
	canceled int                    // Create calls that returned because ctx ended

	created chan *fakeJobMaster
}

func newFakeFactory() *fakeFactory {
	return &fakeFactory{job: jobgraph.NewJobID(), name: "wordcount", gates: make(map[int]chan struct{}), created: make(chan *fakeJobMaster, 16)}
}

func (f *fakeFactory) JobID() jobgraph.JobID     { return f.job }
func (f *fakeFactory) JobName() string           { return f.name }
func (f *fakeFactory) JobType() jobgraph.JobType { return jobgraph.Batch }

// hold makes Create number n wait until the returned func is called.
func (f *fakeFactory) hold(n int) (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gate := make(chan struct{})
	f.gates[n] = gate
	return func() { close(gate) }
}

func (f *fakeFactory) Create(ctx context.Context, token jobgraph.JobMasterID) (jobmaster.JobMaster, error) {
	f.mu.Lock()
	f.tokens = append(f.tokens, token)
	n := len(f.tokens)
	gate, err := f.gates[n], f.err
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			f.mu.Lock()
			f.canceled++
			f.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	jm := &fakeJobMaster{job: f.job, name: f.name, token: token, address: fmt.Sprintf("jobmaster/%d", n),
		status: jobgraph.JobStatusRunning, done: make(chan struct{})}
	f.created <- jm
	return jm, nil
}

func (f *fakeFactory) calls() (tokens []jobgraph.JobMasterID, canceled int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]jobgraph.JobMasterID(nil), f.tokens...), f.canceled
}

// leaders records what leader retrieval publishes for the job.
type leaders struct {
	mu  sync.Mutex
	got []leader
}

type leader struct {
	address string
	session ha.SessionID
}

func (l *leaders) NotifyLeaderAddress(address string, s ha.SessionID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, leader{address, s})
}
func (l *leaders) HandleError(err error) { panic(err) }

// take returns what was published since the last take.
func (l *leaders) take() []leader {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.got
	l.got = nil
	return out
}

// fixture is a runner on embedded HA services, with leader retrieval following its job.
type fixture struct {
	ha       *embedded.Services
	election *embedded.Election
	factory  *fakeFactory
	runner   *jobmaster.LeadershipRunner
	leaders  *leaders
	created  time.Time // when the runner was created (virtual time)
}

func newFixture(t *testing.T, factory *fakeFactory) *fixture {
	f := &fixture{ha: embedded.New(), factory: factory, leaders: &leaders{}}
	t.Cleanup(func() { require.NoError(t, f.ha.Close()) })
	f.election = f.ha.JobMasterElection(factory.JobID())
	retrieval := f.ha.JobMasterLeaderRetrieval(factory.JobID())
	require.NoError(t, retrieval.Start(f.leaders))
	t.Cleanup(func() { require.NoError(t, retrieval.Stop()) })
	f.created = time.Now()
	f.runner = jobmaster.NewLeadershipRunner(factory, f.ha.JobMasterLeaderElection(factory.JobID()), f.ha.JobResultStore())
	t.Cleanup(f.runner.Close)
	return f
}

func isDone(r *jobmaster.LeadershipRunner) bool {
	select {
	case <-r.Done():
		return true
	default:
		return false
	}
}

func status(t *testing.T, r *jobmaster.LeadershipRunner) jobgraph.JobStatus {
	t.Helper()
	s, err := r.RequestJobStatus(context.Background())
	require.NoError(t, err)
	return s
}

// assertSparse checks an archived graph the runner made itself: no vertices, the job's identity,
// status and cause, INITIALIZING at the runner's creation and the status at the same instant
// (virtual time stands still while nothing sleeps).
func assertSparse(t *testing.T, f *fixture, a *executiongraph.ArchivedExecutionGraph, status jobgraph.JobStatus, cause error) {
	t.Helper()
	require.NotNil(t, a)
	assert.Equal(t, f.factory.JobID(), a.JobID)
	assert.Equal(t, "wordcount", a.JobName)
	assert.Equal(t, jobgraph.Batch, a.JobType)
	assert.Equal(t, status, a.Status)
	assert.Empty(t, a.JobVertices)
	require.Len(t, a.StatusTimestamps, map[bool]int{true: 1, false: 2}[status == jobgraph.JobStatusInitializing])
	assert.True(t, a.StatusTimestamp(jobgraph.JobStatusInitializing).Equal(f.created))
	assert.True(t, a.StatusTimestamp(status).Equal(f.created))
	if cause == nil {
		assert.Nil(t, a.FailureCause)
		assert.Empty(t, a.ExceptionHistory)
	} else {
		require.NotNil(t, a.FailureCause)
		assert.Equal(t, cause.Error(), a.FailureCause.Message)
		assert.Equal(t, []jobgraph.ExceptionHistoryEntry{{Message: cause.Error(), Timestamp: f.created, Subtask: -1}}, a.ExceptionHistory,
			"the failure is the exception history's one global entry")
	}
}

func TestGrantStartsJobMasterFencedBySessionAndConfirmsItsAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, newFakeFactory())
		require.NoError(t, f.runner.Start())
		jm := <-f.factory.created
		synctest.Wait()

		session := ha.SessionID(jm.token)
		assert.True(t, f.election.HasLeadership(session), "the JobMasterID is the leader session")
		assert.Equal(t, []leader{{"jobmaster/1", session}}, f.leaders.take(), "leadership confirmed with the JobMaster's address")
		assert.Equal(t, jobgraph.JobStatusRunning, status(t, f.runner))
		a, err := f.runner.RequestJob(context.Background())
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, a.Status, "RequestJob asks the JobMaster")
		assert.False(t, isDone(f.runner))

		jm.end(jobgraph.JobStatusFinished)
		<-f.runner.Done()
		res := f.runner.Result()
		assert.Same(t, jm.Result().Archived, res.Archived)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Archived.Status)
		assert.NoError(t, res.Err)
		assert.Equal(t, jobgraph.JobStatusFinished, status(t, f.runner))
		assert.Equal(t, 0, jm.state().closed, "the JobMaster stays until the runner is closed")

		f.runner.Close()
		assert.Equal(t, fakeState{status: jobgraph.JobStatusFinished, closed: 1}, jm.state())
		assert.Same(t, res.Archived, f.runner.Result().Archived, "Close keeps the result")
		tokens, canceled := f.factory.calls()
		assert.Equal(t, []jobgraph.JobMasterID{jm.token}, tokens)
		assert.Equal(t, 0, canceled)
	})
}

// A JobMaster that takes its time to shut down after a revocation does not hold up the runner:
// its loop closes the process off the loop, so status, job and cancel queries answer meanwhile,
// and the next session's JobMaster is created only once the old one is fully closed.
func TestSlowJobMasterCloseDoesNotBlockTheRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, newFakeFactory())
		release := f.factory.hold(2)
		require.NoError(t, f.runner.Start())
		first := <-f.factory.created
		synctest.Wait()
		gate := make(chan struct{})
		first.mu.Lock()
		first.closeGate = gate
		first.mu.Unlock()

		f.election.Revoke()
		synctest.Wait()
		assert.Equal(t, 0, first.state().closed, "the old JobMaster is still closing")
		assert.Equal(t, jobgraph.JobStatusInitializing, status(t, f.runner), "status answers while the JobMaster closes")
		a, err := f.runner.RequestJob(context.Background())
		require.NoError(t, err)
		assertSparse(t, f, a, jobgraph.JobStatusInitializing, nil)
		release() // the next session's Create may proceed, but only after the close
		synctest.Wait()
		tokens, _ := f.factory.calls()
		assert.Len(t, tokens, 1, "no new JobMaster while the old one is closing")

		close(gate)
		second := <-f.factory.created
		synctest.Wait()
		assert.Equal(t, fakeState{status: jobgraph.JobStatusSuspended, closed: 1}, first.state())
		assert.NotEqual(t, first.token, second.token)
		assert.Equal(t, jobgraph.JobStatusRunning, status(t, f.runner))
	})
}

func TestRevokeDuringCreateCancelsItAndRegrantCreatesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, newFakeFactory())
		f.factory.hold(1) // never released: only revocation ends this Create
		require.NoError(t, f.runner.Start())
		synctest.Wait()
		assert.Equal(t, jobgraph.JobStatusInitializing, status(t, f.runner))

		f.election.Revoke()
		jm := <-f.factory.created
		synctest.Wait()
		tokens, canceled := f.factory.calls()
		require.Len(t, tokens, 2)
		assert.Equal(t, 1, canceled, "the first session's Create saw its context end")
		assert.NotEqual(t, tokens[0], tokens[1])
		assert.Equal(t, tokens[1], jm.token)
		assert.False(t, f.election.HasLeadership(ha.SessionID(tokens[0])))
		assert.Equal(t, []leader{{"", ha.SessionID{}}, {"jobmaster/2", ha.SessionID(jm.token)}}, f.leaders.take())
		assert.Equal(t, jobgraph.JobStatusRunning, status(t, f.runner))
	})
}

// manualElection is a LeaderElection the test drives: it grants and revokes only when told.
type manualElection struct {
	mu        sync.Mutex
	contender ha.LeaderContender
	session   ha.SessionID // zero: nobody leads
	confirmed []leader
	closed    bool
}

func (m *manualElection) Start(c ha.LeaderContender) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.contender = c
	return nil
}

func (m *manualElection) grant() ha.SessionID {
	m.mu.Lock()
	s := ha.NewSessionID()
	m.session = s
	c := m.contender
	m.mu.Unlock()
	c.GrantLeadership(s)
	return s
}

func (m *manualElection) revoke() {
	m.mu.Lock()
	m.session = ha.SessionID{}
	c := m.contender
	m.mu.Unlock()
	c.RevokeLeadership()
}

func (m *manualElection) ConfirmLeadership(s ha.SessionID, address string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s == m.session {
		m.confirmed = append(m.confirmed, leader{address, s})
	}
}

func (m *manualElection) HasLeadership(s ha.SessionID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return s != ha.SessionID{} && s == m.session
}

func (m *manualElection) Close() error {
	m.mu.Lock()
	m.closed = true
	leading := m.session != ha.SessionID{}
	m.mu.Unlock()
	if leading {
		m.revoke()
	}
	return nil
}

func (m *manualElection) confirmations() []leader {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]leader(nil), m.confirmed...)
}

// newManualFixture is a runner on a manualElection and embedded stores.
func newManualFixture(t *testing.T) (*fixture, *manualElection) {
	f := &fixture{ha: embedded.New(), factory: newFakeFactory()}
	t.Cleanup(func() { require.NoError(t, f.ha.Close()) })
	m := &manualElection{}
	f.created = time.Now()
	f.runner = jobmaster.NewLeadershipRunner(f.factory, m, f.ha.JobResultStore())
	t.Cleanup(f.runner.Close)
	require.NoError(t, f.runner.Start())
	return f, m
}

func TestGrantWithoutRevokeReplacesTheSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, m := newManualFixture(t)
		s1 := m.grant()
		first := <-f.factory.created
		synctest.Wait()
		assert.Equal(t, []leader{{"jobmaster/1", s1}}, m.confirmations())

		s2 := m.grant() // no RevokeLeadership in between
		second := <-f.factory.created
		synctest.Wait()
		assert.Equal(t, jobgraph.JobMasterID(s1), first.token)
		assert.Equal(t, jobgraph.JobMasterID(s2), second.token)
		assert.Equal(t, fakeState{status: jobgraph.JobStatusSuspended, closed: 1}, first.state())
		assert.Equal(t, fakeState{status: jobgraph.JobStatusRunning}, second.state())
		assert.Equal(t, []leader{{"jobmaster/1", s1}, {"jobmaster/2", s2}}, m.confirmations())
		assert.Equal(t, jobgraph.JobStatusRunning, status(t, f.runner))
	})
}

func TestCloseWhileInitializingSuspendsAndCancelsCreate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, newFakeFactory())
		f.factory.hold(1)
		require.NoError(t, f.runner.Start())
		synctest.Wait()

		f.runner.Close()
		res := f.runner.Result()
		assert.NoError(t, res.Err)
		assertSparse(t, f, res.Archived, jobgraph.JobStatusSuspended, nil)
		tokens, canceled := f.factory.calls()
		assert.Len(t, tokens, 1)
		assert.Equal(t, 1, canceled)
		assert.Empty(t, f.factory.created)
	})
}

func TestCancelWhileInitializingCancelsOnceTheJobMasterExists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, newFakeFactory())
		release := f.factory.hold(1)
		require.NoError(t, f.runner.Start())
		synctest.Wait()
		assert.Equal(t, jobgraph.JobStatusInitializing, status(t, f.runner))

		require.NoError(t, f.runner.Cancel(context.Background()))
		assert.Equal(t, jobgraph.JobStatusCancelling, status(t, f.runner))
		a, err := f.runner.RequestJob(context.Background())
		require.NoError(t, err)
		assertSparse(t, f, a, jobgraph.JobStatusCancelling, nil)
		assert.False(t, isDone(f.runner))

		release()
		jm := <-f.factory.created
		<-f.runner.Done()
		res := f.runner.Result()
		assert.NoError(t, res.Err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Archived.Status)
		assert.Same(t, jm.Result().Archived, res.Archived)
		assert.Equal(t, fakeState{status: jobgraph.JobStatusCanceled, cancels: 1}, jm.state())
		assert.Equal(t, jobgraph.JobStatusCanceled, status(t, f.runner))
	})
}

func TestCancelRunningJobCancelsTheJobMaster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, newFakeFactory())
		require.NoError(t, f.runner.Start())
		jm := <-f.factory.created
		synctest.Wait()
		require.NoError(t, f.runner.Cancel(context.Background()))
		<-f.runner.Done()
		assert.Equal(t, jobgraph.JobStatusCanceled, f.runner.Result().Archived.Status)
		assert.Equal(t, fakeState{status: jobgraph.JobStatusCanceled, cancels: 1}, jm.state())
	})
}

// An election error fails the runner, not the job (Flink: JobMasterServiceLeadershipRunner's
// handleError is fatal): the Result is SUSPENDED with ErrRunnerFailed, which the Dispatcher
// makes fatal and cleans up only locally.
func TestElectionErrorFailsTheRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, newFakeFactory())
		require.NoError(t, f.runner.Start())
		jm := <-f.factory.created
		lost := errors.New("lost connection to the HA store")
		f.runner.HandleError(lost)
		<-f.runner.Done()
		res := f.runner.Result()
		require.ErrorIs(t, res.Err, lost)
		require.ErrorIs(t, res.Err, jobmaster.ErrRunnerFailed)
		assert.EqualError(t, res.Err, fmt.Sprintf("job manager runner failed: job %s: its leader election failed: lost connection to the HA store", f.factory.JobID()))
		assertSparse(t, f, res.Archived, jobgraph.JobStatusSuspended, res.Err)

		f.runner.Close()
		assert.Equal(t, fakeState{status: jobgraph.JobStatusSuspended, closed: 1}, jm.state(), "Close still closes the JobMaster")
		assert.Same(t, res.Archived, f.runner.Result().Archived)
	})
}

// With WithGoroutines the runner starts no goroutine itself, and a job's runner needs two: its
// loop, and the grant's session operation, which reads the JobResultStore, creates the JobMaster
// (the ServiceProcess), confirms leadership and waits for the job's end, in that order on one
// goroutine (three goroutines of their own before). A second runner on the same pool after the
// first closed runs on the first one's goroutines.
func TestRunnerGoroutinesComeFromWithGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pool gopool.Pool
		var given atomic.Int32
		services := embedded.New()
		run := func() {
			f := &fixture{ha: services, factory: newFakeFactory()}
			f.runner = jobmaster.NewLeadershipRunner(f.factory, f.ha.JobMasterLeaderElection(f.factory.JobID()), f.ha.JobResultStore(),
				jobmaster.WithGoroutines(func(fn func()) { given.Add(1); pool.Go(fn) }))
			require.NoError(t, f.runner.Start())
			jm := <-f.factory.created
			synctest.Wait()
			assert.True(t, f.ha.JobMasterElection(f.factory.JobID()).HasLeadership(ha.SessionID(jm.token)))
			jm.end(jobgraph.JobStatusFinished)
			<-f.runner.Done()
			f.runner.Close()
			synctest.Wait()
		}
		run()
		assert.Equal(t, int32(2), given.Load(), "functions given for one job")
		before := goroutinesCreated()
		run()
		assert.Equal(t, uint64(0), goroutinesCreated()-before, "goroutines created for the second runner")
		assert.Equal(t, int32(4), given.Load())
		require.NoError(t, services.Close())
		pool.Close()
	})
}

// Once granted, the session operation creates the JobMaster and confirms leadership without a
// trip to the runner's loop (held here), and the runner's calls go to the JobMaster afterwards;
// a cancel made before the JobMaster existed still reaches it once, through the process.
func TestSessionCreatesAndConfirmsWithoutTheRunnersLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, newFakeFactory())
		release := f.factory.hold(1)
		require.NoError(t, f.runner.Start())
		synctest.Wait()
		require.NoError(t, f.runner.Cancel(context.Background()), "before the JobMaster exists")
		unhold := jobmaster.HoldRunnerLoop(f.runner)
		release()
		jm := <-f.factory.created
		synctest.Wait()
		assert.Equal(t, []leader{{"jobmaster/1", ha.SessionID(jm.token)}}, f.leaders.take(), "confirmed while the runner's loop is held")
		assert.Equal(t, 1, jm.state().cancels, "the pending cancel reached the JobMaster")
		unhold()
		<-f.runner.Done()
		assert.Equal(t, jobgraph.JobStatusCanceled, f.runner.Result().Archived.Status)
		require.NoError(t, f.runner.Cancel(context.Background()))
		assert.Equal(t, 1, jm.state().cancels, "a job already done is left alone")
	})
}
