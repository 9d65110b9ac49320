package jobmaster_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// The JobMaster's side of the blocklist (rpc.JobMasterBlocklistListener): a stale token changes
// nothing; a MARK_BLOCKED TaskExecutor keeps its running task, and its slot offers are declined
// until the block ends (at its end instant); MARK_BLOCKED_AND_EVACUATE_TASKS gives the slots in
// use back, and their tasks fail with ErrTaskExecutorBlocked.
func TestNotifyNewBlockedNodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newHBEnv(t, jobmaster.Config{HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second})
		l, ok := e.gw.(rpc.JobMasterBlocklistListener)
		require.True(t, ok, "the DefaultJobMaster hears blocks")
		te1, te2 := e.addTE("te-1"), e.addTE("te-2")
		block := []rpc.BlockedNode{{NodeID: "te-1", Cause: "test", EndTimestamp: time.Now().Add(10 * time.Second)}}
		require.ErrorIs(t, l.NotifyNewBlockedNodes(e.ctx, jobgraph.NewJobMasterID(), block), rpc.ErrFencingTokenMismatch)
		e.offer(te1, 0, "A") // not blocked: the stale notification changed nothing
		require.NoError(t, l.NotifyNewBlockedNodes(e.ctx, e.token, block))
		synctest.Wait()
		assert.Empty(t, te1.snapshot().frees, "MARK_BLOCKED: the slot in use stays")

		offer := rpc.SlotOffer{AllocationID: jobgraph.NewAllocationID(), SlotIndex: 1}
		accepted, err := e.gw.OfferSlots(e.ctx, e.token, te1.id, []rpc.SlotOffer{offer})
		require.NoError(t, err)
		assert.Empty(t, accepted, "a blocked TaskExecutor's offers are declined")
		advance(10*time.Second - time.Nanosecond)
		accepted, err = e.gw.OfferSlots(e.ctx, e.token, te1.id, []rpc.SlotOffer{offer})
		require.NoError(t, err)
		assert.Empty(t, accepted, "still blocked 1 ns before its end")
		advance(time.Nanosecond)
		accepted, err = e.gw.OfferSlots(e.ctx, e.token, te1.id, []rpc.SlotOffer{offer})
		require.NoError(t, err)
		assert.Equal(t, []rpc.SlotOffer{offer}, accepted, "the block ended at its end instant: src (2/2)'s slot is taken")
		e.names[offer.AllocationID] = "A2"
		te1.set(func(f *hbTE) { f.held = append(f.held, offer.AllocationID) })
		synctest.Wait()
		assert.Equal(t, []string{"src (1/2) @ A", "src (2/2) @ A2"}, te1.deployed(e.names))

		require.NoError(t, l.NotifyNewBlockedNodes(e.ctx, e.token, []rpc.BlockedNode{{NodeID: "te-1", Cause: "evacuate", EndTimestamp: time.Now().Add(time.Minute),
			Action: rpc.BlockActionMarkBlockedAndEvacuateTasks}}))
		synctest.Wait()
		var freed []string
		for _, f := range te1.snapshot().frees {
			freed = append(freed, e.names[f.Allocation])
		}
		assert.ElementsMatch(t, []string{"A", "A2"}, freed, "MARK_BLOCKED_AND_EVACUATE_TASKS gives the slots in use back")
		assert.Equal(t, jobgraph.JobStatusFailed, e.status(), "their tasks failed (no restart strategy)")
		require.ErrorIs(t, e.jm.Result().Err, jobmaster.ErrTaskExecutorBlocked)
		assert.Empty(t, te2.snapshot().frees)
	})
}
