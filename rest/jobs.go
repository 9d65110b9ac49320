package rest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/internal/jsonplan"
	"github.com/jobgraph/jobgraph/rpc"
)

// ---------------------------------------------------------------------------------------------
// GET /jobs, /jobs/:jobid/status

// jobIDWithStatus is Flink's JobIdWithStatus; jobIDsWithStatus its JobIdsWithStatusOverview.
type jobIDWithStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

type jobIDsWithStatus struct {
	Jobs []jobIDWithStatus `json:"jobs"`
}

func (h *Handler) getJobs(w http.ResponseWriter, r *http.Request, _ params) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	jobs, err := h.cfg.Dispatcher.ListJobs(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := jobIDsWithStatus{Jobs: make([]jobIDWithStatus, len(jobs))}
	for i, j := range jobs {
		out.Jobs[i] = jobIDWithStatus{ID: j.JobID.String(), Status: j.Status.String()}
	}
	writeJSON(w, http.StatusOK, out)
}

// jobStatusInfo is Flink's JobStatusInfo.
type jobStatusInfo struct {
	Status string `json:"status"`
}

func (h *Handler) getJobStatus(w http.ResponseWriter, r *http.Request, p params) {
	id, ok := jobID(w, p)
	if !ok {
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	s, err := h.cfg.Dispatcher.RequestJobStatus(ctx, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, jobStatusInfo{Status: s.String()})
}

// ---------------------------------------------------------------------------------------------
// GET /jobs/overview

// jobDetails is Flink's JobDetails as its JSON shows it (the body of MultipleJobsDetails'
// "jobs").
type jobDetails struct {
	JID              string     `json:"jid"`
	Name             string     `json:"name"`
	StartTime        int64      `json:"start-time"`
	EndTime          int64      `json:"end-time"`
	Duration         int64      `json:"duration"`
	State            string     `json:"state"`
	LastModification int64      `json:"last-modification"`
	Tasks            taskCounts `json:"tasks"`
	terminal         bool       // globally terminal: the details never change
}

// taskCounts is JobDetails' "tasks": the number of subtasks per execution state (Flink's
// lower-case names) and their total. A struct, not a map, so encoding it sorts nothing.
type taskCounts struct {
	Total        int `json:"total"`
	Created      int `json:"created"`
	Scheduled    int `json:"scheduled"`
	Deploying    int `json:"deploying"`
	Running      int `json:"running"`
	Finished     int `json:"finished"`
	Canceling    int `json:"canceling"`
	Canceled     int `json:"canceled"`
	Failed       int `json:"failed"`
	Reconciling  int `json:"reconciling"`
	Initializing int `json:"initializing"`
}

func (c *taskCounts) add(s jobgraph.ExecutionState) {
	c.Total++
	switch s {
	case jobgraph.ExecutionStateCreated:
		c.Created++
	case jobgraph.ExecutionStateScheduled:
		c.Scheduled++
	case jobgraph.ExecutionStateDeploying:
		c.Deploying++
	case jobgraph.ExecutionStateRunning:
		c.Running++
	case jobgraph.ExecutionStateFinished:
		c.Finished++
	case jobgraph.ExecutionStateCanceling:
		c.Canceling++
	case jobgraph.ExecutionStateCanceled:
		c.Canceled++
	case jobgraph.ExecutionStateFailed:
		c.Failed++
	case jobgraph.ExecutionStateReconciling:
		c.Reconciling++
	case jobgraph.ExecutionStateInitializing:
		c.Initializing++
	}
}

// overviewKey names one job of the overview cache: a JobID may be submitted again once the
// Dispatcher forgot it, with another start time.
type overviewKey struct {
	id    jobgraph.JobID
	start int64
}

// detailsOf computes a job's JobDetails (Flink: JobDetails.createDetailsForJob); start is the
// submission time ListJobs gave, used when the graph has no INITIALIZING timestamp.
func detailsOf(a *executiongraph.ArchivedExecutionGraph, start int64, now time.Time) jobDetails {
	if t := startOf(a); t >= 0 {
		start = t
	}
	end := int64(-1)
	if a.Status.IsGloballyTerminal() {
		end = millis(a.StatusTimestamp(a.Status))
	}
	d := jobDetails{JID: a.JobID.String(), Name: a.JobName, StartTime: start, EndTime: end,
		Duration: durationOf(start, end, now), State: a.Status.String(), terminal: a.Status.IsGloballyTerminal()}
	last := int64(0)
	for _, v := range a.JobVertices {
		for _, s := range v.Subtasks {
			d.Tasks.add(s.State)
			last = max(last, millis(s.StateTimestamps[s.State]))
		}
	}
	d.LastModification = max(last, end)
	return d
}

// startOf is the job's INITIALIZING timestamp (else CREATED), or -1.
func startOf(a *executiongraph.ArchivedExecutionGraph) int64 {
	for _, s := range []jobgraph.JobStatus{jobgraph.JobStatusInitializing, jobgraph.JobStatusCreated} {
		if t := a.StatusTimestamp(s); !t.IsZero() {
			return t.UnixMilli()
		}
	}
	return -1
}

// durationOf is Flink's duration: end (or now while running) minus start; -1 without a start.
func durationOf(start, end int64, now time.Time) int64 {
	if start < 0 {
		return -1
	}
	if end < 0 {
		end = now.UnixMilli()
	}
	return max(end-start, 0)
}

// overviewParallelism bounds the RequestJob calls one overview runs at once.
const overviewParallelism = 8

// getJobsOverview lists every job the Dispatcher lists with its details. The details of a
// globally terminated job never change, so they are computed and encoded once and kept while
// the job is listed; a running job's graph is asked for on every request.
func (h *Handler) getJobsOverview(w http.ResponseWriter, r *http.Request, _ params) {
	ctx, cancel := h.ctx(r)
	defer cancel()
	jobs, err := h.cfg.Dispatcher.ListJobs(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	encoded := make([][]byte, len(jobs))
	var todo []int
	h.overviewMu.Lock()
	for i, j := range jobs {
		if e, ok := h.overview[overviewKey{j.JobID, j.StartTime}]; ok {
			encoded[i] = e
		} else {
			todo = append(todo, i)
		}
	}
	h.overviewMu.Unlock()

	now := time.Now()
	terminal := make([]bool, len(jobs))
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(overviewParallelism, len(todo)) {
		wg.Go(func() {
			for i := range next {
				j := jobs[i]
				var d jobDetails
				a, err := h.requestJob(ctx, r, j.JobID)
				switch {
				case err == nil:
					d = detailsOf(a, j.StartTime, now)
				case statusOf(err) == http.StatusNotFound: // it left the archive since ListJobs
					d = statusOnlyDetails(j, now)
				default:
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					continue
				}
				data, err := json.Marshal(d)
				if err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					continue
				}
				encoded[i], terminal[i] = data, d.terminal
			}
		})
	}
	for _, i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		h.fail(w, r, firstErr)
		return
	}

	// Keep the details of the globally terminated jobs listed now, and only those.
	h.overviewMu.Lock()
	keep := make(map[overviewKey][]byte, len(h.overview)+len(todo))
	for i, j := range jobs {
		k := overviewKey{j.JobID, j.StartTime}
		if e, ok := h.overview[k]; ok {
			keep[k] = e
		} else if terminal[i] {
			keep[k] = encoded[i]
		}
	}
	h.overview = keep
	h.overviewMu.Unlock()

	size := len(`{"jobs":[]}`) + len(encoded)
	for _, e := range encoded {
		size += len(e)
	}
	buf := make([]byte, 0, size)
	buf = append(buf, `{"jobs":[`...)
	for i, e := range encoded {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, e...)
	}
	buf = append(buf, "]}"...)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf)
}

