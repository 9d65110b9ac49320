package slotpool

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

const te1, te2 jobgraph.ResourceID = "taskexecutor-1", "taskexecutor-2"

// Flink: DefaultDeclarativeSlotPoolTest.testOfferingTooManySlots and testDuplicateSlotOfferings.
func TestOfferSlotsAcceptsOnlyOutstandingRequirements(t *testing.T) {
	p, _, rec := newTestPool(t)
	require.NoError(t, p.IncreaseRequirements(p1, 2))
	require.NoError(t, p.IncreaseRequirements(p2, 1))
	// Sorted by CPU cores first: p2 (0 cores) before p1 (1.7 cores).
	assert.Equal(t, [][]rpc.ResourceRequirement{reqs(p1, 2), reqs(p2, 1, p1, 2)}, rec.takeDeclared())

	offers := []rpc.SlotOffer{offer(0, p1), offer(1, p1), offer(2, p1), offer(3, p1), offer(4, p2)}
	accepted := p.OfferSlots(te1, offers)

	assert.Equal(t, []rpc.SlotOffer{offers[0], offers[1], offers[4]}, accepted)
	assert.Equal(t, [][]AllocatedSlot{{
		slotOf(te1, offers[0], p1, false),
		slotOf(te1, offers[1], p1, false),
		slotOf(te1, offers[4], p2, false),
	}}, rec.takeNewSlots())
	assert.Equal(t, 3, p.NumFreeSlots())
	assert.Equal(t, 0, p.NumAllocatedSlots())
	assert.Empty(t, rec.takeDeclared(), "accepting slots does not change the requirements")

	// Offering the same slots again: the accepted ones are accepted again, nothing new.
	assert.Equal(t, []rpc.SlotOffer{offers[0], offers[1], offers[4]}, p.OfferSlots(te1, offers))
	assert.Empty(t, rec.takeNewSlots())
	assert.Equal(t, 3, p.NumFreeSlots())
	assert.Equal(t, []AllocatedSlot{
		slotOf(te1, offers[0], p1, false),
		slotOf(te1, offers[1], p1, false),
		slotOf(te1, offers[4], p2, false),
	}, p.FreeSlots())
}

func TestOfferSlotsMatching(t *testing.T) {
	p, _, rec := newTestPool(t)
	big := jobgraph.ResourceProfile{CPUCores: 2, ManagedMemory: 200 * jobgraph.MiB}
	require.NoError(t, p.SetRequirements(reqs(jobgraph.UnknownResourceProfile, 1, p1, 1)))

	offers := []rpc.SlotOffer{offer(0, big), offer(1, big), offer(2, big)}
	accepted := p.OfferSlots(te1, offers)

	// No requirement is exactly big: the first goes to UNKNOWN (first in order), the second to p1
	// (big IsMatching p1), the third is not needed.
	assert.Equal(t, offers[:2], accepted)
	assert.Equal(t, []AllocatedSlot{
		slotOf(te1, offers[0], jobgraph.UnknownResourceProfile, false),
		slotOf(te1, offers[1], p1, false),
	}, p.FreeSlots())

	// A slot p1 cannot serve a p2 requirement.
	require.NoError(t, p.IncreaseRequirements(p2, 1))
	assert.Empty(t, p.OfferSlots(te1, []rpc.SlotOffer{offer(3, p1)}))

	// Refused: an AllocationID accepted from another TaskExecutor, a zero AllocationID, a
	// malformed profile, a missing TaskExecutor.
	assert.Empty(t, p.OfferSlots(te2, offers[:1]))
	assert.Empty(t, p.OfferSlots(te2, []rpc.SlotOffer{{SlotIndex: 0, ResourceProfile: p2}}))
	assert.Empty(t, p.OfferSlots(te2, []rpc.SlotOffer{offer(0, jobgraph.ResourceProfile{CPUCores: math.NaN()})}))
	assert.Empty(t, p.OfferSlots(te2, []rpc.SlotOffer{offer(0, jobgraph.ResourceProfile{ManagedMemory: -1})}))
	assert.Empty(t, p.OfferSlots("", []rpc.SlotOffer{offer(0, p2)}))

	// The same new offer twice in one call: accepted twice, one slot.
	o := offer(4, p2)
	assert.Equal(t, []rpc.SlotOffer{o, o}, p.OfferSlots(te2, []rpc.SlotOffer{o, o}))
	assert.Equal(t, 3, p.NumFreeSlots())
	assert.Len(t, rec.takeNewSlots(), 2)
}

