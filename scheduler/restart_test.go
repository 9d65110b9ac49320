package scheduler

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/slotpool"
)

const te3 jobgraph.ResourceID = "taskexecutor-3"

// exponentialForTests is exponential-delay with initial 1 s, multiplier 2, 3 attempts, no jitter.
func exponentialForTests() jobgraph.RestartStrategyConfig {
	c := jobgraph.ExponentialDelayRestart()
	c.ExponentialDelayInitialBackoff = time.Second
	c.ExponentialDelayBackoffMultiplier = 2
	c.ExponentialDelayAttemptsBeforeResetBackoff = 3
	c.ExponentialDelayJitterFactor = 0
	return c
}

// stateOf is the state of the current execution of name/i, with its attempt number.
func (h *harness) stateOf(name string, i int) string {
	e := h.exec(name, i)
	return fmt.Sprintf("%s#%d", e.State(), e.AttemptNumber())
}

// Region failover before any slot arrived: v1(2) –POINTWISE PIPELINED→ v2(2) is two regions
// {v1₀, v2₀} and {v1₁, v2₁}. v1₀ fails: it is FAILED, its partner v2₀ CANCELED (nothing was
// deployed), the other pair stays SCHEDULED with its 2 slot requests pending, and exactly v1₀ and
// v2₀ restart after the backoff. Flink: DefaultSchedulerTest.restartFailedTask with
// RestartPipelinedRegionFailoverStrategy.
func TestRegionFailoverRestartsOnlyTheFailedRegion(t *testing.T) {
	g := jobgraph.New("regions", jobgraph.Streaming)
	// Every subtask in a slot of its own (no slot sharing): the slot counts below are per subtask.
	v1 := g.AddVertex("v1", "noop", 2).WithoutSlotSharingGroup()
	v2 := g.AddVertex("v2", "noop", 2).WithoutSlotSharingGroup()
	g.Connect(v1, v2, jobgraph.Pointwise, jobgraph.Pipelined)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
	h := newHarness(t, g, Config{})
	t0 := h.timers.Now()
	h.s.StartScheduling()
	require.Equal(t, 4, h.pool.NumPendingRequests())

	require.True(t, h.fail("v1", 0, errBoom))
	assert.Equal(t, "FAILED#0", h.stateOf("v1", 0))
	assert.Equal(t, "CANCELED#0", h.stateOf("v2", 0))
	assert.Equal(t, "SCHEDULED#0", h.stateOf("v1", 1))
	assert.Equal(t, "SCHEDULED#0", h.stateOf("v2", 1))
	assert.Equal(t, 2, h.pool.NumPendingRequests())
	assert.Equal(t, jobgraph.JobStatusRestarting, h.s.JobStatus())
	assert.Empty(t, h.deployer.canceled, "nothing was deployed")

	h.timers.Advance(time.Second - time.Nanosecond)
	assert.Equal(t, "FAILED#0", h.stateOf("v1", 0))
	h.timers.Advance(time.Nanosecond)
	assert.Equal(t, "SCHEDULED#1", h.stateOf("v1", 0))
	assert.Equal(t, "SCHEDULED#1", h.stateOf("v2", 0))
	assert.Equal(t, "SCHEDULED#0", h.stateOf("v1", 1))
	assert.Equal(t, "SCHEDULED#0", h.stateOf("v2", 1))
	assert.Equal(t, 4, h.pool.NumPendingRequests())
	assert.Equal(t, []string{"CREATED@0s", "RUNNING@0s", "RESTARTING@0s", "RUNNING@1s"}, h.statusesSince(0, t0))

	require.Equal(t, 4, h.offer(te1, 4))
	assert.Equal(t, []string{"v1 (2/2)#0", "v2 (2/2)#0", "v1 (1/2)#1", "v2 (1/2)#1"}, h.deployedSince(0))
	hist := h.s.ExceptionHistory()
	require.Len(t, hist, 1)
	assert.Equal(t, "v1 (1/2)", hist[0].TaskName)
	assert.Equal(t, 0, hist[0].Subtask)
	assert.Empty(t, hist[0].Location, "never deployed")
	assert.Equal(t, t0, hist[0].Timestamp)
	assert.Empty(t, hist[0].Concurrent)
}

