package dispatcher_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
)

// recordingHA wraps the embedded services: every store call — plans, results, the checkpoint
// recovery factory and the stores and counters it opens, CleanupJobData — is recorded in order
// with the (virtual) time since the wrapper was made, and a call can be made to fail a given
// number of times first (failing calls are recorded too, and change nothing). The leader
// elections are the embedded ones, not recorded.
type recordingHA struct {
	*embedded.Services
	start time.Time

	mu    sync.Mutex
	calls []string
	fail  map[string]int   // call name → failures left
	with  map[string]error // call name → the error it fails with; nil: an injected error
}

func newRecordingHA() *recordingHA {
	return &recordingHA{Services: embedded.New(), start: time.Now(), fail: map[string]int{}, with: map[string]error{}}
}

// failNext makes the next n calls of name fail.
func (h *recordingHA) failNext(name string, n int) { h.failNextWith(name, n, nil) }

// failNextWith makes the next n calls of name fail with err (nil: an injected error).
func (h *recordingHA) failNextWith(name string, n int, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fail[name] = n
	h.with[name] = err
}

// call records name and says whether it fails.
func (h *recordingHA) call(name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, fmt.Sprintf("%v %s", time.Since(h.start), name))
	if h.fail[name] > 0 {
		h.fail[name]--
		if err := h.with[name]; err != nil {
			return err
		}
		return fmt.Errorf("injected failure of %s", name)
	}
	return nil
}

// recorded returns the calls so far and forgets them.
func (h *recordingHA) recorded() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.calls
	h.calls = nil
	return c
}

func (h *recordingHA) ExecutionPlanStore() ha.ExecutionPlanStore {
	return recordingPlans{h, h.Services.ExecutionPlanStore()}
}
func (h *recordingHA) JobResultStore() ha.JobResultStore {
	return recordingResults{h, h.Services.JobResultStore()}
}
func (h *recordingHA) CheckpointRecoveryFactory() checkpoint.CheckpointRecoveryFactory {
	return recordingCheckpoints{h, h.Services.CheckpointRecoveryFactory()}
}
func (h *recordingHA) CleanupJobData(ctx context.Context, job jobgraph.JobID) error {
	if err := h.call("HA.CleanupJobData"); err != nil {
		return err
	}
	return h.Services.CleanupJobData(ctx, job)
}

type recordingPlans struct {
	h *recordingHA
	ha.ExecutionPlanStore
}

func (s recordingPlans) Put(ctx context.Context, g *jobgraph.JobGraph) error {
	if err := s.h.call("ExecutionPlanStore.Put"); err != nil {
		return err
	}
	return s.ExecutionPlanStore.Put(ctx, g)
}
func (s recordingPlans) Get(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobGraph, error) {
	if err := s.h.call("ExecutionPlanStore.Get"); err != nil {
		return nil, err
	}
	return s.ExecutionPlanStore.Get(ctx, id)
}
func (s recordingPlans) Remove(ctx context.Context, id jobgraph.JobID) error {
	if err := s.h.call("ExecutionPlanStore.Remove"); err != nil {
		return err
	}
	return s.ExecutionPlanStore.Remove(ctx, id)
}
func (s recordingPlans) JobIDs(ctx context.Context) ([]jobgraph.JobID, error) {
	if err := s.h.call("ExecutionPlanStore.JobIDs"); err != nil {
		return nil, err
	}
	return s.ExecutionPlanStore.JobIDs(ctx)
}

type recordingResults struct {
	h *recordingHA
	ha.JobResultStore
}

func (s recordingResults) CreateDirty(ctx context.Context, r jobgraph.JobResult) error {
	if err := s.h.call("JobResultStore.CreateDirty"); err != nil {
		return err
	}
	return s.JobResultStore.CreateDirty(ctx, r)
}
func (s recordingResults) MarkClean(ctx context.Context, id jobgraph.JobID) error {
	if err := s.h.call("JobResultStore.MarkClean"); err != nil {
		return err
	}
	return s.JobResultStore.MarkClean(ctx, id)
}
func (s recordingResults) Get(ctx context.Context, id jobgraph.JobID) (ha.JobResultEntry, error) {
	if err := s.h.call("JobResultStore.Get"); err != nil {
		return ha.JobResultEntry{}, err
	}
	return s.JobResultStore.Get(ctx, id)
}
func (s recordingResults) DirtyResults(ctx context.Context) ([]jobgraph.JobResult, error) {
	if err := s.h.call("JobResultStore.DirtyResults"); err != nil {
		return nil, err
	}
	return s.JobResultStore.DirtyResults(ctx)
}

type recordingCheckpoints struct {
	h *recordingHA
	f checkpoint.CheckpointRecoveryFactory
}

func (c recordingCheckpoints) CreateRecoveredCompletedCheckpointStore(job jobgraph.JobID, maxRetained int) (checkpoint.CompletedCheckpointStore, error) {
	if err := c.h.call("CheckpointRecoveryFactory.CreateRecoveredCompletedCheckpointStore"); err != nil {
		return nil, err
	}
	s, err := c.f.CreateRecoveredCompletedCheckpointStore(job, maxRetained)
	if err != nil {
		return nil, err
	}
	return recordingStore{c.h, s}, nil
}
func (c recordingCheckpoints) CreateCheckpointIDCounter(job jobgraph.JobID) (checkpoint.CheckpointIDCounter, error) {
	if err := c.h.call("CheckpointRecoveryFactory.CreateCheckpointIDCounter"); err != nil {
		return nil, err
	}
	ctr, err := c.f.CreateCheckpointIDCounter(job)
	if err != nil {
		return nil, err
	}
	return recordingCounter{c.h, ctr}, nil
}

type recordingStore struct {
	h *recordingHA
	checkpoint.CompletedCheckpointStore
}

func (s recordingStore) Shutdown(discard bool) error {
	if err := s.h.call(fmt.Sprintf("CompletedCheckpointStore.Shutdown(%t)", discard)); err != nil {
		return err
	}
	return s.CompletedCheckpointStore.Shutdown(discard)
}

type recordingCounter struct {
	h *recordingHA
	checkpoint.CheckpointIDCounter
}

func (c recordingCounter) Shutdown(discard bool) error {
	if err := c.h.call(fmt.Sprintf("CheckpointIDCounter.Shutdown(%t)", discard)); err != nil {
		return err
	}
	return c.CheckpointIDCounter.Shutdown(discard)
}
