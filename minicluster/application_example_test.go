package minicluster_test

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Application mode: a cluster runs a fixed set of jobs, reports each result and shuts down. A
// second cluster over the same HA services (a restarted JobManager process) running the same
// application runs none of them again: each is reported with its result from the JobResultStore.
func ExampleMiniCluster_RunApplication() {
	var runs atomic.Int32
	reg := taskexecutor.NewRegistry()
	reg.Register("work", func(ctx context.Context, env taskexecutor.Environment) error {
		runs.Add(1)
		return nil
	})
	services := embedded.New() // outlives both clusters, as a durable HA store would
	defer services.Close()

	extract := jobgraph.New("extract", jobgraph.Batch)
	extract.AddVertex("extract", "work", 2)
	load := jobgraph.New("load", jobgraph.Batch)
	load.AddVertex("load", "work", 1)
	application := []*jobgraph.JobGraph{extract, load} // the same JobIDs in every run

	ctx := context.Background()
	for _, run := range []string{"first run", "after a restart"} {
		mc, err := minicluster.Start(ctx, minicluster.Config{SlotsPerTaskExecutor: 2, Registry: reg, HA: services})
		if err != nil {
			fmt.Println(err)
			return
		}
		results, err := mc.RunApplication(ctx, application) // closes the cluster when done
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s:", run)
		for _, r := range results {
			fmt.Printf(" %s %s;", r.Name, r.Status)
		}
		fmt.Println(" tasks run so far:", runs.Load())
	}
	// Output:
	// first run: extract FINISHED; load FINISHED; tasks run so far: 3
	// after a restart: extract FINISHED; load FINISHED; tasks run so far: 3
}
