package rpc

import (
	"context"
	"time"

	"github.com/jobgraph/jobgraph"
)

// BlockAction is what blocking a TaskExecutor does to the tasks already running there. The
// values are FLIP-224's block actions.
type BlockAction string

const (
	// BlockActionMarkBlocked: the TaskExecutor gets no new slot requests and its free slots are
	// given back; the tasks running there keep running. "" means this. Flink: MARK_BLOCKED.
	BlockActionMarkBlocked BlockAction = "MARK_BLOCKED"
	// BlockActionMarkBlockedAndEvacuateTasks: as MARK_BLOCKED, and every job's slots there are
	// released, so the tasks in them fail and the failover strategy restarts them elsewhere.
	// Flink: FLIP-224's MARK_BLOCKED_AND_EVACUATE_TASKS, which Flink's code has not built.
	BlockActionMarkBlockedAndEvacuateTasks BlockAction = "MARK_BLOCKED_AND_EVACUATE_TASKS"
)

// Valid reports whether a is "", BlockActionMarkBlocked or BlockActionMarkBlockedAndEvacuateTasks.
func (a BlockAction) Valid() bool {
	switch a {
	case "", BlockActionMarkBlocked, BlockActionMarkBlockedAndEvacuateTasks:
		return true
	}
	return false
}

// BlockedNode is one entry of the blocklist: a TaskExecutor that gets no new slots until
// EndTimestamp, why, and what blocking it does to its running tasks. Plain data. Flink:
// org.apache.flink.runtime.blocklist.BlockedNode (nodeId, cause, endTimestamp). Where we differ:
// Flink blocks nodes (hosts, several TaskManagers each) and names the TaskManagers of a node
// through a node-ID retriever; a TaskExecutor is the node here, named by its ResourceID; and
// the action travels with the entry (FLIP-224 put it in the REST request).
type BlockedNode struct {
	NodeID       jobgraph.ResourceID `json:"nodeId"`
	Cause        string              `json:"cause"`
	EndTimestamp time.Time           `json:"endTimestamp"`
	Action       BlockAction         `json:"action,omitempty"`
}

// JobMasterBlocklistListener is the optional part of a JobMasterGateway that hears of newly
// blocked TaskExecutors: the ResourceManager tells every registered JobMaster, which then gives
// back its free slots there, accepts no slot offered from there while the block lasts, and, for
// BlockActionMarkBlockedAndEvacuateTasks, releases its slots there. Fenced by token like every
// JobMasterGateway call. A gateway without it is not told (the ResourceManager still requests
// no slot of a blocked TaskExecutor for it). Flink: JobMasterGateway's
// BlocklistListener.notifyNewBlockedNodes.
type JobMasterBlocklistListener interface {
	NotifyNewBlockedNodes(ctx context.Context, token jobgraph.JobMasterID, nodes []BlockedNode) error
}

// ResourceManagerBlocklistListener is the optional part of a ResourceManagerGateway that hears
// of TaskExecutors a JobMaster blocked (a blocklist rule fired there): the ResourceManager
// requests no slot of them until their block ends, and tells the other JobMasters. Fenced by rm
// like every ResourceManagerGateway call. Flink: ResourceManagerGateway's
// BlocklistListener.notifyNewBlockedNodes.
type ResourceManagerBlocklistListener interface {
	NotifyNewBlockedNodes(ctx context.Context, rm jobgraph.ResourceManagerID, nodes []BlockedNode) error
}
