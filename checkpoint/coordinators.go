package checkpoint

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/jobgraph/jobgraph"
)

// NoCheckpoint is the checkpoint ID a reset to the initial state gets: there is no checkpoint to
// go back to. Equal to coordination.NoCheckpoint. Flink: OperatorCoordinator.NO_CHECKPOINT.
const NoCheckpoint CheckpointID = -1

// OperatorCoordinatorCheckpointContext is one operator coordinator as the CheckpointCoordinator
// and the scheduler see it. Every method is called on the owner's loop (the JobMaster's main
// loop), one at a time; none may block. coordination.Holder implements it. Flink:
// org.apache.flink.runtime.checkpoint.OperatorCoordinatorCheckpointContext.
type OperatorCoordinatorCheckpointContext interface {
	// VertexID is the JobVertex whose coordinator this is: its state is stored under it.
	VertexID() jobgraph.JobVertexID
	// CheckpointCoordinator takes the coordinator's state for id; result is called exactly once,
	// on the loop, with the state (nil: none) or why it failed (the checkpoint then fails with
	// TriggerCheckpointFailure). From the result on, events the coordinator sends are held back
	// (the valve) until AfterSourceBarrierInjection or AbortCurrentTriggering.
	CheckpointCoordinator(id CheckpointID, result func(state []byte, err error))
	// AfterSourceBarrierInjection: the checkpoint's tasks were triggered; held events go out.
	AfterSourceBarrierInjection(id CheckpointID)
	// AbortCurrentTriggering: the checkpoint being triggered failed before its tasks were
	// triggered; held events go out.
	AbortCurrentTriggering()
	// NotifyCheckpointComplete: checkpoint id was completed and stored.
	NotifyCheckpointComplete(id CheckpointID)
	// NotifyCheckpointAborted: checkpoint id will not complete.
	NotifyCheckpointAborted(id CheckpointID)
	// ResetToCheckpoint: a global restore (initial restore from a checkpoint or savepoint, a
	// global failover) to id with the coordinator's state in it (nil: none; id NoCheckpoint:
	// the initial state).
	ResetToCheckpoint(id CheckpointID, state []byte) error
	// SubtaskReset: a region restart restores subtask to id (NoCheckpoint: none).
	SubtaskReset(subtask int, id CheckpointID) error
}

// CoordinatorState is one operator coordinator's state in a checkpoint: what its
// CheckpointCoordinator call returned. Flink: the coordinator state of an OperatorState
// (ByteStreamStateHandle), written by MetadataV3Serializer.
type CoordinatorState struct {
	JobVertexID jobgraph.JobVertexID `json:"jobVertexId"`
	State       []byte               `json:"state"`
}

// validCoordinators refuses a nil context and two contexts for one vertex (ErrInvalidConfig,
// naming the index or the vertex).
func validCoordinators(ocs []OperatorCoordinatorCheckpointContext) error {
	seen := make(map[jobgraph.JobVertexID]bool, len(ocs))
	for i, oc := range ocs {
		if oc == nil {
			return errorsJoin(ErrInvalidConfig, "Config.Coordinators[%d] is nil", i)
		}
		v := oc.VertexID()
		if seen[v] {
			return errorsJoin(ErrInvalidConfig, "Config.Coordinators has two operator coordinators of vertex %s", v)
		}
		seen[v] = true
	}
	return nil
}

// coordinatorTrigger is the coordinators' part of one pending checkpoint while they answer.
type coordinatorTrigger struct {
	asking  bool // the CheckpointCoordinator calls are still being made
	waiting int  // coordinators that have not answered
	states  []CoordinatorState
	err     error // the first coordinator error
}

// checkpointCoordinators asks every coordinator for its state for p (Flink:
// OperatorCoordinatorCheckpoints.triggerAndAcknowledgeAllCoordinatorCheckpointsWithCompletion).
// Every coordinator is asked before any result is acted upon, so a result that comes back inside
// its call (or an error) never leaves a later coordinator asked for a checkpoint that was
// already given up.
func (c *CheckpointCoordinator) checkpointCoordinators(p *PendingCheckpoint) {
	ocs := c.cfg.Coordinators
	ct := &coordinatorTrigger{asking: true, waiting: len(ocs)}
	p.coords, p.awaitingCoordinators = ct, true
	c.triggering = true
	for _, oc := range ocs {
		vertex := oc.VertexID()
		answered := false
		oc.CheckpointCoordinator(p.id, func(state []byte, err error) {
			// Results of a checkpoint that was given up, and a second result, are ignored.
			if answered || !p.awaitingCoordinators {
				return
			}
			answered = true
			ct.waiting--
			switch {
			case err != nil:
				if ct.err == nil {
					ct.err = fmt.Errorf("operator coordinator of vertex %s: %w", vertex, err)
				}
			case state != nil:
				ct.states = append(ct.states, CoordinatorState{JobVertexID: vertex, State: state})
			}
			if !ct.asking {
				c.coordinatorsAnswered(p)
			}
		})
	}
	ct.asking = false
	c.coordinatorsAnswered(p)
}

// coordinatorsAnswered fails p on a coordinator's error, triggers its tasks once every
// coordinator answered, and does nothing while some have not.
func (c *CheckpointCoordinator) coordinatorsAnswered(p *PendingCheckpoint) {
	ct := p.coords
	if !p.awaitingCoordinators {
		return
	}
	if ct.err != nil {
		c.abort(p, &CheckpointError{Reason: TriggerCheckpointFailure, CheckpointID: p.id, Cause: ct.err}, nil)
		return
	}
	if ct.waiting > 0 {
		return
	}
	p.awaitingCoordinators, c.triggering = false, false
	slices.SortFunc(ct.states, func(a, b CoordinatorState) int { return bytes.Compare(a.JobVertexID[:], b.JobVertexID[:]) })
	p.coordinatorStates = ct.states
	for _, st := range ct.states {
		p.stateSize += int64(len(st.State))
	}
	c.triggerTasks(p)
	c.executeQueued()
}

// endCoordinatorTriggering ends the coordinator phase of p, which is being aborted, if it is in
// it: every coordinator gets AbortCurrentTriggering (Flink: onTriggerFailure) and the next
// trigger may start.
func (c *CheckpointCoordinator) endCoordinatorTriggering(p *PendingCheckpoint) {
	if !p.awaitingCoordinators {
		return
	}
	p.awaitingCoordinators, c.triggering = false, false
	for _, oc := range c.cfg.Coordinators {
		oc.AbortCurrentTriggering()
	}
}
