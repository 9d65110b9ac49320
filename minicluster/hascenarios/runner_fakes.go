package hascenarios

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// This file holds what the Dispatcher and runner scenarios share: fake JobMasters whose job ends
// when the scenario says so, an event log a scenario waits on, a recording wrapper of one
// election handle, and waits that work in a bubble and in real time alike.

// await returns the next value of ch, failing the scenario if none comes within Timeout (virtual
// time in a bubble).
func await[E any](e *Env, ch <-chan E, what string) E {
	e.T.Helper()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		require.FailNowf(e.T, "timed out", "%s: no %s within %v", e.Backend.Name, what, Timeout)
		panic("unreachable")
	}
}

// awaitClosed waits until ch is closed.
func awaitClosed(e *Env, ch <-chan struct{}, what string) {
	e.T.Helper()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case <-ch:
	case <-timer.C:
		require.FailNowf(e.T, "timed out", "%s: %s did not happen within %v", e.Backend.Name, what, Timeout)
	}
}

// pending reports whether nothing is on ch (after the cluster settled, in a bubble). In real
// time an absence cannot be shown without waiting: it only says nothing arrived yet.
func pending[E any](e *Env, ch <-chan E) bool {
	e.Settle()
	return len(ch) == 0
}

// eventLog is the order in which things happened, as "grant L1", "created J#1", "closed J#1".
type eventLog struct {
	mu      sync.Mutex
	events  []string
	changed chan struct{} // closed and replaced on every add
}

func newEventLog() *eventLog { return &eventLog{changed: make(chan struct{})} }

func (l *eventLog) add(ev string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *eventLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// await waits until ev is in the log and returns its index.
func (l *eventLog) await(e *Env, ev string) int {
	e.T.Helper()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	for {
		l.mu.Lock()
		i, changed := slices.Index(l.events, ev), l.changed
		l.mu.Unlock()
		if i >= 0 {
			return i
		}
		select {
		case <-changed:
		case <-timer.C:
			require.FailNowf(e.T, "timed out", "%s: no %q within %v; events: %q", e.Backend.Name, ev, Timeout, l.all())
		}
	}
}

// index is ev's index in the log, -1 if absent.
func (l *eventLog) index(ev string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Index(l.events, ev)
}

// callback is one leadership callback a contender got: a grant of session, or a revocation.
type callback struct {
	granted bool
	session ha.SessionID
}

// confirmation is one ConfirmLeadership call.
type confirmation struct {
	address string
	session ha.SessionID
}

// recordedElection wraps one election handle (of a client of the backend under test): the
// contender started on it is wrapped so that each grant and revocation is logged ("grant L<n>",
// the n-th session granted; "revoke") before it is handed on — so the log has it before anything
// the contender does about it, a confirmation included — and sent on callbacks once the
// contender's callback returned, so a call the scenario makes once it received the callback
// reaches the contender after it (the Runners queue each callback on their loop). Each
// ConfirmLeadership is logged ("confirm L<n> <address>") before it is handed on.
type recordedElection struct {
	ha.LeaderElection
	log       *eventLog
	callbacks chan callback // every callback, in order

	mu       sync.Mutex
	sessions []ha.SessionID // granted, in order: L1, L2, …
	confirms []confirmation
}

func newRecordedElection(election ha.LeaderElection, log *eventLog) *recordedElection {
	return &recordedElection{LeaderElection: election, log: log, callbacks: make(chan callback, 64)}
}

func (r *recordedElection) Start(c ha.LeaderContender) error {
	return r.LeaderElection.Start(recordedContender{r, c})
}

// nth names session as granted ("L<n>"), or "L?" for a session never granted.
func (r *recordedElection) nth(s ha.SessionID) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := slices.Index(r.sessions, s); i >= 0 {
		return fmt.Sprintf("L%d", i+1)
	}
	return "L?"
}

func (r *recordedElection) ConfirmLeadership(s ha.SessionID, address string) {
	r.mu.Lock()
	r.confirms = append(r.confirms, confirmation{address, s})
	r.mu.Unlock()
	r.log.add("confirm " + r.nth(s) + " " + address)
	r.LeaderElection.ConfirmLeadership(s, address)
}

// session returns the n-th session granted (1-based).
func (r *recordedElection) session(n int) ha.SessionID {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n < 1 || n > len(r.sessions) {
		return ha.SessionID{}
	}
	return r.sessions[n-1]
}

func (r *recordedElection) confirmations() []confirmation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.confirms)
}

// awaitGrant waits for the next callback, which must be a grant, and returns its session.
func (r *recordedElection) awaitGrant(e *Env) ha.SessionID {
	e.T.Helper()
	c := await(e, r.callbacks, "GrantLeadership")
	require.True(e.T, c.granted, "%s: got RevokeLeadership where GrantLeadership was due", e.Backend.Name)
	return c.session
}

// awaitRevoke waits for the next callback, which must be a revocation.
func (r *recordedElection) awaitRevoke(e *Env) {
	e.T.Helper()
	c := await(e, r.callbacks, "RevokeLeadership")
	require.False(e.T, c.granted, "%s: got GrantLeadership where RevokeLeadership was due", e.Backend.Name)
}

