package metrics_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/metrics"
)

// A job's scope is made its usual size at once: registering a scheduler's 18 gauges on a new job
// group and closing it costs one allocation per gauge (its entry) and 11 for the group and the
// maps of its scope, none of which grows on the way (35 before).
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
	assert.Equal(t, float64(18+11), allocs)
}
