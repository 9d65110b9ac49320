package resourcemanager

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

var discard = slog.New(slog.DiscardHandler)

func cpu(c float64) jobgraph.ResourceProfile { return jobgraph.ResourceProfile{CPUCores: c} }

var unknown = jobgraph.UnknownResourceProfile

func req(p jobgraph.ResourceProfile, n int) rpc.ResourceRequirement {
	return rpc.ResourceRequirement{Profile: p, Count: n}
}

// report builds a slot report of free slots numbered 0, 1, … with the given profiles.
func report(te jobgraph.ResourceID, profiles ...jobgraph.ResourceProfile) rpc.SlotReport {
	var r rpc.SlotReport
	for i, p := range profiles {
		r.Slots = append(r.Slots, rpc.SlotStatus{SlotID: rpc.SlotID{ResourceID: te, SlotNumber: i}, ResourceProfile: p})
	}
	return r
}

func sid(te jobgraph.ResourceID, n int) rpc.SlotID { return rpc.SlotID{ResourceID: te, SlotNumber: n} }

// coreHarness drives a SlotManager with an allocator that records requests.
type coreHarness struct {
	t        *testing.T
	sm       *SlotManager
	requests []SlotRequest
}

func newCore(t *testing.T) *coreHarness {
	h := &coreHarness{t: t}
	h.sm = NewSlotManager(SlotAllocatorFunc(func(r SlotRequest) { h.requests = append(h.requests, r) }), discard)
	return h
}

// take returns the requests recorded since the last take.
func (h *coreHarness) take() []SlotRequest {
	r := h.requests
	h.requests = nil
	return r
}

// slotsOf lists request slots in order.
func slotsOf(reqs []SlotRequest) []rpc.SlotID {
	out := make([]rpc.SlotID, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, r.Slot)
	}
	return out
}

func (h *coreHarness) job(address string) (jobgraph.JobID, jobgraph.JobMasterID) {
	id, token := jobgraph.NewJobID(), jobgraph.NewJobMasterID()
	h.sm.RegisterJob(id, JobMasterInfo{ID: token, ResourceID: jobgraph.ResourceID("jm-" + address), Address: address})
	return id, token
}

// checkCounters verifies the incremental bookkeeping against a recount.
func (h *coreHarness) checkCounters() {
	h.t.Helper()
	var free, pending, allocated int
	acquired := map[jobgraph.JobID]map[jobgraph.ResourceProfile]int{}
	for _, s := range h.sm.Slots() {
		switch s.State {
		case SlotFree:
			free++
			continue
		case SlotPending:
			pending++
		case SlotAllocated:
			allocated++
		}
		if acquired[s.Job] == nil {
			acquired[s.Job] = map[jobgraph.ResourceProfile]int{}
		}
		acquired[s.Job][s.Profile]++
	}
	assert.Equal(h.t, free, h.sm.NumFreeSlots(), "free")
	assert.Equal(h.t, pending, h.sm.NumPendingSlots(), "pending")
	assert.Equal(h.t, allocated, h.sm.NumAllocatedSlots(), "allocated")
	assert.Equal(h.t, acquired, h.sm.acquired, "acquired")
}

// The slot manager recomputes fulfilled on every slot a job occupies (10,000 times for a job of
// 10,000 slots): for the common job of one requirement line it allocates only its answer.
func TestFulfilledOfOneLineAllocatesOnlyItsAnswer(t *testing.T) {
	reqs := []rpc.ResourceRequirement{req(unknown, 10_000)}
	acquired := map[jobgraph.ResourceProfile]int{unknown: 9_999}
	var got []int
	allocs := testing.AllocsPerRun(100, func() { got = fulfilled(reqs, acquired) })
	assert.Equal(t, []int{9_999}, got)
	assert.Equal(t, 1.0, allocs)
}

