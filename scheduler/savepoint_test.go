package scheduler

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// srcMapSink is src(2) –POINTWISE→ map(2) –ALL_TO_ALL→ sink(1), all pipelined: one region.
func srcMapSink(settings jobgraph.CheckpointingSettings) *jobgraph.JobGraph {
	g := jobgraph.New("src-map-sink", jobgraph.Streaming)
	src := g.AddVertex("src", "noop", 2)
	mp := g.AddVertex("map", "noop", 2)
	sink := g.AddVertex("sink", "noop", 1)
	g.Connect(src, mp, jobgraph.Pointwise, jobgraph.Pipelined)
	g.Connect(mp, sink, jobgraph.AllToAll, jobgraph.Pipelined)
	g.Checkpointing = settings
	g.RestartStrategy = jobgraph.FixedDelayRestart(100, time.Second)
	return g
}

type pathResult struct {
	path string
	err  error
}

// pathDone records each call of a SavepointTrigger's done.
func pathDone(into *[]pathResult) func(string, error) {
	return func(p string, err error) { *into = append(*into, pathResult{p, err}) }
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// reportCanceled reports CANCELED for every task being canceled.
func (h *ckHarness) reportCanceled() {
	h.t.Helper()
	for v := range h.s.ExecutionGraph().Vertices() {
		if v.State() == jobgraph.ExecutionStateCanceling {
			require.True(h.t, h.report(v.JobVertex().Name(), v.SubtaskIndex(), jobgraph.ExecutionStateCanceled))
		}
	}
}

// The scenario: src(2) → map(2) → sink(1), checkpoints 1–8 completed, stop-with-savepoint
// 9, map's second subtask declines it. The stop fails with the decline, savepoint 9's directory
// is gone, the decline fails the job over (Flink's rule for a synchronous savepoint), it restarts
// from checkpoint 8 and ends RUNNING, and periodic checkpoints go on with 10.
func TestStopWithSavepointDeclinedKeepsTheJobRunning(t *testing.T) {
	g := srcMapSink(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCkHarness(t, g, Config{})
	h.start(2)
	for id := checkpoint.CheckpointID(1); id <= 8; id++ {
		h.timers.Advance(10 * time.Millisecond)
		h.ackAll(id)
	}
	dir := t.TempDir()
	var got []pathResult
	n := len(h.ck.calls)
	h.s.StopWithSavepoint(dir, 0, pathDone(&got))
	assert.Equal(t, []string{"trigger 9 src/0#0 @80ms", "trigger 9 src/1#0 @80ms"}, h.callsSince(n))
	assert.Equal(t, checkpoint.SyncSavepoint, h.ck.calls[n].props.Type)
	require.Len(t, entries(t, dir), 1, "savepoint 9's directory")
	h.timers.Advance(50 * time.Millisecond)
	assert.Equal(t, "9@80ms", h.triggers()[8], "no periodic checkpoint while stopping")
	assert.Len(t, h.triggers(), 9)

	for _, a := range []struct {
		name string
		i    int
	}{{"src", 0}, {"src", 1}, {"map", 0}, {"sink", 0}} {
		require.NoError(t, h.ack(a.name, a.i, 9, checkpoint.StateHandle{Data: []byte("x"), Size: 1}))
	}
	assert.Empty(t, got)
	d := len(h.deployer.deployed)
	require.NoError(t, h.decline("map", 1, 9))
	require.Len(t, got, 1)
	assert.Equal(t, "", got[0].path)
	assert.EqualError(t, got[0].err, "checkpoint 9: Checkpoint was declined.")
	assert.ErrorIs(t, got[0].err, checkpoint.CheckpointDeclined)
	assert.Empty(t, entries(t, dir), "savepoint 9 is discarded with its files")
	assert.Equal(t, jobgraph.JobStatusRestarting, h.s.JobStatus(), "the decline fails the job over")

	h.reportCanceled()
	h.timers.Advance(time.Second)
	h.runDeployed()
	assert.Equal(t, jobgraph.JobStatusRunning, h.s.JobStatus())
	assert.Equal(t, []string{
		`src (1/2)#1 <- 8 "src/0@8"`, `src (2/2)#1 <- 8 "src/1@8"`, `map (1/2)#1 <- 8 "map/0@8"`, `map (2/2)#1 <- 8 "map/1@8"`, `sink (1/1)#1 <- 8 "sink/0@8"`,
	}, h.restores(d), "restarted from the latest checkpoint")
	h.timers.Advance(10 * time.Millisecond)
	assert.Equal(t, "10@1.14s", h.triggers()[9], "periodic checkpoints go on")
	h.ackAll(10)
	assert.Equal(t, checkpoint.CheckpointID(10), h.stats().Latest.Completed.ID)
	require.NotNil(t, h.stats().Latest.Failed)
	assert.Equal(t, checkpoint.CheckpointID(9), h.stats().Latest.Failed.ID)
	assert.Len(t, got, 1, "done is called once")
	assert.Equal(t, jobgraph.JobStatusRunning, h.s.JobStatus())
}

// Stop-with-savepoint: the periodic scheduler stops, the synchronous savepoint completes and is
// confirmed, and done gets its path only when the last task FINISHED and the job with it. The
// savepoint outlives the job's checkpoints (which the Dispatcher's cleanup discards once the job
// FINISHED).
func TestStopWithSavepointReturnsThePathOnceTheJobFinished(t *testing.T) {
	g := srcMapSink(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCkHarness(t, g, Config{})
	h.start(2)
	h.timers.Advance(10 * time.Millisecond)
	h.ackAll(1)

	dir := t.TempDir()
	var got []pathResult
	h.s.StopWithSavepoint(dir, 0, pathDone(&got))
	var again []pathResult
	h.s.StopWithSavepoint(dir, 0, pathDone(&again))
	h.s.TriggerSavepoint(dir, 0, pathDone(&again))
	var ckErrs []error
	h.s.TriggerCheckpoint(func(_ checkpoint.CheckpointID, err error) { ckErrs = append(ckErrs, err) })
	require.Len(t, again, 2)
	assert.ErrorIs(t, again[0].err, ErrStopWithSavepointInProgress)
	assert.ErrorIs(t, again[1].err, ErrStopWithSavepointInProgress)
	assert.Equal(t, []error{ErrStopWithSavepointInProgress}, ckErrs)

	n := len(h.ck.calls)
	h.ackAll(2)
	assert.Equal(t, []string{"confirm 2 src/0#0 @10ms", "confirm 2 src/1#0 @10ms", "confirm 2 map/0#0 @10ms", "confirm 2 map/1#0 @10ms", "confirm 2 sink/0#0 @10ms"}, h.callsSince(n))
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{"1@10ms", "2@10ms"}, h.triggers(), "no periodic checkpoint after the stop")

	for _, a := range []struct {
		name string
		i    int
	}{{"src", 0}, {"src", 1}, {"map", 0}, {"map", 1}} {
		require.True(t, h.report(a.name, a.i, jobgraph.ExecutionStateFinished))
		assert.Empty(t, got, "not before the job is FINISHED")
	}
	require.True(t, h.report("sink", 0, jobgraph.ExecutionStateFinished))
	assert.Equal(t, jobgraph.JobStatusFinished, h.s.JobStatus())
	require.Len(t, got, 1)
	require.NoError(t, got[0].err)
	assert.Equal(t, filepath.Join(dir, entries(t, dir)[0]), got[0].path)
	assert.Regexp(t, `^savepoint-`+g.JobID.String()[:6]+`-[0-9a-f]{12}$`, filepath.Base(got[0].path))

	sp, err := checkpoint.LoadSavepoint(got[0].path)
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(2), sp.CheckpointID)
	assert.Equal(t, checkpoint.SyncSavepoint, sp.Properties.Type)
	var states []string
	for _, s := range sp.TaskStates {
		states = append(states, string(s.State.Data))
	}
	assert.Equal(t, []string{"src/0@2", "src/1@2", "map/0@2", "map/1@2", "sink/0@2"}, states)

	var late []pathResult
	h.s.TriggerSavepoint(dir, 0, pathDone(&late))
	require.Len(t, late, 1)
	assert.ErrorIs(t, late[0].err, ErrJobNotRunning)
	assert.EqualError(t, late[0].err, "job is not RUNNING (it is FINISHED)")
}

// A savepoint triggered with a timeout expires at exactly that timeout, with the coordinator's
// timeout error, and its files are removed; the job keeps running.
func TestSavepointExpiresAtExactlyItsTimeout(t *testing.T) {
	g := srcMapSink(jobgraph.CheckpointingSettings{Interval: time.Hour})
	h := newCkHarness(t, g, Config{})
	h.start(2)
	dir := t.TempDir()
	var got []pathResult
	h.s.TriggerSavepoint(dir, 30*time.Second, pathDone(&got))
	h.timers.Advance(30*time.Second - time.Nanosecond)
	assert.Empty(t, got)
	require.Len(t, entries(t, dir), 1)
	h.timers.Advance(time.Nanosecond)
	require.Len(t, got, 1)
	assert.EqualError(t, got[0].err, "checkpoint 1: Checkpoint expired before completing.")
	var timeout interface{ Timeout() bool }
	require.ErrorAs(t, got[0].err, &timeout)
	assert.True(t, timeout.Timeout())
	assert.ErrorIs(t, got[0].err, checkpoint.CheckpointExpired)
	assert.Empty(t, entries(t, dir))
	assert.Equal(t, jobgraph.JobStatusRunning, h.s.JobStatus())
}

// A savepoint between checkpoints is never subsumed by them: with one checkpoint retained,
// checkpoints 3 and 4 replace 1 in the store, and savepoint 2's files stay, also after the job
// was canceled and its checkpoints discarded (as the Dispatcher's global cleanup does).
func TestSavepointIsNeverSubsumedByLaterCheckpoints(t *testing.T) {
	g := srcMapSink(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond, NumRetained: 1})
	h := newCkHarness(t, g, Config{SavepointDirectory: t.TempDir()})
	h.start(2)
	h.timers.Advance(10 * time.Millisecond)
	h.ackAll(1)
	var got []pathResult
	h.s.TriggerSavepoint("", 0, pathDone(&got)) // execution.checkpointing.savepoint-dir
	h.ackAll(2)
	require.Len(t, got, 1)
	require.NoError(t, got[0].err)
	assert.Equal(t, h.s.cfg.SavepointDirectory, filepath.Dir(got[0].path))
	for id := checkpoint.CheckpointID(3); id <= 4; id++ {
		h.timers.Advance(10 * time.Millisecond)
		h.ackAll(id)
	}
	assert.Equal(t, checkpoint.CheckpointID(4), h.stats().Latest.Completed.ID)
	all := h.s.ck.store.All()
	require.Len(t, all, 1)
	assert.Equal(t, checkpoint.CheckpointID(4), all[0].CheckpointID)
	assert.Equal(t, []string{"_metadata"}, entries(t, got[0].path))

	h.s.Cancel()
	h.reportCanceled()
	assert.Equal(t, jobgraph.JobStatusCanceled, h.s.JobStatus())
	require.NoError(t, h.s.ck.store.Shutdown(true))
	sp, err := checkpoint.LoadSavepoint(got[0].path)
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(2), sp.CheckpointID)
}

