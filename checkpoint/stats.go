package checkpoint

import (
	"sync/atomic"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/metrics"
)

// DefaultStatsHistorySize is Flink's web.checkpoints.history default: how many checkpoints the
// history of a CheckpointingStatistics snapshot holds.
const DefaultStatsHistorySize = 10

// CheckpointStatsStatus is a checkpoint's status in the statistics, Flink's
// CheckpointStatsStatus names.
type CheckpointStatsStatus string

// The statuses.
const (
	StatusInProgress CheckpointStatsStatus = "IN_PROGRESS"
	StatusCompleted  CheckpointStatsStatus = "COMPLETED"
	StatusFailed     CheckpointStatsStatus = "FAILED"
)

// CheckpointingStatistics is a snapshot of the statistics in the shape of Flink's REST
// /jobs/:jobid/checkpoints response (CheckpointingStatistics): timestamps are epoch
// milliseconds, sizes bytes, durations milliseconds. Plain data.
type CheckpointingStatistics struct {
	Counts  CheckpointCounts       `json:"counts"`
	Latest  LatestCheckpoints      `json:"latest"`
	History []CheckpointStatistics `json:"history"`
}

// CheckpointCounts are Flink's counts: Total is every triggered checkpoint.
type CheckpointCounts struct {
	Restored   int64 `json:"restored"`
	Total      int64 `json:"total"`
	InProgress int64 `json:"in_progress"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
}

// LatestCheckpoints are the newest completed checkpoint, savepoint, failed one and the restored
// one; nil when there is none.
type LatestCheckpoints struct {
	Completed *CheckpointStatistics `json:"completed"`
	Savepoint *CheckpointStatistics `json:"savepoint"`
	Failed    *CheckpointStatistics `json:"failed"`
	Restored  *RestoredCheckpoint   `json:"restored"`
}

// RestoredCheckpoint is Flink's RestoredCheckpointStatistics.
type RestoredCheckpoint struct {
	ID               CheckpointID `json:"id"`
	RestoreTimestamp int64        `json:"restore_timestamp"`
	IsSavepoint      bool         `json:"is_savepoint"`
	ExternalPath     string       `json:"external_path,omitempty"`
}

// CheckpointStatistics is one checkpoint in the history (Flink's CheckpointStatistics with its
// Completed/Failed fields), with its tasks (per vertex, with per-subtask acknowledgements, from
// Flink's /checkpoints/details/:id/subtasks/:vertexid).
type CheckpointStatistics struct {
	ID                      CheckpointID                         `json:"id"`
	Status                  CheckpointStatsStatus                `json:"status"`
	IsSavepoint             bool                                 `json:"is_savepoint"`
	CheckpointType          SnapshotType                         `json:"checkpoint_type"`
	TriggerTimestamp        int64                                `json:"trigger_timestamp"`
	LatestAckTimestamp      int64                                `json:"latest_ack_timestamp"`
	StateSize               int64                                `json:"state_size"`
	EndToEndDuration        int64                                `json:"end_to_end_duration"`
	NumSubtasks             int                                  `json:"num_subtasks"`
	NumAcknowledgedSubtasks int                                  `json:"num_acknowledged_subtasks"`
	ExternalPath            string                               `json:"external_path,omitempty"`
	Discarded               bool                                 `json:"discarded,omitempty"`
	FailureTimestamp        int64                                `json:"failure_timestamp,omitempty"`
	FailureMessage          string                               `json:"failure_message,omitempty"`
	Tasks                   map[string]*TaskCheckpointStatistics `json:"tasks"`

	byVertex map[jobgraph.JobVertexID]*TaskCheckpointStatistics
}

// TaskCheckpointStatistics is one vertex's part of a checkpoint (Flink's
// TaskCheckpointStatistics) with its subtasks.
type TaskCheckpointStatistics struct {
	ID                      CheckpointID                  `json:"id"`
	Status                  CheckpointStatsStatus         `json:"status"`
	LatestAckTimestamp      int64                         `json:"latest_ack_timestamp"`
	StateSize               int64                         `json:"state_size"`
	EndToEndDuration        int64                         `json:"end_to_end_duration"`
	NumSubtasks             int                           `json:"num_subtasks"`
	NumAcknowledgedSubtasks int                           `json:"num_acknowledged_subtasks"`
	Subtasks                []SubtaskCheckpointStatistics `json:"subtasks"`
}

// SubtaskCheckpointStatistics is one subtask's acknowledgement; Status "pending_or_failed" until
// it acknowledged, as Flink's REST API says.
type SubtaskCheckpointStatistics struct {
	Index            int    `json:"index"`
	Status           string `json:"status"`
	AckTimestamp     int64  `json:"ack_timestamp,omitempty"`
	EndToEndDuration int64  `json:"end_to_end_duration,omitempty"`
	StateSize        int64  `json:"state_size,omitempty"`
}

// CheckpointStatsTracker keeps checkpoint statistics as Flink's CheckpointStatsTracker does.
// Not safe for concurrent use: the coordinator updates it on its goroutine; Snapshot returns a
// copy for anyone else.
type CheckpointStatsTracker struct {
	historySize                                    int
	counts                                         CheckpointCounts
	history                                        []*CheckpointStatistics // newest last
	byID                                           map[CheckpointID]*CheckpointStatistics
	latestCompleted, latestSavepoint, latestFailed *CheckpointStatistics
	restored                                       *RestoredCheckpoint

	pub *statsMetrics // what RegisterMetrics' gauges read; nil until then
}

// statsMetrics are the values of the tracker's metrics, published by its owner after every change
// and read by the gauges on any goroutine.
type statsMetrics struct {
	total, inProgress, completed, failed atomic.Int64
	lastDuration, lastSize, lastID       atomic.Int64
	restoreTimestamp                     atomic.Int64
}

// RegisterMetrics registers the tracker's metrics on g under Flink's names
// (CheckpointStatsTracker's): totalNumberOfCheckpoints, numberOfInProgressCheckpoints,
// numberOfCompletedCheckpoints, numberOfFailedCheckpoints (counts, savepoints included, as in
// Flink); lastCheckpointDuration (ms, trigger to completion), lastCheckpointSize and
// lastCheckpointFullSize (bytes, the state size the subtasks acknowledged) and
// lastCompletedCheckpointId of the latest completed checkpoint that is not a savepoint, each -1
// while there is none; lastCheckpointRestoreTimestamp (epoch ms of the latest restore, -1 for
// none). The gauges read values the tracker publishes atomically after each change, so they may
// be read on any goroutine while the owner goes on. Call it once, from the tracker's owner, before
// reporting anything else. Where we differ: with no incremental checkpoints, lastCheckpointSize
// (Flink's checkpointed size) equals lastCheckpointFullSize. A nil g registers nothing.
func (s *CheckpointStatsTracker) RegisterMetrics(g *metrics.Group) {
	if g == nil {
		return
	}
	p := &statsMetrics{}
	s.pub = p
	s.publish()
	g.Gauges(noCheckpointNames[:], p.gauge)
}

// gauge reads the metric noCheckpointNames[i] (RegisterMetrics' names, in its order).
func (p *statsMetrics) gauge(i int) int64 {
	switch i {
	case 0:
		return p.total.Load()
	case 1:
		return p.inProgress.Load()
	case 2:
		return p.completed.Load()
	case 3:
		return p.failed.Load()
	case 4:
		return p.lastDuration.Load()
	case 5, 6: // lastCheckpointSize, lastCheckpointFullSize
		return p.lastSize.Load()
	case 7:
		return p.lastID.Load()
	}
	return p.restoreTimestamp.Load()
}

// RegisterNoCheckpointMetrics registers on g the metrics RegisterMetrics registers, with the
// values of a tracker that never saw a checkpoint (counts 0; the latest checkpoint's duration,
// sizes and ID and the restore timestamp -1), for a job without checkpointing: Flink registers
// them for every job. The gauges are one set (metrics.Group.Gauges) over a function shared by
// every such job, so it costs one allocation. A nil g registers nothing.
func RegisterNoCheckpointMetrics(g *metrics.Group) {
	g.Gauges(noCheckpointNames[:], noCheckpointValue)
}

// noCheckpointNames are RegisterMetrics' names, in its order; noCheckpointValue gives a
// tracker's values before its first checkpoint (publish's): the four counts 0, the rest -1.
var noCheckpointNames = [...]string{
	"totalNumberOfCheckpoints",
	"numberOfInProgressCheckpoints",
	"numberOfCompletedCheckpoints",
	"numberOfFailedCheckpoints",
	"lastCheckpointDuration",
	"lastCheckpointSize",
	"lastCheckpointFullSize",
	"lastCompletedCheckpointId",
	"lastCheckpointRestoreTimestamp",
}

func noCheckpointValue(i int) int64 {
	if i < 4 {
		return 0
	}
	return -1
}

// publish copies the values of the metrics for RegisterMetrics' gauges.
func (s *CheckpointStatsTracker) publish() {
	p := s.pub
	if p == nil {
		return
	}
	p.total.Store(s.counts.Total)
	p.inProgress.Store(s.counts.InProgress)
	p.completed.Store(s.counts.Completed)
	p.failed.Store(s.counts.Failed)
	if c := s.latestCompleted; c != nil {
		p.lastDuration.Store(c.EndToEndDuration)
		p.lastSize.Store(c.StateSize)
		p.lastID.Store(int64(c.ID))
	} else {
		p.lastDuration.Store(-1)
		p.lastSize.Store(-1)
		p.lastID.Store(-1)
	}
	if r := s.restored; r != nil {
		p.restoreTimestamp.Store(r.RestoreTimestamp)
	} else {
		p.restoreTimestamp.Store(-1)
	}
}

// NewCheckpointStatsTracker keeps historySize checkpoints in the history (0 means
// DefaultStatsHistorySize).
func NewCheckpointStatsTracker(historySize int) *CheckpointStatsTracker {
	if historySize <= 0 {
		historySize = DefaultStatsHistorySize
	}
	return &CheckpointStatsTracker{historySize: historySize, byID: map[CheckpointID]*CheckpointStatistics{}}
}

func millis(t time.Time) int64 { return t.UnixMilli() }

// ReportPendingCheckpoint records a triggered checkpoint and the number of subtasks per vertex.
func (s *CheckpointStatsTracker) ReportPendingCheckpoint(id CheckpointID, trigger time.Time, props CheckpointProperties, subtasks map[jobgraph.JobVertexID]int) {
	s.reportPending(id, trigger, props, subtasks)
}

func (s *CheckpointStatsTracker) reportPending(id CheckpointID, trigger time.Time, props CheckpointProperties, subtasks map[jobgraph.JobVertexID]int) *CheckpointStatistics {
	st := &CheckpointStatistics{ID: id, Status: StatusInProgress, IsSavepoint: props.IsSavepoint(), CheckpointType: props.Type,
		TriggerTimestamp: millis(trigger), Tasks: map[string]*TaskCheckpointStatistics{},
		byVertex: map[jobgraph.JobVertexID]*TaskCheckpointStatistics{}}
	for v, n := range subtasks {
		t := &TaskCheckpointStatistics{ID: id, Status: StatusInProgress, NumSubtasks: n, Subtasks: make([]SubtaskCheckpointStatistics, n)}
		for i := range t.Subtasks {
			t.Subtasks[i] = SubtaskCheckpointStatistics{Index: i, Status: "pending_or_failed"}
		}
		st.Tasks[v.String()] = t
		st.byVertex[v] = t
		st.NumSubtasks += n
	}
	s.counts.Total++
	s.counts.InProgress++
	defer s.publish()
	s.byID[id] = st
	s.history = append(s.history, st)
	if len(s.history) > s.historySize {
		old := s.history[0]
		s.history = s.history[1:]
		if old.Status != StatusInProgress {
			delete(s.byID, old.ID)
		}
	}
	return st
}

// ReportSubtaskAck records one subtask's acknowledgement.
func (s *CheckpointStatsTracker) ReportSubtaskAck(id CheckpointID, vertex jobgraph.JobVertexID, subtask int, ack time.Time, stateSize int64) {
	reportSubtaskAck(s.byID[id], vertex, subtask, ack, stateSize)
}

// reportSubtaskAck is ReportSubtaskAck on an entry the caller holds (the coordinator keeps its
// pending checkpoints' entries, saving a lookup per ack).
func reportSubtaskAck(st *CheckpointStatistics, vertex jobgraph.JobVertexID, subtask int, ack time.Time, stateSize int64) {
	if st == nil || st.Status != StatusInProgress {
		return
	}
	t := st.byVertex[vertex]
	if t == nil || subtask < 0 || subtask >= len(t.Subtasks) {
		return
	}
	ms := millis(ack)
	d := ms - st.TriggerTimestamp
	t.Subtasks[subtask] = SubtaskCheckpointStatistics{Index: subtask, Status: "completed", AckTimestamp: ms, EndToEndDuration: d, StateSize: stateSize}
	t.NumAcknowledgedSubtasks++
	t.StateSize += stateSize
	t.LatestAckTimestamp = max(t.LatestAckTimestamp, ms)
	t.EndToEndDuration = max(t.EndToEndDuration, d)
	st.NumAcknowledgedSubtasks++
	st.StateSize += stateSize
	st.LatestAckTimestamp = max(st.LatestAckTimestamp, ms)
}

func (s *CheckpointStatsTracker) finish(id CheckpointID, status CheckpointStatsStatus) *CheckpointStatistics {
	st := s.byID[id]
	if st == nil || st.Status != StatusInProgress {
		return nil
	}
	st.Status = status
	for _, t := range st.Tasks {
		t.Status = status
	}
	s.counts.InProgress--
	if !s.inHistory(st) {
		delete(s.byID, id)
	}
	return st
}

func (s *CheckpointStatsTracker) inHistory(st *CheckpointStatistics) bool {
	for _, h := range s.history {
		if h == st {
			return true
		}
	}
	return false
}

// ReportCompletedCheckpoint records that checkpoint id completed (was stored) at completion.
func (s *CheckpointStatsTracker) ReportCompletedCheckpoint(id CheckpointID, completion time.Time, externalPath string) {
	st := s.finish(id, StatusCompleted)
	if st == nil {
		return
	}
	defer s.publish()
	s.counts.Completed++
	st.EndToEndDuration = millis(completion) - st.TriggerTimestamp
	st.ExternalPath = externalPath
	if st.IsSavepoint {
		s.latestSavepoint = st
	} else {
		s.latestCompleted = st
	}
}

// ReportFailedCheckpoint records that checkpoint id failed at failure with cause.
func (s *CheckpointStatsTracker) ReportFailedCheckpoint(id CheckpointID, failure time.Time, cause error) {
	st := s.finish(id, StatusFailed)
	if st == nil {
		return
	}
	defer s.publish()
	s.counts.Failed++
	st.FailureTimestamp = millis(failure)
	st.EndToEndDuration = millis(failure) - st.TriggerTimestamp
	if cause != nil {
		st.FailureMessage = cause.Error()
	}
	s.latestFailed = st
}

// ReportFailedCheckpointsWithoutInProgress counts a checkpoint that failed before it was pending
// (Flink's reportFailedCheckpointsWithoutInProgress).
func (s *CheckpointStatsTracker) ReportFailedCheckpointsWithoutInProgress() {
	s.counts.Failed++
	s.counts.Total++
	s.publish()
}

// ReportRestoredCheckpoint records a restore from cp at restore.
func (s *CheckpointStatsTracker) ReportRestoredCheckpoint(cp CompletedCheckpoint, restore time.Time) {
	s.counts.Restored++
	s.restored = &RestoredCheckpoint{ID: cp.CheckpointID, RestoreTimestamp: millis(restore), IsSavepoint: cp.Properties.IsSavepoint(), ExternalPath: cp.ExternalPointer}
	s.publish()
}

// Snapshot returns a deep copy, the history newest first as Flink's REST API lists it.
func (s *CheckpointStatsTracker) Snapshot() CheckpointingStatistics {
	out := CheckpointingStatistics{Counts: s.counts, History: make([]CheckpointStatistics, 0, len(s.history))}
	for i := len(s.history) - 1; i >= 0; i-- {
		out.History = append(out.History, *copyStats(s.history[i]))
	}
	out.Latest.Completed = copyStats(s.latestCompleted)
	out.Latest.Savepoint = copyStats(s.latestSavepoint)
	out.Latest.Failed = copyStats(s.latestFailed)
	if s.restored != nil {
		r := *s.restored
		out.Latest.Restored = &r
	}
	return out
}

func copyStats(st *CheckpointStatistics) *CheckpointStatistics {
	if st == nil {
		return nil
	}
	c := *st
	c.byVertex = nil
	c.Tasks = make(map[string]*TaskCheckpointStatistics, len(st.Tasks))
	for k, t := range st.Tasks {
		tc := *t
		tc.Subtasks = append([]SubtaskCheckpointStatistics(nil), t.Subtasks...)
		c.Tasks[k] = &tc
	}
	return &c
}
