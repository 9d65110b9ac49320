package hatest

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
)

// ---- recording contenders and listeners ----

type contenderEvent struct {
	granted bool // false: revoked
	session ha.SessionID
}

// contender records what its election tells it.
type contender struct {
	events chan contenderEvent
	errs   chan error
}

func newContender() *contender {
	return &contender{events: make(chan contenderEvent, 64), errs: make(chan error, 64)}
}

func (c *contender) GrantLeadership(session ha.SessionID) {
	c.events <- contenderEvent{granted: true, session: session}
}
func (c *contender) RevokeLeadership()     { c.events <- contenderEvent{} }
func (c *contender) HandleError(err error) { c.errs <- err }

// leader is one NotifyLeaderAddress call.
type leader struct {
	address string
	session ha.SessionID
}

// listener records what its retrieval tells it.
type listener struct {
	leaders chan leader
	errs    chan error
}

func newListener() *listener {
	return &listener{leaders: make(chan leader, 64), errs: make(chan error, 64)}
}

func (l *listener) NotifyLeaderAddress(address string, session ha.SessionID) {
	l.leaders <- leader{address, session}
}
func (l *listener) HandleError(err error) { l.errs <- err }

func await[E any](t *testing.T, ch <-chan E, what string) E {
	t.Helper()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case e := <-ch:
		return e
	case <-timer.C:
		require.FailNowf(t, "timed out", "no %s within %v", what, Timeout)
		panic("unreachable")
	}
}

// waiter holds what every wait of a case needs: its test and whether it runs in a bubble.
type waiter struct {
	t        *testing.T
	inBubble bool
}

// awaitGrant waits for the contender's next callback, which must be a grant, and returns its
// session.
func (w waiter) awaitGrant(c *contender) ha.SessionID {
	w.t.Helper()
	e := await(w.t, c.events, "GrantLeadership")
	require.True(w.t, e.granted, "got RevokeLeadership where GrantLeadership was due")
	require.NotEqual(w.t, ha.SessionID{}, e.session, "granted the zero session")
	return e.session
}

// awaitRevoke waits for the contender's next callback, which must be a revocation.
func (w waiter) awaitRevoke(c *contender) {
	w.t.Helper()
	e := await(w.t, c.events, "RevokeLeadership")
	require.False(w.t, e.granted, "got GrantLeadership(%s) where RevokeLeadership was due", e.session)
}

// awaitLeader returns the next notification naming a leader, skipping "no leader" ones (an
// implementation may say so when a retrieval starts, or between two leaders).
func (w waiter) awaitLeader(l *listener) leader {
	w.t.Helper()
	for {
		got := await(w.t, l.leaders, "NotifyLeaderAddress with a leader")
		if got.address != "" {
			return got
		}
	}
}

// awaitNoLeader waits for the next notification, which must say there is no leader.
func (w waiter) awaitNoLeader(l *listener) {
	w.t.Helper()
	got := await(w.t, l.leaders, "NotifyLeaderAddress without a leader")
	require.Equal(w.t, "", got.address, "expected no leader, got %q (session %s)", got.address, got.session)
}

// quiet checks, in a bubble, that nothing more arrives once everything has settled. Outside a
// bubble an absence cannot be shown without waiting, so it only checks that nothing arrived yet.
func quiet[E any](w waiter, ch <-chan E, what string) {
	w.t.Helper()
	if w.inBubble {
		synctest.Wait()
	}
	select {
	case e := <-ch:
		w.t.Errorf("unexpected %s: %+v", what, e)
	default:
	}
}

func (w waiter) noErrors(c *contender, l *listener) {
	w.t.Helper()
	quiet(w, c.errs, "LeaderContender.HandleError")
	quiet(w, l.errs, "LeaderRetrievalListener.HandleError")
}

// component names one election of a client: the Dispatcher's, the ResourceManager's or a job's
// JobMaster election.
type component struct {
	name      string
	election  func(s ha.Services) ha.LeaderElection
	retrieval func(s ha.Services) ha.LeaderRetrieval
}

func dispatcherComponent() component {
	return component{"dispatcher",
		func(s ha.Services) ha.LeaderElection { return s.DispatcherLeaderElection() },
		func(s ha.Services) ha.LeaderRetrieval { return s.DispatcherLeaderRetrieval() }}
}

func resourceManagerComponent() component {
	return component{"resourcemanager",
		func(s ha.Services) ha.LeaderElection { return s.ResourceManagerLeaderElection() },
		func(s ha.Services) ha.LeaderRetrieval { return s.ResourceManagerLeaderRetrieval() }}
}

// jobMasterComponent is the JobMaster election of a new job.
func jobMasterComponent() component {
	job := jobgraph.NewJobID()
	return component{"jobmaster",
		func(s ha.Services) ha.LeaderElection { return s.JobMasterLeaderElection(job) },
		func(s ha.Services) ha.LeaderRetrieval { return s.JobMasterLeaderRetrieval(job) }}
}

