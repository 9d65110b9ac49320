package hascenarios

import (
	"context"
	"sync"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/minicluster"
)

// miniClusterScenarios are the scenarios on whole MiniClusters over the backend: each cluster
// one JobManager process on its own client, with its TaskExecutors; the tasks are real (the
// counting job of helpers.go). Owner: helper "hascen".
var miniClusterScenarios = []scenario{
	{
		name: "Checkpoints 1–5 completed, leadership revoked, the process exits: plan, checkpoint pointers and counter kept; the next leader restores checkpoint 5; HA data is removed only after a globally terminal status",
		run:  standbyTakesOver,
	},
	{
		name: "v1(2) RUNNING, revoke, grant(L2): the new JobMaster gets its 2 slots, restores the latest checkpoint, and runs; it does not hang waiting for slots",
		run:  revokedLeaderResumesOnTheSameSlots,
	},
	{
		name: "Checkpoint 3 completed, a task fails, leadership is revoked during the restart backoff: the job ends SUSPENDED, no JobResultStore entry, plan and checkpoints kept; the next leader restores 3",
		run:  revokedDuringRestartBackoff,
	},
	{
		name: "J running under JobID X; a second submission with X: duplicate error; J keeps running; after a failover J is recovered (its stored plan was not deleted)",
		run:  duplicateSubmissionKeepsTheJob,
	},
	{
		name: "Two concurrent submissions of a new JobID: exactly one accepted, one JobMaster",
		run:  concurrentSubmissions,
	},
}

// standbyTakesOver: checkpoints 1–5 completed on the leading cluster, then its process exits
// (the cluster closes, then its client): the plan, the checkpoints and the counter are kept (no
// JobResultStore entry), and the standby cluster on another client — which started without
// leading, and whose job methods waited — takes over and restores checkpoint 5, within
// RegrantDelay in a bubble (at once on ha/embedded); its next checkpoint is 6. HA data is
// removed only once the job is globally terminal (canceled under the new leader).
func standbyTakesOver(e *Env) {
	t := e.T
	ctx := context.Background()
	first, second := e.Open(), e.Open()
	tasks := newCounting()
	mc1 := e.start(minicluster.Config{HA: first, Registry: tasks.registry()})
	g := countingJob(1)
	require.NoError(t, mc1.SubmitJob(ctx, g))
	assert.Equal(t, []string{"0#0 <- 0"}, receive(e, tasks.restored, 1, "the leader's task"))
	// The standby starts once the first cluster leads (an etcd campaign is not won at once).
	mc2 := e.start(minicluster.Config{HA: second, Registry: tasks.registry()})
	e.Settle()

	_, err := mc2.Dispatcher().RequestJobStatus(ctx, g.JobID)
	require.ErrorIs(t, err, dispatcher.ErrNotLeader, "the standby's Dispatcher does not lead")
	waiting, cancel := context.WithTimeout(ctx, e.shortWait())
	_, err = mc2.RequestJobStatus(waiting, g.JobID)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "the standby cluster's job methods wait for leadership")

	assert.Equal(t, []checkpoint.CheckpointID{1, 2, 3, 4, 5}, e.checkpoints(mc1, g.JobID, 5))
	require.NoError(t, mc1.Close())
	e.Exit(first) // the process exits: its client goes too
	exited := time.Now()
	assert.Equal(t, []string{"0#0 <- 5"}, receive(e, tasks.restored, 1, "the standby's task"), "the standby's JobMaster restored checkpoint 5")
	if e.InBubble() {
		// The standby's grant (at its next poll of the lock), then the retrievals of its
		// TaskExecutors and its new JobMaster report its ResourceManager and they register
		// (a registration that raced the leader's confirmation is retried): at once on
		// embedded; on ha/file the poll phases decide, hence a bound.
		assert.LessOrEqual(t, time.Since(exited), e.Backend.RegrantDelay+2*e.Backend.RetrievalDelay, "the standby took over within the backend's grant and retrieval delays")
	}
	_, err = second.JobResultStore().Get(ctx, g.JobID)
	require.ErrorIs(t, err, ha.ErrNotFound, "a suspended job has no JobResultStore entry")
	plan, err := second.ExecutionPlanStore().Get(ctx, g.JobID)
	require.NoError(t, err, "the plan is kept")
	assert.Equal(t, g.Name, plan.Name)
	assert.Equal(t, jobgraph.JobStatusRunning, e.jobStatus(mc2, g.JobID))
	assert.Equal(t, []checkpoint.CheckpointID{6}, e.checkpoints(mc2, g.JobID, 1), "the counter went on")

	require.NoError(t, mc2.CancelJob(ctx, g.JobID))
	res, err := mc2.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	_, err = second.ExecutionPlanStore().Get(ctx, g.JobID)
	require.ErrorIs(t, err, ha.ErrNotFound, "globally terminal: the plan is removed")
	entry, err := second.JobResultStore().Get(ctx, g.JobID)
	require.NoError(t, err)
	assert.True(t, entry.Clean)
	assert.Empty(t, drainStrings(tasks.restored))
}

