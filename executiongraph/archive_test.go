package executiongraph

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

// The exception history the scheduler sets is in every archive, deep-copied: later changes to
// the scheduler's entries (a concurrent failure appended, an entry dropped) do not show in an
// archive taken before. It survives JSON.
func TestArchiveExceptionHistory(t *testing.T) {
	g := jobgraph.New("history", jobgraph.Streaming)
	g.AddVertex("v", "noop", 1)
	eg := build(t, g)
	assert.Nil(t, eg.Archive().ExceptionHistory)
	data, err := json.Marshal(eg.Archive())
	require.NoError(t, err)
	assert.NotContains(t, string(data), "exceptionHistory")

	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	h := []jobgraph.ExceptionHistoryEntry{
		{Message: "boom", Timestamp: at, TaskName: "v (1/1)", Subtask: 0, Location: "te-1",
			Concurrent: []jobgraph.ExceptionHistoryEntry{{Message: "also", Timestamp: at.Add(time.Millisecond), TaskName: "v (1/1)", Subtask: 0}}},
		{Message: "global", Timestamp: at.Add(time.Second), Subtask: -1},
	}
	eg.SetExceptionHistory(h)
	a := eg.Archive()
	want := []jobgraph.ExceptionHistoryEntry{
		{Message: "boom", Timestamp: at, TaskName: "v (1/1)", Subtask: 0, Location: "te-1",
			Concurrent: []jobgraph.ExceptionHistoryEntry{{Message: "also", Timestamp: at.Add(time.Millisecond), TaskName: "v (1/1)", Subtask: 0}}},
		{Message: "global", Timestamp: at.Add(time.Second), Subtask: -1},
	}
	require.Equal(t, want, a.ExceptionHistory)

	h[0].Concurrent[0].Message = "changed"
	h[0].Concurrent = append(h[0].Concurrent, jobgraph.ExceptionHistoryEntry{Message: "later"})
	h[1].Message = "changed"
	eg.SetExceptionHistory(h[1:])
	assert.Equal(t, want, a.ExceptionHistory, "an archive does not change with the scheduler's history")
	assert.Equal(t, []jobgraph.ExceptionHistoryEntry{{Message: "changed", Timestamp: at.Add(time.Second), Subtask: -1}}, eg.Archive().ExceptionHistory)

	data, err = json.Marshal(a)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"exceptionHistory":[{"message":"boom","timestamp":"2024-01-02T03:04:05Z","taskName":"v (1/1)","subtask":0,"location":"te-1","concurrent":[`)
	var decoded ArchivedExecutionGraph
	require.NoError(t, json.Unmarshal(data, &decoded))
	assert.Equal(t, want, decoded.ExceptionHistory)
}

func counterSnapshot(v int) map[string]jobgraph.SerializedAccumulator {
	c := new(jobgraph.IntCounter)
	c.Add(v)
	return map[string]jobgraph.SerializedAccumulator{"n": jobgraph.SerializeAccumulator(c)}
}

// The job's accumulators merge the newest snapshot of every subtask's current attempt: a
// terminal attempt keeps its final snapshot, and a reset vertex's old attempt no longer counts.
func TestAggregateUserAccumulatorsCountsCurrentAttemptsOnly(t *testing.T) {
	g := jobgraph.New("accumulators", jobgraph.Batch)
	g.AddVertex("a", "noop", 2)
	g.AddVertex("b", "noop", 1)
	eg := build(t, g)
	assert.Nil(t, eg.AggregateUserAccumulators())
	assert.Nil(t, eg.Archive().Accumulators)

	a0 := eg.JobVertices()[0].Vertex(0)
	a1 := eg.JobVertices()[0].Vertex(1)
	b0 := eg.JobVertices()[1].Vertex(0)
	require.True(t, a0.CurrentExecution().SetAccumulators(counterSnapshot(1)))
	require.True(t, a1.CurrentExecution().SetAccumulators(counterSnapshot(20)))
	require.True(t, b0.CurrentExecution().SetAccumulators(counterSnapshot(300)))
	require.True(t, a1.CurrentExecution().SetAccumulators(counterSnapshot(2)), "a newer snapshot replaces the older")
	n, err := jobgraph.AccumulatorValue[int](eg.Archive().Accumulators, "n")
	require.NoError(t, err)
	assert.Equal(t, 303, n)

	// b0 fails with its final snapshot: a later heartbeat's cannot replace it.
	e := b0.CurrentExecution()
	for _, s := range []jobgraph.ExecutionState{jobgraph.ExecutionStateScheduled, jobgraph.ExecutionStateDeploying, jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning} {
		require.NoError(t, e.TransitionState(s))
	}
	require.True(t, e.SetAccumulators(counterSnapshot(400)))
	require.NoError(t, e.MarkFailed(assert.AnError))
	assert.False(t, e.SetAccumulators(counterSnapshot(5000)), "terminal")
	assert.Equal(t, counterSnapshot(400), e.UserAccumulators())
	n, err = jobgraph.AccumulatorValue[int](eg.Archive().Accumulators, "n")
	require.NoError(t, err)
	assert.Equal(t, 403, n)

	// b0 restarts: the failed attempt's 400 no longer counts, the new attempt has none yet.
	next, err := b0.ResetForNewExecution()
	require.NoError(t, err)
	assert.Nil(t, next.UserAccumulators())
	a := eg.Archive()
	n, err = jobgraph.AccumulatorValue[int](a.Accumulators, "n")
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	require.True(t, next.SetAccumulators(counterSnapshot(7)))
	n, err = jobgraph.AccumulatorValue[int](eg.Archive().Accumulators, "n")
	require.NoError(t, err)
	assert.Equal(t, 10, n)
	n, err = jobgraph.AccumulatorValue[int](a.Accumulators, "n")
	require.NoError(t, err)
	assert.Equal(t, 3, n, "an archive does not change with the graph")

	data, err := json.Marshal(a)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"accumulators":{"n":{"kind":"IntCounter","value":3}}`)
}
