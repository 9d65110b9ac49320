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