// revokedLeaderResumesOnTheSameSlots: v(2) RUNNING on one TaskExecutor with 2 slots, checkpoint
// 1 completed, the cluster's client revoked (Backend.Revoke: on ha/embedded every election it
// leads, granted again at once; on ha/file and ha/etcd the client's one leadership, Dispatcher,
// ResourceManager and JobMaster together, granted again at the next poll or campaign): L2's
// JobMaster gets the 2 slots the old one released, restores checkpoint 1 in both subtasks and
// runs — it does not wait for slots: in a bubble at the instant of the grant (at once on
// embedded). A RequestJobResult pending across the change returns the job's final result
// (CANCELED under L2), not L1's SUSPENDED.
func revokedLeaderResumesOnTheSameSlots(e *Env) {
	t := e.T
	ctx := context.Background()
	c := e.Open()
	tasks := newCounting()
	statuses := newStatusLog()
	mc := e.start(minicluster.Config{HA: c, TaskExecutors: 1, SlotsPerTaskExecutor: 2, Registry: tasks.registry(), JobStatusListener: statuses.listen})
	g := countingJob(2)
	require.NoError(t, mc.SubmitJob(ctx, g))
	assert.ElementsMatch(t, []string{"0#0 <- 0", "1#0 <- 0"}, receive(e, tasks.restored, 2, "L1's tasks"))
	assert.Equal(t, []checkpoint.CheckpointID{1}, e.checkpoints(mc, g.JobID, 1))
	type answer struct {
		res *jobgraph.JobResult
		err error
	}
	pending := make(chan answer, 1)
	go func() {
		res, err := mc.RequestJobResult(ctx, g.JobID)
		pending <- answer{res, err}
	}()

	revoked := time.Now()
	e.Revoke(c)
	l2 := []string{"0#0 <- 1", "1#0 <- 1"} // L2's JobMaster restored checkpoint 1 in both subtasks
	got := receive(e, tasks.restored, 2, "L2's tasks")
	if e.InBubble() {
		// Granted again after RegrantDelay; the TaskExecutor registers with L2's ResourceManager
		// once its retrieval reports it (at most RetrievalDelay later; on embedded at once).
		took := time.Since(revoked)
		assert.GreaterOrEqual(t, took, e.Backend.RegrantDelay, "not before the grant")
		assert.LessOrEqual(t, took, e.Backend.RegrantDelay+e.Backend.RetrievalDelay, "no wait for slots")
	}
	statuses.await(e, jobgraph.JobStatusSuspended)
	statuses.await(e, jobgraph.JobStatusRunning)
	e.Settle()
	assert.Equal(t, jobgraph.JobStatusRunning, e.jobStatus(mc, g.JobID))
	pool, err := mc.SlotPoolStatus(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, 2, pool.Allocated)
	assert.Empty(t, pending, "the result is not the SUSPENDED of L1")
	extra := e.statusesAfterRevoke([]string{"INITIALIZING", "CREATED", "RUNNING", "SUSPENDED", "INITIALIZING", "CREATED", "RUNNING"}, statuses.statuses())
	e.attemptsAfterRevoke(tasks.restored, got, l2, extra)

	require.NoError(t, mc.CancelJob(ctx, g.JobID))
	a := receive(e, pending, 1, "the pending result")[0]
	require.NoError(t, a.err)
	assert.Equal(t, jobgraph.JobStatusCanceled, a.res.Status)
	assert.Empty(t, drainStrings(tasks.restored))
}

