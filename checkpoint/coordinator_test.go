package checkpoint_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// 2 tasks, 1 retained: one ack gives 1 acknowledged, 1 outstanding; a duplicate ack changes
// nothing; a decline discards the checkpoint (0 pending) while a later pending checkpoint
// survives; a fully acked checkpoint is retained and replaced by the next one.
func TestTwoTasksAckDuplicateDeclineAndRetention(t *testing.T) {
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	a0, a1 := attempt(eg, v, "v", 0, 0), attempt(eg, v, "v", 1, 0)
	h := newHarness(t, jobgraph.CheckpointingSettings{MaxConcurrentCheckpoints: 2, NumRetained: 1, TolerableFailedCheckpoints: 5}, nil, a0, a1)

	h.trigger("cp1")
	h.timers.Advance(time.Millisecond)
	h.trigger("cp2")
	require.Equal(t, 2, h.c.NumberOfPendingCheckpoints())
	assert.Equal(t, []string{"1@v/0#0", "1@v/1#0", "2@v/0#0", "2@v/1#0"}, h.rec.triggered)

	h.timers.Advance(time.Millisecond)
	require.NoError(t, h.ack(1, a0, 100))
	p1, ok := h.c.PendingCheckpoint(1)
	require.True(t, ok)
	assert.Equal(t, 1, p1.NumberOfAcknowledgedTasks())
	assert.Equal(t, 1, p1.NumberOfNonAcknowledgedTasks())

	at, size, acked := p1.TaskAcknowledgement(a0)
	assert.True(t, acked)
	assert.Equal(t, start.Add(2*time.Millisecond), at)
	assert.Equal(t, int64(100), size)
	_, _, acked = p1.TaskAcknowledgement(a1)
	assert.False(t, acked)

	assert.ErrorIs(t, h.ack(1, a0, 999), checkpoint.ErrDuplicateAcknowledge)
	at, size, _ = p1.TaskAcknowledgement(a0)
	assert.Equal(t, start.Add(2*time.Millisecond), at, "a duplicate changes nothing")
	assert.Equal(t, int64(100), size)
	assert.Equal(t, 1, p1.NumberOfAcknowledgedTasks())
	assert.Equal(t, 1, p1.NumberOfNonAcknowledgedTasks())
	st := h.c.Statistics()
	assert.Equal(t, int64(100), st.History[1].StateSize, "the duplicate's size is not added")
	assert.Equal(t, 1, st.History[1].NumAcknowledgedSubtasks)

	require.NoError(t, h.decline(1, a1, 0))
	assert.Equal(t, 1, h.c.NumberOfPendingCheckpoints())
	_, ok = h.c.PendingCheckpoint(1)
	assert.False(t, ok, "the declined checkpoint is discarded")
	_, ok = h.c.PendingCheckpoint(2)
	assert.True(t, ok, "the later pending checkpoint survives")
	assert.ErrorIs(t, h.ack(1, a1, 1), checkpoint.ErrUnknownCheckpoint)
	assert.Equal(t, []string{"aborted 1 v/0#0", "aborted 1 v/1#0"}, h.rec.log)

	require.NoError(t, h.ack(2, a0, 10))
	require.NoError(t, h.ack(2, a1, 20))
	assert.Equal(t, []checkpoint.CheckpointID{2}, h.storedIDs())

	h.trigger("cp3")
	require.NoError(t, h.ack(3, a1, 5))
	require.NoError(t, h.ack(3, a0, 6))
	assert.Equal(t, []checkpoint.CheckpointID{3}, h.storedIDs(), "the next checkpoint replaces it")
	assert.Equal(t, []string{"cp1 failed: checkpoint 1: Checkpoint was declined.", "cp2 completed 2", "cp3 completed 3"}, h.results)
	assert.Empty(t, h.rec.failJobs, "one decline is within the tolerance of 5")

	st = h.c.Statistics()
	assert.Equal(t, checkpoint.CheckpointCounts{Total: 3, InProgress: 0, Completed: 2, Failed: 1}, st.Counts)
	require.Len(t, st.History, 3)
	assert.Equal(t, checkpoint.CheckpointID(3), st.History[0].ID, "newest first")
	assert.Equal(t, checkpoint.StatusFailed, st.History[2].Status)
	assert.Equal(t, ms(2*time.Millisecond), st.History[2].FailureTimestamp)
	require.NotNil(t, st.Latest.Completed)
	assert.Equal(t, checkpoint.CheckpointID(3), st.Latest.Completed.ID)
	assert.Equal(t, int64(11), st.Latest.Completed.StateSize)
	cp2 := st.History[1]
	assert.Equal(t, checkpoint.StatusCompleted, cp2.Status)
	assert.Equal(t, ms(time.Millisecond), cp2.TriggerTimestamp)
	assert.Equal(t, ms(2*time.Millisecond), cp2.LatestAckTimestamp)
	assert.Equal(t, int64(1), cp2.EndToEndDuration)
	assert.Equal(t, int64(30), cp2.StateSize)
	assert.Equal(t, 2, cp2.NumSubtasks)
	assert.Equal(t, 2, cp2.NumAcknowledgedSubtasks)
	task := cp2.Tasks[v.String()]
	require.NotNil(t, task)
	assert.Equal(t, []checkpoint.SubtaskCheckpointStatistics{
		{Index: 0, Status: "completed", AckTimestamp: ms(2 * time.Millisecond), EndToEndDuration: 1, StateSize: 10},
		{Index: 1, Status: "completed", AckTimestamp: ms(2 * time.Millisecond), EndToEndDuration: 1, StateSize: 20},
	}, task.Subtasks)
	require.NotNil(t, st.Latest.Failed)
	assert.Equal(t, checkpoint.CheckpointID(1), st.Latest.Failed.ID)
}

