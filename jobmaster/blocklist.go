package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/blocklist"
	"github.com/jobgraph/jobgraph/rpc"
)

// Defaults of the blocklist options (see Config).
const (
	// DefaultBlocklistItemTimeout: cluster.resource-blocklist.item.timeout, FLIP-224's 1 h.
	DefaultBlocklistItemTimeout = time.Hour
	// DefaultBlocklistTaskFailureInterval: cluster.resource-blocklist.task-failure.failure-rate-interval, 1 min.
	DefaultBlocklistTaskFailureInterval = time.Minute
)

// ErrTaskExecutorBlocked is matched (errors.Is) by the cause the JobMaster releases its slots on
// a blocked TaskExecutor with: free slots for every block, the slots in use too (their tasks fail
// with it and restart elsewhere) for rpc.BlockActionMarkBlockedAndEvacuateTasks. The message
// names the TaskExecutor and the block's cause.
var ErrTaskExecutorBlocked = errors.New("TaskExecutor is blocked")

func init() { jobgraph.RegisterErrorCode("jobmaster.task-executor-blocked", ErrTaskExecutorBlocked) }

var _ rpc.JobMasterBlocklistListener = (*DefaultJobMaster)(nil)

// jobBlocklist is the JobMaster's side of the blocklist. Loop-owned.
type jobBlocklist struct {
	blocked       blocklist.Tracker
	unblockAt     time.Time
	cancelUnblock func() bool
	// failures holds, per TaskExecutor, when the job's tasks failed there within the rule's
	// window (BlocklistMaxTaskFailuresPerInterval).
	failures map[jobgraph.ResourceID][]time.Time
}

// NotifyNewBlockedNodes implements rpc.JobMasterBlocklistListener: the ResourceManager blocked
// TaskExecutors. For each entry new or changed here, the JobMaster gives back its free slots on
// that TaskExecutor and, for rpc.BlockActionMarkBlockedAndEvacuateTasks, releases the slots in
// use there too, so their tasks fail with ErrTaskExecutorBlocked and the failover strategy
// restarts them (one restart for the tasks a region had there); until the entry's end it accepts
// no slot that TaskExecutor offers. Errors: a *rpc.FencingError for a stale token, ErrClosed,
// ctx's. Flink: JobMaster.notifyNewBlockedNodes with JobMasterBlocklistContext.blockResources
// (which releases free slots only: FLIP-224's evacuation is not built in Flink).
func (jm *DefaultJobMaster) NotifyNewBlockedNodes(ctx context.Context, token jobgraph.JobMasterID, nodes []rpc.BlockedNode) error {
	return jm.fenced(ctx, token, func() error {
		jm.blockNodes(nodes)
		return nil
	})
}

// blockNodes adds nodes to the JobMaster's blocklist and acts on those new or changed. On the loop.
func (jm *DefaultJobMaster) blockNodes(nodes []rpc.BlockedNode) []rpc.BlockedNode {
	if jm.pool == nil || jm.closed {
		return nil
	}
	var valid []rpc.BlockedNode
	for _, n := range nodes {
		if n.NodeID != "" && n.Action.Valid() {
			valid = append(valid, n)
		}
	}
	changed := jm.bl.blocked.Add(valid)
	for _, n := range changed {
		cause := jm.blockedCause(n.NodeID)
		if cause == nil {
			continue // it ended already
		}
		if n.Action == rpc.BlockActionMarkBlockedAndEvacuateTasks {
			released := jm.pool.ReleaseSlots(n.NodeID, cause)
			jm.log.Info("TaskExecutor blocked; evacuating its tasks", "taskExecutor", n.NodeID, "slots", len(released), "until", n.EndTimestamp)
			continue
		}
		free := 0
		for _, s := range jm.pool.TaskExecutorSlots(n.NodeID) {
			if !s.Allocated {
				_ = jm.pool.ReleaseSlot(s.AllocationID, cause)
				free++
			}
		}
		jm.log.Info("TaskExecutor blocked; its running tasks stay", "taskExecutor", n.NodeID, "freeSlotsReleased", free, "until", n.EndTimestamp)
	}
	if len(changed) > 0 {
		jm.scheduleUnblock()
	}
	return changed
}

