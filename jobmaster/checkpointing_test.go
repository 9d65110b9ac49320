package jobmaster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// ckJob is src(2) –POINTWISE PIPELINED→ sink(2), checkpointing every 100 ms.
func ckJob() *jobgraph.JobGraph {
	g := jobgraph.New("checkpointed", jobgraph.Streaming)
	src := g.AddVertex("src", "noop", 2)
	sink := g.AddVertex("sink", "noop", 2)
	g.Connect(src, sink, jobgraph.Pointwise, jobgraph.Pipelined)
	g.Checkpointing = jobgraph.CheckpointingSettings{Interval: 100 * time.Millisecond}
	g.RestartStrategy = jobgraph.FixedDelayRestart(10, time.Second)
	return g
}

var ckTasks = []string{"src (1/2)", "sink (1/2)", "src (2/2)", "sink (2/2)"}

// startCk runs ckJob's four tasks on one fake TaskExecutor, all RUNNING at 0 s.
func startCk(t *testing.T, cfg jobmaster.Config) (*hbEnv, *hbTE) {
	t.Helper()
	e := newHBEnvFor(t, cfg, ckJob())
	te := e.addTE("te-1")
	e.offer(te, 0, "A")
	e.offer(te, 1, "B")
	submits := te.snapshot().submits
	require.Len(t, submits, 4)
	for _, tdd := range submits {
		assert.True(t, tdd.CheckpointingEnabled, tdd.TaskName)
		assert.Nil(t, tdd.TaskRestore, tdd.TaskName)
	}
	for _, name := range ckTasks {
		e.report(te, name, jobgraph.ExecutionStateRunning)
	}
	return e, te
}

// attempt is the attempt deployed as taskName (its latest deployment).
func (e *hbEnv) attempt(te *hbTE, taskName string) jobgraph.ExecutionAttemptID {
	e.t.Helper()
	var out jobgraph.ExecutionAttemptID
	found := false
	for _, tdd := range te.snapshot().submits {
		if tdd.TaskName == taskName {
			out, found = tdd.ExecutionAttemptID, true
		}
	}
	require.True(e.t, found, "%s deployed", taskName)
	return out
}

func (e *hbEnv) ack(te *hbTE, taskName string, id checkpoint.CheckpointID) {
	e.t.Helper()
	require.NoError(e.t, e.gw.AcknowledgeCheckpoint(e.ctx, e.token, e.g.JobID, checkpoint.AcknowledgeCheckpoint{
		Attempt: e.attempt(te, taskName), CheckpointID: id, State: checkpoint.StateHandle{Data: []byte(taskName), Size: 2}}))
}

func (e *hbEnv) checkpointStats() checkpoint.CheckpointingStatistics {
	e.t.Helper()
	a, err := e.jm.RequestJob(e.ctx)
	require.NoError(e.t, err)
	require.NotNil(e.t, a.CheckpointStatistics)
	return *a.CheckpointStatistics
}

// The JobMaster triggers the sources through their TaskExecutor every interval, takes the tasks'
// acknowledgements through its gateway, and confirms the completed checkpoint to every task; a
// failed trigger RPC aborts its checkpoint (not counted).
func TestJobMasterRunsCheckpointsThroughItsTaskExecutors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, te := startCk(t, jobmaster.Config{})
		advance(100*time.Millisecond - time.Nanosecond)
		assert.Empty(t, te.snapshot().ckCalls)
		advance(time.Nanosecond)
		assert.Equal(t, []string{"trigger 1 src (1/2)#0 @100ms", "trigger 1 src (2/2)#0 @100ms"}, te.snapshot().ckCalls)

		advance(5 * time.Millisecond)
		for _, name := range ckTasks {
			e.ack(te, name, 1)
		}
		synctest.Wait()
		assert.Equal(t, []string{
			"confirm 1 src (1/2)#0 @105ms", "confirm 1 src (2/2)#0 @105ms", "confirm 1 sink (1/2)#0 @105ms", "confirm 1 sink (2/2)#0 @105ms",
		}, te.snapshot().ckCalls[2:])
		st := e.checkpointStats()
		assert.Equal(t, checkpoint.CheckpointCounts{Total: 1, Completed: 1}, st.Counts)
		assert.Equal(t, int64(8), st.Latest.Completed.StateSize)
		assert.Equal(t, int64(5), st.Latest.Completed.EndToEndDuration)

		te.set(func(f *hbTE) { f.failTrigger = errors.New("trigger lost") })
		advance(95 * time.Millisecond)
		calls := te.snapshot().ckCalls[6:]
		assert.Equal(t, []string{
			"trigger 2 src (1/2)#0 @200ms", "trigger 2 src (2/2)#0 @200ms",
			"abort 2 src (1/2)#0 @200ms", "abort 2 src (2/2)#0 @200ms", "abort 2 sink (1/2)#0 @200ms", "abort 2 sink (2/2)#0 @200ms",
		}, calls)
		st = e.checkpointStats()
		assert.Equal(t, checkpoint.CheckpointCounts{Total: 2, Completed: 1, Failed: 1}, st.Counts)
		assert.Equal(t, "checkpoint 2: Trigger checkpoint failure.: trigger lost", st.Latest.Failed.FailureMessage)
		assert.Equal(t, jobgraph.JobStatusRunning, e.status())
	})
}