// Interval 12 ms, min pause 50 ms, max concurrent 1: checkpoint 2 triggers no earlier than 50 ms
// after checkpoint 1 completed.
func TestMinPauseMeasuredFromLastCompletion(t *testing.T) {
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	a := attempt(eg, v, "v", 0, 0)
	h := newHarness(t, jobgraph.CheckpointingSettings{Interval: 12 * time.Millisecond, MinPauseBetweenCheckpoints: 50 * time.Millisecond, MaxConcurrentCheckpoints: 1}, nil, a)
	require.NoError(t, h.c.StartCheckpointScheduler())

	h.timers.Advance(11 * time.Millisecond)
	assert.Empty(t, h.rec.triggered)
	h.timers.Advance(time.Millisecond) // 12 ms
	assert.Equal(t, []string{"1@v/0#0"}, h.rec.triggered)
	h.timers.Advance(8 * time.Millisecond) // 20 ms: periodic at 24 not yet
	require.NoError(t, h.ack(1, a, 1))
	completed := h.timers.Now()

	h.timers.Advance(49 * time.Millisecond) // 69 ms: the periodic triggers at 24, 36, 48, 60 are dropped
	assert.Equal(t, []string{"1@v/0#0"}, h.rec.triggered)
	h.timers.Advance(time.Millisecond) // 70 ms = completion + 50 ms
	assert.Equal(t, []string{"1@v/0#0", "2@v/0#0"}, h.rec.triggered)
	assert.Equal(t, completed.Add(50*time.Millisecond), h.timers.Now())
	st := h.c.Statistics()
	assert.Equal(t, ms(70*time.Millisecond), st.History[0].TriggerTimestamp)
	assert.Equal(t, checkpoint.CheckpointCounts{Total: 2, InProgress: 1, Completed: 1}, st.Counts, "min-pause drops are not failures")

	// Max concurrent 1: while 2 is pending the periodic trigger waits (once), then runs after 2
	// completes plus the pause.
	h.timers.Advance(30 * time.Millisecond) // 100 ms
	assert.Equal(t, 1, h.c.NumQueuedRequests(), "one periodic request waits, not one per tick")
	require.NoError(t, h.ack(2, a, 1))
	h.timers.Advance(49 * time.Millisecond)
	assert.Len(t, h.rec.triggered, 2)
	h.timers.Advance(time.Millisecond) // 150 ms
	assert.Equal(t, []string{"1@v/0#0", "2@v/0#0", "3@v/0#0"}, h.rec.triggered)
}

