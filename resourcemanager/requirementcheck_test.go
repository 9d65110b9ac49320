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

// newDelayedCore is a coreHarness whose SlotManager checks requirements through clock with the
// given delay (0: the default).
func newDelayedCore(t *testing.T, clock *manualtime.Timers, delay time.Duration) *coreHarness {
	h := &coreHarness{t: t}
	sm, err := NewSlotManagerWithConfig(SlotManagerConfig{
		Allocator:             SlotAllocatorFunc(func(r SlotRequest) { h.requests = append(h.requests, r) }),
		Logger:                discard,
		RequirementCheckDelay: delay,
		Timers:                clock,
	})
	require.NoError(t, err)
	h.sm = sm
	return h
}

// Every event of one delay window is served by one check, DefaultRequirementCheckDelay after the
// first; an event while nothing could be matched schedules nothing.
func TestSlotManagerCoalescesRequirementChecksOntoOneTimer(t *testing.T) {
	clock := manualtime.New(time.Unix(0, 0))
	h := newDelayedCore(t, clock, 0)

	// A TaskExecutor registers and reports while no job waits: no timer.
	h.sm.RegisterTaskExecutor("te-1", report("te-1", cpu(1)))
	h.sm.ReportSlotStatus("te-1", report("te-1", cpu(1)))
	assert.Equal(t, 0, clock.Pending(), "nothing to match, nothing scheduled")

	// Two declarations and a second TaskExecutor within 30 ms: one timer, one check at 50 ms.
	a, _ := h.job("jm-a")
	b, _ := h.job("jm-b")
	require.NoError(t, h.sm.DeclareRequirements(a, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	assert.Equal(t, 1, clock.Pending())
	clock.Advance(20 * time.Millisecond)
	require.NoError(t, h.sm.DeclareRequirements(b, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	clock.Advance(10 * time.Millisecond)
	h.sm.RegisterTaskExecutor("te-2", report("te-2", cpu(1)))
	assert.Equal(t, 1, clock.Pending(), "the events share the one scheduled check")
	clock.Advance(20*time.Millisecond - time.Nanosecond)
	assert.Empty(t, h.take(), "nothing is requested before the delay")
	clock.Advance(time.Nanosecond)
	got := h.take()
	require.Len(t, got, 2)
	assert.Equal(t, []rpc.SlotID{sid("te-1", 0), sid("te-2", 0)}, slotsOf(got))
	assert.Equal(t, []jobgraph.JobID{a, b}, []jobgraph.JobID{got[0].Job, got[1].Job}, "registration order, as at once")
	assert.Equal(t, 0, clock.Pending())
	h.checkCounters()

	// Job a is done and frees its slot while b waits for a second one: the next check is one
	// delay after the slot was freed.
	require.NoError(t, h.sm.DeclareRequirements(a, nil, ""))
	require.NoError(t, h.sm.DeclareRequirements(b, []rpc.ResourceRequirement{req(unknown, 2)}, ""))
	assert.Equal(t, 0, clock.Pending(), "no free slot: nothing scheduled")
	clock.Advance(time.Second)
	assert.False(t, h.sm.CompleteAllocation(got[0].Slot, got[0].Allocation, nil))
	assert.True(t, h.sm.FreeSlot(got[0].Slot, got[0].Allocation))
	assert.Equal(t, 1, clock.Pending())
	clock.Advance(DefaultRequirementCheckDelay - time.Nanosecond)
	assert.Empty(t, h.take())
	clock.Advance(time.Nanosecond)
	got = h.take()
	require.Len(t, got, 1)
	assert.Equal(t, sid("te-1", 0), got[0].Slot)
	assert.Equal(t, b, got[0].Job)

	// CheckResourceRequirements itself matches at once, whatever the delay.
	h.sm.RegisterTaskExecutor("te-3", report("te-3", cpu(1)))
	h.sm.CheckResourceRequirements()
	assert.Len(t, h.take(), 0, "b has 2 of 2")
	c, _ := h.job("jm-c")
	require.NoError(t, h.sm.DeclareRequirements(c, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	h.sm.CheckResourceRequirements()
	got = h.take()
	require.Len(t, got, 1)
	assert.Equal(t, c, got[0].Job)
	clock.Advance(DefaultRequirementCheckDelay)
	assert.Empty(t, h.take(), "the scheduled check finds nothing left")
	h.checkCounters()
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
		at    time.Duration // when the declaration's slot is requested
	}{
		{"zero is the default", 0, DefaultRequirementCheckDelay},
		{"configured", 200 * time.Millisecond, 200 * time.Millisecond},
		{"negative is at once", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := manualtime.New(time.Unix(0, 0))
			h := newDelayedCore(t, clock, tc.delay)
			h.sm.RegisterTaskExecutor("te-1", report("te-1", cpu(1)))
			j, _ := h.job("jm")
			require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
			if tc.at > 0 {
				clock.Advance(tc.at - time.Nanosecond)
				assert.Empty(t, h.take())
				clock.Advance(time.Nanosecond)
			}
			assert.Len(t, h.take(), 1)
			assert.Equal(t, 0, clock.Pending())
		})
	}
}

// timedTaskExecutor is a fakeTaskExecutor that records when each RequestSlot came, since start.
func timedTaskExecutor(start time.Time) (*fakeTaskExecutor, func() []time.Duration) {
	var mu sync.Mutex
	var at []time.Duration
	te := &fakeTaskExecutor{respond: func(context.Context, slotCall, int) error {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, time.Since(start))
		return nil
	}}
	return te, func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), at...)
	}
}