func TestFulfilledFindsMaximumAssignment(t *testing.T) {
	mem := func(c float64, heapMiB int64) jobgraph.ResourceProfile {
		return jobgraph.ResourceProfile{CPUCores: c, TaskHeapMemory: heapMiB * jobgraph.MiB}
	}
	tests := []struct {
		name     string
		reqs     []rpc.ResourceRequirement // in matching order
		acquired map[jobgraph.ResourceProfile]int
		want     []int
	}{
		{"nothing acquired", []rpc.ResourceRequirement{req(unknown, 2)}, nil, []int{0}},
		{"unknown takes any", []rpc.ResourceRequirement{req(unknown, 2)}, map[jobgraph.ResourceProfile]int{cpu(1): 3}, []int{2}},
		{"too small", []rpc.ResourceRequirement{req(cpu(2), 1)}, map[jobgraph.ResourceProfile]int{cpu(1): 1}, []int{0}},
		{"exact first", []rpc.ResourceRequirement{req(cpu(2), 1), req(cpu(1), 1)}, map[jobgraph.ResourceProfile]int{cpu(2): 1, cpu(1): 1}, []int{1, 1}},
		{"specific before unknown", []rpc.ResourceRequirement{req(cpu(1), 1), req(unknown, 1)}, map[jobgraph.ResourceProfile]int{cpu(2): 1, cpu(0.5): 1}, []int{1, 1}},
		{
			// {cpu4,2MiB} serves both lines; {cpu3,1MiB} only the first. A greedy pass gives the
			// first slot to the first line and leaves the second unmet; the augmenting path moves it.
			"augmenting path",
			[]rpc.ResourceRequirement{req(mem(2, 1), 1), req(mem(1, 2), 1)},
			map[jobgraph.ResourceProfile]int{mem(4, 2): 1, mem(3, 1): 1},
			[]int{1, 1},
		},
		{"excess is not counted", []rpc.ResourceRequirement{req(cpu(1), 2)}, map[jobgraph.ResourceProfile]int{cpu(1): 5}, []int{2}},
		{"one line counts every matching slot", []rpc.ResourceRequirement{req(cpu(1), 5)},
			map[jobgraph.ResourceProfile]int{cpu(2): 2, cpu(1): 1, cpu(0.5): 4, cpu(3): 0}, []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, fulfilled(tt.reqs, tt.acquired))
		})
	}
}

func TestNormalizeRequirements(t *testing.T) {
	got, err := normalizeRequirements([]rpc.ResourceRequirement{req(unknown, 1), req(cpu(1), 2), req(cpu(2), 0), req(cpu(4), 1), req(unknown, 2)})
	require.NoError(t, err)
	assert.Equal(t, []rpc.ResourceRequirement{req(cpu(4), 1), req(cpu(1), 2), req(unknown, 3)}, got)

	_, err = normalizeRequirements([]rpc.ResourceRequirement{req(cpu(1), -1)})
	assert.ErrorIs(t, err, ErrInvalidRequirements)
}

func TestSlotManagerMatchesInDeterministicOrder(t *testing.T) {
	h := newCore(t)
	h.sm.RegisterTaskExecutor("te-a", report("te-a", cpu(1), cpu(1)))
	h.sm.RegisterTaskExecutor("te-b", report("te-b", cpu(1), cpu(1)))
	j1, t1 := h.job("jm1")
	j2, t2 := h.job("jm2")

	// The second-registered job declares first, but takes what is left over in registration order.
	require.NoError(t, h.sm.DeclareRequirements(j2, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	require.NoError(t, h.sm.DeclareRequirements(j1, []rpc.ResourceRequirement{req(unknown, 3)}, ""))
	got := h.take()
	require.Len(t, got, 4)
	assert.Equal(t, []rpc.SlotID{sid("te-a", 0), sid("te-a", 1), sid("te-b", 0), sid("te-b", 1)}, slotsOf(got))
	for i, want := range []struct {
		job   jobgraph.JobID
		token jobgraph.JobMasterID
		addr  string
	}{{j2, t2, "jm2"}, {j1, t1, "jm1"}, {j1, t1, "jm1"}, {j1, t1, "jm1"}} {
		assert.Equal(t, want.job, got[i].Job, "request %d", i)
		assert.Equal(t, want.token, got[i].JobMasterID, "request %d", i)
		assert.Equal(t, want.addr, got[i].JobMasterAddress, "request %d", i)
		assert.Equal(t, unknown, got[i].Profile, "request %d", i)
	}
	assert.Equal(t, 0, h.sm.NumFreeSlots())
	assert.Equal(t, 4, h.sm.NumPendingSlots())
	h.checkCounters()

	// When both jobs lack slots, the earlier-registered job is served first.
	require.NoError(t, h.sm.DeclareRequirements(j2, []rpc.ResourceRequirement{req(unknown, 2)}, ""))
	require.NoError(t, h.sm.DeclareRequirements(j1, []rpc.ResourceRequirement{req(unknown, 4)}, ""))
	assert.Empty(t, h.take())
	h.sm.RegisterTaskExecutor("te-c", report("te-c", cpu(1), cpu(1)))
	got = h.take()
	require.Len(t, got, 2)
	assert.Equal(t, []jobgraph.JobID{j1, j2}, []jobgraph.JobID{got[0].Job, got[1].Job})
	assert.Equal(t, []rpc.SlotID{sid("te-c", 0), sid("te-c", 1)}, slotsOf(got))
	h.checkCounters()
}

func TestSlotManagerPrefersExactProfile(t *testing.T) {
	h := newCore(t)
	h.sm.RegisterTaskExecutor("te", report("te", cpu(4), cpu(2), cpu(1)))
	j, _ := h.job("jm")
	require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(cpu(1), 1), req(cpu(2), 1)}, ""))
	got := h.take()
	// cpu 2 is served first (larger first), each from the slot of exactly its profile.
	assert.Equal(t, []rpc.SlotID{sid("te", 1), sid("te", 2)}, slotsOf(got))
	assert.Equal(t, []jobgraph.ResourceProfile{cpu(2), cpu(1)}, []jobgraph.ResourceProfile{got[0].Profile, got[1].Profile})

	// No exact match left: the first larger slot serves.
	require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(cpu(1), 2), req(cpu(2), 1)}, ""))
	got = h.take()
	assert.Equal(t, []rpc.SlotID{sid("te", 0)}, slotsOf(got))
	assert.Equal(t, cpu(1), got[0].Profile)
	assert.Nil(t, h.sm.MissingResources(j))
	h.checkCounters()
}

