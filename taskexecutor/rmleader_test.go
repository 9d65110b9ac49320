package taskexecutor

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/rpc"
)

// handRetrieval is an ha.LeaderRetrieval the test announces leaders on.
type handRetrieval struct {
	mu       sync.Mutex
	listener ha.LeaderRetrievalListener
	stopped  bool
}

func (h *handRetrieval) Start(l ha.LeaderRetrievalListener) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listener = l
	return nil
}

func (h *handRetrieval) Stop() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	return nil
}

func (h *handRetrieval) announce(address string, s ha.SessionID) {
	h.mu.Lock()
	l := h.listener
	h.mu.Unlock()
	l.NotifyLeaderAddress(address, s)
}

// leaderRM is a ResourceManager leader of one session: its RegisterTaskExecutor waits for gate
// (when set) and answers the session; it records the tokens of the heartbeats it gets.
type leaderRM struct {
	*fakeResourceManager
	gate chan struct{}

	hmu        sync.Mutex
	heartbeats []jobgraph.ResourceManagerID
}

func (r *leaderRM) RegisterTaskExecutor(ctx context.Context, reg rpc.TaskExecutorRegistration) (jobgraph.ResourceManagerID, error) {
	if r.gate != nil {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return jobgraph.ResourceManagerID{}, ctx.Err()
		}
	}
	return r.fakeResourceManager.RegisterTaskExecutor(ctx, reg)
}

func (r *leaderRM) HeartbeatFromTaskExecutor(_ context.Context, rm jobgraph.ResourceManagerID, _ jobgraph.ResourceID, _ rpc.SlotReport) error {
	r.hmu.Lock()
	defer r.hmu.Unlock()
	r.heartbeats = append(r.heartbeats, rm)
	return nil
}

func (r *leaderRM) beats() []jobgraph.ResourceManagerID {
	r.hmu.Lock()
	defer r.hmu.Unlock()
	return append([]jobgraph.ResourceManagerID(nil), r.heartbeats...)
}

func (r *leaderRM) numRegistrations() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.registers)
}

// A TaskExecutor with a ResourceManager leader retrieval registers with each leader it is told
// of: the answer of a registration with an earlier leader that comes back after the leader
// changed is dropped (the TaskExecutor stays with the newer one, its heartbeats go there under
// the newer token); RequestSlot is fenced by the retrieved leader's session, and refused while
// no leader is known; a leader silent for heartbeat.timeout is registered with again; Close
// stops the retrieval.
func TestTaskExecutorFollowsTheResourceManagerLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newCluster(t)
		s1, s2 := ha.SessionID(rmToken(1)), ha.SessionID(rmToken(2))
		rmA := &leaderRM{fakeResourceManager: &fakeResourceManager{id: rmToken(1)}, gate: make(chan struct{})}
		rmB := &leaderRM{fakeResourceManager: &fakeResourceManager{id: rmToken(2)}}
		require.NoError(t, c.svc.Register("rm-a", rmA))
		require.NoError(t, c.svc.Register("rm-b", rmB))
		retrieval := &handRetrieval{}
		te, err := New(Config{ResourceID: "te-1", NumSlots: 2, Registry: c.reg, RPC: c.svc,
			ResourceManagerRetrieval: retrieval, Shuffle: c.shuffle, Logger: discard,
			HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second})
		require.NoError(t, err)
		require.NoError(t, te.Start(ctx))
		slot := rpc.SlotID{ResourceID: "te-1", SlotNumber: 0}
		request := func(rm jobgraph.ResourceManagerID, a jobgraph.AllocationID) error {
			return te.RequestSlot(ctx, slot, jobID(1), a, jobgraph.ResourceProfile{CPUCores: 0.5}, jmAddr, jmToken(1), rm)
		}
		fencing := func(err error, expected string, got jobgraph.ResourceManagerID) {
			t.Helper()
			requireFencingError(t, err, expected, got.String())
		}

		fencing(request(rmToken(1), jobgraph.NewAllocationID()), "none (no ResourceManager leader known)", rmToken(1))

		// Leader A: its registration hangs; the leader moves to B, which answers at once.
		retrieval.announce("rm-a", s1)
		synctest.Wait()
		fencing(request(rmToken(2), jobgraph.NewAllocationID()), rmToken(1).String(), rmToken(2))
		retrieval.announce("rm-b", s2)
		id, err := te.WaitRegistered(ctx)
		require.NoError(t, err)
		assert.Equal(t, rmToken(2), id)

		// A's answer comes now, for the earlier leader: dropped.
		close(rmA.gate)
		synctest.Wait()
		assert.Equal(t, 1, rmA.numRegistrations(), "A registered the TaskExecutor, too late")
		id, err = te.WaitRegistered(ctx)
		require.NoError(t, err)
		assert.Equal(t, rmToken(2), id, "the TaskExecutor stays with B")
		require.NoError(t, te.HeartbeatFromResourceManager(ctx, "rm"))
		synctest.Wait()
		assert.Empty(t, rmA.beats())
		assert.Equal(t, []jobgraph.ResourceManagerID{rmToken(2)}, rmB.beats(), "heartbeats go to B under B's token")

		// RequestSlot: A's token is refused, B's allocates.
		fencing(request(rmToken(1), jobgraph.NewAllocationID()), rmToken(2).String(), rmToken(1))
		require.NoError(t, request(rmToken(2), jobgraph.NewAllocationID()))
		report, err := te.SlotReport(ctx)
		require.NoError(t, err)
		assert.Equal(t, jobID(1), report.Slots[0].JobID)

		// B falls silent: 5 s after its last heartbeat request the TaskExecutor registers with
		// it again, its slot report listing the allocated slot.
		// (The JobMaster takes a heartbeat meanwhile, so the job keeps its slot.)
		require.Equal(t, 1, rmB.numRegistrations())
		time.Sleep(2500 * time.Millisecond)
		require.NoError(t, te.HeartbeatFromJobMaster(ctx, "jm"))
		synctest.Wait()
		assert.Equal(t, 1, rmB.numRegistrations())
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, 2, rmB.numRegistrations())
		rmB.mu.Lock()
		again := rmB.registers[1].SlotReport
		rmB.mu.Unlock()
		assert.Equal(t, report, again)

		require.NoError(t, te.Close())
		assert.True(t, retrieval.stopped, "Close stops the retrieval")
	})
}

