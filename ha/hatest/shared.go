package hatest

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/ha"
)

// SharedOptions says how the backend's clients share leadership.
type SharedOptions struct {
	// OneLeaderPerClient: the backend elects one client, which leads every component at once
	// with one session (ha/file, ha/etcd), and refuses writes of clients that do not lead with
	// ha.ErrNotLeader. False: each component is elected on its own and no write is refused
	// (ha/embedded).
	OneLeaderPerClient bool
}

// TestSharedServices runs the cases that need several clients of one backend (several JobManager
// processes of one cluster), in real time. newBackend makes a fresh backend and returns an opener
// of clients over it; the suite closes every client it opened.
//
// Each case calls newBackend once and opens two or three clients with open; a client the case
// closes on purpose (a JobManager process that stops) is closed before the case ends, every
// other one when it ends, after the case closed the elections and stopped the retrievals it
// started on it. What the cases require, beyond TestServices:
//   - Of the contenders of one election on two clients, started at once, exactly one is granted;
//     the retrievals of both clients report its confirmed address and session.
//   - When the leading client closes (its contenders are revoked), or the leader's election is
//     closed, the other client's contender is granted with a new session, and the retrievals
//     report it once confirmed. With OneLeaderPerClient a client gives up its leadership when
//     its last contender leaves.
//   - A retrieval started on a third client later learns the confirmed leader; the close of a
//     client that does not lead changes nothing for the leader.
//   - Every client reads what another wrote: plans, results, checkpoints and counters; the next
//     leader's CheckpointRecoveryFactory recovers the previous leader's checkpoints and goes on
//     counting; a discard (Shutdown(true)) is seen by every client.
//   - Of two clients racing CreateDirty of one job exactly one wins; the others get
//     ha.ErrAlreadyExists, or with OneLeaderPerClient the clients that do not lead
//     ha.ErrNotLeader.
//   - With OneLeaderPerClient: the leading client grants its Dispatcher, ResourceManager and
//     JobMaster contenders one session and revokes all when it closes; a client that does not
//     lead has every write refused with ha.ErrNotLeader, changing nothing, and so has a deposed
//     leader that still runs, also through the checkpoint store and counter it opened while it
//     led. Without: each component is elected on its own, and every client's writes are taken.
func TestSharedServices(t *testing.T, opts SharedOptions, newBackend func(t *testing.T) (open func(t *testing.T) ha.Services)) {
	runShared(t, opts, newBackend, false)
}

// TestSharedServicesInBubble runs TestSharedServices' cases, each inside a testing/synctest
// bubble (newBackend is called inside it). Only for backends whose goroutines all end when every
// client is closed and that do no real I/O.
func TestSharedServicesInBubble(t *testing.T, opts SharedOptions, newBackend func(t *testing.T) (open func(t *testing.T) ha.Services)) {
	runShared(t, opts, newBackend, true)
}

// sharedSuite is what one shared case sees.
type sharedSuite struct {
	waiter
	opts SharedOptions
	open func(t *testing.T) ha.Services
}

// client is one opened client of the backend and what the case started on it.
type client struct {
	ss         *sharedSuite
	name       string
	s          ha.Services
	closed     bool
	elections  []ha.LeaderElection
	retrievals []ha.LeaderRetrieval
}

type sharedCase struct {
	name string
	run  func(ss *sharedSuite)
}

func sharedCases(opts SharedOptions) []sharedCase {
	var cases []sharedCase
	for _, comp := range components {
		cases = append(cases,
			sharedCase{comp.name + "/ExactlyOneOfTwoClientsLeads", func(ss *sharedSuite) { sharedOneLeads(ss, comp.make()) }},
			sharedCase{comp.name + "/LeaderClientCloseHandsOver", func(ss *sharedSuite) { sharedClientCloseHandsOver(ss, comp.make()) }},
			sharedCase{comp.name + "/LeaderElectionCloseHandsOver", func(ss *sharedSuite) { sharedElectionCloseHandsOver(ss, comp.make()) }},
			sharedCase{comp.name + "/StandbyCloseChangesNothing", func(ss *sharedSuite) { sharedStandbyClose(ss, comp.make()) }},
		)
	}
	cases = append(cases,
		sharedCase{"ExecutionPlanStore/OtherClientsSeePlans", sharedPlans},
		sharedCase{"JobResultStore/OtherClientsSeeResults", sharedResults},
		sharedCase{"JobResultStore/RacingCreateDirtyOneWins", sharedRacingCreateDirty},
		sharedCase{"CheckpointRecoveryFactory/NextLeaderRecovers", func(ss *sharedSuite) { sharedCheckpointTakeover(ss, true) }},
		sharedCase{"CheckpointRecoveryFactory/NextLeaderRecoversWithoutShutdown", func(ss *sharedSuite) { sharedCheckpointTakeover(ss, false) }},
		sharedCase{"CheckpointRecoveryFactory/DiscardIsSeenByEveryClient", sharedCheckpointDiscard},
	)
	if opts.OneLeaderPerClient {
		cases = append(cases,
			sharedCase{"OneLeaderPerClient/OneSessionForEveryComponent", sharedOneSession},
			sharedCase{"OneLeaderPerClient/NonLeaderWritesAreRefused", sharedNonLeaderRefused},
			sharedCase{"OneLeaderPerClient/DeposedLeaderWritesAreRefused", sharedDeposedLeaderRefused},
		)
	} else {
		cases = append(cases,
			sharedCase{"ElectedOnTheirOwn/ComponentsLeadOnDifferentClients", sharedComponentsOnTheirOwn},
			sharedCase{"ElectedOnTheirOwn/EveryClientWrites", sharedEveryClientWrites},
		)
	}
	return cases
}