func TestSlotManagerProfileMismatchWaits(t *testing.T) {
	h := newCore(t)
	h.sm.RegisterTaskExecutor("te", report("te", cpu(1), cpu(1)))
	j, _ := h.job("jm")
	require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(cpu(2), 1)}, ""))
	assert.Empty(t, h.take())
	assert.Equal(t, []rpc.ResourceRequirement{req(cpu(2), 1)}, h.sm.MissingResources(j))
	assert.Equal(t, 2, h.sm.NumFreeSlots())

	// A bigger TaskExecutor arrives: the requirement is served there.
	h.sm.RegisterTaskExecutor("big", report("big", cpu(2)))
	assert.Equal(t, []rpc.SlotID{sid("big", 0)}, slotsOf(h.take()))
	h.checkCounters()
}

func TestSlotManagerRequirementsDecreaseKeepSlots(t *testing.T) {
	h := newCore(t)
	h.sm.RegisterTaskExecutor("te", report("te", cpu(1), cpu(1), cpu(1)))
	j, _ := h.job("jm")
	require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(unknown, 2)}, ""))
	got := h.take()
	require.Len(t, got, 2)
	for _, r := range got {
		assert.False(t, h.sm.CompleteAllocation(r.Slot, r.Allocation, nil))
	}
	assert.Equal(t, 2, h.sm.NumAllocatedSlots())

	require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	assert.Empty(t, h.take())
	assert.Equal(t, 2, h.sm.NumAllocatedSlots(), "no slot is taken back")

	// Back to 3: the two it holds count, one more is requested.
	require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(unknown, 3)}, ""))
	assert.Equal(t, []rpc.SlotID{sid("te", 2)}, slotsOf(h.take()))
	h.checkCounters()
}

func TestSlotManagerCompleteAllocation(t *testing.T) {
	h := newCore(t)
	h.sm.RegisterTaskExecutor("te", report("te", cpu(1), cpu(1)))
	j, _ := h.job("jm")
	require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	r := h.take()[0]

	// An answer for another allocation of the slot is ignored.
	assert.False(t, h.sm.CompleteAllocation(r.Slot, jobgraph.NewAllocationID(), errors.New("boom")))
	assert.Equal(t, 1, h.sm.NumPendingSlots())

	// A failure frees the slot and asks for a retry; matching is not run by itself.
	assert.True(t, h.sm.CompleteAllocation(r.Slot, r.Allocation, errors.New("boom")))
	assert.Equal(t, 2, h.sm.NumFreeSlots())
	assert.Empty(t, h.take())
	h.sm.CheckResourceRequirements()
	again := h.take()
	require.Len(t, again, 1)
	assert.Equal(t, r.Slot, again[0].Slot)
	assert.NotEqual(t, r.Allocation, again[0].Allocation)

	// The late success of the first request changes nothing.
	assert.False(t, h.sm.CompleteAllocation(r.Slot, r.Allocation, nil))
	assert.Equal(t, 1, h.sm.NumPendingSlots())
	assert.False(t, h.sm.CompleteAllocation(again[0].Slot, again[0].Allocation, nil))
	assert.Equal(t, 1, h.sm.NumAllocatedSlots())
	h.checkCounters()
}

