package checkpoint_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/internal/manualtime"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// recorder records every side effect in one log, in order.
type recorder struct {
	log       []string
	triggered []string
	failJobs  []string
	// logTriggers also logs each trigger ("trigger 1 v/0#0") in log, for tests of the order
	// between task triggers and other calls.
	logTriggers bool
}

func (r *recorder) TriggerCheckpoint(a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, _ time.Time, p checkpoint.CheckpointProperties) {
	r.triggered = append(r.triggered, fmt.Sprintf("%d@%s", id, name(a)))
	if r.logTriggers {
		r.log = append(r.log, fmt.Sprintf("trigger %d %s", id, name(a)))
	}
}
func (r *recorder) NotifyCheckpointComplete(a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, _ time.Time) {
	r.log = append(r.log, fmt.Sprintf("complete %d %s", id, name(a)))
}
func (r *recorder) NotifyCheckpointAborted(a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, _ time.Time) {
	r.log = append(r.log, fmt.Sprintf("aborted %d %s", id, name(a)))
}
func (r *recorder) FailJob(cause error) { r.failJobs = append(r.failJobs, "job: "+cause.Error()) }
func (r *recorder) FailJobDueToTaskFailure(cause error, a jobgraph.ExecutionAttemptID) {
	r.failJobs = append(r.failJobs, "task "+name(a)+": "+cause.Error())
}

var names = map[jobgraph.ExecutionAttemptID]string{}

func name(a jobgraph.ExecutionAttemptID) string {
	if n, ok := names[a]; ok {
		return n
	}
	return a.String()
}

// attempt makes an attempt named like "v1/0#0".
func attempt(eg jobgraph.ExecutionGraphID, v jobgraph.JobVertexID, vname string, subtask, number int) jobgraph.ExecutionAttemptID {
	a := jobgraph.ExecutionAttemptID{ExecutionGraphID: eg, ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: v, Subtask: subtask}, AttemptNumber: number}
	names[a] = fmt.Sprintf("%s/%d#%d", vname, subtask, number)
	return a
}

// recordingStore logs each Add into the shared log before delegating.
type recordingStore struct {
	checkpoint.CompletedCheckpointStore
	rec  *recorder
	fail error
}

func (s *recordingStore) Add(cp checkpoint.CompletedCheckpoint) ([]checkpoint.CompletedCheckpoint, error) {
	s.rec.log = append(s.rec.log, fmt.Sprintf("store %d", cp.CheckpointID))
	if s.fail != nil {
		return nil, s.fail
	}
	return s.CompletedCheckpointStore.Add(cp)
}

type failingCounter struct {
	checkpoint.CheckpointIDCounter
	fail error
}

func (c *failingCounter) GetAndIncrement() (checkpoint.CheckpointID, error) {
	if c.fail != nil {
		return 0, c.fail
	}
	return c.CheckpointIDCounter.GetAndIncrement()
}

// heldExecutor runs work at once but holds done until Release: an I/O call in flight.
type heldExecutor struct{ held []func() }

func (e *heldExecutor) Execute(work, done func()) { work(); e.held = append(e.held, done) }
func (e *heldExecutor) Release() {
	d := e.held[0]
	e.held = e.held[1:]
	d()
}

type harness struct {
	t       *testing.T
	timers  *manualtime.Timers
	rec     *recorder
	store   *recordingStore
	counter *failingCounter
	plan    checkpoint.CheckpointPlan
	planErr error
	jm      jobgraph.JobMasterID
	job     jobgraph.JobID
	spDir   string // a savepoint target directory (t.TempDir)
	c       *checkpoint.CheckpointCoordinator
	results []string
}

func newHarness(t *testing.T, s jobgraph.CheckpointingSettings, exec checkpoint.IOExecutor, tasks ...jobgraph.ExecutionAttemptID) *harness {
	t.Helper()
	mem, err := checkpoint.NewStandaloneCompletedCheckpointStore(s.NumRetained)
	require.NoError(t, err)
	return newHarnessOver(t, s, exec, mem, checkpoint.NewStandaloneCheckpointIDCounter(), tasks...)
}