func TestSavepointRequestErrors(t *testing.T) {
	t.Run("no savepoint directory", func(t *testing.T) {
		h := newCkHarness(t, srcMapSink(jobgraph.CheckpointingSettings{Interval: time.Hour}), Config{})
		h.start(2)
		var got []pathResult
		h.s.TriggerSavepoint("", 0, pathDone(&got))
		h.s.StopWithSavepoint("", 0, pathDone(&got))
		require.Len(t, got, 2)
		for _, r := range got {
			assert.ErrorIs(t, r.err, ErrNoSavepointDirectory)
		}
		assert.Empty(t, h.ck.calls)
		id := []checkpoint.CheckpointID{}
		var errs []error
		h.s.TriggerCheckpoint(func(c checkpoint.CheckpointID, err error) { id, errs = append(id, c), append(errs, err) })
		h.ackAll(1)
		assert.Equal(t, []checkpoint.CheckpointID{1}, id)
		assert.Equal(t, []error{nil}, errs)
	})
	t.Run("not running", func(t *testing.T) {
		h := newCkHarness(t, srcMapSink(jobgraph.CheckpointingSettings{Interval: time.Hour}), Config{})
		var got []pathResult
		h.s.StopWithSavepoint(t.TempDir(), 0, pathDone(&got))
		require.Len(t, got, 1)
		assert.ErrorIs(t, got[0].err, ErrJobNotRunning)
		assert.EqualError(t, got[0].err, "job is not RUNNING (it is CREATED)")
	})
	t.Run("batch job", func(t *testing.T) {
		g := jobgraph.New("batch", jobgraph.Batch)
		g.AddVertex("v", "noop", 1)
		h := newCkHarness(t, g, Config{})
		h.start(1)
		var got []pathResult
		h.s.TriggerSavepoint(t.TempDir(), 0, pathDone(&got))
		var errs []error
		h.s.TriggerCheckpoint(func(_ checkpoint.CheckpointID, err error) { errs = append(errs, err) })
		require.Len(t, got, 1)
		assert.ErrorIs(t, got[0].err, ErrNoCheckpointCoordinator)
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], ErrNoCheckpointCoordinator)
	})
	t.Run("a failed trigger restarts the periodic scheduler", func(t *testing.T) {
		h := newCkHarness(t, srcMapSink(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond}), Config{})
		h.start(2)
		var got []pathResult
		h.s.StopWithSavepoint(t.TempDir(), -time.Second, pathDone(&got))
		require.Len(t, got, 1)
		assert.ErrorIs(t, got[0].err, checkpoint.ErrInvalidConfig)
		h.timers.Advance(10 * time.Millisecond)
		assert.Equal(t, []string{"1@10ms"}, h.triggers())
	})
}

