package executiongraph_test

import (
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// A batch job: source and map exchange data pipelined, so each source subtask and the map
// subtask reading it form one region; the sink reads the map's output after it is complete.
func ExampleBuild() {
	g := jobgraph.New("example", jobgraph.Batch)
	source := g.AddVertex("source", "read", 2)
	mapper := g.AddVertex("map", "transform", 2)
	sink := g.AddVertex("sink", "write", 2)
	g.Connect(source, mapper, jobgraph.Pointwise, jobgraph.PipelinedBounded)
	g.Connect(mapper, sink, jobgraph.AllToAll, jobgraph.Blocking)

	eg, err := executiongraph.Build(g)
	if err != nil {
		panic(err)
	}
	for _, r := range eg.Regions() {
		fmt.Print("region", r.Index(), ":")
		for _, v := range r.Vertices() {
			fmt.Print(" ", v.Name())
		}
		fmt.Println(" waits for", len(r.ExternalConsumedPartitionGroups()), "blocking input(s)")
	}

	// The sink's subtasks share one group of both map partitions.
	group := eg.JobVertex(sink.ID).Vertex(0).ConsumedPartitionGroups()[0]
	fmt.Println("sink reads", group.Len(), "partitions; all finished:", group.AreAllPartitionsFinished())
	// Output:
	// region0: source (1/2) map (1/2) waits for 0 blocking input(s)
	// region1: source (2/2) map (2/2) waits for 0 blocking input(s)
	// region2: sink (1/2) waits for 1 blocking input(s)
	// region3: sink (2/2) waits for 1 blocking input(s)
	// sink reads 2 partitions; all finished: false
}
