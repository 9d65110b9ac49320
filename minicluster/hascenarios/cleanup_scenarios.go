package hascenarios

import (
	"context"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/minicluster"
)

// cleanupScenarios are the cleanup scenarios (global vs local cleanup, dirty entry first,
// marked clean last, failing steps retried), on a MiniCluster whose HA services are the
// backend's client wrapped in recordingHA: what is cleaned and checked is the backend's own
// data. Owner: helper "hascen".
var cleanupScenarios = []scenario{
	{name: "Cleanup: FINISHED or CANCELED (or FAILED) → global cleanup", run: globallyTerminatedIsCleanedUp},
	{name: "Cleanup: SUSPENDED or Dispatcher close → local only", run: suspendedAndClosedCleanLocally},
	{name: "Cleanup: nothing is cleaned before the dirty entry is written", run: nothingCleanedBeforeTheDirtyEntry},
	{name: "Cleanup: the entry is marked clean only after every cleanup step succeeded; a cleanup step failing twice is retried and then succeeds", run: failingStepIsRetried},
}

// cleanupCluster starts a cluster over a recording wrapper of a new client; in real time the
// cleanup retries start at 20 ms (cleanup-strategy.exponential-delay.initial-backoff), in a
// bubble at Flink's 1 s.
func (e *Env) cleanupCluster(tasks *counting, statuses *statusLog) (*minicluster.MiniCluster, ha.Services, *recordingHA) {
	c := e.Open()
	rec := newRecordingHA(c)
	cfg := minicluster.Config{HA: rec, Registry: tasks.registry(), SavepointDirectory: e.T.TempDir()}
	if statuses != nil {
		cfg.JobStatusListener = statuses.listen
	}
	if !e.InBubble() {
		cfg.CleanupExponentialDelayInitialBackoff = 20 * time.Millisecond
		cfg.CleanupExponentialDelayMaxBackoff = time.Second
	}
	mc := e.start(cfg)
	e.T.Cleanup(func() {
		for _, v := range rec.checkInvariants() {
			e.T.Errorf("cleanup invariant on %s: %s", e.Backend.Name, v)
		}
	})
	return mc, c, rec
}

// checkpointedJob submits a counting job (parallelism 1) retaining 2 checkpoints, waits for its
// task and completes checkpoints 1 and 2; the submission's Put is checked and forgotten.
func (e *Env) checkpointedJob(mc *minicluster.MiniCluster, rec *recordingHA, tasks *counting, name string, restart ...jobgraph.RestartStrategyConfig) *jobgraph.JobGraph {
	e.T.Helper()
	g := countingJob(1)
	g.Name = name
	g.Checkpointing.NumRetained = 2
	for _, r := range restart {
		g.RestartStrategy = r
	}
	require.NoError(e.T, mc.SubmitJob(context.Background(), g))
	assert.Equal(e.T, []string{"0#0 <- 0"}, receive(e, tasks.restored, 1, name+"'s task"))
	assert.Equal(e.T, []checkpoint.CheckpointID{1, 2}, e.checkpoints(mc, g.JobID, 2))
	assert.Equal(e.T, []string{"ExecutionPlanStore.Put"}, rec.recorded(time.Time{}, false))
	return g
}

// haState is what the backend holds of a job, read through the unwrapped client.
type haState struct {
	checkpoints []checkpoint.CheckpointID // retained, oldest first
	next        checkpoint.CheckpointID   // the counter's next ID (1 when it holds nothing)
	plan        bool
	entry       *ha.JobResultEntry
}

func (e *Env) haStateOf(c ha.Services, job jobgraph.JobID) haState {
	e.T.Helper()
	ctx := context.Background()
	var st haState
	store, err := c.CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(job, 2)
	require.NoError(e.T, err)
	for _, cp := range store.All() {
		st.checkpoints = append(st.checkpoints, cp.CheckpointID)
	}
	counter, err := c.CheckpointRecoveryFactory().CreateCheckpointIDCounter(job)
	require.NoError(e.T, err)
	st.next, err = counter.Get()
	require.NoError(e.T, err)
	_, err = c.ExecutionPlanStore().Get(ctx, job)
	if err == nil {
		st.plan = true
	} else {
		require.ErrorIs(e.T, err, ha.ErrNotFound)
	}
	entry, err := c.JobResultStore().Get(ctx, job)
	if err == nil {
		st.entry = &entry
	} else {
		require.ErrorIs(e.T, err, ha.ErrNotFound)
	}
	return st
}

// kept is the state of a checkpointed job (checkpoints 1 and 2) nothing was cleaned of.
var kept = haState{checkpoints: []checkpoint.CheckpointID{1, 2}, next: 3, plan: true}

