package slotpool

import (
	"container/list"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/randid"
	"github.com/jobgraph/jobgraph/rpc"
)

const (
	// DefaultSlotRequestTimeout is Flink's slot.request.timeout default: a slot request that has
	// no slot after this long fails with ErrNoResourceAvailable.
	DefaultSlotRequestTimeout = 300 * time.Second
	// DefaultIdleSlotTimeout is Flink's slot.idle.timeout default: a free slot the job no longer
	// needs goes back to its TaskExecutor after staying free this long.
	DefaultIdleSlotTimeout = 50 * time.Second
)

// Timers schedules fn to run on the pool owner's main loop after d; cancel stops it if it has not
// run yet and reports whether it did. *mainloop.Loop satisfies it.
type Timers interface {
	Schedule(d time.Duration, fn func()) (cancel func() bool)
}

// Config configures a Pool. Timers is required; every other field has a default.
type Config struct {
	// Timers runs the request and idle timeouts on the owner's main loop.
	Timers Timers
	// Clock tells the time for idle-slot bookkeeping; nil means time.Now.
	Clock func() time.Time

	// SlotRequestTimeout applies to RequestSlot calls with a zero timeout.
	// Option slot.request.timeout, default 300 s (DefaultSlotRequestTimeout); 0 means the default.
	SlotRequestTimeout time.Duration
	// IdleSlotTimeout is how long a slot the job no longer needs stays free before it goes back to
	// its TaskExecutor. Option slot.idle.timeout, default 50 s (DefaultIdleSlotTimeout); 0 means
	// the default.
	IdleSlotTimeout time.Duration

	// OnRequirementsChanged receives the full, sorted requirement list whenever it changed; the
	// JobMaster declares it to the ResourceManager. It is called at most once per pool call, and
	// not after Close.
	OnRequirementsChanged func(requirements []rpc.ResourceRequirement)
	// OnNewSlots receives slots that became free (newly accepted offers, or allocated slots given
	// back) and were not taken by a pending request, so the scheduler can use them.
	OnNewSlots func(slots []AllocatedSlot)
	// OnReturnSlot is called for every slot that leaves the pool (released, lost with its
	// TaskExecutor, idle, or at Close) with the reason; the JobMaster calls
	// TaskExecutorGateway.FreeSlot (Flink does so in every one of these cases).
	OnReturnSlot func(slot AllocatedSlot, cause error)
	// BlockedTaskExecutor, if set, says whether a TaskExecutor is blocklisted, with the cause (nil
	// when it is not). An allocated slot of a blocked TaskExecutor that is given back (its
	// request canceled, FreeReservedSlot) leaves the pool with that cause instead of becoming
	// free, so no new allocation uses it; the JobMaster also declines a blocked TaskExecutor's
	// offers and releases its free slots when it is blocked. Called on the owner's loop. Flink:
	// BlocklistDeclarativeSlotPool (freeReservedSlot releases such a slot).
	BlockedTaskExecutor func(taskExecutor jobgraph.ResourceID) error
}

// AllocatedSlot describes a physical slot in the pool: a slot of a TaskExecutor that was offered to
// and accepted by this job. Methods return copies; a copy does not change with the pool.
// Flink: AllocatedSlot / PhysicalSlot.
type AllocatedSlot struct {
	AllocationID jobgraph.AllocationID
	TaskExecutor jobgraph.ResourceID
	// SlotIndex is the slot's index in its TaskExecutor's slot table.
	SlotIndex int
	// Profile is what the slot offers.
	Profile jobgraph.ResourceProfile
	// RequirementProfile is the requirement the slot counts toward: the one it matched when it
	// was accepted, or the profile it was last allocated for.
	RequirementProfile jobgraph.ResourceProfile
	// Allocated reports whether the slot was allocated (in use) rather than free.
	Allocated bool
}

// SlotID returns the TaskExecutor slot this is.
func (s AllocatedSlot) SlotID() rpc.SlotID {
	return rpc.SlotID{ResourceID: s.TaskExecutor, SlotNumber: s.SlotIndex}
}

// Payload is what the scheduler puts into an allocated physical slot: the shared slot of a slot
// sharing group, say. Release is called once when the slot stops being the payload's: it was given
// back (cause may be nil) or lost (cause says why), so the payload can fail its executions.
// Flink: PhysicalSlot.Payload.
type Payload interface {
	Release(cause error)
}

// PayloadFunc adapts a function to Payload.
type PayloadFunc func(cause error)

// Release calls f(cause).
func (f PayloadFunc) Release(cause error) { f(cause) }

// SlotRequestID names one slot request of the scheduler. Flink: SlotRequestId.
type SlotRequestID [16]byte

// NewSlotRequestID returns a random SlotRequestID.
func NewSlotRequestID() SlotRequestID { return SlotRequestID(randid.New()) }

func (id SlotRequestID) String() string { return hex.EncodeToString(id[:]) }

// IsZero reports whether id is the zero value.
func (id SlotRequestID) IsZero() bool { return id == SlotRequestID{} }

// SlotRequest is one slot request of the scheduler, a small future completed on the main loop.
// Read it and add callbacks only from the main loop.
type SlotRequest struct {
	pool    *Pool
	id      SlotRequestID
	profile jobgraph.ResourceProfile
	timeout time.Duration
	seq     uint64

	// while pending: its place in Pool.pending and its timeout
	elem        *list.Element
	cancelTimer func() bool

	// while allocated: the slot it holds
	slot *slot

	done   bool
	result AllocatedSlot
	err    error
	// The callbacks waiting for the result: the first in first (a scheduler adds one), the
	// others in more.
	first func(AllocatedSlot, error)
	more  []func(AllocatedSlot, error)
}

// ID returns the request's ID.
func (r *SlotRequest) ID() SlotRequestID { return r.id }

// Profile returns the profile the request asked for.
func (r *SlotRequest) Profile() jobgraph.ResourceProfile { return r.profile }

// Done reports whether the request got its slot or failed.
func (r *SlotRequest) Done() bool { return r.done }

// Result returns the slot the request got (as it was then) or why it failed; ErrRequestPending
// before Done.
func (r *SlotRequest) Result() (AllocatedSlot, error) {
	if !r.done {
		return AllocatedSlot{}, fmt.Errorf("slotpool: slot request %s: %w", r.id, ErrRequestPending)
	}
	return r.result, r.err
}

// OnDone calls fn with the result once the request is done, on the main loop; at once if it is
// done already. Callbacks run in the order they were added.
func (r *SlotRequest) OnDone(fn func(slot AllocatedSlot, err error)) {
	if fn == nil {
		return
	}
	if !r.done {
		if r.first == nil {
			r.first = fn
		} else {
			r.more = append(r.more, fn)
		}
		return
	}
	if r.pool.depth > 0 || r.pool.flushing {
		// Keep the order with callbacks of the same change that have not run yet. The result
		// never changes once done, so the effect reads it when it runs.
		r.pool.effects = append(r.pool.effects, effect{done: fn, req: r})
		return
	}
	fn(r.result, r.err)
}

func (r *SlotRequest) complete(p *Pool, slot AllocatedSlot, err error) {
	r.done, r.result, r.err = true, slot, err
	if r.first != nil {
		p.effects = append(p.effects, effect{done: r.first, req: r})
	}
	for _, fn := range r.more {
		p.effects = append(p.effects, effect{done: fn, req: r})
	}
	r.first, r.more = nil, nil
}
