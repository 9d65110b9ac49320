package jobgraph

import (
	"slices"
)

// JobStatus is the state of a job as a whole. Flink: org.apache.flink.api.common.JobStatus.
//
// The legal transitions are data: JobStatusTransitions lists them, CanTransitionTo checks one.
// The ExecutionGraph refuses any other transition with an error.
type JobStatus uint8

const (
	// JobStatusInitializing: the job was accepted and its JobMaster is being set up (no
	// ExecutionGraph yet). Reported by the Dispatcher before the JobMaster runs.
	JobStatusInitializing JobStatus = iota
	// JobStatusCreated: the ExecutionGraph exists; nothing was scheduled yet.
	JobStatusCreated
	// JobStatusRunning: some tasks are scheduled or running.
	JobStatusRunning
	// JobStatusFailing: the job failed and its tasks are being canceled.
	JobStatusFailing
	// JobStatusFailed: the job failed for good. Globally terminal.
	JobStatusFailed
	// JobStatusCancelling: the job is being canceled.
	JobStatusCancelling
	// JobStatusCanceled: the job was canceled. Globally terminal.
	JobStatusCanceled
	// JobStatusFinished: every task finished. Globally terminal.
	JobStatusFinished
	// JobStatusRestarting: the job (or part of it) waits for a restart.
	JobStatusRestarting
	// JobStatusSuspended: the JobMaster lost leadership or shut down; the job is terminal on this
	// JobMaster only, and another leader may recover it. Locally terminal.
	JobStatusSuspended
	// JobStatusReconciling: the job recovers running tasks after a JobMaster failover.
	JobStatusReconciling

	// NumJobStatuses is the number of JobStatus values; arrays indexed by status use it.
	NumJobStatuses = iota
)

var jobStatuses = enum[JobStatus]{"JobStatus", []string{
	"INITIALIZING", "CREATED", "RUNNING", "FAILING", "FAILED", "CANCELLING", "CANCELED",
	"FINISHED", "RESTARTING", "SUSPENDED", "RECONCILING",
}}

// AllJobStatuses lists every JobStatus in declaration order.
func AllJobStatuses() []JobStatus {
	out := make([]JobStatus, NumJobStatuses)
	for i := range out {
		out[i] = JobStatus(i)
	}
	return out
}

// jobStatusTransitions is the table of legal job status transitions, read off Flink's
// DefaultExecutionGraph (transitionState callers), JobMasterServiceLeadershipRunner (INITIALIZING)
// and the adaptive scheduler's states.
var jobStatusTransitions = [NumJobStatuses][]JobStatus{
	JobStatusInitializing: {JobStatusCreated, JobStatusCancelling, JobStatusCanceled, JobStatusFailed, JobStatusSuspended},
	JobStatusCreated:      {JobStatusRunning, JobStatusCancelling, JobStatusFailing, JobStatusFailed, JobStatusSuspended},
	JobStatusRunning:      {JobStatusFinished, JobStatusFailing, JobStatusFailed, JobStatusCancelling, JobStatusRestarting, JobStatusSuspended},
	JobStatusFailing:      {JobStatusFailed, JobStatusCancelling, JobStatusRestarting, JobStatusSuspended},
	JobStatusCancelling:   {JobStatusCanceled, JobStatusFailing, JobStatusFailed, JobStatusSuspended},
	JobStatusRestarting:   {JobStatusRunning, JobStatusCancelling, JobStatusCanceled, JobStatusFailing, JobStatusFailed, JobStatusSuspended},
	JobStatusReconciling:  {JobStatusRunning, JobStatusFailing, JobStatusFailed, JobStatusCancelling, JobStatusSuspended},
	// Terminal states have no way out.
	JobStatusFailed:    nil,
	JobStatusCanceled:  nil,
	JobStatusFinished:  nil,
	JobStatusSuspended: nil,
}

// JobStatusTransitions returns the statuses a job may go to from s. The result is a copy.
func JobStatusTransitions(s JobStatus) []JobStatus {
	if !s.valid() {
		return nil
	}
	return slices.Clone(jobStatusTransitions[s])
}

// CanTransitionTo reports whether a job may go from s to t.
func (s JobStatus) CanTransitionTo(t JobStatus) bool {
	return s.valid() && slices.Contains(jobStatusTransitions[s], t)
}

func (s JobStatus) valid() bool { return int(s) < NumJobStatuses }

// IsTerminal reports whether s is FAILED, CANCELED, FINISHED or SUSPENDED: this JobMaster is done
// with the job. Flink: JobStatus.isTerminalState.
func (s JobStatus) IsTerminal() bool { return s.IsGloballyTerminal() || s == JobStatusSuspended }

// IsGloballyTerminal reports whether s is FAILED, CANCELED or FINISHED: the job is done in the whole
// cluster and will never be recovered. Flink: JobStatus.isGloballyTerminalState.
func (s JobStatus) IsGloballyTerminal() bool {
	return s == JobStatusFailed || s == JobStatusCanceled || s == JobStatusFinished
}

