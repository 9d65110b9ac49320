// Package blocklist is the blocklist bookkeeping the ResourceManager and every JobMaster keep on
// their main loops: which TaskExecutors are blocked until when. A plain struct, no clock of its
// own. Flink: org.apache.flink.runtime.blocklist.DefaultBlocklistTracker.
package blocklist

import (
	"slices"
	"strings"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// Tracker holds the blocked nodes by NodeID. The zero value is empty and usable.
type Tracker struct {
	nodes map[jobgraph.ResourceID]rpc.BlockedNode
}

// Add adds nodes, or merges each with the entry of its NodeID: the later EndTimestamp wins, with
// its cause and action, except that an evacuation asked for once is kept (its tasks have been
// moved). It returns the entries that were added or changed, sorted by NodeID: those to act on.
// Flink: DefaultBlocklistTracker.addNewBlockedNodes.
func (t *Tracker) Add(nodes []rpc.BlockedNode) []rpc.BlockedNode {
	if t.nodes == nil {
		t.nodes = map[jobgraph.ResourceID]rpc.BlockedNode{}
	}
	var changed []rpc.BlockedNode
	for _, n := range nodes {
		if n.Action == "" {
			n.Action = rpc.BlockActionMarkBlocked
		}
		if old, ok := t.nodes[n.NodeID]; ok {
			evacuate := n.Action == rpc.BlockActionMarkBlockedAndEvacuateTasks && old.Action != n.Action
			later := n.EndTimestamp.After(old.EndTimestamp)
			if !evacuate && !later {
				continue // nothing new
			}
			if !later {
				n.EndTimestamp, n.Cause = old.EndTimestamp, old.Cause
			}
			if old.Action == rpc.BlockActionMarkBlockedAndEvacuateTasks {
				n.Action = old.Action
			}
		}
		t.nodes[n.NodeID] = n
		changed = append(changed, n)
	}
	slices.SortFunc(changed, func(a, b rpc.BlockedNode) int { return strings.Compare(string(a.NodeID), string(b.NodeID)) })
	return changed
}

// IsBlocked reports whether id is blocked (its entry has not been removed by RemoveExpired).
func (t *Tracker) IsBlocked(id jobgraph.ResourceID) bool {
	_, ok := t.nodes[id]
	return ok
}

// Entry returns id's entry, if it is blocked.
func (t *Tracker) Entry(id jobgraph.ResourceID) (rpc.BlockedNode, bool) {
	n, ok := t.nodes[id]
	return n, ok
}

// RemoveExpired removes and returns the entries whose EndTimestamp is not after now, sorted by
// NodeID. Flink: DefaultBlocklistTracker.removeTimeoutNodes.
func (t *Tracker) RemoveExpired(now time.Time) []rpc.BlockedNode {
	var out []rpc.BlockedNode
	for id, n := range t.nodes {
		if !n.EndTimestamp.After(now) {
			out = append(out, n)
			delete(t.nodes, id)
		}
	}
	slices.SortFunc(out, func(a, b rpc.BlockedNode) int { return strings.Compare(string(a.NodeID), string(b.NodeID)) })
	return out
}

// NextExpiry returns the earliest EndTimestamp, false when nothing is blocked.
func (t *Tracker) NextExpiry() (time.Time, bool) {
	var next time.Time
	for _, n := range t.nodes {
		if next.IsZero() || n.EndTimestamp.Before(next) {
			next = n.EndTimestamp
		}
	}
	return next, !next.IsZero()
}

// All returns every entry, sorted by NodeID.
func (t *Tracker) All() []rpc.BlockedNode {
	out := make([]rpc.BlockedNode, 0, len(t.nodes))
	for _, n := range t.nodes {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b rpc.BlockedNode) int { return strings.Compare(string(a.NodeID), string(b.NodeID)) })
	return out
}