// statusOnlyDetails are the details of a job whose graph is gone: what ListJobs said.
func statusOnlyDetails(j rpc.JobStatusMessage, now time.Time) jobDetails {
	return jobDetails{JID: j.JobID.String(), Name: j.Name, StartTime: j.StartTime, EndTime: -1, State: j.Status.String(),
		Duration: durationOf(j.StartTime, -1, now)}
}

// ---------------------------------------------------------------------------------------------
// GET /jobs/:jobid

// jobDetailsInfo is Flink's JobDetailsInfo.
type jobDetailsInfo struct {
	JID              string                 `json:"jid"`
	Name             string                 `json:"name"`
	IsStoppable      bool                   `json:"isStoppable"`
	State            string                 `json:"state"`
	JobType          string                 `json:"job-type"`
	StartTime        int64                  `json:"start-time"`
	EndTime          int64                  `json:"end-time"`
	Duration         int64                  `json:"duration"`
	MaxParallelism   int                    `json:"maxParallelism"`
	Now              int64                  `json:"now"`
	Timestamps       map[string]int64       `json:"timestamps"`
	Vertices         []jobVertexDetailsInfo `json:"vertices"`
	StatusCounts     map[string]int         `json:"status-counts"`
	Plan             jsonplan.Plan          `json:"plan"`
	PendingOperators int                    `json:"pending-operators"`
}