// Flink: testIncreasingResourceRequirementsWillSendResourceRequirementNotification,
// testDecreasingResourceRequirementsWillSendResourceRequirementNotification,
// testSetResourceRequirementsOverwritesPreviousValue.
func TestRequirements(t *testing.T) {
	p, _, rec := newTestPool(t)
	assert.Empty(t, p.Requirements())

	require.NoError(t, p.IncreaseRequirements(p1, 3))
	require.NoError(t, p.DecreaseRequirements(p1, 2))
	assert.Equal(t, [][]rpc.ResourceRequirement{reqs(p1, 3), reqs(p1, 1)}, rec.takeDeclared())

	// Errors change nothing and declare nothing.
	err := p.DecreaseRequirements(p1, 2)
	require.ErrorIs(t, err, ErrInvalidArgument)
	assert.EqualError(t, err, "slotpool: invalid argument: cannot decrease the requirements for {cpu=1.7} by 2 slots: only 1 declared")
	require.ErrorIs(t, p.IncreaseRequirements(p1, -1), ErrInvalidArgument)
	require.ErrorIs(t, p.IncreaseRequirements(jobgraph.ResourceProfile{CPUCores: math.Inf(1)}, 1), ErrInvalidArgument)
	require.ErrorIs(t, p.SetRequirements(reqs(p2, 1, p1, -1)), ErrInvalidArgument)
	// No change, no declaration.
	require.NoError(t, p.IncreaseRequirements(p2, 0))
	require.NoError(t, p.SetRequirements(reqs(p1, 1)))
	assert.Empty(t, rec.takeDeclared())
	assert.Equal(t, reqs(p1, 1), p.Requirements())

	// Set replaces; lines of one profile add up; zero counts vanish.
	require.NoError(t, p.SetRequirements(reqs(p2, 1, p1, 0, p2, 2)))
	assert.Equal(t, [][]rpc.ResourceRequirement{reqs(p2, 3)}, rec.takeDeclared())
	assert.Equal(t, reqs(p2, 3), p.Requirements())

	// Fewer requirements, fewer slots accepted.
	require.NoError(t, p.DecreaseRequirements(p2, 2))
	offers := []rpc.SlotOffer{offer(0, p2), offer(1, p2), offer(2, p2)}
	assert.Equal(t, offers[:1], p.OfferSlots(te1, offers))
}

func TestRequirementsOfRequestsAreKeptApartFromDeclared(t *testing.T) {
	p, _, rec := newTestPool(t)
	require.NoError(t, p.IncreaseRequirements(p1, 1))
	_, err := p.RequestSlot(NewSlotRequestID(), p1, 0)
	require.NoError(t, err)
	assert.Equal(t, reqs(p1, 2), p.Requirements())

	// Only the declared requirement can be decreased or replaced.
	require.ErrorIs(t, p.DecreaseRequirements(p1, 2), ErrInvalidArgument)
	require.NoError(t, p.SetRequirements(nil))
	assert.Equal(t, reqs(p1, 1), p.Requirements())
	assert.Equal(t, [][]rpc.ResourceRequirement{reqs(p1, 1), reqs(p1, 2), reqs(p1, 1)}, rec.takeDeclared())
}

// Flink: testReleaseSlotsRemovesSlots, testReleaseSlotsReturnsSlot.
func TestReleaseSlotsOfTaskExecutor(t *testing.T) {
	p, _, rec := newTestPool(t)
	r1, err := p.RequestSlot(NewSlotRequestID(), p1, 0)
	require.NoError(t, err)
	r2, err := p.RequestSlot(NewSlotRequestID(), p1, 0)
	require.NoError(t, err)
	require.NoError(t, p.IncreaseRequirements(p2, 1))
	assert.Equal(t, reqs(p2, 1, p1, 2), p.Requirements())

	o1, o2, o3 := offer(0, p1), offer(1, p2), offer(0, p1)
	require.Equal(t, []rpc.SlotOffer{o2, o1}, p.OfferSlots(te1, []rpc.SlotOffer{o2, o1}))
	require.Equal(t, []rpc.SlotOffer{o3}, p.OfferSlots(te2, []rpc.SlotOffer{o3}))
	require.True(t, r1.Done())
	require.True(t, r2.Done())
	s1, err := r1.Result()
	require.NoError(t, err)
	assert.Equal(t, slotOf(te1, o1, p1, true), s1)
	pl := &payloadRecorder{}
	require.NoError(t, p.AssignPayload(o1.AllocationID, pl))
	rec.takeDeclared()
	rec.takeNewSlots()

	cause := errors.New("TaskExecutor taskexecutor-1 lost")
	released := p.ReleaseSlots(te1, cause)

	// Exactly te1's slots, by slot index, as they were.
	assert.Equal(t, []AllocatedSlot{slotOf(te1, o1, p1, true), slotOf(te1, o2, p2, false)}, released)
	assert.Equal(t, []error{cause}, pl.causes)
	assert.Equal(t, []returnedSlot{
		{slotOf(te1, o1, p1, true), cause},
		{slotOf(te1, o2, p2, false), cause},
	}, rec.takeReturned())
	// r1's requirement is withdrawn with its slot (the scheduler re-requests for what it
	// restarts); the declared p2 stays.
	assert.Equal(t, [][]rpc.ResourceRequirement{reqs(p2, 1, p1, 1)}, rec.takeDeclared())
	assert.False(t, p.ContainsSlots(te1))
	assert.True(t, p.ContainsSlots(te2))
	assert.Equal(t, []AllocatedSlot{slotOf(te2, o3, p1, true)}, p.Slots())
	assert.Equal(t, 1, p.NumAllocatedSlots())
	assert.Equal(t, 0, p.NumFreeSlots())
	_, held := p.Request(r1.ID())
	assert.False(t, held)
	assert.False(t, p.CancelRequest(r1.ID(), nil), "the request ended with its slot")

	assert.Empty(t, p.ReleaseSlots(te1, cause))
	assert.Empty(t, rec.takeReturned())
}

