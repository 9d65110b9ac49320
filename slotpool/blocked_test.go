package slotpool

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// An allocated slot of a TaskExecutor that is blocked by the time it is given back leaves the
// pool (OnReturnSlot with the blocklist's cause) instead of becoming free for a new allocation;
// a slot of a TaskExecutor that is not blocked becomes free as before. Flink:
// BlocklistDeclarativeSlotPool.freeReservedSlot.
func TestGivenBackSlotOfABlockedTaskExecutorLeavesThePool(t *testing.T) {
	ft := newFakeTimers()
	rec := &recorder{}
	blocked := map[jobgraph.ResourceID]bool{}
	errBlocked := errors.New("te-1 is blocked")
	cfg := rec.config(ft, ft.Now)
	cfg.BlockedTaskExecutor = func(id jobgraph.ResourceID) error {
		if blocked[id] {
			return errBlocked
		}
		return nil
	}
	p, err := New(cfg)
	require.NoError(t, err)
	r1, err := p.RequestSlot(NewSlotRequestID(), p1, 0)
	require.NoError(t, err)
	r2, err := p.RequestSlot(NewSlotRequestID(), p1, 0)
	require.NoError(t, err)
	o1, o2 := offer(0, p1), offer(0, p1)
	require.Equal(t, []rpc.SlotOffer{o1}, p.OfferSlots(te1, []rpc.SlotOffer{o1}))
	require.Equal(t, []rpc.SlotOffer{o2}, p.OfferSlots(te2, []rpc.SlotOffer{o2}))
	require.True(t, r1.Done())
	require.True(t, r2.Done())
	rec.takeReturned()
	rec.takeNewSlots()

	blocked[te1] = true
	cause := errors.New("task finished")
	require.True(t, p.CancelRequest(r1.ID(), cause))
	require.True(t, p.CancelRequest(r2.ID(), cause))
	_, inPool := p.Slot(o1.AllocationID)
	assert.False(t, inPool, "the blocked TaskExecutor's slot left the pool")
	returned := rec.takeReturned()
	require.Len(t, returned, 1)
	assert.Equal(t, o1.AllocationID, returned[0].slot.AllocationID)
	assert.ErrorIs(t, returned[0].cause, errBlocked)
	free, inPool := p.Slot(o2.AllocationID)
	assert.True(t, inPool)
	assert.False(t, free.Allocated, "the other TaskExecutor's slot is free again")
	assert.Equal(t, 1, p.NumFreeSlots())
}
