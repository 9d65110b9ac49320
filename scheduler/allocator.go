package scheduler

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/slotpool"
)

// slotAllocator is the slot-sharing execution slot allocator: it groups subtasks into execution
// slot sharing groups, keeps at most one shared slot (one physical slot of the pool) per group
// while any execution of the group needs it, and completes bulks once all their shared slots are
// there. Flink: SlotSharingExecutionSlotAllocator with SharedSlot, and the slot sharing strategy.
//
// Groups: for every slot sharing group name, group k holds subtask k of each job vertex in it
// (co-located vertices, which share a name and a parallelism, so land in the same group); a job
// vertex without a name has a group per subtask of its own. (Flink's
// LocalInputPreferredSlotSharingStrategy also tries to put a consumer with its pointwise
// producer; this is the plain by-index assignment.) A group's slot profile is the sum of its
// members' ResourceProfiles, UNKNOWN if all are (Flink's merge turns any UNKNOWN member into an
// UNKNOWN sum; summing the known ones asks for at least what is known).
type slotAllocator struct {
	s       *DefaultScheduler
	pool    SlotPool
	timeout time.Duration
	newID   func() slotpool.SlotRequestID // Config.NewSlotRequestID, or slotpool.NewSlotRequestID

	groupOf []*slotGroup  // by ExecutionVertex.Index
	logical []*sharedSlot // by ExecutionVertex.Index: the shared slot the current execution holds
	groups  []*slotGroup

	// While hold > 0, shared slots that lose their last execution are kept in deferred and given
	// back when the hold ends, so that a slot freed by a failing task is not handed to another
	// bulk (and deployed there) just before the failure handling cancels that bulk.
	hold     int
	deferred []*sharedSlot
}

// slotGroup is an execution slot sharing group. Flink: ExecutionSlotSharingGroup.
type slotGroup struct {
	profile jobgraph.ResourceProfile
	shared  *sharedSlot // the live shared slot, if any
}

// sharedSlot is one physical slot (requested or allocated) shared by the executions of a group.
// Flink: SharedSlot.
type sharedSlot struct {
	alloc    *slotAllocator
	group    *slotGroup
	id       slotpool.SlotRequestID
	request  SlotRequest
	slot     slotpool.AllocatedSlot
	ready    bool // the physical slot is allocated
	released bool // given back, failed or lost: no longer usable
	members  int  // executions holding a logical slot of it
	holders  []*executiongraph.Execution
	waiting  []*bulk
	lastBulk *bulk
	// Where holders and waiting start: a shared slot of a source → sink group holds two
	// executions and waits for one bulk, so a restart of 10,000 such slots allocates no slice
	// for either.
	holdersBuf [2]*executiongraph.Execution
	waitingBuf [1]*bulk
}

// bulk is one AllocateSlotsAndDeploy call waiting for its shared slots.
// Flink: the bulk of DefaultExecutionDeployer / PhysicalSlotRequestBulk.
type bulk struct {
	entries []bulkEntry
	pending int // shared slots not ready yet
	done    bool
}

type bulkEntry struct {
	exec    *executiongraph.Execution
	version uint64 // the scheduler's version of the vertex when the bulk was scheduled
	slot    *sharedSlot
}

func newSlotAllocator(s *DefaultScheduler, pool SlotPool, timeout time.Duration, newID func() slotpool.SlotRequestID) *slotAllocator {
	g := s.graph
	if newID == nil {
		newID = sequentialSlotRequestIDs(slotpool.NewSlotRequestID())
	}
	a := &slotAllocator{
		s:       s,
		pool:    pool,
		timeout: timeout,
		newID:   newID,
		groupOf: make([]*slotGroup, g.NumVertices()),
		logical: make([]*sharedSlot, g.NumVertices()),
	}
	named := map[string][]*slotGroup{}
	for _, jv := range g.JobVertices() {
		name := jv.JobVertex().SlotSharingGroup
		profile := jv.JobVertex().Resources
		var list []*slotGroup
		if name != "" {
			list = named[name]
		}
		for k := range jv.Parallelism() {
			if k >= len(list) {
				grp := &slotGroup{}
				a.groups = append(a.groups, grp)
				list = append(list, grp)
			}
			grp := list[k]
			grp.profile = grp.profile.Merge(profile)
			a.groupOf[jv.Vertex(k).Index()] = grp
		}
		if name != "" {
			named[name] = list
		}
	}
	return a
}

// sequentialSlotRequestIDs returns base+1, base+2, … (the last 8 bytes counted as a big-endian
// number, wrapping around), skipping the zero ID.
func sequentialSlotRequestIDs(base slotpool.SlotRequestID) func() slotpool.SlotRequestID {
	next := base
	return func() slotpool.SlotRequestID {
		for {
			binary.BigEndian.PutUint64(next[8:], binary.BigEndian.Uint64(next[8:])+1)
			if !next.IsZero() {
				return next
			}
		}
	}
}

