package checkpoint

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

// CheckpointID numbers checkpoints and savepoints of one job: strictly increasing, first 1
// (Flink's CheckpointIDCounter.INITIAL_CHECKPOINT_ID), never reused, also across restarts when the
// CheckpointIDCounter is durable.
type CheckpointID int64

// InitialCheckpointID is the first ID a new CheckpointIDCounter hands out.
const InitialCheckpointID CheckpointID = 1

func (id CheckpointID) String() string { return strconv.FormatInt(int64(id), 10) }

// SnapshotType says what a snapshot is. Flink: org.apache.flink.runtime.checkpoint.SnapshotType
// (CheckpointType / SavepointType).
type SnapshotType int

const (
	// Checkpoint is a periodic or manually triggered checkpoint: owned by the job, subsumed
	// (and discarded) by later ones.
	Checkpoint SnapshotType = iota
	// Savepoint is triggered by the user, stored under a path, never subsumed by checkpoints: once
	// it leaves the store's retained list its state stays where it is.
	Savepoint
	// SyncSavepoint is the savepoint of stop-with-savepoint: after it the tasks finish. A task's
	// failure to take it always fails the job (Flink's CheckpointFailureManager), never counted.
	SyncSavepoint
)

var snapshotTypeNames = [...]string{"CHECKPOINT", "SAVEPOINT", "SYNC_SAVEPOINT"}

// String is the checkpoint_type name of Flink's REST API.
func (t SnapshotType) String() string {
	if t >= 0 && int(t) < len(snapshotTypeNames) {
		return snapshotTypeNames[t]
	}
	return "SnapshotType(" + strconv.Itoa(int(t)) + ")"
}