type recordedContender struct {
	r *recordedElection
	ha.LeaderContender
}

func (c recordedContender) GrantLeadership(s ha.SessionID) {
	c.r.mu.Lock()
	c.r.sessions = append(c.r.sessions, s)
	n := len(c.r.sessions)
	c.r.mu.Unlock()
	c.r.log.add(fmt.Sprintf("grant L%d", n))
	c.LeaderContender.GrantLeadership(s)
	c.r.callbacks <- callback{granted: true, session: s}
}

func (c recordedContender) RevokeLeadership() {
	c.r.log.add("revoke")
	c.LeaderContender.RevokeLeadership()
	c.r.callbacks <- callback{}
}

// leaderListener records what a leader retrieval tells it.
type leaderListener struct{ leaders chan confirmation }

func (l *leaderListener) NotifyLeaderAddress(address string, s ha.SessionID) {
	l.leaders <- confirmation{address, s}
}
func (l *leaderListener) HandleError(error) {}

// follow starts retrieval with a listener and stops it when the scenario ends (before the
// clients close).
func follow(e *Env, retrieval ha.LeaderRetrieval) *leaderListener {
	e.T.Helper()
	l := &leaderListener{leaders: make(chan confirmation, 256)}
	require.NoError(e.T, retrieval.Start(l))
	e.T.Cleanup(func() { assert.NoError(e.T, retrieval.Stop()) })
	return l
}

// awaitLeader waits until the retrieval reports want, skipping what it reported before (no
// leader, an earlier leader: a backend may report those when it starts and between leaders).
func (l *leaderListener) awaitLeader(e *Env, want confirmation) {
	e.T.Helper()
	for {
		if got := await(e, l.leaders, fmt.Sprintf("the leader %+v", want)); got == want {
			return
		}
	}
}

// placeholder is a contender that only reports its callbacks: it makes a client lead (ha/file,
// ha/etcd lead every component once any contender is granted) or holds one component's
// leadership (ha/embedded) while the scenario's real contender waits on another client.
type placeholder struct{ callbacks chan callback }

func newPlaceholder() *placeholder { return &placeholder{callbacks: make(chan callback, 16)} }

func (p *placeholder) GrantLeadership(s ha.SessionID) { p.callbacks <- callback{true, s} }
func (p *placeholder) RevokeLeadership()              { p.callbacks <- callback{} }
func (p *placeholder) HandleError(error)              {}

// lead starts a placeholder on election and waits for its grant.
func lead(e *Env, election ha.LeaderElection) ha.SessionID {
	e.T.Helper()
	p := newPlaceholder()
	require.NoError(e.T, election.Start(p))
	c := await(e, p.callbacks, "the placeholder's GrantLeadership")
	require.True(e.T, c.granted)
	return c.session
}

// earlierLeader is what an earlier JobManager process left in the stores: a client that leads
// (a placeholder on its Dispatcher election, so its writes pass every fence) runs write and
// exits.
func earlierLeader(e *Env, write func(c ha.Services)) {
	e.T.Helper()
	c := e.Open()
	lead(e, c.DispatcherLeaderElection())
	write(c)
	e.Exit(c)
}

// window is the span in which something was stamped: one instant in a bubble when no time
// passed, [from, to] in real time.
type window struct{ from, to time.Time }

// around runs fn and returns the window it ran in.
func around(fn func()) window {
	from := time.Now()
	fn()
	return window{from, time.Now()}
}

// assertIn checks that ts is in w: exactly its instant when w is one (in a bubble), else
// within it.
func assertIn(e *Env, ts time.Time, w window, what string) {
	e.T.Helper()
	if w.from.Equal(w.to) {
		assert.True(e.T, ts.Equal(w.from), "%s: %s at %v, want exactly %v", e.Backend.Name, what, ts, w.from)
		return
	}
	assert.False(e.T, ts.Before(w.from) || ts.After(w.to), "%s: %s at %v, want within [%v, %v]", e.Backend.Name, what, ts, w.from, w.to)
}

// jobMasters is what every fake JobMaster of a scenario reports to, across jobs, runners and
// leader sessions: each JobMaster created, closed and alive, in one event log.
type jobMasters struct {
	log     *eventLog
	created chan *fakeJobMaster // every JobMaster, as created
	calls   chan int            // the number of every Create call, as it begins

	mu        sync.Mutex
	err       error                             // set: every Create fails with it
	gates     map[int]chan struct{}             // Create number n (of any job) waits for gates[n]
	closeGate chan struct{}                     // set: every Close waits until it is closed
	tokens    map[string][]jobgraph.JobMasterID // of every Create call, per job name
	ncalls    int                               // Create calls, of every job
	canceled  int                               // Create calls that ended with their context
	alive     map[string]int                    // JobMasters alive per job name
	most      map[string]int                    // the most ever alive at once
}

func newJobMasters(log *eventLog) *jobMasters {
	return &jobMasters{log: log, created: make(chan *fakeJobMaster, 64), calls: make(chan int, 64), gates: make(map[int]chan struct{}),
		tokens: make(map[string][]jobgraph.JobMasterID), alive: make(map[string]int), most: make(map[string]int)}
}