func TestSlotManagerFreeSlot(t *testing.T) {
	h := newCore(t)
	h.sm.RegisterTaskExecutor("te", report("te", cpu(1)))
	j1, _ := h.job("jm1")
	j2, _ := h.job("jm2")
	require.NoError(t, h.sm.DeclareRequirements(j1, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	require.NoError(t, h.sm.DeclareRequirements(j2, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	r := h.take()[0]
	assert.Equal(t, j1, r.Job)
	h.sm.CompleteAllocation(r.Slot, r.Allocation, nil)

	assert.False(t, h.sm.FreeSlot(r.Slot, jobgraph.NewAllocationID()), "stale allocation")
	assert.False(t, h.sm.FreeSlot(sid("te", 7), r.Allocation), "unknown slot")
	assert.Empty(t, h.take())

	// Job 1 no longer needs it and its TaskExecutor frees it: job 2 gets it.
	require.NoError(t, h.sm.DeclareRequirements(j1, nil, ""))
	assert.True(t, h.sm.FreeSlot(r.Slot, r.Allocation))
	next := h.take()
	require.Len(t, next, 1)
	assert.Equal(t, j2, next[0].Job)

	// A pending slot is freed only under its own allocation, never by a zero one.
	assert.False(t, h.sm.FreeSlot(next[0].Slot, jobgraph.AllocationID{}))
	assert.Equal(t, 1, h.sm.NumPendingSlots())
	h.checkCounters()
}

func TestSlotManagerUnregisterTaskExecutor(t *testing.T) {
	h := newCore(t)
	h.sm.RegisterTaskExecutor("te-a", report("te-a", cpu(1)))
	h.sm.RegisterTaskExecutor("te-b", report("te-b", cpu(1)))
	j, _ := h.job("jm")
	require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	r := h.take()[0]
	assert.Equal(t, sid("te-a", 0), r.Slot)
	h.sm.CompleteAllocation(r.Slot, r.Allocation, nil)

	assert.True(t, h.sm.UnregisterTaskExecutor("te-a"))
	assert.False(t, h.sm.UnregisterTaskExecutor("te-a"))
	assert.Equal(t, 1, h.sm.NumRegisteredTaskExecutors())
	assert.Equal(t, 1, h.sm.NumRegisteredSlots())
	assert.Equal(t, []rpc.SlotID{sid("te-b", 0)}, slotsOf(h.take()))
	// The answer for the removed slot is ignored.
	assert.False(t, h.sm.CompleteAllocation(r.Slot, r.Allocation, errors.New("gone")))
	h.checkCounters()
}

func TestSlotManagerSlotReportIsTheTruth(t *testing.T) {
	h := newCore(t)
	h.sm.RegisterTaskExecutor("te", report("te", cpu(1), cpu(1), cpu(1)))
	j, _ := h.job("jm")
	other := jobgraph.NewJobID()
	require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(unknown, 2)}, ""))
	got := h.take()
	require.Equal(t, []rpc.SlotID{sid("te", 0), sid("te", 1)}, slotsOf(got))
	h.sm.CompleteAllocation(got[0].Slot, got[0].Allocation, nil)
	otherAlloc := jobgraph.NewAllocationID()
	// A report taken after the TaskExecutor answered: slot 0 allocated, slot 1's request not
	// seen yet. The next report is then newer than everything the slot manager heard of slot 0
	// (TestSlotManagerReportOlderThanTheSlotsLastChangeChangesNothing has one that is not).
	rep := report("te", cpu(1), cpu(1), cpu(1))
	rep.Slots[0].JobID, rep.Slots[0].AllocationID = j, got[0].Allocation
	require.True(t, h.sm.ReportSlotStatus("te", rep))
	assert.Empty(t, h.take())

	// Slot 0 (allocated) reported free, slot 1 (pending) reported free, slot 2 (free) reported
	// allocated to another job, and a new slot 3 appears.
	rep = report("te", cpu(1), cpu(1), cpu(1), cpu(1))
	rep.Slots[2].JobID, rep.Slots[2].AllocationID = other, otherAlloc
	require.True(t, h.sm.ReportSlotStatus("te", rep))
	// Slot 0 is matched again (job lacks one); slot 1 stays pending.
	assert.Equal(t, []rpc.SlotID{sid("te", 0)}, slotsOf(h.take()))
	slots := h.sm.Slots()
	require.Len(t, slots, 4)
	assert.Equal(t, []SlotState{SlotPending, SlotPending, SlotAllocated, SlotFree},
		[]SlotState{slots[0].State, slots[1].State, slots[2].State, slots[3].State})
	assert.Equal(t, other, slots[2].Job)
	assert.Equal(t, otherAlloc, slots[2].Allocation)
	h.checkCounters()

	// The TaskExecutor confirms slot 1 through a report; slot 3 disappears.
	rep = report("te", cpu(1), cpu(1), cpu(1))
	rep.Slots[1].JobID, rep.Slots[1].AllocationID = j, got[1].Allocation
	rep.Slots[2].JobID, rep.Slots[2].AllocationID = other, otherAlloc
	require.True(t, h.sm.ReportSlotStatus("te", rep))
	assert.Empty(t, h.take())
	slots = h.sm.Slots()
	require.Len(t, slots, 3)
	assert.Equal(t, SlotAllocated, slots[1].State)
	assert.Equal(t, 3, h.sm.NumRegisteredSlots())
	// The late answer to slot 1's request changes nothing.
	assert.False(t, h.sm.CompleteAllocation(got[1].Slot, got[1].Allocation, errors.New("late")))
	assert.Equal(t, SlotAllocated, h.sm.Slots()[1].State)

	assert.False(t, h.sm.ReportSlotStatus("nobody", rep))
	h.checkCounters()
}

func TestSlotManagerRegisterJobAgain(t *testing.T) {
	h := newCore(t)
	j, t1 := h.job("jm1")
	require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(unknown, 1)}, ""))

	// Same JobMaster again: requirements stay.
	h.sm.RegisterJob(j, JobMasterInfo{ID: t1, Address: "jm1"})
	assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, h.sm.Requirements(j))

	// A new leader: requirements are cleared, the new address is used.
	t2 := jobgraph.NewJobMasterID()
	h.sm.RegisterJob(j, JobMasterInfo{ID: t2, Address: "jm2"})
	assert.Nil(t, h.sm.Requirements(j))
	require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	h.sm.RegisterTaskExecutor("te", report("te", cpu(1)))
	got := h.take()
	require.Len(t, got, 1)
	assert.Equal(t, "jm2", got[0].JobMasterAddress)
	assert.Equal(t, t2, got[0].JobMasterID)

	assert.True(t, h.sm.UnregisterJob(j))
	assert.False(t, h.sm.UnregisterJob(j))
	assert.ErrorIs(t, h.sm.DeclareRequirements(j, nil, ""), ErrJobNotRegistered)
	assert.Equal(t, 1, h.sm.NumPendingSlots(), "slots stay with the job")
}

