package dispatcher_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// The Dispatcher's face as a host sees it: a streaming job that runs until canceled, its status, a
// second submission under its JobID (refused, the job untouched), cancellation and the result.
func ExampleDispatcher() {
	started := make(chan struct{})
	reg := taskexecutor.NewRegistry()
	reg.Register("wait", func(ctx context.Context, env taskexecutor.Environment) error {
		close(started)
		<-ctx.Done() // runs until canceled
		return ctx.Err()
	})
	ctx := context.Background()
	mc, err := minicluster.Start(ctx, minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 1, Registry: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mc.Close()
	var d dispatcher.Dispatcher = mc.Dispatcher()

	g := jobgraph.New("forever", jobgraph.Streaming)
	g.AddVertex("wait", "wait", 1)
	if err := d.SubmitJob(ctx, g); err != nil {
		fmt.Println(err)
		return
	}
	<-started
	status, _ := d.RequestJobStatus(ctx, g.JobID)
	fmt.Println("status:", status)

	err = d.SubmitJob(ctx, g)
	fmt.Println("again:", errors.Is(err, dispatcher.ErrDuplicateJobSubmission))
	status, _ = d.RequestJobStatus(ctx, g.JobID)
	fmt.Println("status:", status)

	if err := d.CancelJob(ctx, g.JobID); err != nil {
		fmt.Println(err)
		return
	}
	res, err := d.RequestJobResult(ctx, g.JobID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("result:", res.Status)

	var dup *dispatcher.DuplicateJobSubmissionError
	if errors.As(d.SubmitJob(ctx, g), &dup) {
		fmt.Println("after the end:", dup.GloballyTerminated)
	}
	_, err = d.RequestJobStatus(ctx, jobgraph.NewJobID())
	fmt.Println("unknown job:", errors.Is(err, dispatcher.ErrJobNotFound))
	// Output:
	// status: RUNNING
	// again: true
	// status: RUNNING
	// result: CANCELED
	// after the end: true
	// unknown job: true
}
