package cluster_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// A TaskExecutor that fails fatally ends its runner, as Flink's TaskManagerRunner.onFatalError
// ends the TaskManager process: here a task ignores its cancellation past
// task.cancellation.timeout (10 s). At exactly 10 s after the cancellation the runner's Done is
// closed; Wait returns an error wrapping the TaskCancellationTimeoutError; the host's own
// FatalErrorHandler heard the same error first, once.
func TestFatalTaskExecutorErrorClosesItsRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := rpc.NewLocalService()
		defer svc.Close()
		services := embedded.New()
		defer services.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: services})
		require.NoError(t, err)

		release := make(chan struct{})
		defer close(release) // the stuck task's goroutine ends with the test
		reg := taskexecutor.NewRegistry()
		reg.Register("stuck", func(ctx context.Context, env taskexecutor.Environment) error {
			<-release // ignores ctx
			return nil
		})
		var heard []error
		cfg := taskExecutor("te-a", svc, nil, services, nil)
		cfg.TaskExecutor.Registry = reg
		cfg.TaskExecutor.TaskCancellationTimeout = 10 * time.Second
		cfg.TaskExecutor.FatalErrorHandler = func(err error) { heard = append(heard, err) } // on the TaskExecutor's loop only
		te, err := cluster.RunTaskExecutor(ctx, cfg)
		require.NoError(t, err)
		_, err = te.TaskExecutor().WaitRegistered(ctx)
		require.NoError(t, err)
		require.NoError(t, jm.AwaitLeadership(ctx))

		d := jm.LeaderDispatcher()
		g := jobgraph.New("stuck", jobgraph.Streaming)
		g.AddVertex("stuck", "stuck", 1)
		require.NoError(t, d.SubmitJob(ctx, g))
		synctest.Wait() // deployed and RUNNING: every goroutine of the bubble waits
		a, err := d.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		require.Len(t, a.JobVertices, 1)
		require.Equal(t, jobgraph.ExecutionStateRunning, a.JobVertices[0].Subtasks[0].State)
		require.NoError(t, d.CancelJob(ctx, g.JobID))
		canceled := time.Now()
		synctest.Wait()

		<-te.Done()
		assert.Equal(t, 10*time.Second, time.Since(canceled), "the runner closed at the cancellation timeout")
		err = te.Wait()
		require.ErrorIs(t, err, taskexecutor.ErrTaskCancellationTimeout)
		var tce *taskexecutor.TaskCancellationTimeoutError
		require.ErrorAs(t, err, &tce)
		assert.Equal(t, "stuck (1/1)", tce.TaskName)
		require.Len(t, heard, 1)
		assert.True(t, errors.Is(heard[0], taskexecutor.ErrTaskCancellationTimeout))

		cancel()
		require.NoError(t, jm.Wait())
	})
}