// hold makes Create call number n (1-based, counting every job's) wait until release is called
// or its context ends.
func (m *jobMasters) hold(n int) (release func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	gate := make(chan struct{})
	m.gates[n] = gate
	return func() { close(gate) }
}

// gateCloses makes every Close from now on wait until release is called (a slow shutdown).
func (m *jobMasters) gateCloses() (release func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	gate := make(chan struct{})
	m.closeGate = gate
	return func() { close(gate) }
}

func (m *jobMasters) failCreates(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = err
}

// state is the tokens of job's Create calls and how many Create calls saw their context end.
func (m *jobMasters) state(job string) (tokens []jobgraph.JobMasterID, canceled int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.tokens[job]), m.canceled
}

func (m *jobMasters) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, t := range m.tokens {
		n += len(t)
	}
	return n
}

func (m *jobMasters) mostAlive(job string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.most[job]
}

// factory returns a JobMasterServiceFactory for the job; name names it in the log.
func (m *jobMasters) factory(job jobgraph.JobID, name string, jobType jobgraph.JobType) *fakeFactory {
	return &fakeFactory{m: m, job: job, name: name, jobType: jobType}
}

// runnerFactory is the Dispatcher's JobManagerRunnerFactory: the default LeadershipRunner per
// job, over fake JobMasters reporting to m.
func (m *jobMasters) runnerFactory() dispatcher.JobManagerRunnerFactory {
	return dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
		return m.factory(g.JobID, g.Name, g.Type), nil
	})
}

type fakeFactory struct {
	m       *jobMasters
	job     jobgraph.JobID
	name    string
	jobType jobgraph.JobType
}

func (f *fakeFactory) JobID() jobgraph.JobID     { return f.job }
func (f *fakeFactory) JobName() string           { return f.name }
func (f *fakeFactory) JobType() jobgraph.JobType { return f.jobType }

func (f *fakeFactory) Create(ctx context.Context, token jobgraph.JobMasterID) (jobmaster.JobMaster, error) {
	m := f.m
	m.mu.Lock()
	m.tokens[f.name] = append(m.tokens[f.name], token)
	m.ncalls++
	call, n := m.ncalls, len(m.tokens[f.name])
	gate, err := m.gates[call], m.err
	m.mu.Unlock()
	m.calls <- call
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			m.mu.Lock()
			m.canceled++
			m.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	jm := &fakeJobMaster{m: m, job: f.job, name: f.name, jobType: f.jobType, token: token, n: n,
		address: fmt.Sprintf("jobmaster/%d", n), status: jobgraph.JobStatusRunning, done: make(chan struct{}),
		closing: make(chan struct{}), closedCh: make(chan struct{})}
	m.mu.Lock()
	m.alive[f.name]++
	m.most[f.name] = max(m.most[f.name], m.alive[f.name])
	m.mu.Unlock()
	m.log.add(fmt.Sprintf("created %s#%d", f.name, n))
	m.created <- jm
	return jm, nil
}

// fakeJobMaster is a JobMaster whose job ends when the scenario says so.
type fakeJobMaster struct {
	m       *jobMasters
	job     jobgraph.JobID
	name    string
	jobType jobgraph.JobType
	token   jobgraph.JobMasterID
	n       int // its job's n-th Create call
	address string

	mu      sync.Mutex
	status  jobgraph.JobStatus
	closed  int
	cancels int
	done    chan struct{}
	result  jobmaster.Result
	// closing is closed when Close is first called, closedCh when it first returned.
	closing, closedCh chan struct{}
}

func (f *fakeJobMaster) Address() string               { return f.address }
func (f *fakeJobMaster) Gateway() rpc.JobMasterGateway { return nil }
func (f *fakeJobMaster) Done() <-chan struct{}         { return f.done }
func (f *fakeJobMaster) Result() jobmaster.Result      { <-f.done; return f.result }

func (f *fakeJobMaster) archiveLocked() *executiongraph.ArchivedExecutionGraph {
	return executiongraph.NewSparseArchivedExecutionGraph(f.job, f.name, f.jobType, f.status, nil, time.Now(), time.Now())
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

// Close suspends a job that has not ended (Done stays open then, as the interface says), after
// the scenario's close gate opened, if it set one.
func (f *fakeJobMaster) Close() *executiongraph.ArchivedExecutionGraph {
	f.m.mu.Lock()
	gate := f.m.closeGate
	f.m.mu.Unlock()
	f.mu.Lock()
	first := f.closed == 0
	if first {
		select {
		case <-f.closing:
		default:
			close(f.closing)
		}
	}
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	f.closed++
	if !f.status.IsTerminal() {
		f.status = jobgraph.JobStatusSuspended
	}
	a := f.archiveLocked()
	f.mu.Unlock()
	if first {
		f.m.mu.Lock()
		f.m.alive[f.name]--
		f.m.mu.Unlock()
		f.m.log.add(fmt.Sprintf("closed %s#%d", f.name, f.n))
		close(f.closedCh)
	}
	return a
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
