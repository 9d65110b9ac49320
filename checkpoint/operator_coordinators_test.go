package checkpoint_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// fakeOC is an operator coordinator context that logs every call into the harness's log and
// keeps each checkpoint's result function until the test answers it.
type fakeOC struct {
	vertex  jobgraph.JobVertexID
	name    string
	log     *[]string
	results map[checkpoint.CheckpointID]func([]byte, error)
	// inCall, if set, answers CheckpointCoordinator inside the call.
	inCall func(id checkpoint.CheckpointID) ([]byte, error)
}

func newFakeOC(log *[]string, name string, vertex byte) *fakeOC {
	return &fakeOC{vertex: jobgraph.JobVertexID{vertex}, name: name, log: log, results: map[checkpoint.CheckpointID]func([]byte, error){}}
}

func (f *fakeOC) logf(format string, args ...any) {
	*f.log = append(*f.log, "oc "+f.name+" "+fmt.Sprintf(format, args...))
}

func (f *fakeOC) VertexID() jobgraph.JobVertexID { return f.vertex }
func (f *fakeOC) CheckpointCoordinator(id checkpoint.CheckpointID, result func([]byte, error)) {
	f.logf("checkpoint %d", id)
	if f.inCall != nil {
		result(f.inCall(id))
		return
	}
	f.results[id] = result
}
func (f *fakeOC) AfterSourceBarrierInjection(id checkpoint.CheckpointID) {
	f.logf("afterBarrier %d", id)
}
func (f *fakeOC) AbortCurrentTriggering()                             { f.logf("abortTriggering") }
func (f *fakeOC) NotifyCheckpointComplete(id checkpoint.CheckpointID) { f.logf("complete %d", id) }
func (f *fakeOC) NotifyCheckpointAborted(id checkpoint.CheckpointID)  { f.logf("aborted %d", id) }
func (f *fakeOC) ResetToCheckpoint(id checkpoint.CheckpointID, state []byte) error {
	f.logf("reset %d %q", id, state)
	return nil
}
func (f *fakeOC) SubtaskReset(subtask int, id checkpoint.CheckpointID) error {
	f.logf("subtaskReset %d %d", subtask, id)
	return nil
}

// answer calls the result function checkpoint id gave f.
func (f *fakeOC) answer(t *testing.T, id checkpoint.CheckpointID, state []byte, err error) {
	t.Helper()
	r, ok := f.results[id]
	require.True(t, ok, "coordinator %s was not asked for checkpoint %d", f.name, id)
	r(state, err)
}

// coordHarness is a harness with two tasks of vertex "v" and two operator coordinators, B
// (vertex 02…) first in the Config and A (vertex 01…) second, logging triggers.
func coordHarness(t *testing.T, s jobgraph.CheckpointingSettings) (h *harness, a0, a1 jobgraph.ExecutionAttemptID, ocA, ocB *fakeOC) {
	t.Helper()
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	a0, a1 = attempt(eg, v, "v", 0, 0), attempt(eg, v, "v", 1, 0)
	mem, err := checkpoint.NewStandaloneCompletedCheckpointStore(s.NumRetained)
	require.NoError(t, err)
	var log []string
	ocA, ocB = newFakeOC(&log, "A", 1), newFakeOC(&log, "B", 2)
	h = newHarnessWith(t, s, nil, mem, checkpoint.NewStandaloneCheckpointIDCounter(),
		[]checkpoint.OperatorCoordinatorCheckpointContext{ocB, ocA}, a0, a1)
	// The fakes log into the recorder's log: point them at it.
	ocA.log, ocB.log = &h.rec.log, &h.rec.log
	h.rec.logTriggers = true
	return h, a0, a1, ocA, ocB
}

