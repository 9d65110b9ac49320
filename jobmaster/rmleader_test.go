package jobmaster_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// handRetrieval is an ha.LeaderRetrieval the test announces leaders on.
type handRetrieval struct {
	mu       sync.Mutex
	listener ha.LeaderRetrievalListener
	starts   int
	stopped  bool
}

func (h *handRetrieval) Start(l ha.LeaderRetrievalListener) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.listener, h.starts = l, h.starts+1
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

// gatedRM is an hbRM whose RegisterJobMaster waits for gate.
type gatedRM struct {
	*hbRM
	gate chan struct{}
}

func (g *gatedRM) RegisterJobMaster(ctx context.Context, token jobgraph.JobMasterID, jm jobgraph.ResourceID, address string, job jobgraph.JobID) (jobgraph.ResourceManagerID, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return jobgraph.ResourceManagerID{}, ctx.Err()
	}
	return g.hbRM.RegisterJobMaster(ctx, token, jm, address, job)
}

func (r *hbRM) snapshot() (registered int, declared [][]rpc.ResourceRequirement, heartbeats int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.registered), append([][]rpc.ResourceRequirement(nil), r.declared...), len(r.heartbeats)
}

// newFollowingJobMaster creates on svc the JobMaster, under token, of a job of one vertex of 2
// subtasks that follows the ResourceManager leaders the returned retrieval announces. It is
// closed when the test ends.
func newFollowingJobMaster(t *testing.T, svc *rpc.LocalService, token jobgraph.JobMasterID) (jobmaster.JobMaster, *handRetrieval) {
	t.Helper()
	retrieval := &handRetrieval{}
	g := jobgraph.New("one", jobgraph.Batch)
	g.AddVertex("v", "noop", 2)
	f, err := jobmaster.NewFactory(g, jobmaster.Config{RPC: svc, Logger: slog.New(slog.DiscardHandler),
		ResourceManagerRetrieval: func() ha.LeaderRetrieval { return retrieval }})
	require.NoError(t, err)
	jm, err := f.Create(context.Background(), token)
	require.NoError(t, err)
	t.Cleanup(func() { jm.Close() })
	return jm, retrieval
}

// A JobMaster with a ResourceManager leader retrieval starts without waiting for a
// ResourceManager and registers with each leader it is told of, declaring its requirements to
// it (under the leader's token: the fake refuses any other); the answer of a registration with an
// earlier leader that comes back after the leader changed is dropped, so nothing goes to that
// one. A DisconnectResourceManager from the current leader makes it register and declare again;
// one under an earlier token is refused. Close stops the retrieval.
func TestJobMasterFollowsTheResourceManagerLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		svc := rpc.NewLocalService()
		s1, s2 := ha.NewSessionID(), ha.NewSessionID()
		rmA := &gatedRM{hbRM: &hbRM{id: jobgraph.ResourceManagerID(s1)}, gate: make(chan struct{})}
		rmB := &hbRM{id: jobgraph.ResourceManagerID(s2)}
		require.NoError(t, svc.Register("rm-a", rmA))
		require.NoError(t, svc.Register("rm-b", rmB))
		token := jobgraph.NewJobMasterID()
		jm, retrieval := newFollowingJobMaster(t, svc, token) // created with no ResourceManager known
		synctest.Wait()
		status, err := jm.RequestJobStatus(ctx)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, status, "scheduling does not wait for a ResourceManager")

		retrieval.announce("rm-a", s1)
		synctest.Wait()
		retrieval.announce("rm-b", s2)
		synctest.Wait()
		registered, declared, _ := rmB.snapshot()
		assert.Equal(t, 1, registered)
		require.NotEmpty(t, declared, "the requirements were declared to B under B's token")
		want := declared[len(declared)-1]
		require.NotEmpty(t, want)

		close(rmA.gate)
		synctest.Wait()
		registered, declared, _ = rmA.snapshot()
		assert.Equal(t, 1, registered, "A's registration went through, too late")
		assert.Empty(t, declared, "the JobMaster dropped A's answer: nothing declared to A")
		require.NoError(t, jm.Gateway().HeartbeatFromResourceManager(ctx, "rm"))
		synctest.Wait()
		_, _, beatsA := rmA.snapshot()
		_, _, beatsB := rmB.snapshot()
		assert.Equal(t, 0, beatsA)
		assert.Equal(t, 1, beatsB, "heartbeats go to B")

		_, before, _ := rmB.snapshot()
		err = jm.Gateway().DisconnectResourceManager(ctx, token, jobgraph.ResourceManagerID(s1), nil)
		require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch, "A's disconnect")
		require.NoError(t, jm.Gateway().DisconnectResourceManager(ctx, token, jobgraph.ResourceManagerID(s2), rpc.Failure(assert.AnError)))
		synctest.Wait()
		registered, declared, _ = rmB.snapshot()
		assert.Equal(t, 2, registered, "registered with B again")
		require.Greater(t, len(declared), len(before), "and declared again")
		assert.Equal(t, want, declared[len(declared)-1], "the same requirements")

		jm.Close()
		retrieval.mu.Lock()
		defer retrieval.mu.Unlock()
		assert.Equal(t, 1, retrieval.starts)
		assert.True(t, retrieval.stopped, "Close stops the retrieval")
	})
}

// A JobMaster following the ResourceManager leader registers again with the leader when the
// leader sends no heartbeat request for heartbeat.timeout (50 s): the timeout runs from the
// registration, and from each request after it.
func TestJobMasterRegistersWithTheLeaderAgainWhenItsHeartbeatTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		svc := rpc.NewLocalService()
		s := ha.NewSessionID()
		rm := &hbRM{id: jobgraph.ResourceManagerID(s)}
		require.NoError(t, svc.Register("rm", rm))
		jm, retrieval := newFollowingJobMaster(t, svc, jobgraph.NewJobMasterID())
		synctest.Wait()
		retrieval.announce("rm", s)
		synctest.Wait()
		registered, _, _ := rm.snapshot()
		require.Equal(t, 1, registered)

		advance(30 * time.Second)
		require.NoError(t, jm.Gateway().HeartbeatFromResourceManager(ctx, "rm"))
		synctest.Wait()
		advance(50*time.Second - time.Millisecond)
		registered, _, beats := rm.snapshot()
		assert.Equal(t, []int{1, 1}, []int{registered, beats}, "49.999 s after the request")
		advance(time.Millisecond)
		registered, declared, _ := rm.snapshot()
		assert.Equal(t, 2, registered, "50 s after the request: registered again")
		require.NotEmpty(t, declared)
	})
}