func newHarnessOver(t *testing.T, s jobgraph.CheckpointingSettings, exec checkpoint.IOExecutor, store checkpoint.CompletedCheckpointStore, counter checkpoint.CheckpointIDCounter, tasks ...jobgraph.ExecutionAttemptID) *harness {
	t.Helper()
	return newHarnessWith(t, s, exec, store, counter, nil, tasks...)
}

// newHarnessWith is newHarnessOver with the operator coordinators ocs in the Config.
func newHarnessWith(t *testing.T, s jobgraph.CheckpointingSettings, exec checkpoint.IOExecutor, store checkpoint.CompletedCheckpointStore, counter checkpoint.CheckpointIDCounter, ocs []checkpoint.OperatorCoordinatorCheckpointContext, tasks ...jobgraph.ExecutionAttemptID) *harness {
	t.Helper()
	h := &harness{t: t, timers: manualtime.New(start), rec: &recorder{}, jm: jobgraph.NewJobMasterID(), job: jobgraph.NewJobID(), spDir: t.TempDir()}
	h.store = &recordingStore{CompletedCheckpointStore: store, rec: h.rec}
	h.counter = &failingCounter{CheckpointIDCounter: counter}
	h.setTasks(tasks...)
	c, err := checkpoint.NewCheckpointCoordinator(checkpoint.Config{
		JobID: h.job, JobMasterID: h.jm, Settings: s, Timers: h.timers, Clock: h.timers.Now,
		Tasks: h.rec, Plan: func() (checkpoint.CheckpointPlan, error) { return h.plan, h.planErr },
		Store: h.store, IDCounter: h.counter, Executor: exec, FailJob: h.rec,
		Savepoints:   checkpoint.FileSavepointStorage{Random: &countingRandom{}},
		Coordinators: ocs,
	})
	require.NoError(t, err)
	h.c = c
	return h
}

// setTasks makes every task both triggered and waited for (a graph of sources, for the core).
func (h *harness) setTasks(tasks ...jobgraph.ExecutionAttemptID) {
	h.plan = checkpoint.CheckpointPlan{TasksToTrigger: tasks, TasksToWaitFor: tasks}
}

func (h *harness) done(label string) func(checkpoint.CompletedCheckpoint, error) {
	return func(cp checkpoint.CompletedCheckpoint, err error) {
		if err != nil {
			h.results = append(h.results, label+" failed: "+err.Error())
			return
		}
		h.results = append(h.results, fmt.Sprintf("%s completed %d", label, cp.CheckpointID))
	}
}

func (h *harness) trigger(label string) {
	h.t.Helper()
	require.NoError(h.t, h.c.TriggerCheckpoint(h.jm, h.done(label)))
}

func (h *harness) ack(id checkpoint.CheckpointID, a jobgraph.ExecutionAttemptID, size int64) error {
	return h.c.ReceiveAcknowledgeMessage(h.jm, checkpoint.AcknowledgeCheckpoint{Attempt: a, CheckpointID: id, State: checkpoint.StateHandle{Data: []byte(name(a)), Size: size}})
}

func (h *harness) decline(id checkpoint.CheckpointID, a jobgraph.ExecutionAttemptID, reason checkpoint.CheckpointFailureReason) error {
	return h.c.ReceiveDeclineMessage(h.jm, checkpoint.DeclineCheckpoint{Attempt: a, CheckpointID: id, Reason: reason})
}

func (h *harness) storedIDs() []checkpoint.CheckpointID {
	var ids []checkpoint.CheckpointID
	for _, cp := range h.store.All() {
		ids = append(ids, cp.CheckpointID)
	}
	return ids
}

// countingRandom makes savepoint directory names 000000000001, 000000000002, … (6 bytes per Read,
// big-endian).
type countingRandom struct{ n uint64 }

func (r *countingRandom) Read(b []byte) (int, error) {
	r.n++
	v := r.n
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return len(b), nil
}

// savepointDir is the n-th savepoint directory the harness's storage creates in h.spDir.
func (h *harness) savepointDir(n int) string {
	return filepath.Join(h.spDir, fmt.Sprintf("savepoint-%s-%012x", h.job.String()[:6], n))
}

func ms(d time.Duration) int64 { return start.Add(d).UnixMilli() }