// jobVertexDetailsInfo is Flink's JobDetailsInfo.JobVertexDetailsInfo.
type jobVertexDetailsInfo struct {
	ID             string         `json:"id"`
	Name           string         `json:"name"`
	MaxParallelism int            `json:"maxParallelism"`
	Parallelism    int            `json:"parallelism"`
	Status         string         `json:"status"`
	StartTime      int64          `json:"start-time"`
	EndTime        int64          `json:"end-time"`
	Duration       int64          `json:"duration"`
	Tasks          map[string]int `json:"tasks"`
	Metrics        ioMetricsInfo  `json:"metrics"`
}

// ioMetricsInfo is Flink's IOMetricsInfo; the archive carries no IO counts (see the package doc).
type ioMetricsInfo struct {
	ReadBytes            int64 `json:"read-bytes"`
	ReadBytesComplete    bool  `json:"read-bytes-complete"`
	WriteBytes           int64 `json:"write-bytes"`
	WriteBytesComplete   bool  `json:"write-bytes-complete"`
	ReadRecords          int64 `json:"read-records"`
	ReadRecordsComplete  bool  `json:"read-records-complete"`
	WriteRecords         int64 `json:"write-records"`
	WriteRecordsComplete bool  `json:"write-records-complete"`
}

func stateCounts(counts map[jobgraph.ExecutionState]int) map[string]int {
	out := make(map[string]int, jobgraph.NumExecutionStates)
	for s := range jobgraph.ExecutionState(jobgraph.NumExecutionStates) {
		out[s.String()] = counts[s]
	}
	return out
}

// vertexTimes is Flink's start, end and duration of a job vertex: the earliest DEPLOYING of its
// subtasks (-1 if none was deployed), the latest terminal timestamp once all are terminal (else
// -1), and the time between (up to now while running).
func vertexTimes(v *executiongraph.ArchivedExecutionJobVertex, now time.Time) (start, end, duration int64) {
	start, end = -1, -1
	allTerminal := len(v.Subtasks) > 0
	for _, s := range v.Subtasks {
		if t := s.StateTimestamps[jobgraph.ExecutionStateDeploying]; !t.IsZero() {
			if ms := t.UnixMilli(); start < 0 || ms < start {
				start = ms
			}
		}
		if s.State.IsTerminal() {
			end = max(end, millis(s.StateTimestamps[s.State]))
		} else {
			allTerminal = false
		}
	}
	if !allTerminal {
		end = -1
	}
	return start, end, durationOf(start, end, now)
}

func (h *Handler) getJob(w http.ResponseWriter, r *http.Request, p params) {
	a := h.job(w, r, p)
	if a == nil {
		return
	}
	now := time.Now()
	start := startOf(a)
	end := int64(-1)
	if a.Status.IsGloballyTerminal() {
		end = millis(a.StatusTimestamp(a.Status))
	}
	info := jobDetailsInfo{
		JID: a.JobID.String(), Name: a.JobName, State: a.Status.String(), JobType: a.JobType.String(),
		StartTime: start, EndTime: end, Duration: durationOf(start, end, now), MaxParallelism: -1,
		Now: now.UnixMilli(), Timestamps: make(map[string]int64, 11), Vertices: make([]jobVertexDetailsInfo, len(a.JobVertices)),
		Plan: planOf(a),
	}
	for s := range jobgraph.JobStatus(jobgraph.NumJobStatuses) {
		info.Timestamps[s.String()] = max(millis(a.StatusTimestamp(s)), 0)
	}
	perState := make(map[jobgraph.ExecutionState]int)
	for i := range a.JobVertices {
		v := &a.JobVertices[i]
		vs, ve, vd := vertexTimes(v, now)
		info.Vertices[i] = jobVertexDetailsInfo{ID: v.ID.String(), Name: v.Name, MaxParallelism: v.MaxParallelism,
			Parallelism: v.Parallelism, Status: v.AggregateState.String(), StartTime: vs, EndTime: ve, Duration: vd,
			Tasks: stateCounts(v.StateCounts)}
		perState[v.AggregateState]++
	}
	info.StatusCounts = stateCounts(perState)
	writeJSON(w, http.StatusOK, info)
}

