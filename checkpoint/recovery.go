package checkpoint

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"

	"github.com/jobgraph/jobgraph"
)

// CheckpointRecoveryFactory gives a job's scheduler the CompletedCheckpointStore and the
// CheckpointIDCounter of that job: the snapshots it restores from and the IDs it goes on
// counting, also across JobMasters of the same job (a restart, a new leader). Flink:
// org.apache.flink.runtime.checkpoint.CheckpointRecoveryFactory. Implementations are safe for
// concurrent use; both methods may do I/O (a file store reads its directory), so a JobMaster
// calls them off its main loop.
type CheckpointRecoveryFactory interface {
	// CreateRecoveredCompletedCheckpointStore returns the store of job, with the snapshots it
	// recovered, retaining maxRetained (execution.checkpointing.num-retained; 0 means
	// DefaultNumRetained). Errors: ErrInvalidConfig for a negative maxRetained, the store's I/O
	// error.
	CreateRecoveredCompletedCheckpointStore(job jobgraph.JobID, maxRetained int) (CompletedCheckpointStore, error)
	// CreateCheckpointIDCounter returns the ID counter of job. Errors: the counter's I/O error.
	CreateCheckpointIDCounter(job jobgraph.JobID) (CheckpointIDCounter, error)
}

// StandaloneCheckpointRecoveryFactory is the in-memory CheckpointRecoveryFactory: it keeps one
// StandaloneCompletedCheckpointStore and one StandaloneCheckpointIDCounter per job for as long as
// the factory lives, so a JobMaster that takes over a job in the same process (a new leader
// session, a restart) finds the previous one's checkpoints and goes on counting from its IDs.
// Flink: PerJobCheckpointRecoveryFactory over the standalone store and counter (Flink's
// StandaloneCheckpointRecoveryFactory hands out new, empty ones every time, so a restarted
// JobMaster of a standalone cluster forgets its checkpoints; ours does not). A store or counter
// that was shut down is replaced on the next call: after Shutdown(false) (a JobMaster that lost
// leadership, a suspended job) by one over the same checkpoints, with the same retention, or one
// that goes on counting from the same next ID; after Shutdown(true) (a globally terminal job's
// cleanup, which finds the job's checkpoints here to discard them) by an empty store, or a
// counter starting at InitialCheckpointID again. A store or counter shut down with discard is
// forgotten at once, and once both of a job's are, the factory holds nothing of the job (Jobs),
// so a long-running process does not grow per finished job. The zero value is ready to use;
// safe for concurrent use.
type StandaloneCheckpointRecoveryFactory struct {
	mu   sync.Mutex
	jobs map[jobgraph.JobID]*standaloneJob
}

type standaloneJob struct {
	store   *StandaloneCompletedCheckpointStore
	counter *StandaloneCheckpointIDCounter
}

var _ CheckpointRecoveryFactory = (*StandaloneCheckpointRecoveryFactory)(nil)

// NewStandaloneCheckpointRecoveryFactory returns an empty in-memory factory.
func NewStandaloneCheckpointRecoveryFactory() *StandaloneCheckpointRecoveryFactory {
	return &StandaloneCheckpointRecoveryFactory{}
}

func (f *StandaloneCheckpointRecoveryFactory) job(id jobgraph.JobID) *standaloneJob {
	if f.jobs == nil {
		f.jobs = map[jobgraph.JobID]*standaloneJob{}
	}
	j := f.jobs[id]
	if j == nil {
		j = &standaloneJob{}
		f.jobs[id] = j
	}
	return j
}

// CreateRecoveredCompletedCheckpointStore implements CheckpointRecoveryFactory: the job's store,
// created on the first call (or after the previous one was shut down with discard) with
// maxRetained. A later call keeps the store's retention as it was created; after a Shutdown
// without discard it returns a new store over the previous one's checkpoints.
func (f *StandaloneCheckpointRecoveryFactory) CreateRecoveredCompletedCheckpointStore(job jobgraph.JobID, maxRetained int) (CompletedCheckpointStore, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.job(job)
	if j.store != nil {
		if kept, ok := j.store.reopen(); ok {
			if kept != j.store { // handed over: not shared yet
				kept.forget = func() { f.forget(job, kept, nil) }
				j.store = kept
			}
			return kept, nil
		}
	}
	s, err := NewStandaloneCompletedCheckpointStore(maxRetained)
	if err != nil {
		if j.store == nil && j.counter == nil {
			delete(f.jobs, job)
		}
		return nil, err
	}
	s.forget = func() { f.forget(job, s, nil) }
	j.store = s
	return s, nil
}

// CreateCheckpointIDCounter implements CheckpointRecoveryFactory: the job's counter, created on
// the first call (or after the previous one was shut down with discard); after a Shutdown
// without discard a new counter that goes on from the previous one's next ID.
func (f *StandaloneCheckpointRecoveryFactory) CreateCheckpointIDCounter(job jobgraph.JobID) (CheckpointIDCounter, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.job(job)
	if j.counter != nil {
		if kept, ok := j.counter.reopen(); ok {
			if kept != j.counter { // handed over: not shared yet
				kept.forget = func() { f.forget(job, nil, kept) }
				j.counter = kept
			}
			return kept, nil
		}
	}
	c := NewStandaloneCheckpointIDCounter()
	c.forget = func() { f.forget(job, nil, c) }
	j.counter = c
	return c, nil
}

