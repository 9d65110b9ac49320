package scheduler

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/slotpool"
)

// fakeSlotPool is a host's own SlotPool: it records every call and completes requests only when
// the test says so.
type fakeSlotPool struct {
	requested []slotpool.SlotRequestID
	timeouts  []time.Duration
	canceled  []slotpool.SlotRequestID
	payloads  map[jobgraph.AllocationID]slotpool.Payload
	pending   map[slotpool.SlotRequestID]*fakeSlotRequest
}

type fakeSlotRequest struct {
	done func(slotpool.AllocatedSlot, error)
}

func (r *fakeSlotRequest) OnDone(fn func(slotpool.AllocatedSlot, error)) { r.done = fn }

func (p *fakeSlotPool) RequestSlot(id slotpool.SlotRequestID, _ jobgraph.ResourceProfile, timeout time.Duration) (SlotRequest, error) {
	p.requested = append(p.requested, id)
	p.timeouts = append(p.timeouts, timeout)
	r := &fakeSlotRequest{}
	p.pending[id] = r
	return r, nil
}

func (p *fakeSlotPool) CancelRequest(id slotpool.SlotRequestID, _ error) bool {
	p.canceled = append(p.canceled, id)
	_, ok := p.pending[id]
	delete(p.pending, id)
	return ok
}

func (p *fakeSlotPool) AssignPayload(allocation jobgraph.AllocationID, payload slotpool.Payload) error {
	p.payloads[allocation] = payload
	return nil
}

var _ SlotPool = (*fakeSlotPool)(nil)

// A host substitutes its own slot pool through New: the scheduler asks it for one slot per
// subtask, deploys into the slots it hands out, and fails the job when it fails a request.
func TestSchedulerUsesASubstitutedSlotPool(t *testing.T) {
	g := jobgraph.New("fake pool", jobgraph.Batch)
	g.AddVertex("v", "noop", 2)
	pool := &fakeSlotPool{payloads: map[jobgraph.AllocationID]slotpool.Payload{}, pending: map[slotpool.SlotRequestID]*fakeSlotRequest{}}
	d := &fakeDeployer{}
	s, err := New(g, pool, d, Config{SlotRequestTimeout: 7 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	s.StartScheduling()
	require.Len(t, pool.requested, 2)
	assert.Equal(t, []time.Duration{7 * time.Second, 7 * time.Second}, pool.timeouts)
	assert.Empty(t, d.deployed)

	slot := slotpool.AllocatedSlot{AllocationID: jobgraph.NewAllocationID(), TaskExecutor: "te-1"}
	pool.pending[pool.requested[0]].done(slot, nil)
	require.Len(t, d.deployed, 1)
	assert.Equal(t, slot, d.deployed[0].slot)
	assert.Contains(t, pool.payloads, slot.AllocationID)
	assert.Equal(t, jobgraph.JobStatusRunning, s.JobStatus())

	gone := errors.New("the host's pool has no slot")
	pool.pending[pool.requested[1]].done(slotpool.AllocatedSlot{}, gone)
	assert.Equal(t, jobgraph.JobStatusFailing, s.JobStatus())
	require.ErrorIs(t, s.RootCause(), gone)
}