// A slot freed while the registration with a new ResourceManager leader is under way — its
// slot report, built when it started, lists the slot allocated — is announced free to that
// leader once registered (NotifySlotAvailable with the old allocation), so the new leader does
// not hold it for the old allocation until the next heartbeat's slot report. Before the fix the
// notice was dropped (no ResourceManager connection at the time), and a new JobMaster over
// embedded HA whose ResourceManager was revoked with it waited for the slot until the heartbeat
// 10 s later.
func TestSlotFreedWhileRegisteringWithANewLeaderIsAnnouncedToIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newCluster(t)
		s1, s2 := ha.SessionID(rmToken(1)), ha.SessionID(rmToken(2))
		rmA := &leaderRM{fakeResourceManager: &fakeResourceManager{id: rmToken(1)}}
		rmB := &leaderRM{fakeResourceManager: &fakeResourceManager{id: rmToken(2)}, gate: make(chan struct{})}
		require.NoError(t, c.svc.Register("rm-a", rmA))
		require.NoError(t, c.svc.Register("rm-b", rmB))
		retrieval := &handRetrieval{}
		te, err := New(Config{ResourceID: "te-1", NumSlots: 2, Registry: c.reg, RPC: c.svc,
			ResourceManagerRetrieval: retrieval, Shuffle: c.shuffle, Logger: discard})
		require.NoError(t, err)
		require.NoError(t, te.Start(ctx))
		defer te.Close()
		retrieval.announce("rm-a", s1)
		_, err = te.WaitRegistered(ctx)
		require.NoError(t, err)
		slot := rpc.SlotID{ResourceID: "te-1", SlotNumber: 0}
		a := jobgraph.NewAllocationID()
		require.NoError(t, te.RequestSlot(ctx, slot, jobID(1), a, jobgraph.ResourceProfile{CPUCores: 0.5}, jmAddr, jmToken(1), rmToken(1)))

		retrieval.announce("rm-b", s2) // B's registration waits for its gate
		synctest.Wait()
		require.NoError(t, te.FreeSlot(ctx, a, nil))
		synctest.Wait()
		close(rmB.gate)
		id, err := te.WaitRegistered(ctx)
		require.NoError(t, err)
		require.Equal(t, rmToken(2), id)
		synctest.Wait()

		rmB.mu.Lock()
		defer rmB.mu.Unlock()
		require.Len(t, rmB.registers, 1)
		assert.Equal(t, jobID(1), rmB.registers[0].SlotReport.Slots[0].JobID, "the registration's report was built before the slot was freed")
		assert.Equal(t, []notifyCall{{"te-1", slot, a}}, rmB.notified, "B is told the slot is free")
		rmA.mu.Lock()
		defer rmA.mu.Unlock()
		assert.Empty(t, rmA.notified, "A is no leader any more")
	})
}

