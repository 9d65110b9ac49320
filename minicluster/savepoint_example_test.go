package minicluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// counterState is a task's CheckpointHandler whose state is one number.
type counterState struct{ v *int64 }

func (c counterState) SnapshotState(context.Context, checkpoint.CheckpointID) (checkpoint.StateHandle, error) {
	return checkpoint.StateHandle{Data: strconv.AppendInt(nil, *c.v, 10), Size: 8}, nil
}
func (counterState) NotifyCheckpointComplete(context.Context, checkpoint.CheckpointID) error {
	return nil
}
func (counterState) NotifyCheckpointAborted(context.Context, checkpoint.CheckpointID) {}

// Stop a streaming job with a savepoint and read the savepoint back. "numbers" emits 1, 2, 3, …
// and keeps how many it emitted; "sum" adds them up. The savepoint's barrier splits the stream
// exactly: the sum in the savepoint is 1 + 2 + … + n for the n in it.
func ExampleMiniCluster_StopWithSavepoint() {
	reg := taskexecutor.NewRegistry()
	reg.Register("numbers", func(ctx context.Context, env taskexecutor.Environment) error {
		var n int64
		env.SetCheckpointHandler(counterState{&n})
		for {
			if err := env.Output(0).Emit(ctx, 0, n+1); err != nil {
				if errors.Is(err, taskexecutor.ErrStopped) {
					return nil // stop-with-savepoint: the task ends FINISHED
				}
				return err
			}
			n++
		}
	})
	reg.Register("sum", func(ctx context.Context, env taskexecutor.Environment) error {
		var sum int64
		env.SetCheckpointHandler(counterState{&sum})
		for {
			r, err := env.Input(0).Next(ctx)
			if errors.Is(err, taskexecutor.ErrStopped) {
				return nil
			}
			if err != nil {
				return err
			}
			sum += r.(int64)
		}
	})

	dir, err := os.MkdirTemp("", "savepoints")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	running := make(chan struct{}, 2)
	ctx := context.Background()
	mc, err := minicluster.Start(ctx, minicluster.Config{
		TaskExecutors: 1, SlotsPerTaskExecutor: 1, Registry: reg,
		SavepointDirectory: dir, // execution.checkpointing.savepoint-dir
		ExecutionStateListener: func(_ jobgraph.ExecutionAttemptID, s jobgraph.ExecutionState) {
			if s == jobgraph.ExecutionStateRunning {
				select {
				case running <- struct{}{}:
				default: // never blocks the JobMaster's loop
				}
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mc.Close()

	g := jobgraph.New("sum of numbers", jobgraph.Streaming)
	g.JobID, _ = jobgraph.ParseJobID("7e57ab1e000000000000000000000001")
	g.Checkpointing = jobgraph.CheckpointingSettings{Interval: time.Hour} // the tasks snapshot their state
	numbers := g.AddVertex("numbers", "numbers", 1)
	sum := g.AddVertex("sum", "sum", 1)
	g.Connect(numbers, sum, jobgraph.Pointwise, jobgraph.PipelinedBounded)
	if err := mc.SubmitJob(ctx, g); err != nil {
		fmt.Println(err)
		return
	}
	<-running
	<-running // both tasks RUNNING

	path, err := mc.StopWithSavepoint(ctx, g.JobID, "") // "": execution.checkpointing.savepoint-dir
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := mc.RequestJobResult(ctx, g.JobID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, filepath.Dir(path) == dir, filepath.Base(path)[:len("savepoint-7e57ab-")])

	sp, err := checkpoint.LoadSavepoint(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	n, _ := strconv.ParseInt(string(sp.TaskStates[0].State.Data), 10, 64)
	total, _ := strconv.ParseInt(string(sp.TaskStates[1].State.Data), 10, 64)
	fmt.Println(sp.CheckpointID, sp.Properties.Type, len(sp.TaskStates), "task states")
	fmt.Println("sum is 1 + … + n:", total == n*(n+1)/2)
	// Output:
	// FINISHED true savepoint-7e57ab-
	// 1 SYNC_SAVEPOINT 2 task states
	// sum is 1 + … + n: true
}
