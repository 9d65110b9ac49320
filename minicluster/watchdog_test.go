package minicluster_test

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/logtest"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Scenario (issue 8): a MiniCluster of 2 TaskExecutors × 1 slot, Flink's
// task.cancellation.timeout (180 s), a job stuck →(PIPELINED) failer, p=1, fixed-delay restart
// (1 attempt, 1 s). Attempt 0 of failer fails at t0 = 5 s; the region failover cancels stuck,
// whose attempt 0 ignores its cancellation. At exactly t0 + 180 s its TaskExecutor fails
// fatally — an ERROR names the stuck task — and disconnects, so the restart, pending since
// t0 + 1 s, deploys both tasks on the other TaskExecutor at that same instant: one restart, whose
// exception history entry has the lost stuck task as a concurrent failure.
//
// Config.TaskCancellationTimeout reaches the TaskExecutors: with 20 s the same happens at t0 + 20 s.
func TestStuckTaskFailsItsTaskExecutorAndTheJobRestartsElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name       string
		configured time.Duration // minicluster.Config.TaskCancellationTimeout
		timeout    time.Duration // the timeout in force
		redeployed string        // when both tasks are redeployed, t0 + timeout
	}{
		{"Flink's default", 0, 180 * time.Second, "3m5s"},
		{"configured", 20 * time.Second, 20 * time.Second, "25s"},
	} {
		t.Run(tc.name, func(t *testing.T) { stuckTaskFailsItsTaskExecutor(t, tc.configured, tc.timeout, tc.redeployed) })
	}
}

func stuckTaskFailsItsTaskExecutor(t *testing.T, configured, timeout time.Duration, redeployed string) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		deploys := newDeployLog(begin)
		logger, errs := logtest.NewTimedRecorder(slog.LevelError)
		release := make(chan struct{}) // lets the stuck attempt end when the test is over
		defer close(release)
		reg := taskexecutor.NewRegistry()
		reg.Register("stuck", func(ctx context.Context, env taskexecutor.Environment) error {
			if env.Info().AttemptNumber == 0 {
				<-release // ignores its cancellation
				return ctx.Err()
			}
			<-ctx.Done()
			return ctx.Err()
		})
		reg.Register("failer", func(ctx context.Context, env taskexecutor.Environment) error {
			if env.Info().AttemptNumber == 0 {
				time.Sleep(5 * time.Second)
				return errBoom
			}
			<-ctx.Done()
			return ctx.Err()
		})
		mc := start(t, minicluster.Config{
			TaskExecutors:           2,
			Registry:                reg,
			ExecutionStateListener:  deploys.listen,
			Logger:                  logger,
			TaskCancellationTimeout: configured,
		})
		g := jobgraph.New("stuck-on-cancel", jobgraph.Streaming)
		stuck := g.AddVertex("stuck", "stuck", 1)
		g.Connect(stuck, g.AddVertex("failer", "failer", 1), jobgraph.Pointwise, jobgraph.Pipelined)
		g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
		deploys.name(g)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		assert.Equal(t, []string{"failer_0#0 at 0s", "stuck_0#0 at 0s"}, deploys.since(0))
		archived, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		first := archived.JobVertices[0].Subtasks[0].Location
		other := jobgraph.ResourceID("taskexecutor-0")
		if first == other {
			other = "taskexecutor-1"
		}

		t0 := 5 * time.Second
		at(begin, t0)
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID))
		at(begin, t0+timeout-time.Nanosecond)
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID), "the restart waits for stuck to be canceled")
		assert.Len(t, deploys.since(0), 2, "nothing redeployed yet")
		assert.Empty(t, errs())
		running := mc.TaskExecutors()
		assert.Len(t, running, 2)

		at(begin, t0+timeout)
		logged := errs()
		require.Len(t, logged, 1)
		assert.Equal(t, t0+timeout, logged[0].Time.Sub(begin))
		assert.Contains(t, logged[0].Msg, "task.cancellation.timeout")
		for k, v := range map[string]any{"taskExecutor": string(first), "task": "stuck (1/1)", "vertex": "stuck", "subtask": int64(0), "attempt": int64(0)} {
			assert.Equal(t, v, logged[0].Values[k], k)
		}
		var failed *taskexecutor.TaskExecutor
		for _, te := range running {
			if te.ResourceID() == first {
				failed = te
			}
		}
		require.NotNil(t, failed)
		assert.ErrorIs(t, failed.FatalError(), taskexecutor.ErrTaskCancellationTimeout)
		assert.Equal(t, 1, mc.ResourceManager().NumRegisteredTaskExecutors(), "the ResourceManager dropped the failed TaskExecutor")
		require.Len(t, mc.TaskExecutors(), 1, "the cluster no longer lists the failed TaskExecutor")
		assert.Equal(t, other, mc.TaskExecutors()[0].ResourceID())

		assert.Equal(t, []string{"failer_0#1 at " + redeployed, "stuck_0#1 at " + redeployed}, deploys.since(2))
		assert.Equal(t, jobgraph.JobStatusRunning, jobStatus(t, mc, g.JobID))
		archived, err = mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		for _, jv := range archived.JobVertices {
			st := jv.Subtasks[0]
			assert.Equal(t, jobgraph.ExecutionStateRunning, st.State, jv.Name)
			assert.Equal(t, 1, st.AttemptNumber, jv.Name)
			assert.Equal(t, other, st.Location, "%s runs on the other TaskExecutor", jv.Name)
		}

		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		// One restart: the stuck task's lost slot joined the pending one as a concurrent failure.
		require.Len(t, res.ExceptionHistory, 1)
		h := res.ExceptionHistory[0]
		assert.Equal(t, "failer (1/1)", h.TaskName)
		assert.Equal(t, t0, h.Timestamp.Sub(begin))
		require.Len(t, h.Concurrent, 1)
		assert.Equal(t, "stuck (1/1)", h.Concurrent[0].TaskName)
		assert.Equal(t, t0+timeout, h.Concurrent[0].Timestamp.Sub(begin))
		assert.Contains(t, h.Concurrent[0].Message, "TaskExecutor "+string(first)+" failed fatally: task stuck (1/1) (vertex \"stuck\", subtask 0, attempt 0)")
	})
}
