package slotpool

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// What a restart costs the pool per slot: the scheduler gives an allocated slot back
// (CancelRequest, releasing its payload) and asks for one again inside a Batch (RequestSlot
// served by the free slot, OnDone, AssignPayload), with requirements declared to a listener and
// no OnNewSlots (the JobMaster's configuration). What is left is the request itself (the
// SlotRequest) and the requirement list handed to OnRequirementsChanged when the count goes up
// to 1 again (the empty list of the count 0 allocates nothing).
func TestRestartCycleAllocations(t *testing.T) {
	ft := newFakeTimers()
	rec := &recorder{}
	cfg := rec.config(ft, ft.Now)
	cfg.OnNewSlots = nil
	p, err := New(cfg)
	require.NoError(t, err)
	var ids [2]SlotRequestID
	ids[0], ids[1] = NewSlotRequestID(), NewSlotRequestID()
	_, err = p.RequestSlot(ids[0], p1, 0)
	require.NoError(t, err)
	require.Len(t, p.OfferSlots(te1, []rpc.SlotOffer{offer(0, p1)}), 1)
	var pl payloadRecorder
	var got jobgraph.AllocationID
	onDone := func(s AllocatedSlot, err error) {
		require.NoError(t, err)
		got = s.AllocationID
		require.NoError(t, p.AssignPayload(s.AllocationID, &pl))
	}
	r, _ := p.Request(ids[0])
	r.OnDone(onDone)
	cur := 0
	allocs := testing.AllocsPerRun(100, func() {
		require.True(t, p.CancelRequest(ids[cur], nil))
		cur = 1 - cur
		p.Batch(func() {
			r, err := p.RequestSlot(ids[cur], p1, 0)
			require.NoError(t, err)
			r.OnDone(onDone)
		})
		rec.declared = rec.declared[:0]
	})
	assert.False(t, got.IsZero())
	assert.Equal(t, 1, p.NumAllocatedSlots())
	assert.Equal(t, 2.0, allocs, "allocations per give-back and re-request (15 before)")
	assert.Equal(t, 1, ft.Pending(), "one idle timer, armed when the slot was first given back")
	p.Close()
}