func runShared(t *testing.T, opts SharedOptions, newBackend func(t *testing.T) (open func(t *testing.T) ha.Services), inBubble bool) {
	for _, c := range sharedCases(opts) {
		t.Run(c.name, func(t *testing.T) {
			body := func(t *testing.T) {
				open := newBackend(t)
				require.NotNil(t, open, "newBackend returned nil")
				c.run(&sharedSuite{waiter: waiter{t: t, inBubble: inBubble}, opts: opts, open: open})
			}
			if inBubble {
				synctest.Test(t, body)
			} else {
				body(t)
			}
		})
	}
}

// client opens a client; the case's end closes what was started on it, then the client, unless
// the case closed the client itself.
func (ss *sharedSuite) client(name string) *client {
	ss.t.Helper()
	s := ss.open(ss.t)
	require.NotNil(ss.t, s, "open returned nil")
	c := &client{ss: ss, name: name, s: s}
	ss.t.Cleanup(func() {
		if c.closed {
			return
		}
		for i := len(c.elections) - 1; i >= 0; i-- {
			assert.NoError(ss.t, c.elections[i].Close(), "%s: LeaderElection.Close", name)
		}
		for _, r := range c.retrievals {
			assert.NoError(ss.t, r.Stop(), "%s: LeaderRetrieval.Stop", name)
		}
		assert.NoError(ss.t, s.Close(), "%s: Services.Close", name)
	})
	return c
}

// close closes the client (a JobManager process that stops); nothing of it is used afterwards.
func (c *client) close() {
	c.ss.t.Helper()
	c.closed = true
	require.NoError(c.ss.t, c.s.Close(), "%s: Services.Close", c.name)
}

// start starts ct on the client's election of comp; the election is closed at the case's end.
func (c *client) start(comp component, ct *contender) ha.LeaderElection {
	c.ss.t.Helper()
	e := comp.election(c.s)
	require.NotNil(c.ss.t, e, "%s: %s LeaderElection", c.name, comp.name)
	require.NoError(c.ss.t, e.Start(ct), "%s: LeaderElection.Start", c.name)
	c.elections = append(c.elections, e)
	return e
}

// follow starts l on the client's retrieval of comp; it is stopped at the case's end.
func (c *client) follow(comp component, l *listener) {
	c.ss.t.Helper()
	r := comp.retrieval(c.s)
	require.NotNil(c.ss.t, r, "%s: %s LeaderRetrieval", c.name, comp.name)
	require.NoError(c.ss.t, r.Start(l), "%s: LeaderRetrieval.Start", c.name)
	c.retrievals = append(c.retrievals, r)
}

// lead makes c lead (its Dispatcher contender is granted) before it writes; with other clients
// not contending yet, it is the only candidate.
func (c *client) lead() ha.SessionID {
	c.ss.t.Helper()
	ct := newContender()
	c.start(dispatcherComponent(), ct)
	return c.ss.awaitGrant(ct)
}

// standby starts a Dispatcher contender on c while another client leads, and checks that it is
// not granted.
func (c *client) standby() *contender {
	c.ss.t.Helper()
	ct := newContender()
	c.start(dispatcherComponent(), ct)
	quiet(c.ss.waiter, ct.events, c.name+"'s standby contender callback")
	return ct
}

// side is one client's part in a race for comp's election.
type side struct {
	c       *client
	ct      *contender
	e       ha.LeaderElection
	l       *listener
	address string
}