// Acknowledgements and declines are fenced: an older JobMasterID's fail with a FencingError and
// change nothing; an outdated attempt's, an unknown checkpoint's and another job's are dropped
// without an error; after Close every one fails with ErrClosed.
func TestCheckpointMessagesAreFencedAndStaleOnesDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, te := startCk(t, jobmaster.Config{})
		advance(100 * time.Millisecond)
		src := e.attempt(te, "src (1/2)")

		stale := jobgraph.NewJobMasterID()
		err := e.gw.AcknowledgeCheckpoint(e.ctx, stale, e.g.JobID, checkpoint.AcknowledgeCheckpoint{Attempt: src, CheckpointID: 1})
		var fe *rpc.FencingError
		require.ErrorAs(t, err, &fe)
		require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
		err = e.gw.DeclineCheckpoint(e.ctx, stale, e.g.JobID, checkpoint.DeclineCheckpoint{Attempt: src, CheckpointID: 1})
		require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)

		done, cancel := context.WithCancel(e.ctx)
		cancel()
		err = e.gw.AcknowledgeCheckpoint(done, e.token, e.g.JobID, checkpoint.AcknowledgeCheckpoint{Attempt: src, CheckpointID: 1})
		require.ErrorIs(t, err, context.Canceled)

		outdated := src
		outdated.AttemptNumber = 7
		require.NoError(t, e.gw.AcknowledgeCheckpoint(e.ctx, e.token, e.g.JobID, checkpoint.AcknowledgeCheckpoint{Attempt: outdated, CheckpointID: 1}))
		require.NoError(t, e.gw.DeclineCheckpoint(e.ctx, e.token, e.g.JobID, checkpoint.DeclineCheckpoint{Attempt: outdated, CheckpointID: 1}))
		require.NoError(t, e.gw.AcknowledgeCheckpoint(e.ctx, e.token, e.g.JobID, checkpoint.AcknowledgeCheckpoint{Attempt: src, CheckpointID: 9}))
		require.NoError(t, e.gw.DeclineCheckpoint(e.ctx, e.token, jobgraph.NewJobID(), checkpoint.DeclineCheckpoint{Attempt: src, CheckpointID: 1}))
		synctest.Wait()
		st := e.checkpointStats()
		assert.Equal(t, checkpoint.CheckpointCounts{Total: 1, InProgress: 1}, st.Counts)
		require.Len(t, st.History, 1)
		assert.Equal(t, 0, st.History[0].NumAcknowledgedSubtasks)

		e.ack(te, "src (1/2)", 1)
		assert.Equal(t, 1, e.checkpointStats().History[0].NumAcknowledgedSubtasks)

		e.jm.Close()
		err = e.gw.AcknowledgeCheckpoint(e.ctx, e.token, e.g.JobID, checkpoint.AcknowledgeCheckpoint{Attempt: src, CheckpointID: 1})
		require.ErrorIs(t, err, jobmaster.ErrClosed)
		err = e.gw.DeclineCheckpoint(e.ctx, stale, e.g.JobID, checkpoint.DeclineCheckpoint{Attempt: src, CheckpointID: 1})
		require.ErrorIs(t, err, jobmaster.ErrClosed)
	})
}

