package checkpoint

import (
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