// A trigger during an in-flight trigger is queued (queue size 1) and both succeed.
func TestTriggerDuringInFlightTriggerIsQueued(t *testing.T) {
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	a := attempt(eg, v, "v", 0, 0)
	exec := &heldExecutor{}
	h := newHarness(t, jobgraph.CheckpointingSettings{MaxConcurrentCheckpoints: 1}, exec, a)

	h.trigger("first")
	assert.True(t, h.c.IsTriggering())
	h.trigger("second")
	assert.Equal(t, 1, h.c.NumQueuedRequests())
	assert.Empty(t, h.rec.triggered)

	exec.Release() // first's ID comes back: pending 1; second waits for max concurrent
	assert.Equal(t, []string{"1@v/0#0"}, h.rec.triggered)
	assert.Equal(t, 1, h.c.NumQueuedRequests())
	require.NoError(t, h.ack(1, a, 1))
	exec.Release() // store of 1 done: notify, then second starts
	exec.Release() // second's ID
	assert.Equal(t, 0, h.c.NumQueuedRequests())
	require.NoError(t, h.ack(2, a, 1))
	exec.Release()
	assert.Equal(t, []string{"first completed 1", "second completed 2"}, h.results)
	assert.Equal(t, checkpoint.CheckpointCounts{Total: 2, Completed: 2}, h.c.Statistics().Counts)
}

// Completion is stored before anyone is told; the success resets the failure count only once stored.
func TestCompletionIsStoredBeforeAnyoneIsTold(t *testing.T) {
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	a0, a1 := attempt(eg, v, "v", 0, 0), attempt(eg, v, "v", 1, 0)
	exec := &heldExecutor{}
	h := newHarness(t, jobgraph.CheckpointingSettings{MaxConcurrentCheckpoints: 3, TolerableFailedCheckpoints: 1}, exec, a0, a1)

	h.trigger("cp1")
	exec.Release()
	require.NoError(t, h.decline(1, a0, checkpoint.CheckpointDeclined)) // count 1
	h.rec.log, h.results = nil, nil
	h.trigger("cp2")
	exec.Release()
	h.trigger("cp3")
	exec.Release()
	require.NoError(t, h.ack(2, a0, 1))
	require.NoError(t, h.ack(2, a1, 1))
	assert.Equal(t, []string{"store 2"}, h.rec.log, "nobody is told before the store returns")
	assert.Empty(t, h.results)
	assert.Equal(t, 1, h.c.FailureManager().ContinuousFailureCount())

	require.NoError(t, h.decline(3, a1, checkpoint.CheckpointDeclined)) // 2 not stored yet: count 2 > 1
	require.Len(t, h.rec.failJobs, 1)
	assert.Contains(t, h.rec.failJobs[0], "task v/1#0: checkpoint: exceeded checkpoint tolerable failure threshold")

	exec.Release()
	assert.Equal(t, []string{"store 2", "aborted 3 v/0#0", "aborted 3 v/1#0", "complete 2 v/0#0", "complete 2 v/1#0"}, h.rec.log)
	assert.Equal(t, []string{"cp3 failed: checkpoint 3: Checkpoint was declined.", "cp2 completed 2"}, h.results)
}