// Two independent regions A = a1 → a2 (pipelined) and B = b; fixed-delay, 2 attempts, 10 s. A's
// task fails three times: each restart comes exactly 10 s after its failure and redeploys only A;
// B never restarts; the third failure fails the job. Flink: FixedDelayRestartBackoffTimeStrategy
// under RestartPipelinedRegionFailoverStrategy.
func TestFixedDelayRestartsOnlyTheFailedRegion(t *testing.T) {
	g := jobgraph.New("fixed", jobgraph.Streaming)
	// Every subtask in a slot of its own (no slot sharing): the slot counts below are per subtask.
	a1 := g.AddVertex("a1", "noop", 1).WithoutSlotSharingGroup()
	a2 := g.AddVertex("a2", "noop", 1).WithoutSlotSharingGroup()
	g.AddVertex("b", "noop", 1).WithoutSlotSharingGroup()
	g.Connect(a1, a2, jobgraph.Pointwise, jobgraph.Pipelined)
	g.RestartStrategy = jobgraph.FixedDelayRestart(2, 10*time.Second)
	h := newHarness(t, g, Config{})
	t0 := h.timers.Now()
	h.s.StartScheduling()
	require.Equal(t, 3, h.offer(te1, 3))
	assert.Equal(t, []string{"a1 (1/1)#0", "a2 (1/1)#0", "b (1/1)#0"}, h.deployedSince(0))
	h.runDeployed()

	for attempt := range 2 {
		h.timers.Advance(5 * time.Second)
		failedAt := h.timers.Now()
		deployed, canceled := len(h.deployer.deployed), len(h.deployer.canceled)
		require.True(t, h.fail("a1", 0, errBoom))
		assert.Equal(t, jobgraph.JobStatusRestarting, h.s.JobStatus())
		assert.Equal(t, []cancelCall{{h.exec("a2", 0).AttemptID(), te1}}, h.deployer.canceled[canceled:])
		h.timers.Advance(time.Second)
		require.True(t, h.report("a2", 0, jobgraph.ExecutionStateCanceled))
		h.timers.Advance(9*time.Second - time.Nanosecond)
		assert.Len(t, h.deployer.deployed, deployed, "attempt %d: nothing before 10 s", attempt)
		h.timers.Advance(time.Nanosecond)
		assert.Equal(t, 10*time.Second, h.timers.Now().Sub(failedAt))
		want := []string{fmt.Sprintf("a1 (1/1)#%d", attempt+1), fmt.Sprintf("a2 (1/1)#%d", attempt+1)}
		assert.Equal(t, want, h.deployedSince(deployed), "attempt %d", attempt)
		assert.Equal(t, jobgraph.JobStatusRunning, h.s.JobStatus())
		h.runDeployed()
		assert.Equal(t, "RUNNING#0", h.stateOf("b", 0))
	}

	h.timers.Advance(5 * time.Second)
	require.True(t, h.fail("a1", 0, errBoom))
	assert.Equal(t, jobgraph.JobStatusFailing, h.s.JobStatus())
	require.True(t, h.report("a2", 0, jobgraph.ExecutionStateCanceled))
	require.True(t, h.report("b", 0, jobgraph.ExecutionStateCanceled))
	assert.Equal(t, jobgraph.JobStatusFailed, h.s.JobStatus())
	assert.Equal(t, []string{
		"CREATED@0s", "RUNNING@0s",
		"RESTARTING@5s", "RUNNING@15s",
		"RESTARTING@20s", "RUNNING@30s",
		"FAILING@35s", "FAILED@35s",
	}, h.statusesSince(0, t0))
	cause := h.s.RootCause()
	require.ErrorIs(t, cause, errBoom)
	assert.EqualError(t, cause, "recovery is suppressed by FixedDelayRestartBackoffTimeStrategy(attempts=2, delay=10s, failures=3): task a1 (1/1) (attempt 2) on taskexecutor-1 failed: boom")
	assert.Len(t, h.deployer.deployed, 7, "b was deployed once")
	require.Len(t, h.terminal, 1)
	assert.Same(t, cause, h.terminal[0].cause)
	hist := h.terminal[0].archived.ExceptionHistory
	require.Len(t, hist, 3)
	for i, e := range hist {
		assert.Equal(t, jobgraph.ExceptionHistoryEntry{
			Message:   fmt.Sprintf("task a1 (1/1) (attempt %d) on taskexecutor-1 failed: boom", i),
			Timestamp: t0.Add(time.Duration(5+15*i) * time.Second),
			TaskName:  "a1 (1/1)",
			Subtask:   0,
			Location:  te1,
		}, e)
	}
	assert.Equal(t, 0, h.pool.NumAllocatedSlots())
}

// A restart waits for the cancellation of the tasks it restarts, however long the backoff is.
// Flink: cancelFuture.thenRunAsync(restartTasks).
func TestRestartWaitsForCanceledTasks(t *testing.T) {
	g := jobgraph.New("wait", jobgraph.Streaming)
	a := g.AddVertex("a", "noop", 1)
	b := g.AddVertex("b", "noop", 1)
	g.Connect(a, b, jobgraph.Pointwise, jobgraph.Pipelined)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 2)
	h.runDeployed()
	require.True(t, h.fail("a", 0, errBoom))
	h.timers.Advance(30 * time.Second) // below slot.idle.timeout: a's freed slot stays in the pool
	assert.Len(t, h.deployer.deployed, 2, "b is still CANCELING")
	assert.Equal(t, jobgraph.JobStatusRestarting, h.s.JobStatus())
	require.True(t, h.report("b", 0, jobgraph.ExecutionStateCanceled))
	assert.Equal(t, []string{"a (1/1)#1", "b (1/1)#1"}, h.deployedSince(2), "restarted at once")
	assert.Equal(t, jobgraph.JobStatusRunning, h.s.JobStatus())
}

