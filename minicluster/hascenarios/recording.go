package hascenarios

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/ha"
)

// errInjectedStep is what a step the recording wrapper fails returns.
var errInjectedStep = errors.New("hascenarios: injected cleanup step failure")

// recordingHA wraps one client of the backend: the stores written through it are the
// backend's own, and it records each write the cleanup consists of — ExecutionPlanStore.Put and
// Remove, JobResultStore.CreateDirty and MarkClean, HA.CleanupJobData, and the discarding
// Shutdown(true) of a checkpoint store or counter (a JobMaster's Shutdown(false) and the reads
// are not recorded) — with its instant, failing the next n calls of a name when told to. The
// elections and retrievals are the client's. It also checks Flink's cleanup invariants as the
// calls come: no checkpoint, plan or HA data is removed before the job's dirty entry was
// written, and MarkClean comes only after every step of the job's cleanup succeeded.
type recordingHA struct {
	ha.Services // the backend's client

	mu         sync.Mutex
	calls      []call
	fail       map[string]int
	dirty      map[jobgraph.JobID]bool   // CreateDirty succeeded
	failed     map[jobgraph.JobID]string // the last step that failed, until it succeeded again
	violations []string
}

type call struct {
	at   time.Time
	name string // e.g. "ExecutionPlanStore.Remove", with " (failed)" when it was made to fail
}

func newRecordingHA(c ha.Services) *recordingHA {
	return &recordingHA{Services: c, fail: map[string]int{}, dirty: map[jobgraph.JobID]bool{}, failed: map[jobgraph.JobID]string{}}
}

// failNext makes the next n calls of name fail.
func (r *recordingHA) failNext(name string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail[name] = n
}

// do records the call name of job, failing it if told to, else running it. removes says the
// call removes data of the job (so it must come after the dirty entry).
func (r *recordingHA) do(job jobgraph.JobID, name string, removes bool, run func() error) error {
	r.mu.Lock()
	if removes && !r.dirty[job] {
		r.violations = append(r.violations, fmt.Sprintf("%s of job %s before its dirty JobResult was written", name, job))
	}
	if name == "JobResultStore.MarkClean" && r.failed[job] != "" && r.failed[job] != name {
		r.violations = append(r.violations, fmt.Sprintf("MarkClean of job %s while step %s had not succeeded", job, r.failed[job]))
	}
	if r.fail[name] > 0 {
		r.fail[name]--
		r.calls = append(r.calls, call{time.Now(), name + " (failed)"})
		r.failed[job] = name
		r.mu.Unlock()
		return fmt.Errorf("%s: %w", name, errInjectedStep)
	}
	r.mu.Unlock()
	err := run()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.calls = append(r.calls, call{time.Now(), name + " (error: " + err.Error() + ")"})
		r.failed[job] = name
		return err
	}
	r.calls = append(r.calls, call{time.Now(), name})
	if r.failed[job] == name {
		delete(r.failed, job)
	}
	if name == "JobResultStore.CreateDirty" {
		r.dirty[job] = true
	}
	return nil
}

// recorded returns the calls so far and forgets them: "<d> <name>" with d the time since from
// when withTimes (in a bubble), else "<name>".
func (r *recordingHA) recorded(from time.Time, withTimes bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.calls))
	for _, c := range r.calls {
		if withTimes {
			out = append(out, c.at.Sub(from).String()+" "+c.name)
		} else {
			out = append(out, c.name)
		}
	}
	r.calls = nil
	return out
}

// checkInvariants returns the invariant violations seen so far.
func (r *recordingHA) checkInvariants() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.violations...)
}

func (r *recordingHA) ExecutionPlanStore() ha.ExecutionPlanStore {
	return recordingPlans{r.Services.ExecutionPlanStore(), r}
}

func (r *recordingHA) JobResultStore() ha.JobResultStore {
	return recordingResults{r.Services.JobResultStore(), r}
}