// Flink: testReleaseSlotDecreasesFulfilledResourceRequirements, testReleaseSlotReturnsSlot.
func TestReleaseSlotAndReofferAfterRelease(t *testing.T) {
	t.Run("free slot of a declared requirement", func(t *testing.T) {
		p, _, rec := newTestPool(t)
		require.NoError(t, p.IncreaseRequirements(p1, 2))
		o1, o2 := offer(0, p1), offer(1, p1)
		require.Len(t, p.OfferSlots(te1, []rpc.SlotOffer{o1, o2}), 2)
		rec.takeNewSlots()
		rec.takeDeclared()

		cause := errors.New("slot failed")
		require.NoError(t, p.ReleaseSlot(o1.AllocationID, cause))
		assert.Equal(t, []returnedSlot{{slotOf(te1, o1, p1, false), cause}}, rec.takeReturned())
		assert.Empty(t, rec.takeDeclared())
		assert.Equal(t, reqs(p1, 2), p.Requirements())

		// The declared requirement is short one slot again: the re-offer is a new slot.
		assert.Equal(t, []rpc.SlotOffer{o1}, p.OfferSlots(te1, []rpc.SlotOffer{o1}))
		assert.Equal(t, [][]AllocatedSlot{{slotOf(te1, o1, p1, false)}}, rec.takeNewSlots())
		assert.Equal(t, 2, p.NumFreeSlots())
	})
	t.Run("allocated slot of a request", func(t *testing.T) {
		p, _, rec := newTestPool(t)
		r, err := p.RequestSlot(NewSlotRequestID(), p1, 0)
		require.NoError(t, err)
		o1 := offer(0, p1)
		require.Len(t, p.OfferSlots(te1, []rpc.SlotOffer{o1}), 1)
		require.True(t, r.Done())
		pl := &payloadRecorder{}
		require.NoError(t, p.AssignPayload(o1.AllocationID, pl))
		rec.takeDeclared()

		cause := errors.New("slot failed")
		require.NoError(t, p.ReleaseSlot(o1.AllocationID, cause))
		assert.Equal(t, []error{cause}, pl.causes)
		assert.Equal(t, []returnedSlot{{slotOf(te1, o1, p1, true), cause}}, rec.takeReturned())
		assert.Equal(t, [][]rpc.ResourceRequirement{{}}, rec.takeDeclared())

		// Nothing is required any more: the re-offer is refused.
		assert.Empty(t, p.OfferSlots(te1, []rpc.SlotOffer{o1}))
		assert.Empty(t, rec.takeNewSlots())

		err = p.ReleaseSlot(o1.AllocationID, cause)
		require.ErrorIs(t, err, ErrUnknownSlot)
		assert.EqualError(t, err, "slotpool: slot "+o1.AllocationID.String()+": unknown slot")
	})
}

func TestAllocateAndFreeRoundTrip(t *testing.T) {
	p, _, rec := newTestPool(t)
	r1, err := p.RequestSlot(NewSlotRequestID(), p1, 0)
	require.NoError(t, err)
	o1 := offer(0, p1)
	require.Len(t, p.OfferSlots(te1, []rpc.SlotOffer{o1}), 1)
	require.True(t, p.CancelRequest(r1.ID(), nil))
	assert.Equal(t, [][]AllocatedSlot{{slotOf(te1, o1, p1, false)}}, rec.takeNewSlots())
	assert.Equal(t, [][]rpc.ResourceRequirement{reqs(p1, 1), {}}, rec.takeDeclared())
	assert.Equal(t, []AllocatedSlot{slotOf(te1, o1, p1, false)}, p.FreeSlots())

	// Allocate the free slot: one requirement more, one free slot fewer.
	id := NewSlotRequestID()
	s, err := p.AllocateFreeSlot(id, o1.AllocationID, p1)
	require.NoError(t, err)
	assert.Equal(t, slotOf(te1, o1, p1, true), s)
	assert.Equal(t, reqs(p1, 1), p.Requirements())
	assert.Equal(t, 1, p.NumAllocatedSlots())
	assert.Equal(t, 0, p.NumFreeSlots())
	assert.Empty(t, p.FreeSlots())
	assert.Equal(t, []AllocatedSlot{s}, p.AllocatedSlots())
	pl := &payloadRecorder{}
	require.NoError(t, p.AssignPayload(o1.AllocationID, pl))
	require.ErrorIs(t, p.AssignPayload(o1.AllocationID, pl), ErrPayloadAssigned)

	// Not allowed on an allocated, unknown or too small slot, nor twice for one request.
	_, err = p.AllocateFreeSlot(NewSlotRequestID(), o1.AllocationID, p1)
	require.ErrorIs(t, err, ErrSlotNotFree)
	_, err = p.AllocateFreeSlot(NewSlotRequestID(), jobgraph.NewAllocationID(), p1)
	require.ErrorIs(t, err, ErrUnknownSlot)
	_, err = p.AllocateFreeSlot(id, o1.AllocationID, p1)
	require.ErrorIs(t, err, ErrDuplicateRequest)

	// Give it back: free again, requirement withdrawn, payload released.
	require.True(t, p.CancelRequest(id, nil))
	assert.Equal(t, []error{nil}, pl.causes)
	assert.Equal(t, []AllocatedSlot{slotOf(te1, o1, p1, false)}, p.FreeSlots())
	assert.Empty(t, p.Requirements())
	assert.Equal(t, 0, p.NumAllocatedSlots())
	assert.Equal(t, 1, p.NumFreeSlots())
	assert.Equal(t, [][]AllocatedSlot{{slotOf(te1, o1, p1, false)}}, rec.takeNewSlots())
	assert.False(t, p.CancelRequest(id, nil))

	_, err = p.AllocateFreeSlot(NewSlotRequestID(), o1.AllocationID, p2)
	require.ErrorIs(t, err, ErrProfileMismatch)
	assert.Empty(t, rec.takeReturned())
}