// Four tasks of one restart fail within 50 ms, as a lost TaskExecutor makes them: one restart
// attempt, one restart 1 s after the first failure, the other three failures grouped under it
// (exception history: 1 entry, 3 concurrent). exponential-delay: initial 1 s, multiplier 2,
// 3 attempts, no jitter; that only one attempt was counted shows in the later backoffs.
func TestConcurrentFailuresOfOneRestart(t *testing.T) {
	const ms = time.Millisecond
	build := func(rt jobgraph.ResultPartitionType) *jobgraph.JobGraph {
		g := jobgraph.New("concurrent", jobgraph.Streaming)
		// Every subtask in a slot of its own (no slot sharing): the slot counts below are per subtask.
		v1 := g.AddVertex("v1", "noop", 4).WithoutSlotSharingGroup()
		v2 := g.AddVertex("v2", "noop", 4).WithoutSlotSharingGroup()
		g.Connect(v1, v2, jobgraph.AllToAll, rt)
		g.RestartStrategy = exponentialForTests()
		return g
	}
	concurrent := func(t0 time.Time, causes []error, at []time.Duration, location jobgraph.ResourceID) []jobgraph.ExceptionHistoryEntry {
		var out []jobgraph.ExceptionHistoryEntry
		for i := 1; i < 4; i++ {
			out = append(out, jobgraph.ExceptionHistoryEntry{
				Message:   fmt.Sprintf("task v1 (%d/4) (attempt 0) on %s failed: %v", i+1, location, causes[i]),
				Timestamp: t0.Add(at[i]), TaskName: fmt.Sprintf("v1 (%d/4)", i+1), Subtask: i, Location: location,
			})
		}
		return out
	}
	causes := []error{errors.New("f0"), errors.New("f1"), errors.New("f2"), errors.New("f3")}
	at := []time.Duration{0, 10 * ms, 30 * ms, 50 * ms}

	// One region (ALL_TO_ALL PIPELINED): the first failure cancels the other seven tasks; the
	// three that then report FAILED are concurrent failures of that restart.
	t.Run("pipelined: failures of canceled tasks", func(t *testing.T) {
		h := newHarness(t, build(jobgraph.Pipelined), Config{})
		h.s.StartScheduling()
		require.Equal(t, 4, h.offer(te1, 4)) // the v1 requests are the oldest
		require.Equal(t, 4, h.offer(te2, 4))
		h.runDeployed()
		t0 := h.timers.Now()
		for i := range 4 {
			h.timers.Advance(at[i] - (h.timers.Now().Sub(t0)))
			require.True(t, h.fail("v1", i, causes[i]))
		}
		assert.Equal(t, map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateFailed: 4, jobgraph.ExecutionStateCanceling: 4}, h.countStates())
		assert.Len(t, h.deployer.canceled, 7)
		h.timers.Advance(10 * ms)
		for i := range 4 {
			require.True(t, h.report("v2", i, jobgraph.ExecutionStateCanceled))
		}
		h.timers.Advance(time.Second - 60*ms - time.Nanosecond)
		assert.Len(t, h.deployer.deployed, 8)
		h.timers.Advance(time.Nanosecond)
		assert.Equal(t, []string{"v1 (1/4)#1", "v1 (2/4)#1", "v1 (3/4)#1", "v1 (4/4)#1", "v2 (1/4)#1", "v2 (2/4)#1", "v2 (3/4)#1", "v2 (4/4)#1"}, h.deployedSince(8))
		assert.Equal(t, []string{"RESTARTING@0s", "RUNNING@1s"}, h.statusesSince(2, t0))
		hist := h.s.ExceptionHistory()
		require.Len(t, hist, 1)
		assert.Equal(t, "task v1 (1/4) (attempt 0) on taskexecutor-1 failed: f0", hist[0].Message)
		assert.Equal(t, concurrent(t0, causes, at, te1), hist[0].Concurrent)

		// Attempt 2 waits 2 s, attempt 3 waits 4 s, a fourth attempt fails the job.
		h.runDeployed()
		for _, backoff := range []time.Duration{2 * time.Second, 4 * time.Second} {
			h.timers.Advance(time.Second) // a failure at the restart instant would merge into it
			n := len(h.deployer.deployed)
			require.True(t, h.fail("v1", 0, errBoom))
			for i := range 4 {
				h.report("v1", i, jobgraph.ExecutionStateCanceled)
				h.report("v2", i, jobgraph.ExecutionStateCanceled)
			}
			h.timers.Advance(backoff - time.Nanosecond)
			require.Equal(t, n, len(h.deployer.deployed), "backoff %v", backoff)
			h.timers.Advance(time.Nanosecond)
			require.Equal(t, n+8, len(h.deployer.deployed), "backoff %v", backoff)
			h.runDeployed()
		}
		h.timers.Advance(time.Second)
		require.True(t, h.fail("v1", 0, errBoom))
		assert.Equal(t, jobgraph.JobStatusFailing, h.s.JobStatus())
		assert.ErrorIs(t, h.s.RootCause(), errBoom)
		assert.Len(t, h.s.ExceptionHistory(), 4)
	})

	// Four regions (ALL_TO_ALL BLOCKING: every subtask is its own region): the failures are in
	// different regions, and exponential-delay merges the three later ones into the first
	// attempt; their restarts come at the same instant as the first one's.
	t.Run("blocking: failures merged by exponential-delay", func(t *testing.T) {
		h := newHarness(t, build(jobgraph.Blocking), Config{})
		h.s.StartScheduling()
		require.Equal(t, 4, h.offer(te1, 4))
		h.runDeployed()
		t0 := h.timers.Now()
		for i := range 4 {
			h.timers.Advance(at[i] - (h.timers.Now().Sub(t0)))
			require.True(t, h.fail("v1", i, causes[i]))
		}
		assert.Equal(t, map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateFailed: 4, jobgraph.ExecutionStateCanceled: 4}, h.countStates())
		h.timers.Advance(time.Second - 50*ms - time.Nanosecond)
		assert.Len(t, h.deployer.deployed, 4)
		h.timers.Advance(time.Nanosecond)
		assert.Equal(t, []string{"v1 (1/4)#1", "v1 (2/4)#1", "v1 (3/4)#1", "v1 (4/4)#1"}, h.deployedSince(4))
		assert.Equal(t, "CREATED#1", h.stateOf("v2", 0), "reset with the last restart, waits for its inputs")
		assert.Equal(t, []string{"RESTARTING@0s", "RUNNING@1s"}, h.statusesSince(2, t0))
		hist := h.s.ExceptionHistory()
		require.Len(t, hist, 1)
		assert.Equal(t, "task v1 (1/4) (attempt 0) on taskexecutor-1 failed: f0", hist[0].Message)
		assert.Equal(t, concurrent(t0, causes, at, te1), hist[0].Concurrent)

		// The job still runs to the end.
		for i := range 4 {
			h.finish("v1", i)
		}
		h.runDeployed()
		for i := range 4 {
			h.finish("v2", i)
		}
		assert.Equal(t, jobgraph.JobStatusFinished, h.s.JobStatus())
	})

	// The TaskExecutor running v1 is lost: its four slots go at once.
	t.Run("TaskExecutor lost", func(t *testing.T) {
		h := newHarness(t, build(jobgraph.Pipelined), Config{})
		h.s.StartScheduling()
		require.Equal(t, 4, h.offer(te1, 4))
		require.Equal(t, 4, h.offer(te2, 4))
		h.runDeployed()
		t0 := h.timers.Now()
		gone := errors.New("heartbeat of TaskExecutor taskexecutor-1 timed out")
		h.s.PartitionsLost(te1)
		require.Len(t, h.pool.ReleaseSlots(te1, gone), 4)
		assert.Equal(t, map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateFailed: 4, jobgraph.ExecutionStateCanceling: 4}, h.countStates())
		for i := range 4 {
			require.True(t, h.report("v2", i, jobgraph.ExecutionStateCanceled))
		}
		h.timers.Advance(time.Second)
		assert.Len(t, h.deployer.deployed, 8, "te2's four slots are not enough for the region")
		require.Equal(t, 4, h.offer(te3, 4))
		assert.Len(t, h.deployer.deployed, 16)
		hist := h.s.ExceptionHistory()
		require.Len(t, hist, 1)
		assert.Equal(t, "v1 (1/4)", hist[0].TaskName)
		assert.Equal(t, te1, hist[0].Location)
		require.ErrorIs(t, h.exec("v1", 0).Vertex().PriorExecutions()[0].FailureCause(), gone)
		require.Len(t, hist[0].Concurrent, 3)
		for i, c := range hist[0].Concurrent {
			assert.Equal(t, fmt.Sprintf("v1 (%d/4)", i+2), c.TaskName)
			assert.Equal(t, t0, c.Timestamp)
			assert.Contains(t, c.Message, "lost its slot")
			assert.Contains(t, c.Message, gone.Error())
		}
	})
}