// race has clients a and b follow comp and start contenders on it at once; it waits for the one
// grant and returns the winner with its session, and the loser. The winner confirms its address
// and both retrievals must report it.
func (ss *sharedSuite) race(comp component, a, b *client) (winner, loser *side, session ha.SessionID) {
	ss.t.Helper()
	sides := []*side{{c: a, ct: newContender(), l: newListener()}, {c: b, ct: newContender(), l: newListener()}}
	for _, sd := range sides {
		sd.c.follow(comp, sd.l)
		sd.address = comp.name + "/" + sd.c.name
	}
	var wg sync.WaitGroup
	errs := make([]error, len(sides))
	for i, sd := range sides {
		sd.e = comp.election(sd.c.s)
		require.NotNil(ss.t, sd.e)
		sd.c.elections = append(sd.c.elections, sd.e)
		wg.Go(func() { errs[i] = sd.e.Start(sd.ct) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(ss.t, err, "%s: LeaderElection.Start", sides[i].c.name)
	}

	// Whichever contender is granted first is the one leader.
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	var first contenderEvent
	i := 0
	select {
	case first = <-sides[0].ct.events:
	case first = <-sides[1].ct.events:
		i = 1
	case <-timer.C:
		require.FailNowf(ss.t, "timed out", "no GrantLeadership to either client's %s contender within %v", comp.name, Timeout)
	}
	require.True(ss.t, first.granted, "%s's contender was revoked before any grant", sides[i].c.name)
	require.NotEqual(ss.t, ha.SessionID{}, first.session, "granted the zero session")
	winner, loser, session = sides[i], sides[1-i], first.session

	assert.True(ss.t, winner.e.HasLeadership(session), "%s: HasLeadership of its granted session", winner.c.name)
	winner.e.ConfirmLeadership(session, winner.address)
	for _, sd := range sides {
		assert.Equal(ss.t, leader{winner.address, session}, ss.awaitLeader(sd.l), "%s's retrieval", sd.c.name)
	}
	quiet(ss.waiter, loser.ct.events, loser.c.name+"'s contender callback while "+winner.c.name+" leads")
	return winner, loser, session
}

// jobMasterComponentOf is the JobMaster election of job.
func jobMasterComponentOf(job jobgraph.JobID) component {
	return component{"jobmaster",
		func(s ha.Services) ha.LeaderElection { return s.JobMasterLeaderElection(job) },
		func(s ha.Services) ha.LeaderRetrieval { return s.JobMasterLeaderRetrieval(job) }}
}

func sharedOneLeads(ss *sharedSuite, comp component) {
	a, b := ss.client("a"), ss.client("b")
	winner, loser, session := ss.race(comp, a, b)
	if ss.opts.OneLeaderPerClient {
		// The session is a's alone: b's election neither claims nor publishes it.
		assert.False(ss.t, loser.e.HasLeadership(session), "%s: HasLeadership of the other client's session", loser.c.name)
		loser.e.ConfirmLeadership(session, loser.address+"/forged")
		quiet(ss.waiter, winner.l.leaders, winner.c.name+"'s notification after the other client's confirmation")
		quiet(ss.waiter, loser.l.leaders, loser.c.name+"'s notification after its own confirmation of the other client's session")
	}
	// A process started later learns the confirmed leader when its retrieval starts.
	l := newListener()
	ss.client("c").follow(comp, l)
	assert.Equal(ss.t, leader{winner.address, session}, ss.awaitLeader(l), "c's retrieval started after the confirmation")
	ss.noErrors(winner.ct, winner.l)
	ss.noErrors(loser.ct, loser.l)
	quiet(ss.waiter, l.errs, "LeaderRetrievalListener.HandleError")
}

// The leading process stops: its contender is revoked, the other client's is granted with a new
// session, and the retrieval there reports the new leader once it confirmed.
func sharedClientCloseHandsOver(ss *sharedSuite, comp component) {
	t := ss.t
	a, b := ss.client("a"), ss.client("b")
	winner, loser, old := ss.race(comp, a, b)
	winner.c.close()
	ss.awaitRevoke(winner.ct)
	next := ss.awaitGrant(loser.ct)
	assert.NotEqual(t, old, next, "the next leader gets a new session")
	assert.True(t, loser.e.HasLeadership(next), "%s: HasLeadership of its granted session", loser.c.name)
	assert.False(t, loser.e.HasLeadership(old), "%s: HasLeadership of the closed leader's session", loser.c.name)
	loser.e.ConfirmLeadership(old, "stale")
	loser.e.ConfirmLeadership(next, loser.address)
	assert.Equal(t, leader{loser.address, next}, ss.awaitLeader(loser.l), "%s's retrieval reports the new leader", loser.c.name)
	quiet(ss.waiter, loser.ct.events, "leadership callback to the new leader")
	quiet(ss.waiter, winner.ct.events, "callback to the closed client's contender")
	quiet(ss.waiter, loser.l.leaders, "leader notification")
	ss.noErrors(loser.ct, loser.l)
}

// The leader's election is closed (its JobManager stays): the other client's contender is
// granted with a new session and both retrievals report it once confirmed; the old session's
// confirmation is ignored.
func sharedElectionCloseHandsOver(ss *sharedSuite, comp component) {
	t := ss.t
	a, b := ss.client("a"), ss.client("b")
	winner, loser, old := ss.race(comp, a, b)
	winner.c.elections = winner.c.elections[:len(winner.c.elections)-1] // closed here, not at the end
	require.NoError(t, winner.e.Close())
	assert.False(t, winner.e.HasLeadership(old), "%s: HasLeadership after Close", winner.c.name)
	ss.awaitRevoke(winner.ct)
	next := ss.awaitGrant(loser.ct)
	assert.NotEqual(t, old, next, "the next leader gets a new session")
	winner.e.ConfirmLeadership(old, winner.address+"/stale")
	loser.e.ConfirmLeadership(next, loser.address)
	for _, sd := range []*side{winner, loser} {
		assert.Equal(t, leader{loser.address, next}, ss.awaitLeader(sd.l), "%s's retrieval reports the new leader", sd.c.name)
	}
	quiet(ss.waiter, winner.ct.events, "callback to the closed election's contender")
	quiet(ss.waiter, loser.ct.events, "leadership callback to the new leader")
	for _, sd := range []*side{winner, loser} {
		quiet(ss.waiter, sd.l.leaders, sd.c.name+"'s leader notification")
		ss.noErrors(sd.ct, sd.l)
	}
}

func sharedPlans(ss *sharedSuite) {
	t, ctx := ss.t, ss.t.Context()
	a, b := ss.client("a"), ss.client("b")
	a.lead()
	g1, g2 := sampleGraph("first"), sampleGraph("second")
	require.NoError(t, a.s.ExecutionPlanStore().Put(ctx, g1))
	require.NoError(t, a.s.ExecutionPlanStore().Put(ctx, g2))

	ids, err := b.s.ExecutionPlanStore().JobIDs(ctx)
	require.NoError(t, err)
	assert.Equal(t, sortedIDs(g1.JobID, g2.JobID), ids, "b lists a's plans")
	got, err := b.s.ExecutionPlanStore().Get(ctx, g1.JobID)
	require.NoError(t, err)
	assert.Equal(t, clone(t, g1), got, "b reads a's plan")

	require.NoError(t, a.s.ExecutionPlanStore().Remove(ctx, g2.JobID))
	ids, err = b.s.ExecutionPlanStore().JobIDs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []jobgraph.JobID{g1.JobID}, ids, "b sees a's Remove")
	_, err = b.s.ExecutionPlanStore().Get(ctx, g2.JobID)
	require.ErrorIs(t, err, ha.ErrNotFound)

	c := ss.client("c") // a process started later recovers the plans
	ids, err = c.s.ExecutionPlanStore().JobIDs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []jobgraph.JobID{g1.JobID}, ids)
	got, err = c.s.ExecutionPlanStore().Get(ctx, g1.JobID)
	require.NoError(t, err)
	assert.Equal(t, clone(t, g1), got)
}