// revokedDuringRestartBackoff: checkpoint 3 completed, a task fails, and the client's
// leadership is revoked during the restart backoff (fixed-delay, 10 s; in a bubble 1 s into
// it): the job ends SUSPENDED under L1 with no JobResultStore entry, its plan and checkpoints
// kept; L2 restores checkpoint 3 when granted, not after L1's backoff. In a bubble the status
// transitions are exact: L2's come RegrantDelay after L1's SUSPENDED, and nothing restarts when
// L1's backoff would have ended; in real time their order is asserted.
func revokedDuringRestartBackoff(e *Env) {
	t := e.T
	ctx := context.Background()
	c := e.Open()
	statuses := newStatusLog()
	begin := statuses.begin
	tasks := newCounting()
	mc := e.start(minicluster.Config{HA: c, Registry: tasks.registry(), JobStatusListener: statuses.listen})
	g := countingJob(1)
	g.RestartStrategy = jobgraph.FixedDelayRestart(3, 10*time.Second)
	require.NoError(t, mc.SubmitJob(ctx, g))
	assert.Equal(t, []string{"0#0 <- 0"}, receive(e, tasks.restored, 1, "L1's task"))
	assert.Equal(t, []checkpoint.CheckpointID{1, 2, 3}, e.checkpoints(mc, g.JobID, 3))

	close(tasks.failNow)
	statuses.await(e, jobgraph.JobStatusRestarting)
	failed := time.Now()
	assert.Equal(t, jobgraph.JobStatusRestarting, e.jobStatus(mc, g.JobID))
	if e.InBubble() {
		time.Sleep(time.Second) // within the backoff
	}
	revoked := time.Now()
	e.Revoke(c)
	statuses.await(e, jobgraph.JobStatusSuspended)
	_, err := c.JobResultStore().Get(ctx, g.JobID)
	require.ErrorIs(t, err, ha.ErrNotFound, "SUSPENDED: no JobResultStore entry")
	_, err = c.ExecutionPlanStore().Get(ctx, g.JobID)
	require.NoError(t, err, "the plan is kept")
	got := receive(e, tasks.restored, 1, "L2's task") // L2 restored checkpoint 3, not after L1's backoff
	statuses.await(e, jobgraph.JobStatusRunning)
	e.Settle()
	assert.Equal(t, jobgraph.JobStatusRunning, e.jobStatus(mc, g.JobID))
	var extra bool
	if e.InBubble() {
		d := e.Backend.RegrantDelay
		took := time.Since(failed) // the grant, then the TaskExecutor's registration with L2's RM
		assert.GreaterOrEqual(t, took, time.Second+d)
		assert.LessOrEqual(t, took, time.Second+d+e.Backend.RetrievalDelay)
		f, r := failed.Sub(begin), revoked.Sub(begin)
		extra = e.statusesAfterRevoke([]string{"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s", "RESTARTING at " + f.String(),
			"SUSPENDED at " + r.String(),                                                                               // L1's JobMaster, closed during its backoff
			"INITIALIZING at " + (r + d).String(), "CREATED at " + (r + d).String(), "RUNNING at " + (r + d).String()}, // L2's
			statuses.get())
		at(failed, 20*time.Second) // L1's backoff would have ended by now: nothing restarts
	} else {
		extra = e.statusesAfterRevoke([]string{"INITIALIZING", "CREATED", "RUNNING", "RESTARTING", "SUSPENDED", "INITIALIZING", "CREATED", "RUNNING"},
			statuses.statuses())
	}
	e.attemptsAfterRevoke(tasks.restored, got, []string{"0#0 <- 3"}, extra)
	require.NoError(t, mc.CancelJob(ctx, g.JobID))
	res, err := mc.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	assert.Empty(t, drainStrings(tasks.restored))
}

