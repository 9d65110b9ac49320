package scheduler

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

// A global failover of a RUNNING streaming source → sink job (BenchmarkRestartAllTasks at
// p = 1,000: 2,000 tasks in 1,000 shared slots) — cancel all, CANCELED reports, restart,
// redeploy into the slots given back, RUNNING reports — allocates per task only what the new
// attempts and their descriptors need: no slice per shared slot for its executions or bulks, no
// boxed payload, one allocation for a task's name, no slices per slot given back.
func TestRestartAllTasksAllocationsPerTask(t *testing.T) {
	env := newBenchEnv(t, benchCase{name: "streaming-1000", p: 1000, streaming: true})
	s := env.newScheduler(t)
	s.StartScheduling()
	env.offerAll(t)
	running := append(env.vertices(env.source), env.vertices(env.sink)...)
	env.report(t, running, jobgraph.ExecutionStateRunning)
	cause := errors.New("global failure")
	allocs := testing.AllocsPerRun(5, func() {
		s.HandleGlobalFailure(cause)
		env.report(t, running, jobgraph.ExecutionStateCanceled)
		env.timers.Advance(0)
		env.report(t, running, jobgraph.ExecutionStateRunning)
	})
	require.Equal(t, jobgraph.JobStatusRunning, s.JobStatus())
	perTask := allocs / float64(len(running))
	t.Logf("%.0f allocations per restart, %.2f per task", allocs, perTask)
	assert.LessOrEqual(t, perTask, 10.5, "allocations per task and restart (14.5 before)")
}