// A decline beyond execution.checkpointing.tolerable-failed-checkpoints (0) fails the job over
// globally: every task is canceled and restarts after the backoff, and periodic checkpoints go on.
func TestDeclineBeyondTolerableFailsTheJobOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, te := startCk(t, jobmaster.Config{})
		advance(100 * time.Millisecond)
		require.NoError(t, e.gw.DeclineCheckpoint(e.ctx, e.token, e.g.JobID, checkpoint.DeclineCheckpoint{Attempt: e.attempt(te, "sink (2/2)"), CheckpointID: 1}))
		synctest.Wait()
		assert.Equal(t, jobgraph.JobStatusRestarting, e.status())
		a, err := e.jm.RequestJob(e.ctx)
		require.NoError(t, err)
		require.Len(t, a.ExceptionHistory, 1)
		assert.Contains(t, a.ExceptionHistory[0].Message, "exceeded checkpoint tolerable failure threshold")
		for _, name := range ckTasks {
			applied, err := e.gw.UpdateTaskExecutionState(e.ctx, e.token, rpc.TaskExecutionState{ExecutionAttemptID: e.attempt(te, name), State: jobgraph.ExecutionStateCanceled})
			require.NoError(t, err)
			require.True(t, applied)
		}
		advance(time.Second)
		require.Len(t, te.snapshot().submits, 8)
		for _, name := range ckTasks {
			applied, err := e.gw.UpdateTaskExecutionState(e.ctx, e.token, rpc.TaskExecutionState{ExecutionAttemptID: e.attempt(te, name), State: jobgraph.ExecutionStateRunning})
			require.NoError(t, err)
			require.True(t, applied)
		}
		n := len(te.snapshot().ckCalls)
		advance(100 * time.Millisecond)
		assert.Equal(t, []string{"trigger 2 src (1/2)#1 @1.2s", "trigger 2 src (2/2)#1 @1.2s"}, te.snapshot().ckCalls[n:])
	})
}

// With a file-based CheckpointRecoveryFactory the store and counter are called off the loop; a
// JobMaster of a later leader session restores the checkpoint the earlier one stored and counts
// on from its ID. Without a checkpoint, a configured savepoint is read (off the loop) and restored.
func TestJobMasterRestoresFromItsCheckpointRecoveryFactory(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		var loaded []string
		cfg := jobmaster.Config{
			CheckpointRecoveryFactory: checkpoint.FileCheckpointRecoveryFactory{Dir: dir},
			LoadSavepoint: func(path string) (checkpoint.CompletedCheckpoint, error) {
				loaded = append(loaded, path)
				return checkpoint.CompletedCheckpoint{CheckpointID: 42}, nil
			},
		}
		g := ckJob()
		g.SavepointRestore.Path = "/savepoints/42"
		e := newHBEnvFor(t, cfg, g)
		te := e.addTE("te-1")
		e.offer(te, 0, "A")
		e.offer(te, 1, "B")
		for _, tdd := range te.snapshot().submits {
			require.NotNil(t, tdd.TaskRestore, tdd.TaskName)
			assert.Equal(t, checkpoint.CheckpointID(42), tdd.TaskRestore.CheckpointID, tdd.TaskName)
		}
		assert.Equal(t, []string{"/savepoints/42"}, loaded)
		for _, name := range ckTasks {
			e.report(te, name, jobgraph.ExecutionStateRunning)
		}
		advance(100 * time.Millisecond)
		assert.Equal(t, []string{"trigger 43 src (1/2)#0 @100ms", "trigger 43 src (2/2)#0 @100ms"}, te.snapshot().ckCalls)
		for _, name := range ckTasks {
			e.ack(te, name, 43)
		}
		synctest.Wait()
		assert.Equal(t, int64(1), e.checkpointStats().Counts.Completed)
		e.jm.Close() // SUSPENDED: the checkpoint stays for the next leader

		next := newHBEnvFor(t, cfg, g)
		te2 := next.addTE("te-2")
		next.offer(te2, 0, "C")
		next.offer(te2, 1, "D")
		for _, tdd := range te2.snapshot().submits {
			require.NotNil(t, tdd.TaskRestore, tdd.TaskName)
			assert.Equal(t, checkpoint.CheckpointID(43), tdd.TaskRestore.CheckpointID, tdd.TaskName)
			assert.Equal(t, tdd.TaskName, string(tdd.TaskRestore.State.Data))
		}
		assert.Equal(t, []string{"/savepoints/42"}, loaded, "a checkpoint takes precedence")
		for _, name := range ckTasks {
			next.report(te2, name, jobgraph.ExecutionStateRunning)
		}
		advance(100 * time.Millisecond)
		calls := te2.snapshot().ckCalls
		require.NotEmpty(t, calls)
		assert.Contains(t, calls[0], "trigger 44 src (1/2)#0")
	})
}

