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

// A slot freed, taken again and freed again goes back after slot.idle.timeout counted from the
// start of its last free period, not its first: the timer armed in the first period fires while
// the slot is taken, or finds it free for less than the timeout and looks again when it is due.
func TestIdleTimeoutCountsFromTheLastFreePeriod(t *testing.T) {
	p, ft, rec := newTestPool(t)
	id := NewSlotRequestID()
	_, err := p.RequestSlot(id, p1, 0)
	require.NoError(t, err)
	o := offer(0, p1)
	require.Len(t, p.OfferSlots(te1, []rpc.SlotOffer{o}), 1)
	start := ft.Now()

	require.True(t, p.CancelRequest(id, nil)) // free at 0 s
	ft.Advance(10 * time.Second)
	id = NewSlotRequestID()
	r, err := p.RequestSlot(id, p1, 0) // taken at 10 s
	require.NoError(t, err)
	require.True(t, r.Done())
	ft.Advance(10 * time.Second)
	require.True(t, p.CancelRequest(id, nil)) // free again at 20 s

	ft.Advance(49 * time.Second) // 69 s: 49 s free
	assert.Empty(t, rec.takeReturned(), "returned %v after the first free period's deadline", ft.Now().Sub(start))
	assert.Equal(t, 1, p.NumFreeSlots())
	assert.Equal(t, 1, ft.Pending())

	ft.Advance(time.Second) // 70 s: 50 s free
	got := rec.takeReturned()
	require.Len(t, got, 1)
	assert.Equal(t, slotOf(te1, o, p1, false), got[0].slot)
	assert.ErrorIs(t, got[0].cause, ErrIdleSlot)
	assert.Equal(t, 0, p.NumFreeSlots())
	assert.Equal(t, 0, ft.Pending())
}

// A slot taken again before its idle timeout and freed later keeps the timer armed in its first
// free period when that one is due sooner: freeing and re-requesting a slot schedules no timer.
func TestRefreeingASlotArmsNoNewTimer(t *testing.T) {
	p, ft, _ := newTestPool(t)
	id := NewSlotRequestID()
	_, err := p.RequestSlot(id, p1, 0)
	require.NoError(t, err)
	require.Len(t, p.OfferSlots(te1, []rpc.SlotOffer{offer(0, p1)}), 1)
	require.True(t, p.CancelRequest(id, nil))
	require.Equal(t, 1, ft.Pending())
	for range 3 {
		id = NewSlotRequestID()
		_, err = p.RequestSlot(id, p1, 0)
		require.NoError(t, err)
		require.True(t, p.CancelRequest(id, nil))
		assert.Equal(t, 1, ft.Pending(), "one idle timer for the slot")
	}
	// Releasing the slot cancels it.
	p.Close()
	assert.Equal(t, 0, ft.Pending())
}
