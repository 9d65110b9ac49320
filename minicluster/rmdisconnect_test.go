package minicluster_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/resourcemanager"
	"github.com/jobgraph/jobgraph/rpc"
)

// lossyService is a LocalService whose ResourceManager, as the other endpoints look it up, drops
// the TaskExecutors' heartbeats while lose is set (they answer the requests, the answers are
// lost on the way) and records when each TaskExecutor registration reaches it.
type lossyService struct {
	*rpc.LocalService
	start time.Time
	lose  atomic.Bool

	mu            sync.Mutex
	registrations []time.Duration
}

func (s *lossyService) Lookup(ctx context.Context, address string) (any, error) {
	ep, err := s.LocalService.Lookup(ctx, address)
	if rm, ok := ep.(*resourcemanager.ResourceManager); ok && err == nil {
		return lossyResourceManager{rm, s}, nil
	}
	return ep, err
}

func (s *lossyService) registered() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.registrations...)
}

// lossyResourceManager is the cluster's ResourceManager (every method, its notifier's too) but
// for the two it intercepts.
type lossyResourceManager struct {
	*resourcemanager.ResourceManager
	s *lossyService
}

func (r lossyResourceManager) HeartbeatFromTaskExecutor(ctx context.Context, rm jobgraph.ResourceManagerID, te jobgraph.ResourceID, report rpc.SlotReport) error {
	if r.s.lose.Load() {
		return nil
	}
	return r.ResourceManager.HeartbeatFromTaskExecutor(ctx, rm, te, report)
}

func (r lossyResourceManager) RegisterTaskExecutor(ctx context.Context, reg rpc.TaskExecutorRegistration) (jobgraph.ResourceManagerID, error) {
	r.s.mu.Lock()
	r.s.registrations = append(r.s.registrations, time.Since(r.s.start))
	r.s.mu.Unlock()
	return r.ResourceManager.RegisterTaskExecutor(ctx, reg)
}

// A TaskExecutor whose heartbeats to the ResourceManager are lost from 2.5 s on (the last one
// arrives at 2 s) is dropped by the ResourceManager at its heartbeat.timeout, 7 s, and told so:
// it registers again at that instant, where it used to wait for its own heartbeat.timeout of the
// ResourceManager (no request since the drop) and come back 5 s later.
func TestTaskExecutorDroppedByTheResourceManagerRegistersAgainAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &lossyService{LocalService: rpc.NewLocalService(), start: time.Now()}
		t.Cleanup(func() { assert.NoError(t, svc.Close()) })
		mc := start(t, minicluster.Config{TaskExecutors: 1, RPC: svc,
			HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second})
		synctest.Wait()
		require.Equal(t, []time.Duration{0}, svc.registered())

		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		svc.lose.Store(true)
		time.Sleep(4500*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, 1, mc.ResourceManager().NumRegisteredTaskExecutors(), "not dropped 1 ns before its timeout")
		assert.Equal(t, []time.Duration{0}, svc.registered())

		time.Sleep(time.Nanosecond) // 7 s: dropped, told, registered again
		synctest.Wait()
		svc.lose.Store(false)
		assert.Equal(t, []time.Duration{0, 7 * time.Second}, svc.registered(), "registered again at the drop")
		assert.Equal(t, 1, mc.ResourceManager().NumRegisteredTaskExecutors())
		assert.Equal(t, 1, mc.ResourceManager().NumRegisteredSlots())

		// Its heartbeats arrive again: it stays, and registers no more.
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []time.Duration{0, 7 * time.Second}, svc.registered())
		assert.Equal(t, 1, mc.ResourceManager().NumRegisteredTaskExecutors())
	})
}