// On the ResourceManager the check runs on its main loop: declarations at 0 ms and 30 ms and a
// TaskExecutor lost at 40 ms are matched together at 50 ms; Config.RequirementCheckDelay sets
// the delay (negative: at once).
func TestResourceManagerChecksRequirementsOneDelayAfterTheFirstEvent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
		want  time.Duration
	}{
		{"default", 0, 50 * time.Millisecond},
		{"configured", 120 * time.Millisecond, 120 * time.Millisecond},
		{"at once", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, func(c *Config) { c.RequirementCheckDelay = tc.delay })
				start := time.Now()
				te, times := timedTaskExecutor(start)
				require.NoError(t, e.svc.Register("te/te-1", te))
				_, err := e.gw.RegisterTaskExecutor(e.ctx, rpc.TaskExecutorRegistration{ResourceID: "te-1", Address: "te/te-1", SlotReport: report("te-1", cpu(1), cpu(1))})
				require.NoError(t, err)
				e.addTaskExecutor("te-2", cpu(1))
				a, tokenA := e.addJob("jm-a")
				b, tokenB := e.addJob("jm-b")

				require.NoError(t, e.declare(a, tokenA, req(unknown, 1)))
				if tc.delay >= 0 {
					advance(30 * time.Millisecond)
					assert.Empty(t, times())
				}
				require.NoError(t, e.declare(b, tokenB, req(unknown, 1)))
				if tc.delay >= 0 {
					advance(10 * time.Millisecond)
				}
				require.NoError(t, e.gw.DisconnectTaskExecutor(e.ctx, "te-2", nil))
				if tc.want > 0 {
					advance(tc.want - time.Since(start) - time.Nanosecond)
					assert.Empty(t, times(), "nothing before the delay")
					advance(time.Nanosecond)
				} else {
					synctest.Wait()
				}
				assert.Equal(t, []time.Duration{tc.want, tc.want}, times())
				calls := te.Calls()
				require.Len(t, calls, 2)
				assert.Equal(t, []jobgraph.JobID{a, b}, []jobgraph.JobID{calls[0].Job, calls[1].Job})
				assert.Nil(t, e.rm.MissingResources(a))
				assert.Nil(t, e.rm.MissingResources(b))
			})
		})
	}
}
