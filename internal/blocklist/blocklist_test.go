package blocklist

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph/rpc"
)

func TestTrackerAddMergeAndExpire(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var tr Tracker
	assert.False(t, tr.IsBlocked("te-1"))
	_, ok := tr.NextExpiry()
	assert.False(t, ok)

	got := tr.Add([]rpc.BlockedNode{{NodeID: "te-2", Cause: "b", EndTimestamp: t0.Add(time.Minute)}, {NodeID: "te-1", Cause: "a", EndTimestamp: t0.Add(2 * time.Minute)}})
	assert.Equal(t, []rpc.BlockedNode{
		{NodeID: "te-1", Cause: "a", EndTimestamp: t0.Add(2 * time.Minute), Action: rpc.BlockActionMarkBlocked},
		{NodeID: "te-2", Cause: "b", EndTimestamp: t0.Add(time.Minute), Action: rpc.BlockActionMarkBlocked},
	}, got, "added, sorted, the default action filled in")

	assert.Empty(t, tr.Add([]rpc.BlockedNode{{NodeID: "te-1", Cause: "earlier", EndTimestamp: t0.Add(time.Minute)}}), "an earlier end changes nothing")
	assert.Equal(t, []rpc.BlockedNode{{NodeID: "te-2", Cause: "longer", EndTimestamp: t0.Add(3 * time.Minute), Action: rpc.BlockActionMarkBlocked}},
		tr.Add([]rpc.BlockedNode{{NodeID: "te-2", Cause: "longer", EndTimestamp: t0.Add(3 * time.Minute)}}), "a later end replaces the entry")
	assert.Equal(t, []rpc.BlockedNode{{NodeID: "te-1", Cause: "a", EndTimestamp: t0.Add(2 * time.Minute), Action: rpc.BlockActionMarkBlockedAndEvacuateTasks}},
		tr.Add([]rpc.BlockedNode{{NodeID: "te-1", Cause: "evacuate", EndTimestamp: t0.Add(time.Second), Action: rpc.BlockActionMarkBlockedAndEvacuateTasks}}),
		"an evacuation is news even with an earlier end, which the entry keeps")
	assert.Empty(t, tr.Add([]rpc.BlockedNode{{NodeID: "te-1", EndTimestamp: t0.Add(time.Second)}}), "a plain block after an evacuation changes nothing")

	next, ok := tr.NextExpiry()
	assert.True(t, ok)
	assert.Equal(t, t0.Add(2*time.Minute), next)
	assert.Empty(t, tr.RemoveExpired(t0.Add(2*time.Minute-time.Nanosecond)))
	assert.Equal(t, []rpc.BlockedNode{{NodeID: "te-1", Cause: "a", EndTimestamp: t0.Add(2 * time.Minute), Action: rpc.BlockActionMarkBlockedAndEvacuateTasks}},
		tr.RemoveExpired(t0.Add(2*time.Minute)), "expired at its end timestamp exactly")
	assert.False(t, tr.IsBlocked("te-1"))
	assert.True(t, tr.IsBlocked("te-2"))
	assert.Len(t, tr.All(), 1)
}