// components are the three kinds of election every case about one election runs on.
var components = []struct {
	name string
	make func() component
}{
	{"DispatcherElection", dispatcherComponent},
	{"ResourceManagerElection", resourceManagerComponent},
	{"JobMasterElection", jobMasterComponent},
}

// electionCases run on each of the components, on one client.
var electionCases = []struct {
	name string
	run  func(s *suite, comp component)
}{
	{"GrantConfirmRetrieve", electionGrantConfirmRetrieve},
	{"RetrievalStartedAfterConfirm", electionRetrievalAfterConfirm},
	{"CloseRevokes", electionCloseRevokes},
	{"StaleSessionAfterNewLeader", electionStaleSession},
	{"RetrievalStopEndsNotifications", retrievalStop},
}

// start starts c on the component's election of the suite's client and closes the election when
// the case ends.
func (s *suite) start(comp component, c *contender) ha.LeaderElection {
	s.t.Helper()
	e := comp.election(s.s)
	require.NotNil(s.t, e, "%s LeaderElection", comp.name)
	require.NoError(s.t, e.Start(c))
	s.t.Cleanup(func() { assert.NoError(s.t, e.Close(), "LeaderElection.Close") })
	return e
}

// follow starts l on the component's retrieval and stops it when the case ends.
func (s *suite) follow(comp component, l *listener) ha.LeaderRetrieval {
	s.t.Helper()
	r := comp.retrieval(s.s)
	require.NotNil(s.t, r, "%s LeaderRetrieval", comp.name)
	require.NoError(s.t, r.Start(l))
	s.t.Cleanup(func() { assert.NoError(s.t, r.Stop(), "LeaderRetrieval.Stop") })
	return r
}

// lead makes the suite's client the leader before a case writes, as a JobManager leads before it
// writes: it starts a contender on the Dispatcher election and waits for the grant. (A backend
// with one leader per client refuses the writes of a client that does not lead.)
func (s *suite) lead() ha.SessionID {
	s.t.Helper()
	return s.awaitGrant(func() *contender { c := newContender(); s.start(dispatcherComponent(), c); return c }())
}

func electionGrantConfirmRetrieve(s *suite, comp component) {
	t := s.t
	l := newListener()
	s.follow(comp, l)
	c := newContender()
	e := s.start(comp, c)

	session := s.awaitGrant(c)
	assert.True(t, e.HasLeadership(session), "HasLeadership of the granted session")
	assert.False(t, e.HasLeadership(ha.NewSessionID()), "HasLeadership of another session")
	assert.False(t, e.HasLeadership(ha.SessionID{}), "HasLeadership of the zero session")

	e.ConfirmLeadership(session, comp.name+"/1")
	assert.Equal(t, leader{comp.name + "/1", session}, s.awaitLeader(l))
	assert.True(t, e.HasLeadership(session), "still the leader after confirming")
	quiet(s.waiter, c.events, "leadership callback")
	s.noErrors(c, l)
}

func electionRetrievalAfterConfirm(s *suite, comp component) {
	t := s.t
	c := newContender()
	e := s.start(comp, c)
	session := s.awaitGrant(c)
	e.ConfirmLeadership(session, comp.name+"/1")

	l := newListener()
	s.follow(comp, l)
	assert.Equal(t, leader{comp.name + "/1", session}, s.awaitLeader(l), "a retrieval started later learns the confirmed leader")
	s.noErrors(c, l)
}

func electionCloseRevokes(s *suite, comp component) {
	t := s.t
	l := newListener()
	s.follow(comp, l)
	c := newContender()
	e := comp.election(s.s)
	require.NoError(t, e.Start(c))
	session := s.awaitGrant(c)
	e.ConfirmLeadership(session, comp.name+"/1")
	assert.Equal(t, leader{comp.name + "/1", session}, s.awaitLeader(l))

	require.NoError(t, e.Close())
	assert.False(t, e.HasLeadership(session), "HasLeadership after Close")
	s.awaitRevoke(c)
	s.awaitNoLeader(l)
	e.ConfirmLeadership(session, comp.name+"/stale") // ignored: the session is over
	quiet(s.waiter, c.events, "leadership callback after Close")
	quiet(s.waiter, l.leaders, "leader notification after Close")
	s.noErrors(c, l)
}