// ---------------------------------------------------------------------------------------------
// GET /jobs/:jobid/vertices/:vertexid

// vertexDetails is Flink's JobVertexDetailsInfo; subtaskAttempt its
// SubtaskExecutionAttemptDetailsInfo.
type vertexDetails struct {
	ID             string           `json:"id"`
	Name           string           `json:"name"`
	Parallelism    int              `json:"parallelism"`
	MaxParallelism int              `json:"maxParallelism"`
	Now            int64            `json:"now"`
	Subtasks       []subtaskAttempt `json:"subtasks"`
}

type subtaskAttempt struct {
	Subtask       int           `json:"subtask"`
	Status        string        `json:"status"`
	Attempt       int           `json:"attempt"`
	Host          string        `json:"host"`
	StartTime     int64         `json:"start-time"`
	EndTime       int64         `json:"end-time"`
	Duration      int64         `json:"duration"`
	Metrics       ioMetricsInfo `json:"metrics"`
	TaskManagerID string        `json:"taskmanager-id"`
	// StartTimeOld is Flink's deprecated start_time, the same as start-time.
	StartTimeOld int64 `json:"start_time"`
	// FailureCause is the attempt's failure, if it failed with one (not in Flink's shape, which
	// shows it in /exceptions only).
	FailureCause string `json:"failure-cause,omitempty"`
}

// unassigned is what Flink shows as the host of a subtask not deployed anywhere.
const unassigned = "(unassigned)"

func (h *Handler) getJobVertex(w http.ResponseWriter, r *http.Request, p params) {
	vid, err := jobgraph.ParseJobVertexID(p["vertexid"])
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: vertex ID %q: %v", p["vertexid"], err))
		return
	}
	a := h.job(w, r, p)
	if a == nil {
		return
	}
	v := a.JobVertex(vid)
	if v == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("No vertex with ID '%s' exists in job %s.", vid, a.JobID))
		return
	}
	now := time.Now()
	out := vertexDetails{ID: v.ID.String(), Name: v.Name, Parallelism: v.Parallelism, MaxParallelism: v.MaxParallelism,
		Now: now.UnixMilli(), Subtasks: make([]subtaskAttempt, len(v.Subtasks))}
	for i, s := range v.Subtasks {
		start, end := int64(-1), int64(-1)
		if t := s.StateTimestamps[jobgraph.ExecutionStateDeploying]; !t.IsZero() {
			start = t.UnixMilli()
		}
		if s.State.IsTerminal() {
			end = millis(s.StateTimestamps[s.State])
		}
		host := string(s.Location)
		if host == "" {
			host = unassigned
		}
		out.Subtasks[i] = subtaskAttempt{Subtask: s.Subtask, Status: s.State.String(), Attempt: s.AttemptNumber, Host: host,
			StartTime: start, EndTime: end, Duration: durationOf(start, end, now), TaskManagerID: host, StartTimeOld: start,
			FailureCause: s.FailureMessage}
	}
	writeJSON(w, http.StatusOK, out)
}

// ---------------------------------------------------------------------------------------------
// GET /jobs/:jobid/plan

// jobPlanInfo is Flink's JobPlanInfo; its Plan is the JSON plan of JsonPlanGenerator, built as
// cmd/jobgraph's info builds it (internal/jsonplan).
type jobPlanInfo struct {
	Plan jsonplan.Plan `json:"plan"`
}