// A FAILED report of a task canceled for a restart belongs to that restart: the task is FAILED,
// the failure is a concurrent exception, and no attempt of the restart strategy is spent on it
// (fixed-delay with 1 attempt still restarts).
func TestFailureOfTaskCanceledForRestartIsConcurrent(t *testing.T) {
	g := jobgraph.New("concurrent", jobgraph.Streaming)
	a := g.AddVertex("a", "noop", 1)
	b := g.AddVertex("b", "noop", 1)
	g.Connect(a, b, jobgraph.Pointwise, jobgraph.Pipelined)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 2)
	h.runDeployed()
	t0 := h.timers.Now()
	require.True(t, h.fail("a", 0, errBoom))
	h.timers.Advance(100 * time.Millisecond)
	require.True(t, h.fail("b", 0, errors.New("interrupted")))
	assert.Equal(t, "FAILED#0", h.stateOf("b", 0))
	h.timers.Advance(900 * time.Millisecond)
	assert.Equal(t, []string{"a (1/1)#1", "b (1/1)#1"}, h.deployedSince(2))
	assert.Equal(t, jobgraph.JobStatusRunning, h.s.JobStatus())
	assert.Equal(t, []jobgraph.ExceptionHistoryEntry{{
		Message: "task a (1/1) (attempt 0) on taskexecutor-1 failed: boom", Timestamp: t0, TaskName: "a (1/1)", Location: te1,
		Concurrent: []jobgraph.ExceptionHistoryEntry{{
			Message:   "task b (1/1) (attempt 0) on taskexecutor-1 failed: interrupted",
			Timestamp: t0.Add(100 * time.Millisecond), TaskName: "b (1/1)", Location: te1,
		}},
	}}, h.s.ExceptionHistory())
}

// No slot within slot.request.timeout is a failure of the task waiting for it, handled like any
// other: without restarts the job FAILS with a no-resource-available root cause, the running task
// is canceled, and no slot is held afterwards; with restarts only the starved region restarts,
// until the attempts run out.
func TestSlotRequestTimeoutGoesThroughTheFailureHandler(t *testing.T) {
	const timeout = 100 * time.Millisecond
	g := jobgraph.New("starved", jobgraph.Streaming)
	g.AddVertex("v1", "noop", 2)

	t.Run("no restarts", func(t *testing.T) {
		h := newHarness(t, g, Config{SlotRequestTimeout: timeout})
		h.s.StartScheduling()
		require.Equal(t, 1, h.offer(te1, 1))
		h.runDeployed()
		h.timers.Advance(timeout)
		assert.Equal(t, jobgraph.JobStatusFailing, h.s.JobStatus())
		assert.Equal(t, "CANCELING#0", h.stateOf("v1", 0))
		require.True(t, h.report("v1", 0, jobgraph.ExecutionStateCanceled))
		assert.Equal(t, jobgraph.JobStatusFailed, h.s.JobStatus())
		require.ErrorIs(t, h.s.RootCause(), slotpool.ErrNoResourceAvailable)
		assert.Equal(t, 0, h.pool.NumAllocatedSlots())
		assert.Equal(t, 0, h.pool.NumPendingRequests())
		assert.Empty(t, h.pool.Requirements())
		require.Len(t, h.terminal, 1)
		assert.ErrorIs(t, h.terminal[0].cause, slotpool.ErrNoResourceAvailable)
		hist := h.terminal[0].archived.ExceptionHistory
		require.Len(t, hist, 1)
		assert.Equal(t, "v1 (2/2)", hist[0].TaskName)
		assert.Empty(t, hist[0].Location)
	})
	t.Run("fixed-delay 1 attempt", func(t *testing.T) {
		g := *g
		g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
		h := newHarness(t, &g, Config{SlotRequestTimeout: timeout})
		t0 := h.timers.Now()
		h.s.StartScheduling()
		require.Equal(t, 1, h.offer(te1, 1))
		h.runDeployed()
		h.timers.Advance(timeout)
		assert.Equal(t, jobgraph.JobStatusRestarting, h.s.JobStatus())
		assert.Equal(t, 0, h.pool.NumPendingRequests())
		h.timers.Advance(time.Second)
		assert.Equal(t, "SCHEDULED#1", h.stateOf("v1", 1))
		assert.Equal(t, "RUNNING#0", h.stateOf("v1", 0))
		assert.Equal(t, 1, h.pool.NumPendingRequests())
		h.timers.Advance(timeout)
		assert.Equal(t, jobgraph.JobStatusFailing, h.s.JobStatus())
		require.True(t, h.report("v1", 0, jobgraph.ExecutionStateCanceled))
		assert.Equal(t, []string{"CREATED@0s", "RUNNING@0s", "RESTARTING@100ms", "RUNNING@1.1s", "FAILING@1.2s", "FAILED@1.2s"}, h.statusesSince(0, t0))
		require.ErrorIs(t, h.s.RootCause(), slotpool.ErrNoResourceAvailable)
		assert.Equal(t, 0, h.pool.NumAllocatedSlots())
		assert.Equal(t, 0, h.pool.NumPendingRequests())
		assert.Len(t, h.s.ExceptionHistory(), 2)
	})
}

// A failure fails the job (no restarts), and a cancel arrives while the other tasks are being
// canceled: FAILING → CANCELLING, and CANCELED once the last task is. Flink:
// DefaultExecutionGraph.cancel from FAILING.
func TestCancelWhileFailing(t *testing.T) {
	g := jobgraph.New("cancel-failing", jobgraph.Streaming)
	v1 := g.AddVertex("v1", "noop", 2)
	v2 := g.AddVertex("v2", "noop", 2)
	g.Connect(v1, v2, jobgraph.AllToAll, jobgraph.Pipelined)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 4)
	h.runDeployed()
	require.True(t, h.fail("v2", 0, errBoom))
	assert.Equal(t, jobgraph.JobStatusFailing, h.s.JobStatus())
	require.True(t, h.report("v1", 0, jobgraph.ExecutionStateCanceled))
	h.s.Cancel()
	assert.Equal(t, jobgraph.JobStatusCancelling, h.s.JobStatus())
	require.True(t, h.report("v1", 1, jobgraph.ExecutionStateCanceled))
	assert.Equal(t, jobgraph.JobStatusCancelling, h.s.JobStatus())
	require.True(t, h.report("v2", 1, jobgraph.ExecutionStateCanceled))
	assert.Equal(t, jobgraph.JobStatusCanceled, h.s.JobStatus())
	assert.Equal(t, []jobgraph.JobStatus{jobgraph.JobStatusCreated, jobgraph.JobStatusRunning, jobgraph.JobStatusFailing,
		jobgraph.JobStatusCancelling, jobgraph.JobStatusCanceled}, h.statusList())
	require.Len(t, h.terminal, 1)
	assert.Equal(t, jobgraph.JobStatusCanceled, h.terminal[0].archived.Status)
	assert.ErrorIs(t, h.terminal[0].cause, errBoom, "the failure stays the root cause")
	assert.Len(t, h.terminal[0].archived.ExceptionHistory, 1)
	assert.Equal(t, 0, h.pool.NumAllocatedSlots())
}

