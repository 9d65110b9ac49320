package scheduler

import (
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// exceptionHistory is the job's exception history: one entry per failure that started a restart
// attempt (or ended the job), with the failures of the same attempt grouped under it as
// concurrent exceptions; at most max entries, the newest. The graph holds the slice for Archive
// (executiongraph.ExecutionGraph.SetExceptionHistory), which is handed over again after every
// change. Flink: SchedulerBase.exceptionHistory (a BoundedFIFOQueue of RootExceptionHistoryEntry).
type exceptionHistory struct {
	graph   *executiongraph.ExecutionGraph
	max     int
	entries []jobgraph.ExceptionHistoryEntry // oldest first
	first   int64                            // sequence number of entries[0]
}

// add records e: a new entry if newAttempt (or if there is none yet), else a concurrent
// exception of the latest entry. It returns the sequence number of the entry e went to.
func (h *exceptionHistory) add(e jobgraph.ExceptionHistoryEntry, newAttempt bool) int64 {
	if !newAttempt && len(h.entries) > 0 {
		last := int64(len(h.entries) - 1)
		h.addConcurrent(h.first+last, e)
		return h.first + last
	}
	if len(h.entries) == h.max {
		n := copy(h.entries, h.entries[1:])
		h.entries[n] = jobgraph.ExceptionHistoryEntry{}
		h.entries = h.entries[:n]
		h.first++
	}
	h.entries = append(h.entries, e)
	h.graph.SetExceptionHistory(h.entries)
	return h.first + int64(len(h.entries)-1)
}

// addConcurrent groups e under the entry with sequence number seq, if it is still kept.
func (h *exceptionHistory) addConcurrent(seq int64, e jobgraph.ExceptionHistoryEntry) {
	i := seq - h.first
	if i < 0 || i >= int64(len(h.entries)) {
		return
	}
	h.entries[i].Concurrent = append(h.entries[i].Concurrent, e)
	h.graph.SetExceptionHistory(h.entries)
}

// taskEntry describes the failure err of execution e.
func (s *DefaultScheduler) taskEntry(e *executiongraph.Execution, err error) jobgraph.ExceptionHistoryEntry {
	v := e.Vertex()
	return jobgraph.ExceptionHistoryEntry{
		Message:   err.Error(),
		Timestamp: s.now(),
		TaskName:  v.Name(),
		Subtask:   v.SubtaskIndex(),
		Location:  e.ResourceID,
	}
}

// globalEntry describes the global failure err.
func (s *DefaultScheduler) globalEntry(err error) jobgraph.ExceptionHistoryEntry {
	return jobgraph.ExceptionHistoryEntry{Message: err.Error(), Timestamp: s.now(), Subtask: -1}
}

// now is the scheduler clock's time as the graph stamps it: UTC, nanoseconds, no monotonic
// reading.
func (s *DefaultScheduler) now() time.Time { return time.Unix(0, s.cfg.Clock().UnixNano()).UTC() }
