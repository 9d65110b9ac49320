package scheduler

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/metrics"
)

// jobGauge reads one of the job's metrics from reg.
func jobGauge(t *testing.T, reg *metrics.Registry, job jobgraph.JobID, name string) int64 {
	t.Helper()
	for _, v := range reg.JobMetrics(job) {
		if v.Name == name {
			return v.Int
		}
	}
	t.Fatalf("no metric %q", name)
	return 0
}

// numRestarts counts restart attempts as Flink's ExecutionFailureHandler does: four failures of
// one region within 50 ms are one attempt (the exception history's one entry with three
// concurrent ones), a failure after the restart a second. uptime and downtime follow the
// scheduler's clock; once the job is terminal both are -1.
func TestNumRestartsCountsRestartAttemptsNotFailures(t *testing.T) {
	const ms = time.Millisecond
	reg := metrics.NewRegistry()
	defer reg.Close()
	g := jobgraph.New("concurrent", jobgraph.Streaming)
	v1 := g.AddVertex("v1", "noop", 4).WithoutSlotSharingGroup()
	v2 := g.AddVertex("v2", "noop", 4).WithoutSlotSharingGroup()
	g.Connect(v1, v2, jobgraph.AllToAll, jobgraph.Pipelined)
	g.RestartStrategy = exponentialForTests()
	group := reg.JobGroup(g.JobID, g.Name)
	defer group.Close()
	h := newHarness(t, g, Config{Metrics: group})
	assert.Equal(t, int64(0), jobGauge(t, reg, g.JobID, "uptime"), "CREATED")
	h.s.StartScheduling()
	require.Equal(t, 4, h.offer(te1, 4))
	require.Equal(t, 4, h.offer(te2, 4))
	h.runDeployed()
	h.timers.Advance(1500 * ms)
	assert.Equal(t, int64(1500), jobGauge(t, reg, g.JobID, "uptime"))
	assert.Equal(t, int64(1500), jobGauge(t, reg, g.JobID, "runningTime"))

	for i := range 4 {
		require.True(t, h.fail("v1", i, errors.New("boom")))
		h.timers.Advance(10 * ms)
	}
	for i := range 4 {
		h.report("v2", i, jobgraph.ExecutionStateCanceled)
	}
	assert.Equal(t, int64(1), jobGauge(t, reg, g.JobID, "numRestarts"), "one attempt for four concurrent failures")
	assert.Equal(t, int64(40), jobGauge(t, reg, g.JobID, "downtime"))
	assert.Equal(t, int64(40), jobGauge(t, reg, g.JobID, "restartingTime"))
	assert.Equal(t, int64(0), jobGauge(t, reg, g.JobID, "uptime"))
	require.Len(t, h.s.ExceptionHistory(), 1)

	h.timers.Advance(time.Second) // the 1 s backoff: RUNNING again
	require.Equal(t, jobgraph.JobStatusRunning, h.s.JobStatus())
	h.runDeployed()
	assert.Equal(t, int64(0), jobGauge(t, reg, g.JobID, "downtime"))
	h.timers.Advance(time.Second)
	require.True(t, h.fail("v1", 0, errBoom))
	assert.Equal(t, int64(2), jobGauge(t, reg, g.JobID, "numRestarts"))

	h.s.Cancel()
	for _, name := range []string{"v1", "v2"} {
		for i := range 4 {
			h.report(name, i, jobgraph.ExecutionStateCanceled)
		}
	}
	require.Equal(t, jobgraph.JobStatusCanceled, h.s.JobStatus())
	assert.Equal(t, int64(-1), jobGauge(t, reg, g.JobID, "uptime"))
	assert.Equal(t, int64(-1), jobGauge(t, reg, g.JobID, "downtime"))
	assert.Equal(t, int64(2), jobGauge(t, reg, g.JobID, "numRestarts"))
}

// A job registers Flink's job metrics (SchedulerBase, JobStatusMetrics and, for a job without
// checkpointing, CheckpointStatsTracker's with a tracker's first values) as two sets of gauges:
// every name once, with its value, and registering them again costs 5 allocations (the
// published values 2, the gauge function 1, the two sets' entries 2) where one entry and one
// closure per gauge cost 35.
func TestJobMetricsAreTwoGaugeSets(t *testing.T) {
	reg := metrics.NewRegistry()
	defer reg.Close()
	g := jobgraph.New("job", jobgraph.Batch) // no checkpoint coordinator
	g.AddVertex("v", "noop", 1)
	group := reg.JobGroup(g.JobID, g.Name)
	defer group.Close()
	h := newHarness(t, g, Config{Metrics: group})
	got := map[string]int64{}
	for _, v := range reg.JobMetrics(g.JobID) {
		assert.Equal(t, metrics.KindGauge, v.Kind, v.Name)
		got[v.Name] = v.Int
	}
	assert.Equal(t, map[string]int64{
		"uptime": 0, "downtime": 0, "numRestarts": 0,
		"initializingTime": 0, "createdTime": 0, "runningTime": 0, "failingTime": 0,
		"cancellingTime": 0, "restartingTime": 0,
		"totalNumberOfCheckpoints": 0, "numberOfInProgressCheckpoints": 0,
		"numberOfCompletedCheckpoints": 0, "numberOfFailedCheckpoints": 0,
		"lastCheckpointDuration": -1, "lastCheckpointSize": -1, "lastCheckpointFullSize": -1,
		"lastCompletedCheckpointId": -1, "lastCheckpointRestoreTimestamp": -1,
	}, got)
	require.NoError(t, group.Err())
	assert.Equal(t, 5.0, testing.AllocsPerRun(100, func() { h.s.registerJobMetrics(group) }))
}
