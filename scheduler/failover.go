package scheduler

import (
	"time"

	"github.com/jobgraph/jobgraph/executiongraph"
)

// failureDecision is what the failure handler decides about one failure.
// Flink: org.apache.flink.runtime.executiongraph.failover.FailureHandlingResult.
type failureDecision struct {
	// cause is the error the job fails with, or the restart is for.
	cause error
	// restart asks to restart vertices after delay; otherwise the job fails with cause.
	restart  bool
	vertices []*executiongraph.ExecutionVertex
	delay    time.Duration
}

// failureHandler decides what a task or global failure means for the job: which vertices to
// restart and after what backoff (a failover strategy plus a restart backoff time strategy), or
// that the job fails. The restart issue adds handlers for region and full failover under the
// restart strategies; this version has only noRestartFailureHandler.
// Flink: org.apache.flink.runtime.executiongraph.failover.ExecutionFailureHandler.
type failureHandler interface {
	// taskFailure is called after failed's current execution went FAILED with cause.
	taskFailure(failed *executiongraph.ExecutionVertex, cause error) failureDecision
	// globalFailure is called for a failure of the job as a whole.
	globalFailure(cause error) failureDecision
}

// noRestartFailureHandler fails the job on every failure: Flink's restart-strategy "none"
// (NoRestartBackoffTimeStrategy), the default without checkpointing.
type noRestartFailureHandler struct{}

func (noRestartFailureHandler) taskFailure(_ *executiongraph.ExecutionVertex, cause error) failureDecision {
	return failureDecision{cause: cause}
}

func (noRestartFailureHandler) globalFailure(cause error) failureDecision {
	return failureDecision{cause: cause}
}