func TestCompareProfilesOrder(t *testing.T) {
	p := func(c float64, heap, offHeap, managed, network int64) jobgraph.ResourceProfile {
		return jobgraph.ResourceProfile{CPUCores: c, TaskHeapMemory: heap, TaskOffHeapMemory: offHeap, ManagedMemory: managed, NetworkMemory: network}
	}
	want := []jobgraph.ResourceProfile{
		p(2, 0, 0, 0, 0),
		p(1, 2, 0, 0, 0),
		p(1, 1, 2, 0, 0),
		p(1, 1, 1, 2, 0),
		p(1, 1, 1, 1, 2),
		p(1, 1, 1, 1, 1),
		p(0, 0, 0, 0, 1),
		unknown,
	}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, compareProfiles)
	assert.Equal(t, want, got)
	assert.Equal(t, 0, compareProfiles(unknown, unknown))
}

func TestSlotManagerRegisterTaskExecutorAgainAppliesReport(t *testing.T) {
	h := newCore(t)
	assert.True(t, h.sm.RegisterTaskExecutor("te", report("te", cpu(1), cpu(1))))
	j, _ := h.job("jm")
	require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(cpu(2), 1)}, ""))
	assert.Empty(t, h.take())

	// Registering again (the slot manager level; the ResourceManager replaces registrations
	// instead) applies the report: slot 1 grew and now fits.
	assert.False(t, h.sm.RegisterTaskExecutor("te", report("te", cpu(1), cpu(2))))
	got := h.take()
	require.Len(t, got, 1)
	assert.Equal(t, sid("te", 1), got[0].Slot)
	h.checkCounters()

	// The slot's profile changes while pending: it still counts for the job, under its new profile.
	rep := report("te", cpu(1), cpu(3))
	rep.Slots = append(rep.Slots, rpc.SlotStatus{SlotID: sid("elsewhere", 5), ResourceProfile: cpu(8)})
	require.True(t, h.sm.ReportSlotStatus("te", rep))
	assert.Empty(t, h.take())
	assert.Equal(t, 2, h.sm.NumRegisteredSlots(), "the other TaskExecutor's slot is ignored")
	assert.Equal(t, cpu(3), h.sm.Slots()[1].Profile)
	assert.Equal(t, SlotPending, h.sm.Slots()[1].State)
	h.checkCounters()
	assert.Equal(t, "PENDING", SlotPending.String())
}

