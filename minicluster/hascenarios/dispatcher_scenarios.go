package hascenarios

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/ha"
)

// dispatcherScenarios are the Dispatcher-level scenarios (a dispatcher.Runner or
// StandaloneDispatcher over the backend). Owner: helper "hadisp".
//
// Each runs a dispatcher.Runner on a client of the backend, in the client's Dispatcher leader
// election (wrapped to record every grant, revocation and confirmation: "grant L1", "revoke",
// "confirm L1 dispatcher"), with the default LeadershipRunner per job over fake JobMasters that
// log their creation and close ("created J#1", "closed J#1"). A revocation is Backend.Revoke of
// the Runner's client: on ha/file and ha/etcd it also revokes the client's JobMaster elections,
// and the next session (L2) comes at the client's next poll or campaign; ha/embedded grants L2
// at once. Plans a scenario starts with were stored by an earlier leader's process (a client
// that led, wrote and exited), as the writes of a client that does not lead are refused on
// ha/file and ha/etcd. The MiniCluster-level duplicate and concurrent submission scenarios are
// helper hascen's; these are the Runner-level ones. Every scenario applies to every backend.
var dispatcherScenarios = []scenario{
	{name: "Dispatcher: a recovery that completes after its leadership was revoked starts nothing; J runs only under the next leader", run: dispatcherSlowRecoveryAfterRevoke},
	{name: "Dispatcher: grant L1, revoke L1, grant L2 with a slow shutdown of L1: L1's JobMaster is fully stopped before L2's starts and J runs under L2", run: dispatcherSlowShutdownThenL2},
	{name: "Dispatcher: a duplicate submission of a running JobID fails, the job keeps running and is recovered after a failover", run: dispatcherDuplicateKeepsPlan},
	{name: "Dispatcher: two concurrent submissions of a new JobID: exactly one accepted, one JobMaster", run: dispatcherConcurrentSubmissions},
}

// dispatcherFixture is a dispatcher.Runner on a client of the backend.
type dispatcherFixture struct {
	e        *Env
	client   ha.Services
	log      *eventLog
	jms      *jobMasters
	election *recordedElection
	r        *dispatcher.Runner
}

// newDispatcherFixture makes (and does not start) a Runner in client's Dispatcher election whose
// Dispatchers use h (client, or a wrapper of it); the scenario's end closes it, before the
// clients close.
func newDispatcherFixture(e *Env, client, h ha.Services) *dispatcherFixture {
	log := newEventLog()
	f := &dispatcherFixture{e: e, client: client, log: log, jms: newJobMasters(log)}
	f.election = newRecordedElection(client.DispatcherLeaderElection(), log)
	r, err := dispatcher.NewRunner(dispatcher.RunnerConfig{
		Dispatcher:     dispatcher.Config{HA: h, JobManagerRunnerFactory: f.jms.runnerFactory()},
		LeaderElection: f.election,
	})
	require.NoError(e.T, err)
	f.r = r
	e.T.Cleanup(func() {
		assert.NoError(e.T, r.FatalError(), "%s: no fatal error of the Dispatcher Runner", e.Backend.Name)
		assert.NoError(e.T, r.Close(), "closing the Dispatcher Runner")
	})
	return f
}

// elections is the log of the Dispatcher election alone.
func (f *dispatcherFixture) elections() []string {
	return slices.DeleteFunc(f.log.all(), func(ev string) bool {
		return !strings.HasPrefix(ev, "grant ") && ev != "revoke" && !strings.HasPrefix(ev, "confirm ")
	})
}

// awaitRunning waits until the Runner reports g RUNNING: its JobMaster may be created before
// the job's runner took it in (the fake hands it to the scenario from inside Create), so the
// status is awaited, settling the cluster first in a bubble.
func (f *dispatcherFixture) awaitRunning(g *jobgraph.JobGraph) {
	f.e.T.Helper()
	f.e.Await(g.Name+" RUNNING", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		st, err := f.r.RequestJobStatus(ctx, g.JobID)
		return err == nil && st == jobgraph.JobStatusRunning
	})
}

func streamingJob(name string) *jobgraph.JobGraph {
	g := jobgraph.New(name, jobgraph.Streaming)
	g.AddVertex("v", "noop", 1)
	return g
}

// storedByAnEarlierLeader puts the plans into the ExecutionPlanStore as an earlier leader's
// process did.
func storedByAnEarlierLeader(e *Env, gs ...*jobgraph.JobGraph) {
	e.T.Helper()
	earlierLeader(e, func(c ha.Services) {
		for _, g := range gs {
			require.NoError(e.T, c.ExecutionPlanStore().Put(context.Background(), g))
		}
	})
}

// heldPlansHA is a client whose ExecutionPlanStore's Get waits until the scenario releases it,
// whatever its context says, and then reads the real store with its cancellation dropped: a
// store read that completes after its caller stopped caring.
type heldPlansHA struct {
	ha.Services
	plans heldPlans
}