// String returns Flink's name, e.g. "RUNNING".
func (s JobStatus) String() string                { return jobStatuses.str(s) }
func (s JobStatus) MarshalText() ([]byte, error)  { return jobStatuses.marshal(s) }
func (s *JobStatus) UnmarshalText(b []byte) error { return jobStatuses.unmarshal(s, b) }

// ParseJobStatus parses Flink's name of a job status, e.g. "RUNNING".
func ParseJobStatus(name string) (JobStatus, error) { return jobStatuses.parse(name) }

// ExecutionState is the state of one Execution (one attempt of one subtask).
// Flink: org.apache.flink.runtime.execution.ExecutionState.
//
//	CREATED → SCHEDULED → DEPLOYING → INITIALIZING → RUNNING → FINISHED
//	   any non-terminal state → FAILED; cancel: → CANCELING → CANCELED, or straight to CANCELED
//	   before anything was deployed. RECONCILING is the state of a task a new JobMaster finds running.
type ExecutionState uint8

const (
	ExecutionStateCreated ExecutionState = iota
	ExecutionStateScheduled
	ExecutionStateDeploying
	ExecutionStateInitializing
	ExecutionStateRunning
	ExecutionStateFinished
	ExecutionStateCanceling
	ExecutionStateCanceled
	ExecutionStateFailed
	ExecutionStateReconciling

	// NumExecutionStates is the number of ExecutionState values; arrays indexed by state use it.
	NumExecutionStates = iota
)

var executionStates = enum[ExecutionState]{"ExecutionState", []string{
	"CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING", "FINISHED", "CANCELING",
	"CANCELED", "FAILED", "RECONCILING",
}}

// executionStateTransitions is the table of legal execution state transitions, read off Flink's
// Execution (deploy, switchToInitializing, switchToRunning, markFinished, cancel, markFailed,
// completeCancelling). We are stricter than Flink in one place: CREATED cannot jump to DEPLOYING;
// an execution is SCHEDULED (its slot requested) before it deploys.
var executionStateTransitions = [NumExecutionStates][]ExecutionState{
	ExecutionStateCreated:      {ExecutionStateScheduled, ExecutionStateCanceled, ExecutionStateFailed},
	ExecutionStateScheduled:    {ExecutionStateDeploying, ExecutionStateCanceled, ExecutionStateFailed},
	ExecutionStateDeploying:    {ExecutionStateInitializing, ExecutionStateCanceling, ExecutionStateCanceled, ExecutionStateFailed},
	ExecutionStateInitializing: {ExecutionStateRunning, ExecutionStateCanceling, ExecutionStateFailed},
	ExecutionStateRunning:      {ExecutionStateFinished, ExecutionStateCanceling, ExecutionStateFailed},
	ExecutionStateCanceling:    {ExecutionStateCanceled, ExecutionStateFailed},
	ExecutionStateReconciling:  {ExecutionStateInitializing, ExecutionStateRunning, ExecutionStateFinished, ExecutionStateCanceling, ExecutionStateCanceled, ExecutionStateFailed},
	ExecutionStateFinished:     nil,
	ExecutionStateCanceled:     nil,
	ExecutionStateFailed:       nil,
}

// AllExecutionStates lists every ExecutionState in declaration order.
func AllExecutionStates() []ExecutionState {
	out := make([]ExecutionState, NumExecutionStates)
	for i := range out {
		out[i] = ExecutionState(i)
	}
	return out
}

// ExecutionStateTransitions returns the states an execution may go to from s. The result is a copy.
func ExecutionStateTransitions(s ExecutionState) []ExecutionState {
	if !s.valid() {
		return nil
	}
	return slices.Clone(executionStateTransitions[s])
}

// CanTransitionTo reports whether an execution may go from s to t.
func (s ExecutionState) CanTransitionTo(t ExecutionState) bool {
	return s.valid() && slices.Contains(executionStateTransitions[s], t)
}

func (s ExecutionState) valid() bool { return int(s) < NumExecutionStates }

// IsTerminal reports whether s is FINISHED, CANCELED or FAILED. Flink: ExecutionState.isTerminal.
func (s ExecutionState) IsTerminal() bool {
	return s == ExecutionStateFinished || s == ExecutionStateCanceled || s == ExecutionStateFailed
}

// String returns Flink's name, e.g. "RUNNING".
func (s ExecutionState) String() string                { return executionStates.str(s) }
func (s ExecutionState) MarshalText() ([]byte, error)  { return executionStates.marshal(s) }
func (s *ExecutionState) UnmarshalText(b []byte) error { return executionStates.unmarshal(s, b) }

// ParseExecutionState parses Flink's name of an execution state, e.g. "RUNNING".
func ParseExecutionState(name string) (ExecutionState, error) { return executionStates.parse(name) }
