package checkpoint_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/metrics"
)

// A job without checkpointing shows the metrics of a tracker that never saw a checkpoint, under
// the same names with the same values, through one set of gauges over a function every such job
// shares: the registration allocates the set's entries and nothing else (a tracker with its maps
// and one closure per gauge before, then one entry per gauge).
func TestNoCheckpointMetricsAreAnEmptyTrackers(t *testing.T) {
	r := metrics.NewRegistry()
	tracked, empty := jobgraph.NewJobID(), jobgraph.NewJobID()
	checkpoint.NewCheckpointStatsTracker(1).RegisterMetrics(r.JobGroup(tracked, "j"))
	checkpoint.RegisterNoCheckpointMetrics(r.JobGroup(empty, "j"))
	byName := func(vs []metrics.Value) map[string]int64 {
		out := map[string]int64{}
		for _, v := range vs {
			out[v.Name] = v.Int
		}
		return out
	}
	want := map[string]int64{
		"totalNumberOfCheckpoints": 0, "numberOfInProgressCheckpoints": 0, "numberOfCompletedCheckpoints": 0,
		"numberOfFailedCheckpoints": 0, "lastCheckpointDuration": -1, "lastCheckpointSize": -1,
		"lastCheckpointFullSize": -1, "lastCompletedCheckpointId": -1, "lastCheckpointRestoreTimestamp": -1,
	}
	assert.Equal(t, want, byName(r.JobMetrics(tracked)))
	assert.Equal(t, want, byName(r.JobMetrics(empty)))

	g := r.JobGroup(jobgraph.NewJobID(), "j")
	allocs := testing.AllocsPerRun(100, func() { checkpoint.RegisterNoCheckpointMetrics(g) })
	assert.Equal(t, 1.0, allocs, "one set of entries for the 9 metrics")
	g.Close()
	checkpoint.RegisterNoCheckpointMetrics(nil)
}
