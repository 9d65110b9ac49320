package resourcemanager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/blocklist"
	"github.com/jobgraph/jobgraph/rpc"
)

// ErrInvalidBlockedNode is matched by the error of AddNewBlockedNodes and NotifyNewBlockedNodes
// for an entry without a NodeID, with an unknown action, or with an EndTimestamp not after now;
// the message names the entry, and none of the call's entries is added.
var ErrInvalidBlockedNode = errors.New("resourcemanager: invalid blocked node")

func init() {
	jobgraph.RegisterErrorCode("resourcemanager.invalid-blocked-node", ErrInvalidBlockedNode)
}

var _ rpc.ResourceManagerBlocklistListener = (*ResourceManager)(nil)

// AddNewBlockedNodes adds TaskExecutors to the cluster's blocklist (an entry for a TaskExecutor
// already blocked is merged: the later end wins, and an evacuation asked for once is kept). While
// blocked, a TaskExecutor's free slots are matched with no job's requirements (its slots in use
// are left alone), and at its EndTimestamp exactly the entry is removed and the requirements that
// waited are matched again. Every registered JobMaster is told of the entries that are new or
// changed (rpc.JobMasterBlocklistListener, off the loop), and so is a JobMaster registering
// later, of all entries: it gives back its free slots there and, for
// rpc.BlockActionMarkBlockedAndEvacuateTasks, releases its slots there so that their tasks
// restart elsewhere. Unfenced: for the cluster's own Dispatcher
// (dispatcher.BlocklistOperations). Errors: ErrInvalidBlockedNode (nothing added), ErrNotRunning,
// ha.ErrNotLeader, ErrClosed, ctx's. Safe for concurrent use. Flink:
// DefaultBlocklistHandler.addNewBlockedNodes on the ResourceManager, with
// ResourceManagerBlocklistContext.blockResources; where we differ: Flink removes expired
// entries every cluster.resource-blocklist.item.timeout-check-interval, we at each entry's end.
func (rm *ResourceManager) AddNewBlockedNodes(ctx context.Context, nodes []rpc.BlockedNode) error {
	return rm.call(ctx, func() error {
		if err := rm.checkRunning(); err != nil {
			return err
		}
		return rm.addBlockedNodes(nodes)
	})
}

// NotifyNewBlockedNodes implements rpc.ResourceManagerBlocklistListener: AddNewBlockedNodes of a
// JobMaster whose blocklist rule fired, fenced by rm (a *rpc.FencingError for another
// ResourceManagerID).
func (rm *ResourceManager) NotifyNewBlockedNodes(ctx context.Context, token jobgraph.ResourceManagerID, nodes []rpc.BlockedNode) error {
	return rm.call(ctx, func() error {
		if err := rm.fenced(token); err != nil {
			return err
		}
		return rm.addBlockedNodes(nodes)
	})
}

// BlockedNodes returns the cluster's blocklist, sorted by NodeID. Flink:
// BlocklistHandler.getAllBlockedNodeIds.
func (rm *ResourceManager) BlockedNodes(ctx context.Context) ([]rpc.BlockedNode, error) {
	return submit(ctx, rm, func() ([]rpc.BlockedNode, error) { return rm.blocked.All(), nil })
}

// addBlockedNodes is AddNewBlockedNodes on the loop.
func (rm *ResourceManager) addBlockedNodes(nodes []rpc.BlockedNode) error {
	now := time.Now()
	for _, n := range nodes {
		switch {
		case n.NodeID == "":
			return fmt.Errorf("%w: an entry has no NodeID", ErrInvalidBlockedNode)
		case !n.Action.Valid():
			return fmt.Errorf("%w: TaskExecutor %s: unknown action %q; want %q or %q", ErrInvalidBlockedNode, n.NodeID, n.Action,
				rpc.BlockActionMarkBlocked, rpc.BlockActionMarkBlockedAndEvacuateTasks)
		case !n.EndTimestamp.After(now):
			return fmt.Errorf("%w: TaskExecutor %s: end %v is not after now", ErrInvalidBlockedNode, n.NodeID, n.EndTimestamp)
		}
	}
	changed := rm.blocked.Add(nodes)
	if len(changed) == 0 {
		return nil
	}
	for _, n := range changed {
		rm.log.Info("TaskExecutor blocked", "taskExecutor", n.NodeID, "until", n.EndTimestamp, "action", string(n.Action), "cause", n.Cause)
	}
	for _, reg := range rm.jobMasters {
		rm.tellJobMaster(reg, changed)
	}
	rm.scheduleUnblock()
	return nil
}

// tellJobMaster sends nodes to reg's JobMaster, if its gateway hears them. On the loop.
func (rm *ResourceManager) tellJobMaster(reg *jobMasterRegistration, nodes []rpc.BlockedNode) {
	if len(nodes) == 0 {
		return
	}
	token := reg.token
	rm.callJobMaster(reg, func(ctx context.Context, gw rpc.JobMasterGateway) error {
		l, ok := gw.(rpc.JobMasterBlocklistListener)
		if !ok {
			return nil
		}
		return l.NotifyNewBlockedNodes(ctx, token, nodes)
	}, func(_ rpc.JobMasterGateway, err error) {
		if err != nil {
			rm.log.Debug("telling a JobMaster of blocked TaskExecutors failed", "job", reg.job, "err", err)
		}
	})
}

// scheduleUnblock arms the timer for the earliest end in the blocklist. On the loop.
func (rm *ResourceManager) scheduleUnblock() {
	next, ok := rm.blocked.NextExpiry()
	if !ok || (rm.cancelUnblock != nil && rm.unblockAt.Equal(next)) {
		return
	}
	if rm.cancelUnblock != nil {
		rm.cancelUnblock()
	}
	rm.unblockAt = next
	rm.cancelUnblock = rm.loop.Schedule(time.Until(next), func() {
		rm.cancelUnblock = nil
		removed := rm.blocked.RemoveExpired(time.Now())
		for _, n := range removed {
			rm.log.Info("TaskExecutor no longer blocked", "taskExecutor", n.NodeID)
		}
		if len(removed) > 0 {
			rm.sm.CheckResourceRequirements() // Flink: ResourceManagerBlocklistContext.unblockResources
		}
		rm.scheduleUnblock()
	})
}

// clearBlocklist forgets every entry (leadership lost: the next session starts afresh, as
// Flink's new ResourceManager does). On the loop.
func (rm *ResourceManager) clearBlocklist() {
	if rm.cancelUnblock != nil {
		rm.cancelUnblock()
		rm.cancelUnblock = nil
	}
	rm.blocked = blocklist.Tracker{}
}
