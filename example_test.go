package jobgraph_test

import (
	"errors"
	"fmt"

	"github.com/jobgraph/jobgraph"
)

// Build a batch word count, check it, and see what Validate says about a broken one.
func ExampleJobGraph_Validate() {
	g := jobgraph.New("wordcount", jobgraph.Batch)
	src := g.AddVertex("source", "read-files", 4)
	cnt := g.AddVertex("count", "count-words", 2)
	g.Connect(src, cnt, jobgraph.AllToAll, jobgraph.Blocking)

	fmt.Println("valid:", g.Validate() == nil)
	fmt.Println("vertices:", len(g.Vertices), "edges:", g.NumEdges(), "tasks:", g.NumTasks())
	fmt.Println("slot-sharing group:", src.SlotSharingGroup, cnt.SlotSharingGroup)

	// A vertex with parallelism 0 breaks the parallelism rule; the error names the vertex.
	g.AddVertex("sink", "write", 0)
	err := g.Validate()
	var verr *jobgraph.ValidationError
	if errors.As(err, &verr) {
		fmt.Println("rule:", verr.Rule, "vertex:", verr.VertexName)
	}
	fmt.Println("invalid job graph:", errors.Is(err, jobgraph.ErrInvalidJobGraph))
	// Output:
	// valid: true
	// vertices: 2 edges: 1 tasks: 6
	// slot-sharing group: default default
	// rule: parallelism vertex: sink
	// invalid job graph: true
}