// A store failure is FINALIZE_CHECKPOINT_FAILURE: nobody gets notify-complete.
func TestStoreFailureIsFinalizeFailure(t *testing.T) {
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	a := attempt(eg, v, "v", 0, 0)
	h := newHarness(t, jobgraph.CheckpointingSettings{TolerableFailedCheckpoints: 1}, nil, a)
	h.store.fail = errors.New("disk full")
	h.trigger("cp1")
	require.NoError(t, h.ack(1, a, 1))
	assert.Equal(t, []string{"store 1", "aborted 1 v/0#0"}, h.rec.log)
	assert.Equal(t, []string{"cp1 failed: checkpoint 1: Failure to finalize checkpoint.: disk full"}, h.results)
	assert.Equal(t, 1, h.c.FailureManager().ContinuousFailureCount())
	assert.Empty(t, h.store.All())
	assert.Equal(t, checkpoint.CheckpointCounts{Total: 1, Failed: 1}, h.c.Statistics().Counts)
}

// Tolerable 2: declined 1, declined 2, failover-abort 3 (not counted), declined 4: the job fails
// over exactly once.
func TestTolerableTwoFailsOnceOnTheThirdCountedFailure(t *testing.T) {
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	a0, a1 := attempt(eg, v, "v", 0, 0), attempt(eg, v, "v", 1, 0)
	h := newHarness(t, jobgraph.CheckpointingSettings{TolerableFailedCheckpoints: 2}, nil, a0, a1)

	h.trigger("1")
	require.NoError(t, h.decline(1, a0, 0))
	h.trigger("2")
	require.NoError(t, h.decline(2, a1, 0))
	assert.Equal(t, 2, h.c.FailureManager().ContinuousFailureCount())
	h.trigger("3")
	require.NoError(t, h.c.AbortPendingCheckpoints(h.jm, checkpoint.JobFailoverRegion))
	assert.Equal(t, 2, h.c.FailureManager().ContinuousFailureCount(), "failover aborts are not counted")
	assert.Empty(t, h.rec.failJobs)
	h.trigger("4")
	require.NoError(t, h.decline(4, a0, 0))
	assert.Len(t, h.rec.failJobs, 1)
	assert.Equal(t, "task v/0#0: checkpoint: exceeded checkpoint tolerable failure threshold (last: checkpoint 4: Checkpoint was declined.)", h.rec.failJobs[0])
	assert.Equal(t, 0, h.c.FailureManager().ContinuousFailureCount(), "reset after failing the job")
	assert.Equal(t, checkpoint.CheckpointCounts{Total: 4, Failed: 4}, h.c.Statistics().Counts)

	// A second decline of the same checkpoint finds nothing: one checkpoint counts once.
	assert.ErrorIs(t, h.decline(4, a1, 0), checkpoint.ErrUnknownCheckpoint)
	assert.Len(t, h.rec.failJobs, 1)
}

