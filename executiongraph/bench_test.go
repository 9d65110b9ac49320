package executiongraph

import (
	"runtime"
	"testing"

	"github.com/jobgraph/jobgraph"
)

// The topology of Flink's scheduler benchmarks (flink-benchmarks, SchedulerBenchmarkUtils):
// source → sink, ALL_TO_ALL, both at the same parallelism; PIPELINED for streaming, BLOCKING
// for batch.
var benchCases = []struct {
	name        string
	parallelism int
	jobType     jobgraph.JobType
	resultType  jobgraph.ResultPartitionType
}{
	{"streaming-4000", 4000, jobgraph.Streaming, jobgraph.Pipelined},
	{"streaming-10000", 10000, jobgraph.Streaming, jobgraph.Pipelined},
	{"batch-4000", 4000, jobgraph.Batch, jobgraph.Blocking},
	{"batch-10000", 10000, jobgraph.Batch, jobgraph.Blocking},
}

func benchJobGraph(parallelism int, jobType jobgraph.JobType, resultType jobgraph.ResultPartitionType) *jobgraph.JobGraph {
	g := jobgraph.New("benchmark", jobType)
	source := g.AddVertex("source", "noop", parallelism)
	sink := g.AddVertex("sink", "noop", parallelism)
	g.Connect(source, sink, jobgraph.AllToAll, resultType)
	return g
}

// BenchmarkBuildExecutionGraph mirrors Flink's BuildExecutionGraphBenchmark: one op is Build —
// JobGraph → ExecutionGraph with its ConsumedPartitionGroups, ConsumerVertexGroups and pipelined
// regions. MiB-retained is the live heap one built graph keeps (HeapAlloc after a GC with the
// graph alive, minus before).
func BenchmarkBuildExecutionGraph(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			g := benchJobGraph(bc.parallelism, bc.jobType, bc.resultType)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Build(g); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(retainedMiB(b, g), "MiB-retained")
		})
	}
}

func retainedMiB(b *testing.B, g *jobgraph.JobGraph) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	eg, err := Build(g)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(eg)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
}

// BenchmarkPipelinedRegions measures computing the pipelined regions of a built graph.
func BenchmarkPipelinedRegions(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			eg, err := Build(benchJobGraph(bc.parallelism, bc.jobType, bc.resultType))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				eg.computeRegions()
			}
		})
	}
}