func sharedResults(ss *sharedSuite) {
	t, ctx := ss.t, ss.t.Context()
	a, b := ss.client("a"), ss.client("b")
	a.lead()
	finished, failed, _ := sampleResults()
	require.NoError(t, a.s.JobResultStore().CreateDirty(ctx, finished))
	require.NoError(t, a.s.JobResultStore().CreateDirty(ctx, failed))

	entry, err := b.s.JobResultStore().Get(ctx, finished.JobID)
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: finished}, entry, "b reads a's dirty entry")
	dirty, err := b.s.JobResultStore().DirtyResults(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []jobgraph.JobResult{finished, failed}, dirty)

	require.NoError(t, a.s.JobResultStore().MarkClean(ctx, finished.JobID))
	entry, err = b.s.JobResultStore().Get(ctx, finished.JobID)
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: finished, Clean: true}, entry, "b sees a's MarkClean")
	dirty, err = b.s.JobResultStore().DirtyResults(ctx)
	require.NoError(t, err)
	assert.Equal(t, []jobgraph.JobResult{failed}, dirty)

	c := ss.client("c") // a process started later finds the dirty entry to clean up
	dirty, err = c.s.JobResultStore().DirtyResults(ctx)
	require.NoError(t, err)
	assert.Equal(t, []jobgraph.JobResult{failed}, dirty)
	entry, err = c.s.JobResultStore().Get(ctx, finished.JobID)
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: finished, Clean: true}, entry)
}

