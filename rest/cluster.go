package rest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// ---------------------------------------------------------------------------------------------
// GET /config

// dashboardConfiguration is Flink's DashboardConfiguration.
type dashboardConfiguration struct {
	RefreshInterval int64             `json:"refresh-interval"`
	TimezoneName    string            `json:"timezone-name"`
	TimezoneOffset  int64             `json:"timezone-offset"`
	FlinkVersion    string            `json:"flink-version"`
	FlinkRevision   string            `json:"flink-revision"`
	Features        dashboardFeatures `json:"features"`
}

type dashboardFeatures struct {
	WebSubmit  bool `json:"web-submit"`
	WebCancel  bool `json:"web-cancel"`
	WebRescale bool `json:"web-rescale"`
	WebHistory bool `json:"web-history"`
}

func (h *Handler) getConfig(w http.ResponseWriter, _ *http.Request, _ params) {
	name, offset := time.Now().Zone()
	writeJSON(w, http.StatusOK, dashboardConfiguration{
		RefreshInterval: h.cfg.RefreshInterval.Milliseconds(), TimezoneName: name, TimezoneOffset: int64(offset) * 1000,
		FlinkVersion: h.cfg.Version, FlinkRevision: "",
		Features: dashboardFeatures{WebSubmit: false, WebCancel: true},
	})
}

// ---------------------------------------------------------------------------------------------
// GET /overview

// clusterOverview is Flink's ClusterOverviewWithVersion.
type clusterOverview struct {
	TaskManagers   int    `json:"taskmanagers"`
	SlotsTotal     int    `json:"slots-total"`
	SlotsAvailable int    `json:"slots-available"`
	JobsRunning    int    `json:"jobs-running"`
	JobsFinished   int    `json:"jobs-finished"`
	JobsCancelled  int    `json:"jobs-cancelled"`
	JobsFailed     int    `json:"jobs-failed"`
	FlinkVersion   string `json:"flink-version"`
	FlinkCommit    string `json:"flink-commit"`
}

