package scheduler

import (
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// operatorCoordinators are the job's operator coordinators (Config.OperatorCoordinators) as the
// scheduler restores them. Flink: the OperatorCoordinatorHandler's part in SchedulerBase's
// restoreState (notifyCoordinatorsOfSubtaskRestore, notifyCoordinatorsOfEmptyGlobalRestore) and
// CheckpointCoordinator.restoreStateToCoordinators.
//
// The order of the calls, all on the main loop:
//   - initial restore (New): when the job starts from the store's latest snapshot or the
//     savepoint of execution.savepoint.path, every coordinator gets ResetToCheckpoint(that
//     snapshot's ID, its state there, nil if none) after the tasks' state was assigned and
//     before New returns — so before the JobMaster starts the coordinators (Flink starts them
//     in startScheduling, after the restore in the scheduler's constructor). A job that starts
//     from nothing resets no coordinator (Flink's RESTORE_IF_CHECKPOINT_PRESENT);
//   - global failover (every vertex restarts): once the restarted tasks' state was assigned,
//     every coordinator gets ResetToCheckpoint with the latest snapshot (checkpoint or
//     savepoint, whichever the tasks restore) and its state, or (NoCheckpoint, nil) when there
//     is none or the job has no CheckpointCoordinator (Flink's RESTORE_OR_RESET and
//     notifyCoordinatorsOfEmptyGlobalRestore);
//   - region failover: once the restarted tasks' state was assigned, every restarted subtask of
//     a coordinated vertex gets SubtaskReset(subtask, the restored snapshot's ID), NoCheckpoint
//     when none was restored or the job has no CheckpointCoordinator, in the restart's vertex
//     order (Flink: notifyCoordinatorsOfSubtaskRestore).
//
// Then the strategy schedules the restarted tasks. A coordinator's error from either call is a
// global failure of the job (Flink: restartTasks' handleGlobalFailure of restoreState's
// exception); on the initial restore it is New's error.
type operatorCoordinators struct {
	all      []checkpoint.OperatorCoordinatorCheckpointContext // Config order
	byVertex map[jobgraph.JobVertexID]checkpoint.OperatorCoordinatorCheckpointContext
}

// newOperatorCoordinators checks ocs against the graph: a nil context, two for one vertex, or
// one for a vertex the job does not have is an error naming it.
func newOperatorCoordinators(eg *executiongraph.ExecutionGraph, ocs []checkpoint.OperatorCoordinatorCheckpointContext) (*operatorCoordinators, error) {
	oc := &operatorCoordinators{all: ocs, byVertex: make(map[jobgraph.JobVertexID]checkpoint.OperatorCoordinatorCheckpointContext, len(ocs))}
	known := make(map[jobgraph.JobVertexID]bool, len(eg.JobVertices()))
	for _, jv := range eg.JobVertices() {
		known[jv.ID()] = true
	}
	for i, c := range ocs {
		if c == nil {
			return nil, fmt.Errorf("Config.OperatorCoordinators[%d] is nil", i)
		}
		v := c.VertexID()
		switch {
		case !known[v]:
			return nil, fmt.Errorf("Config.OperatorCoordinators[%d] belongs to vertex %s, which the job does not have", i, v)
		case oc.byVertex[v] != nil:
			return nil, fmt.Errorf("Config.OperatorCoordinators has two operator coordinators of vertex %s", v)
		}
		oc.byVertex[v] = c
	}
	return oc, nil
}

// forCheckpointing wraps every coordinator for the CheckpointCoordinator: each checkpoint result
// is a scheduler entry, so what it causes (a completed checkpoint, a FailJob of the
// coordinator) is carried out as for any entry.
func (oc *operatorCoordinators) forCheckpointing(s *DefaultScheduler) []checkpoint.OperatorCoordinatorCheckpointContext {
	if len(oc.all) == 0 {
		return nil
	}
	out := make([]checkpoint.OperatorCoordinatorCheckpointContext, len(oc.all))
	for i, c := range oc.all {
		out[i] = enteringCoordinator{c, s}
	}
	return out
}

// enteringCoordinator brackets a coordinator's checkpoint results with enter/leave.
type enteringCoordinator struct {
	checkpoint.OperatorCoordinatorCheckpointContext
	s *DefaultScheduler
}

func (c enteringCoordinator) CheckpointCoordinator(id checkpoint.CheckpointID, result func([]byte, error)) {
	c.OperatorCoordinatorCheckpointContext.CheckpointCoordinator(id, func(state []byte, err error) {
		c.s.enter()
		defer c.s.leave()
		result(state, err)
	})
}

// resetAll resets every coordinator to snapshot cp (nil: to NoCheckpoint, no state). State of a
// vertex without a coordinator is refused on the initial restore unless allowNonRestored
// (a snapshot's state for a vertex the job lacks was refused by checkpoint.AssignStates before);
// on a restart (strict false) it is skipped, as the initial restore accepted it.
func (oc *operatorCoordinators) resetAll(cp *checkpoint.CompletedCheckpoint, strict bool) error {
	id := checkpoint.NoCheckpoint
	states := map[jobgraph.JobVertexID][]byte{}
	if cp != nil {
		id = cp.CheckpointID
		for _, st := range cp.CoordinatorStates {
			if oc.byVertex[st.JobVertexID] == nil {
				if strict {
					return fmt.Errorf("%w: snapshot %d has operator coordinator state of job vertex %s, which has no operator coordinator; execution.savepoint.ignore-unclaimed-state drops such state instead",
						checkpoint.ErrStateAssignment, id, st.JobVertexID)
				}
				continue
			}
			states[st.JobVertexID] = st.State
		}
	}
	for _, c := range oc.all {
		v := c.VertexID()
		if err := c.ResetToCheckpoint(id, states[v]); err != nil {
			return fmt.Errorf("resetting the operator coordinator of vertex %s to checkpoint %d: %w", v, id, err)
		}
	}
	return nil
}

// resetSubtasks tells the coordinator of each restarted vertex's job vertex that the subtask was
// reset to checkpoint id.
func (oc *operatorCoordinators) resetSubtasks(vertices []*executiongraph.ExecutionVertex, id checkpoint.CheckpointID) error {
	if len(oc.all) == 0 {
		return nil
	}
	for _, v := range vertices {
		c := oc.byVertex[v.JobVertex().ID()]
		if c == nil {
			continue
		}
		if err := c.SubtaskReset(v.SubtaskIndex(), id); err != nil {
			return fmt.Errorf("resetting subtask %d of the operator coordinator of vertex %s to checkpoint %d: %w", v.SubtaskIndex(), v.JobVertex().ID(), id, err)
		}
	}
	return nil
}

// restoreCoordinatorsForRestart is the coordinators' part of a restart of vertices: global or
// not, restored the snapshot the tasks restore (nil: none, or no CheckpointCoordinator).
func (s *DefaultScheduler) restoreCoordinatorsForRestart(vertices []*executiongraph.ExecutionVertex, global bool, restored *checkpoint.CompletedCheckpoint) error {
	if global {
		return s.coords.resetAll(restored, false)
	}
	id := checkpoint.NoCheckpoint
	if restored != nil {
		id = restored.CheckpointID
	}
	return s.coords.resetSubtasks(vertices, id)
}
