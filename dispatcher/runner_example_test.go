package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// The Dispatcher under leader election, as a MiniCluster runs it: a job runs under leader
// session L1; the leadership moves (revoked, granted again as L2) and L2 recovers the job from
// the ExecutionPlanStore and runs it again, under a new JobMaster. A second Runner in the same
// election is a standby: it answers ErrNotLeader.
func ExampleRunner() {
	starts := make(chan int32, 4)
	var attempts atomic.Int32
	reg := taskexecutor.NewRegistry()
	reg.Register("wait", func(ctx context.Context, env taskexecutor.Environment) error {
		starts <- attempts.Add(1)
		<-ctx.Done() // runs until canceled or suspended
		return ctx.Err()
	})
	ctx := context.Background()
	services := embedded.New()
	defer services.Close()
	mc, err := minicluster.Start(ctx, minicluster.Config{Registry: reg, HA: services})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mc.Close()
	runner := mc.Dispatcher().(*dispatcher.Runner)
	if err := runner.AwaitLeadership(ctx); err != nil { // Config.HA given: Start did not wait
		fmt.Println(err)
		return
	}

	g := jobgraph.New("forever", jobgraph.Streaming)
	g.AddVertex("wait", "wait", 1)
	if err := runner.SubmitJob(ctx, g); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("start", <-starts)

	services.DispatcherElection().Revoke() // L1 ends (the job is suspended), L2 begins
	fmt.Println("start", <-starts, "(recovered by the next leader)")
	status, _ := runner.RequestJobStatus(ctx, g.JobID)
	fmt.Println("status:", status)
	ids, _ := services.ExecutionPlanStore().JobIDs(ctx)
	fmt.Println("stored plans:", len(ids))

	standby, err := dispatcher.NewRunner(dispatcher.RunnerConfig{Dispatcher: dispatcher.Config{HA: services,
		JobManagerRunnerFactory: func(*jobgraph.JobGraph, ha.Services) (jobmaster.JobManagerRunner, error) {
			return nil, errors.New("a standby runs no job")
		}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = standby.Start()
	_, err = standby.RequestJobStatus(ctx, g.JobID)
	fmt.Println("standby:", errors.Is(err, dispatcher.ErrNotLeader))
	_ = standby.Close()

	if err := runner.CancelJob(ctx, g.JobID); err != nil {
		fmt.Println(err)
		return
	}
	res, _ := runner.RequestJobResult(ctx, g.JobID)
	fmt.Println("result:", res.Status)
	// Output:
	// start 1
	// start 2 (recovered by the next leader)
	// status: RUNNING
	// stored plans: 1
	// standby: true
	// result: CANCELED
}
