package slotpool

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/jobgraph/jobgraph"
)

// ReserveFreeSlot allocates the free slot allocationID for profile pr without a slot request: the
// declarative way, which leaves the requirements to the caller. If the slot counted toward another
// requirement, it now counts toward pr, and one declared requirement moves from pr to the old
// profile so that enough slots are still asked for (as in Flink).
// Flink: DeclarativeSlotPool.reserveFreeSlot.
func (p *Pool) ReserveFreeSlot(allocationID jobgraph.AllocationID, pr jobgraph.ResourceProfile) (AllocatedSlot, error) {
	p.enter()
	defer p.leave()
	if err := p.checkOpen(); err != nil {
		return AllocatedSlot{}, err
	}
	if err := checkProfile(pr); err != nil {
		return AllocatedSlot{}, err
	}
	s, err := p.freeSlotFor(allocationID, pr)
	if err != nil {
		return AllocatedSlot{}, err
	}
	old := s.req
	p.allocate(s, pr, nil)
	if old != pr {
		p.addDeclared(pr, -1)
		p.addDeclared(old, 1)
	}
	return s.snapshot(), nil
}

// FreeReservedSlot makes the allocated slot allocationID free again, releasing its payload with
// cause. The slot keeps counting toward the requirement it was allocated for; a pending request may
// take it at once. For a slot that a request holds, this is CancelRequest of that request.
// Flink: DeclarativeSlotPool.freeReservedSlot.
func (p *Pool) FreeReservedSlot(allocationID jobgraph.AllocationID, cause error) error {
	p.enter()
	defer p.leave()
	if err := p.checkOpen(); err != nil {
		return err
	}
	s, ok := p.slots[allocationID]
	switch {
	case !ok:
		return fmt.Errorf("slotpool: slot %s: %w", allocationID, ErrUnknownSlot)
	case !s.allocated:
		return fmt.Errorf("slotpool: slot %s: %w", allocationID, ErrSlotNotAllocated)
	}
	if s.request != nil {
		p.endRequest(s.request)
	}
	p.giveBack(s, cause)
	return nil
}

// AssignPayload puts payload into the allocated slot allocationID. Releasing the slot (CancelRequest,
// FreeReservedSlot, ReleaseSlot, ReleaseSlots, Close) calls payload.Release once.
func (p *Pool) AssignPayload(allocationID jobgraph.AllocationID, payload Payload) error {
	if err := p.checkOpen(); err != nil {
		return err
	}
	if payload == nil {
		return invalid("nil payload for slot %s", allocationID)
	}
	s, ok := p.slots[allocationID]
	switch {
	case !ok:
		return fmt.Errorf("slotpool: slot %s: %w", allocationID, ErrUnknownSlot)
	case !s.allocated:
		return fmt.Errorf("slotpool: slot %s: %w", allocationID, ErrSlotNotAllocated)
	case s.payload != nil:
		return fmt.Errorf("slotpool: slot %s: %w", allocationID, ErrPayloadAssigned)
	}
	s.payload = payload
	return nil
}

// ReleaseSlot removes slot allocationID from the pool, e.g. because its TaskExecutor reported it
// failed: its payload is released with cause, the request holding it (if any) ends and its
// requirement is withdrawn, and OnReturnSlot is called.
// Flink: DeclarativeSlotPoolService.failAllocation.
func (p *Pool) ReleaseSlot(allocationID jobgraph.AllocationID, cause error) error {
	p.enter()
	defer p.leave()
	if err := p.checkOpen(); err != nil {
		return err
	}
	s, ok := p.slots[allocationID]
	if !ok {
		return fmt.Errorf("slotpool: slot %s: %w", allocationID, ErrUnknownSlot)
	}
	p.remove(s, cause)
	return nil
}

// ReleaseSlots removes every slot of taskExecutor, as ReleaseSlot does each, and returns them as
// they were (free or allocated), sorted by slot index: the TaskExecutor is gone and the caller
// fails what ran there. Flink: DeclarativeSlotPoolService.releaseTaskManager.
func (p *Pool) ReleaseSlots(taskExecutor jobgraph.ResourceID, cause error) []AllocatedSlot {
	p.enter()
	defer p.leave()
	if p.closed {
		return nil
	}
	slots := slices.SortedFunc(maps.Values(p.byOwner[taskExecutor]), compareSlots)
	out := make([]AllocatedSlot, 0, len(slots))
	for _, s := range slots {
		out = append(out, s.snapshot())
		p.remove(s, cause)
	}
	return out
}