// assertCleaned asserts the backend holds nothing of the job but its clean entry with status.
func (e *Env) assertCleaned(c ha.Services, job jobgraph.JobID, status jobgraph.JobStatus) {
	e.T.Helper()
	st := e.haStateOf(c, job)
	assert.Empty(e.T, st.checkpoints, "the checkpoints are discarded")
	assert.Equal(e.T, checkpoint.CheckpointID(1), st.next, "the counter is discarded")
	assert.False(e.T, st.plan, "the plan is removed")
	if assert.NotNil(e.T, st.entry, "the JobResultStore keeps the entry") {
		assert.True(e.T, st.entry.Clean, "marked clean")
		assert.Equal(e.T, status, st.entry.Result.Status)
	}
}

// globallyTerminatedIsCleanedUp: a checkpointing job stopped with a savepoint (FINISHED), one
// canceled (CANCELED) and one whose task fails without restarts (FAILED) are each cleaned up
// globally, in exactly Flink's order — the dirty
// JobResult, the checkpoints and their counter discarded, the plan removed, the HA data, and
// only then the entry marked clean — at the instant the job is terminal (in a bubble), and the
// backend holds nothing of the job afterwards but its clean entry.
func globallyTerminatedIsCleanedUp(e *Env) {
	t := e.T
	ctx := context.Background()
	tasks := newCounting()
	mc, c, rec := e.cleanupCluster(tasks, nil)

	finished := e.checkpointedJob(mc, rec, tasks, "finished")
	_, err := mc.StopWithSavepoint(ctx, finished.JobID, "")
	require.NoError(t, err)
	res, err := mc.RequestJobResult(ctx, finished.JobID)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)
	done := time.Now()
	e.Settle()
	assert.Equal(t, globalCleanup(e.timePrefix(0)), rec.recorded(done, e.InBubble()))
	e.assertCleaned(c, finished.JobID, jobgraph.JobStatusFinished)

	canceled := e.checkpointedJob(mc, rec, tasks, "canceled")
	require.NoError(t, mc.CancelJob(ctx, canceled.JobID))
	res, err = mc.RequestJobResult(ctx, canceled.JobID)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	done = time.Now()
	e.Settle()
	assert.Equal(t, globalCleanup(e.timePrefix(0)), rec.recorded(done, e.InBubble()))
	e.assertCleaned(c, canceled.JobID, jobgraph.JobStatusCanceled)

	failed := e.checkpointedJob(mc, rec, tasks, "failed", jobgraph.NoRestart())
	close(tasks.failNow)
	res, err = mc.RequestJobResult(ctx, failed.JobID)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFailed, res.Status)
	done = time.Now()
	e.Settle()
	assert.Equal(t, globalCleanup(e.timePrefix(0)), rec.recorded(done, e.InBubble()))
	e.assertCleaned(c, failed.JobID, jobgraph.JobStatusFailed)
}

// timePrefix is "<d> " in a bubble (recorded with instants), "" in real time.
func (e *Env) timePrefix(d time.Duration) string {
	if e.InBubble() {
		return d.String() + " "
	}
	return ""
}

// suspendedAndClosedCleanLocally: a job SUSPENDED by the revocation of the client's leadership,
// and the same job running when its Dispatcher closes (the cluster closes), are cleaned up
// locally only: no cleanup write reaches the backend, whose plan and checkpoints stay for the
// next leader, without a JobResultStore entry. (The next leader — the same client, granted
// again — restores the latest checkpoint, 2, in between.)
func suspendedAndClosedCleanLocally(e *Env) {
	t := e.T
	tasks := newCounting()
	statuses := newStatusLog()
	mc, c, rec := e.cleanupCluster(tasks, statuses)
	g := e.checkpointedJob(mc, rec, tasks, "suspended")

	e.Revoke(c)
	statuses.await(e, jobgraph.JobStatusSuspended)
	got := receive(e, tasks.restored, 1, "the next leader's task")
	statuses.await(e, jobgraph.JobStatusRunning)
	e.Settle()
	extra := e.statusesAfterRevoke([]string{"INITIALIZING", "CREATED", "RUNNING", "SUSPENDED", "INITIALIZING", "CREATED", "RUNNING"}, statuses.statuses())
	e.attemptsAfterRevoke(tasks.restored, got, []string{"0#0 <- 2"}, extra)
	assert.Empty(t, rec.recorded(time.Time{}, false), "SUSPENDED: no cleanup write")
	assert.Equal(t, kept, e.haStateOf(c, g.JobID), "SUSPENDED: plan and checkpoints kept, no entry")

	require.NoError(t, mc.Close())
	assert.Empty(t, rec.recorded(time.Time{}, false), "a closing Dispatcher: no cleanup write")
	assert.Equal(t, kept, e.haStateOf(c, g.JobID), "a closing Dispatcher: plan and checkpoints kept, no entry")
}