func electionStaleSession(s *suite, comp component) {
	t := s.t
	l := newListener()
	s.follow(comp, l)

	// The first contender leads, then leaves (a JobMaster failover in one process, a Dispatcher
	// that stopped).
	first := newContender()
	e1 := comp.election(s.s)
	require.NoError(t, e1.Start(first))
	old := s.awaitGrant(first)
	e1.ConfirmLeadership(old, comp.name+"/1")
	assert.Equal(t, leader{comp.name + "/1", old}, s.awaitLeader(l))
	require.NoError(t, e1.Close())
	s.awaitRevoke(first)
	s.awaitNoLeader(l)

	// The next contender gets a new session; the old one is stale everywhere.
	second := newContender()
	e2 := s.start(comp, second)
	current := s.awaitGrant(second)
	assert.NotEqual(t, old, current, "a new leader gets a new session")
	assert.True(t, e2.HasLeadership(current))
	assert.False(t, e2.HasLeadership(old), "HasLeadership of the stale session")
	assert.False(t, e1.HasLeadership(old), "HasLeadership of the stale session on the closed election")

	e2.ConfirmLeadership(old, comp.name+"/stale")
	e2.ConfirmLeadership(current, comp.name+"/2")
	assert.Equal(t, leader{comp.name + "/2", current}, s.awaitLeader(l), "a confirmation with a stale session is never published")
	quiet(s.waiter, first.events, "callback to the contender that left")
	quiet(s.waiter, second.events, "leadership callback")
	s.noErrors(first, l)
	s.noErrors(second, l)
}

func retrievalStop(s *suite, comp component) {
	t := s.t
	stopped, staying := newListener(), newListener()
	r := comp.retrieval(s.s)
	require.NoError(t, r.Start(stopped))
	s.follow(comp, staying)
	c := newContender()
	e := comp.election(s.s)
	require.NoError(t, e.Start(c))
	session := s.awaitGrant(c)
	e.ConfirmLeadership(session, comp.name+"/1")
	assert.Equal(t, leader{comp.name + "/1", session}, s.awaitLeader(stopped))
	assert.Equal(t, leader{comp.name + "/1", session}, s.awaitLeader(staying))

	require.NoError(t, r.Stop())
	require.NoError(t, e.Close())
	s.awaitRevoke(c)
	s.awaitNoLeader(staying)
	quiet(s.waiter, stopped.leaders, "notification after Stop")
	s.noErrors(c, staying)
}

// electionJobsIndependent: two jobs' JobMaster elections on one client. A backend with one
// leader per client grants both with its one session, so the sessions are not compared.
func electionJobsIndependent(s *suite) {
	t := s.t
	ja, jb := jobMasterComponent(), jobMasterComponent()
	la, lb := newListener(), newListener()
	s.follow(ja, la)
	s.follow(jb, lb)
	ca, cb := newContender(), newContender()
	ea := ja.election(s.s)
	require.NoError(t, ea.Start(ca))
	eb := s.start(jb, cb)
	sa, sb := s.awaitGrant(ca), s.awaitGrant(cb)

	eb.ConfirmLeadership(sb, "jobmaster/b")
	ea.ConfirmLeadership(sa, "jobmaster/a")
	assert.Equal(t, leader{"jobmaster/a", sa}, s.awaitLeader(la), "job A's retrieval names job A's leader only")
	assert.Equal(t, leader{"jobmaster/b", sb}, s.awaitLeader(lb), "job B's retrieval names job B's leader only")

	require.NoError(t, ea.Close())
	s.awaitRevoke(ca)
	s.awaitNoLeader(la)
	assert.True(t, eb.HasLeadership(sb), "closing job A's election leaves job B's leader")
	quiet(s.waiter, cb.events, "callback to job B's leader")
	quiet(s.waiter, lb.leaders, "notification about job B")
	s.noErrors(ca, la)
	s.noErrors(cb, lb)
}

// electionComponentsIndependent: the Dispatcher's election closing leaves the ResourceManager's
// leader (also where one client leads both with one session).
func electionComponentsIndependent(s *suite) {
	t := s.t
	dc, rc := dispatcherComponent(), resourceManagerComponent()
	ld, lr := newListener(), newListener()
	s.follow(dc, ld)
	s.follow(rc, lr)
	cd, cr := newContender(), newContender()
	ed := dc.election(s.s)
	require.NoError(t, ed.Start(cd))
	er := s.start(rc, cr)
	sd, sr := s.awaitGrant(cd), s.awaitGrant(cr)
	ed.ConfirmLeadership(sd, "dispatcher/1")
	er.ConfirmLeadership(sr, "resourcemanager/1")
	assert.Equal(t, leader{"dispatcher/1", sd}, s.awaitLeader(ld))
	assert.Equal(t, leader{"resourcemanager/1", sr}, s.awaitLeader(lr))

	require.NoError(t, ed.Close())
	s.awaitRevoke(cd)
	s.awaitNoLeader(ld)
	assert.True(t, er.HasLeadership(sr), "closing the Dispatcher's election leaves the ResourceManager's leader")
	quiet(s.waiter, cr.events, "callback to the ResourceManager's leader")
	quiet(s.waiter, lr.leaders, "notification about the ResourceManager")
	s.noErrors(cd, ld)
	s.noErrors(cr, lr)
}