// planOf is the job's JSON plan: one node per job vertex in topological order (the archive's).
func planOf(a *executiongraph.ArchivedExecutionGraph) jsonplan.Plan {
	vs := make([]jsonplan.Vertex, len(a.JobVertices))
	for i, v := range a.JobVertices {
		vs[i] = jsonplan.Vertex{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism, Inputs: v.Inputs}
	}
	return jsonplan.New(a.JobID, a.JobName, a.JobType, vs)
}

func (h *Handler) getJobPlan(w http.ResponseWriter, r *http.Request, p params) {
	if a := h.job(w, r, p); a != nil {
		writeJSON(w, http.StatusOK, jobPlanInfo{Plan: planOf(a)})
	}
}

// ---------------------------------------------------------------------------------------------
// GET /jobs/:jobid/exceptions

// jobExceptionsInfo is Flink's JobExceptionsInfoWithHistory.
type jobExceptionsInfo struct {
	RootException    *string              `json:"root-exception"`
	Timestamp        *int64               `json:"timestamp"`
	AllExceptions    []executionException `json:"all-exceptions"`
	Truncated        bool                 `json:"truncated"`
	ExceptionHistory jobExceptionHistory  `json:"exceptionHistory"`
}

type executionException struct {
	Exception     string `json:"exception"`
	Task          string `json:"task"`
	Location      string `json:"location"`
	Timestamp     int64  `json:"timestamp"`
	TaskManagerID string `json:"taskManagerId"`
}

type jobExceptionHistory struct {
	Entries   []rootExceptionInfo `json:"entries"`
	Truncated bool                `json:"truncated"`
}

type exceptionInfo struct {
	ExceptionName string            `json:"exceptionName"`
	Stacktrace    string            `json:"stacktrace"`
	Timestamp     int64             `json:"timestamp"`
	TaskName      *string           `json:"taskName"`
	Location      *string           `json:"location"`
	TaskManagerID *string           `json:"taskManagerId"`
	FailureLabels map[string]string `json:"failureLabels"`
}

type rootExceptionInfo struct {
	exceptionInfo
	ConcurrentExceptions []exceptionInfo `json:"concurrentExceptions"`
}

func exceptionOf(e jobgraph.ExceptionHistoryEntry) exceptionInfo {
	x := exceptionInfo{ExceptionName: e.Message, Stacktrace: e.Message, Timestamp: millis(e.Timestamp), FailureLabels: map[string]string{}}
	if e.TaskName != "" {
		x.TaskName = &e.TaskName
	}
	if e.Location != "" {
		loc := string(e.Location)
		x.Location, x.TaskManagerID = &loc, &loc
	}
	return x
}

func (h *Handler) getJobExceptions(w http.ResponseWriter, r *http.Request, p params) {
	limit := -1
	if s := r.URL.Query().Get("maxExceptions"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: maxExceptions %q is not a non-negative integer.", s))
			return
		}
		limit = n
	}
	a := h.job(w, r, p)
	if a == nil {
		return
	}
	out := jobExceptionsInfo{AllExceptions: []executionException{}, ExceptionHistory: jobExceptionHistory{Entries: []rootExceptionInfo{}}}
	if c := a.FailureCause; c != nil {
		msg, ts := c.Message, millis(c.Timestamp)
		out.RootException, out.Timestamp = &msg, &ts
	}
	for _, v := range a.JobVertices {
		for _, s := range v.Subtasks {
			if s.FailureMessage == "" {
				continue
			}
			loc := string(s.Location)
			if loc == "" {
				loc = unassigned
			}
			out.AllExceptions = append(out.AllExceptions, executionException{Exception: s.FailureMessage,
				Task: fmt.Sprintf("%s (%d/%d)", v.Name, s.Subtask+1, v.Parallelism), Location: loc,
				Timestamp: millis(s.StateTimestamps[s.State]), TaskManagerID: loc})
		}
	}
	// Newest first, as Flink lists the history.
	for _, e := range slices.Backward(a.ExceptionHistory) {
		if limit >= 0 && len(out.ExceptionHistory.Entries) == limit {
			out.ExceptionHistory.Truncated = true
			break
		}
		root := rootExceptionInfo{exceptionInfo: exceptionOf(e), ConcurrentExceptions: make([]exceptionInfo, 0, len(e.Concurrent))}
		for _, c := range e.Concurrent {
			root.ConcurrentExceptions = append(root.ConcurrentExceptions, exceptionOf(c))
		}
		out.ExceptionHistory.Entries = append(out.ExceptionHistory.Entries, root)
	}
	if limit >= 0 && len(out.AllExceptions) > limit {
		out.AllExceptions, out.Truncated = out.AllExceptions[:limit], true
	}
	writeJSON(w, http.StatusOK, out)
}

