package rpc

import (
	"time"

	"github.com/jobgraph/jobgraph"
)

// TaskManagerInfo is what the ResourceManager knows of one registered TaskExecutor: its address,
// its slots (how many, how many free, and the jobs holding the others), its resources and when it
// last answered a heartbeat. It is plain data, copied on the ResourceManager's main loop. Flink:
// TaskManagerInfoWithSlots (TaskManagerInfo with its allocated SlotInfos), the answer of
// ResourceManagerGateway.requestTaskManagerInfo; the REST API's /taskmanagers and /overview
// (requestResourceOverview: the sums over all of them) show it.
//
// Where we differ: ResourceManagerGateway does not carry this call (hosts' gateways need not
// answer it); `*resourcemanager.ResourceManager` and `*minicluster.MiniCluster` have it as
// RequestTaskManagerInfo. There is no JMX port, hardware description or memory configuration: a
// TaskExecutor does not report them.
type TaskManagerInfo struct {
	// ResourceID identifies the TaskExecutor (Flink's id).
	ResourceID jobgraph.ResourceID `json:"resourceId"`
	// Address is the TaskExecutor's address on the rpc.Service (Flink's path).
	Address string `json:"address"`
	// DataPort is the port its shuffle serves partitions on; 0 for the in-memory shuffle, which
	// has none (Flink: dataPort, -1 for a TaskManager without one).
	DataPort int `json:"dataPort"`
	// LastHeartbeat is when it registered or last answered a heartbeat, whichever came later.
	LastHeartbeat time.Time `json:"lastHeartbeat"`
	// SlotsNumber is how many slots it has; FreeSlots how many of them are free (neither
	// allocated nor being requested).
	SlotsNumber int `json:"slotsNumber"`
	FreeSlots   int `json:"freeSlots"`
	// TotalResource is its whole resource (the sum of its slots when it registered none);
	// FreeResource the sum of the profiles of its free slots.
	TotalResource jobgraph.ResourceProfile `json:"totalResource"`
	FreeResource  jobgraph.ResourceProfile `json:"freeResource"`
	// AllocatedSlots are the slots not free, in slot-number order: the job each is allocated or
	// being requested for (zero for a slot a report gave no job) and its profile.
	AllocatedSlots []AllocatedSlotInfo `json:"allocatedSlots,omitempty"`
}

// AllocatedSlotInfo is one slot of a TaskManagerInfo that is not free. Flink: SlotInfo of
// TaskManagerDetailsInfo.allocatedSlots.
type AllocatedSlotInfo struct {
	JobID    jobgraph.JobID           `json:"jobId"`
	Resource jobgraph.ResourceProfile `json:"resource"`
}
