package slotpool

import (
	"container/list"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
)

// RequestSlot asks for a slot of profile pr and adds one requirement for it. A free matching slot
// is allocated at once (the request is done when RequestSlot returns); otherwise the request waits
// for one, and fails with a *NoResourceAvailableError (errors.Is ErrNoResourceAvailable) if none
// comes within timeout (0 means the configured slot.request.timeout). Once the request ends (it
// fails, is canceled, or its slot is given back or lost) its requirement is withdrawn.
// Flink: PhysicalSlotProvider.allocatePhysicalSlot / DeclarativeSlotPoolBridge.requestNewAllocatedSlot.
func (p *Pool) RequestSlot(id SlotRequestID, pr jobgraph.ResourceProfile, timeout time.Duration) (*SlotRequest, error) {
	p.enter()
	defer p.leave()
	if err := p.checkNewRequest(id, pr); err != nil {
		return nil, err
	}
	if timeout < 0 {
		return nil, invalid("slot request %s: negative timeout %v", id, timeout)
	}
	if timeout == 0 {
		timeout = p.reqTimeout
	}
	p.seq++
	r := &SlotRequest{pool: p, id: id, profile: pr, timeout: timeout, seq: p.seq}
	p.requests[id] = r
	p.addRequested(pr, 1)
	if s := p.findFreeSlot(pr); s != nil {
		p.allocate(s, pr, r)
		r.complete(p, s.snapshot(), nil)
		return r, nil
	}
	l := p.pending[pr]
	if l == nil {
		l = list.New()
		p.pending[pr] = l
	}
	r.elem = l.PushBack(r)
	p.numPend++
	r.cancelTimer = p.timers.Schedule(timeout, func() { p.timeOut(r) })
	return r, nil
}

// AllocateFreeSlot allocates the free slot allocationID for a new request id of profile pr, adding
// one requirement for pr as RequestSlot does; CancelRequest(id, …) gives it back.
// Flink: DeclarativeSlotPoolBridge.allocateAvailableSlot.
func (p *Pool) AllocateFreeSlot(id SlotRequestID, allocationID jobgraph.AllocationID, pr jobgraph.ResourceProfile) (AllocatedSlot, error) {
	p.enter()
	defer p.leave()
	if err := p.checkNewRequest(id, pr); err != nil {
		return AllocatedSlot{}, err
	}
	s, err := p.freeSlotFor(allocationID, pr)
	if err != nil {
		return AllocatedSlot{}, err
	}
	p.seq++
	r := &SlotRequest{pool: p, id: id, profile: pr, seq: p.seq}
	p.requests[id] = r
	p.addRequested(pr, 1)
	p.allocate(s, pr, r)
	r.complete(p, s.snapshot(), nil)
	return r.result, nil
}

func (p *Pool) checkNewRequest(id SlotRequestID, pr profile) error {
	if err := p.checkOpen(); err != nil {
		return err
	}
	if id.IsZero() {
		return invalid("zero slot request ID")
	}
	if _, dup := p.requests[id]; dup {
		return fmt.Errorf("slotpool: slot request %s: %w", id, ErrDuplicateRequest)
	}
	return checkProfile(pr)
}

func (p *Pool) freeSlotFor(allocationID jobgraph.AllocationID, pr profile) (*slot, error) {
	s, ok := p.slots[allocationID]
	switch {
	case !ok:
		return nil, fmt.Errorf("slotpool: slot %s: %w", allocationID, ErrUnknownSlot)
	case s.allocated:
		return nil, fmt.Errorf("slotpool: slot %s: %w", allocationID, ErrSlotNotFree)
	case !s.profile.IsMatching(pr):
		return nil, fmt.Errorf("slotpool: slot %s with %v for %v: %w", allocationID, s.profile, pr, ErrProfileMismatch)
	}
	return s, nil
}

func (p *Pool) oldestPendingFor(offered profile) *SlotRequest {
	var best *SlotRequest
	for pr, l := range p.pending {
		if r := l.Front().Value.(*SlotRequest); offered.IsMatching(pr) && (best == nil || r.seq < best.seq) {
			best = r
		}
	}
	return best
}

// unqueue takes the pending request r out of the queue and stops its timeout.
func (p *Pool) unqueue(r *SlotRequest) {
	l := p.pending[r.profile]
	l.Remove(r.elem)
	if l.Len() == 0 {
		delete(p.pending, r.profile)
	}
	r.elem = nil
	p.numPend--
	if r.cancelTimer != nil {
		r.cancelTimer()
		r.cancelTimer = nil
	}
}

// endRequest forgets r and withdraws its requirement.
func (p *Pool) endRequest(r *SlotRequest) {
	delete(p.requests, r.id)
	p.addRequested(r.profile, -1)
	if r.slot != nil {
		r.slot.request = nil
		r.slot = nil
	}
}

func (p *Pool) timeOut(r *SlotRequest) {
	p.enter()
	defer p.leave()
	if p.closed || r.elem == nil {
		return
	}
	r.cancelTimer = nil
	p.unqueue(r)
	p.endRequest(r)
	r.complete(p, AllocatedSlot{}, &NoResourceAvailableError{RequestID: r.id, Profile: r.profile, Timeout: r.timeout})
}

// CancelRequest ends request id whatever its state and withdraws its requirement: a pending request
// fails with an error matching ErrRequestCanceled (and cause); an allocated one gives its slot back
// to the pool as a free slot, releasing the slot's payload with cause. It reports whether there was
// such a request. Flink: PhysicalSlotProvider.cancelSlotRequest / DeclarativeSlotPoolBridge.releaseSlot.
func (p *Pool) CancelRequest(id SlotRequestID, cause error) bool {
	p.enter()
	defer p.leave()
	r, ok := p.requests[id]
	if !ok || p.closed {
		return false
	}
	if r.elem != nil {
		p.unqueue(r)
		p.endRequest(r)
		r.complete(p, AllocatedSlot{}, withCause(ErrRequestCanceled, fmt.Sprintf("slot request %s", id), cause))
		return true
	}
	s := r.slot
	p.endRequest(r)
	p.giveBack(s, cause)
	return true
}

// giveBack makes the allocated slot s free again; a slot of a blocked TaskExecutor leaves the
// pool instead (see Config.BlockedTaskExecutor).
func (p *Pool) giveBack(s *slot, cause error) {
	if p.blocked != nil {
		if why := p.blocked(s.taskExecutor); why != nil {
			p.releasePayload(s, cause)
			p.remove(s, why)
			return
		}
	}
	p.releasePayload(s, cause)
	p.pushFree(s, p.clock())
	p.slotBecameFree(s)
}

func (p *Pool) releasePayload(s *slot, cause error) {
	if pl := s.payload; pl != nil {
		s.payload = nil
		p.effects = append(p.effects, effect{payload: pl, cause: cause})
	}
}
