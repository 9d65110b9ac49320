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

// The counter keeps exactly the positive counts, below and above smallCounter profiles (where it
// adds an index) and back, and looks a profile up without allocating.
func TestCounter(t *testing.T) {
	var c counter
	prof := func(i int) jobgraph.ResourceProfile { return jobgraph.ResourceProfile{CPUCores: float64(i)} }
	want := map[jobgraph.ResourceProfile]int{}
	check := func() {
		t.Helper()
		require.Equal(t, len(want), c.len())
		for p, n := range want {
			require.Equal(t, n, c.get(p), "%v", p)
		}
		for _, l := range c.lines {
			require.Equal(t, want[l.profile], l.n)
		}
		if c.index != nil {
			for i, l := range c.lines {
				require.Equal(t, i, c.index[l.profile])
			}
		}
		var reqs []rpc.ResourceRequirement
		for _, p := range c.sortedKeys() {
			reqs = append(reqs, rpc.ResourceRequirement{Profile: p, Count: want[p]})
		}
		require.True(t, c.equal(reqs))
		require.Equal(t, len(reqs) == 0, c.equal(nil))
	}
	add := func(i, n int) {
		c.add(prof(i), n)
		if v := want[prof(i)] + n; v > 0 {
			want[prof(i)] = v
		} else {
			delete(want, prof(i))
		}
		check()
	}
	add(1, 2)
	add(1, -1)
	add(2, -3) // nothing to take: stays absent
	add(1, -5)
	for i := range 2 * smallCounter {
		add(i, i+1)
	}
	require.NotNil(t, c.index)
	for i := range 2 * smallCounter {
		add((i*5)%(2*smallCounter), -100) // removals in a mixed order
	}
	require.Nil(t, c.index)
	require.Equal(t, 0, c.len())
	add(3, 1)
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() { c.add(prof(3), 1); c.add(prof(3), -1); _ = c.get(prof(4)) }))
	assert.Equal(t, []rpc.ResourceRequirement{{Profile: prof(3), Count: 1}}, c.requirements())
}