// The issue-8 backlog: a slot event's cost must not grow with the number of waiting jobs. One
// TaskExecutor × 1 slot; waiting jobs each lack 1 slot. One cycle: the holder of the slot goes
// away (its JobMaster unregisters, the TaskExecutor frees the slot), the first waiting job is
// asked for and confirmed. The allocations of a cycle are the same with 10,000 waiting jobs as with
// 100 (before the wait queues, every cycle recomputed what every waiting job lacked).
func TestSlotManagerSlotEventCostIndependentOfWaitingJobs(t *testing.T) {
	allocsPerCycle := func(waiting int) float64 {
		h := newCore(t)
		h.sm.RegisterTaskExecutor("te", report("te", unknown))
		jobs := make([]jobgraph.JobID, waiting)
		for i := range jobs {
			jobs[i], _ = h.job(fmt.Sprintf("jm-%d", i))
			require.NoError(t, h.sm.DeclareRequirements(jobs[i], []rpc.ResourceRequirement{req(unknown, 1)}, ""))
		}
		r := h.take()[0]
		require.Equal(t, jobs[0], r.Job)
		h.sm.CompleteAllocation(r.Slot, r.Allocation, nil)
		next := 1
		allocs := testing.AllocsPerRun(50, func() {
			h.sm.UnregisterJob(r.Job)
			h.sm.FreeSlot(r.Slot, r.Allocation)
			got := h.take()
			if len(got) != 1 || got[0].Job != jobs[next] {
				t.Fatalf("cycle %d: requests %v, want one for job %d", next, got, next)
			}
			r = got[0]
			h.sm.CompleteAllocation(r.Slot, r.Allocation, nil)
			next++
		})
		h.checkCounters()
		return allocs
	}
	few, many := allocsPerCycle(100), allocsPerCycle(10_000)
	assert.Equal(t, few, many, "allocations per slot event with 100 and 10,000 waiting jobs")
}

// A job that lacks a slot again (its TaskExecutor was lost) is served before jobs registered
// after it, although they have waited longer.
func TestSlotManagerJobLackingAgainKeepsItsRegistrationPlace(t *testing.T) {
	h := newCore(t)
	h.sm.RegisterTaskExecutor("te-a", report("te-a", unknown))
	j1, _ := h.job("jm1")
	j2, _ := h.job("jm2")
	j3, _ := h.job("jm3")
	for _, j := range []jobgraph.JobID{j1, j2, j3} {
		require.NoError(t, h.sm.DeclareRequirements(j, []rpc.ResourceRequirement{req(unknown, 1)}, ""))
	}
	r := h.take()
	require.Len(t, r, 1)
	assert.Equal(t, j1, r[0].Job)
	h.sm.CompleteAllocation(r[0].Slot, r[0].Allocation, nil)
	assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, h.sm.MissingResources(j2))

	assert.True(t, h.sm.UnregisterTaskExecutor("te-a"))
	assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, h.sm.MissingResources(j1))
	h.sm.RegisterTaskExecutor("te-b", report("te-b", unknown))
	r = h.take()
	require.Len(t, r, 1)
	assert.Equal(t, j1, r[0].Job, "the earliest-registered job first")
	assert.Nil(t, h.sm.MissingResources(j1))

	// Unregistered jobs leave the queues: once j1 needs nothing and j2 is gone, the freed slot
	// goes to j3.
	assert.True(t, h.sm.UnregisterJob(j2))
	require.NoError(t, h.sm.DeclareRequirements(j1, nil, ""))
	h.sm.CompleteAllocation(r[0].Slot, r[0].Allocation, nil)
	assert.True(t, h.sm.FreeSlot(r[0].Slot, r[0].Allocation))
	r = h.take()
	require.Len(t, r, 1)
	assert.Equal(t, j3, r[0].Job)
	h.checkCounters()
}
