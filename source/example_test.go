package source_test

import (
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/source"
)

// vertexContext is what a JobMaster gives the coordinator of a source vertex of parallelism 2.
type vertexContext struct{ config []byte }

func (c vertexContext) JobID() jobgraph.JobID          { return jobgraph.JobID{} }
func (c vertexContext) VertexID() jobgraph.JobVertexID { return jobgraph.JobVertexID{} }
func (c vertexContext) Config() []byte                 { return c.config }
func (c vertexContext) CurrentParallelism() int        { return 2 }
func (c vertexContext) RunInMainThread(fn func())      { fn() }
func (c vertexContext) FailJob(cause error)            { fmt.Println("job failed:", cause) }

// printingGateway prints what the coordinator sends a reader.
type printingGateway struct{ subtask, attempt int }

func (g printingGateway) Subtask() int { return g.subtask }
func (g printingGateway) Attempt() int { return g.attempt }
func (g printingGateway) SendEvent(event []byte, ack func(error)) {
	fmt.Printf("to reader %d: %s\n", g.subtask, event)
}

// A source vertex lists its splits in its OperatorCoordinatorConfig; the coordinator hands them
// out one per request, and a region restart of a reader gives its splits out again.
func Example() {
	registry := coordination.NewRegistry()
	if err := registry.Register("file-splits", source.StaticSplitsProvider()); err != nil {
		panic(err)
	}
	config, err := source.EncodeStaticSplits([]source.Split{{ID: "a.txt"}, {ID: "b.txt"}, {ID: "c.txt"}})
	if err != nil {
		panic(err)
	}
	// What the JobMaster does for a vertex whose OperatorCoordinator is "file-splits".
	c, err := registry.Create("file-splits", vertexContext{config: config})
	if err != nil {
		panic(err)
	}
	_ = c.Start()
	_ = c.ExecutionAttemptReady(0, 0, printingGateway{0, 0})
	_ = c.ExecutionAttemptReady(1, 0, printingGateway{1, 0})

	request := []byte(`{"type":"RequestSplit"}`)
	_ = c.HandleEventFromOperator(0, 0, request)
	_ = c.HandleEventFromOperator(1, 0, request)
	c.CheckpointCoordinator(1, func(state []byte, err error) { fmt.Printf("checkpoint 1: %s\n", state) })
	_ = c.HandleEventFromOperator(0, 0, request) // reader 0 is fast

	// Reader 0 fails; the region restart resets it to checkpoint 1: c.txt, which it got after
	// checkpoint 1, goes back. Its new attempt restores a.txt from its own checkpoint state.
	_ = c.ExecutionAttemptFailed(0, 0, nil)
	_ = c.SubtaskReset(0, 1)
	_ = c.ExecutionAttemptReady(0, 1, printingGateway{0, 1})
	_ = c.HandleEventFromOperator(0, 1, request)
	_ = c.HandleEventFromOperator(1, 0, request)
	_ = c.Close()
	// Output:
	// to reader 0: {"type":"AddSplits","splits":[{"id":"a.txt"}]}
	// to reader 1: {"type":"AddSplits","splits":[{"id":"b.txt"}]}
	// checkpoint 1: {"version":1,"enumerator":"eyJzcGxpdHMiOlt7ImlkIjoiYy50eHQifV19"}
	// to reader 0: {"type":"AddSplits","splits":[{"id":"c.txt"}]}
	// to reader 0: {"type":"AddSplits","splits":[{"id":"c.txt"}]}
	// to reader 1: {"type":"NoMoreSplits"}
}