func (r *recordingHA) CheckpointRecoveryFactory() checkpoint.CheckpointRecoveryFactory {
	return recordingFactory{r.Services.CheckpointRecoveryFactory(), r}
}

func (r *recordingHA) CleanupJobData(ctx context.Context, job jobgraph.JobID) error {
	return r.do(job, "HA.CleanupJobData", true, func() error { return r.Services.CleanupJobData(ctx, job) })
}

type recordingPlans struct {
	ha.ExecutionPlanStore
	r *recordingHA
}

func (p recordingPlans) Put(ctx context.Context, g *jobgraph.JobGraph) error {
	return p.r.do(g.JobID, "ExecutionPlanStore.Put", false, func() error { return p.ExecutionPlanStore.Put(ctx, g) })
}

func (p recordingPlans) Remove(ctx context.Context, id jobgraph.JobID) error {
	return p.r.do(id, "ExecutionPlanStore.Remove", true, func() error { return p.ExecutionPlanStore.Remove(ctx, id) })
}

type recordingResults struct {
	ha.JobResultStore
	r *recordingHA
}

func (s recordingResults) CreateDirty(ctx context.Context, res jobgraph.JobResult) error {
	return s.r.do(res.JobID, "JobResultStore.CreateDirty", false, func() error { return s.JobResultStore.CreateDirty(ctx, res) })
}

func (s recordingResults) MarkClean(ctx context.Context, id jobgraph.JobID) error {
	return s.r.do(id, "JobResultStore.MarkClean", false, func() error { return s.JobResultStore.MarkClean(ctx, id) })
}

type recordingFactory struct {
	checkpoint.CheckpointRecoveryFactory
	r *recordingHA
}

func (f recordingFactory) CreateRecoveredCompletedCheckpointStore(job jobgraph.JobID, maxRetained int) (checkpoint.CompletedCheckpointStore, error) {
	s, err := f.CheckpointRecoveryFactory.CreateRecoveredCompletedCheckpointStore(job, maxRetained)
	if err != nil {
		return nil, err
	}
	return recordingStore{s, f.r, job}, nil
}

func (f recordingFactory) CreateCheckpointIDCounter(job jobgraph.JobID) (checkpoint.CheckpointIDCounter, error) {
	c, err := f.CheckpointRecoveryFactory.CreateCheckpointIDCounter(job)
	if err != nil {
		return nil, err
	}
	return recordingCounter{c, f.r, job}, nil
}

type recordingStore struct {
	checkpoint.CompletedCheckpointStore
	r   *recordingHA
	job jobgraph.JobID
}

func (s recordingStore) Shutdown(discard bool) error {
	if !discard {
		return s.CompletedCheckpointStore.Shutdown(false)
	}
	return s.r.do(s.job, "CompletedCheckpointStore.Shutdown(true)", true, func() error { return s.CompletedCheckpointStore.Shutdown(true) })
}

type recordingCounter struct {
	checkpoint.CheckpointIDCounter
	r   *recordingHA
	job jobgraph.JobID
}

func (c recordingCounter) Shutdown(discard bool) error {
	if !discard {
		return c.CheckpointIDCounter.Shutdown(false)
	}
	return c.r.do(c.job, "CheckpointIDCounter.Shutdown(true)", true, func() error { return c.CheckpointIDCounter.Shutdown(true) })
}

// globalCleanup is the recorded calls of a checkpointing job's global cleanup, every step
// succeeding, each prefixed with prefix ("3s " or "").
func globalCleanup(prefix string) []string {
	var out []string
	for _, c := range globalCleanupSteps {
		out = append(out, prefix+c)
	}
	return out
}

var globalCleanupSteps = []string{
	"JobResultStore.CreateDirty",
	"CompletedCheckpointStore.Shutdown(true)",
	"CheckpointIDCounter.Shutdown(true)",
	"ExecutionPlanStore.Remove",
	"HA.CleanupJobData",
	"JobResultStore.MarkClean",
}