// Flink takes savepoints of a streaming job without periodic checkpoints (its
// StreamingJobGraphGenerator gives every streaming job a CheckpointCoordinator): so do we.
func TestStreamingJobWithoutCheckpointingTakesSavepoints(t *testing.T) {
	h := newCkHarness(t, srcMapSink(jobgraph.CheckpointingSettings{}), Config{})
	h.start(2)
	for _, d := range h.deployer.deployed {
		assert.False(t, d.tdd.CheckpointingEnabled, d.tdd.TaskName)
		assert.True(t, d.tdd.HasCheckpointCoordinator, "%s takes part in savepoints", d.tdd.TaskName)
	}
	h.timers.Advance(time.Hour)
	assert.Empty(t, h.ck.calls, "no periodic checkpoint")
	dir := t.TempDir()
	var got []pathResult
	h.s.TriggerSavepoint(dir, 0, pathDone(&got))
	h.ackAll(1)
	require.Len(t, got, 1)
	require.NoError(t, got[0].err)
	assert.Equal(t, dir, filepath.Dir(got[0].path))
}

// A stop-with-savepoint whose savepoint expires fails with the timeout error, leaves no
// savepoint directory behind, and the job goes on RUNNING with periodic checkpoints: savepoint 3
// was triggered at 20 ms with a 30 s timeout, expires at 30.02 s, and checkpoint 4 follows one
// interval later.
func TestStopWithSavepointThatExpiresKeepsTheJobRunning(t *testing.T) {
	g := srcMapSink(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCkHarness(t, g, Config{})
	h.start(2)
	for id := checkpoint.CheckpointID(1); id <= 2; id++ {
		h.timers.Advance(10 * time.Millisecond)
		h.ackAll(id)
	}
	dir := t.TempDir()
	var got []pathResult
	h.s.StopWithSavepoint(dir, 30*time.Second, pathDone(&got))
	require.NoError(t, h.ack("src", 0, 3, checkpoint.StateHandle{}))
	h.timers.Advance(30*time.Second - time.Nanosecond)
	assert.Empty(t, got, "not expired 1 ns before the timeout")
	h.timers.Advance(time.Nanosecond)
	require.Len(t, got, 1)
	var ce *checkpoint.CheckpointError
	require.ErrorAs(t, got[0].err, &ce)
	assert.Equal(t, checkpoint.CheckpointExpired, ce.Reason)
	assert.True(t, ce.Timeout())
	assert.EqualError(t, got[0].err, "checkpoint 3: Checkpoint expired before completing.")
	assert.Equal(t, "", got[0].path)
	assert.Empty(t, entries(t, dir), "the expired savepoint's directory is removed")
	assert.Equal(t, jobgraph.JobStatusRunning, h.s.JobStatus())
	h.timers.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{"1@10ms", "2@20ms", "3@20ms", "4@30.03s"}, h.triggers())
}