// MarshalText writes String.
func (t SnapshotType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (t *SnapshotType) UnmarshalText(b []byte) error {
	for i, n := range snapshotTypeNames {
		if n == string(b) {
			*t = SnapshotType(i)
			return nil
		}
	}
	return fmt.Errorf("checkpoint: unknown snapshot type %q", jobgraph.Truncate(string(b)))
}

// CheckpointProperties says how a snapshot is taken and kept. Flink:
// org.apache.flink.runtime.checkpoint.CheckpointProperties (forced = savepoint here: a savepoint
// ignores max concurrent checkpoints and min pause, as Flink's savepoints do; discardSubsumed =
// not a savepoint).
type CheckpointProperties struct {
	Type SnapshotType `json:"type"`
}

// CheckpointPropertiesFor returns the properties of a checkpoint (Checkpoint), a savepoint or a
// stop-with-savepoint savepoint.
func CheckpointPropertiesFor(t SnapshotType) CheckpointProperties {
	return CheckpointProperties{Type: t}
}

// IsSavepoint reports Savepoint or SyncSavepoint.
func (p CheckpointProperties) IsSavepoint() bool {
	return p.Type == Savepoint || p.Type == SyncSavepoint
}

// IsSynchronous reports the stop-with-savepoint savepoint.
func (p CheckpointProperties) IsSynchronous() bool { return p.Type == SyncSavepoint }

// IsForced reports whether the trigger ignores max concurrent checkpoints and min pause (savepoints).
func (p CheckpointProperties) IsForced() bool { return p.IsSavepoint() }

// DiscardOnSubsumed reports whether the snapshot's state is deleted once a later one replaces it in
// the store: checkpoints yes, savepoints never.
func (p CheckpointProperties) DiscardOnSubsumed() bool { return !p.IsSavepoint() }

// StateHandle is one subtask's snapshot as the coordinator keeps it: opaque to the coordinator,
// plain data so it crosses any transport and lands in the store's metadata. Flink:
// OperatorSubtaskState with its StreamStateHandles.
type StateHandle struct {
	// Data is state small enough to travel inline (Flink's ByteStreamStateHandle). It is opaque
	// and cannot be split: a vertex whose subtasks hold Data restores only at the parallelism it
	// was snapshotted with (restoring it at another fails, naming the vertex); use OperatorState
	// or KeyedState for state that must survive rescaling.
	Data []byte `json:"data,omitempty"`
	// Files are the paths of state files the task wrote; the file store never deletes a file that
	// a retained checkpoint still lists, nor any file of a savepoint.
	Files []string `json:"files,omitempty"`
	// Size is the state size in bytes, as the task reports it (Flink's getStateSize).
	Size int64 `json:"size"`
	// OperatorState is the subtask's operator (non-keyed) list states by name, each element
	// opaque bytes: redistributed round robin when the job is restored at another parallelism
	// (keygroup.RepartitionOperatorState). Flink: OperatorSubtaskState's managed operator state.
	OperatorState keygroup.OperatorState[[]byte] `json:"operatorState,omitempty"`
	// KeyedState is the subtask's keyed state by key group, each group's state opaque bytes:
	// on restore each new subtask gets exactly its key groups (keygroup.RedistributeKeyGroups).
	// nil when the subtask has no keyed state. Flink: OperatorSubtaskState's managed keyed state
	// (a KeyGroupsStateHandle).
	KeyedState *keygroup.KeyGroupsState[[]byte] `json:"keyedState,omitempty"`
}

// IsEmpty reports a handle that holds no state at all.
func (h StateHandle) IsEmpty() bool {
	return len(h.Data) == 0 && len(h.Files) == 0 && len(h.OperatorState) == 0 && h.KeyedState == nil
}

// SubtaskState is the state one subtask acknowledged for a checkpoint.
type SubtaskState struct {
	JobVertexID jobgraph.JobVertexID `json:"jobVertexId"`
	Subtask     int                  `json:"subtask"`
	State       StateHandle          `json:"state"`
}

// CompletedCheckpoint is a checkpoint or savepoint every task acknowledged. Flink:
// org.apache.flink.runtime.checkpoint.CompletedCheckpoint. Plain data: the file store writes it as
// JSON.
type CompletedCheckpoint struct {
	JobID               jobgraph.JobID       `json:"jobId"`
	CheckpointID        CheckpointID         `json:"checkpointId"`
	Properties          CheckpointProperties `json:"properties"`
	TriggerTimestamp    time.Time            `json:"triggerTimestamp"`
	CompletionTimestamp time.Time            `json:"completionTimestamp"`
	// TaskStates holds every subtask's state, in the order of the CheckpointPlan's TasksToWaitFor.
	TaskStates []SubtaskState `json:"taskStates,omitempty"`
	// CoordinatorStates are the operator coordinators' states, one per coordinated vertex that
	// returned state, sorted by vertex ID.
	CoordinatorStates []CoordinatorState `json:"coordinatorStates,omitempty"`
	// StateSize is the sum of the TaskStates' sizes and of the CoordinatorStates' lengths, in
	// bytes (Flink's CompletedCheckpoint.getStateSize counts the coordinators' state too; the
	// checkpoint statistics, like Flink's, count only what the tasks acknowledged).
	StateSize int64 `json:"stateSize"`
	// ExternalPointer is where a savepoint is stored (the path it was triggered with); empty for
	// checkpoints.
	ExternalPointer string `json:"externalPointer,omitempty"`
}

// referencedFiles lists the files of every subtask state.
func (c CompletedCheckpoint) referencedFiles() []string {
	var out []string
	for _, s := range c.TaskStates {
		out = append(out, s.State.Files...)
	}
	return out
}

// CheckpointFailureReason says why a checkpoint failed; the names are Flink's
// (org.apache.flink.runtime.checkpoint.CheckpointFailureReason). It is also an error value to
// match with errors.Is: every *CheckpointError matches its Reason.
type CheckpointFailureReason int

// The reasons, in Flink's order. Only CheckpointDeclined, CheckpointExpired, IOException,
// FinalizeCheckpointFailure and CheckpointAsyncException count toward
// execution.checkpointing.tolerable-failed-checkpoints (CountsTowardTolerableFailures).
const (
	PeriodicSchedulerShutdown CheckpointFailureReason = iota + 1
	TooManyConcurrentCheckpoints
	TooManyCheckpointRequests
	MinimumTimeBetweenCheckpoints
	NotAllRequiredTasksRunning
	IOException
	ChannelStateSharedStreamException
	CheckpointAsyncException
	CheckpointExpired
	CheckpointSubsumed
	CheckpointDeclined
	CheckpointDeclinedTaskNotReady
	CheckpointDeclinedTaskClosing
	CheckpointDeclinedTaskNotCheckpointing
	CheckpointDeclinedSubsumed
	CheckpointDeclinedOnCancellationBarrier
	CheckpointDeclinedAlignmentLimitExceeded
	CheckpointDeclinedInputEndOfStream
	CheckpointCoordinatorShutdown
	CheckpointCoordinatorSuspend
	JobFailure
	JobFailoverRegion
	TaskFailure
	TaskCheckpointFailure
	UnknownTaskCheckpointNotificationFailure
	FinalizeCheckpointFailure
	TriggerCheckpointFailure
)

var reasonInfo = map[CheckpointFailureReason]struct {
	name, message string
	preFlight     bool
}{
	PeriodicSchedulerShutdown:                {"PERIODIC_SCHEDULER_SHUTDOWN", "Periodic checkpoint scheduler is shut down.", true},
	TooManyConcurrentCheckpoints:             {"TOO_MANY_CONCURRENT_CHECKPOINTS", "The maximum number of concurrent checkpoints is exceeded", true},
	TooManyCheckpointRequests:                {"TOO_MANY_CHECKPOINT_REQUESTS", "The maximum number of queued checkpoint requests exceeded", true},
	MinimumTimeBetweenCheckpoints:            {"MINIMUM_TIME_BETWEEN_CHECKPOINTS", "The minimum time between checkpoints is still pending. Checkpoint will be triggered after the minimum time.", true},
	NotAllRequiredTasksRunning:               {"NOT_ALL_REQUIRED_TASKS_RUNNING", "Not all required tasks are currently running.", true},
	IOException:                              {"IO_EXCEPTION", "An Exception occurred while triggering the checkpoint. IO-problem detected.", true},
	ChannelStateSharedStreamException:        {"CHANNEL_STATE_SHARED_STREAM_EXCEPTION", "The checkpoint was aborted due to exception of other subtasks sharing the ChannelState file.", false},
	CheckpointAsyncException:                 {"CHECKPOINT_ASYNC_EXCEPTION", "Asynchronous task checkpoint failed.", false},
	CheckpointExpired:                        {"CHECKPOINT_EXPIRED", "Checkpoint expired before completing.", false},
	CheckpointSubsumed:                       {"CHECKPOINT_SUBSUMED", "Checkpoint has been subsumed.", false},
	CheckpointDeclined:                       {"CHECKPOINT_DECLINED", "Checkpoint was declined.", false},
	CheckpointDeclinedTaskNotReady:           {"CHECKPOINT_DECLINED_TASK_NOT_READY", "Checkpoint was declined (tasks not ready)", false},
	CheckpointDeclinedTaskClosing:            {"CHECKPOINT_DECLINED_TASK_CLOSING", "Checkpoint was declined (task is closing)", false},
	CheckpointDeclinedTaskNotCheckpointing:   {"CHECKPOINT_DECLINED_TASK_NOT_CHECKPOINTING", "Task does not support checkpointing", false},
	CheckpointDeclinedSubsumed:               {"CHECKPOINT_DECLINED_SUBSUMED", "Checkpoint was canceled because a barrier from newer checkpoint was received.", false},
	CheckpointDeclinedOnCancellationBarrier:  {"CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER", "Task received cancellation from one of its inputs", false},
	CheckpointDeclinedAlignmentLimitExceeded: {"CHECKPOINT_DECLINED_ALIGNMENT_LIMIT_EXCEEDED", "The checkpoint alignment phase needed to buffer more than the configured maximum bytes", false},
	CheckpointDeclinedInputEndOfStream:       {"CHECKPOINT_DECLINED_INPUT_END_OF_STREAM", "Checkpoint was declined because one input stream is finished", false},
	CheckpointCoordinatorShutdown:            {"CHECKPOINT_COORDINATOR_SHUTDOWN", "CheckpointCoordinator shutdown.", false},
	CheckpointCoordinatorSuspend:             {"CHECKPOINT_COORDINATOR_SUSPEND", "Checkpoint Coordinator is suspending.", false},
	JobFailure:                               {"JOB_FAILURE", "The job has failed.", false},
	JobFailoverRegion:                        {"JOB_FAILOVER_REGION", "FailoverRegion is restarting.", false},
	TaskFailure:                              {"TASK_FAILURE", "Task has failed.", false},
	TaskCheckpointFailure:                    {"TASK_CHECKPOINT_FAILURE", "Task local checkpoint failure.", false},
	UnknownTaskCheckpointNotificationFailure: {"UNKNOWN_TASK_CHECKPOINT_NOTIFICATION_FAILURE", "Unknown task for the checkpoint to notify.", false},
	FinalizeCheckpointFailure:                {"FINALIZE_CHECKPOINT_FAILURE", "Failure to finalize checkpoint.", false},
	TriggerCheckpointFailure:                 {"TRIGGER_CHECKPOINT_FAILURE", "Trigger checkpoint failure.", false},
}

// AllCheckpointFailureReasons lists every reason in declaration order.
func AllCheckpointFailureReasons() []CheckpointFailureReason {
	out := make([]CheckpointFailureReason, 0, len(reasonInfo))
	for r := PeriodicSchedulerShutdown; r <= TriggerCheckpointFailure; r++ {
		out = append(out, r)
	}
	return out
}

// String is Flink's enum name, e.g. "CHECKPOINT_DECLINED".
func (r CheckpointFailureReason) String() string {
	if i, ok := reasonInfo[r]; ok {
		return i.name
	}
	return "CheckpointFailureReason(" + strconv.Itoa(int(r)) + ")"
}

// Error is Flink's message for the reason.
func (r CheckpointFailureReason) Error() string {
	if i, ok := reasonInfo[r]; ok {
		return "checkpoint: " + i.message
	}
	return "checkpoint: " + r.String()
}

// MarshalText writes String.
func (r CheckpointFailureReason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads Flink's enum name.
func (r *CheckpointFailureReason) UnmarshalText(b []byte) error {
	for k, i := range reasonInfo {
		if i.name == string(b) {
			*r = k
			return nil
		}
	}
	return fmt.Errorf("checkpoint: unknown CheckpointFailureReason %q", jobgraph.Truncate(string(b)))
}

// IsPreFlight reports a reason that happens before the checkpoint reaches the tasks (Flink's
// isPreFlight): such a failure is the JobManager's, never a task's.
func (r CheckpointFailureReason) IsPreFlight() bool { return reasonInfo[r].preFlight }

// CountsTowardTolerableFailures reports whether a checkpoint failing for r counts toward
// execution.checkpointing.tolerable-failed-checkpoints, as Flink's
// CheckpointFailureManager.checkFailureCounter decides since FLINK-27570 (Flink 1.16):
// IO_EXCEPTION, CHECKPOINT_ASYNC_EXCEPTION, CHECKPOINT_DECLINED, CHECKPOINT_EXPIRED and
// FINALIZE_CHECKPOINT_FAILURE count; every other reason is ignored.
func (r CheckpointFailureReason) CountsTowardTolerableFailures() bool {
	switch r {
	case IOException, CheckpointAsyncException, CheckpointDeclined, CheckpointExpired, FinalizeCheckpointFailure:
		return true
	}
	return false
}

// Timeout reports CheckpointExpired: the net.Error convention for "this is a timeout".
func (r CheckpointFailureReason) Timeout() bool { return r == CheckpointExpired }

// CheckpointError is a checkpoint's failure: the reason, the checkpoint (0 when it failed before
// it had an ID) and the cause, if any. Flink: CheckpointException. errors.Is matches the Reason
// and the Cause; a CheckpointExpired one reports Timeout() true.
type CheckpointError struct {
	Reason       CheckpointFailureReason
	CheckpointID CheckpointID
	Cause        error
}

func (e *CheckpointError) Error() string {
	msg := e.Reason.Error()
	if e.CheckpointID != 0 {
		msg = fmt.Sprintf("checkpoint %d: %s", e.CheckpointID, msg[len("checkpoint: "):])
	}
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Unwrap returns the reason and the cause, so errors.Is matches either.
func (e *CheckpointError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Cause}
}

// Timeout reports whether the checkpoint expired.
func (e *CheckpointError) Timeout() bool { return e.Reason.Timeout() }

// Errors the coordinator's message methods return for a message it dropped. A dropped message
// changes nothing.
var (
	// ErrWrongJobMasterID: the message carries another JobMaster session's token.
	ErrWrongJobMasterID = errors.New("checkpoint: message of another JobMaster session (JobMasterID mismatch)")
	// ErrUnknownCheckpoint: no pending checkpoint has that ID (completed, aborted or never triggered).
	ErrUnknownCheckpoint = errors.New("checkpoint: no pending checkpoint with that ID")
	// ErrUnknownTask: the checkpoint does not wait for that execution attempt (an outdated attempt
	// of a restarted subtask, or a task the checkpoint does not involve).
	ErrUnknownTask = errors.New("checkpoint: the checkpoint does not involve that execution attempt")
	// ErrDuplicateAcknowledge: the attempt acknowledged this checkpoint already.
	ErrDuplicateAcknowledge = errors.New("checkpoint: duplicate acknowledgement")
	// ErrShutdown: the coordinator was shut down.
	ErrShutdown = errors.New("checkpoint: the CheckpointCoordinator is shut down")
	// ErrInvalidConfig: a Config or argument is unusable; the message names the field.
	ErrInvalidConfig = errors.New("checkpoint: invalid configuration")
	// ErrIDCounterDecrease: SetCount would hand out an ID again.
	ErrIDCounterDecrease = errors.New("checkpoint: the checkpoint ID counter never goes back")
	// ErrInvalidCheckpoint: a checkpoint given to a store is malformed; the message says how.
	ErrInvalidCheckpoint = errors.New("checkpoint: invalid completed checkpoint")
)

func init() {
	for _, r := range AllCheckpointFailureReasons() {
		jobgraph.RegisterErrorCode("checkpoint."+r.String(), r)
	}
	jobgraph.RegisterErrorCode("checkpoint.wrong-jobmaster-id", ErrWrongJobMasterID)
	jobgraph.RegisterErrorCode("checkpoint.unknown-checkpoint", ErrUnknownCheckpoint)
	jobgraph.RegisterErrorCode("checkpoint.unknown-task", ErrUnknownTask)
	jobgraph.RegisterErrorCode("checkpoint.shutdown", ErrShutdown)
}
