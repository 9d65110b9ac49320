package scheduler

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/slotpool"
)

// A global failover of a RUNNING streaming source → sink job (BenchmarkRestartAllTasks at
// p = 1,000: 2,000 tasks in 1,000 shared slots) — cancel all, CANCELED reports, restart,
// redeploy into the slots given back, RUNNING reports — allocates per task only what the new
// attempts and their descriptors need: no slice per shared slot for its executions or bulks, no
// boxed payload, one allocation for a task's name, no slices per slot given back; and per shared
// slot no UUID for its request, no closure for the pool's deferred callbacks, no idle timer, list
// element or requirement list for the slot given back and taken again; and per task no new name
// and no descriptor slices of its own (chunks of 256).
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
	assert.LessOrEqual(t, perTask, 3.2, "allocations per task and restart (5.1 before the descriptor cut, 10.1 before the slot pool's, 14.5 before that)")
}

// The default slot request IDs count up from one random ID per scheduler: distinct, never zero,
// and drawn without allocating.
func TestSequentialSlotRequestIDs(t *testing.T) {
	base := slotpool.SlotRequestID{0: 7, 15: 0xfe}
	next := sequentialSlotRequestIDs(base)
	assert.Equal(t, slotpool.SlotRequestID{0: 7, 15: 0xff}, next())
	assert.Equal(t, slotpool.SlotRequestID{0: 7, 14: 1}, next())

	// The last 8 bytes wrap around; the zero ID is skipped.
	next = sequentialSlotRequestIDs(slotpool.SlotRequestID{8: 0xff, 9: 0xff, 10: 0xff, 11: 0xff, 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xfe})
	assert.Equal(t, slotpool.SlotRequestID{8: 0xff, 9: 0xff, 10: 0xff, 11: 0xff, 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff}, next())
	assert.Equal(t, slotpool.SlotRequestID{15: 1}, next())

	seen := map[slotpool.SlotRequestID]bool{}
	next = sequentialSlotRequestIDs(slotpool.NewSlotRequestID())
	for range 1000 {
		id := next()
		require.False(t, seen[id], "%v drawn twice", id)
		seen[id] = true
	}
	assert.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { next() }), "allocations per ID")
}
