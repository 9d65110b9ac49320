package resourcemanager

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/rpc"
)

// handElection is an ha.LeaderElection the test grants and revokes by hand; it records the
// confirmations it gets.
type handElection struct {
	mu        sync.Mutex
	contender ha.LeaderContender
	confirmed []confirmation
	closed    bool
}

type confirmation struct {
	session ha.SessionID
	address string
}

func (h *handElection) Start(c ha.LeaderContender) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.contender = c
	return nil
}

func (h *handElection) ConfirmLeadership(s ha.SessionID, address string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.confirmed = append(h.confirmed, confirmation{s, address})
}

func (h *handElection) HasLeadership(ha.SessionID) bool { return false }

func (h *handElection) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	return nil
}

func (h *handElection) confirmations() []confirmation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]confirmation(nil), h.confirmed...)
}

// leaderLog records what a leader retrieval reports.
type leaderLog struct {
	mu      sync.Mutex
	leaders []confirmation
}

func (l *leaderLog) NotifyLeaderAddress(address string, s ha.SessionID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaders = append(l.leaders, confirmation{s, address})
}
func (l *leaderLog) HandleError(error) {}
func (l *leaderLog) seen() []confirmation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]confirmation(nil), l.leaders...)
}

// A ResourceManager under a leader election that has not granted it leadership refuses every
// registration and every call of a registration with an error wrapping ha.ErrNotLeader and drops
// heartbeats; granted session S, its ResourceManagerID is S, it confirms S with its address and
// serves. Closing it closes the election.
func TestResourceManagerWithoutLeadershipRefusesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		election := &handElection{}
		e := newEnv(t, func(c *Config) { c.LeaderElection = election })
		synctest.Wait()
		assert.True(t, e.rm.ResourceManagerID().IsZero(), "no ResourceManagerID before leadership")

		job, token := jobgraph.NewJobID(), jobgraph.NewJobMasterID()
		require.NoError(t, e.svc.Register("te/te-1", &fakeTaskExecutor{}))
		registration := rpc.TaskExecutorRegistration{ResourceID: "te-1", Address: "te/te-1", SlotReport: report("te-1", cpu(1))}
		for name, err := range map[string]error{
			"RegisterTaskExecutor":     second(e.gw.RegisterTaskExecutor(e.ctx, registration)),
			"RegisterJobMaster":        second(e.gw.RegisterJobMaster(e.ctx, token, "jm-1", "jm-1", job)),
			"SendSlotReport":           e.gw.SendSlotReport(e.ctx, e.rm.ResourceManagerID(), "te-1", report("te-1", cpu(1))),
			"NotifySlotAvailable":      e.gw.NotifySlotAvailable(e.ctx, e.rm.ResourceManagerID(), "te-1", sid("te-1", 0), jobgraph.NewAllocationID()),
			"DisconnectTaskExecutor":   e.gw.DisconnectTaskExecutor(e.ctx, e.rm.ResourceManagerID(), "te-1", nil),
			"DeclareRequiredResources": e.declare(job, token, req(unknown, 1)),
			"DisconnectJobMaster":      e.gw.DisconnectJobMaster(e.ctx, e.rm.ResourceManagerID(), token, job, nil),
		} {
			assert.ErrorIs(t, err, ha.ErrNotLeader, name)
		}
		assert.NoError(t, e.gw.HeartbeatFromTaskExecutor(e.ctx, e.rm.ResourceManagerID(), "te-1", report("te-1", cpu(1))), "a heartbeat is dropped")
		assert.NoError(t, e.gw.HeartbeatFromJobMaster(e.ctx, e.rm.ResourceManagerID(), "jm-1"))
		assert.Equal(t, 0, e.rm.NumRegisteredTaskExecutors())
		assert.Empty(t, election.confirmations())

		s := ha.NewSessionID()
		election.contender.GrantLeadership(s)
		synctest.Wait()
		assert.Equal(t, jobgraph.ResourceManagerID(s), e.rm.ResourceManagerID())
		assert.Equal(t, []confirmation{{s, "rm-address"}}, election.confirmations())
		rmID, err := e.gw.RegisterTaskExecutor(e.ctx, registration)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.ResourceManagerID(s), rmID, "the ResourceManagerID is the leader session")
		assert.Equal(t, 1, e.rm.NumRegisteredSlots())

		require.NoError(t, e.rm.Close())
		assert.True(t, election.closed, "Close closes the election")
	})
}

