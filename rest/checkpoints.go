package rest

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// ---------------------------------------------------------------------------------------------
// GET /jobs/:jobid/checkpoints

// checkpointingStatistics is Flink's CheckpointingStatistics.
type checkpointingStatistics struct {
	Counts  checkpoint.CheckpointCounts `json:"counts"`
	Summary checkpointSummary           `json:"summary"`
	Latest  latestCheckpoints           `json:"latest"`
	History []checkpointStatistics      `json:"history"`
}

type latestCheckpoints struct {
	Completed *checkpointStatistics          `json:"completed"`
	Savepoint *checkpointStatistics          `json:"savepoint"`
	Failed    *checkpointStatistics          `json:"failed"`
	Restored  *checkpoint.RestoredCheckpoint `json:"restored"`
}

// checkpointSummary is Flink's CheckpointingStatistics.Summary over the completed checkpoints.
type checkpointSummary struct {
	CheckpointedSize  statsSummary `json:"checkpointed_size"`
	StateSize         statsSummary `json:"state_size"`
	EndToEndDuration  statsSummary `json:"end_to_end_duration"`
	AlignmentBuffered statsSummary `json:"alignment_buffered"`
	ProcessedData     statsSummary `json:"processed_data"`
	PersistedData     statsSummary `json:"persisted_data"`
}

