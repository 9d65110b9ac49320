package minicluster_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Block a TaskExecutor for a while (maintenance, a bad disk): no job gets slots there until the
// block ends, so this job's two tasks both run on taskexecutor-1.
func ExampleMiniCluster_BlockTaskExecutor() {
	reg := taskexecutor.NewRegistry()
	reg.Register("noop", func(context.Context, taskexecutor.Environment) error { return nil })
	ctx := context.Background()
	mc, err := minicluster.Start(ctx, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 2, Registry: reg,
		ResourceBlocklistEnabled: true}) // cluster.resource-blocklist.enabled
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mc.Close()

	node, err := mc.BlockTaskExecutor(ctx, dispatcher.BlockRequest{TaskExecutor: "taskexecutor-0", Duration: 10 * time.Minute, Cause: "disk errors"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("blocked", node.NodeID, node.Action, "for", time.Until(node.EndTimestamp).Round(time.Minute))

	g := jobgraph.New("two-tasks", jobgraph.Batch)
	g.AddVertex("work", "noop", 2)
	if _, err := mc.Run(ctx, g); err != nil {
		fmt.Println(err)
		return
	}
	archived, err := mc.RequestJob(ctx, g.JobID)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range archived.JobVertices[0].Subtasks {
		fmt.Println(st.State, "on", st.Location)
	}
	// Output:
	// blocked taskexecutor-0 MARK_BLOCKED for 10m0s
	// FINISHED on taskexecutor-1
	// FINISHED on taskexecutor-1
}