// Losing leadership drops every TaskExecutor and JobMaster registration and all slot bookkeeping
// of the session; the next session has a new ResourceManagerID, published through the
// ResourceManager's leader retrieval, and learns the slots a job holds from the slot report its
// TaskExecutor registers with again.
func TestRevokeDropsTheSessionsRegistrations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		election := services.ResourceManagerElection()
		e := newEnv(t, func(c *Config) { c.LeaderElection = election; c.HA = services })
		leaders := &leaderLog{}
		retrieval := services.ResourceManagerLeaderRetrieval()
		require.NoError(t, retrieval.Start(leaders))
		defer retrieval.Stop()
		synctest.Wait()
		id1 := e.rm.ResourceManagerID()
		require.False(t, id1.IsZero())
		assert.Equal(t, []confirmation{{ha.SessionID(id1), "rm-address"}}, leaders.seen())

		te := e.addTaskExecutor("te-1", cpu(1), cpu(1))
		job, token := e.addJob("jm-1")
		require.NoError(t, e.declare(job, token, req(unknown, 1)))
		synctest.Wait()
		calls := te.Take()
		require.Len(t, calls, 1)
		assert.Equal(t, id1, calls[0].RM, "the slot is requested under the first session")
		assert.Equal(t, 1, e.rm.NumAllocatedSlots())

		election.Revoke()
		synctest.Wait()
		id2 := e.rm.ResourceManagerID()
		require.False(t, id2.IsZero())
		assert.NotEqual(t, id1, id2, "a new leader session, a new ResourceManagerID")
		assert.Equal(t, []confirmation{{ha.SessionID(id1), "rm-address"}, {}, {ha.SessionID(id2), "rm-address"}}, leaders.seen(),
			"the retrieval saw the old leader go and the new one come")
		assert.Equal(t, 0, e.rm.NumRegisteredTaskExecutors())
		assert.Equal(t, 0, e.rm.NumRegisteredSlots())
		assert.Equal(t, 0, e.rm.NumAllocatedSlots())
		_, ok := e.rm.JobMaster(job)
		assert.False(t, ok, "the JobMaster's registration was dropped")
		assert.Nil(t, e.rm.Requirements(job))
		assert.ErrorIs(t, e.gw.SendSlotReport(e.ctx, e.rm.ResourceManagerID(), "te-1", report("te-1", cpu(1), cpu(1))), ErrTaskExecutorNotRegistered)
		assert.ErrorIs(t, e.declare(job, token, req(unknown, 1)), ErrJobNotRegistered)

		// The TaskExecutor registers with the new session and reports the job's slot.
		held := report("te-1", cpu(1), cpu(1))
		held.Slots[calls[0].Slot.SlotNumber].AllocationID = calls[0].Allocation
		held.Slots[calls[0].Slot.SlotNumber].JobID = job
		rmID, err := e.gw.RegisterTaskExecutor(e.ctx, rpc.TaskExecutorRegistration{ResourceID: "te-1", Address: "te/te-1", SlotReport: held})
		require.NoError(t, err)
		assert.Equal(t, id2, rmID)
		assert.Equal(t, 1, e.rm.NumAllocatedSlots(), "the job's slot is known again")
		assert.Equal(t, 1, e.rm.NumFreeSlots())

		// The JobMaster registers and declares again: its slot counts, nothing is requested.
		rmID, err = e.gw.RegisterJobMaster(e.ctx, token, "jm-jm-1", "jm-1", job)
		require.NoError(t, err)
		assert.Equal(t, id2, rmID)
		require.NoError(t, e.declare(job, token, req(unknown, 1)))
		synctest.Wait()
		assert.Empty(t, te.Take(), "the job's requirement is met by the slot it holds")
		assert.Nil(t, e.rm.MissingResources(job))

		// Calls under the first session's ResourceManagerID are refused and change nothing,
		// although the TaskExecutor and the JobMaster are registered with the second.
		fenced := func(name string, err error) {
			t.Helper()
			require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch, name)
			var fe *rpc.FencingError
			require.ErrorAs(t, err, &fe, name)
			assert.Equal(t, id2.String(), fe.Expected, name)
			assert.Equal(t, id1.String(), fe.Got, name)
		}
		free := report("te-1", cpu(1), cpu(1))
		fenced("SendSlotReport", e.gw.SendSlotReport(e.ctx, id1, "te-1", free))
		fenced("HeartbeatFromTaskExecutor", e.gw.HeartbeatFromTaskExecutor(e.ctx, id1, "te-1", free))
		fenced("NotifySlotAvailable", e.gw.NotifySlotAvailable(e.ctx, id1, "te-1", calls[0].Slot, calls[0].Allocation))
		fenced("DisconnectTaskExecutor", e.gw.DisconnectTaskExecutor(e.ctx, id1, "te-1", nil))
		fenced("DeclareRequiredResources", e.gw.DeclareRequiredResources(e.ctx, id1, token, rpc.ResourceRequirements{JobID: job, Requirements: []rpc.ResourceRequirement{req(unknown, 2)}}))
		fenced("HeartbeatFromJobMaster", e.gw.HeartbeatFromJobMaster(e.ctx, id1, "jm-jm-1"))
		fenced("DisconnectJobMaster", e.gw.DisconnectJobMaster(e.ctx, id1, token, job, nil))
		synctest.Wait()
		assert.Equal(t, 1, e.rm.NumRegisteredTaskExecutors())
		assert.Equal(t, 1, e.rm.NumAllocatedSlots(), "the old session's free report and notice freed nothing")
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, e.rm.Requirements(job), "nor changed the requirements")
		_, ok = e.rm.JobMaster(job)
		assert.True(t, ok)
		assert.Empty(t, te.Take())
		// The same report under the current ResourceManagerID is applied: the job lost its slot,
		// and a slot is requested for it again, under the second session.
		require.NoError(t, e.gw.SendSlotReport(e.ctx, id2, "te-1", free))
		synctest.Wait()
		again := te.Take()
		require.Len(t, again, 1)
		assert.Equal(t, id2, again[0].RM)
		assert.Equal(t, job, again[0].Job)
	})
}