// Parallelism 2, each subtask its own region; both fail one after the other (fixed-delay,
// 2 attempts, 1 s): RESTARTING after the first failure, still RESTARTING after the first restart
// (the second vertex still waits), RUNNING after the second. Flink: DefaultScheduler's
// add/removeVerticesToRestartPending.
func TestRestartingWhileAnyVertexWaits(t *testing.T) {
	g := jobgraph.New("waiting", jobgraph.Streaming)
	g.AddVertex("v", "noop", 2)
	g.RestartStrategy = jobgraph.FixedDelayRestart(2, time.Second)
	h := newHarness(t, g, Config{})
	t0 := h.timers.Now()
	h.s.StartScheduling()
	h.offer(te1, 2)
	h.runDeployed()

	require.True(t, h.fail("v", 0, errBoom))
	assert.Equal(t, jobgraph.JobStatusRestarting, h.s.JobStatus())
	h.timers.Advance(500 * time.Millisecond)
	require.True(t, h.fail("v", 1, errBoom))
	assert.Equal(t, jobgraph.JobStatusRestarting, h.s.JobStatus())
	h.timers.Advance(500 * time.Millisecond)
	assert.Equal(t, []string{"v (1/2)#1"}, h.deployedSince(2))
	assert.Equal(t, jobgraph.JobStatusRestarting, h.s.JobStatus(), "v (2/2) still waits")
	h.runDeployed() // a restarted task runs while the job is RESTARTING
	assert.Equal(t, "RUNNING#1", h.stateOf("v", 0))
	h.timers.Advance(500 * time.Millisecond)
	assert.Equal(t, []string{"v (1/2)#1", "v (2/2)#1"}, h.deployedSince(2))
	assert.Equal(t, jobgraph.JobStatusRunning, h.s.JobStatus())
	assert.Equal(t, []string{"CREATED@0s", "RUNNING@0s", "RESTARTING@0s", "RUNNING@1.5s"}, h.statusesSince(0, t0))
	assert.Len(t, h.s.ExceptionHistory(), 2)
}

// The exception history keeps the newest web.exception-history-size entries (16 by default).
func TestExceptionHistoryIsBounded(t *testing.T) {
	for _, tc := range []struct {
		size, want int
	}{{0, jobgraph.DefaultExceptionHistorySize}, {3, 3}} {
		t.Run(fmt.Sprintf("size %d", tc.size), func(t *testing.T) {
			g := jobgraph.New("history", jobgraph.Streaming)
			g.AddVertex("v", "noop", 1)
			g.RestartStrategy = jobgraph.FixedDelayRestart(100, time.Second)
			h := newHarness(t, g, Config{ExceptionHistorySize: tc.size})
			t0 := h.timers.Now()
			h.s.StartScheduling()
			h.offer(te1, 1)
			for i := 1; i <= 20; i++ {
				h.runDeployed()
				require.True(t, h.fail("v", 0, fmt.Errorf("failure %d", i)))
				h.timers.Advance(time.Second)
			}
			hist := h.s.ExceptionHistory()
			require.Len(t, hist, tc.want)
			for k, e := range hist {
				i := 20 - tc.want + k + 1
				assert.Equal(t, fmt.Sprintf("task v (1/1) (attempt %d) on taskexecutor-1 failed: failure %d", i-1, i), e.Message)
				assert.Equal(t, t0.Add(time.Duration(i-1)*time.Second), e.Timestamp)
			}
			assert.Equal(t, hist, h.s.Archive().ExceptionHistory)
		})
	}
}

// Cancel while restarting: the job goes CANCELLING, the pending restart is dropped, and it stays
// CANCELLING until the last running task is CANCELED.
func TestCancelWhileRestarting(t *testing.T) {
	t.Run("other region running", func(t *testing.T) {
		g := jobgraph.New("cancel", jobgraph.Streaming)
		g.AddVertex("v", "noop", 2)
		g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
		h := newHarness(t, g, Config{})
		h.s.StartScheduling()
		h.offer(te1, 2)
		h.runDeployed()
		require.True(t, h.fail("v", 0, errBoom))
		assert.Equal(t, jobgraph.JobStatusRestarting, h.s.JobStatus())
		h.s.Cancel()
		assert.Equal(t, jobgraph.JobStatusCancelling, h.s.JobStatus())
		assert.Equal(t, []cancelCall{{h.exec("v", 1).AttemptID(), te1}}, h.deployer.canceled)
		h.timers.Advance(time.Minute)
		assert.Len(t, h.deployer.deployed, 2, "the restart was dropped")
		assert.Equal(t, jobgraph.JobStatusCancelling, h.s.JobStatus())
		require.True(t, h.report("v", 1, jobgraph.ExecutionStateCanceled))
		assert.Equal(t, jobgraph.JobStatusCanceled, h.s.JobStatus())
		assert.Equal(t, map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateFailed: 1, jobgraph.ExecutionStateCanceled: 1}, h.countStates())
		assert.Equal(t, []jobgraph.JobStatus{jobgraph.JobStatusCreated, jobgraph.JobStatusRunning, jobgraph.JobStatusRestarting,
			jobgraph.JobStatusCancelling, jobgraph.JobStatusCanceled}, h.statusList())
		assert.Equal(t, 0, h.pool.NumAllocatedSlots())
		assert.Equal(t, 0, h.pool.NumPendingRequests())
	})
	t.Run("task canceled for the restart still canceling", func(t *testing.T) {
		g := jobgraph.New("cancel", jobgraph.Streaming)
		a := g.AddVertex("a", "noop", 1)
		b := g.AddVertex("b", "noop", 1)
		g.Connect(a, b, jobgraph.Pointwise, jobgraph.Pipelined)
		g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
		h := newHarness(t, g, Config{})
		h.s.StartScheduling()
		h.offer(te1, 2)
		h.runDeployed()
		require.True(t, h.fail("a", 0, errBoom))
		h.s.Cancel()
		assert.Equal(t, jobgraph.JobStatusCancelling, h.s.JobStatus())
		assert.Len(t, h.deployer.canceled, 1, "b was already being canceled")
		h.timers.Advance(time.Minute)
		// Without a restart to belong to, a failure while canceling counts as CANCELED.
		require.True(t, h.fail("b", 0, errors.New("interrupted")))
		assert.Equal(t, jobgraph.JobStatusCanceled, h.s.JobStatus())
		assert.Equal(t, "CANCELED#0", h.stateOf("b", 0))
		assert.Len(t, h.deployer.deployed, 2)
		require.Len(t, h.s.ExceptionHistory(), 1)
		assert.Empty(t, h.s.ExceptionHistory()[0].Concurrent)
	})
}

