package minicluster_test

import (
	"context"
	"testing"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
)

// BenchmarkSubmitJob submits a 1-vertex, parallelism-1 no-op job and waits until it FINISHED,
// one job after another, on one MiniCluster with 1 TaskExecutor × 1 slot; jobs/s is the rate.
func BenchmarkSubmitJob(b *testing.B) {
	mc, err := minicluster.New(minicluster.Config{Registry: registry()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := mc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer mc.Close()
	for b.Loop() {
		g := jobgraph.New("noop", jobgraph.Batch)
		g.AddVertex("v", "noop", 1)
		res, err := mc.Run(ctx, g)
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != jobgraph.JobStatusFinished {
			b.Fatalf("job ended %s: %v", res.Status, res.RootCause)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