// remove takes s out of the pool.
func (p *Pool) remove(s *slot, cause error) {
	snap := s.snapshot()
	p.removeFree(s)
	p.cancelIdle(s)
	delete(p.slots, s.id)
	if owned := p.byOwner[s.taskExecutor]; owned != nil {
		delete(owned, s.id)
		if len(owned) == 0 {
			delete(p.byOwner, s.taskExecutor)
		}
	}
	p.fulfilled.add(s.req, -1)
	if s.request != nil {
		p.endRequest(s.request)
	}
	p.releasePayload(s, cause)
	if p.onReturnSlot != nil {
		p.effects = append(p.effects, effect{fn: func() { p.onReturnSlot(snap, cause) }})
	}
}

// Close fails the pending requests, releases every slot (payloads are released and OnReturnSlot
// is called, with a cause matching ErrPoolClosed) and clears the requirements, without declaring
// them (the JobMaster disconnects from the ResourceManager instead). Later calls fail with
// ErrPoolClosed. Closing twice is harmless. Flink: DeclarativeSlotPoolService.close.
func (p *Pool) Close() {
	p.enter()
	defer p.leave()
	if p.closed {
		return
	}
	p.closed = true
	cause := errPoolClosed
	var queued []*SlotRequest
	for _, l := range p.pending {
		for e := l.Front(); e != nil; e = e.Next() {
			queued = append(queued, e.Value.(*SlotRequest))
		}
	}
	slices.SortFunc(queued, func(a, b *SlotRequest) int { return cmp.Compare(a.seq, b.seq) })
	for _, r := range queued {
		p.unqueue(r)
		p.endRequest(r)
		r.complete(p, AllocatedSlot{}, cause)
	}
	for _, s := range slices.SortedFunc(maps.Values(p.slots), compareSlots) {
		p.remove(s, cause)
	}
	p.declared, p.requested, p.total = counter{}, counter{}, counter{}
}

func (p *Pool) checkOpen() error {
	if p.closed {
		return errPoolClosed
	}
	return nil
}

// ---- queries ----

// Slot returns the slot allocationID.
func (p *Pool) Slot(allocationID jobgraph.AllocationID) (AllocatedSlot, bool) {
	s, ok := p.slots[allocationID]
	if !ok {
		return AllocatedSlot{}, false
	}
	return s.snapshot(), true
}

// Slots returns every slot in the pool, sorted by TaskExecutor, slot index and AllocationID.
func (p *Pool) Slots() []AllocatedSlot { return p.snapshots(func(*slot) bool { return true }) }

// FreeSlots returns the free slots, sorted by TaskExecutor, slot index and AllocationID.
// Flink: DeclarativeSlotPool.getFreeSlotsInformation.
func (p *Pool) FreeSlots() []AllocatedSlot {
	return p.snapshots(func(s *slot) bool { return !s.allocated })
}

// AllocatedSlots returns the allocated slots, sorted by TaskExecutor, slot index and AllocationID.
func (p *Pool) AllocatedSlots() []AllocatedSlot {
	return p.snapshots(func(s *slot) bool { return s.allocated })
}

// TaskExecutorSlots returns the slots of taskExecutor, sorted by slot index.
func (p *Pool) TaskExecutorSlots(taskExecutor jobgraph.ResourceID) []AllocatedSlot {
	slots := slices.SortedFunc(maps.Values(p.byOwner[taskExecutor]), compareSlots)
	out := make([]AllocatedSlot, len(slots))
	for i, s := range slots {
		out[i] = s.snapshot()
	}
	return out
}

// ContainsSlots reports whether the pool holds any slot of taskExecutor.
func (p *Pool) ContainsSlots(taskExecutor jobgraph.ResourceID) bool {
	return len(p.byOwner[taskExecutor]) > 0
}

func (p *Pool) snapshots(keep func(*slot) bool) []AllocatedSlot {
	var slots []*slot
	for _, s := range p.slots {
		if keep(s) {
			slots = append(slots, s)
		}
	}
	slices.SortFunc(slots, compareSlots)
	out := make([]AllocatedSlot, len(slots))
	for i, s := range slots {
		out[i] = s.snapshot()
	}
	return out
}

// NumAllocatedSlots is the number of allocated (in use) slots.
func (p *Pool) NumAllocatedSlots() int { return len(p.slots) - p.numFree }

// NumFreeSlots is the number of free slots.
func (p *Pool) NumFreeSlots() int { return p.numFree }

// NumPendingRequests is the number of slot requests waiting for a slot.
func (p *Pool) NumPendingRequests() int { return p.numPend }

// Request returns the pending or allocated request id.
func (p *Pool) Request(id SlotRequestID) (*SlotRequest, bool) {
	r, ok := p.requests[id]
	return r, ok
}
