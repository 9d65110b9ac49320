package executiongraph

import (
	"time"

	"github.com/jobgraph/jobgraph"
)

// NewSparseArchivedExecutionGraph returns an archived graph of a job that has no ExecutionGraph
// (yet): one still initializing, one whose initialization failed, one canceled before it had a
// JobMaster. It has no vertices; StatusTimestamps holds INITIALIZING at initialized and status at
// the same instant, or at now for a terminal status; failure, if non-nil, becomes FailureCause
// and the one entry of ExceptionHistory (a global failure: no task, Subtask -1), both stamped
// with the same instant. The caller passes now from its own clock: the archive reads no clock of
// its own, so the same arguments give the same archive.
// Flink: ArchivedExecutionGraph.createSparseArchivedExecutionGraph (which reads
// System.currentTimeMillis for a terminal status) wrapped in ExecutionGraphInfo, whose
// constructor makes the failure the exception history's one root entry.
func NewSparseArchivedExecutionGraph(job jobgraph.JobID, name string, jobType jobgraph.JobType, status jobgraph.JobStatus, failure error, initialized, now time.Time) *ArchivedExecutionGraph {
	ended := initialized
	if status.IsTerminal() {
		ended = now
	}
	var history []jobgraph.ExceptionHistoryEntry
	if failure != nil {
		history = []jobgraph.ExceptionHistoryEntry{{Message: failure.Error(), Timestamp: ended, Subtask: -1}}
	}
	return &ArchivedExecutionGraph{
		JobID:   job,
		JobName: name,
		JobType: jobType,
		Status:  status,
		StatusTimestamps: map[jobgraph.JobStatus]time.Time{
			jobgraph.JobStatusInitializing: initialized,
			status:                         ended,
		},
		FailureCause:     jobgraph.NewErrorInfo(failure, ended),
		ExceptionHistory: history,
	}
}

// StatusTimestamp is when the job last entered status s, or the zero Time if it never did.
func (a *ArchivedExecutionGraph) StatusTimestamp(s jobgraph.JobStatus) time.Time {
	return a.StatusTimestamps[s]
}