// blockedCause is the slot pool's Config.BlockedTaskExecutor: ErrTaskExecutorBlocked naming id
// while it is blocked, else nil. On the loop.
//
// The entry's end is compared with the clock, not left to the timer that removes it: the
// ResourceManager's timer for the same instant may fire first and have the TaskExecutor offer a
// slot before this JobMaster's timer ran.
func (jm *DefaultJobMaster) blockedCause(id jobgraph.ResourceID) error {
	n, ok := jm.bl.blocked.Entry(id)
	if !ok || !n.EndTimestamp.After(time.Now()) {
		return nil
	}
	return fmt.Errorf("%w: %s (%s)", ErrTaskExecutorBlocked, n.NodeID, n.Cause)
}

// scheduleUnblock arms the timer that removes the earliest entry at its end. On the loop.
func (jm *DefaultJobMaster) scheduleUnblock() {
	next, ok := jm.bl.blocked.NextExpiry()
	if !ok || (jm.bl.cancelUnblock != nil && jm.bl.unblockAt.Equal(next)) {
		return
	}
	if jm.bl.cancelUnblock != nil {
		jm.bl.cancelUnblock()
	}
	jm.bl.unblockAt = next
	jm.bl.cancelUnblock = jm.loop.Schedule(time.Until(next), func() {
		jm.bl.cancelUnblock = nil
		jm.bl.blocked.RemoveExpired(time.Now())
		jm.scheduleUnblock()
	})
}

// taskFailedOn counts a task failure the TaskExecutor host reported, for the task-failure rule
// (Config.BlocklistMaxTaskFailuresPerInterval): once the job's tasks failed there that many
// times within the window, host is blocked for cluster.resource-blocklist.item.timeout, here and
// at the ResourceManager. On the loop.
func (jm *DefaultJobMaster) taskFailedOn(host jobgraph.ResourceID) {
	limit := jm.cfg.BlocklistMaxTaskFailuresPerInterval
	if limit <= 0 || host == "" {
		return
	}
	if jm.bl.failures == nil {
		jm.bl.failures = map[jobgraph.ResourceID][]time.Time{}
	}
	now := time.Now()
	window := jm.cfg.BlocklistTaskFailureInterval
	recent := jm.bl.failures[host][:0]
	for _, t := range jm.bl.failures[host] {
		if now.Sub(t) < window {
			recent = append(recent, t)
		}
	}
	recent = append(recent, now)
	if len(recent) < limit {
		jm.bl.failures[host] = recent
		return
	}
	delete(jm.bl.failures, host)
	node := rpc.BlockedNode{
		NodeID:       host,
		Cause:        fmt.Sprintf("%d task failures of job %s within %v (cluster.resource-blocklist.task-failure.max-failures-per-interval)", len(recent), jm.job, window),
		EndTimestamp: now.Add(jm.cfg.BlocklistItemTimeout),
		Action:       jm.cfg.BlocklistAction,
	}
	jm.log.Warn("blocking a TaskExecutor: too many task failures there", "taskExecutor", host, "failures", len(recent), "within", window)
	changed := jm.blockNodes([]rpc.BlockedNode{node})
	if rm, rmID := jm.rm, jm.rmID; rm != nil && len(changed) > 0 {
		if l, ok := rm.(rpc.ResourceManagerBlocklistListener); ok {
			jm.send(func(ctx context.Context) error { return l.NotifyNewBlockedNodes(ctx, rmID, changed) },
				func(err error) {
					jm.log.Warn("telling the ResourceManager of a blocked TaskExecutor failed", "taskExecutor", host, "err", err)
				})
		}
	}
}
