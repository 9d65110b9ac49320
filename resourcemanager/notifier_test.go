package resourcemanager

import (
	"errors"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// The in-process ResourceManager takes a JobMaster's declarations and disconnect without the
// caller waiting (rpc.ResourceManagerNotifier): the calls return with the loop held, run there in
// order, fenced as DeclareRequiredResources and DisconnectJobMaster are (done hears a
// *rpc.FencingError for a stale JobMasterID, ErrJobNotRegistered for a job not registered), and
// once the ResourceManager is closed done hears ErrClosed at once.
func TestNotifierQueuesFencedDeclarationsAndDisconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		te := e.addTaskExecutor("te-1", cpu(1), cpu(1))
		job, token := e.addJob("jm-address")
		n, ok := e.gw.(rpc.ResourceManagerNotifier)
		require.True(t, ok)

		var got []error
		record := func(err error) { got = append(got, err) }
		held, gate := make(chan struct{}), make(chan struct{})
		e.rm.loop.Execute(func() { close(held); <-gate })
		<-held
		rmID := e.rm.ResourceManagerID()
		n.NotifyRequiredResources(rmID, jobgraph.NewJobMasterID(), rpc.ResourceRequirements{JobID: job, Requirements: []rpc.ResourceRequirement{req(unknown, 2)}}, record)
		n.NotifyRequiredResources(rmID, token, rpc.ResourceRequirements{JobID: jobgraph.NewJobID(), Requirements: []rpc.ResourceRequirement{req(unknown, 1)}}, record)
		n.NotifyRequiredResources(rmID, token, rpc.ResourceRequirements{JobID: job, Requirements: []rpc.ResourceRequirement{req(unknown, 1)}}, record)
		assert.Empty(t, got, "nothing ran while the loop is held")
		close(gate)
		synctest.Wait()
		require.Len(t, got, 3)
		assert.ErrorIs(t, got[0], rpc.ErrFencingTokenMismatch)
		assert.ErrorIs(t, got[1], ErrJobNotRegistered)
		assert.NoError(t, got[2])
		require.Len(t, te.Calls(), 1, "one slot requested: the stale declaration of two changed nothing")
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, e.rm.Requirements(job))

		got = nil
		n.NotifyJobMasterDisconnected(rmID, jobgraph.NewJobMasterID(), job, nil, record)
		n.NotifyJobMasterDisconnected(rmID, token, job, rpc.Failure(errors.New("finished")), record)
		synctest.Wait()
		require.Len(t, got, 2)
		assert.ErrorIs(t, got[0], rpc.ErrFencingTokenMismatch)
		assert.NoError(t, got[1])
		assert.Nil(t, e.rm.Requirements(job), "the job is forgotten")

		require.NoError(t, e.rm.Close())
		got = nil
		n.NotifyRequiredResources(rmID, token, rpc.ResourceRequirements{JobID: job}, record)
		n.NotifyJobMasterDisconnected(rmID, token, job, nil, record)
		require.Len(t, got, 2, "answered at once")
		assert.ErrorIs(t, got[0], ErrClosed)
		assert.ErrorIs(t, got[1], ErrClosed)
	})
}

// notifyingTE is a fakeTaskExecutor that also takes slot requests without its caller waiting
// (rpc.TaskExecutorNotifier, as the in-process TaskExecutor): it records them and keeps the done
// callbacks for the test.
type notifyingTE struct {
	*fakeTaskExecutor
	mu        sync.Mutex
	requested []jobgraph.AllocationID
	dones     []func(error)
}

func (n *notifyingTE) NotifyRequestSlot(_ rpc.SlotID, _ jobgraph.JobID, allocation jobgraph.AllocationID, _ jobgraph.ResourceProfile, _ string, _ jobgraph.JobMasterID, _ jobgraph.ResourceManagerID, done func(error)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.requested = append(n.requested, allocation)
	n.dones = append(n.dones, done)
}
func (n *notifyingTE) NotifyFreeSlot(jobgraph.AllocationID, *jobgraph.ErrorInfo, func(error)) {}
func (n *notifyingTE) NotifyDisconnectJobMaster(jobgraph.JobMasterID, jobgraph.JobID, *jobgraph.ErrorInfo, func(error)) {
}

// A TaskExecutor whose gateway is an rpc.TaskExecutorNotifier gets its slot requests through it,
// from the ResourceManager's loop, with no goroutine of the ResourceManager's waiting for the
// answer: the slot stays pending until done is called, which completes the allocation on the
// loop as RequestSlot's answer does.
func TestSlotRequestsGoThroughTheNotifier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		te := &notifyingTE{fakeTaskExecutor: &fakeTaskExecutor{}}
		require.NoError(t, e.svc.Register("te/te-1", te))
		_, err := e.gw.RegisterTaskExecutor(e.ctx, rpc.TaskExecutorRegistration{ResourceID: "te-1", Address: "te/te-1", SlotReport: report("te-1", cpu(1))})
		require.NoError(t, err)
		job, token := e.addJob("jm-address")
		before := goroutinesCreated()
		require.NoError(t, e.declare(job, token, req(unknown, 1)))
		synctest.Wait()
		assert.Equal(t, uint64(0), goroutinesCreated()-before, "no goroutine for the request")
		te.mu.Lock()
		dones := slices.Clone(te.dones)
		te.mu.Unlock()
		require.Len(t, dones, 1)
		assert.Empty(t, te.Calls(), "no RequestSlot call")
		assert.Equal(t, 1, e.rm.NumPendingSlots())
		dones[0](nil)
		synctest.Wait()
		assert.Equal(t, 0, e.rm.NumPendingSlots())
		assert.Equal(t, 1, e.rm.NumAllocatedSlots())
	})
}

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