// Tolerance 0: each counting reason fails the job once; the others never.
func TestToleranceZeroEachCountingReasonFailsOnce(t *testing.T) {
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	a := attempt(eg, v, "v", 0, 0)
	cases := []struct {
		name string
		run  func(h *harness)
		want string
	}{
		{"CHECKPOINT_DECLINED", func(h *harness) { h.trigger("x"); require.NoError(h.t, h.decline(1, a, checkpoint.CheckpointDeclined)) }, "task v/0#0: "},
		{"CHECKPOINT_ASYNC_EXCEPTION", func(h *harness) {
			h.trigger("x")
			require.NoError(h.t, h.decline(1, a, checkpoint.CheckpointAsyncException))
		}, "task v/0#0: "},
		{"CHECKPOINT_EXPIRED", func(h *harness) { h.trigger("x"); h.timers.Advance(10 * time.Minute) }, "job: "},
		{"IO_EXCEPTION", func(h *harness) { h.counter.fail = errors.New("counter down"); h.trigger("x") }, "job: "},
		{"FINALIZE_CHECKPOINT_FAILURE", func(h *harness) {
			h.store.fail = errors.New("disk full")
			h.trigger("x")
			require.NoError(h.t, h.ack(1, a, 1))
		}, "job: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, jobgraph.CheckpointingSettings{}, nil, a)
			c.run(h)
			require.Len(t, h.rec.failJobs, 1)
			assert.Contains(t, h.rec.failJobs[0], c.want+"checkpoint: exceeded checkpoint tolerable failure threshold")
			require.Len(t, h.results, 1)
			assert.Contains(t, h.results[0], "x failed: ")
		})
	}
	notCounted := []struct {
		name string
		run  func(h *harness)
	}{
		{"CHECKPOINT_DECLINED_TASK_NOT_READY", func(h *harness) {
			h.trigger("x")
			require.NoError(h.t, h.decline(1, a, checkpoint.CheckpointDeclinedTaskNotReady))
		}},
		{"JOB_FAILOVER_REGION", func(h *harness) {
			h.trigger("x")
			require.NoError(h.t, h.c.AbortPendingCheckpoints(h.jm, checkpoint.JobFailoverRegion))
		}},
		{"TASK_FAILURE", func(h *harness) {
			h.trigger("x")
			n, err := h.c.FailUnacknowledgedPendingCheckpointsFor(h.jm, a, errors.New("boom"))
			require.NoError(h.t, err)
			require.Equal(h.t, 1, n)
		}},
		{"NOT_ALL_REQUIRED_TASKS_RUNNING", func(h *harness) { h.planErr = errors.New("v/0 is DEPLOYING"); h.trigger("x") }},
		{"CHECKPOINT_COORDINATOR_SHUTDOWN", func(h *harness) { h.trigger("x"); h.c.Shutdown() }},
	}
	for _, c := range notCounted {
		t.Run("not counted/"+c.name, func(t *testing.T) {
			h := newHarness(t, jobgraph.CheckpointingSettings{}, nil, a)
			c.run(h)
			assert.Empty(t, h.rec.failJobs)
			require.Len(t, h.results, 1)
			assert.Contains(t, h.results[0], "x failed: ")
		})
	}
}