// After Suspend, failures are ignored and a pending restart never happens: the job stays
// SUSPENDED.
func TestFailureAfterSuspendIsIgnored(t *testing.T) {
	g := jobgraph.New("suspended", jobgraph.Streaming)
	g.AddVertex("v", "noop", 2)
	g.RestartStrategy = jobgraph.FixedDelayRestart(5, time.Second)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 2)
	h.runDeployed()
	require.True(t, h.fail("v", 0, errBoom))
	h.s.Suspend(errors.New("leadership lost"))
	assert.Equal(t, jobgraph.JobStatusSuspended, h.s.JobStatus())

	assert.False(t, h.fail("v", 1, errBoom))
	h.s.HandleGlobalFailure(errBoom)
	h.s.OnDeployFailed(h.exec("v", 1).AttemptID(), errBoom)
	h.timers.Advance(time.Minute)
	assert.Equal(t, jobgraph.JobStatusSuspended, h.s.JobStatus())
	assert.Equal(t, []jobgraph.JobStatus{jobgraph.JobStatusCreated, jobgraph.JobStatusRunning, jobgraph.JobStatusRestarting, jobgraph.JobStatusSuspended}, h.statusList())
	assert.Len(t, h.deployer.deployed, 2)
	assert.Len(t, h.s.ExceptionHistory(), 1)
	assert.Equal(t, 0, h.pool.NumAllocatedSlots())
	assert.Equal(t, 0, h.pool.NumPendingRequests())
	assert.Empty(t, h.terminal)
}

// A deployment whose vertex was named by a failover after its bulk was scheduled is skipped when
// the bulk's slots arrive. Flink: DefaultSchedulerTest.skipDeploymentIfVertexVersionOutdated:
// source → sink (one region), the source's slot arrives, the source fails before the sink's slot
// does; after the restart each is deployed once, as attempt 1.
func TestOutdatedDeploymentIsSkipped(t *testing.T) {
	g := jobgraph.New("outdated", jobgraph.Streaming)
	// Every subtask in a slot of its own (no slot sharing): the slot counts below are per subtask.
	src := g.AddVertex("source", "noop", 1).WithoutSlotSharingGroup()
	sink := g.AddVertex("sink", "noop", 1).WithoutSlotSharingGroup()
	g.Connect(src, sink, jobgraph.Pointwise, jobgraph.Pipelined)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, 0)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	require.Equal(t, 1, h.offer(te1, 1))
	assert.Empty(t, h.deployer.deployed)
	require.True(t, h.fail("source", 0, errBoom))
	h.timers.Advance(0)
	assert.Equal(t, "SCHEDULED#1", h.stateOf("source", 0))
	assert.Equal(t, 1, h.pool.NumAllocatedSlots(), "the restarted source took the free slot")
	require.Equal(t, 1, h.offer(te1, 1))
	assert.Equal(t, []string{"source (1/1)#1", "sink (1/1)#1"}, h.deployedSince(0))
	assert.Equal(t, jobgraph.JobStatusRunning, h.s.JobStatus())

	// The version check itself: a bulk scheduled before a failover named its vertex deploys
	// nothing of that vertex (the failover cancels it right after; here only the version moves).
	g2 := jobgraph.New("version", jobgraph.Streaming)
	g2.AddVertex("v", "noop", 1).WithoutSlotSharingGroup()
	h2 := newHarness(t, g2, Config{})
	h2.s.StartScheduling()
	h2.s.versions[h2.exec("v", 0).Vertex().Index()]++
	require.Equal(t, 1, h2.offer(te1, 1))
	assert.Empty(t, h2.deployer.deployed)
	assert.Equal(t, "SCHEDULED#0", h2.stateOf("v", 0))
}

// A global failure restarts every task under the restart strategy; its exception history entry
// names no task.
func TestGlobalFailureRestartsEveryTask(t *testing.T) {
	g := jobgraph.New("global", jobgraph.Streaming)
	a := g.AddVertex("a", "noop", 1)
	b := g.AddVertex("b", "noop", 1)
	g.Connect(a, b, jobgraph.Pointwise, jobgraph.Blocking)
	g.AddVertex("c", "noop", 1)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
	h := newHarness(t, g, Config{})
	t0 := h.timers.Now()
	h.s.StartScheduling()
	h.offer(te1, 2)
	h.runDeployed()
	h.finish("a", 0)
	h.runDeployed()
	require.Equal(t, []string{"a (1/1)#0", "c (1/1)#0", "b (1/1)#0"}, h.deployedSince(0))

	h.s.HandleGlobalFailure(errBoom)
	assert.Equal(t, jobgraph.JobStatusRestarting, h.s.JobStatus())
	assert.Equal(t, "FINISHED#0", h.stateOf("a", 0))
	require.True(t, h.report("b", 0, jobgraph.ExecutionStateCanceled))
	require.True(t, h.report("c", 0, jobgraph.ExecutionStateCanceled))
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{"a (1/1)#1", "c (1/1)#1"}, h.deployedSince(3))
	assert.Equal(t, "CREATED#1", h.stateOf("b", 0))
	// a's partition of attempt 0 is released when a is reset.
	assert.Equal(t, []releaseCall{{te1, []rpc.ResultPartitionID{{
		PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: a.Results[0].ID},
		ProducerID:  h.exec("a", 0).Vertex().PriorExecutions()[0].AttemptID(),
	}}}}, h.deployer.released)
	assert.Equal(t, []jobgraph.ExceptionHistoryEntry{{Message: "boom", Timestamp: t0, Subtask: -1}}, h.s.ExceptionHistory())

	// Without attempts left, a global failure fails the job with it as (wrapped) root cause.
	h.s.HandleGlobalFailure(errBoom)
	assert.Equal(t, jobgraph.JobStatusFailing, h.s.JobStatus())
	assert.ErrorIs(t, h.s.RootCause(), errBoom)
}