// allocate gives each execution (all SCHEDULED) a logical slot in its group's shared slot,
// requesting the shared slots that do not exist yet, and deploys the bulk once all are there
// (at once if they are already). Flink: SlotSharingExecutionSlotAllocator.allocateSlotsFor.
func (a *slotAllocator) allocate(execs []*executiongraph.Execution) {
	if len(execs) == 0 {
		return
	}
	b := &bulk{entries: make([]bulkEntry, 0, len(execs))}
	var fresh []*sharedSlot
	for _, e := range execs {
		v := e.Vertex()
		grp := a.groupOf[v.Index()]
		ss := grp.shared
		if ss == nil {
			ss = &sharedSlot{alloc: a, group: grp, id: a.newID()}
			ss.holders, ss.waiting = ss.holdersBuf[:0], ss.waitingBuf[:0]
			grp.shared = ss
			fresh = append(fresh, ss)
		}
		ss.members++
		ss.holders = append(ss.holders, e)
		a.logical[v.Index()] = ss
		b.entries = append(b.entries, bulkEntry{exec: e, version: a.s.versions[v.Index()], slot: ss})
		if !ss.ready && ss.lastBulk != b {
			ss.lastBulk = b
			ss.waiting = append(ss.waiting, b)
			b.pending++
		}
	}
	if b.pending == 0 {
		a.complete(b)
		return
	}
	requestAll := func() {
		for _, ss := range fresh {
			if !ss.released {
				a.request(ss)
			}
		}
	}
	// One pool change for the whole bulk: the pool declares its requirements once, not once per
	// request, and the requests it fulfils at once complete after the loop.
	if bp, ok := a.pool.(batchingPool); ok {
		bp.Batch(requestAll)
	} else {
		requestAll()
	}
}

// batchingPool is a SlotPool that can take many calls as one change (*slotpool.Pool.Batch).
type batchingPool interface{ Batch(fn func()) }

func (a *slotAllocator) complete(b *bulk) {
	if b.done {
		return
	}
	b.done = true
	a.s.deployBulk(b)
}

// request asks the pool for ss's physical slot.
func (a *slotAllocator) request(ss *sharedSlot) {
	r, err := a.pool.RequestSlot(ss.id, ss.group.profile, a.timeout)
	if err != nil {
		a.fail(ss, err)
		return
	}
	ss.request = r
	r.OnDone(func(slot slotpool.AllocatedSlot, err error) {
		a.s.enter()
		defer a.s.leave()
		a.requestDone(ss, r, slot, err)
	})
}

func (a *slotAllocator) requestDone(ss *sharedSlot, r SlotRequest, slot slotpool.AllocatedSlot, err error) {
	if ss.released || ss.request != r {
		return
	}
	if err != nil {
		ss.request = nil // the pool ended the request
		a.fail(ss, err)
		return
	}
	if perr := a.pool.AssignPayload(slot.AllocationID, ss); perr != nil {
		a.fail(ss, perr)
		return
	}
	ss.slot, ss.ready = slot, true
	waiting := ss.waiting
	ss.waiting, ss.lastBulk = nil, nil
	for _, b := range waiting {
		if b.pending--; b.pending == 0 {
			a.complete(b)
		}
	}
}

// fail gives up ss (its request failed) and fails the executions waiting for it.
func (a *slotAllocator) fail(ss *sharedSlot, err error) {
	if ss.released {
		return
	}
	a.forget(ss)
	if ss.request != nil {
		a.pool.CancelRequest(ss.id, err)
		ss.request = nil
	}
	ss.waiting, ss.lastBulk = nil, nil
	a.s.slotRequestFailed(ss.holders, err)
}

// forget marks ss unusable; new executions of its group get a new shared slot.
func (a *slotAllocator) forget(ss *sharedSlot) {
	ss.released = true
	if ss.group.shared == ss {
		ss.group.shared = nil
	}
}

// releaseLogicalSlot gives back the logical slot of e, which just became terminal; the shared
// slot goes back to the pool (or its request is canceled) once no execution holds it.
// Flink: SharedSlot.returnLogicalSlot / release.
func (a *slotAllocator) releaseLogicalSlot(e *executiongraph.Execution) {
	i := e.Vertex().Index()
	ss := a.logical[i]
	if ss == nil {
		return
	}
	a.logical[i] = nil
	if ss.members--; ss.members > 0 {
		return
	}
	ss.holders = nil
	if a.hold > 0 {
		a.deferred = append(a.deferred, ss)
		return
	}
	a.release(ss, nil)
}

// holdReleases defers giving back shared slots until the returned function is called.
func (a *slotAllocator) holdReleases() (done func()) {
	a.hold++
	return func() {
		if a.hold--; a.hold > 0 {
			return
		}
		for len(a.deferred) > 0 {
			ss := a.deferred[0]
			a.deferred = a.deferred[1:]
			if ss.members == 0 {
				a.release(ss, nil)
			}
		}
		a.deferred = nil
	}
}

// release gives ss back to the pool: a pending request is canceled, an allocated slot becomes
// free in the pool (which returns it to its TaskExecutor after slot.idle.timeout unless another
// request takes it).
func (a *slotAllocator) release(ss *sharedSlot, cause error) {
	if ss.released {
		return
	}
	a.forget(ss)
	ss.waiting, ss.lastBulk = nil, nil
	if ss.request != nil {
		ss.request = nil
		a.pool.CancelRequest(ss.id, cause)
	}
}

// releaseAll gives back every shared slot, at the end of the job.
func (a *slotAllocator) releaseAll(cause error) {
	for _, grp := range a.groups {
		if ss := grp.shared; ss != nil {
			a.release(ss, cause)
		}
	}
	clear(a.logical)
}

// A sharedSlot is what the allocator puts into the physical slot it got (its slotpool.Payload):
// when the pool takes the slot away (TaskExecutor lost, slot failed, pool closed) while the
// scheduler still uses it, the executions in it fail.
func (ss *sharedSlot) Release(cause error) {
	a := ss.alloc
	a.s.enter()
	defer a.s.leave()
	if ss.released {
		return
	}
	a.forget(ss)
	ss.request = nil // the pool ended it
	ss.waiting, ss.lastBulk = nil, nil
	if cause == nil {
		cause = errors.New("slot released by the slot pool")
	}
	a.s.slotLost(ss.holders, ss.slot, cause)
}