func (h heldPlansHA) ExecutionPlanStore() ha.ExecutionPlanStore { return h.plans }

type heldPlans struct {
	ha.ExecutionPlanStore
	held chan chan struct{}
}

func (s heldPlans) Get(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobGraph, error) {
	release := make(chan struct{})
	s.held <- release
	<-release
	return s.ExecutionPlanStore.Get(context.WithoutCancel(ctx), id)
}

// Scenario: grant(L1), recovery of job J starts and is slow, revoke(L1), recovery completes: no
// fencing token is set (L1 is never confirmed, no Dispatcher is built for it), no JobMaster is
// created for J; J runs only under the next leader, once, after L1's recovery is done. A call
// made during L2's recovery waits for it.
func dispatcherSlowRecoveryAfterRevoke(e *Env) {
	t := e.T
	ctx := context.Background()
	j := streamingJob("J")
	storedByAnEarlierLeader(e, j)
	c := e.Open()
	h := heldPlansHA{c, heldPlans{c.ExecutionPlanStore(), make(chan chan struct{}, 2)}}
	f := newDispatcherFixture(e, c, h)
	require.NoError(t, f.r.Start())
	f.election.awaitGrant(e)
	l1 := await(e, h.plans.held, "L1's read of J's plan")

	e.Revoke(c) // revoke(L1); L2 is granted at once or at the client's next poll or campaign
	f.election.awaitRevoke(e)
	f.election.awaitGrant(e)
	listed := make(chan []jobgraph.JobID, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, Timeout)
		defer cancel()
		jobs, err := f.r.ListJobs(cctx)
		assert.NoError(t, err)
		var ids []jobgraph.JobID
		for _, j := range jobs {
			ids = append(ids, j.JobID)
		}
		listed <- ids
	}()
	assert.True(t, pending(e, listed), "the call waits for L2's recovery")
	assert.True(t, pending(e, h.plans.held), "L2's recovery waits for L1's")

	close(l1) // L1's recovery completes, after its session ended
	l2 := await(e, h.plans.held, "L2's read of J's plan, once L1's recovery is over")
	assert.Equal(t, 0, f.jms.count(), "nothing started for L1")
	assert.Equal(t, []string{"grant L1", "revoke", "grant L2"}, f.elections(), "L1 never confirmed")

	close(l2)
	assert.Equal(t, []jobgraph.JobID{j.JobID}, await(e, listed, "ListJobs' answer"), "the call made during the recovery waited for it")
	f.log.await(e, "confirm L2 dispatcher")
	jm := await(e, f.jms.created, "J's JobMaster")
	assert.Equal(t, []string{"grant L1", "revoke", "grant L2", "confirm L2 dispatcher"}, f.elections())
	assert.Equal(t, "J", jm.name)
	e.Settle()
	assert.Equal(t, 1, f.jms.count(), "J runs once, under L2")
	if e.Backend.OneLeaderPerClient {
		assert.Equal(t, jobgraph.JobMasterID(f.election.session(2)), jm.token, "the JobMaster is fenced by L2, the client's one session")
	}
	f.awaitRunning(j)
}

// Scenario: grant(L1), revoke(L1), grant(L2) in quick succession with a slow shutdown of L1's
// JobMaster: exactly one revocation; no JobMaster of L2 is created until L1's has fully stopped,
// never two of J alive, and J runs under L2. A submission to L2 meanwhile waits for L2's
// recovery, which waits for L1's close.
func dispatcherSlowShutdownThenL2(e *Env) {
	t := e.T
	ctx := context.Background()
	j := streamingJob("J")
	storedByAnEarlierLeader(e, j)
	c := e.Open()
	f := newDispatcherFixture(e, c, c)
	release := f.jms.gateCloses() // every JobMaster closes only once released
	require.NoError(t, f.r.Start())
	f.election.awaitGrant(e)
	l1 := await(e, f.jms.created, "L1's JobMaster of J")
	f.log.await(e, "confirm L1 dispatcher")

	e.Revoke(c)
	f.election.awaitRevoke(e)
	f.election.awaitGrant(e)
	awaitClosed(e, l1.closing, "the close of L1's JobMaster")
	meanwhile := streamingJob("meanwhile")
	submitted := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, Timeout)
		defer cancel()
		submitted <- f.r.SubmitJob(cctx, meanwhile)
	}()
	assert.True(t, pending(e, f.jms.created), "no later session's JobMaster while L1's is closing")
	assert.Equal(t, 1, f.jms.count())
	assert.True(t, pending(e, submitted), "the submission waits for L2's recovery, which waits for L1's close")

	release() // L1's JobMaster (and every later one) closes when asked
	require.NoError(t, await(e, submitted, "the submission's answer"))
	awaitClosed(e, l1.closedCh, "the end of L1's JobMaster's close")
	got := map[string]*fakeJobMaster{}
	for range 2 {
		jm := await(e, f.jms.created, "L2's JobMasters: J and the job submitted meanwhile")
		got[jm.name] = jm
	}
	f.log.await(e, "confirm L2 dispatcher")
	require.Contains(t, got, "J")
	require.Contains(t, got, "meanwhile")
	assert.Equal(t, 2, got["J"].n, "J's second JobMaster")
	e.Settle()
	assert.Equal(t, 3, f.jms.count(), "J under L1, J and meanwhile under L2")
	assert.Equal(t, 1, f.jms.mostAlive("J"), "never two JobMasters of J alive")
	assert.Equal(t, []string{"grant L1", "confirm L1 dispatcher", "revoke", "grant L2", "confirm L2 dispatcher"}, f.elections(),
		"one revocation: L1, then L2")
	assert.Less(t, f.log.index("closed J#1"), f.log.index("created J#2"), "L1's JobMaster fully stopped before L2's started")
	assert.Less(t, f.log.index("grant L2"), f.log.index("created J#2"))
	if e.Backend.OneLeaderPerClient {
		assert.Equal(t, jobgraph.JobMasterID(f.election.session(2)), got["J"].token, "J's JobMaster is fenced by L2, the client's one session")
	}
	f.awaitRunning(j)
}

