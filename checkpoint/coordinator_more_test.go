package checkpoint_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// A task declining a stop-with-savepoint savepoint fails the job at once (Flink's
// CheckpointFailureManager: never counted), and the savepoint is not stored.
func TestSyncSavepointDeclineFailsTheJobAtOnce(t *testing.T) {
	eg, src, mp := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID(), jobgraph.NewJobVertexID()
	s0, m1 := attempt(eg, src, "src", 0, 0), attempt(eg, mp, "map", 1, 0)
	counter := checkpoint.NewStandaloneCheckpointIDCounter()
	require.NoError(t, counter.SetCount(9))
	store, err := checkpoint.NewStandaloneCompletedCheckpointStore(1)
	require.NoError(t, err)
	h := newHarnessOver(t, jobgraph.CheckpointingSettings{TolerableFailedCheckpoints: 10}, nil, store, counter, s0, m1)
	require.NoError(t, h.c.TriggerSynchronousSavepoint(h.jm, h.spDir, 0, h.done("stop")))
	require.NoError(t, h.ack(9, s0, 1))
	require.NoError(t, h.decline(9, m1, checkpoint.CheckpointDeclinedTaskNotReady))
	assert.Equal(t, []string{"job: checkpoint 9: Checkpoint was declined (tasks not ready)"}, h.rec.failJobs)
	assert.Equal(t, []string{"stop failed: checkpoint 9: Checkpoint was declined (tasks not ready)"}, h.results)
	assert.Empty(t, h.store.All(), "savepoint 9 is discarded")
	assert.Empty(t, dirEntries(t, h.spDir), "and so is its directory")
	assert.Equal(t, 0, h.c.FailureManager().ContinuousFailureCount())
}

// A full queue refuses a manual request with TOO_MANY_CHECKPOINT_REQUESTS, and drops a queued
// periodic one for a manual one.
func TestFullQueue(t *testing.T) {
	a := attempt(jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID(), "v", 0, 0)
	h := newHarness(t, jobgraph.CheckpointingSettings{}, &heldExecutor{}, a)
	cfgQueue(t, h, 1)
	h.trigger("a") // triggering
	h.trigger("b") // queued
	h.trigger("c") // refused
	assert.Equal(t, 1, h.c.NumQueuedRequests())
	assert.Equal(t, []string{"c failed: checkpoint: The maximum number of queued checkpoint requests exceeded"}, h.results)
}

func cfgQueue(t *testing.T, h *harness, n int) {
	t.Helper()
	c, err := checkpoint.NewCheckpointCoordinator(checkpoint.Config{
		JobMasterID: h.jm, Timers: h.timers, Clock: h.timers.Now, Tasks: h.rec,
		Plan:  func() (checkpoint.CheckpointPlan, error) { return h.plan, h.planErr },
		Store: h.store, IDCounter: h.counter, Executor: &heldExecutor{}, FailJob: h.rec, MaxQueuedRequests: n,
	})
	require.NoError(t, err)
	h.c = c
}

// Stopping the periodic scheduler aborts pending checkpoints (not counted); starting it again
// resumes periodic triggering from then.
func TestStopAndRestartPeriodicScheduler(t *testing.T) {
	a := attempt(jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID(), "v", 0, 0)
	h := newHarness(t, jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond}, nil, a)
	require.NoError(t, h.c.StartCheckpointScheduler())
	h.timers.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{"1@v/0#0"}, h.rec.triggered)
	h.c.StopCheckpointScheduler()
	assert.Equal(t, 0, h.c.NumberOfPendingCheckpoints())
	h.timers.Advance(time.Second)
	assert.Len(t, h.rec.triggered, 1)
	require.NoError(t, h.c.StartCheckpointScheduler())
	h.timers.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{"1@v/0#0", "2@v/0#0"}, h.rec.triggered)
	assert.Empty(t, h.rec.failJobs)
	st := h.c.Statistics()
	assert.Equal(t, "checkpoint 1: Checkpoint Coordinator is suspending.", st.Latest.Failed.FailureMessage)

	h.c.Shutdown()
	assert.ErrorIs(t, h.c.TriggerCheckpoint(h.jm, nil), checkpoint.ErrShutdown)
	assert.ErrorIs(t, h.ack(2, a, 1), checkpoint.ErrShutdown)
	assert.ErrorIs(t, h.c.StartCheckpointScheduler(), checkpoint.ErrShutdown)
	h.timers.Advance(time.Second)
	assert.Len(t, h.rec.triggered, 2, "nothing triggers after Shutdown")
}

func TestConfigErrorsNameTheField(t *testing.T) {
	_, err := checkpoint.NewCheckpointCoordinator(checkpoint.Config{})
	assert.ErrorIs(t, err, checkpoint.ErrInvalidConfig)
	assert.ErrorContains(t, err, "Config.Timers is nil")
	h := newHarness(t, jobgraph.CheckpointingSettings{}, nil)
	assert.ErrorContains(t, h.c.StartCheckpointScheduler(), "execution.checkpointing.interval is 0")
	assert.ErrorIs(t, h.c.TriggerSavepoint(h.jm, "/sp", -time.Second, nil), checkpoint.ErrInvalidConfig)
}