// Two JobManagers write a result for the same job at once (each thinks it finished the job):
// exactly one entry is written.
func sharedRacingCreateDirty(ss *sharedSuite) {
	t, ctx := ss.t, ss.t.Context()
	a, b := ss.client("a"), ss.client("b")
	a.lead()
	b.standby()
	job := jobgraph.NewJobID()
	const perClient = 4
	clients := []*client{a, b}
	results := make([][]jobgraph.JobResult, len(clients))
	errs := make([][]error, len(clients))
	begin := make(chan struct{})
	var wg sync.WaitGroup
	for ci, c := range clients {
		results[ci] = make([]jobgraph.JobResult, perClient)
		errs[ci] = make([]error, perClient)
		for i := range perClient {
			results[ci][i] = jobgraph.JobResult{JobID: job, Name: fmt.Sprintf("%s-%d", c.name, i), Status: jobgraph.JobStatusFinished}
			wg.Go(func() {
				<-begin
				errs[ci][i] = c.s.JobResultStore().CreateDirty(ctx, results[ci][i])
			})
		}
	}
	close(begin)
	wg.Wait()

	var won []jobgraph.JobResult
	for ci, c := range clients {
		for i, err := range errs[ci] {
			switch {
			case err == nil:
				won = append(won, results[ci][i])
			case ss.opts.OneLeaderPerClient && c == b:
				assert.ErrorIs(t, err, ha.ErrNotLeader, "%s's CreateDirty (it does not lead)", results[ci][i].Name)
			default:
				assert.ErrorIs(t, err, ha.ErrAlreadyExists, "%s's CreateDirty", results[ci][i].Name)
			}
		}
	}
	require.Len(t, won, 1, "exactly one CreateDirty succeeds")
	if ss.opts.OneLeaderPerClient {
		assert.Equal(t, job, won[0].JobID)
		assert.Contains(t, []string{"a-0", "a-1", "a-2", "a-3"}, won[0].Name, "the leader's CreateDirty wins")
	}
	for _, c := range clients {
		entry, err := c.s.JobResultStore().Get(ctx, job)
		require.NoError(t, err)
		assert.Equal(t, ha.JobResultEntry{Result: won[0]}, entry, "%s reads the one entry", c.name)
	}
}

// Checkpoints 1–3 completed under client a's JobMaster (2 retained); a stops (its JobMaster
// shuts the store and counter down without discard first, or, withShutdown false, it does not
// get to); b's JobMaster takes over the job and recovers checkpoints 2 and 3, and its counter
// goes on with 4.
func sharedCheckpointTakeover(ss *sharedSuite, withShutdown bool) {
	t := ss.t
	job := jobgraph.NewJobID()
	jm := jobMasterComponentOf(job)
	a, b := ss.client("a"), ss.client("b")
	ca, cb := newContender(), newContender()
	a.start(jm, ca)
	sa := ss.awaitGrant(ca)
	b.start(jm, cb)
	quiet(ss.waiter, cb.events, "the standby JobMaster's callback")

	store, counter := openStore(t, a.s, job, 2), openCounter(t, a.s, job)
	takeIDs(t, counter, checkpoint.InitialCheckpointID, 3)
	addAll(t, store, job, 1, 2, 3)
	if withShutdown {
		require.NoError(t, store.Shutdown(false))
		require.NoError(t, counter.Shutdown(false))
	}
	a.close()
	ss.awaitRevoke(ca)
	sb := ss.awaitGrant(cb)
	assert.NotEqual(t, sa, sb)

	recovered := openStore(t, b.s, job, 2)
	assert.Equal(t, samples(job, 2, 3), recovered.All(), "the next leader recovers the retained checkpoints")
	latest, ok := recovered.Latest()
	require.True(t, ok)
	assert.Equal(t, sampleCheckpoint(job, 3), latest, "the next leader restores checkpoint 3")
	next := openCounter(t, b.s, job)
	assert.Equal(t, checkpoint.CheckpointID(4), nextID(t, next), "the next leader's counter goes on")
	takeIDs(t, next, 4, 1)
	sub, err := recovered.Add(sampleCheckpoint(job, 4))
	require.NoError(t, err, "the next leader adds checkpoint 4")
	assert.Equal(t, samples(job, 2), sub)
	assert.Equal(t, samples(job, 3, 4), recovered.All())

	c := ss.client("c") // and a process started later reads what b wrote
	assert.Equal(t, samples(job, 3, 4), openStore(t, c.s, job, 2).All())
	assert.Equal(t, checkpoint.CheckpointID(5), nextID(t, openCounter(t, c.s, job)))
}

// With one leader per client: a leads its Dispatcher, ResourceManager and a job's JobMaster with
// one session; b's contenders wait; a's Close revokes all three and b's are granted with one new
// session; b's retrievals report each component's leader.
func sharedOneSession(ss *sharedSuite) {
	t := ss.t
	a, b := ss.client("a"), ss.client("b")
	comps := []component{dispatcherComponent(), resourceManagerComponent(), jobMasterComponent()}
	acts, bcts, bls := make([]*contender, 3), make([]*contender, 3), make([]*listener, 3)
	aes, bes := make([]ha.LeaderElection, 3), make([]ha.LeaderElection, 3)
	for i, comp := range comps {
		acts[i], bcts[i], bls[i] = newContender(), newContender(), newListener()
		b.follow(comp, bls[i])
		aes[i] = a.start(comp, acts[i])
	}
	var first ha.SessionID
	for i, comp := range comps {
		s := ss.awaitGrant(acts[i])
		if i == 0 {
			first = s
		}
		assert.Equal(t, first, s, "a grants its %s contender the client's one session", comp.name)
	}
	for i, comp := range comps {
		bes[i] = b.start(comp, bcts[i])
		aes[i].ConfirmLeadership(first, comp.name+"/a")
	}
	for i, comp := range comps {
		assert.Equal(t, leader{comp.name + "/a", first}, ss.awaitLeader(bls[i]), "b's %s retrieval", comp.name)
		quiet(ss.waiter, bcts[i].events, "b's "+comp.name+" contender callback while a leads")
	}

	a.close()
	for i, comp := range comps {
		ss.awaitRevoke(acts[i])
		quiet(ss.waiter, acts[i].events, "a's "+comp.name+" contender callback after its revocation")
	}
	var second ha.SessionID
	for i, comp := range comps {
		s := ss.awaitGrant(bcts[i])
		if i == 0 {
			second = s
		}
		assert.Equal(t, second, s, "b grants its %s contender the client's one session", comp.name)
		bes[i].ConfirmLeadership(second, comp.name+"/b")
	}
	assert.NotEqual(t, first, second, "b leads with a new session")
	for i, comp := range comps {
		assert.Equal(t, leader{comp.name + "/b", second}, ss.awaitLeader(bls[i]), "b's %s retrieval", comp.name)
		ss.noErrors(bcts[i], bls[i])
	}
}