// nothingCleanedBeforeTheDirtyEntry: the job is canceled while CreateDirty fails twice, so the
// entry is written at the third try — in a bubble 1 s + 2 s after the job reached CANCELED —
// and until then the checkpoints, the counter and the plan are all there and no entry; then the
// global cleanup runs. In real time (retries from 20 ms) the order is asserted, and the wrapper
// checks on every removal that the dirty entry was written before it.
func nothingCleanedBeforeTheDirtyEntry(e *Env) {
	t := e.T
	ctx := context.Background()
	tasks := newCounting()
	statuses := newStatusLog()
	mc, c, rec := e.cleanupCluster(tasks, statuses)
	g := e.checkpointedJob(mc, rec, tasks, "dirty first")
	rec.failNext("JobResultStore.CreateDirty", 2)
	answered := make(chan *jobgraph.JobResult, 1)
	go func() {
		res, err := mc.RequestJobResult(ctx, g.JobID)
		assert.NoError(t, err)
		answered <- res
	}()
	require.NoError(t, mc.CancelJob(ctx, g.JobID))
	statuses.await(e, jobgraph.JobStatusCanceled)
	ended := time.Now()
	if e.InBubble() {
		for _, at := range []time.Duration{0, time.Second, 2 * time.Second, 3*time.Second - time.Nanosecond} {
			time.Sleep(at - time.Since(ended))
			e.Settle()
			assert.Equal(t, kept, e.haStateOf(c, g.JobID), "at +%v", at)
			assert.Empty(t, answered, "at +%v: the result is answered once the job is cleaned up", at)
		}
		assert.Equal(t, []string{"0s JobResultStore.CreateDirty (failed)", "1s JobResultStore.CreateDirty (failed)"}, rec.recorded(ended, true))
		time.Sleep(time.Nanosecond) // 3 s
		e.Settle()
		assert.Equal(t, globalCleanup("0s "), rec.recorded(time.Now(), true), "at +3s")
	} else {
		res := receive(e, answered, 1, "the job's result")[0]
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		answered <- res
		assert.Equal(t, append([]string{"JobResultStore.CreateDirty (failed)", "JobResultStore.CreateDirty (failed)"}, globalCleanup("")...),
			rec.recorded(time.Time{}, false))
	}
	res := receive(e, answered, 1, "the job's result")[0]
	assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	e.assertCleaned(c, g.JobID, jobgraph.JobStatusCanceled)
}

// failingStepIsRetried: for each global cleanup step after the dirty entry, a job is canceled
// while that step fails twice: the step is retried on its own — in a bubble at +1 s and +2 s
// after each failure (1 s and 3 s) — then succeeds, the later steps run after it, and the entry
// is marked clean only once every step succeeded: it is dirty while a step retries (asserted at
// 2 s in a bubble; the wrapper checks on every MarkClean that no step is still failing). The
// checkpoint step is one: a failure of the store's or the counter's discard retries both.
func failingStepIsRetried(e *Env) {
	t := e.T
	ctx := context.Background()
	tasks := newCounting()
	statuses := newStatusLog()
	mc, c, rec := e.cleanupCluster(tasks, statuses)
	for i, step := range globalCleanupSteps {
		if i == 0 {
			continue // CreateDirty: nothingCleanedBeforeTheDirtyEntry
		}
		g := e.checkpointedJob(mc, rec, tasks, "retried "+step)
		rec.failNext(step, 2)
		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		statuses.await(e, jobgraph.JobStatusCanceled)
		ended := time.Now()
		if e.InBubble() {
			time.Sleep(2 * time.Second)
			e.Settle()
			st := e.haStateOf(c, g.JobID)
			if assert.NotNil(t, st.entry, "%s: written first", step) {
				assert.False(t, st.entry.Clean, "%s: dirty while it is retried", step)
			}
			time.Sleep(time.Second)
		}
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		e.Settle()

		first := i // the first call of the failing step
		if i <= 2 {
			first = 1 // the checkpoint step: store and counter
		}
		var want []string
		for _, c := range globalCleanupSteps[:first] {
			want = append(want, e.timePrefix(0)+c)
		}
		for _, at := range []time.Duration{0, time.Second} {
			for j, c := range globalCleanupSteps[first : i+1] {
				if first+j == i {
					c += " (failed)"
				}
				want = append(want, e.timePrefix(at)+c)
			}
		}
		for _, c := range globalCleanupSteps[first:] {
			want = append(want, e.timePrefix(3*time.Second)+c)
		}
		assert.Equal(t, want, rec.recorded(ended, e.InBubble()), step)
		e.assertCleaned(c, g.JobID, jobgraph.JobStatusCanceled)
	}
}
