package slotpool

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/mainloop"
	"github.com/jobgraph/jobgraph/rpc"
)

// onLoop runs fn on the loop and waits for it; everything the pool touches is read there.
func onLoop(t *testing.T, loop *mainloop.Loop, fn func()) {
	t.Helper()
	require.NoError(t, loop.Call(t.Context(), func() error { fn(); return nil }))
}

// A pool on a real main loop, in virtual time: a request nobody offers a slot for fails after
// exactly its timeout, and its requirement is withdrawn.
func TestSlotRequestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loop := mainloop.New("jobmaster")
		defer loop.Close()
		start := time.Now()
		rec := &recorder{}
		var pool *Pool
		var req *SlotRequest
		var failedAt time.Time
		onLoop(t, loop, func() {
			var err error
			pool, err = New(rec.config(loop, nil))
			require.NoError(t, err)
			req, err = pool.RequestSlot(NewSlotRequestID(), p1, 100*time.Millisecond)
			require.NoError(t, err)
			req.OnDone(func(AllocatedSlot, error) { failedAt = time.Now() })
		})

		time.Sleep(99 * time.Millisecond)
		synctest.Wait()
		onLoop(t, loop, func() {
			assert.False(t, req.Done())
			assert.Equal(t, 1, pool.NumPendingRequests())
			assert.Equal(t, reqs(p1, 1), pool.Requirements())
		})

		time.Sleep(time.Millisecond)
		synctest.Wait()
		onLoop(t, loop, func() {
			require.True(t, req.Done())
			assert.Equal(t, 100*time.Millisecond, failedAt.Sub(start))
			_, err := req.Result()
			require.ErrorIs(t, err, ErrNoResourceAvailable)
			assert.ErrorContains(t, err, "could not allocate the required slots within the slot request timeout of 100ms")
			assert.Equal(t, 0, pool.NumPendingRequests())
			assert.Empty(t, pool.Requirements())
			assert.Equal(t, [][]rpc.ResourceRequirement{reqs(p1, 1), {}}, rec.declared)

			// The slot that comes too late is not needed.
			assert.Empty(t, pool.OfferSlots(te1, []rpc.SlotOffer{offer(0, p1)}))
			pool.Close()
		})
	})
}

// A free slot nobody needs goes back to its TaskExecutor after exactly slot.idle.timeout (50 s);
// an allocated one stays.
func TestIdleSlotTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loop := mainloop.New("jobmaster")
		defer loop.Close()
		rec := &recorder{}
		var pool *Pool
		var returnedAt time.Time
		r1, r2 := NewSlotRequestID(), NewSlotRequestID()
		o1, o2 := offer(0, p1), offer(1, p1)
		onLoop(t, loop, func() {
			var err error
			cfg := rec.config(loop, nil)
			onReturn := cfg.OnReturnSlot
			cfg.OnReturnSlot = func(s AllocatedSlot, cause error) { returnedAt = time.Now(); onReturn(s, cause) }
			pool, err = New(cfg)
			require.NoError(t, err)
			for _, id := range []SlotRequestID{r1, r2} {
				_, err = pool.RequestSlot(id, p1, 0)
				require.NoError(t, err)
			}
			require.Len(t, pool.OfferSlots(te1, []rpc.SlotOffer{o1, o2}), 2)
			require.Equal(t, 2, pool.NumAllocatedSlots())
		})

		time.Sleep(10 * time.Second)
		freedAt := time.Now()
		onLoop(t, loop, func() {
			require.True(t, pool.CancelRequest(r1, nil)) // o1 is free from now on
			assert.Equal(t, 1, pool.NumFreeSlots())
		})

		time.Sleep(49 * time.Second)
		synctest.Wait()
		onLoop(t, loop, func() {
			assert.Empty(t, rec.returned)
			assert.Equal(t, 1, pool.NumFreeSlots())
		})

		time.Sleep(time.Second)
		synctest.Wait()
		onLoop(t, loop, func() {
			require.Len(t, rec.returned, 1)
			assert.Equal(t, slotOf(te1, o1, p1, false), rec.returned[0].slot)
			assert.ErrorIs(t, rec.returned[0].cause, ErrIdleSlot)
			assert.Equal(t, 50*time.Second, returnedAt.Sub(freedAt))
			assert.Equal(t, 0, pool.NumFreeSlots())
			assert.Equal(t, []AllocatedSlot{slotOf(te1, o2, p1, true)}, pool.Slots())
			assert.Equal(t, reqs(p1, 1), pool.Requirements())
		})

		// The allocated slot stays however long it is held.
		time.Sleep(time.Hour)
		synctest.Wait()
		onLoop(t, loop, func() {
			assert.Len(t, rec.returned, 1)
			assert.Equal(t, 1, pool.NumAllocatedSlots())
			pool.Close()
		})
	})
}

// The defaults are Flink's.
func TestDefaults(t *testing.T) {
	assert.Equal(t, 300*time.Second, DefaultSlotRequestTimeout)
	assert.Equal(t, 50*time.Second, DefaultIdleSlotTimeout)
	p, err := New(Config{Timers: newFakeTimers()})
	require.NoError(t, err)
	assert.Equal(t, DefaultSlotRequestTimeout, p.reqTimeout)
	assert.Equal(t, DefaultIdleSlotTimeout, p.idleTimeout)
	// Without hooks nothing breaks.
	require.NoError(t, p.IncreaseRequirements(jobgraph.UnknownResourceProfile, 1))
	assert.Len(t, p.OfferSlots(te1, []rpc.SlotOffer{offer(0, p2)}), 1)
	assert.Len(t, p.ReleaseSlots(te1, nil), 1)
}