// The declarative way. Flink: testFreedSlotWillBeUsedToFulfillOutstandingResourceRequirementsOfSameProfile,
// testReserveFreeSlotForResourceUpdatesAvailableResourcesAndRequirements.
func TestReserveAndFreeReservedSlot(t *testing.T) {
	p, _, rec := newTestPool(t)
	require.NoError(t, p.IncreaseRequirements(p1, 1))
	o1 := offer(0, p1)
	require.Len(t, p.OfferSlots(te1, []rpc.SlotOffer{o1}), 1)
	rec.takeNewSlots()
	rec.takeDeclared()

	s, err := p.ReserveFreeSlot(o1.AllocationID, p1)
	require.NoError(t, err)
	assert.Equal(t, slotOf(te1, o1, p1, true), s)
	pl := &payloadRecorder{}
	require.NoError(t, p.AssignPayload(o1.AllocationID, pl))
	cause := errors.New("done")
	require.NoError(t, p.FreeReservedSlot(o1.AllocationID, cause))
	assert.Equal(t, []error{cause}, pl.causes)
	assert.Equal(t, [][]AllocatedSlot{{slotOf(te1, o1, p1, false)}}, rec.takeNewSlots())
	assert.Empty(t, rec.takeDeclared(), "the declarative way leaves the requirements alone")
	require.ErrorIs(t, p.FreeReservedSlot(o1.AllocationID, nil), ErrSlotNotAllocated)
	require.ErrorIs(t, p.AssignPayload(o1.AllocationID, pl), ErrSlotNotAllocated)
	require.ErrorIs(t, p.FreeReservedSlot(jobgraph.NewAllocationID(), nil), ErrUnknownSlot)

	// The freed slot still fulfils the requirement: a new offer is refused.
	assert.Empty(t, p.OfferSlots(te1, []rpc.SlotOffer{offer(1, p1)}))

	// Reserving a slot for another profile moves a requirement back to the slot's old one.
	large := jobgraph.ResourceProfile{ManagedMemory: 1024 * jobgraph.MiB}
	require.NoError(t, p.SetRequirements(reqs(large, 1)))
	o2 := offer(1, large)
	require.Len(t, p.OfferSlots(te1, []rpc.SlotOffer{o2}), 1)
	require.NoError(t, p.IncreaseRequirements(jobgraph.UnknownResourceProfile, 1))
	s, err = p.ReserveFreeSlot(o2.AllocationID, jobgraph.UnknownResourceProfile)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.UnknownResourceProfile, s.RequirementProfile)
	assert.Equal(t, reqs(large, 2), p.Requirements())

	_, err = p.ReserveFreeSlot(o1.AllocationID, large)
	require.ErrorIs(t, err, ErrProfileMismatch)
	_, err = p.ReserveFreeSlot(o2.AllocationID, large)
	require.ErrorIs(t, err, ErrSlotNotFree)
}