// Scenario: J running under JobID X; a second submission with X: duplicate error; J keeps
// running; after a failover J is recovered (its stored plan was not deleted). The leader's
// process exits (its client closes under its Runner) and a standby Runner on another client
// takes over: it reads the plan the leader stored, not the impostor's, and runs J to its end.
func dispatcherDuplicateKeepsPlan(e *Env) {
	t := e.T
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	a := e.Open()
	leader := newDispatcherFixture(e, a, a)
	require.NoError(t, leader.r.Start())
	require.NoError(t, leader.r.AwaitLeadership(ctx))
	b := e.Open()
	standby := newDispatcherFixture(e, b, b)
	require.NoError(t, standby.r.Start())
	e.Settle()
	_, err := standby.r.ListJobs(ctx)
	require.ErrorIs(t, err, dispatcher.ErrNotLeader, "the second client's Runner is a standby")

	j := streamingJob("J")
	require.NoError(t, leader.r.SubmitJob(ctx, j))
	first := await(e, leader.jms.created, "J's JobMaster")
	again := streamingJob("impostor")
	again.JobID = j.JobID
	err = leader.r.SubmitJob(ctx, again)
	var dup *dispatcher.DuplicateJobSubmissionError
	require.ErrorAs(t, err, &dup)
	assert.ErrorIs(t, err, dispatcher.ErrDuplicateJobSubmission)
	assert.False(t, dup.GloballyTerminated)
	assert.Equal(t, j.JobID, dup.JobID)
	leader.awaitRunning(j)
	for _, c := range []ha.Services{a, b} {
		plan, err := c.ExecutionPlanStore().Get(ctx, j.JobID)
		require.NoError(t, err)
		assert.Equal(t, "J", plan.Name)
	}

	e.Exit(a) // the leader's process is gone
	awaitClosed(e, first.closedCh, "the close of the old leader's JobMaster")
	assert.Equal(t, jobgraph.JobStatusSuspended, first.state().status, "the old leader's JobMaster was closed, not ended")
	second := await(e, standby.jms.created, "J's JobMaster under the standby")
	assert.Equal(t, "J", second.name)
	assert.Equal(t, 1, leader.jms.count())
	standby.awaitRunning(j)
	arch, err := standby.r.RequestJob(ctx, j.JobID)
	require.NoError(t, err)
	assert.Equal(t, "J", arch.JobName, "the stored plan, not the impostor's")

	second.end(jobgraph.JobStatusFinished)
	res, err := standby.r.RequestJobResult(ctx, j.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
	assert.Equal(t, "J", res.Name)
	e.Settle()
	assert.Equal(t, 1, standby.jms.count())
}

// Scenario: two concurrent submissions of a new JobID through the Runner: exactly one accepted
// (the other a duplicate), one JobMaster.
func dispatcherConcurrentSubmissions(e *Env) {
	t := e.T
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	c := e.Open()
	f := newDispatcherFixture(e, c, c)
	require.NoError(t, f.r.Start())
	require.NoError(t, f.r.AwaitLeadership(ctx))
	g := streamingJob("racy")
	var errs [2]error
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = f.r.SubmitJob(ctx, g) })
	}
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		if err == nil {
			accepted++
			continue
		}
		require.ErrorIs(t, err, dispatcher.ErrDuplicateJobSubmission)
		var dup *dispatcher.DuplicateJobSubmissionError
		require.ErrorAs(t, err, &dup)
		assert.False(t, dup.GloballyTerminated)
	}
	assert.Equal(t, 1, accepted)
	await(e, f.jms.created, "the JobMaster")
	assert.True(t, pending(e, f.jms.created), "one JobMaster")
	assert.Equal(t, 1, f.jms.count())
	f.awaitRunning(g)
}
