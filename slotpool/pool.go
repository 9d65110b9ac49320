package slotpool

import (
	"bytes"
	"cmp"
	"container/list"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// slot is a physical slot in the pool.
type slot struct {
	id           jobgraph.AllocationID
	taskExecutor jobgraph.ResourceID
	index        int
	profile      profile
	// req is the requirement the slot counts toward in Pool.fulfilled.
	req profile

	allocated bool
	request   *SlotRequest // the request holding the slot, if it was allocated by one
	payload   Payload

	// while free
	freeSince time.Time
	// in Pool.free[req], from the longest free on
	inFree             bool
	freePrev, freeNext *slot
	// The idle timeout's timer: at most one outstanding per slot, due at idleAt. It stays
	// armed while the slot is allocated (a restart allocates and frees every slot, and arming
	// a timer for each would cost three allocations a slot); when it fires it looks at the
	// slot as it is then, and re-arms for what is left of a later free period.
	idleCancel func() bool
	idleAt     time.Time
	idleGen    uint64
}

func (s *slot) snapshot() AllocatedSlot {
	return AllocatedSlot{
		AllocationID:       s.id,
		TaskExecutor:       s.taskExecutor,
		SlotIndex:          s.index,
		Profile:            s.profile,
		RequirementProfile: s.req,
		Allocated:          s.allocated,
	}
}

func compareSlots(a, b *slot) int {
	return cmp.Or(
		cmp.Compare(a.taskExecutor, b.taskExecutor),
		cmp.Compare(a.index, b.index),
		bytes.Compare(a.id[:], b.id[:]),
	)
}

// Pool is a job's slot pool. Create it with New and use it only from the owner's main loop.
// Flink: DefaultDeclarativeSlotPool with DeclarativeSlotPoolBridge.
type Pool struct {
	timers      Timers
	clock       func() time.Time
	reqTimeout  time.Duration
	idleTimeout time.Duration

	onRequirements func([]rpc.ResourceRequirement)
	onNewSlots     func([]AllocatedSlot)
	onReturnSlot   func(AllocatedSlot, error)
	blocked        func(jobgraph.ResourceID) error

	// Requirements: declared (IncreaseRequirements & co.), requested (one per pending or allocated
	// request) and their sum. fulfilled counts the slots in the pool by the requirement each
	// counts toward.
	declared, requested, total, fulfilled counter

	slots    map[jobgraph.AllocationID]*slot
	byOwner  map[jobgraph.ResourceID]map[jobgraph.AllocationID]*slot
	free     map[profile]*freeList // free slots by requirement, longest free first; a list stays when empty
	numFree  int
	requests map[SlotRequestID]*SlotRequest // pending and allocated requests
	pending  map[profile]*list.List         // pending requests by profile, oldest first
	seq      uint64
	numPend  int
	closed   bool

	// Deferred callbacks (see the package doc) and the re-entrancy bookkeeping for them.
	effects       []effect
	depth         int
	flushing      bool
	declareQueued bool
	lastDeclared  []rpc.ResourceRequirement
}

// New returns an empty pool.
func New(cfg Config) (*Pool, error) {
	if cfg.Timers == nil {
		return nil, invalid("Config.Timers is nil")
	}
	if cfg.SlotRequestTimeout < 0 {
		return nil, invalid("slot.request.timeout %v is negative", cfg.SlotRequestTimeout)
	}
	if cfg.IdleSlotTimeout < 0 {
		return nil, invalid("slot.idle.timeout %v is negative", cfg.IdleSlotTimeout)
	}
	p := &Pool{
		timers:         cfg.Timers,
		clock:          cfg.Clock,
		reqTimeout:     cmp.Or(cfg.SlotRequestTimeout, DefaultSlotRequestTimeout),
		idleTimeout:    cmp.Or(cfg.IdleSlotTimeout, DefaultIdleSlotTimeout),
		onRequirements: cfg.OnRequirementsChanged,
		onNewSlots:     cfg.OnNewSlots,
		onReturnSlot:   cfg.OnReturnSlot,
		blocked:        cfg.BlockedTaskExecutor,
		slots:          map[jobgraph.AllocationID]*slot{},
		byOwner:        map[jobgraph.ResourceID]map[jobgraph.AllocationID]*slot{},
		free:           map[profile]*freeList{},
		requests:       map[SlotRequestID]*SlotRequest{},
		pending:        map[profile]*list.List{},
		lastDeclared:   []rpc.ResourceRequirement{},
	}
	if p.clock == nil {
		p.clock = time.Now
	}
	return p, nil
}

// ---- deferred callbacks ----

func (p *Pool) enter() { p.depth++ }

// leave runs the queued callbacks once the outermost pool call is done with its changes.
// Callbacks that call the pool queue theirs behind; the loop below runs them too.
func (p *Pool) leave() {
	p.depth--
	if p.depth > 0 || p.flushing {
		return
	}
	p.flushing = true
	defer func() { p.flushing = false }()
	for i := 0; i < len(p.effects); i++ {
		e := p.effects[i]
		p.effects[i] = effect{}
		p.run(e)
	}
	p.effects = p.effects[:0]
}

// effect is one deferred callback. The frequent ones (a request's OnDone callback, a payload's
// Release, the requirements declaration, one slot for OnNewSlots) are plain data rather than a
// closure, so that a restart of 10,000 slots does not allocate a closure for each.
type effect struct {
	fn      func()                     // any other callback
	done    func(AllocatedSlot, error) // called with req's result
	req     *SlotRequest               // with done
	payload Payload                    // Release(cause)
	cause   error                      // with payload
	newSlot *slot                      // OnNewSlots of this slot, if it is still free
	declare bool                       // the requirements declaration
}

func (p *Pool) run(e effect) {
	switch {
	case e.fn != nil:
		e.fn()
	case e.done != nil:
		e.done(e.req.result, e.req.err)
	case e.payload != nil:
		e.payload.Release(e.cause)
	case e.newSlot != nil:
		// Earlier callbacks may have taken it.
		if s := e.newSlot; p.slots[s.id] == s && !s.allocated {
			p.onNewSlots([]AllocatedSlot{s.snapshot()})
		}
	case e.declare:
		p.declare()
	}
}

// Batch runs fn, which may call the pool any number of times, as one change of the pool: the
// callbacks those calls queue (OnDone of requests fulfilled at once, OnReturnSlot, the
// requirements declaration) run once fn has returned, in the order they were queued, and
// requirements changed by many requests are computed and declared once. A scheduler asking for
// the 10,000 slots of one bulk calls RequestSlot 10,000 times inside one Batch. On the pool's
// goroutine, like every method; Batch inside Batch is one batch.
func (p *Pool) Batch(fn func()) {
	p.enter()
	defer p.leave()
	fn()
}

func (p *Pool) requirementsChanged() {
	if p.declareQueued {
		return
	}
	p.declareQueued = true
	p.effects = append(p.effects, effect{declare: true})
}

// declare calls OnRequirementsChanged with the requirements if they differ from those it was
// last called with. Comparing allocates nothing; a change allocates the one list handed over.
func (p *Pool) declare() {
	p.declareQueued = false
	if p.closed || p.total.equal(p.lastDeclared) {
		return
	}
	if p.onRequirements == nil {
		p.lastDeclared = p.total.appendRequirements(p.lastDeclared[:0])
		return
	}
	reqs := p.total.appendRequirements(make([]rpc.ResourceRequirement, 0, p.total.len()))
	p.lastDeclared = append(p.lastDeclared[:0], reqs...)
	p.onRequirements(reqs)
}

func (p *Pool) addDeclared(pr profile, n int) {
	if n < 0 {
		n = -min(-n, p.declared.get(pr))
	}
	if n == 0 {
		return
	}
	p.declared.add(pr, n)
	p.total.add(pr, n)
	p.requirementsChanged()
}

func (p *Pool) addRequested(pr profile, n int) {
	p.requested.add(pr, n)
	p.total.add(pr, n)
	p.requirementsChanged()
}

// ---- requirements ----

// Requirements returns the current requirements (declared plus those of pending and allocated
// requests), one line per profile with a positive count, sorted by profile (CPU cores, then task
// heap, task off-heap, managed and network memory).
func (p *Pool) Requirements() []rpc.ResourceRequirement { return p.total.requirements() }

// IncreaseRequirements declares n more slots of profile pr.
func (p *Pool) IncreaseRequirements(pr jobgraph.ResourceProfile, n int) error {
	p.enter()
	defer p.leave()
	if err := p.checkOpen(); err != nil {
		return err
	}
	if err := checkProfile(pr); err != nil {
		return err
	}
	if n < 0 {
		return invalid("cannot increase the requirements by %d slots", n)
	}
	p.addDeclared(pr, n)
	return nil
}

// DecreaseRequirements declares n fewer slots of profile pr. It fails, changing nothing, when fewer
// than n were declared (requirements of slot requests cannot be decreased this way).
func (p *Pool) DecreaseRequirements(pr jobgraph.ResourceProfile, n int) error {
	p.enter()
	defer p.leave()
	if err := p.checkOpen(); err != nil {
		return err
	}
	if err := checkProfile(pr); err != nil {
		return err
	}
	if n < 0 {
		return invalid("cannot decrease the requirements by %d slots", n)
	}
	if have := p.declared.get(pr); n > have {
		return invalid("cannot decrease the requirements for %v by %d slots: only %d declared", pr, n, have)
	}
	p.addDeclared(pr, -n)
	return nil
}

// SetRequirements replaces the declared requirements with reqs (the requirements of slot requests
// stay). Lines with the same profile add up; a zero count is allowed. Nothing changes on error.
func (p *Pool) SetRequirements(reqs []rpc.ResourceRequirement) error {
	p.enter()
	defer p.leave()
	if err := p.checkOpen(); err != nil {
		return err
	}
	next := counter{}
	for _, r := range reqs {
		if err := checkProfile(r.Profile); err != nil {
			return err
		}
		if r.Count < 0 {
			return invalid("requirement for %v has a negative count %d", r.Profile, r.Count)
		}
		next.add(r.Profile, r.Count)
	}
	for _, l := range p.declared.lines {
		p.total.add(l.profile, -l.n)
	}
	for _, l := range next.lines {
		p.total.add(l.profile, l.n)
	}
	p.declared = next
	p.requirementsChanged()
	return nil
}

// ---- offers ----

// OfferSlots takes the slots taskExecutor offers and returns those accepted, in offer order.
// A new offer is accepted only while some requirement is not yet fulfilled: first the requirement
// with exactly the offered profile, else the first (in Requirements order) whose profile the offer
// IsMatching. An offer whose AllocationID was already accepted from the same TaskExecutor is
// accepted again and changes nothing; one already accepted from another TaskExecutor, one with a
// zero AllocationID or with a malformed profile is refused, and so is everything offered under an
// empty taskExecutor. Accepted slots go first to pending
// slot requests (oldest first), and the rest are reported to OnNewSlots.
func (p *Pool) OfferSlots(taskExecutor jobgraph.ResourceID, offers []rpc.SlotOffer) []rpc.SlotOffer {
	p.enter()
	defer p.leave()
	if p.closed || taskExecutor == "" {
		return nil
	}
	now := p.clock()
	var accepted []rpc.SlotOffer
	var added []*slot
	for _, o := range offers {
		if s, ok := p.slots[o.AllocationID]; ok {
			if s.taskExecutor == taskExecutor {
				accepted = append(accepted, o)
			}
			continue
		}
		if o.AllocationID.IsZero() || checkProfile(o.ResourceProfile) != nil {
			continue
		}
		req, ok := p.matchRequirement(o.ResourceProfile)
		if !ok {
			continue
		}
		s := &slot{
			id:           o.AllocationID,
			taskExecutor: taskExecutor,
			index:        o.SlotIndex,
			profile:      o.ResourceProfile,
			req:          req,
		}
		p.slots[s.id] = s
		owned := p.byOwner[taskExecutor]
		if owned == nil {
			owned = map[jobgraph.AllocationID]*slot{}
			p.byOwner[taskExecutor] = owned
		}
		owned[s.id] = s
		p.fulfilled.add(req, 1)
		p.pushFree(s, now)
		accepted = append(accepted, o)
		added = append(added, s)
	}
	if len(added) > 0 {
		p.slotsBecameFree(added)
	}
	return accepted
}

// matchRequirement finds the requirement an offered slot of profile offered would fulfil.
// Flink: DefaultRequirementMatcher.
func (p *Pool) matchRequirement(offered profile) (profile, bool) {
	if p.total.get(offered) > p.fulfilled.get(offered) {
		return offered, true
	}
	for _, req := range p.total.sortedKeys() {
		if offered.IsMatching(req) && p.total.get(req) > p.fulfilled.get(req) {
			return req, true
		}
	}
	return profile{}, false
}

// ---- free slots ----

// freeList is the free slots counting toward one requirement, linked through the slots
// themselves (a slot given back and taken again thousands of times in a restart allocates no list
// element).
type freeList struct {
	front, back *slot
	n           int
}

func (p *Pool) pushFree(s *slot, now time.Time) {
	l := p.free[s.req]
	if l == nil {
		l = &freeList{}
		p.free[s.req] = l
	}
	s.allocated = false
	s.freeSince = now
	s.inFree, s.freePrev, s.freeNext = true, l.back, nil
	if l.back != nil {
		l.back.freeNext = s
	} else {
		l.front = s
	}
	l.back = s
	l.n++
	p.numFree++
}

func (p *Pool) removeFree(s *slot) {
	if !s.inFree {
		return
	}
	l := p.free[s.req]
	if s.freePrev != nil {
		s.freePrev.freeNext = s.freeNext
	} else {
		l.front = s.freeNext
	}
	if s.freeNext != nil {
		s.freeNext.freePrev = s.freePrev
	} else {
		l.back = s.freePrev
	}
	l.n--
	s.inFree, s.freePrev, s.freeNext = false, nil, nil
	p.numFree--
	// The idle timer stays armed (see slot.idleCancel); remove cancels it.
}

// slotsBecameFree gives the slots, just made free, to pending requests, arms the idle timeout of
// those left, and reports them to OnNewSlots. Flink: DeclarativeSlotPoolBridge.newSlotsAreAvailable.
func (p *Pool) slotsBecameFree(slots []*slot) {
	var left []*slot
	for _, s := range slots {
		if p.takenByPending(s) {
			continue
		}
		left = append(left, s)
	}
	if len(left) == 0 || p.onNewSlots == nil {
		return
	}
	p.effects = append(p.effects, effect{fn: func() {
		// Earlier callbacks may have taken some of them.
		var out []AllocatedSlot
		for _, s := range left {
			if p.slots[s.id] == s && !s.allocated {
				out = append(out, s.snapshot())
			}
		}
		if len(out) > 0 {
			p.onNewSlots(out)
		}
	}})
}

// slotBecameFree is slotsBecameFree of one slot, without the slices: a restart gives back
// thousands of slots one at a time.
func (p *Pool) slotBecameFree(s *slot) {
	if p.takenByPending(s) || p.onNewSlots == nil {
		return
	}
	p.effects = append(p.effects, effect{newSlot: s})
}

// takenByPending gives the free slot s to the oldest pending request it fits and reports true,
// or arms its idle timeout and reports false.
func (p *Pool) takenByPending(s *slot) bool {
	if r := p.oldestPendingFor(s.profile); r != nil {
		p.unqueue(r)
		p.allocate(s, r.profile, r)
		r.complete(p, s.snapshot(), nil)
		return true
	}
	p.armIdle(s, p.idleTimeout)
	return false
}

// allocate takes the free slot s for profile pr, on behalf of request r (nil for ReserveFreeSlot).
// The slot then counts toward requirement pr.
func (p *Pool) allocate(s *slot, pr profile, r *SlotRequest) {
	p.removeFree(s)
	s.allocated = true
	if s.req != pr {
		p.fulfilled.add(s.req, -1)
		p.fulfilled.add(pr, 1)
		s.req = pr
	}
	s.request = r
	if r != nil {
		r.slot = s
	}
}

// findFreeSlot returns a free slot for profile pr: the longest-free one counting toward pr if any,
// else the longest-free matching one of the first requirement profile (in Requirements order).
func (p *Pool) findFreeSlot(pr profile) *slot {
	if l := p.free[pr]; l != nil && l.front != nil {
		return l.front
	}
	if p.numFree == 0 {
		return nil
	}
	keys := slices.SortedFunc(maps.Keys(p.free), compareProfiles)
	for _, k := range keys {
		for s := p.free[k].front; s != nil; s = s.freeNext {
			if s.profile.IsMatching(pr) {
				return s
			}
		}
	}
	return nil
}

// ---- idle slots ----

// armIdle makes sure the idle check of the free slot s runs after d: an armed timer due no
// later is kept (it re-arms for the rest when it fires), one due later is replaced.
func (p *Pool) armIdle(s *slot, d time.Duration) {
	at := p.clock().Add(d)
	if s.idleCancel != nil && !s.idleAt.After(at) {
		return
	}
	p.cancelIdle(s)
	gen := s.idleGen
	s.idleAt = at
	s.idleCancel = p.timers.Schedule(d, func() { p.checkIdle(s, gen) })
}

func (p *Pool) cancelIdle(s *slot) {
	s.idleGen++
	if s.idleCancel != nil {
		s.idleCancel()
		s.idleCancel = nil
	}
}

// checkIdle returns s to its TaskExecutor if it has been free for slot.idle.timeout and the
// requirement it counts toward has more slots than it needs; otherwise it looks again later.
// Flink: DefaultDeclarativeSlotPool.releaseIdleSlots.
func (p *Pool) checkIdle(s *slot, gen uint64) {
	p.enter()
	defer p.leave()
	if p.closed || s.idleGen != gen || p.slots[s.id] != s {
		return
	}
	s.idleCancel = nil
	if s.allocated {
		return // it arms the timer again when it is free
	}
	if idle := p.clock().Sub(s.freeSince); idle < p.idleTimeout {
		p.armIdle(s, p.idleTimeout-idle)
		return
	}
	if p.fulfilled.get(s.req) <= p.total.get(s.req) {
		p.armIdle(s, p.idleTimeout) // still needed
		return
	}
	p.remove(s, fmt.Errorf("slotpool: returning slot %s to TaskExecutor %s: %w (%v)", s.id, s.taskExecutor, ErrIdleSlot, p.idleTimeout))
}
