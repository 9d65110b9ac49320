package minicluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// blockingRegistry has "block": a task that runs until it is canceled, telling started its
// attempt once it runs.
func blockingRegistry(started chan<- jobgraph.ExecutionAttemptID) *taskexecutor.Registry {
	reg := registry()
	reg.Register("block", func(ctx context.Context, env taskexecutor.Environment) error {
		started <- env.Info().ExecutionAttemptID
		<-ctx.Done()
		return ctx.Err()
	})
	return reg
}

// statusLog records the job status transitions with their virtual time since begin.
type statusLog struct {
	mu    sync.Mutex
	begin time.Time
	seen  []string
}

func (l *statusLog) listen(_ jobgraph.JobID, st jobgraph.JobStatus, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, st.String()+" at "+at.Sub(l.begin).String())
}

func (l *statusLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// With heartbeat.rpc-failure-threshold -1 only heartbeat.timeout loses a killed TaskExecutor (the
// default, 2 failed heartbeat requests, is TestKilledTaskExecutorIsLostAtTheRPCFailureThreshold).
func TestKilledTaskExecutorIsLostAfterExactlyTheHeartbeatTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Heartbeats flow every second; the TaskExecutor answers the ones at 1 s and 2 s and is
		// killed at 2.5 s. 5 s after its last heartbeat, at 7 s, it is lost.
		l := loseTaskExecutorAt(t, -1, 7*time.Second, (*taskexecutor.TaskExecutor).Kill)
		assert.ErrorIs(t, l.res.RootCause, jobmaster.ErrHeartbeatTimeout)
		assert.Contains(t, l.res.RootCause.Error(), "heartbeat of TaskExecutor taskexecutor-1 timed out after 5s")
		require.NotNil(t, l.res.Failure)
		assert.Contains(t, l.res.Failure.Message, "heartbeat of TaskExecutor taskexecutor-1 timed out after 5s")

		// The task on the lost TaskExecutor FAILED with the timeout; the other one was canceled.
		archived, err := l.mc.RequestJob(context.Background(), l.g.JobID)
		require.NoError(t, err)
		subtasks := archived.JobVertices[0].Subtasks
		assert.Equal(t, jobgraph.ExecutionStateFailed, subtasks[l.lost].State)
		assert.Contains(t, subtasks[l.lost].FailureMessage, "heartbeat of TaskExecutor taskexecutor-1 timed out after 5s")
		assert.Equal(t, 7*time.Second, subtasks[l.lost].StateTimestamps[jobgraph.ExecutionStateFailed].Sub(l.statuses.begin))
		assert.Equal(t, jobgraph.ExecutionStateCanceled, subtasks[l.kept].State)
	})
}

