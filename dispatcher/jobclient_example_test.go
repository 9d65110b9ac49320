package dispatcher_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// An attached client with execution.shutdown-on-attached-exit: while the client heartbeats the
// job runs; once the client goes away (Close) the Dispatcher cancels the job when
// client.heartbeat.timeout has passed, at its next aliveness check. The intervals are short here
// so that the example ends at once; Flink's defaults are 30 s, 180 s and 1 min.
func ExampleSubmitAttached() {
	reg := taskexecutor.NewRegistry()
	reg.Register("wait", func(ctx context.Context, env taskexecutor.Environment) error {
		<-ctx.Done() // runs until canceled
		return ctx.Err()
	})
	ctx := context.Background()
	mc, err := minicluster.Start(ctx, minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 1, Registry: reg,
		ClientAlivenessCheckInterval: 10 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mc.Close()

	g := jobgraph.New("attached", jobgraph.Streaming)
	g.AddVertex("wait", "wait", 1)
	client, err := dispatcher.SubmitAttached(ctx, mc, g, dispatcher.JobClientOptions{
		ShutdownOnAttachedExit: true,
		HeartbeatInterval:      5 * time.Millisecond,
		HeartbeatTimeout:       50 * time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = client.Close() // the client goes away without canceling the job
	res, err := client.Result(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("result:", res.Status)
	// Output:
	// result: CANCELED
}