// v1(2) –POINTWISE→ v2(2), max concurrent 1: checkpoint 5 acknowledged by 3 of 4 tasks, v2's
// second subtask fails, region failover aborts 5: checkpoint 5 is failed and periodic triggering
// goes on with 6.
func TestRegionFailoverAbortsAndPeriodicTriggeringGoesOn(t *testing.T) {
	eg, v1, v2 := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID(), jobgraph.NewJobVertexID()
	src0, src1 := attempt(eg, v1, "v1", 0, 0), attempt(eg, v1, "v1", 1, 0)
	map0, map1 := attempt(eg, v2, "v2", 0, 0), attempt(eg, v2, "v2", 1, 0)
	counter := checkpoint.NewStandaloneCheckpointIDCounter()
	require.NoError(t, counter.SetCount(5))
	store, err := checkpoint.NewStandaloneCompletedCheckpointStore(1)
	require.NoError(t, err)
	h := newHarnessOver(t, jobgraph.CheckpointingSettings{Interval: 100 * time.Millisecond, MaxConcurrentCheckpoints: 1}, nil, store, counter)
	h.plan = checkpoint.CheckpointPlan{TasksToTrigger: []jobgraph.ExecutionAttemptID{src0, src1}, TasksToWaitFor: []jobgraph.ExecutionAttemptID{src0, src1, map0, map1}}
	require.NoError(t, h.c.StartCheckpointScheduler())

	h.timers.Advance(100 * time.Millisecond)
	assert.Equal(t, []string{"5@v1/0#0", "5@v1/1#0"}, h.rec.triggered, "only the sources get the trigger")
	h.timers.Advance(10 * time.Millisecond)
	for _, a := range []jobgraph.ExecutionAttemptID{src0, src1, map0} {
		require.NoError(t, h.ack(5, a, 7))
	}
	p, _ := h.c.PendingCheckpoint(5)
	assert.Equal(t, 3, p.NumberOfAcknowledgedTasks())

	// v2/1 fails; the region {v1/1, v2/1} restarts with new attempts.
	h.timers.Advance(10 * time.Millisecond)
	require.NoError(t, h.c.AbortPendingCheckpoints(h.jm, checkpoint.JobFailoverRegion))
	src1b, map1b := attempt(eg, v1, "v1", 1, 1), attempt(eg, v2, "v2", 1, 1)
	h.plan = checkpoint.CheckpointPlan{TasksToTrigger: []jobgraph.ExecutionAttemptID{src0, src1b}, TasksToWaitFor: []jobgraph.ExecutionAttemptID{src0, src1b, map0, map1b}}
	assert.Equal(t, 0, h.c.NumberOfPendingCheckpoints())
	assert.Empty(t, h.rec.failJobs)

	st := h.c.Statistics()
	assert.Equal(t, checkpoint.CheckpointCounts{Total: 1, Failed: 1}, st.Counts)
	require.NotNil(t, st.Latest.Failed)
	assert.Equal(t, checkpoint.CheckpointID(5), st.Latest.Failed.ID)
	assert.Equal(t, 3, st.Latest.Failed.NumAcknowledgedSubtasks)
	assert.Equal(t, 4, st.Latest.Failed.NumSubtasks)
	assert.Equal(t, int64(21), st.Latest.Failed.StateSize)
	assert.Equal(t, ms(120*time.Millisecond), st.Latest.Failed.FailureTimestamp)
	assert.Equal(t, "checkpoint 5: FailoverRegion is restarting.", st.Latest.Failed.FailureMessage)

	h.timers.Advance(80 * time.Millisecond) // 200 ms: the next periodic trigger
	assert.Equal(t, []string{"5@v1/0#0", "5@v1/1#0", "6@v1/0#0", "6@v1/1#1"}, h.rec.triggered)
	assert.ErrorIs(t, h.ack(6, src1, 1), checkpoint.ErrUnknownTask, "the old attempt's ack is dropped")
	for _, a := range []jobgraph.ExecutionAttemptID{src0, src1b, map0, map1b} {
		require.NoError(t, h.ack(6, a, 1))
	}
	assert.Equal(t, []checkpoint.CheckpointID{6}, h.storedIDs())
	assert.Equal(t, checkpoint.CheckpointCounts{Total: 2, Completed: 1, Failed: 1}, h.c.Statistics().Counts)
}

// Checkpoints 1–4 completed, the job restarts (a new coordinator over the same file counter and
// store): the next checkpoint ID is 5 or more, never reused.
func TestRestartOverFileCounterAndStoreNeverReusesIDs(t *testing.T) {
	dir := t.TempDir()
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	a := attempt(eg, v, "v", 0, 0)
	open := func() (*checkpoint.FileCompletedCheckpointStore, *checkpoint.FileCheckpointIDCounter) {
		s, err := checkpoint.OpenFileCompletedCheckpointStore(filepath.Join(dir, "checkpoints"), 2)
		require.NoError(t, err)
		c, err := checkpoint.OpenFileCheckpointIDCounter(filepath.Join(dir, "counter"))
		require.NoError(t, err)
		return s, c
	}
	s, c := open()
	h := newHarnessOver(t, jobgraph.CheckpointingSettings{}, nil, s, c, a)
	for id := checkpoint.CheckpointID(1); id <= 4; id++ {
		h.trigger("cp")
		require.NoError(t, h.ack(id, a, 1))
	}
	assert.Equal(t, []checkpoint.CheckpointID{3, 4}, h.storedIDs())
	h.c.Shutdown()
	require.NoError(t, s.Shutdown(false))
	require.NoError(t, c.Shutdown(false))

	s2, c2 := open()
	a2 := attempt(jobgraph.NewExecutionGraphID(), v, "v", 0, 0)
	h2 := newHarnessOver(t, jobgraph.CheckpointingSettings{}, nil, s2, c2, a2)
	latest, ok := h2.c.RestoreLatestCheckpointedState()
	require.True(t, ok)
	assert.Equal(t, checkpoint.CheckpointID(4), latest.CheckpointID)
	h2.trigger("after restart")
	require.Len(t, h2.rec.triggered, 1)
	assert.Equal(t, "5@v/0#0", h2.rec.triggered[0])
	require.NoError(t, h2.ack(5, a2, 1))
	assert.Equal(t, []checkpoint.CheckpointID{4, 5}, h2.storedIDs())
	st := h2.c.Statistics()
	assert.Equal(t, checkpoint.CheckpointCounts{Restored: 1, Total: 1, Completed: 1}, st.Counts)
	require.NotNil(t, st.Latest.Restored)
	assert.Equal(t, checkpoint.CheckpointID(4), st.Latest.Restored.ID)
	assert.Equal(t, start.UnixMilli(), st.Latest.Restored.RestoreTimestamp)
}