// The timing scenario through a JobMaster, in virtual time: interval 12 ms, min pause
// 50 ms, max concurrent 1. Checkpoint 1 triggers at 12 ms and completes at 20 ms; checkpoint 2
// triggers exactly 50 ms later, at 70 ms.
func TestJobMasterCheckpointTimingKeepsTheMinPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := ckJob()
		g.Checkpointing = jobgraph.CheckpointingSettings{Interval: 12 * time.Millisecond, MinPauseBetweenCheckpoints: 50 * time.Millisecond, MaxConcurrentCheckpoints: 1}
		e := newHBEnvFor(t, jobmaster.Config{}, g)
		te := e.addTE("te-1")
		e.offer(te, 0, "A")
		e.offer(te, 1, "B")
		for _, name := range ckTasks {
			e.report(te, name, jobgraph.ExecutionStateRunning)
		}
		advance(12 * time.Millisecond)
		assert.Equal(t, []string{"trigger 1 src (1/2)#0 @12ms", "trigger 1 src (2/2)#0 @12ms"}, te.snapshot().ckCalls)
		advance(8 * time.Millisecond)
		for _, name := range ckTasks {
			e.ack(te, name, 1)
		}
		synctest.Wait()
		assert.Len(t, te.snapshot().ckCalls, 6)
		advance(50*time.Millisecond - time.Nanosecond)
		assert.Len(t, te.snapshot().ckCalls, 6, "nothing before the pause ended")
		advance(time.Nanosecond)
		assert.Equal(t, []string{"trigger 2 src (1/2)#0 @70ms", "trigger 2 src (2/2)#0 @70ms"}, te.snapshot().ckCalls[6:])
	})
}

// v1(2) –POINTWISE→ v2(2) through a JobMaster: checkpoint 5 acknowledged by 3 of 4 tasks, the
// second sink subtask fails, the region failover aborts 5 (failed, not counted, every task told)
// and periodic triggering goes on with 6 once the region runs again.
func TestJobMasterRegionFailoverAbortsPendingCheckpointAndGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		factory := checkpoint.NewStandaloneCheckpointRecoveryFactory()
		g := ckJob()
		counter, err := factory.CreateCheckpointIDCounter(g.JobID)
		require.NoError(t, err)
		require.NoError(t, counter.SetCount(5))
		e := newHBEnvFor(t, jobmaster.Config{CheckpointRecoveryFactory: factory}, g)
		te := e.addTE("te-1")
		e.offer(te, 0, "A")
		e.offer(te, 1, "B")
		for _, name := range ckTasks {
			e.report(te, name, jobgraph.ExecutionStateRunning)
		}
		advance(100 * time.Millisecond)
		for _, name := range []string{"src (1/2)", "src (2/2)", "sink (2/2)"} {
			e.ack(te, name, 5)
		}
		synctest.Wait()
		assert.Equal(t, 3, e.checkpointStats().History[0].NumAcknowledgedSubtasks)

		applied, err := e.gw.UpdateTaskExecutionState(e.ctx, e.token, rpc.TaskExecutionState{ExecutionAttemptID: e.attempt(te, "sink (2/2)"), State: jobgraph.ExecutionStateFailed, Failure: rpc.Failure(errors.New("boom"))})
		require.NoError(t, err)
		require.True(t, applied)
		synctest.Wait()
		assert.Equal(t, []string{
			"abort 5 src (1/2)#0 @100ms", "abort 5 src (2/2)#0 @100ms", "abort 5 sink (1/2)#0 @100ms", "abort 5 sink (2/2)#0 @100ms",
		}, te.snapshot().ckCalls[2:])
		st := e.checkpointStats()
		assert.Equal(t, checkpoint.CheckpointCounts{Total: 1, Failed: 1}, st.Counts)
		assert.Equal(t, "checkpoint 5: FailoverRegion is restarting.", st.Latest.Failed.FailureMessage)

		applied, err = e.gw.UpdateTaskExecutionState(e.ctx, e.token, rpc.TaskExecutionState{ExecutionAttemptID: e.attempt(te, "src (2/2)"), State: jobgraph.ExecutionStateCanceled})
		require.NoError(t, err)
		require.True(t, applied)
		advance(time.Second)
		for _, name := range []string{"src (2/2)", "sink (2/2)"} {
			applied, err := e.gw.UpdateTaskExecutionState(e.ctx, e.token, rpc.TaskExecutionState{ExecutionAttemptID: e.attempt(te, name), State: jobgraph.ExecutionStateRunning})
			require.NoError(t, err)
			require.True(t, applied, name)
		}
		n := len(te.snapshot().ckCalls)
		advance(100 * time.Millisecond)
		assert.Equal(t, []string{"trigger 6 src (1/2)#0 @1.2s", "trigger 6 src (2/2)#1 @1.2s"}, te.snapshot().ckCalls[n:])
	})
}

