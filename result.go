package jobgraph

import (
	"errors"
	"time"
)

// ErrorInfo is a failure as plain data, as stores, people and gateway messages see it: its
// message, the codes of the library's sentinel errors it matches, and when it happened. Err turns
// it back into an error that matches those sentinels with errors.Is, in this process or another.
// Flink: org.apache.flink.runtime.executiongraph.ErrorInfo (which carries a SerializedThrowable).
type ErrorInfo struct {
	// Message is the error's text, with its chain of causes (err.Error()).
	Message string `json:"message"`
	// Codes are the codes of the registered sentinel errors the failure matched (see
	// RegisterErrorCode), in registration order; empty if it matched none.
	Codes []string `json:"codes,omitempty"`
	// UnavailablePartition is the input partition whose loss caused the failure, if the error
	// said so (an error with an UnavailablePartition() IntermediateResultPartitionID method, as
	// scheduler.UnavailablePartitionError describes): region failover restarts its producer
	// too. Flink: PartitionException's ResultPartitionID.
	UnavailablePartition *IntermediateResultPartitionID `json:"unavailablePartition,omitempty"`
	// Timestamp is when the failure was recorded; zero in gateway messages, whose receiver
	// records when it handled the failure.
	Timestamp time.Time `json:"timestamp,omitzero"`
}

// NewErrorInfo records err at t (its text and ErrorCodes(err)); nil for a nil err.
func NewErrorInfo(err error, t time.Time) *ErrorInfo {
	if err == nil {
		return nil
	}
	info := &ErrorInfo{Message: err.Error(), Codes: ErrorCodes(err), Timestamp: t}
	if pe, ok := errors.AsType[interface {
		error
		UnavailablePartition() IntermediateResultPartitionID
	}](err); ok {
		p := pe.UnavailablePartition()
		info.UnavailablePartition = &p
	}
	return info
}

// JobResult is how a job ended. Flink: org.apache.flink.runtime.jobmaster.JobResult.
type JobResult struct {
	JobID JobID  `json:"jobId"`
	Name  string `json:"name,omitempty"`
	// Status is the final status: FINISHED, FAILED, CANCELED, or SUSPENDED when the cluster shut
	// down before the job ended.
	Status JobStatus `json:"status"`
	// Failure is the root cause when Status is FAILED (and may be set for SUSPENDED).
	Failure *ErrorInfo `json:"failure,omitempty"`
	// NetRuntime is the time from the job's start to its end.
	NetRuntime time.Duration `json:"netRuntime"`
	// ExceptionHistory holds the job's failures, oldest first, at most
	// web.exception-history-size (DefaultExceptionHistorySize) entries.
	ExceptionHistory []ExceptionHistoryEntry `json:"exceptionHistory,omitempty"`
	// Accumulators are the job's accumulator results by name: for each name, the accumulators
	// the current attempt of every subtask reported, merged (MergeAccumulators); the values of
	// attempts a restart superseded do not count. Read one with AccumulatorValue. nil when no
	// task added any. Flink: JobResult.accumulatorResults / JobExecutionResult.getAllAccumulatorResults.
	Accumulators map[string]SerializedAccumulator `json:"accumulators,omitempty"`
	// RootCause is the failure as an error value, so callers can use errors.Is / errors.As on it.
	// It lives only in the process that ran the job and is not persisted.
	RootCause error `json:"-"`
}

// Success reports whether the job FINISHED.
func (r *JobResult) Success() bool { return r.Status == JobStatusFinished }

// DefaultExceptionHistorySize is Flink's web.exception-history-size default: how many failures
// a job's exception history keeps (the newest ones).
const DefaultExceptionHistorySize = 16

// ExceptionHistoryEntry is one failure in a job's exception history: the failure that caused a
// restart (or the job's end), where it happened, and the failures that arrived while that
// restart was pending, which Flink groups under it as concurrent exceptions.
// Flink: org.apache.flink.runtime.scheduler.exceptionhistory.RootExceptionHistoryEntry.
type ExceptionHistoryEntry struct {
	// Message is the failure's text (err.Error()).
	Message string `json:"message"`
	// Timestamp is when the failure was handled.
	Timestamp time.Time `json:"timestamp"`
	// TaskName is "<vertex name> (<subtask+1>/<parallelism>)" of the failed task; empty for a
	// global failure.
	TaskName string `json:"taskName,omitempty"`
	// Subtask is the failed subtask's index (-1 for a global failure).
	Subtask int `json:"subtask"`
	// Location is the TaskExecutor the failed task ran on, if it was deployed.
	Location ResourceID `json:"location,omitempty"`
	// Concurrent are failures of the same restart, in the order they arrived (their own
	// Concurrent is empty).
	Concurrent []ExceptionHistoryEntry `json:"concurrent,omitempty"`
}

// CloneExceptionHistory returns a deep copy of h (entries and their concurrent failures), nil for
// an empty history, so a snapshot never shares memory with the live history.
func CloneExceptionHistory(h []ExceptionHistoryEntry) []ExceptionHistoryEntry {
	if len(h) == 0 {
		return nil
	}
	out := make([]ExceptionHistoryEntry, len(h))
	for i, e := range h {
		out[i] = e
		out[i].Concurrent = CloneExceptionHistory(e.Concurrent)
	}
	return out
}