// Every coordinator is asked (all at once, before any task is triggered); the pending checkpoint
// exists meanwhile and no other trigger starts; only once both answered — in the other order —
// are the tasks triggered, then each coordinator hears AfterSourceBarrierInjection; completion
// is told to the tasks, then to the coordinators, after the store; the states are in the
// completed checkpoint sorted by vertex, counted in its StateSize but not in the statistics.
func TestCoordinatorsAreCheckpointedBeforeTheTasks(t *testing.T) {
	h, a0, a1, ocA, ocB := coordHarness(t, jobgraph.CheckpointingSettings{MaxConcurrentCheckpoints: 2})
	var completed checkpoint.CompletedCheckpoint
	require.NoError(t, h.c.TriggerCheckpoint(h.jm, func(cp checkpoint.CompletedCheckpoint, err error) {
		require.NoError(t, err)
		completed = cp
		h.rec.log = append(h.rec.log, fmt.Sprintf("done %d", cp.CheckpointID))
	}))
	assert.Equal(t, []string{"oc B checkpoint 1", "oc A checkpoint 1"}, h.rec.log)
	assert.Equal(t, 1, h.c.NumberOfPendingCheckpoints(), "the pending checkpoint is created before the coordinators are asked")
	assert.True(t, h.c.IsTriggering())
	p, ok := h.c.PendingCheckpoint(1)
	require.True(t, ok)
	assert.False(t, p.IsFullyAcknowledged())

	h.trigger("second")
	assert.Equal(t, 1, h.c.NumQueuedRequests(), "no other trigger starts while the coordinators answer")

	ocA.answer(t, 1, []byte("state-a"), nil)
	assert.Equal(t, []string{"oc B checkpoint 1", "oc A checkpoint 1"}, h.rec.log, "no task is triggered before every coordinator answered")
	ocB.answer(t, 1, []byte("bb"), nil)
	assert.Equal(t, []string{
		"oc B checkpoint 1", "oc A checkpoint 1",
		"trigger 1 v/0#0", "trigger 1 v/1#0",
		"oc B afterBarrier 1", "oc A afterBarrier 1",
		// the queued second checkpoint starts once the first one's tasks were triggered
		"oc B checkpoint 2", "oc A checkpoint 2",
	}, h.rec.log)
	ocB.answer(t, 1, []byte("again"), nil) // a second result is ignored

	h.rec.log = nil
	require.NoError(t, h.ack(1, a0, 100))
	require.NoError(t, h.ack(1, a1, 10))
	assert.Equal(t, []string{"store 1", "complete 1 v/0#0", "complete 1 v/1#0", "oc B complete 1", "oc A complete 1", "done 1"}, h.rec.log)
	assert.Equal(t, []checkpoint.CoordinatorState{
		{JobVertexID: ocA.vertex, State: []byte("state-a")},
		{JobVertexID: ocB.vertex, State: []byte("bb")},
	}, completed.CoordinatorStates)
	assert.Equal(t, int64(100+10+7+2), completed.StateSize)
	stored, ok := h.store.Latest()
	require.True(t, ok)
	assert.Equal(t, completed.CoordinatorStates, stored.CoordinatorStates)
	st := h.c.Statistics()
	require.NotNil(t, st.Latest.Completed)
	assert.Equal(t, int64(110), st.Latest.Completed.StateSize, "the statistics count the tasks' acknowledged sizes, as Flink's")
}

// A coordinator that returns no state (nil) has no entry; one answering inside its call is fine.
func TestCoordinatorWithoutStateHasNoEntry(t *testing.T) {
	h, a0, a1, ocA, ocB := coordHarness(t, jobgraph.CheckpointingSettings{})
	ocB.inCall = func(checkpoint.CheckpointID) ([]byte, error) { return nil, nil }
	h.trigger("cp")
	ocA.answer(t, 1, []byte{}, nil)
	require.NoError(t, h.ack(1, a0, 1))
	require.NoError(t, h.ack(1, a1, 1))
	cp, ok := h.store.Latest()
	require.True(t, ok)
	assert.Equal(t, []checkpoint.CoordinatorState{{JobVertexID: ocA.vertex, State: []byte{}}}, cp.CoordinatorStates, "empty is state, nil is none")
	assert.Equal(t, []string{"cp completed 1"}, h.results)
}

