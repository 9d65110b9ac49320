package checkpoint

import (
	"errors"

	"github.com/jobgraph/jobgraph"
)

// ErrTolerableFailuresExceeded is the cause the CheckpointFailureManager fails the job with.
// Flink: CheckpointFailureManager.EXCEEDED_CHECKPOINT_TOLERABLE_FAILURE_MESSAGE.
var ErrTolerableFailuresExceeded = errors.New("checkpoint: exceeded checkpoint tolerable failure threshold")

func init() {
	jobgraph.RegisterErrorCode("checkpoint.tolerable-failures-exceeded", ErrTolerableFailuresExceeded)
}

// FailJobCallback is how the coordinator fails the job. Flink:
// CheckpointFailureManager.FailJobCallback. Called on the coordinator's goroutine; it must not
// block (the owner posts the failover to its scheduler).
type FailJobCallback interface {
	// FailJob fails the whole job: too many failures reported by the JobManager (expired, I/O,
	// finalize), or a task's failure to take a stop-with-savepoint savepoint.
	FailJob(cause error)
	// FailJobDueToTaskFailure fails the job because of failures a task reported (declines);
	// failingTask is the attempt whose report crossed the threshold.
	FailJobDueToTaskFailure(cause error, failingTask jobgraph.ExecutionAttemptID)
}

// CheckpointFailureManager counts failed checkpoints against
// execution.checkpointing.tolerable-failed-checkpoints and fails the job once the count exceeds
// it. Flink: org.apache.flink.runtime.checkpoint.CheckpointFailureManager, same rules:
//   - only reasons whose CountsTowardTolerableFailures is true count, each checkpoint once
//     (several tasks declining one checkpoint are one failure);
//   - a failure of a checkpoint older than the last successful one is not counted;
//   - JobManager-side failures of savepoints are not counted; a task's failure of a
//     stop-with-savepoint savepoint fails the job at once;
//   - HandleCheckpointSuccess resets the count (the coordinator calls it once the checkpoint is
//     stored);
//   - on exceeding, the count is reset and the callback called once.
//
// Not safe for concurrent use: it belongs to its coordinator's goroutine.
type CheckpointFailureManager struct {
	tolerable     int
	callback      FailJobCallback
	count         int
	counted       map[CheckpointID]struct{}
	lastSucceeded CheckpointID
}

// NewCheckpointFailureManager returns a manager that tolerates tolerable consecutive counted
// failures (≥ 0) and fails the job through callback.
func NewCheckpointFailureManager(tolerable int, callback FailJobCallback) (*CheckpointFailureManager, error) {
	if tolerable < 0 {
		return nil, errorsJoin(ErrInvalidConfig, "execution.checkpointing.tolerable-failed-checkpoints %d is negative", tolerable)
	}
	if callback == nil {
		return nil, errorsJoin(ErrInvalidConfig, "FailJobCallback is nil")
	}
	return &CheckpointFailureManager{tolerable: tolerable, callback: callback, counted: map[CheckpointID]struct{}{}}, nil
}

// ContinuousFailureCount is the number of counted failures since the last success or job failure.
func (m *CheckpointFailureManager) ContinuousFailureCount() int { return m.count }

// HandleJobLevelCheckpointException handles a failure the JobManager side found (trigger
// failures, expiry, store failures); id 0 means the checkpoint had no ID yet.
func (m *CheckpointFailureManager) HandleJobLevelCheckpointException(props CheckpointProperties, err *CheckpointError) {
	if props.IsSavepoint() {
		return
	}
	m.checkAgainstCounter(err, func(e error) { m.callback.FailJob(e) })
}

// HandleTaskLevelCheckpointException handles a failure task reported (a decline).
func (m *CheckpointFailureManager) HandleTaskLevelCheckpointException(props CheckpointProperties, err *CheckpointError, attempt jobgraph.ExecutionAttemptID) {
	if props.IsSynchronous() {
		m.callback.FailJob(err)
		return
	}
	m.checkAgainstCounter(err, func(e error) { m.callback.FailJobDueToTaskFailure(e, attempt) })
}

func (m *CheckpointFailureManager) checkAgainstCounter(err *CheckpointError, fail func(error)) {
	id := err.CheckpointID
	if id != 0 && id <= m.lastSucceeded {
		return
	}
	if !err.Reason.CountsTowardTolerableFailures() {
		return
	}
	if id != 0 {
		if _, seen := m.counted[id]; seen {
			return
		}
		m.counted[id] = struct{}{}
	}
	m.count++
	if m.count > m.tolerable {
		m.clear()
		fail(&multiCause{ErrTolerableFailuresExceeded, err})
	}
}

// HandleCheckpointSuccess resets the count after checkpoint id was stored.
func (m *CheckpointFailureManager) HandleCheckpointSuccess(id CheckpointID) {
	if id > m.lastSucceeded {
		m.lastSucceeded = id
		m.clear()
	}
}

func (m *CheckpointFailureManager) clear() {
	m.count = 0
	clear(m.counted)
}

// multiCause is ErrTolerableFailuresExceeded with the failure that crossed the threshold.
type multiCause struct {
	sentinel error
	last     *CheckpointError
}

func (e *multiCause) Error() string   { return e.sentinel.Error() + " (last: " + e.last.Error() + ")" }
func (e *multiCause) Unwrap() []error { return []error{e.sentinel, e.last} }
