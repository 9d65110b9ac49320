package slotpool

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/mainloop"
	"github.com/jobgraph/jobgraph/internal/manualtime"
	"github.com/jobgraph/jobgraph/rpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The JobMaster's main loop is what the pool schedules on.
var _ Timers = (*mainloop.Loop)(nil)

// Profiles of Flink's DefaultDeclarativeSlotPoolTest.
var (
	p1 = jobgraph.ResourceProfile{CPUCores: 1.7}
	p2 = jobgraph.ResourceProfile{ManagedMemory: 100 * jobgraph.MiB}
)

// fakeTimers is the hand-driven clock with timers the tests schedule on.
type fakeTimers = manualtime.Timers

func newFakeTimers() *fakeTimers { return manualtime.New(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)) }

type returnedSlot struct {
	slot  AllocatedSlot
	cause error
}

// recorder records what the pool asks its owner to do.
type recorder struct {
	declared [][]rpc.ResourceRequirement
	newSlots [][]AllocatedSlot
	returned []returnedSlot
}

func (r *recorder) config(timers Timers, clock func() time.Time) Config {
	return Config{
		Timers:                timers,
		Clock:                 clock,
		OnRequirementsChanged: func(reqs []rpc.ResourceRequirement) { r.declared = append(r.declared, reqs) },
		OnNewSlots:            func(slots []AllocatedSlot) { r.newSlots = append(r.newSlots, slots) },
		OnReturnSlot:          func(s AllocatedSlot, cause error) { r.returned = append(r.returned, returnedSlot{s, cause}) },
	}
}

// takeDeclared returns and forgets the declarations so far.
func (r *recorder) takeDeclared() [][]rpc.ResourceRequirement {
	d := r.declared
	r.declared = nil
	return d
}

func (r *recorder) takeNewSlots() [][]AllocatedSlot {
	s := r.newSlots
	r.newSlots = nil
	return s
}

func (r *recorder) takeReturned() []returnedSlot {
	s := r.returned
	r.returned = nil
	return s
}

// newTestPool returns a pool on fake timers, and what it records.
func newTestPool(t *testing.T) (*Pool, *fakeTimers, *recorder) {
	t.Helper()
	ft := newFakeTimers()
	rec := &recorder{}
	p, err := New(rec.config(ft, ft.Now))
	require.NoError(t, err)
	return p, ft, rec
}

func offer(index int, pr jobgraph.ResourceProfile) rpc.SlotOffer {
	return rpc.SlotOffer{AllocationID: jobgraph.NewAllocationID(), SlotIndex: index, ResourceProfile: pr}
}

func reqs(kv ...any) []rpc.ResourceRequirement {
	out := []rpc.ResourceRequirement{}
	for i := 0; i < len(kv); i += 2 {
		out = append(out, rpc.ResourceRequirement{Profile: kv[i].(jobgraph.ResourceProfile), Count: kv[i+1].(int)})
	}
	return out
}

// slotOf is the AllocatedSlot an accepted offer becomes.
func slotOf(te jobgraph.ResourceID, o rpc.SlotOffer, req jobgraph.ResourceProfile, allocated bool) AllocatedSlot {
	return AllocatedSlot{
		AllocationID:       o.AllocationID,
		TaskExecutor:       te,
		SlotIndex:          o.SlotIndex,
		Profile:            o.ResourceProfile,
		RequirementProfile: req,
		Allocated:          allocated,
	}
}

// payloadRecorder records the causes its payload is released with.
type payloadRecorder struct{ causes []error }

func (p *payloadRecorder) Release(cause error) { p.causes = append(p.causes, cause) }