// A coordinator's error fails the checkpoint with TRIGGER_CHECKPOINT_FAILURE (not counted):
// every coordinator gets AbortCurrentTriggering, then tasks and coordinators hear of the
// abortion; no task was triggered; the other coordinator's late result is ignored; the next
// trigger works.
func TestDecliningCoordinatorFailsTheCheckpoint(t *testing.T) {
	h, a0, a1, ocA, ocB := coordHarness(t, jobgraph.CheckpointingSettings{})
	h.trigger("cp1")
	ocB.answer(t, 1, nil, errors.New("enumerator broken"))
	assert.Equal(t, []string{
		"oc B checkpoint 1", "oc A checkpoint 1",
		"oc B abortTriggering", "oc A abortTriggering",
		"aborted 1 v/0#0", "aborted 1 v/1#0",
		"oc B aborted 1", "oc A aborted 1",
	}, h.rec.log)
	assert.Empty(t, h.rec.triggered)
	assert.Equal(t, []string{"cp1 failed: checkpoint 1: Trigger checkpoint failure.: operator coordinator of vertex " + ocB.vertex.String() + ": enumerator broken"}, h.results)
	assert.Equal(t, 0, h.c.NumberOfPendingCheckpoints())
	assert.False(t, h.c.IsTriggering())
	assert.Equal(t, 0, h.c.FailureManager().ContinuousFailureCount(), "TRIGGER_CHECKPOINT_FAILURE is not counted")
	st := h.c.Statistics()
	assert.Equal(t, checkpoint.CheckpointCounts{Total: 1, Failed: 1}, st.Counts)

	h.rec.log = nil
	ocA.answer(t, 1, []byte("late"), nil)
	assert.Empty(t, h.rec.log, "a late result of the failed checkpoint is ignored")

	h.trigger("cp2")
	ocA.answer(t, 2, []byte("a2"), nil)
	ocB.answer(t, 2, []byte("b2"), nil)
	require.NoError(t, h.ack(2, a0, 1))
	require.NoError(t, h.ack(2, a1, 1))
	assert.Equal(t, []string{"cp1 failed: checkpoint 1: Trigger checkpoint failure.: operator coordinator of vertex " + ocB.vertex.String() + ": enumerator broken", "cp2 completed 2"}, h.results)
}

// A coordinator failing inside its call does not stop the others from being asked first: each
// coordinator asked gets AbortCurrentTriggering after, never before, its CheckpointCoordinator.
func TestCoordinatorFailingInsideItsCallAfterAllAreAsked(t *testing.T) {
	h, _, _, _, ocB := coordHarness(t, jobgraph.CheckpointingSettings{})
	ocB.inCall = func(checkpoint.CheckpointID) ([]byte, error) { return nil, errors.New("no") }
	h.trigger("cp1")
	assert.Equal(t, []string{
		"oc B checkpoint 1", "oc A checkpoint 1",
		"oc B abortTriggering", "oc A abortTriggering",
		"aborted 1 v/0#0", "aborted 1 v/1#0",
		"oc B aborted 1", "oc A aborted 1",
	}, h.rec.log)
	assert.Equal(t, []string{"cp1 failed: checkpoint 1: Trigger checkpoint failure.: operator coordinator of vertex " + ocB.vertex.String() + ": no"}, h.results)
}