// The scheduler's partition tracking decides which producers a region failover restarts:
// a(1) –BLOCKING→ b(1). b fails: a's partition is available (a FINISHED, not released), so only b
// restarts and reads it again; b fails with a's partition unreadable: a restarts too, and its old
// partition is released; a's TaskExecutor is lost: a restarts too, and nothing is released there.
func TestRegionFailoverUsesPartitionTracking(t *testing.T) {
	setUp := func(t *testing.T) (*harness, *jobgraph.JobVertex) {
		g := jobgraph.New("tracking", jobgraph.Batch)
		a := g.AddVertex("a", "noop", 1)
		b := g.AddVertex("b", "noop", 1)
		g.Connect(a, b, jobgraph.Pointwise, jobgraph.Blocking)
		g.RestartStrategy = jobgraph.FixedDelayRestart(5, time.Second)
		h := newHarness(t, g, Config{})
		h.s.StartScheduling()
		h.offer(te1, 1)
		h.finish("a", 0)
		h.runDeployed()
		require.Equal(t, []string{"a (1/1)#0", "b (1/1)#0"}, h.deployedSince(0))
		return h, a
	}
	partitionOf := func(a *jobgraph.JobVertex) jobgraph.IntermediateResultPartitionID {
		return jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: a.Results[0].ID}
	}

	t.Run("available", func(t *testing.T) {
		h, a := setUp(t)
		assert.True(t, trackedPartitions{h.s}.IsAvailable(partitionOf(a)))
		require.True(t, h.fail("b", 0, errBoom))
		h.timers.Advance(time.Second)
		assert.Equal(t, []string{"b (1/1)#1"}, h.deployedSince(2))
		assert.Equal(t, []rpc.ResultPartitionID{{PartitionID: partitionOf(a), ProducerID: h.exec("a", 0).AttemptID()}},
			h.deployer.deployed[2].tdd.InputGates[0].Partitions)
		assert.Empty(t, h.deployer.released)
	})
	t.Run("unreadable", func(t *testing.T) {
		h, a := setUp(t)
		old := h.exec("a", 0).AttemptID()
		require.True(t, h.fail("b", 0, &partitionReadError{partitionOf(a)}))
		h.timers.Advance(time.Second)
		assert.Equal(t, []string{"a (1/1)#1"}, h.deployedSince(2))
		assert.Equal(t, []releaseCall{{te1, []rpc.ResultPartitionID{{PartitionID: partitionOf(a), ProducerID: old}}}}, h.deployer.released)
		// a's new attempt is deployed: its partition counts as available from deployment on (as
		// Flink's partition tracker tracks it), so another failure of b would not restart a again.
		assert.True(t, trackedPartitions{h.s}.IsAvailable(partitionOf(a)))
		h.finish("a", 0)
		assert.Equal(t, []string{"a (1/1)#1", "b (1/1)#1"}, h.deployedSince(2))
	})
	t.Run("TaskExecutor lost", func(t *testing.T) {
		h, a := setUp(t)
		h.s.PartitionsLost(te1)
		assert.False(t, trackedPartitions{h.s}.IsAvailable(partitionOf(a)))
		require.True(t, h.fail("b", 0, errBoom))
		h.timers.Advance(time.Second)
		assert.Equal(t, []string{"a (1/1)#1"}, h.deployedSince(2))
		assert.Empty(t, h.deployer.released)
	})
}

// a(2) –BLOCKING ALL_TO_ALL→ b(1) on one slot: a0 runs, a1 waits for a slot. a0 fails: a0 and its
// consumer b restart; a1, which has not produced anything yet and will produce its partition when it
// runs, is left waiting (attempt 0), as it is when it already runs. Restarting it would only cancel
// its slot request: the restart set of a failure must not depend on whether a sibling producer's
// slot had arrived yet.
func TestRegionFailoverLeavesAProducerThatHasNotRunYet(t *testing.T) {
	g := jobgraph.New("not yet", jobgraph.Batch)
	a := g.AddVertex("a", "noop", 2)
	b := g.AddVertex("b", "noop", 1)
	g.Connect(a, b, jobgraph.AllToAll, jobgraph.Blocking)
	g.RestartStrategy = jobgraph.FixedDelayRestart(5, time.Second)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 1)
	h.runDeployed()
	require.Equal(t, []string{"a (1/2)#0"}, h.deployedSince(0))
	require.Equal(t, jobgraph.ExecutionStateScheduled, h.exec("a", 1).State())
	pa1 := jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: a.Results[0].ID, PartitionIndex: 1}
	assert.True(t, trackedPartitions{h.s}.IsAvailable(pa1), "a1 will produce its partition when it runs")

	require.True(t, h.fail("a", 0, errBoom))
	h.timers.Advance(time.Second)
	assert.Equal(t, 0, h.exec("a", 1).AttemptNumber(), "a1 is not restarted")
	assert.Equal(t, 1, h.exec("a", 0).AttemptNumber())
	assert.Equal(t, 1, h.exec("b", 0).AttemptNumber())
	// a0's slot went to a1, which was waiting first; a0 runs once a second slot arrives.
	assert.Equal(t, []string{"a (1/2)#0", "a (2/2)#0"}, h.deployedSince(0))
	h.offer(te2, 1)
	assert.Equal(t, []string{"a (2/2)#0", "a (1/2)#1"}, h.deployedSince(1))
	h.finish("a", 0)
	h.finish("a", 1)
	assert.Equal(t, []string{"b (1/1)#1"}, h.deployedSince(3))
	h.finish("b", 0)
	assert.Equal(t, jobgraph.JobStatusFinished, h.s.JobStatus())
}