func TestRequestSlotFulfilledByOffer(t *testing.T) {
	p, ft, rec := newTestPool(t)
	r, err := p.RequestSlot(NewSlotRequestID(), p1, 0)
	require.NoError(t, err)
	assert.False(t, r.Done())
	_, err = r.Result()
	require.ErrorIs(t, err, ErrRequestPending)
	var got []AllocatedSlot
	r.OnDone(func(s AllocatedSlot, err error) {
		assert.NoError(t, err)
		got = append(got, s)
	})
	assert.Equal(t, 1, p.NumPendingRequests())
	assert.Equal(t, [][]rpc.ResourceRequirement{reqs(p1, 1)}, rec.takeDeclared())

	o := offer(3, p1)
	assert.Equal(t, []rpc.SlotOffer{o}, p.OfferSlots(te1, []rpc.SlotOffer{o}))
	assert.Equal(t, []AllocatedSlot{slotOf(te1, o, p1, true)}, got)
	assert.Equal(t, 0, p.NumPendingRequests())
	assert.Equal(t, 1, p.NumAllocatedSlots())
	assert.Empty(t, rec.takeNewSlots(), "the slot went to the request")
	assert.Empty(t, rec.takeDeclared())
	assert.Equal(t, 0, ft.Pending(), "the request timeout was stopped")

	// A callback added later runs at once.
	r.OnDone(func(s AllocatedSlot, err error) { got = append(got, s) })
	assert.Len(t, got, 2)

	// A request that a free slot can serve is done when RequestSlot returns.
	require.True(t, p.CancelRequest(r.ID(), nil))
	r2, err := p.RequestSlot(NewSlotRequestID(), jobgraph.UnknownResourceProfile, time.Second)
	require.NoError(t, err)
	require.True(t, r2.Done())
	s, err := r2.Result()
	require.NoError(t, err)
	assert.Equal(t, slotOf(te1, o, jobgraph.UnknownResourceProfile, true), s)
	// No timeout for a request done at once. The idle timer armed while the slot was free
	// stays armed (re-allocating a slot arms and cancels nothing); when it fires the slot is
	// allocated, so nothing happens and no timer is left.
	assert.Equal(t, 1, ft.Pending(), "only the idle timer of the slot's free period")
	ft.Advance(DefaultIdleSlotTimeout)
	assert.Equal(t, 0, ft.Pending(), "no idle timer for an allocated slot")
	assert.Empty(t, rec.takeReturned())
	assert.Equal(t, 1, p.NumAllocatedSlots())
}

func TestPendingRequestsAreServedOldestFirst(t *testing.T) {
	p, _, rec := newTestPool(t)
	r1, _ := p.RequestSlot(NewSlotRequestID(), p1, 0)
	r2, _ := p.RequestSlot(NewSlotRequestID(), jobgraph.UnknownResourceProfile, 0)
	r3, _ := p.RequestSlot(NewSlotRequestID(), p1, 0)
	assert.Equal(t, reqs(jobgraph.UnknownResourceProfile, 1, p1, 2), p.Requirements())

	// A p1 slot matches the p1 requirement and goes to the oldest request it can serve: r1.
	o1 := offer(0, p1)
	p.OfferSlots(te1, []rpc.SlotOffer{o1})
	require.True(t, r1.Done())
	assert.False(t, r2.Done())
	assert.False(t, r3.Done())

	// A p2 slot can serve only UNKNOWN: r2.
	o2 := offer(1, p2)
	assert.Len(t, p.OfferSlots(te1, []rpc.SlotOffer{o2}), 1)
	require.True(t, r2.Done())
	s2, _ := r2.Result()
	assert.Equal(t, slotOf(te1, o2, jobgraph.UnknownResourceProfile, true), s2)

	// A slot given back goes straight to the pending r3: no new-slot notification.
	require.True(t, p.CancelRequest(r1.ID(), nil))
	require.True(t, r3.Done())
	s3, _ := r3.Result()
	assert.Equal(t, slotOf(te1, o1, p1, true), s3)
	assert.Empty(t, rec.takeNewSlots())
	assert.Equal(t, reqs(jobgraph.UnknownResourceProfile, 1, p1, 1), p.Requirements())
	assert.Equal(t, 0, p.NumPendingRequests())
}

// A request served by a slot that counted toward another profile moves the slot, not the
// requirements (Flink would also move a requirement and keep asking for a slot nobody needs).
func TestRequestServedBySlotOfAnotherProfile(t *testing.T) {
	p, ft, rec := newTestPool(t)
	r1, _ := p.RequestSlot(NewSlotRequestID(), p1, 0)
	o1 := offer(0, p1)
	p.OfferSlots(te1, []rpc.SlotOffer{o1})
	require.True(t, r1.Done())
	p.CancelRequest(r1.ID(), nil)
	rec.takeDeclared()

	r2, err := p.RequestSlot(NewSlotRequestID(), jobgraph.UnknownResourceProfile, 0)
	require.NoError(t, err)
	s, _ := r2.Result()
	assert.Equal(t, slotOf(te1, o1, jobgraph.UnknownResourceProfile, true), s)
	p.CancelRequest(r2.ID(), nil)
	assert.Equal(t, [][]rpc.ResourceRequirement{reqs(jobgraph.UnknownResourceProfile, 1), {}}, rec.takeDeclared())

	// Nothing is required, so the free slot is surplus and goes back when idle.
	ft.Advance(DefaultIdleSlotTimeout)
	require.Len(t, rec.returned, 1)
	assert.ErrorIs(t, rec.returned[0].cause, ErrIdleSlot)
}