// ---------------------------------------------------------------------------------------------
// GET /jobs/:jobid/accumulators

// jobAccumulatorsInfo is Flink's JobAccumulatorsInfo.
type jobAccumulatorsInfo struct {
	JobAccumulators        []any             `json:"job-accumulators"`
	UserTaskAccumulators   []userAccumulator `json:"user-task-accumulators"`
	SerializedAccumulators map[string]any    `json:"serialized-user-task-accumulators"`
}

type userAccumulator struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

func (h *Handler) getJobAccumulators(w http.ResponseWriter, r *http.Request, p params) {
	a := h.job(w, r, p)
	if a == nil {
		return
	}
	out := jobAccumulatorsInfo{JobAccumulators: []any{}, UserTaskAccumulators: []userAccumulator{}, SerializedAccumulators: map[string]any{}}
	names := make([]string, 0, len(a.Accumulators))
	for n := range a.Accumulators {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		acc := a.Accumulators[n]
		value := string(acc.Value)
		if acc.Failure != nil {
			value = "(failure: " + acc.Failure.Message + ")"
		}
		out.UserTaskAccumulators = append(out.UserTaskAccumulators, userAccumulator{Name: n, Type: acc.Kind, Value: value})
	}
	writeJSON(w, http.StatusOK, out)
}

// ---------------------------------------------------------------------------------------------
// PATCH /jobs/:jobid?mode=cancel

func (h *Handler) patchJob(w http.ResponseWriter, r *http.Request, p params) {
	id, ok := jobID(w, p)
	if !ok {
		return
	}
	switch mode := strings.ToLower(r.URL.Query().Get("mode")); mode {
	case "", "cancel":
	case "stop":
		writeError(w, http.StatusBadRequest, `The termination mode "stop" has been removed. For an ungraceful shutdown, please use "cancel" instead. For a graceful shutdown, please use "jobs/:jobId/stop" instead.`)
		return
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: mode %q (want cancel).", mode))
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	if err := h.cfg.Dispatcher.CancelJob(ctx, id); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, struct{}{})
}

// ---------------------------------------------------------------------------------------------
// POST /jobs

// jobSubmitResponse is Flink's JobSubmitResponseBody.
type jobSubmitResponse struct {
	JobURL string `json:"jobUrl"`
}

// readBody reads the request body up to rest.server.max-content-length, answering 413 past it
// (before reading more than the limit) and 400 for a body that could not be read.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := h.cfg.MaxContentLength
	if r.ContentLength > limit {
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge(r.ContentLength, limit))
		return nil, false
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge(-1, limit))
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, "Bad request, reading the request body: "+err.Error())
		return nil, false
	}
	return data, true
}

func tooLarge(n, limit int64) string {
	if n >= 0 {
		return fmt.Sprintf("The request body of %d bytes exceeds the maximum content length of %d bytes (rest.server.max-content-length).", n, limit)
	}
	return fmt.Sprintf("The request body exceeds the maximum content length of %d bytes (rest.server.max-content-length).", limit)
}

func (h *Handler) postJobs(w http.ResponseWriter, r *http.Request, _ params) {
	data, ok := h.readBody(w, r)
	if !ok {
		return
	}
	g, err := jobgraph.Decode(data)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad request, the body is not a JobGraph in jobgraph's JSON form: "+err.Error())
		return
	}
	if g.JobID.IsZero() {
		g.JobID = jobgraph.NewJobID()
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	if err := h.cfg.Dispatcher.SubmitJob(ctx, g); err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, jobSubmitResponse{JobURL: "/jobs/" + g.JobID.String()})
}
