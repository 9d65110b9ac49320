package minicluster_test

import (
	"context"
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Start a cluster, run a job to its end and read what its tasks counted: each of the 4 subtasks
// adds its subtask number + 1 to the "sum" accumulator and appends its name to "tasks".
func ExampleMiniCluster_Run() {
	reg := taskexecutor.NewRegistry()
	reg.Register("count", func(ctx context.Context, env taskexecutor.Environment) error {
		sum, err := env.AccumulatorRegistry().IntCounter("sum")
		if err != nil {
			return err
		}
		sum.Add(env.Info().SubtaskIndex + 1)
		tasks, err := taskexecutor.Accumulator(env.AccumulatorRegistry(), "tasks", func() *jobgraph.ListAccumulator[string] {
			return new(jobgraph.ListAccumulator[string])
		})
		if err != nil {
			return err
		}
		tasks.Add(env.Info().TaskName)
		return nil
	})

	ctx := context.Background()
	mc, err := minicluster.Start(ctx, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 2, Registry: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mc.Close()

	g := jobgraph.New("sum", jobgraph.Batch)
	g.AddVertex("count", "count", 4)
	res, err := mc.Run(ctx, g) // submit, then wait for the JobResult
	if err != nil {
		fmt.Println(err)
		return
	}
	sum, err := jobgraph.AccumulatorValue[int](res.Accumulators, "sum")
	if err != nil {
		fmt.Println(err)
		return
	}
	tasks, _ := jobgraph.AccumulatorValue[[]string](res.Accumulators, "tasks")
	fmt.Println(res.Status, "sum:", sum, "tasks:", len(tasks))
	_, err = jobgraph.AccumulatorValue[int](res.Accumulators, "nope")
	fmt.Println(err)
	// Output:
	// FINISHED sum: 10 tasks: 4
	// accumulator "nope": accumulator not found (the job has: "sum", "tasks")
}