// With one leader per client: b, which does not lead, has every write refused with
// ha.ErrNotLeader, and nothing it tried is visible to a, the leader, or to b itself.
func sharedNonLeaderRefused(ss *sharedSuite) {
	t, ctx := ss.t, ss.t.Context()
	a, b := ss.client("a"), ss.client("b")
	a.lead()
	standby := b.standby()
	g := sampleGraph("leader's")
	job := g.JobID
	kept, _, _ := sampleResults()
	require.NoError(t, a.s.ExecutionPlanStore().Put(ctx, g))
	require.NoError(t, a.s.JobResultStore().CreateDirty(ctx, kept))
	store, counter := openStore(t, a.s, job, 2), openCounter(t, a.s, job)
	takeIDs(t, counter, checkpoint.InitialCheckpointID, 1)
	addAll(t, store, job, 1)

	other := sampleGraph("non-leader's")
	changed := sampleGraph("changed by the non-leader")
	changed.JobID = job
	other2 := jobgraph.JobResult{JobID: jobgraph.NewJobID(), Name: "non-leader's", Status: jobgraph.JobStatusFailed}
	bs := b.s
	assert.ErrorIs(t, bs.ExecutionPlanStore().Put(ctx, other), ha.ErrNotLeader, "Put of a new plan")
	assert.ErrorIs(t, bs.ExecutionPlanStore().Put(ctx, changed), ha.ErrNotLeader, "Put replacing the leader's plan")
	assert.ErrorIs(t, bs.ExecutionPlanStore().Remove(ctx, job), ha.ErrNotLeader, "Remove")
	assert.ErrorIs(t, bs.JobResultStore().CreateDirty(ctx, other2), ha.ErrNotLeader, "CreateDirty")
	assert.ErrorIs(t, bs.JobResultStore().MarkClean(ctx, kept.JobID), ha.ErrNotLeader, "MarkClean")
	bStore := openStore(t, bs, job, 2)
	assert.Equal(t, samples(job, 1), bStore.All(), "the non-leader reads the checkpoints")
	_, err := bStore.Add(sampleCheckpoint(job, 2))
	assert.ErrorIs(t, err, ha.ErrNotLeader, "checkpoint Add")
	assert.ErrorIs(t, bStore.Shutdown(true), ha.ErrNotLeader, "checkpoint store Shutdown(true)")
	bCounter := openCounter(t, bs, job)
	assert.Equal(t, checkpoint.CheckpointID(2), nextID(t, bCounter), "the non-leader reads the counter")
	_, err = bCounter.GetAndIncrement()
	assert.ErrorIs(t, err, ha.ErrNotLeader, "counter GetAndIncrement")
	assert.ErrorIs(t, bCounter.SetCount(10), ha.ErrNotLeader, "counter SetCount")
	assert.ErrorIs(t, bCounter.Shutdown(true), ha.ErrNotLeader, "counter Shutdown(true)")

	for _, c := range []*client{a, b} {
		ids, err := c.s.ExecutionPlanStore().JobIDs(ctx)
		require.NoError(t, err)
		assert.Equal(t, []jobgraph.JobID{job}, ids, "%s: the plans", c.name)
		got, err := c.s.ExecutionPlanStore().Get(ctx, job)
		require.NoError(t, err)
		assert.Equal(t, clone(t, g), got, "%s: the leader's plan", c.name)
		entry, err := c.s.JobResultStore().Get(ctx, kept.JobID)
		require.NoError(t, err)
		assert.Equal(t, ha.JobResultEntry{Result: kept}, entry, "%s: the leader's entry stays dirty", c.name)
		_, err = c.s.JobResultStore().Get(ctx, other2.JobID)
		assert.ErrorIs(t, err, ha.ErrNotFound, "%s: the refused entry", c.name)
		dirty, err := c.s.JobResultStore().DirtyResults(ctx)
		require.NoError(t, err)
		assert.Equal(t, []jobgraph.JobResult{kept}, dirty, "%s: the dirty results", c.name)
		assert.Equal(t, samples(job, 1), openStore(t, c.s, job, 2).All(), "%s: the checkpoints", c.name)
		assert.Equal(t, checkpoint.CheckpointID(2), nextID(t, openCounter(t, c.s, job)), "%s: the counter", c.name)
	}
	// The leader goes on writing.
	takeIDs(t, counter, 2, 1)
	addAll(t, store, job, 2)
	assert.Equal(t, samples(job, 1, 2), openStore(t, b.s, job, 2).All())
	quiet(ss.waiter, standby.events, "the standby's callback")
}