// taskManagers asks the Cluster for its TaskExecutors; none without a Cluster.
func (h *Handler) taskManagers(w http.ResponseWriter, r *http.Request) ([]rpc.TaskManagerInfo, bool) {
	if h.cfg.Cluster == nil {
		return nil, true
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	tms, err := h.cfg.Cluster.RequestTaskManagerInfo(ctx)
	if err != nil {
		h.fail(w, r, err)
		return nil, false
	}
	return tms, true
}

// getOverview counts the TaskExecutors, their slots and the jobs by status: FINISHED, CANCELED
// and FAILED each, every other status as running (Flink: ClusterOverview's running or pending).
func (h *Handler) getOverview(w http.ResponseWriter, r *http.Request, _ params) {
	tms, ok := h.taskManagers(w, r)
	if !ok {
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	jobs, err := h.cfg.Dispatcher.ListJobs(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	o := clusterOverview{TaskManagers: len(tms), FlinkVersion: h.cfg.Version}
	for _, tm := range tms {
		o.SlotsTotal += tm.SlotsNumber
		o.SlotsAvailable += tm.FreeSlots
	}
	for _, j := range jobs {
		switch j.Status {
		case jobgraph.JobStatusFinished:
			o.JobsFinished++
		case jobgraph.JobStatusCanceled:
			o.JobsCancelled++
		case jobgraph.JobStatusFailed:
			o.JobsFailed++
		default:
			o.JobsRunning++
		}
	}
	writeJSON(w, http.StatusOK, o)
}

// ---------------------------------------------------------------------------------------------
// GET /taskmanagers, /taskmanagers/:taskmanagerid

// taskManagerInfo is Flink's TaskManagerInfo; taskManagerDetails its TaskManagerDetailsInfo.
type taskManagerInfo struct {
	ID                     string              `json:"id"`
	Path                   string              `json:"path"`
	DataPort               int                 `json:"dataPort"`
	JMXPort                int                 `json:"jmxPort"`
	TimeSinceLastHeartbeat int64               `json:"timeSinceLastHeartbeat"`
	SlotsNumber            int                 `json:"slotsNumber"`
	FreeSlots              int                 `json:"freeSlots"`
	TotalResource          resourceProfileInfo `json:"totalResource"`
	FreeResource           resourceProfileInfo `json:"freeResource"`
	Hardware               hardwareDescription `json:"hardware"`
	MemoryConfiguration    memoryConfiguration `json:"memoryConfiguration"`
	Blocked                bool                `json:"blocked"`
}

type taskManagersInfo struct {
	TaskManagers []taskManagerInfo `json:"taskmanagers"`
}

type taskManagerDetails struct {
	taskManagerInfo
	AllocatedSlots []slotInfo         `json:"allocatedSlots"`
	Metrics        taskManagerMetrics `json:"metrics"`
}

type slotInfo struct {
	JobID    string              `json:"jobId"`
	Resource resourceProfileInfo `json:"resource"`
}

// resourceProfileInfo is Flink's ResourceProfileInfo: memory in MiB.
type resourceProfileInfo struct {
	CPUCores          float64            `json:"cpuCores"`
	TaskHeapMemory    int64              `json:"taskHeapMemory"`
	TaskOffHeapMemory int64              `json:"taskOffHeapMemory"`
	ManagedMemory     int64              `json:"managedMemory"`
	NetworkMemory     int64              `json:"networkMemory"`
	ExtendedResources map[string]float64 `json:"extendedResources"`
}

func profileInfo(p jobgraph.ResourceProfile) resourceProfileInfo {
	return resourceProfileInfo{CPUCores: p.CPUCores, TaskHeapMemory: p.TaskHeapMemory >> 20, TaskOffHeapMemory: p.TaskOffHeapMemory >> 20,
		ManagedMemory: p.ManagedMemory >> 20, NetworkMemory: p.NetworkMemory >> 20, ExtendedResources: map[string]float64{}}
}

// hardwareDescription, memoryConfiguration and taskManagerMetrics are Flink's
// HardwareDescription, TaskExecutorMemoryConfiguration and TaskManagerMetricsInfo: all zero, a
// TaskExecutor does not report them (see rpc.TaskManagerInfo).
type hardwareDescription struct {
	CPUCores       int   `json:"cpuCores"`
	PhysicalMemory int64 `json:"physicalMemory"`
	FreeMemory     int64 `json:"freeMemory"`
	ManagedMemory  int64 `json:"managedMemory"`
}

type memoryConfiguration struct {
	FrameworkHeap      int64 `json:"frameworkHeap"`
	TaskHeap           int64 `json:"taskHeap"`
	FrameworkOffHeap   int64 `json:"frameworkOffHeap"`
	TaskOffHeap        int64 `json:"taskOffHeap"`
	NetworkMemory      int64 `json:"networkMemory"`
	ManagedMemory      int64 `json:"managedMemory"`
	JVMMetaspace       int64 `json:"jvmMetaspace"`
	JVMOverhead        int64 `json:"jvmOverhead"`
	TotalFlinkMemory   int64 `json:"totalFlinkMemory"`
	TotalProcessMemory int64 `json:"totalProcessMemory"`
}

type taskManagerMetrics struct {
	HeapUsed          int64 `json:"heapUsed"`
	HeapCommitted     int64 `json:"heapCommitted"`
	HeapMax           int64 `json:"heapMax"`
	NonHeapUsed       int64 `json:"nonHeapUsed"`
	NonHeapCommitted  int64 `json:"nonHeapCommitted"`
	NonHeapMax        int64 `json:"nonHeapMax"`
	DirectCount       int64 `json:"directCount"`
	DirectUsed        int64 `json:"directUsed"`
	DirectMax         int64 `json:"directMax"`
	MappedCount       int64 `json:"mappedCount"`
	MappedUsed        int64 `json:"mappedUsed"`
	MappedMax         int64 `json:"mappedMax"`
	GarbageCollectors []any `json:"garbageCollectors"`
}

func tmInfo(tm rpc.TaskManagerInfo) taskManagerInfo {
	return taskManagerInfo{ID: string(tm.ResourceID), Path: tm.Address, DataPort: tm.DataPort,
		TimeSinceLastHeartbeat: max(millis(tm.LastHeartbeat), 0), SlotsNumber: tm.SlotsNumber, FreeSlots: tm.FreeSlots,
		TotalResource: profileInfo(tm.TotalResource), FreeResource: profileInfo(tm.FreeResource)}
}

func (h *Handler) getTaskManagers(w http.ResponseWriter, r *http.Request, _ params) {
	tms, ok := h.taskManagers(w, r)
	if !ok {
		return
	}
	out := taskManagersInfo{TaskManagers: make([]taskManagerInfo, len(tms))}
	for i, tm := range tms {
		out.TaskManagers[i] = tmInfo(tm)
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) getTaskManager(w http.ResponseWriter, r *http.Request, p params) {
	tms, ok := h.taskManagers(w, r)
	if !ok {
		return
	}
	id := p["taskmanagerid"]
	for _, tm := range tms {
		if string(tm.ResourceID) != id {
			continue
		}
		out := taskManagerDetails{taskManagerInfo: tmInfo(tm), AllocatedSlots: make([]slotInfo, len(tm.AllocatedSlots)),
			Metrics: taskManagerMetrics{GarbageCollectors: []any{}}}
		for i, s := range tm.AllocatedSlots {
			out.AllocatedSlots[i] = slotInfo{JobID: s.JobID.String(), Resource: profileInfo(s.Resource)}
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("Could not find TaskManager %s.", id))
}