func TestCancelPendingRequest(t *testing.T) {
	p, ft, rec := newTestPool(t)
	r, err := p.RequestSlot(NewSlotRequestID(), p1, 0)
	require.NoError(t, err)
	var gotErr error
	r.OnDone(func(_ AllocatedSlot, err error) { gotErr = err })

	cause := errors.New("scheduler canceled the bulk")
	require.True(t, p.CancelRequest(r.ID(), cause))
	require.ErrorIs(t, gotErr, ErrRequestCanceled)
	require.ErrorIs(t, gotErr, cause)
	assert.EqualError(t, gotErr, "slotpool: slot request "+r.ID().String()+": slot request canceled: scheduler canceled the bulk")
	assert.Equal(t, [][]rpc.ResourceRequirement{reqs(p1, 1), {}}, rec.takeDeclared())
	assert.Equal(t, 0, p.NumPendingRequests())
	assert.Equal(t, 0, ft.Pending())
	assert.False(t, p.CancelRequest(r.ID(), cause))

	// Too late for the canceled request: the offer is not needed.
	assert.Empty(t, p.OfferSlots(te1, []rpc.SlotOffer{offer(0, p1)}))
}

func TestSlotRequestTimeoutWithFakeTimers(t *testing.T) {
	p, ft, rec := newTestPool(t)
	r, err := p.RequestSlot(NewSlotRequestID(), p1, 0)
	require.NoError(t, err)
	ft.Advance(DefaultSlotRequestTimeout - time.Millisecond)
	assert.False(t, r.Done())
	ft.Advance(time.Millisecond)
	require.True(t, r.Done())
	_, err = r.Result()
	var nra *NoResourceAvailableError
	require.ErrorAs(t, err, &nra)
	assert.Equal(t, NoResourceAvailableError{RequestID: r.ID(), Profile: p1, Timeout: 300 * time.Second}, *nra)
	assert.EqualError(t, err, "slotpool: no resource available: could not allocate the required slots within the slot request timeout of 5m0s (slot request "+r.ID().String()+" for {cpu=1.7})")
	assert.Equal(t, [][]rpc.ResourceRequirement{reqs(p1, 1), {}}, rec.takeDeclared())
}

func TestIdleSlotsWithFakeTimers(t *testing.T) {
	t.Run("a slot still required stays", func(t *testing.T) {
		p, ft, rec := newTestPool(t)
		require.NoError(t, p.IncreaseRequirements(p1, 1))
		o := offer(0, p1)
		p.OfferSlots(te1, []rpc.SlotOffer{o})

		ft.Advance(60 * time.Second)
		assert.Empty(t, rec.returned)
		// No longer required at 60 s; the next look, at 100 s, returns it.
		require.NoError(t, p.DecreaseRequirements(p1, 1))
		ft.Advance(39 * time.Second)
		assert.Empty(t, rec.returned)
		ft.Advance(time.Second)
		assert.Equal(t, []AllocatedSlot{slotOf(te1, o, p1, false)}, []AllocatedSlot{rec.returned[0].slot})
		assert.Equal(t, 0, ft.Pending())
	})
	t.Run("the idle time restarts when a slot is freed again", func(t *testing.T) {
		p, ft, rec := newTestPool(t)
		id := NewSlotRequestID()
		_, err := p.RequestSlot(id, p1, 0)
		require.NoError(t, err)
		o := offer(0, p1)
		p.OfferSlots(te1, []rpc.SlotOffer{o})
		p.CancelRequest(id, nil) // free at 0 s
		ft.Advance(30 * time.Second)
		_, err = p.AllocateFreeSlot(id, o.AllocationID, p1)
		require.NoError(t, err)
		ft.Advance(10 * time.Second)
		p.CancelRequest(id, nil) // free again at 40 s
		ft.Advance(49 * time.Second)
		assert.Empty(t, rec.returned)
		ft.Advance(time.Second)
		require.Len(t, rec.returned, 1)
		assert.Equal(t, 0, p.NumFreeSlots())
	})
	t.Run("the clock decides", func(t *testing.T) {
		// A timer that fires early by the pool's clock looks again when the slot is due.
		ft := newFakeTimers()
		rec := &recorder{}
		var lag time.Duration
		p, err := New(rec.config(ft, func() time.Time { return ft.Now().Add(-lag) }))
		require.NoError(t, err)
		require.NoError(t, p.SetRequirements(reqs(p1, 1)))
		p.OfferSlots(te1, []rpc.SlotOffer{offer(0, p1)})
		require.NoError(t, p.SetRequirements(nil))
		lag = 5 * time.Second
		ft.Advance(50 * time.Second)
		assert.Empty(t, rec.returned)
		ft.Advance(5 * time.Second)
		assert.Len(t, rec.returned, 1)
	})
}