// The ResourceManager leader retrieval's error makes the TaskExecutor fail fatally (Flink: its
// ResourceManagerLeaderListener.handleError calls onFatalError): FatalError and
// Config.FatalErrorHandler have the error, once; every gateway method then fails with ErrFailed.
func TestResourceManagerRetrievalErrorFailsTheTaskExecutorFatally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newCluster(t)
		require.NoError(t, c.svc.Register("rm-a", &leaderRM{fakeResourceManager: &fakeResourceManager{id: rmToken(1)}}))
		retrieval := &handRetrieval{}
		var heard []error
		te, err := New(Config{ResourceID: "te-1", NumSlots: 1, Registry: c.reg, RPC: c.svc,
			ResourceManagerRetrieval: retrieval, Shuffle: c.shuffle, Logger: discard,
			FatalErrorHandler: func(err error) { heard = append(heard, err) }}) // on the loop only
		require.NoError(t, err)
		require.NoError(t, te.Start(ctx))
		defer te.Close()
		retrieval.announce("rm-a", ha.SessionID(rmToken(1)))
		_, err = te.WaitRegistered(ctx)
		require.NoError(t, err)

		broken := errors.New("etcd: lease expired")
		retrieval.mu.Lock()
		l := retrieval.listener
		retrieval.mu.Unlock()
		l.HandleError(broken)
		synctest.Wait()
		require.ErrorIs(t, te.FatalError(), broken)
		assert.EqualError(t, te.FatalError(), "TaskExecutor te-1: the ResourceManager's leader retrieval failed: etcd: lease expired")
		require.Len(t, heard, 1)
		assert.Same(t, te.FatalError(), heard[0])
		_, err = te.SlotReport(ctx)
		require.ErrorIs(t, err, ErrFailed)
		require.ErrorIs(t, err, broken)
		l.HandleError(broken) // a second error changes nothing
		synctest.Wait()
		assert.Len(t, heard, 1)
	})
}

// deadlineRM records whether each RegisterTaskExecutor it gets carries a deadline.
type deadlineRM struct {
	*fakeResourceManager
	deadlines chan bool
}

func (r *deadlineRM) RegisterTaskExecutor(ctx context.Context, reg rpc.TaskExecutorRegistration) (jobgraph.ResourceManagerID, error) {
	_, ok := ctx.Deadline()
	r.deadlines <- ok
	return r.fakeResourceManager.RegisterTaskExecutor(ctx, reg)
}

// otherService is an rpc.Service that is not the in-process *rpc.LocalService (as a network
// transport is not), over one.
type otherService struct{ *rpc.LocalService }

// A registration attempt with the retrieved ResourceManager leader carries a deadline
// (cluster.registration.initial-timeout) over any Service but the in-process LocalService, where
// it carries none (no timer per attempt).
func TestRegistrationDeadlineOnlyOffTheLocalService(t *testing.T) {
	for _, local := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			c := newCluster(t)
			var svc rpc.Service = c.svc
			if !local {
				svc = otherService{c.svc}
			}
			rm := &deadlineRM{fakeResourceManager: &fakeResourceManager{id: rmToken(1)}, deadlines: make(chan bool, 1)}
			require.NoError(t, c.svc.Register("rm-a", rm))
			retrieval := &handRetrieval{}
			te, err := New(Config{ResourceID: "te-1", NumSlots: 1, Registry: c.reg, RPC: svc,
				ResourceManagerRetrieval: retrieval, Shuffle: c.shuffle, Logger: discard})
			require.NoError(t, err)
			require.NoError(t, te.Start(context.Background()))
			retrieval.announce("rm-a", ha.SessionID(rmToken(1)))
			_, err = te.WaitRegistered(context.Background())
			require.NoError(t, err)
			assert.Equal(t, !local, <-rm.deadlines, "deadline over the LocalService: %v", local)
			require.NoError(t, te.Close())
		})
	}
}