// duplicateSubmissionKeepsTheJob: J runs under JobID X; a second submission with X (another
// graph, "impostor") is a duplicate that is not globally terminated, J keeps running and its
// stored plan stays J's; after a failover (Backend.Revoke) J is recovered from that plan: L1's
// JobMaster ended SUSPENDED, L2's runs J, and nothing else ever ran.
func duplicateSubmissionKeepsTheJob(e *Env) {
	t := e.T
	ctx := context.Background()
	c := e.Open()
	statuses := newStatusLog()
	tasks := newCounting()
	mc := e.start(minicluster.Config{HA: c, Registry: tasks.registry(), JobStatusListener: statuses.listen})
	j := countingJob(1)
	j.Name = "J"
	require.NoError(t, mc.SubmitJob(ctx, j))
	assert.Equal(t, []string{"0#0 <- 0"}, receive(e, tasks.restored, 1, "J's task"))

	again := countingJob(1)
	again.Name = "impostor"
	again.JobID = j.JobID
	err := mc.SubmitJob(ctx, again)
	var dup *dispatcher.DuplicateJobSubmissionError
	require.ErrorAs(t, err, &dup)
	assert.False(t, dup.GloballyTerminated)
	e.Settle()
	assert.Equal(t, jobgraph.JobStatusRunning, e.jobStatus(mc, j.JobID))
	plan, err := c.ExecutionPlanStore().Get(ctx, j.JobID)
	require.NoError(t, err)
	assert.Equal(t, "J", plan.Name)
	assert.Empty(t, drainStrings(tasks.restored), "nothing of the impostor ran")

	e.Revoke(c)
	statuses.await(e, jobgraph.JobStatusSuspended)
	got := receive(e, tasks.restored, 1, "J's task under L2") // J runs again under L2 (no checkpoint to restore)
	statuses.await(e, jobgraph.JobStatusRunning)
	e.Settle()
	assert.Equal(t, jobgraph.JobStatusRunning, e.jobStatus(mc, j.JobID))
	a, err := mc.RequestJob(ctx, j.JobID)
	require.NoError(t, err)
	assert.Equal(t, "J", a.JobName, "the stored plan, not the impostor's")
	// L1's JobMaster was closed, L2's runs J.
	extra := e.statusesAfterRevoke([]string{"INITIALIZING", "CREATED", "RUNNING", "SUSPENDED", "INITIALIZING", "CREATED", "RUNNING"}, statuses.statuses())
	e.attemptsAfterRevoke(tasks.restored, got, []string{"0#0 <- 0"}, extra)

	require.NoError(t, mc.CancelJob(ctx, j.JobID))
	res, err := mc.RequestJobResult(ctx, j.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	assert.Equal(t, "J", res.Name)
}

// concurrentSubmissions: two submissions of one new JobID at once: exactly one is accepted, the
// other is a duplicate (ErrDuplicateJobSubmission); one JobMaster runs the job — one run of
// statuses, one task attempt — until it is canceled.
func concurrentSubmissions(e *Env) {
	t := e.T
	ctx := context.Background()
	c := e.Open()
	statuses := newStatusLog()
	tasks := newCounting()
	mc := e.start(minicluster.Config{HA: c, Registry: tasks.registry(), JobStatusListener: statuses.listen})
	g := countingJob(1)
	var errs [2]error
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = mc.SubmitJob(ctx, g) })
	}
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		if err == nil {
			accepted++
			continue
		}
		require.ErrorIs(t, err, dispatcher.ErrDuplicateJobSubmission)
	}
	assert.Equal(t, 1, accepted)
	assert.Equal(t, []string{"0#0 <- 0"}, receive(e, tasks.restored, 1, "the job's task"))
	statuses.await(e, jobgraph.JobStatusRunning)
	require.NoError(t, mc.CancelJob(ctx, g.JobID))
	res, err := mc.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	statuses.await(e, jobgraph.JobStatusCanceled)
	assert.Equal(t, []string{"INITIALIZING", "CREATED", "RUNNING", "CANCELLING", "CANCELED"}, statuses.statuses(), "one JobMaster")
	assert.Empty(t, drainStrings(tasks.restored), "one task attempt")
}
