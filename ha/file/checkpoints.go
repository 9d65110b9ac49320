package file

import (
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// checkpointFactory is checkpoint.FileCheckpointRecoveryFactory over Dir/checkpoints with every
// write of its stores and counters fenced by the client's leadership.
type checkpointFactory struct {
	s     *Services
	files checkpoint.FileCheckpointRecoveryFactory
}

var _ checkpoint.CheckpointRecoveryFactory = (*checkpointFactory)(nil)

// CreateRecoveredCompletedCheckpointStore implements checkpoint.CheckpointRecoveryFactory: the
// job's FileCompletedCheckpointStore, recovered from its directory, its Add and Shutdown(true)
// fenced. Not fenced itself (it reads), so a standby may look at a job's checkpoints. Errors:
// checkpoint.OpenFileCompletedCheckpointStore's.
func (f *checkpointFactory) CreateRecoveredCompletedCheckpointStore(job jobgraph.JobID, maxRetained int) (checkpoint.CompletedCheckpointStore, error) {
	inner, err := f.files.CreateRecoveredCompletedCheckpointStore(job, maxRetained)
	if err != nil {
		return nil, fmt.Errorf("ha/file: %w", err)
	}
	return &fencedStore{s: f.s, job: job, CompletedCheckpointStore: inner}, nil
}

// CreateCheckpointIDCounter implements checkpoint.CheckpointRecoveryFactory: the job's
// FileCheckpointIDCounter, its GetAndIncrement, SetCount and Shutdown(true) fenced. Opening it
// writes the counter file when it is missing (unfenced: it holds only the initial ID, which a
// leader's counter never goes below). Errors: checkpoint.OpenFileCheckpointIDCounter's.
func (f *checkpointFactory) CreateCheckpointIDCounter(job jobgraph.JobID) (checkpoint.CheckpointIDCounter, error) {
	inner, err := f.files.CreateCheckpointIDCounter(job)
	if err != nil {
		return nil, fmt.Errorf("ha/file: %w", err)
	}
	return &fencedCounter{s: f.s, job: job, CheckpointIDCounter: inner}, nil
}

// fencedStore fences the writes of a job's checkpoint store; reads go straight through.
type fencedStore struct {
	s   *Services
	job jobgraph.JobID
	checkpoint.CompletedCheckpointStore
}

// Add implements checkpoint.CompletedCheckpointStore: fenced (an error wrapping ha.ErrNotLeader
// unless the client leads), else the file store's Add.
func (f *fencedStore) Add(cp checkpoint.CompletedCheckpoint) (subsumed []checkpoint.CompletedCheckpoint, err error) {
	err = f.s.fenced(fmt.Sprintf("storing checkpoint %d of job %s", cp.CheckpointID, f.job), func() error {
		subsumed, err = f.CompletedCheckpointStore.Add(cp)
		return err
	})
	return subsumed, err
}

// Shutdown implements checkpoint.CompletedCheckpointStore: Shutdown(true) deletes, so it is
// fenced; Shutdown(false) only ends this store object.
func (f *fencedStore) Shutdown(discard bool) error {
	if !discard {
		return f.CompletedCheckpointStore.Shutdown(false)
	}
	return f.s.fenced("discarding the checkpoints of job "+f.job.String(), func() error {
		return f.CompletedCheckpointStore.Shutdown(true)
	})
}

// fencedCounter fences the writes of a job's checkpoint ID counter; Get goes straight through.
type fencedCounter struct {
	s   *Services
	job jobgraph.JobID
	checkpoint.CheckpointIDCounter
}

// GetAndIncrement implements checkpoint.CheckpointIDCounter, fenced.
func (f *fencedCounter) GetAndIncrement() (id checkpoint.CheckpointID, err error) {
	err = f.s.fenced("advancing the checkpoint ID counter of job "+f.job.String(), func() error {
		id, err = f.CheckpointIDCounter.GetAndIncrement()
		return err
	})
	return id, err
}

// SetCount implements checkpoint.CheckpointIDCounter, fenced.
func (f *fencedCounter) SetCount(next checkpoint.CheckpointID) error {
	return f.s.fenced("setting the checkpoint ID counter of job "+f.job.String(), func() error {
		return f.CheckpointIDCounter.SetCount(next)
	})
}

// Shutdown implements checkpoint.CheckpointIDCounter: Shutdown(true) removes the file, so it is
// fenced; Shutdown(false) only ends this counter object.
func (f *fencedCounter) Shutdown(discard bool) error {
	if !discard {
		return f.CheckpointIDCounter.Shutdown(false)
	}
	return f.s.fenced("discarding the checkpoint ID counter of job "+f.job.String(), func() error {
		return f.CheckpointIDCounter.Shutdown(true)
	})
}