func TestTaskExecutorLossRestartsTheTasksUnderTheRestartStrategy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		started := make(chan jobgraph.ExecutionAttemptID, 4)
		begin := time.Now()
		statuses := &statusLog{begin: begin}
		mc := start(t, minicluster.Config{
			TaskExecutors:                2,
			SlotsPerTaskExecutor:         2,
			Registry:                     blockingRegistry(started),
			HeartbeatInterval:            time.Second,
			HeartbeatTimeout:             5 * time.Second,
			HeartbeatRPCFailureThreshold: -1, // the loss at heartbeat.timeout, as in the test above
			JobStatusListener:            statuses.listen,
		})
		g := jobgraph.New("restarting", jobgraph.Streaming)
		g.AddVertex("v", "block", 2)
		g.RestartStrategy = jobgraph.FixedDelayRestart(3, time.Second)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		require.Len(t, started, 2)
		<-started
		<-started
		archived, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		for _, st := range archived.JobVertices[0].Subtasks {
			require.Equal(t, jobgraph.ResourceID("taskexecutor-0"), st.Location, "slots are matched in registration order")
		}

		// taskexecutor-0 answers the heartbeats at 1 s and 2 s and is killed at 2.5 s: at 7 s it
		// is lost, both tasks fail, and 1 s later (fixed-delay) they run again on taskexecutor-1.
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		mc.TaskExecutors()[0].Kill()
		time.Sleep(5500*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, started)
		archived, err = mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRestarting, archived.Status)
		require.Len(t, archived.ExceptionHistory, 2)
		for i, e := range archived.ExceptionHistory {
			assert.Contains(t, e.Message, "heartbeat of TaskExecutor taskexecutor-0 timed out after 5s")
			assert.Equal(t, jobgraph.ResourceID("taskexecutor-0"), e.Location)
			assert.Equal(t, 7*time.Second, e.Timestamp.Sub(begin), "entry %d", i)
		}

		time.Sleep(time.Nanosecond) // 8 s
		synctest.Wait()
		require.Len(t, started, 2)
		for range 2 {
			assert.Equal(t, 1, (<-started).AttemptNumber)
		}
		archived, err = mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, archived.Status)
		for _, st := range archived.JobVertices[0].Subtasks {
			assert.Equal(t, jobgraph.ExecutionStateRunning, st.State)
			assert.Equal(t, 1, st.AttemptNumber)
			assert.Equal(t, jobgraph.ResourceID("taskexecutor-1"), st.Location)
			assert.Equal(t, 8*time.Second, st.StateTimestamps[jobgraph.ExecutionStateRunning].Sub(begin))
		}
		assert.Equal(t, 1, mc.ResourceManager().NumRegisteredTaskExecutors())

		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		assert.Equal(t, []string{"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s", "RESTARTING at 7s", "RUNNING at 8s", "CANCELLING at 8s", "CANCELED at 8s"}, statuses.get())
	})
}

func TestCrashTaskFailsTheJobWithItsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		started := make(chan jobgraph.ExecutionAttemptID, 2)
		mc := start(t, minicluster.Config{TaskExecutors: 2, Registry: blockingRegistry(started)})
		g := jobgraph.New("crashing", jobgraph.Streaming)
		g.AddVertex("v", "block", 2)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		require.Len(t, started, 2)
		attempt := <-started

		// Exactly one TaskExecutor runs the attempt; the other does not know it.
		crashed := 0
		for _, te := range mc.TaskExecutors() {
			err := te.CrashTask(attempt, errBoom)
			if err == nil {
				crashed++
				continue
			}
			assert.ErrorIs(t, err, taskexecutor.ErrTaskNotFound)
		}
		require.Equal(t, 1, crashed)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
		assert.ErrorIs(t, res.RootCause, errBoom)
		assert.False(t, errors.Is(res.RootCause, jobmaster.ErrHeartbeatTimeout))
		archived, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		sub := archived.JobVertices[0].Subtasks
		assert.Equal(t, jobgraph.ExecutionStateFailed, sub[attempt.ExecutionVertexID.Subtask].State)
		assert.Equal(t, jobgraph.ExecutionStateCanceled, sub[1-attempt.ExecutionVertexID.Subtask].State)
	})
}

func TestHeartbeatConfigurationIsChecked(t *testing.T) {
	_, err := minicluster.New(minicluster.Config{Registry: registry(), HeartbeatInterval: time.Minute})
	assert.EqualError(t, err, "minicluster: invalid configuration: heartbeat: heartbeat.timeout 50s is shorter than heartbeat.interval 1m0s")
	_, err = minicluster.New(minicluster.Config{Registry: registry(), HeartbeatTimeout: -time.Second})
	assert.EqualError(t, err, "minicluster: invalid configuration: heartbeat: heartbeat.interval 0s and heartbeat.timeout -1s must not be negative")
}

// lostTaskExecutor is what loseTaskExecutorAt saw: the cluster, the job, its status log, its
// result, and the subtasks that ran on the lost and on the kept TaskExecutor.
type lostTaskExecutor struct {
	mc         *minicluster.MiniCluster
	g          *jobgraph.JobGraph
	statuses   *statusLog
	res        *jobgraph.JobResult
	lost, kept int
}

