package checkpoint_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// A job started from savepoint 42 that fails over before any checkpoint of its own completed
// restores 42 again, and the statistics count both restores, as Flink's do (it keeps the
// start savepoint in its store). Once checkpoint 43 is stored, a restart restores 43.
func TestRestartFallsBackToTheStartSavepointAndCountsTheRestore(t *testing.T) {
	a := attempt(jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID(), "v", 0, 0)
	h := newHarness(t, jobgraph.CheckpointingSettings{Interval: 0}, checkpoint.InlineExecutor{}, a)
	_, ok := h.c.RestoreLatestSnapshot()
	assert.False(t, ok, "nothing stored or restored yet")
	assert.Equal(t, int64(0), h.c.Statistics().Counts.Restored)

	sp := checkpoint.CompletedCheckpoint{JobID: h.job, CheckpointID: 42, Properties: checkpoint.CheckpointPropertiesFor(checkpoint.Savepoint), ExternalPointer: "/sp/savepoint-42"}
	require.NoError(t, h.c.RestoreSavepoint(sp))
	assert.Equal(t, int64(1), h.c.Statistics().Counts.Restored)

	cp, ok := h.c.RestoreLatestSnapshot()
	require.True(t, ok)
	assert.Equal(t, checkpoint.CheckpointID(42), cp.CheckpointID)
	assert.Equal(t, int64(2), h.c.Statistics().Counts.Restored)

	h.trigger("manual")
	require.NoError(t, h.ack(43, a, 7))
	cp, ok = h.c.RestoreLatestSnapshot()
	require.True(t, ok)
	assert.Equal(t, checkpoint.CheckpointID(43), cp.CheckpointID)
	assert.Equal(t, int64(3), h.c.Statistics().Counts.Restored)
}
