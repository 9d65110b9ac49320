package jobgraph

import "time"

// ErrorInfo is a failure as stores and people see it: its message and when it happened.
// Flink: org.apache.flink.runtime.executiongraph.ErrorInfo (which carries a SerializedThrowable).
type ErrorInfo struct {
	// Message is the error's text, with its chain of causes (err.Error()).
	Message string `json:"message"`
	// Timestamp is when the failure was recorded.
	Timestamp time.Time `json:"timestamp"`
}

// NewErrorInfo records err at t; nil for a nil err.
func NewErrorInfo(err error, t time.Time) *ErrorInfo {
	if err == nil {
		return nil
	}
	return &ErrorInfo{Message: err.Error(), Timestamp: t}
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