// loseTaskExecutorAt runs, in a synctest bubble, a job of 2 blocking subtasks on 2
// TaskExecutors whose JobMaster and ResourceManager ask for heartbeats every second from 0 s
// (heartbeat.timeout 5 s, heartbeat.rpc-failure-threshold threshold). At 2.5 s gone makes
// taskexecutor-1 go away; the job must still run, with both TaskExecutors registered, 1 ns
// before lost, and at lost the ResourceManager must have dropped it (1 TaskExecutor, 1 slot left)
// and the job must be FAILED, its statuses ending FAILING and FAILED at lost.
func loseTaskExecutorAt(t *testing.T, threshold int, lost time.Duration, gone func(*taskexecutor.TaskExecutor)) lostTaskExecutor {
	t.Helper()
	ctx := context.Background()
	started := make(chan jobgraph.ExecutionAttemptID, 2)
	statuses := &statusLog{begin: time.Now()}
	mc := start(t, minicluster.Config{
		TaskExecutors:                2,
		Registry:                     blockingRegistry(started),
		HeartbeatInterval:            time.Second,
		HeartbeatTimeout:             5 * time.Second,
		HeartbeatRPCFailureThreshold: threshold,
		JobStatusListener:            statuses.listen,
	})
	g := jobgraph.New("blocking", jobgraph.Streaming)
	g.AddVertex("v", "block", 2)
	require.NoError(t, mc.SubmitJob(ctx, g))
	synctest.Wait()
	require.Len(t, started, 2)
	archived, err := mc.RequestJob(ctx, g.JobID)
	require.NoError(t, err)
	locations := map[jobgraph.ResourceID]int{} // one subtask on each TaskExecutor, both RUNNING
	for _, st := range archived.JobVertices[0].Subtasks {
		assert.Equal(t, jobgraph.ExecutionStateRunning, st.State)
		locations[st.Location] = st.Subtask
	}
	require.Len(t, locations, 2)

	time.Sleep(2500 * time.Millisecond)
	synctest.Wait()
	gone(mc.TaskExecutors()[1])
	time.Sleep(lost - 2500*time.Millisecond - time.Nanosecond)
	synctest.Wait()
	st, err := mc.RequestJobStatus(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusRunning, st, "still running 1 ns before it is lost")
	assert.Equal(t, 2, mc.ResourceManager().NumRegisteredTaskExecutors())

	time.Sleep(time.Nanosecond)
	synctest.Wait()
	assert.Equal(t, 1, mc.ResourceManager().NumRegisteredTaskExecutors(), "the ResourceManager dropped it at the same instant")
	assert.Equal(t, 1, mc.ResourceManager().NumRegisteredSlots())
	res, err := mc.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
	require.Error(t, res.RootCause)
	secs := fmt.Sprintf("%gs", lost.Seconds())
	assert.Equal(t, []string{"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s", "FAILING at " + secs, "FAILED at " + secs}, statuses.get())
	return lostTaskExecutor{mc: mc, g: g, statuses: statuses, res: res, lost: locations["taskexecutor-1"], kept: locations["taskexecutor-0"]}
}