// statsSummary is Flink's StatsSummaryDto: min, max, average and percentiles (0 without data).
type statsSummary struct {
	Min  int64   `json:"min"`
	Max  int64   `json:"max"`
	Avg  int64   `json:"avg"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
}

// summarize computes a statsSummary; percentiles by nearest rank.
func summarize(values []int64) statsSummary {
	if len(values) == 0 {
		return statsSummary{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	var sum int64
	for _, x := range v {
		sum += x
	}
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(v)))) - 1
		return float64(v[min(max(i, 0), len(v)-1)])
	}
	return statsSummary{Min: v[0], Max: v[len(v)-1], Avg: sum / int64(len(v)), P50: q(0.5), P90: q(0.9), P95: q(0.95), P99: q(0.99), P999: q(0.999)}
}

// checkpointStatistics is one checkpoint as Flink's CheckpointStatistics writes it, with its
// subtype's "className" (completed, failed, in_progress) and fields.
type checkpointStatistics struct {
	ClassName               string                              `json:"className"`
	ID                      checkpoint.CheckpointID             `json:"id"`
	Status                  checkpoint.CheckpointStatsStatus    `json:"status"`
	IsSavepoint             bool                                `json:"is_savepoint"`
	SavepointFormat         *string                             `json:"savepointFormat"`
	TriggerTimestamp        int64                               `json:"trigger_timestamp"`
	LatestAckTimestamp      int64                               `json:"latest_ack_timestamp"`
	CheckpointedSize        int64                               `json:"checkpointed_size"`
	StateSize               int64                               `json:"state_size"`
	EndToEndDuration        int64                               `json:"end_to_end_duration"`
	AlignmentBuffered       int64                               `json:"alignment_buffered"`
	ProcessedData           int64                               `json:"processed_data"`
	PersistedData           int64                               `json:"persisted_data"`
	NumSubtasks             int                                 `json:"num_subtasks"`
	NumAcknowledgedSubtasks int                                 `json:"num_acknowledged_subtasks"`
	CheckpointType          string                              `json:"checkpoint_type"`
	Tasks                   map[string]taskCheckpointStatistics `json:"tasks"`
	// Completed only.
	ExternalPath *string `json:"external_path,omitempty"`
	Discarded    *bool   `json:"discarded,omitempty"`
	// Failed only.
	FailureTimestamp *int64  `json:"failure_timestamp,omitempty"`
	FailureMessage   *string `json:"failure_message,omitempty"`
}

// taskCheckpointStatistics is Flink's TaskCheckpointStatistics (one vertex's part).
type taskCheckpointStatistics struct {
	ID                      checkpoint.CheckpointID          `json:"id"`
	Status                  checkpoint.CheckpointStatsStatus `json:"status"`
	LatestAckTimestamp      int64                            `json:"latest_ack_timestamp"`
	CheckpointedSize        int64                            `json:"checkpointed_size"`
	StateSize               int64                            `json:"state_size"`
	EndToEndDuration        int64                            `json:"end_to_end_duration"`
	AlignmentBuffered       int64                            `json:"alignment_buffered"`
	ProcessedData           int64                            `json:"processed_data"`
	PersistedData           int64                            `json:"persisted_data"`
	NumSubtasks             int                              `json:"num_subtasks"`
	NumAcknowledgedSubtasks int                              `json:"num_acknowledged_subtasks"`
}

func statsOf(s *checkpoint.CheckpointStatistics) *checkpointStatistics {
	if s == nil {
		return nil
	}
	out := &checkpointStatistics{ID: s.ID, Status: s.Status, IsSavepoint: s.IsSavepoint, TriggerTimestamp: s.TriggerTimestamp,
		LatestAckTimestamp: s.LatestAckTimestamp, CheckpointedSize: s.StateSize, StateSize: s.StateSize,
		EndToEndDuration: s.EndToEndDuration, NumSubtasks: s.NumSubtasks, NumAcknowledgedSubtasks: s.NumAcknowledgedSubtasks,
		CheckpointType: s.CheckpointType.String(), Tasks: make(map[string]taskCheckpointStatistics, len(s.Tasks))}
	if s.IsSavepoint {
		format := "CANONICAL"
		out.SavepointFormat = &format
	}
	switch s.Status {
	case checkpoint.StatusCompleted:
		out.ClassName = "completed"
		path, discarded := s.ExternalPath, s.Discarded
		out.ExternalPath, out.Discarded = &path, &discarded
	case checkpoint.StatusFailed:
		out.ClassName = "failed"
		ts, msg := s.FailureTimestamp, s.FailureMessage
		out.FailureTimestamp, out.FailureMessage = &ts, &msg
	default:
		out.ClassName = "in_progress"
	}
	for v, t := range s.Tasks {
		out.Tasks[v] = taskCheckpointStatistics{ID: t.ID, Status: t.Status, LatestAckTimestamp: t.LatestAckTimestamp,
			CheckpointedSize: t.StateSize, StateSize: t.StateSize, EndToEndDuration: t.EndToEndDuration,
			NumSubtasks: t.NumSubtasks, NumAcknowledgedSubtasks: t.NumAcknowledgedSubtasks}
	}
	return out
}

// checkpointStats is the job's checkpoint statistics, or writes 404 for a job without
// checkpoints and returns nil.
func (h *Handler) checkpointStats(w http.ResponseWriter, r *http.Request, p params) *checkpoint.CheckpointingStatistics {
	a := h.job(w, r, p)
	if a == nil {
		return nil
	}
	if a.CheckpointStatistics == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Checkpointing has not been enabled for job %s.", a.JobID))
		return nil
	}
	return a.CheckpointStatistics
}

func (h *Handler) getCheckpoints(w http.ResponseWriter, r *http.Request, p params) {
	st := h.checkpointStats(w, r, p)
	if st == nil {
		return
	}
	out := checkpointingStatistics{Counts: st.Counts, History: make([]checkpointStatistics, 0, len(st.History)),
		Latest: latestCheckpoints{Completed: statsOf(st.Latest.Completed), Savepoint: statsOf(st.Latest.Savepoint),
			Failed: statsOf(st.Latest.Failed), Restored: st.Latest.Restored}}
	var sizes, durations []int64
	// Newest first, as Flink lists the history.
	for i := range slices.Backward(st.History) {
		s := &st.History[i]
		out.History = append(out.History, *statsOf(s))
		if s.Status == checkpoint.StatusCompleted {
			sizes, durations = append(sizes, s.StateSize), append(durations, s.EndToEndDuration)
		}
	}
	// Alignment, processed and persisted data are not measured: zero.
	out.Summary = checkpointSummary{CheckpointedSize: summarize(sizes), StateSize: summarize(sizes),
		EndToEndDuration: summarize(durations)}
	writeJSON(w, http.StatusOK, out)
}

// ---------------------------------------------------------------------------------------------
// GET /jobs/:jobid/checkpoints/details/:checkpointid

func (h *Handler) getCheckpointDetails(w http.ResponseWriter, r *http.Request, p params) {
	n, err := strconv.ParseInt(p["checkpointid"], 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: checkpoint ID %q is not an integer.", p["checkpointid"]))
		return
	}
	st := h.checkpointStats(w, r, p)
	if st == nil {
		return
	}
	id := checkpoint.CheckpointID(n)
	i := slices.IndexFunc(st.History, func(s checkpoint.CheckpointStatistics) bool { return s.ID == id })
	if i < 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Could not find checkpoint statistics for checkpoint %d.", n))
		return
	}
	writeJSON(w, http.StatusOK, statsOf(&st.History[i]))
}

// ---------------------------------------------------------------------------------------------
// GET /jobs/:jobid/checkpoints/config

// checkpointConfigInfo is Flink's CheckpointConfigInfo: durations in milliseconds.
type checkpointConfigInfo struct {
	Mode                             string                 `json:"mode"`
	Interval                         int64                  `json:"interval"`
	Timeout                          int64                  `json:"timeout"`
	MinPause                         int64                  `json:"min_pause"`
	MaxConcurrent                    int64                  `json:"max_concurrent"`
	Externalization                  externalizedCheckpoint `json:"externalization"`
	StateBackend                     string                 `json:"state_backend"`
	CheckpointStorage                string                 `json:"checkpoint_storage"`
	UnalignedCheckpoints             bool                   `json:"unaligned_checkpoints"`
	TolerableFailedCheckpoints       int                    `json:"tolerable_failed_checkpoints"`
	AlignedCheckpointTimeout         int64                  `json:"aligned_checkpoint_timeout"`
	CheckpointsAfterTasksFinish      bool                   `json:"checkpoints_after_tasks_finish"`
	StateChangelogEnabled            bool                   `json:"state_changelog_enabled"`
	ChangelogPeriodicMaterialization int64                  `json:"changelog_periodic_materialization_interval"`
	ChangelogStorage                 string                 `json:"changelog_storage"`
}

type externalizedCheckpoint struct {
	Enabled              bool `json:"enabled"`
	DeleteOnCancellation bool `json:"delete_on_cancellation"`
}

// checkpointConfig answers the job's CheckpointingSettings with their defaults applied: mode
// EXACTLY_ONCE (aligned barriers), checkpoints after tasks finish (FLIP-147), externalized
// (retained) checkpoints when RetainOnCancellation holds.
func checkpointConfig(c jobgraph.CheckpointingSettings) checkpointConfigInfo {
	timeout := c.Timeout
	if timeout == 0 {
		timeout = jobgraph.DefaultCheckpointTimeout
	}
	return checkpointConfigInfo{Mode: "EXACTLY_ONCE", Interval: c.Interval.Milliseconds(), Timeout: timeout.Milliseconds(),
		MinPause: c.MinPauseBetweenCheckpoints.Milliseconds(), MaxConcurrent: int64(cmp.Or(c.MaxConcurrentCheckpoints, 1)),
		Externalization: externalizedCheckpoint{Enabled: c.RetainOnCancellation, DeleteOnCancellation: !c.RetainOnCancellation},
		StateBackend:    "jobgraph", CheckpointStorage: "CheckpointRecoveryFactory",
		UnalignedCheckpoints: c.Unaligned, TolerableFailedCheckpoints: c.TolerableFailedCheckpoints,
		CheckpointsAfterTasksFinish: true, ChangelogStorage: ""}
}

func (h *Handler) getCheckpointConfig(w http.ResponseWriter, r *http.Request, p params) {
	a := h.job(w, r, p)
	if a == nil {
		return
	}
	if !a.Checkpointing.Enabled() {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Checkpointing is not enabled for job %s.", a.JobID))
		return
	}
	writeJSON(w, http.StatusOK, checkpointConfig(a.Checkpointing))
}