// Tolerable 2 through a JobMaster, in virtual time: checkpoint 1 declined, 2 declined, 3 aborted
// by a region failover (not counted), 4 declined: the job fails over globally exactly once,
// because of 4, and its exception history says so.
func TestJobMasterToleratesTwoDeclinesAndFailsOverOnTheThird(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := ckJob()
		g.Checkpointing.TolerableFailedCheckpoints = 2
		e := newHBEnvFor(t, jobmaster.Config{}, g)
		te := e.addTE("te-1")
		e.offer(te, 0, "A")
		e.offer(te, 1, "B")
		for _, name := range ckTasks {
			e.report(te, name, jobgraph.ExecutionStateRunning)
		}
		state := func(name string, st jobgraph.ExecutionState, cause error) {
			t.Helper()
			applied, err := e.gw.UpdateTaskExecutionState(e.ctx, e.token, rpc.TaskExecutionState{ExecutionAttemptID: e.attempt(te, name), State: st, Failure: rpc.Failure(cause)})
			require.NoError(t, err)
			require.True(t, applied, name)
		}
		decline := func(name string, id checkpoint.CheckpointID) {
			t.Helper()
			require.NoError(t, e.gw.DeclineCheckpoint(e.ctx, e.token, e.g.JobID, checkpoint.DeclineCheckpoint{Attempt: e.attempt(te, name), CheckpointID: id}))
			synctest.Wait()
		}
		advance(100 * time.Millisecond)
		decline("sink (1/2)", 1)
		advance(100 * time.Millisecond)
		decline("src (2/2)", 2)
		advance(100 * time.Millisecond)
		e.ack(te, "sink (1/2)", 3)
		state("sink (1/2)", jobgraph.ExecutionStateFailed, errors.New("boom"))
		state("src (1/2)", jobgraph.ExecutionStateCanceled, nil)
		advance(time.Second) // the region restarts
		for _, name := range []string{"src (1/2)", "sink (1/2)"} {
			state(name, jobgraph.ExecutionStateRunning, nil)
		}
		advance(100 * time.Millisecond)
		a, err := e.jm.RequestJob(e.ctx)
		require.NoError(t, err)
		require.Len(t, a.ExceptionHistory, 1)
		decline("src (2/2)", 4)

		a, err = e.jm.RequestJob(e.ctx)
		require.NoError(t, err)
		require.Len(t, a.ExceptionHistory, 2)
		assert.Equal(t, "task sink (1/2) (attempt 0) on te-1 failed: boom", a.ExceptionHistory[0].Message)
		assert.Contains(t, a.ExceptionHistory[1].Message, "exceeded checkpoint tolerable failure threshold")
		assert.Contains(t, a.ExceptionHistory[1].Message, "checkpoint 4: Checkpoint was declined.")
		assert.Equal(t, jobgraph.JobStatusRestarting, a.Status)
		var failed []string
		for _, c := range a.CheckpointStatistics.History {
			failed = append(failed, fmt.Sprintf("%d@%dms %s", c.ID, c.FailureTimestamp-a.CheckpointStatistics.History[len(a.CheckpointStatistics.History)-1].TriggerTimestamp+100, c.FailureMessage))
		}
		assert.Equal(t, []string{
			"4@1400ms checkpoint 4: Checkpoint was declined.",
			"3@300ms checkpoint 3: FailoverRegion is restarting.",
			"2@200ms checkpoint 2: Checkpoint was declined.",
			"1@100ms checkpoint 1: Checkpoint was declined.",
		}, failed)
	})
}