// forget drops the discarded store or counter of job if it is still the job's newest (an older
// one discarded late changes nothing), and the job once the factory holds neither. Called by
// Shutdown(true) with no store or counter lock held (the factory's Create methods take f.mu and
// then a store's or counter's mu).
func (f *StandaloneCheckpointRecoveryFactory) forget(job jobgraph.JobID, s *StandaloneCompletedCheckpointStore, c *StandaloneCheckpointIDCounter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.jobs[job]
	if j == nil {
		return
	}
	if s != nil && j.store == s {
		j.store = nil
	}
	if c != nil && j.counter == c {
		j.counter = nil
	}
	if j.store == nil && j.counter == nil {
		delete(f.jobs, job)
	}
}

// Jobs lists, in ascending order, the jobs whose store or counter the factory holds (opened and
// not discarded): what it keeps in memory.
func (f *StandaloneCheckpointRecoveryFactory) Jobs() []jobgraph.JobID {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := slices.Collect(maps.Keys(f.jobs))
	slices.SortFunc(ids, func(a, b jobgraph.JobID) int { return slices.Compare(a[:], b[:]) })
	return ids
}

// reopen returns s itself while it runs, a new store over its checkpoints (and retention) once it
// was shut down without discard, and false once it was shut down with discard.
func (s *StandaloneCompletedCheckpointStore) reopen() (*StandaloneCompletedCheckpointStore, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.shutdown:
		return s, true
	case s.discarded:
		return nil, false
	}
	// The old store refuses every Add from now on, so the new one owns the list alone.
	return &StandaloneCompletedCheckpointStore{retained: retained{maxRetained: s.maxRetained, cps: slices.Clone(s.cps)}}, true
}

// reopen returns c itself while it runs, a new counter going on from its next ID once it was shut
// down without discard, and false once it was shut down with discard.
func (c *StandaloneCheckpointIDCounter) reopen() (*StandaloneCheckpointIDCounter, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.shutdown:
		return c, true
	case c.discarded:
		return nil, false
	}
	return &StandaloneCheckpointIDCounter{idCounter: idCounter{next: c.next}}, true
}

// FileCheckpointRecoveryFactory is the durable CheckpointRecoveryFactory: job J's store is the
// FileCompletedCheckpointStore in Dir/J/checkpoints and its counter the FileCheckpointIDCounter
// at Dir/J/checkpoint-id-counter, so a JobMaster of another process that takes over the job
// recovers both. Flink: the CheckpointRecoveryFactory of a file-based HA service. Each call opens
// the files again (I/O: call it off the main loop).
type FileCheckpointRecoveryFactory struct {
	// Dir holds one directory per job. Required.
	Dir string
}

var _ CheckpointRecoveryFactory = FileCheckpointRecoveryFactory{}

// CreateRecoveredCompletedCheckpointStore implements CheckpointRecoveryFactory. Errors:
// ErrInvalidConfig for an empty Dir, OpenFileCompletedCheckpointStore's.
func (f FileCheckpointRecoveryFactory) CreateRecoveredCompletedCheckpointStore(job jobgraph.JobID, maxRetained int) (CompletedCheckpointStore, error) {
	if f.Dir == "" {
		return nil, errorsJoin(ErrInvalidConfig, "FileCheckpointRecoveryFactory.Dir is empty")
	}
	s, err := OpenFileCompletedCheckpointStore(filepath.Join(f.Dir, job.String(), "checkpoints"), maxRetained)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: job %s: %w", job, err)
	}
	return s, nil
}

// CreateCheckpointIDCounter implements CheckpointRecoveryFactory. Errors: ErrInvalidConfig for an
// empty Dir, OpenFileCheckpointIDCounter's.
func (f FileCheckpointRecoveryFactory) CreateCheckpointIDCounter(job jobgraph.JobID) (CheckpointIDCounter, error) {
	if f.Dir == "" {
		return nil, errorsJoin(ErrInvalidConfig, "FileCheckpointRecoveryFactory.Dir is empty")
	}
	c, err := OpenFileCheckpointIDCounter(filepath.Join(f.Dir, job.String(), "checkpoint-id-counter"))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: job %s: %w", job, err)
	}
	return c, nil
}

// DoesNoIO reports whether every call of store and counter stays in memory (both are the
// Standalone ones), so their owner may call them on its loop (InlineExecutor); any other store or
// counter is called through an IOExecutor that leaves the loop.
func DoesNoIO(store CompletedCheckpointStore, counter CheckpointIDCounter) bool {
	_, s := store.(*StandaloneCompletedCheckpointStore)
	_, c := counter.(*StandaloneCheckpointIDCounter)
	return s && c
}