// Without one leader per client (ha/embedded): each component's election picks its own leader,
// so a leads the Dispatcher while b leads the ResourceManager; b's Close hands only the
// ResourceManager to a.
func sharedComponentsOnTheirOwn(ss *sharedSuite) {
	t := ss.t
	a, b := ss.client("a"), ss.client("b")
	dc, rc := dispatcherComponent(), resourceManagerComponent()
	aDisp, bRM := newContender(), newContender()
	ed := a.start(dc, aDisp)
	sd := ss.awaitGrant(aDisp)
	eb := b.start(rc, bRM)
	sr := ss.awaitGrant(bRM)
	assert.NotEqual(t, sd, sr, "two elections, two sessions")
	aRM, bDisp := newContender(), newContender()
	ea := a.start(rc, aRM)
	b.start(dc, bDisp)
	quiet(ss.waiter, aRM.events, "a's ResourceManager contender callback while b leads it")
	quiet(ss.waiter, bDisp.events, "b's Dispatcher contender callback while a leads it")
	l := newListener()
	a.follow(rc, l)
	eb.ConfirmLeadership(sr, "resourcemanager/b")
	assert.Equal(t, leader{"resourcemanager/b", sr}, ss.awaitLeader(l))

	b.close()
	ss.awaitRevoke(bRM)
	next := ss.awaitGrant(aRM)
	assert.NotEqual(t, sr, next)
	ea.ConfirmLeadership(next, "resourcemanager/a")
	assert.Equal(t, leader{"resourcemanager/a", next}, ss.awaitLeader(l))
	assert.True(t, ed.HasLeadership(sd), "a still leads the Dispatcher with its first session")
	quiet(ss.waiter, aDisp.events, "a's Dispatcher contender callback")
	quiet(ss.waiter, bDisp.events, "the closed client's waiting contender callback")
	ss.noErrors(aRM, l)
}

// Without one leader per client: a client that leads nothing writes too, and the others see it.
func sharedEveryClientWrites(ss *sharedSuite) {
	t, ctx := ss.t, ss.t.Context()
	a, b := ss.client("a"), ss.client("b")
	a.lead()
	b.standby()
	g := sampleGraph("written by b")
	job := g.JobID
	r := jobgraph.JobResult{JobID: jobgraph.NewJobID(), Name: "written by b", Status: jobgraph.JobStatusCanceled}
	require.NoError(t, b.s.ExecutionPlanStore().Put(ctx, g))
	require.NoError(t, b.s.JobResultStore().CreateDirty(ctx, r))
	require.NoError(t, b.s.JobResultStore().MarkClean(ctx, r.JobID))
	takeIDs(t, openCounter(t, b.s, job), checkpoint.InitialCheckpointID, 2)
	addAll(t, openStore(t, b.s, job, 2), job, 1, 2)

	got, err := a.s.ExecutionPlanStore().Get(ctx, job)
	require.NoError(t, err)
	assert.Equal(t, clone(t, g), got)
	entry, err := a.s.JobResultStore().Get(ctx, r.JobID)
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: r, Clean: true}, entry)
	assert.Equal(t, samples(job, 1, 2), openStore(t, a.s, job, 2).All())
	assert.Equal(t, checkpoint.CheckpointID(3), nextID(t, openCounter(t, a.s, job)))
	require.NoError(t, b.s.ExecutionPlanStore().Remove(ctx, job))
	_, err = a.s.ExecutionPlanStore().Get(ctx, job)
	assert.ErrorIs(t, err, ha.ErrNotFound)
}