// A restarted consumer region that had finished reads its inputs again, so they are released
// only once it finished again: a –BLOCKING→ b –BLOCKING→ c, c fails reading b's partition after a's
// was released (b had finished): b and a restart, and a's new partition is released once b
// finished again. Flink: RegionPartitionGroupReleaseStrategy.vertexUnfinished.
func TestRestartedRegionReadsItsInputsAgain(t *testing.T) {
	g := threeStage(1, jobgraph.Pointwise, jobgraph.Blocking, jobgraph.Pointwise, jobgraph.Blocking)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer(te1, 1)
	h.finish("source", 0)
	h.finish("map", 0)
	src0 := h.exec("source", 0).AttemptID()
	map0 := h.exec("map", 0).AttemptID()
	srcPart := jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: g.VertexByName("source").Results[0].ID}
	mapPart := jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: g.VertexByName("map").Results[0].ID}
	require.Equal(t, []releaseCall{{te1, []rpc.ResultPartitionID{{PartitionID: srcPart, ProducerID: src0}}}}, h.deployer.released)

	require.True(t, h.fail("sink", 0, &partitionReadError{mapPart}))
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{"source (1/1)#0", "map (1/1)#0", "sink (1/1)#0", "source (1/1)#1"}, h.deployedSince(0))
	assert.Equal(t, []releaseCall{{te1, []rpc.ResultPartitionID{{PartitionID: mapPart, ProducerID: map0}}}}, h.deployer.released[1:])
	h.finish("source", 0)
	assert.Len(t, h.deployer.released, 2, "map reads it again")
	h.finish("map", 0)
	assert.Equal(t, []releaseCall{{te1, []rpc.ResultPartitionID{{PartitionID: srcPart, ProducerID: h.exec("source", 0).AttemptID()}}}}, h.deployer.released[2:])
	h.finish("sink", 0)
	assert.Equal(t, jobgraph.JobStatusFinished, h.s.JobStatus())
	assert.Equal(t, []releaseCall{{te1, []rpc.ResultPartitionID{{PartitionID: mapPart, ProducerID: h.exec("map", 0).AttemptID()}}}}, h.deployer.released[3:])
}

// New's errors for the failure handling settings.
func TestNewFailureHandlingErrors(t *testing.T) {
	pool, err := slotpool.New(slotpool.Config{Timers: newFakeTimers()})
	require.NoError(t, err)
	g := jobgraph.New("restarts", jobgraph.Streaming)
	g.AddVertex("v", "noop", 1)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
	_, err = New(g, FromSlotPool(pool), &fakeDeployer{}, Config{})
	require.ErrorIs(t, err, ErrNoTimers)
	assert.Contains(t, err.Error(), "restart strategy fixed-delay")

	g.RestartStrategy = jobgraph.RestartStrategyConfig{}
	g.Checkpointing.Interval = time.Second // the default becomes exponential-delay
	_, err = New(g, FromSlotPool(pool), &fakeDeployer{}, Config{})
	require.ErrorIs(t, err, ErrNoTimers)
	g.Checkpointing.Interval = 0
	_, err = New(g, FromSlotPool(pool), &fakeDeployer{}, Config{}) // "none" needs no timers
	require.NoError(t, err)

	_, err = New(g, FromSlotPool(pool), &fakeDeployer{}, Config{ExceptionHistorySize: -1})
	require.ErrorContains(t, err, "web.exception-history-size -1 is negative")
}

// A custom ResultPartitionAvailabilityChecker replaces the scheduler's own tracking.
func TestCustomPartitionAvailability(t *testing.T) {
	g := jobgraph.New("custom", jobgraph.Batch)
	a := g.AddVertex("a", "noop", 1)
	b := g.AddVertex("b", "noop", 1)
	g.Connect(a, b, jobgraph.Pointwise, jobgraph.Blocking)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
	h := newHarness(t, g, Config{PartitionAvailability: unavailable{}})
	h.s.StartScheduling()
	h.offer(te1, 1)
	h.finish("a", 0)
	require.True(t, h.fail("b", 0, errBoom))
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{"a (1/1)#0", "b (1/1)#0", "a (1/1)#1"}, h.deployedSince(0))
}

type unavailable struct{}

func (unavailable) IsAvailable(jobgraph.IntermediateResultPartitionID) bool { return false }

// A newer failover that names vertices of a pending restart takes them over: the older restart
// finds their versions changed and restarts nothing of them; the newer one restarts them after
// its own backoff. Flink: ExecutionVertexVersioner in DefaultScheduler.restartTasks.
func TestNewerFailoverSupersedesPendingRestart(t *testing.T) {
	g := jobgraph.New("supersede", jobgraph.Streaming)
	g.AddVertex("v", "noop", 2)
	g.RestartStrategy = jobgraph.FixedDelayRestart(5, time.Second)
	h := newHarness(t, g, Config{})
	t0 := h.timers.Now()
	h.s.StartScheduling()
	h.offer(te1, 2)
	h.runDeployed()
	require.True(t, h.fail("v", 0, errBoom))
	h.timers.Advance(500 * time.Millisecond)
	h.s.HandleGlobalFailure(errors.New("global"))
	require.True(t, h.report("v", 1, jobgraph.ExecutionStateCanceled))
	h.timers.Advance(500 * time.Millisecond)
	assert.Len(t, h.deployer.deployed, 2, "v (1/2)'s first restart was superseded")
	assert.Equal(t, jobgraph.JobStatusRestarting, h.s.JobStatus())
	h.timers.Advance(500 * time.Millisecond)
	assert.Equal(t, []string{"v (1/2)#1", "v (2/2)#1"}, h.deployedSince(2))
	assert.Equal(t, []string{"CREATED@0s", "RUNNING@0s", "RESTARTING@0s", "RUNNING@1.5s"}, h.statusesSince(0, t0))
	hist := h.s.ExceptionHistory()
	require.Len(t, hist, 2)
	assert.Equal(t, "global", hist[1].Message)
}

// Restarts under the vertex-wise strategy: a(2) –POINTWISE BLOCKING→ b(2); b₀ fails and only b₀
// restarts, reading a₀'s partition again.
func TestVertexwiseRestart(t *testing.T) {
	g := jobgraph.New("vertexwise", jobgraph.Batch)
	a := g.AddVertex("a", "noop", 2)
	b := g.AddVertex("b", "noop", 2)
	g.Connect(a, b, jobgraph.Pointwise, jobgraph.Blocking)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
	h := newHarness(t, g, Config{SchedulingStrategy: StrategyVertexwise})
	h.s.StartScheduling()
	h.offer(te1, 2)
	h.finish("a", 0)
	h.finish("a", 1)
	h.runDeployed()
	require.True(t, h.fail("b", 0, errBoom))
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{"a (1/2)#0", "a (2/2)#0", "b (1/2)#0", "b (2/2)#0", "b (1/2)#1"}, h.deployedSince(0))
	h.runDeployed()
	h.finish("b", 0)
	h.finish("b", 1)
	assert.Equal(t, jobgraph.JobStatusFinished, h.s.JobStatus())
}
