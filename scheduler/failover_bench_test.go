package scheduler

import (
	"errors"
	"testing"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// finishedPartitions is a ResultPartitionAvailabilityChecker that says a partition is available
// once its producer FINISHED, as a partition tracker does.
type finishedPartitions struct{ topo executiongraph.Topology }

func (c finishedPartitions) IsAvailable(id jobgraph.IntermediateResultPartitionID) bool {
	p := c.topo.Partition(id)
	return p != nil && p.IsFinished()
}

// BenchmarkRegionToRestart mirrors Flink's RegionToRestartInStreamingJobBenchmark and
// RegionToRestartInBatchJobBenchmark: source –ALL_TO_ALL→ sink, parallelism 10,000 each,
// PIPELINED (one region of 20,000 vertices) or BLOCKING (20,000 regions, sources FINISHED so
// their partitions are available); it measures the region strategy's TasksToRestart for a
// failure of source subtask 0. The graph is built once, outside the timed loop.
func BenchmarkRegionToRestart(b *testing.B) {
	const p = 10000
	for _, bc := range []struct {
		name    string
		jobType jobgraph.JobType
		rt      jobgraph.ResultPartitionType
		want    int
	}{
		{"streaming-10000", jobgraph.Streaming, jobgraph.Pipelined, 2 * p},
		{"batch-10000", jobgraph.Batch, jobgraph.Blocking, 1 + p},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g := jobgraph.New("bench", bc.jobType)
			src := g.AddVertex("source", "noop", p)
			sink := g.AddVertex("sink", "noop", p)
			g.Connect(src, sink, jobgraph.AllToAll, bc.rt)
			eg, err := executiongraph.Build(g)
			if err != nil {
				b.Fatal(err)
			}
			sources := eg.JobVertex(src.ID)
			if bc.rt == jobgraph.Blocking {
				for v := range sources.Vertices() {
					driveTo(b, v, jobgraph.ExecutionStateFinished)
				}
			}
			topo := eg.Topology()
			strategy := NewRestartPipelinedRegionFailoverStrategy(topo, finishedPartitions{topo})
			failed := sources.Vertex(0)
			cause := errors.New("for test")
			b.ReportAllocs()
			for b.Loop() {
				if n := len(strategy.TasksToRestart(failed, cause)); n != bc.want {
					b.Fatalf("%d vertices to restart, want %d", n, bc.want)
				}
			}
		})
	}
}
