package resourcemanager

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/manualtime"
	"github.com/jobgraph/jobgraph/rpc"
)

// newDelayedCore is a coreHarness whose SlotManager holds jobs back through clock with the given
// requirement-check delay (0: the default).
func newDelayedCore(t *testing.T, clock *manualtime.Timers, delay time.Duration) *coreHarness {
	h := &coreHarness{t: t}
	sm, err := NewSlotManagerWithConfig(SlotManagerConfig{
		Allocator:             SlotAllocatorFunc(func(r SlotRequest) { h.requests = append(h.requests, r) }),
		Logger:                discard,
		RequirementCheckDelay: delay,
		Timers:                clock,
		Now:                   clock.Now,
	})
	require.NoError(t, err)
	h.sm = sm
	return h
}

// decline frees the slot of req as a TaskExecutor does when the JobMaster declined its offer.
func (h *coreHarness) decline(req SlotRequest) {
	h.t.Helper()
	assert.False(h.t, h.sm.CompleteAllocation(req.Slot, req.Allocation, nil))
	require.True(h.t, h.sm.FreeSlot(req.Slot, req.Allocation))
}

// A job sent slot requests less than DefaultRequirementCheckDelay ago that lacks slots again (its
// offers were declined) is held back until the delay has passed, by one timer; other jobs, and
// the job itself once the delay has passed, are matched at once.
func TestSlotManagerHoldsBackAJobServedLessThanADelayAgo(t *testing.T) {
	clock := manualtime.New(time.Unix(0, 0))
	h := newDelayedCore(t, clock, 0)
	h.sm.RegisterTaskExecutor("te-1", report("te-1", cpu(1)))
	a, _ := h.job("jm-a")
	b, _ := h.job("jm-b")

	// a's first slot is requested at once; its offer is declined at once.
	require.NoError(t, h.sm.DeclareRequirements(a, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	got := h.take()
	require.Len(t, got, 1)
	assert.Equal(t, 0, clock.Pending(), "nothing held, no timer")
	h.decline(got[0])
	assert.Empty(t, h.take(), "a was served at 0 s: held back until 50 ms")
	assert.Equal(t, 1, clock.Pending())
	assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, h.sm.MissingResources(a))

	// b, never served, gets the free slot at once: a held job holds nobody else back.
	clock.Advance(10 * time.Millisecond)
	require.NoError(t, h.sm.DeclareRequirements(b, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	got = h.take()
	require.Len(t, got, 1)
	assert.Equal(t, b, got[0].Job)
	assert.Equal(t, sid("te-1", 0), got[0].Slot)

	// A second TaskExecutor at 20 ms: a is still held; at 50 ms it gets the slot.
	clock.Advance(10 * time.Millisecond)
	h.sm.RegisterTaskExecutor("te-2", report("te-2", cpu(1)))
	assert.Empty(t, h.take())
	clock.Advance(30*time.Millisecond - time.Nanosecond)
	assert.Empty(t, h.take())
	clock.Advance(time.Nanosecond)
	got = h.take()
	require.Len(t, got, 1)
	assert.Equal(t, a, got[0].Job)
	assert.Equal(t, sid("te-2", 0), got[0].Slot)
	assert.Equal(t, 0, clock.Pending())

	// Declined again at 60 ms: held until 100 ms (50 ms after it was served), one timer.
	clock.Advance(10 * time.Millisecond)
	h.decline(got[0])
	assert.Equal(t, 1, clock.Pending())
	clock.Advance(40*time.Millisecond - time.Nanosecond)
	assert.Empty(t, h.take())
	clock.Advance(time.Nanosecond)
	got = h.take()
	require.Len(t, got, 1)
	assert.Equal(t, a, got[0].Job)

	// Kept this time; freed a second later, long after a was last served: requested at once.
	assert.False(t, h.sm.CompleteAllocation(got[0].Slot, got[0].Allocation, nil))
	clock.Advance(time.Second)
	require.True(t, h.sm.FreeSlot(got[0].Slot, got[0].Allocation))
	got = h.take()
	require.Len(t, got, 1)
	assert.Equal(t, a, got[0].Job)
	assert.Equal(t, 0, clock.Pending())
	h.checkCounters()

	// A held job that goes away is not released into the queues.
	h.decline(got[0])
	assert.Equal(t, 1, clock.Pending())
	assert.True(t, h.sm.UnregisterJob(a))
	clock.Advance(DefaultRequirementCheckDelay)
	assert.Empty(t, h.take())
	assert.Nil(t, h.sm.MissingResources(a))
	h.checkCounters()
}

// A new JobMaster (another JobMasterID) is not held back for its predecessor's requests.
func TestSlotManagerDoesNotHoldBackANewLeader(t *testing.T) {
	clock := manualtime.New(time.Unix(0, 0))
	h := newDelayedCore(t, clock, 0)
	h.sm.RegisterTaskExecutor("te-1", report("te-1", cpu(1)))
	a, _ := h.job("jm-a")
	require.NoError(t, h.sm.DeclareRequirements(a, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	got := h.take()
	require.Len(t, got, 1)
	h.decline(got[0])
	assert.Empty(t, h.take())

	next := jobgraph.NewJobMasterID()
	h.sm.RegisterJob(a, JobMasterInfo{ID: next, ResourceID: "jm-a2", Address: "jm-a2"})
	require.NoError(t, h.sm.DeclareRequirements(a, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	got = h.take()
	require.Len(t, got, 1, "at once")
	assert.Equal(t, next, got[0].JobMasterID)
	clock.Advance(DefaultRequirementCheckDelay)
	assert.Empty(t, h.take(), "the old hold released nothing more")
}

func TestSlotManagerRequirementCheckDelayOptions(t *testing.T) {
	clock := manualtime.New(time.Unix(0, 0))
	alloc := SlotAllocatorFunc(func(SlotRequest) {})

	_, err := NewSlotManagerWithConfig(SlotManagerConfig{Timers: clock})
	assert.EqualError(t, err, "resourcemanager: SlotManagerConfig.Allocator is required")
	_, err = NewSlotManagerWithConfig(SlotManagerConfig{Allocator: alloc})
	assert.EqualError(t, err, "resourcemanager: SlotManagerConfig.Timers is required for a requirement-check delay (slotmanager.requirement-check.delay)")
	_, err = NewSlotManagerWithConfig(SlotManagerConfig{Allocator: alloc, RequirementCheckDelay: -1})
	assert.NoError(t, err, "a negative delay needs no timers")

	for _, tc := range []struct {
		name  string
		delay time.Duration
		again time.Duration // when the declined slot is requested again
	}{
		{"zero is the default", 0, DefaultRequirementCheckDelay},
		{"configured", 200 * time.Millisecond, 200 * time.Millisecond},
		{"negative holds nothing back", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := manualtime.New(time.Unix(0, 0))
			h := newDelayedCore(t, clock, tc.delay)
			h.sm.RegisterTaskExecutor("te-1", report("te-1", cpu(1)))
			j, _ := h.job("jm")
			require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
			got := h.take()
			require.Len(t, got, 1, "the first request goes at once")
			h.decline(got[0])
			if tc.again > 0 {
				assert.Empty(t, h.take())
				clock.Advance(tc.again - time.Nanosecond)
				assert.Empty(t, h.take())
				clock.Advance(time.Nanosecond)
			}
			assert.Len(t, h.take(), 1)
			assert.Equal(t, 0, clock.Pending())
		})
	}
}

// decliningTaskExecutor is a fake TaskExecutor whose JobMaster declines every offer: each
// RequestSlot succeeds and the slot is freed again at once (NotifySlotAvailable), up to limit
// times; it records when each request came.
type decliningTaskExecutor struct {
	*fakeTaskExecutor
	mu    sync.Mutex
	at    []time.Duration
	start time.Time
}

func newDecliningTaskExecutor(e *env, id jobgraph.ResourceID, start time.Time, limit int) *decliningTaskExecutor {
	d := &decliningTaskExecutor{start: start}
	d.fakeTaskExecutor = &fakeTaskExecutor{respond: func(_ context.Context, c slotCall, n int) error {
		d.mu.Lock()
		d.at = append(d.at, time.Since(d.start))
		d.mu.Unlock()
		if n <= limit {
			go func() {
				_ = e.gw.NotifySlotAvailable(context.Background(), e.rm.ResourceManagerID(), id, c.Slot, c.Allocation)
			}()
		}
		return nil
	}}
	addr := "te/" + string(id)
	require.NoError(e.t, e.svc.Register(addr, d))
	_, err := e.gw.RegisterTaskExecutor(e.ctx, rpc.TaskExecutorRegistration{ResourceID: id, Address: addr, SlotReport: report(id, cpu(1))})
	require.NoError(e.t, err)
	return d
}

func (d *decliningTaskExecutor) times() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Duration(nil), d.at...)
}

// Offers declined without end: with the default delay the ResourceManager asks again once per
// 50 ms (21 requests in the first second, at 0, 50 ms, …, 1 s); with a negative delay (Flink's
// 0) it asks again at the same instant, as often as the slot comes back: here 1,000 times at
// 0 s, the livelock the delay exists for.
func TestResourceManagerRequestsADeclinedSlotOncePerRequirementCheckDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		start := time.Now()
		te := newDecliningTaskExecutor(e, "te-1", start, 1000)
		job, token := e.addJob("jm")
		require.NoError(t, e.declare(job, token, req(unknown, 1)))
		time.Sleep(time.Second)
		synctest.Wait()
		var want []time.Duration
		for i := range 21 {
			want = append(want, time.Duration(i)*DefaultRequirementCheckDelay)
		}
		assert.Equal(t, want, te.times())
	})
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.RequirementCheckDelay = -1 })
		start := time.Now()
		te := newDecliningTaskExecutor(e, "te-1", start, 1000)
		job, token := e.addJob("jm")
		require.NoError(t, e.declare(job, token, req(unknown, 1)))
		synctest.Wait()
		times := te.times()
		assert.Len(t, times, 1001, "1,000 declined, the last one kept")
		for _, at := range times {
			assert.Zero(t, at)
		}
	})
}