// The checkpoint is aborted while a coordinator has not answered — by a failover, by expiry, by
// a shutdown: the coordinators get AbortCurrentTriggering, the tasks were never triggered, the
// late result is ignored, and a trigger queued meanwhile starts after the failover's abortion.
func TestAbortWhileACoordinatorHasNotAnswered(t *testing.T) {
	wantAbort := []string{
		"oc B abortTriggering", "oc A abortTriggering",
		"aborted 1 v/0#0", "aborted 1 v/1#0",
		"oc B aborted 1", "oc A aborted 1",
	}
	t.Run("failover", func(t *testing.T) {
		h, _, _, ocA, ocB := coordHarness(t, jobgraph.CheckpointingSettings{})
		h.trigger("cp1")
		h.trigger("cp2")
		ocA.answer(t, 1, []byte("a"), nil)
		h.rec.log = nil
		require.NoError(t, h.c.AbortPendingCheckpoints(h.jm, checkpoint.JobFailoverRegion))
		assert.Equal(t, append(wantAbort, "oc B checkpoint 2", "oc A checkpoint 2"), h.rec.log)
		assert.Equal(t, []string{"cp1 failed: checkpoint 1: FailoverRegion is restarting."}, h.results)
		h.rec.log = nil
		ocB.answer(t, 1, []byte("late"), nil)
		assert.Empty(t, h.rec.log, "the late result of checkpoint 1 is ignored")
		assert.Empty(t, h.rec.triggered)
		assert.Equal(t, 1, h.c.NumberOfPendingCheckpoints())
		_, ok := h.c.PendingCheckpoint(2)
		assert.True(t, ok)
	})
	t.Run("expiry", func(t *testing.T) {
		h, _, _, _, ocB := coordHarness(t, jobgraph.CheckpointingSettings{Timeout: time.Minute, TolerableFailedCheckpoints: 3})
		h.trigger("cp1")
		h.rec.log = nil
		h.timers.Advance(time.Minute - time.Millisecond)
		assert.Empty(t, h.rec.log)
		h.timers.Advance(time.Millisecond)
		assert.Equal(t, wantAbort, h.rec.log)
		assert.Equal(t, []string{"cp1 failed: checkpoint 1: Checkpoint expired before completing."}, h.results)
		assert.Equal(t, 1, h.c.FailureManager().ContinuousFailureCount(), "an expiry counts")
		assert.False(t, h.c.IsTriggering())
		h.rec.log = nil
		ocB.answer(t, 1, []byte("late"), nil)
		assert.Empty(t, h.rec.log)
		assert.Empty(t, h.rec.triggered)
	})
	t.Run("shutdown", func(t *testing.T) {
		h, _, _, ocA, _ := coordHarness(t, jobgraph.CheckpointingSettings{})
		h.trigger("cp1")
		h.rec.log = nil
		h.c.Shutdown()
		assert.Equal(t, wantAbort, h.rec.log)
		assert.Equal(t, []string{"cp1 failed: checkpoint 1: CheckpointCoordinator shutdown."}, h.results)
		h.rec.log = nil
		ocA.answer(t, 1, []byte("late"), nil)
		assert.Empty(t, h.rec.log)
		assert.Empty(t, h.rec.triggered)
	})
	t.Run("task failure", func(t *testing.T) {
		h, a0, _, _, _ := coordHarness(t, jobgraph.CheckpointingSettings{})
		h.trigger("cp1")
		h.rec.log = nil
		n, err := h.c.FailUnacknowledgedPendingCheckpointsFor(h.jm, a0, errors.New("task lost"))
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		assert.Equal(t, wantAbort, h.rec.log)
	})
}

// An acknowledgement that arrives while the coordinators are still being asked (no task was
// triggered yet, so it is early) does not complete the checkpoint without them.
func TestEarlyAcknowledgementsWaitForTheCoordinators(t *testing.T) {
	h, a0, a1, ocA, ocB := coordHarness(t, jobgraph.CheckpointingSettings{})
	h.trigger("cp1")
	require.NoError(t, h.ack(1, a0, 1))
	require.NoError(t, h.ack(1, a1, 1))
	assert.Empty(t, h.results)
	assert.Equal(t, 1, h.c.NumberOfPendingCheckpoints())
	ocA.answer(t, 1, []byte("a"), nil)
	ocB.answer(t, 1, []byte("b"), nil)
	assert.Equal(t, []string{"cp1 completed 1"}, h.results)
	assert.Equal(t, []string{
		"oc B checkpoint 1", "oc A checkpoint 1",
		"trigger 1 v/0#0", "trigger 1 v/1#0",
		"oc B afterBarrier 1", "oc A afterBarrier 1",
		"store 1", "complete 1 v/0#0", "complete 1 v/1#0", "oc B complete 1", "oc A complete 1",
	}, h.rec.log)
}