// The global cleanup of a terminated job on the leader discards its checkpoints and counter
// (Shutdown(true)): a later leader, or any client, finds the job empty and counting from
// checkpoint.InitialCheckpointID.
func sharedCheckpointDiscard(ss *sharedSuite) {
	t := ss.t
	job := jobgraph.NewJobID()
	a, b := ss.client("a"), ss.client("b")
	a.lead()
	store, counter := openStore(t, a.s, job, 2), openCounter(t, a.s, job)
	takeIDs(t, counter, checkpoint.InitialCheckpointID, 2)
	addAll(t, store, job, 1, 2)
	assert.Equal(t, samples(job, 1, 2), openStore(t, b.s, job, 2).All(), "b reads a's checkpoints")
	require.NoError(t, store.Shutdown(true))
	require.NoError(t, counter.Shutdown(true))
	for _, c := range []*client{a, b, ss.client("c")} {
		assert.Empty(t, openStore(t, c.s, job, 2).All(), "%s: the discarded checkpoints", c.name)
		assert.Equal(t, checkpoint.InitialCheckpointID, nextID(t, openCounter(t, c.s, job)), "%s: the discarded counter", c.name)
	}
}

// With one leader per client: a leads and opens a job's checkpoint store and counter; its
// Dispatcher election is closed (a deposed leader that still runs), b takes over. Every write a
// still tries — through the store and counter it opened while it led, too — is refused with
// ha.ErrNotLeader and changes nothing; b's writes are taken.
func sharedDeposedLeaderRefused(ss *sharedSuite) {
	t, ctx := ss.t, ss.t.Context()
	a, b := ss.client("a"), ss.client("b")
	ct := newContender()
	e := dispatcherComponent().election(a.s)
	require.NoError(t, e.Start(ct))
	ss.awaitGrant(ct)
	g := sampleGraph("deposed leader's")
	job := g.JobID
	kept, _, _ := sampleResults()
	require.NoError(t, a.s.ExecutionPlanStore().Put(ctx, g))
	require.NoError(t, a.s.JobResultStore().CreateDirty(ctx, kept))
	store, counter := openStore(t, a.s, job, 2), openCounter(t, a.s, job)
	takeIDs(t, counter, checkpoint.InitialCheckpointID, 1)
	addAll(t, store, job, 1)
	standby := b.standby()

	require.NoError(t, e.Close())
	ss.awaitRevoke(ct)
	ss.awaitGrant(standby)

	assert.ErrorIs(t, a.s.ExecutionPlanStore().Put(ctx, sampleGraph("late")), ha.ErrNotLeader, "the deposed leader's Put")
	assert.ErrorIs(t, a.s.ExecutionPlanStore().Remove(ctx, job), ha.ErrNotLeader, "the deposed leader's Remove")
	late := jobgraph.JobResult{JobID: jobgraph.NewJobID(), Name: "late", Status: jobgraph.JobStatusFinished}
	assert.ErrorIs(t, a.s.JobResultStore().CreateDirty(ctx, late), ha.ErrNotLeader, "the deposed leader's CreateDirty")
	assert.ErrorIs(t, a.s.JobResultStore().MarkClean(ctx, kept.JobID), ha.ErrNotLeader, "the deposed leader's MarkClean")
	_, err := store.Add(sampleCheckpoint(job, 2))
	assert.ErrorIs(t, err, ha.ErrNotLeader, "Add to the store opened while leading")
	_, err = counter.GetAndIncrement()
	assert.ErrorIs(t, err, ha.ErrNotLeader, "GetAndIncrement of the counter opened while leading")

	ids, err := b.s.ExecutionPlanStore().JobIDs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []jobgraph.JobID{job}, ids)
	entry, err := b.s.JobResultStore().Get(ctx, kept.JobID)
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: kept}, entry)
	_, err = b.s.JobResultStore().Get(ctx, late.JobID)
	assert.ErrorIs(t, err, ha.ErrNotFound)
	recovered := openStore(t, b.s, job, 2)
	assert.Equal(t, samples(job, 1), recovered.All(), "the new leader recovers checkpoint 1 only")
	next := openCounter(t, b.s, job)
	assert.Equal(t, checkpoint.CheckpointID(2), nextID(t, next))
	takeIDs(t, next, 2, 1)
	addAll(t, recovered, job, 2)
	require.NoError(t, b.s.JobResultStore().MarkClean(ctx, kept.JobID), "the new leader writes")
	assert.Equal(t, samples(job, 1, 2), openStore(t, a.s, job, 2).All(), "the deposed leader reads the new leader's checkpoints")
}

// The client that does not lead stops: the leader keeps its session, and neither it nor the
// leader's retrieval hears anything.
func sharedStandbyClose(ss *sharedSuite, comp component) {
	a, b := ss.client("a"), ss.client("b")
	winner, loser, session := ss.race(comp, a, b)
	loser.c.close()
	assert.True(ss.t, winner.e.HasLeadership(session), "%s still leads with its session", winner.c.name)
	winner.e.ConfirmLeadership(session, winner.address+"/again")
	assert.Equal(ss.t, leader{winner.address + "/again", session}, ss.awaitLeader(winner.l), "the leader confirms again")
	quiet(ss.waiter, winner.ct.events, "leadership callback after the standby closed")
	quiet(ss.waiter, winner.l.leaders, "leader notification")
	quiet(ss.waiter, loser.ct.events, "callback to the closed standby")
	ss.noErrors(winner.ct, winner.l)
}
