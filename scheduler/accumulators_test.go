package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

func counter(v int) map[string]jobgraph.SerializedAccumulator {
	c := new(jobgraph.IntCounter)
	c.Add(v)
	return map[string]jobgraph.SerializedAccumulator{"n": jobgraph.SerializeAccumulator(c)}
}

func (h *harness) accumulated() int {
	h.t.Helper()
	n, err := jobgraph.AccumulatorValue[int](h.s.Archive().Accumulators, "n")
	require.NoError(h.t, err)
	return n
}

// Heartbeat snapshots and the final state's snapshot become the current attempt's; a failed
// attempt's values stop counting once its vertex restarts, and its late heartbeat is dropped;
// the JobMaster's terminal archive carries the merged values. Flink: Execution.setAccumulators,
// DefaultExecutionGraph.updateAccumulators.
func TestAccumulatorsCountOnlyTheCurrentAttempts(t *testing.T) {
	g := jobgraph.New("accumulators", jobgraph.Batch)
	g.AddVertex("v", "noop", 2)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	require.Equal(t, 2, h.offer(te1, 2))
	h.runDeployed()
	v0, v1 := h.exec("v", 0).AttemptID(), h.exec("v", 1).AttemptID()
	heartbeat := func(a jobgraph.ExecutionAttemptID, v int) bool {
		return h.s.UpdateAccumulators(rpc.AccumulatorSnapshot{JobID: g.JobID, ExecutionAttemptID: a, Accumulators: counter(v)})
	}

	require.True(t, heartbeat(v0, 100))
	require.True(t, heartbeat(v1, 2))
	assert.Equal(t, 102, h.accumulated())
	assert.False(t, h.s.UpdateAccumulators(rpc.AccumulatorSnapshot{JobID: jobgraph.NewJobID(), ExecutionAttemptID: v0, Accumulators: counter(1)}), "another job")

	// v0 fails with its final values; they count until the restart, then no longer.
	require.True(t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: v0, State: jobgraph.ExecutionStateFailed, Failure: rpc.Failure(errBoom), Accumulators: counter(150)}))
	assert.Equal(t, 152, h.accumulated())
	assert.False(t, heartbeat(v0, 999), "a terminal attempt keeps its final values")
	h.timers.Advance(time.Second)
	assert.Equal(t, 2, h.accumulated(), "the failed attempt's values are discarded")
	assert.False(t, heartbeat(v0, 999), "a superseded attempt's heartbeat is dropped")
	assert.Equal(t, 2, h.accumulated())

	require.Equal(t, "DEPLOYING#1", h.stateOf("v", 0), "into the slot the failed attempt gave back")
	h.runDeployed()
	next := h.exec("v", 0).AttemptID()
	require.True(t, heartbeat(next, 1))
	require.True(t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: next, State: jobgraph.ExecutionStateFinished, Accumulators: counter(1)}))
	require.True(t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: v1, State: jobgraph.ExecutionStateFinished, Accumulators: counter(2)}))
	require.Equal(t, jobgraph.JobStatusFinished, h.s.JobStatus())
	require.Len(t, h.terminal, 1)
	n, err := jobgraph.AccumulatorValue[int](h.terminal[0].archived.Accumulators, "n")
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.False(t, heartbeat(next, 50), "a terminal job takes no snapshots")
}