// A checkpoint trigger, ack, decline or notify for an outdated attempt or an older JobMasterID is
// dropped and changes nothing.
func TestOutdatedAttemptAndOlderJobMasterIDAreDropped(t *testing.T) {
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	old0, a0, a1 := attempt(eg, v, "v", 0, 0), attempt(eg, v, "v", 0, 1), attempt(eg, v, "v", 1, 0)
	h := newHarness(t, jobgraph.CheckpointingSettings{}, nil, a0, a1)
	older := jobgraph.NewJobMasterID()

	assert.ErrorIs(t, h.c.TriggerCheckpoint(older, h.done("stale")), checkpoint.ErrWrongJobMasterID)
	assert.ErrorIs(t, h.c.TriggerSavepoint(older, "/sp", 0, h.done("stale")), checkpoint.ErrWrongJobMasterID)
	assert.Empty(t, h.rec.triggered)
	assert.Equal(t, checkpoint.CheckpointCounts{}, h.c.Statistics().Counts)

	h.trigger("cp1")
	require.NoError(t, h.ack(1, a0, 3))
	before := h.c.Statistics()

	assert.ErrorIs(t, h.c.ReceiveAcknowledgeMessage(older, checkpoint.AcknowledgeCheckpoint{Attempt: a1, CheckpointID: 1}), checkpoint.ErrWrongJobMasterID)
	assert.ErrorIs(t, h.c.ReceiveDeclineMessage(older, checkpoint.DeclineCheckpoint{Attempt: a1, CheckpointID: 1}), checkpoint.ErrWrongJobMasterID)
	assert.ErrorIs(t, h.ack(1, old0, 3), checkpoint.ErrUnknownTask)
	assert.ErrorIs(t, h.decline(1, old0, 0), checkpoint.ErrUnknownTask)
	_, err := h.c.FailUnacknowledgedPendingCheckpointsFor(older, a1, nil)
	assert.ErrorIs(t, err, checkpoint.ErrWrongJobMasterID)
	n, err := h.c.FailUnacknowledgedPendingCheckpointsFor(h.jm, old0, nil)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a failure of an outdated attempt aborts nothing")
	assert.ErrorIs(t, h.c.AbortPendingCheckpoints(older, checkpoint.JobFailoverRegion), checkpoint.ErrWrongJobMasterID)

	p, ok := h.c.PendingCheckpoint(1)
	require.True(t, ok)
	assert.Equal(t, 1, p.NumberOfAcknowledgedTasks())
	assert.Equal(t, 1, p.NumberOfNonAcknowledgedTasks())
	assert.Equal(t, before, h.c.Statistics())
	assert.Empty(t, h.rec.failJobs)
	assert.Empty(t, h.rec.log)

	require.NoError(t, h.ack(1, a1, 4))
	assert.Equal(t, []string{"store 1", "complete 1 v/0#1", "complete 1 v/1#0"}, h.rec.log, "notify-complete goes to the current attempts only")
}