// A savepoint's _metadata keeps the coordinators' states: LoadSavepoint returns them exactly.
func TestSavepointMetadataKeepsCoordinatorStates(t *testing.T) {
	h, a0, a1, ocA, ocB := coordHarness(t, jobgraph.CheckpointingSettings{})
	var got checkpoint.CompletedCheckpoint
	require.NoError(t, h.c.TriggerSavepoint(h.jm, h.spDir, 0, func(cp checkpoint.CompletedCheckpoint, err error) {
		require.NoError(t, err)
		got = cp
	}))
	ocA.answer(t, 1, []byte{0, 1, 2, 255}, nil)
	ocB.answer(t, 1, []byte(`{"splits":["f1","f2"]}`), nil)
	require.NoError(t, h.ack(1, a0, 3))
	require.NoError(t, h.ack(1, a1, 4))
	require.Equal(t, h.savepointDir(1), got.ExternalPointer)
	want := []checkpoint.CoordinatorState{
		{JobVertexID: ocA.vertex, State: []byte{0, 1, 2, 255}},
		{JobVertexID: ocB.vertex, State: []byte(`{"splits":["f1","f2"]}`)},
	}
	assert.Equal(t, want, got.CoordinatorStates)
	loaded, err := checkpoint.LoadSavepoint(got.ExternalPointer)
	require.NoError(t, err)
	assert.Equal(t, want, loaded.CoordinatorStates)
	assert.Equal(t, got.StateSize, loaded.StateSize)
	assert.Equal(t, int64(3+4+4+22), loaded.StateSize)
}

// The file store's checkpoint-<id>.json keeps them too: a reopened store returns them.
func TestFileStoreKeepsCoordinatorStates(t *testing.T) {
	dir := t.TempDir()
	s, err := checkpoint.OpenFileCompletedCheckpointStore(dir, 1)
	require.NoError(t, err)
	cp := checkpoint.CompletedCheckpoint{JobID: jobgraph.NewJobID(), CheckpointID: 7,
		CoordinatorStates: []checkpoint.CoordinatorState{{JobVertexID: jobgraph.JobVertexID{9}, State: []byte("x")}}}
	_, err = s.Add(cp)
	require.NoError(t, err)
	reopened, err := checkpoint.OpenFileCompletedCheckpointStore(dir, 1)
	require.NoError(t, err)
	latest, ok := reopened.Latest()
	require.True(t, ok)
	assert.Equal(t, cp.CoordinatorStates, latest.CoordinatorStates)
}

// Two contexts for one vertex, or a nil one, are refused naming the problem.
func TestCoordinatorsConfigIsChecked(t *testing.T) {
	var log []string
	a, a2 := newFakeOC(&log, "A", 1), newFakeOC(&log, "A2", 1)
	mk := func(ocs ...checkpoint.OperatorCoordinatorCheckpointContext) error {
		mem, _ := checkpoint.NewStandaloneCompletedCheckpointStore(1)
		rec := &recorder{}
		_, err := checkpoint.NewCheckpointCoordinator(checkpoint.Config{Timers: nopTimers{}, Tasks: rec,
			Plan: func() (checkpoint.CheckpointPlan, error) { return checkpoint.CheckpointPlan{}, nil }, Store: mem,
			IDCounter: checkpoint.NewStandaloneCheckpointIDCounter(), FailJob: rec, Coordinators: ocs})
		return err
	}
	err := mk(a, a2)
	require.ErrorIs(t, err, checkpoint.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "two operator coordinators of vertex "+a.vertex.String())
	err = mk(a, nil)
	require.ErrorIs(t, err, checkpoint.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "Config.Coordinators[1] is nil")
	require.NoError(t, mk(a))
}

type nopTimers struct{}

func (nopTimers) Schedule(time.Duration, func()) func() bool { return func() bool { return false } }
