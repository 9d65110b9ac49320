package minicluster_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/resourcemanager"
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

func TestKilledTaskExecutorIsLostAfterExactlyTheHeartbeatTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		started := make(chan jobgraph.ExecutionAttemptID, 2)
		statuses := &statusLog{begin: time.Now()}
		mc := start(t, minicluster.Config{
			TaskExecutors:     2,
			Registry:          blockingRegistry(started),
			HeartbeatInterval: time.Second,
			HeartbeatTimeout:  5 * time.Second,
			JobStatusListener: statuses.listen,
		})
		g := jobgraph.New("blocking", jobgraph.Streaming)
		g.AddVertex("v", "block", 2)
		require.NoError(t, mc.SubmitJob(ctx, g))
		// The slots are requested, and the tasks deployed, one requirement-check delay (50 ms)
		// after the JobMaster declared what it needs.
		at(statuses.begin, 50*time.Millisecond)
		require.Len(t, started, 2)

		// One subtask on each TaskExecutor, both RUNNING.
		archived, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		locations := map[jobgraph.ResourceID]int{}
		for _, st := range archived.JobVertices[0].Subtasks {
			assert.Equal(t, jobgraph.ExecutionStateRunning, st.State)
			locations[st.Location] = st.Subtask
		}
		require.Len(t, locations, 2)
		lost, kept := locations["taskexecutor-1"], locations["taskexecutor-0"]

		// Heartbeats flow every second: the ResourceManager's since the TaskExecutors registered
		// (0 s), the JobMaster's since they offered their slots (50 ms). The TaskExecutor answers
		// the ones at 1 s, 1.05 s, 2 s and 2.05 s and is killed at 2.5 s. 5 s after its last
		// heartbeat it is lost: at 7 s to the ResourceManager, at 7.05 s to the JobMaster.
		at(statuses.begin, 2500*time.Millisecond)
		mc.TaskExecutors()[1].Kill()
		at(statuses.begin, 7*time.Second-time.Nanosecond)
		assert.Equal(t, 2, mc.ResourceManager().NumRegisteredTaskExecutors())
		at(statuses.begin, 7*time.Second)
		assert.Equal(t, 1, mc.ResourceManager().NumRegisteredTaskExecutors(), "the ResourceManager dropped it")
		assert.Equal(t, 1, mc.ResourceManager().NumRegisteredSlots())
		at(statuses.begin, 7050*time.Millisecond-time.Nanosecond)
		st, err := mc.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, st, "still running 1 ns before the JobMaster's timeout")

		at(statuses.begin, 7050*time.Millisecond)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
		require.Error(t, res.RootCause)
		assert.ErrorIs(t, res.RootCause, jobmaster.ErrHeartbeatTimeout)
		assert.Contains(t, res.RootCause.Error(), "heartbeat of TaskExecutor taskexecutor-1 timed out after 5s")
		require.NotNil(t, res.Failure)
		assert.Contains(t, res.Failure.Message, "heartbeat of TaskExecutor taskexecutor-1 timed out after 5s")
		assert.Equal(t, []string{"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s", "FAILING at 7.05s", "FAILED at 7.05s"}, statuses.get())

		// The task on the lost TaskExecutor FAILED with the timeout; the other one was canceled.
		archived, err = mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		subtasks := archived.JobVertices[0].Subtasks
		assert.Equal(t, jobgraph.ExecutionStateFailed, subtasks[lost].State)
		assert.Contains(t, subtasks[lost].FailureMessage, "heartbeat of TaskExecutor taskexecutor-1 timed out after 5s")
		assert.Equal(t, 7050*time.Millisecond, subtasks[lost].StateTimestamps[jobgraph.ExecutionStateFailed].Sub(statuses.begin))
		assert.Equal(t, jobgraph.ExecutionStateCanceled, subtasks[kept].State)
	})
}

func TestTaskExecutorLossRestartsTheTasksUnderTheRestartStrategy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		started := make(chan jobgraph.ExecutionAttemptID, 4)
		begin := time.Now()
		statuses := &statusLog{begin: begin}
		mc := start(t, minicluster.Config{
			TaskExecutors:        2,
			SlotsPerTaskExecutor: 2,
			Registry:             blockingRegistry(started),
			HeartbeatInterval:    time.Second,
			HeartbeatTimeout:     5 * time.Second,
			JobStatusListener:    statuses.listen,
		})
		g := jobgraph.New("restarting", jobgraph.Streaming)
		g.AddVertex("v", "block", 2)
		g.RestartStrategy = jobgraph.FixedDelayRestart(3, time.Second)
		require.NoError(t, mc.SubmitJob(ctx, g))
		at(begin, 50*time.Millisecond) // one requirement-check delay after the declaration
		require.Len(t, started, 2)
		<-started
		<-started
		archived, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		for _, st := range archived.JobVertices[0].Subtasks {
			require.Equal(t, jobgraph.ResourceID("taskexecutor-0"), st.Location, "slots are matched in registration order")
		}

		// taskexecutor-0 answers the ResourceManager's heartbeats at 1 s and 2 s and the
		// JobMaster's at 1.05 s (it offered its slots at 50 ms), and is killed at 2.03 s: at
		// 6.05 s the JobMaster loses it, both tasks fail, and 1 s later (fixed-delay), at 7.05 s,
		// they ask for slots again. The ResourceManager lost taskexecutor-0 at 7 s; it requests
		// taskexecutor-1's slots one requirement-check delay after the declaration, and the
		// tasks run there at 7.10 s.
		at(begin, 2030*time.Millisecond)
		mc.TaskExecutors()[0].Kill()
		at(begin, 7050*time.Millisecond-time.Nanosecond)
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID))
		at(begin, 7100*time.Millisecond-time.Nanosecond)
		assert.Empty(t, started)
		assert.Equal(t, 1, mc.ResourceManager().NumRegisteredTaskExecutors())
		archived, err = mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		require.Len(t, archived.ExceptionHistory, 2)
		for i, e := range archived.ExceptionHistory {
			assert.Contains(t, e.Message, "heartbeat of TaskExecutor taskexecutor-0 timed out after 5s")
			assert.Equal(t, jobgraph.ResourceID("taskexecutor-0"), e.Location)
			assert.Equal(t, 6050*time.Millisecond, e.Timestamp.Sub(begin), "entry %d", i)
		}

		at(begin, 7100*time.Millisecond)
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
			assert.Equal(t, 7100*time.Millisecond, st.StateTimestamps[jobgraph.ExecutionStateRunning].Sub(begin))
		}
		assert.Equal(t, 1, mc.ResourceManager().NumRegisteredTaskExecutors())

		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		assert.Equal(t, []string{"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s", "RESTARTING at 6.05s", "RUNNING at 7.05s", "CANCELLING at 7.1s", "CANCELED at 7.1s"}, statuses.get())
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
		time.Sleep(resourcemanager.DefaultRequirementCheckDelay) // the slots are requested 50 ms after the declaration
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
