package source

import "slices"

// SplitAssignmentTracker remembers which splits were handed to which subtask since each
// checkpoint, so that a subtask reset to a checkpoint can have exactly the splits it got after
// that checkpoint handed out again. Flink: SplitAssignmentTracker. Not safe for concurrent use:
// the SourceCoordinator calls it on the JobMaster's loop.
//
// Assignments are kept in buckets: the splits handed out since the last checkpoint's coordinator
// snapshot (uncheckpointed), and for each checkpoint c whose snapshot was taken and that has not
// been subsumed by a completed one, the splits handed out between the previous snapshot and c's.
type SplitAssignmentTracker struct {
	// byCheckpoint[c][subtask] are the splits handed to subtask before checkpoint c's snapshot
	// and after the previous one's; checkpoints lists the keys, ascending.
	byCheckpoint   map[int64]map[int][]Split
	checkpoints    []int64
	uncheckpointed map[int][]Split
}

// NewSplitAssignmentTracker returns a tracker with no assignments.
func NewSplitAssignmentTracker() *SplitAssignmentTracker {
	return &SplitAssignmentTracker{byCheckpoint: map[int64]map[int][]Split{}, uncheckpointed: map[int][]Split{}}
}

// RecordSplitAssignment records that splits were handed to subtask.
func (t *SplitAssignmentTracker) RecordSplitAssignment(subtask int, splits ...Split) {
	t.uncheckpointed[subtask] = append(t.uncheckpointed[subtask], splits...)
}

// OnCheckpoint closes the bucket of the assignments since the previous checkpoint under
// checkpointID: the coordinator's snapshot for checkpointID is being taken, so those splits are
// either in the readers' snapshots for it or, sent after it, will be in a later bucket.
// Checkpoint IDs are expected to increase; a repeated ID adds to its bucket.
func (t *SplitAssignmentTracker) OnCheckpoint(checkpointID int64) {
	b, ok := t.byCheckpoint[checkpointID]
	if !ok {
		b = map[int][]Split{}
		t.byCheckpoint[checkpointID] = b
		i, _ := slices.BinarySearch(t.checkpoints, checkpointID)
		t.checkpoints = slices.Insert(t.checkpoints, i, checkpointID)
	}
	for s, splits := range t.uncheckpointed {
		b[s] = append(b[s], splits...)
	}
	t.uncheckpointed = map[int][]Split{}
}

// OnCheckpointComplete forgets the assignments of every checkpoint up to checkpointID: no
// subtask will be reset to a checkpoint before a completed one.
func (t *SplitAssignmentTracker) OnCheckpointComplete(checkpointID int64) {
	n := 0
	for n < len(t.checkpoints) && t.checkpoints[n] <= checkpointID {
		delete(t.byCheckpoint, t.checkpoints[n])
		n++
	}
	t.checkpoints = slices.Delete(t.checkpoints, 0, n)
}

// GetAndRemoveUncheckpointedAssignment removes and returns the splits handed to subtask after
// checkpoint restoredCheckpointID (coordination.NoCheckpoint: every split it got that the tracker
// still has), in the order they were handed out. Flink:
// SplitAssignmentTracker.getAndRemoveUncheckpointedAssignment.
func (t *SplitAssignmentTracker) GetAndRemoveUncheckpointedAssignment(subtask int, restoredCheckpointID int64) []Split {
	var out []Split
	for _, c := range t.checkpoints {
		if c <= restoredCheckpointID { // NoCheckpoint (-1) is below every checkpoint ID
			continue
		}
		out = append(out, t.byCheckpoint[c][subtask]...)
		delete(t.byCheckpoint[c], subtask)
	}
	out = append(out, t.uncheckpointed[subtask]...)
	delete(t.uncheckpointed, subtask)
	return out
}

// Reset forgets every assignment (a global reset: every subtask restores the same checkpoint).
func (t *SplitAssignmentTracker) Reset() {
	t.byCheckpoint = map[int64]map[int][]Split{}
	t.checkpoints = nil
	t.uncheckpointed = map[int][]Split{}
}