func TestCallbacksMayCallThePool(t *testing.T) {
	p, _, rec := newTestPool(t)
	r1, _ := p.RequestSlot(NewSlotRequestID(), p1, 0)
	r2, _ := p.RequestSlot(NewSlotRequestID(), p1, 0)
	var order []string
	// r1 gives its slot back as soon as it gets it; r2, still pending, takes it over.
	r1.OnDone(func(s AllocatedSlot, err error) {
		order = append(order, "r1")
		assert.True(t, p.CancelRequest(r1.ID(), nil))
	})
	r2.OnDone(func(s AllocatedSlot, err error) {
		order = append(order, "r2")
		require.NoError(t, p.AssignPayload(s.AllocationID, PayloadFunc(func(error) {
			order = append(order, "r2 payload released")
			p.CancelRequest(r2.ID(), nil) // the scheduler gives back the slot of a released shared slot
		})))
	})
	o := offer(0, p1)
	p.OfferSlots(te1, []rpc.SlotOffer{o})
	assert.Equal(t, []string{"r1", "r2"}, order)
	assert.Equal(t, 1, p.NumAllocatedSlots())
	assert.Equal(t, reqs(p1, 1), p.Requirements())

	require.NoError(t, p.ReleaseSlot(o.AllocationID, errors.New("lost")))
	assert.Equal(t, []string{"r1", "r2", "r2 payload released"}, order)
	assert.Empty(t, p.Requirements())
	assert.Equal(t, 0, p.NumAllocatedSlots())
	assert.Len(t, rec.takeReturned(), 1)

	// A new-slots listener that allocates what it is told about.
	p2pool, _, _ := newTestPool(t)
	var allocated []AllocatedSlot
	p2pool.onNewSlots = func(slots []AllocatedSlot) {
		for _, s := range slots {
			a, err := p2pool.AllocateFreeSlot(NewSlotRequestID(), s.AllocationID, s.RequirementProfile)
			require.NoError(t, err)
			allocated = append(allocated, a)
		}
	}
	require.NoError(t, p2pool.IncreaseRequirements(p2, 2))
	assert.Len(t, p2pool.OfferSlots(te1, []rpc.SlotOffer{offer(0, p2), offer(1, p2)}), 2)
	assert.Len(t, allocated, 2)
	assert.Equal(t, 2, p2pool.NumAllocatedSlots())
	assert.Equal(t, reqs(p2, 4), p2pool.Requirements(), "declared 2 plus 2 requests: mixing the two ways over-asks, as in Flink")
}

func TestClose(t *testing.T) {
	p, ft, rec := newTestPool(t)
	pending, _ := p.RequestSlot(NewSlotRequestID(), p2, 0)
	holding, _ := p.RequestSlot(NewSlotRequestID(), p1, 0)
	require.NoError(t, p.IncreaseRequirements(p1, 1))
	o1, o2 := offer(0, p1), offer(1, p1)
	p.OfferSlots(te1, []rpc.SlotOffer{o1, o2})
	require.True(t, holding.Done())
	pl := &payloadRecorder{}
	require.NoError(t, p.AssignPayload(o1.AllocationID, pl))
	rec.takeDeclared()

	p.Close()
	_, err := pending.Result()
	require.ErrorIs(t, err, ErrPoolClosed)
	require.Len(t, pl.causes, 1)
	require.ErrorIs(t, pl.causes[0], ErrPoolClosed)
	returned := rec.takeReturned()
	require.Len(t, returned, 2)
	assert.Equal(t, slotOf(te1, o1, p1, true), returned[0].slot)
	assert.Equal(t, slotOf(te1, o2, p1, false), returned[1].slot)
	require.ErrorIs(t, returned[1].cause, ErrPoolClosed)
	assert.Empty(t, rec.takeDeclared(), "no declaration while closing")
	assert.Equal(t, 0, ft.Pending())
	assert.Empty(t, p.Requirements())
	assert.Equal(t, 0, p.NumPendingRequests()+p.NumFreeSlots()+p.NumAllocatedSlots())

	p.Close()
	_, err = p.RequestSlot(NewSlotRequestID(), p1, 0)
	require.ErrorIs(t, err, ErrPoolClosed)
	require.ErrorIs(t, p.IncreaseRequirements(p1, 1), ErrPoolClosed)
	assert.Empty(t, p.OfferSlots(te1, []rpc.SlotOffer{offer(2, p1)}))
	assert.Empty(t, p.ReleaseSlots(te1, nil))
	assert.False(t, p.CancelRequest(holding.ID(), nil))
}