// heartbeat.rpc-failure-threshold (FLINK-23209): the TaskExecutor killed at 2.5 s answers no
// heartbeat request from then on; its gateway fails with an unreachable error
// (taskexecutor.ErrKilled), so the JobMaster and the ResourceManager, which both ask every second
// from 0 s, lose it at the threshold's failed request — 3 s, 4 s (the default, 2) or 5 s — long
// before its heartbeat.timeout at 7 s, with the unreachable cause instead of the timeout.
func TestKilledTaskExecutorIsLostAtTheRPCFailureThreshold(t *testing.T) {
	for _, tc := range []struct {
		threshold, failures int
		lost                time.Duration
	}{
		{0, 2, 4 * time.Second},
		{1, 1, 3 * time.Second},
		{3, 3, 5 * time.Second},
	} {
		t.Run(fmt.Sprintf("threshold-%d", tc.threshold), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := loseTaskExecutorAt(t, tc.threshold, tc.lost, (*taskexecutor.TaskExecutor).Kill)
				want := fmt.Sprintf("TaskExecutor taskexecutor-1 is no longer reachable: %d consecutive heartbeat RPCs failed, the last with: TaskExecutor taskexecutor-1: taskexecutor: killed", tc.failures)
				if tc.failures == 1 {
					want = "TaskExecutor taskexecutor-1 is no longer reachable: its heartbeat RPC failed with: TaskExecutor taskexecutor-1: taskexecutor: killed"
				}
				assert.ErrorIs(t, l.res.RootCause, jobmaster.ErrTaskExecutorUnreachable)
				assert.NotErrorIs(t, l.res.RootCause, jobmaster.ErrHeartbeatTimeout)
				assert.Contains(t, l.res.RootCause.Error(), want)

				archived, err := l.mc.RequestJob(context.Background(), l.g.JobID)
				require.NoError(t, err)
				subtasks := archived.JobVertices[0].Subtasks
				assert.Equal(t, jobgraph.ExecutionStateFailed, subtasks[l.lost].State)
				assert.Contains(t, subtasks[l.lost].FailureMessage, want)
				assert.Equal(t, tc.lost, subtasks[l.lost].StateTimestamps[jobgraph.ExecutionStateFailed].Sub(l.statuses.begin))
				assert.Equal(t, jobgraph.ExecutionStateCanceled, subtasks[l.kept].State)
			})
		})
	}
}

// A TaskExecutor closed through its own Close (not RemoveTaskExecutor, which says goodbye) is
// gone as a killed one is: its gateway answers taskexecutor.ErrClosed as an rpc.UnreachableError
// (Flink: an RPC to a stopped endpoint fails with RecipientUnreachableException), so the JobMaster
// and the ResourceManager, asking every second from 0 s, lose it at their second failed request
// after the close at 2.5 s — 4 s — not at its heartbeat.timeout at 7 s; with the threshold -1 they
// wait for that timeout.
func TestClosedTaskExecutorIsLostAtTheRPCFailureThreshold(t *testing.T) {
	for _, tc := range []struct {
		threshold int
		lost      time.Duration
		cause     string
	}{
		{0, 4 * time.Second, "TaskExecutor taskexecutor-1 is no longer reachable: 2 consecutive heartbeat RPCs failed, the last with: TaskExecutor taskexecutor-1: taskexecutor: closed"},
		{-1, 7 * time.Second, "heartbeat of TaskExecutor taskexecutor-1 timed out after 5s"},
	} {
		t.Run(fmt.Sprintf("threshold%d", tc.threshold), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := loseTaskExecutorAt(t, tc.threshold, tc.lost, func(te *taskexecutor.TaskExecutor) { require.NoError(t, te.Close()) })
				assert.Contains(t, l.res.RootCause.Error(), tc.cause)
				if tc.threshold == -1 {
					assert.ErrorIs(t, l.res.RootCause, jobmaster.ErrHeartbeatTimeout)
				} else {
					assert.ErrorIs(t, l.res.RootCause, jobmaster.ErrTaskExecutorUnreachable)
					assert.NotErrorIs(t, l.res.RootCause, jobmaster.ErrHeartbeatTimeout)
				}
			})
		})
	}
}

func TestHeartbeatRPCFailureThresholdIsChecked(t *testing.T) {
	_, err := minicluster.New(minicluster.Config{Registry: registry(), HeartbeatRPCFailureThreshold: -2})
	assert.EqualError(t, err, "minicluster: invalid configuration: HeartbeatRPCFailureThreshold (heartbeat.rpc-failure-threshold) is -2; want a positive number of failed heartbeat RPCs, or -1 to turn the detection off")
	for _, n := range []int{-1, 0, 1, 5} {
		mc, err := minicluster.New(minicluster.Config{Registry: registry(), HeartbeatRPCFailureThreshold: n})
		require.NoError(t, err, n)
		require.NoError(t, mc.Close())
	}
}
