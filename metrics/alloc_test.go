package metrics_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/metrics"
)

// A job's scope is made its usual size at once and a group keeps no list of its names:
// registering 18 gauges on a new job group and closing it costs one allocation per gauge (its
// entry) and 5 for the group (1), its scope's record with its slice of metrics (2) and the job's
// index of scopes (2), none of which grows on the way (35 before the scope's maps were sized, 29
// before the group's own map of names went, 25 while a scope's metrics were a map).
func TestJobGroupRegistrationAllocations(t *testing.T) {
	r := metrics.NewRegistry()
	names := make([]string, 18)
	for i := range names {
		names[i] = fmt.Sprintf("gauge%d", i)
	}
	value := func() int64 { return 1 }
	id := jobgraph.NewJobID()
	allocs := testing.AllocsPerRun(100, func() {
		g := r.JobGroup(id, "job")
		for _, n := range names {
			g.Gauge(n, value)
		}
		g.Close()
	})
	assert.Equal(t, float64(18+5), allocs)
}

// The same 18 gauges as one set (Group.Gauges, the scheduler's way) cost one allocation for all
// their entries: 1 + 5.
func TestJobGroupGaugeSetAllocations(t *testing.T) {
	r := metrics.NewRegistry()
	names := make([]string, 18)
	for i := range names {
		names[i] = fmt.Sprintf("gauge%d", i)
	}
	value := func(i int) int64 { return int64(i) }
	id := jobgraph.NewJobID()
	allocs := testing.AllocsPerRun(100, func() {
		g := r.JobGroup(id, "job")
		g.Gauges(names, value)
		g.Close()
	})
	assert.Equal(t, float64(1+5), allocs)
}