func TestInvalidInput(t *testing.T) {
	_, err := New(Config{})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = New(Config{Timers: newFakeTimers(), SlotRequestTimeout: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = New(Config{Timers: newFakeTimers(), IdleSlotTimeout: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)

	p, _, rec := newTestPool(t)
	_, err = p.RequestSlot(SlotRequestID{}, p1, 0)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = p.RequestSlot(NewSlotRequestID(), p1, -time.Second)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = p.RequestSlot(NewSlotRequestID(), jobgraph.ResourceProfile{CPUCores: -1}, 0)
	require.ErrorIs(t, err, ErrInvalidArgument)
	id := NewSlotRequestID()
	_, err = p.RequestSlot(id, p1, 0)
	require.NoError(t, err)
	_, err = p.RequestSlot(id, p1, 0)
	require.ErrorIs(t, err, ErrDuplicateRequest)
	require.ErrorIs(t, p.AssignPayload(jobgraph.NewAllocationID(), nil), ErrInvalidArgument)
	require.ErrorIs(t, p.AssignPayload(jobgraph.NewAllocationID(), &payloadRecorder{}), ErrUnknownSlot)
	assert.Equal(t, [][]rpc.ResourceRequirement{reqs(p1, 1)}, rec.takeDeclared())
	assert.Equal(t, 1, p.NumPendingRequests())
}

func TestQueriesAndSlotChoice(t *testing.T) {
	p, _, _ := newTestPool(t)
	big := jobgraph.ResourceProfile{CPUCores: 2, ManagedMemory: 200 * jobgraph.MiB}
	require.NoError(t, p.SetRequirements(reqs(jobgraph.UnknownResourceProfile, 1, big, 1)))
	small, large := offer(1, p2), offer(0, big)
	require.Len(t, p.OfferSlots(te1, []rpc.SlotOffer{small, large}), 2)

	s, ok := p.Slot(small.AllocationID)
	require.True(t, ok)
	assert.Equal(t, slotOf(te1, small, jobgraph.UnknownResourceProfile, false), s)
	assert.Equal(t, rpc.SlotID{ResourceID: te1, SlotNumber: 1}, s.SlotID())
	_, ok = p.Slot(jobgraph.NewAllocationID())
	assert.False(t, ok)
	assert.Equal(t, []AllocatedSlot{
		slotOf(te1, large, big, false),
		slotOf(te1, small, jobgraph.UnknownResourceProfile, false),
	}, p.TaskExecutorSlots(te1))
	assert.Empty(t, p.TaskExecutorSlots(te2))

	// No free slot counts toward p1; the p2 slot (counting toward UNKNOWN, first in order)
	// cannot serve it, the big one can.
	r, err := p.RequestSlot(NewSlotRequestID(), p1, 0)
	require.NoError(t, err)
	assert.Equal(t, p1, r.Profile())
	got, err := r.Result()
	require.NoError(t, err)
	assert.Equal(t, large.AllocationID, got.AllocationID)
	held, ok := p.Request(r.ID())
	require.True(t, ok)
	assert.Same(t, r, held)

	// FreeReservedSlot on a slot a request holds ends that request.
	require.NoError(t, p.FreeReservedSlot(large.AllocationID, nil))
	_, ok = p.Request(r.ID())
	assert.False(t, ok)
	assert.Equal(t, reqs(jobgraph.UnknownResourceProfile, 1, big, 1), p.Requirements())
	assert.Equal(t, 2, p.NumFreeSlots())
}

func TestOnDoneInsideCallbacksKeepsOrder(t *testing.T) {
	p, _, _ := newTestPool(t)
	r1, _ := p.RequestSlot(NewSlotRequestID(), p1, 0)
	r2, _ := p.RequestSlot(NewSlotRequestID(), p1, 0)
	var order []string
	r1.OnDone(func(AllocatedSlot, error) {
		order = append(order, "r1")
		require.True(t, r2.Done(), "both slots are allocated before any callback runs")
		r2.OnDone(func(AllocatedSlot, error) { order = append(order, "r2 added late") })
	})
	r2.OnDone(func(AllocatedSlot, error) { order = append(order, "r2") })
	p.OfferSlots(te1, []rpc.SlotOffer{offer(0, p1), offer(1, p1)})
	assert.Equal(t, []string{"r1", "r2", "r2 added late"}, order)
}

// Requests made inside one Batch declare their requirements once, and a request fulfilled at
// once inside it completes (OnDone) after the batch's function returned; outside a Batch each
// request declares on its own.
func TestBatchDeclaresTheRequirementsOfManyRequestsOnce(t *testing.T) {
	p, _, rec := newTestPool(t)
	for i := range 3 {
		_, err := p.RequestSlot(NewSlotRequestID(), p1, 0)
		require.NoError(t, err, "request %d", i)
	}
	assert.Equal(t, [][]rpc.ResourceRequirement{reqs(p1, 1), reqs(p1, 2), reqs(p1, 3)}, rec.takeDeclared())

	p, _, rec = newTestPool(t)
	require.NoError(t, p.IncreaseRequirements(p1, 3))
	require.Len(t, p.OfferSlots(te1, []rpc.SlotOffer{offer(0, p1), offer(1, p1), offer(2, p1)}), 3)
	rec.takeDeclared()
	var order []string
	p.Batch(func() {
		for i := range 3 {
			r, err := p.RequestSlot(NewSlotRequestID(), p1, 0)
			require.NoError(t, err, "request %d", i)
			r.OnDone(func(AllocatedSlot, error) { order = append(order, fmt.Sprintf("done %d", i)) })
		}
		order = append(order, "batch returns")
	})
	assert.Equal(t, []string{"batch returns", "done 0", "done 1", "done 2"}, order)
	assert.Equal(t, [][]rpc.ResourceRequirement{reqs(p1, 6)}, rec.takeDeclared(), "one declaration for the three requests")
}