// The JobMaster declaring its requirements again is new information, not a repeat: a held job is
// matched at once, and a slot lost after such a declaration holds nothing back (as when the
// JobMaster learns of a lost TaskExecutor only after declining the replacement offered to it).
func TestSlotManagerDeclarationReleasesAHeldJob(t *testing.T) {
	clock := manualtime.New(time.Unix(0, 0))
	h := newDelayedCore(t, clock, 0)
	h.sm.RegisterTaskExecutor("te-1", report("te-1", cpu(1)))
	a, _ := h.job("jm-a")
	require.NoError(t, h.sm.DeclareRequirements(a, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	got := h.take()
	require.Len(t, got, 1)

	// Held after a decline; the JobMaster declares again: matched at once.
	h.decline(got[0])
	assert.Empty(t, h.take())
	require.NoError(t, h.sm.DeclareRequirements(a, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	got = h.take()
	require.Len(t, got, 1)
	assert.Equal(t, a, got[0].Job)

	// Declared after this round, then declined: not held.
	require.NoError(t, h.sm.DeclareRequirements(a, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	h.decline(got[0])
	got = h.take()
	require.Len(t, got, 1, "at once")
	// Declined again with no declaration since this round: held until 50 ms.
	h.decline(got[0])
	assert.Empty(t, h.take())
	clock.Advance(DefaultRequirementCheckDelay)
	assert.Len(t, h.take(), 1)
	h.checkCounters()
}

// A slot the job holds only because a slot report said so (a TaskExecutor registering with a
// slot of the job, as after a ResourceManager failover), freed by a later report: the job loses
// a slot, but not one it was sent in its last round (the ResourceManager never requested it; the
// report did). That is the view being corrected, not the decline round trip the delay bounds, so
// the job is not held back: the slot is requested again at once.
func TestSlotManagerSlotRestoredByAReportHoldsNothingBack(t *testing.T) {
	clock := manualtime.New(time.Unix(0, 0))
	h := newDelayedCore(t, clock, 0)
	a, _ := h.job("jm-a")
	held := jobgraph.NewAllocationID()
	reg := report("te", unknown, unknown)
	reg.Slots[0].JobID, reg.Slots[0].AllocationID = a, held
	h.sm.RegisterTaskExecutor("te", reg)
	assert.Equal(t, 1, h.sm.NumAllocatedSlots(), "the report is the truth")

	// The JobMaster asks for two slots; the manager counts the reported one and requests slot
	// 1. The next report shows slot 0 free: requested for a at once, no timer.
	require.NoError(t, h.sm.DeclareRequirements(a, []rpc.ResourceRequirement{req(unknown, 2)}, ""))
	got := h.take()
	require.Len(t, got, 1)
	assert.Equal(t, sid("te", 1), got[0].Slot)
	clock.Advance(time.Second)
	require.True(t, h.sm.ReportSlotStatus("te", report("te", unknown, unknown)))
	got = h.take()
	require.Len(t, got, 1, "slot 0 requested again at once, not held for a delay")
	assert.Equal(t, a, got[0].Job)
	assert.Equal(t, sid("te", 0), got[0].Slot)
	assert.Equal(t, 0, clock.Pending(), "no release timer")
	assert.Nil(t, h.sm.MissingResources(a))
	h.checkCounters()

	// The round trip the delay bounds still holds a back: slot 0, sent at 1 s, declined.
	h.decline(got[0])
	assert.Empty(t, h.take())
	assert.Equal(t, 1, clock.Pending())
	clock.Advance(DefaultRequirementCheckDelay)
	got = h.take()
	require.Len(t, got, 1)
	assert.Equal(t, sid("te", 0), got[0].Slot)
	h.checkCounters()
}

// The interleaving of a failing run of minicluster's
// TestFailoverTaskExecutorLossIsOneRestartWithConcurrentFailures (about 1 run in 100): a
// TaskExecutor's heartbeat report reaches the slot manager after answers and notices it predates,
// since each comes back on a goroutine of its own. A report can only be that old for the slots
// the slot manager changed since the TaskExecutor's previous report was applied (it takes a report
// only once the previous one was answered), so for those it changes nothing, unless it confirms
// a pending request. Before, the 7 s report gave a slot the TaskExecutor had just freed back to
// the job and freed three slots it had just allocated; at 8 s the job was sent three slots, not
// four, and the 8 s report, taken before those requests, freed them again: the job was held back
// until 8.05 s, and the TaskExecutor refused the repeated requests as occupied.
func TestSlotManagerReportOlderThanTheSlotsLastChangeChangesNothing(t *testing.T) {
	clock := manualtime.New(time.Unix(0, 0))
	h := newDelayedCore(t, clock, 0)
	allFree := report("te-2", unknown, unknown, unknown, unknown)
	h.sm.RegisterTaskExecutor("te-1", report("te-1", unknown, unknown, unknown, unknown))
	h.sm.RegisterTaskExecutor("te-2", allFree)
	a, _ := h.job("jm")
	require.NoError(t, h.sm.DeclareRequirements(a, []rpc.ResourceRequirement{req(unknown, 4)}, ""))
	for _, r := range h.take() {
		require.Equal(t, jobgraph.ResourceID("te-1"), r.Slot.ResourceID)
		require.False(t, h.sm.CompleteAllocation(r.Slot, r.Allocation, nil))
	}
	require.True(t, h.sm.ReportSlotStatus("te-2", allFree), "te-2's 6 s report: all free")

	// 7 s: the job wants four more; te-2's four slots are requested.
	clock.Advance(time.Second)
	require.NoError(t, h.sm.DeclareRequirements(a, []rpc.ResourceRequirement{req(unknown, 8)}, ""))
	sent := h.take()
	require.Equal(t, []rpc.SlotID{sid("te-2", 0), sid("te-2", 1), sid("te-2", 2), sid("te-2", 3)}, slotsOf(sent))
	// te-2 allocates slot 3 and takes its heartbeat report; then it allocates slots 0–2, and
	// the JobMaster, restarting, declines slot 3, which te-2 frees. The answers and the notice
	// arrive before the report.
	at7 := report("te-2", unknown, unknown, unknown, unknown)
	at7.Slots[3].JobID, at7.Slots[3].AllocationID = a, sent[3].Allocation
	require.NoError(t, h.sm.DeclareRequirements(a, nil, ""))
	for _, r := range sent {
		require.False(t, h.sm.CompleteAllocation(r.Slot, r.Allocation, nil))
	}
	require.True(t, h.sm.FreeSlot(sent[3].Slot, sent[3].Allocation))
	require.True(t, h.sm.ReportSlotStatus("te-2", at7))
	assert.Equal(t, []SlotState{SlotAllocated, SlotAllocated, SlotAllocated, SlotFree}, statesOf(h.sm.Slots()[4:]),
		"slots 0–2 stay allocated, slot 3 free: the report predates all four")
	// te-2 frees slots 0–2 too (declined).
	for _, r := range sent[:3] {
		require.True(t, h.sm.FreeSlot(r.Slot, r.Allocation))
	}
	assert.Equal(t, 4, h.sm.NumFreeSlots())

	// 8 s: the restarted region needs eight slots: te-2's four are requested at once and
	// allocated; te-2's 8 s report, taken before it saw the requests, changes nothing.
	clock.Advance(time.Second)
	require.NoError(t, h.sm.DeclareRequirements(a, []rpc.ResourceRequirement{req(unknown, 8)}, ""))
	sent = h.take()
	require.Equal(t, []rpc.SlotID{sid("te-2", 0), sid("te-2", 1), sid("te-2", 2), sid("te-2", 3)}, slotsOf(sent))
	for _, r := range sent {
		require.False(t, h.sm.CompleteAllocation(r.Slot, r.Allocation, nil))
	}
	require.True(t, h.sm.ReportSlotStatus("te-2", allFree))
	assert.Empty(t, h.take())
	assert.Equal(t, 8, h.sm.NumAllocatedSlots())
	assert.Nil(t, h.sm.MissingResources(a))
	assert.Equal(t, 0, clock.Pending(), "nobody held back")

	// 9 s: the next report, taken after all that, is the truth again: slot 2 was freed and the
	// notice lost.
	clock.Advance(time.Second)
	at9 := report("te-2", unknown, unknown, unknown, unknown)
	for _, r := range []SlotRequest{sent[0], sent[1], sent[3]} {
		at9.Slots[r.Slot.SlotNumber].JobID, at9.Slots[r.Slot.SlotNumber].AllocationID = a, r.Allocation
	}
	require.True(t, h.sm.ReportSlotStatus("te-2", at9))
	got := h.take()
	require.Len(t, got, 1)
	assert.Equal(t, sid("te-2", 2), got[0].Slot, "requested again at once: its round was 1 s ago")
	h.checkCounters()
}

func statesOf(slots []SlotInfo) []SlotState {
	out := make([]SlotState, len(slots))
	for i, s := range slots {
		out[i] = s.State
	}
	return out
}