// Checkpoint 10 completed, then savepoint 11 completed: the latest snapshot for recovery is 11;
// a later checkpoint does not abort a pending savepoint; an expired savepoint fails with a
// timeout error.
func TestSavepointAfterCheckpointIsLatestForRecovery(t *testing.T) {
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	a := attempt(eg, v, "v", 0, 0)
	counter := checkpoint.NewStandaloneCheckpointIDCounter()
	require.NoError(t, counter.SetCount(10))
	store, err := checkpoint.NewStandaloneCompletedCheckpointStore(1)
	require.NoError(t, err)
	h := newHarnessOver(t, jobgraph.CheckpointingSettings{}, nil, store, counter, a)

	h.trigger("cp10")
	require.NoError(t, h.ack(10, a, 1))
	require.NoError(t, h.c.TriggerSavepoint(h.jm, h.spDir, 0, h.done("sp11")))
	require.NoError(t, h.ack(11, a, 2))
	assert.Equal(t, []string{"cp10 completed 10", "sp11 completed 11"}, h.results)
	latest, ok := h.c.RestoreLatestCheckpointedState()
	require.True(t, ok)
	assert.Equal(t, checkpoint.CheckpointID(11), latest.CheckpointID)
	assert.Equal(t, h.savepointDir(1), latest.ExternalPointer)
	assert.True(t, latest.Properties.IsSavepoint())
	st := h.c.Statistics()
	require.NotNil(t, st.Latest.Savepoint)
	assert.Equal(t, checkpoint.CheckpointID(11), st.Latest.Savepoint.ID)
	assert.Equal(t, h.savepointDir(1), st.Latest.Savepoint.ExternalPath)
	assert.Equal(t, checkpoint.CheckpointID(10), st.Latest.Completed.ID)
	assert.True(t, st.Latest.Restored.IsSavepoint)

	// Savepoint 12 pending, checkpoint 13 completes: 12 is not subsumed.
	require.NoError(t, h.c.TriggerSavepoint(h.jm, h.spDir, time.Minute, h.done("sp12")))
	h.trigger("cp13") // the pending savepoint counts toward max concurrent 1 (Flink): cp13 waits
	assert.Equal(t, 1, h.c.NumQueuedRequests())
	h.timers.Advance(time.Minute)
	require.Len(t, h.results, 3)
	assert.Equal(t, "sp12 failed: checkpoint 12: Checkpoint expired before completing.", h.results[2])
	assert.Empty(t, h.rec.failJobs, "a savepoint's expiry is not counted")
	h.results = nil
	var spErr error
	require.NoError(t, h.c.TriggerSavepoint(h.jm, h.spDir, time.Second, func(_ checkpoint.CompletedCheckpoint, err error) { spErr = err }))
	require.NoError(t, h.ack(13, a, 1))
	require.NoError(t, h.ack(14, a, 1))
	assert.NoError(t, spErr)
	assert.Equal(t, []string{"cp13 completed 13"}, h.results)

	// The expiry error is a timeout.
	require.NoError(t, h.c.TriggerSavepoint(h.jm, h.spDir, time.Second, func(_ checkpoint.CompletedCheckpoint, err error) { spErr = err }))
	h.timers.Advance(time.Second)
	var ce *checkpoint.CheckpointError
	require.ErrorAs(t, spErr, &ce)
	assert.True(t, ce.Timeout())
	assert.ErrorIs(t, spErr, checkpoint.CheckpointExpired)
	assert.Equal(t, checkpoint.CheckpointID(15), ce.CheckpointID)

	assert.ErrorIs(t, h.c.TriggerSavepoint(h.jm, "", 0, nil), checkpoint.ErrInvalidConfig)
}
