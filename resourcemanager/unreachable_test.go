package resourcemanager

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/heartbeat"
	"github.com/jobgraph/jobgraph/rpc"
)

// goneErr is a transport's error for a peer that cannot be reached (rpc.UnreachableError).
type goneErr struct{}

func (goneErr) Error() string     { return "peer gone" }
func (goneErr) Unreachable() bool { return true }

// goneTaskExecutor is an hbTaskExecutor whose heartbeat requests fail as unreachable once gone.
type goneTaskExecutor struct {
	*hbTaskExecutor
	gone atomic.Bool
}

func (f *goneTaskExecutor) HeartbeatFromResourceManager(ctx context.Context, rm jobgraph.ResourceID) error {
	err := f.hbTaskExecutor.HeartbeatFromResourceManager(ctx, rm) // records the request
	if f.gone.Load() {
		return goneErr{}
	}
	return err
}

// goneJobMaster is an hbJobMaster whose heartbeat requests fail as unreachable once gone.
type goneJobMaster struct {
	*hbJobMaster
	gone atomic.Bool
}

func (f *goneJobMaster) HeartbeatFromResourceManager(ctx context.Context, rm jobgraph.ResourceID) error {
	err := f.hbJobMaster.HeartbeatFromResourceManager(ctx, rm)
	if f.gone.Load() {
		return goneErr{}
	}
	return err
}

// heartbeat.rpc-failure-threshold on the ResourceManager (default 2): a TaskExecutor and a
// JobMaster that cannot be reached from 2.5 s on are dropped at the second failed request, at
// 4 s, not at their heartbeat.timeout (7 s), with the unreachable cause; a TaskExecutor whose
// requests fail otherwise ("no answer") is still dropped at its timeout.
func TestUnreachableTaskExecutorAndJobMasterAreDroppedAtTheSecondFailedRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		e := newEnv(t, heartbeats1s5s)
		gone := &goneTaskExecutor{hbTaskExecutor: &hbTaskExecutor{fakeTaskExecutor: &fakeTaskExecutor{}, id: "te-gone", rm: e.gw, rmID: e.rm.ResourceManagerID(), start: start, report: report("te-gone", cpu(1))}}
		require.NoError(t, e.svc.Register("te/te-gone", gone))
		_, err := e.gw.RegisterTaskExecutor(e.ctx, rpc.TaskExecutorRegistration{ResourceID: "te-gone", Address: "te/te-gone", SlotReport: gone.report})
		require.NoError(t, err)
		silent := e.addAnsweringTaskExecutor("te-silent", start, cpu(1))
		e.addAnsweringTaskExecutor("te-stays", start, cpu(1))
		jm := &goneJobMaster{hbJobMaster: &hbJobMaster{id: "jm-jm-gone", rm: e.gw, rmID: e.rm.ResourceManagerID(), start: start}}
		require.NoError(t, e.svc.Register("jm-gone", jm))
		job, token := e.addJob("jm-gone")
		require.NoError(t, e.declare(job, token, req(unknown, 1)))
		synctest.Wait()

		// Requests at 1 s and 2 s are answered; from 2.5 s te-gone and the JobMaster cannot be
		// reached, and te-silent answers nothing (a plain error: not counted).
		advance(2500 * time.Millisecond)
		gone.set(func(f *hbTaskExecutor) { f.silent = true })
		gone.gone.Store(true)
		jm.mu.Lock()
		jm.silent = true
		jm.mu.Unlock()
		jm.gone.Store(true)
		silent.set(func(f *hbTaskExecutor) { f.silent = true })
		advance(1500*time.Millisecond - time.Nanosecond)
		assert.Equal(t, 3, e.rm.NumRegisteredTaskExecutors(), "one failed request each")
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, e.rm.Requirements(job))

		advance(time.Nanosecond) // 4 s
		assert.Equal(t, 2, e.rm.NumRegisteredTaskExecutors(), "te-gone is dropped at its second failed request")
		for _, s := range e.rm.Slots() {
			assert.NotEqual(t, jobgraph.ResourceID("te-gone"), s.SlotID.ResourceID)
		}
		assert.Nil(t, e.rm.Requirements(job), "the JobMaster is dropped: its job's requirements are cleared")
		requests, disconnects := jm.state()
		assert.Equal(t, seconds(1, 4), requests)
		require.Len(t, disconnects, 1)
		assert.Equal(t, 4*time.Second, disconnects[0].At)
		assert.Equal(t, token, disconnects[0].Token)
		assert.ErrorIs(t, disconnects[0].Cause, heartbeat.ErrUnreachable)
		assert.NotErrorIs(t, disconnects[0].Cause, heartbeat.ErrTimeout)
		assert.EqualError(t, disconnects[0].Cause, "JobMaster jm-jm-gone of job "+job.String()+" is no longer reachable: 2 consecutive heartbeat RPCs failed, the last with: peer gone")

		// te-silent goes at its timeout, 5 s after its last answer at 2 s; no more requests go
		// to te-gone.
		advance(3*time.Second - time.Nanosecond)
		assert.Equal(t, 2, e.rm.NumRegisteredTaskExecutors())
		advance(time.Nanosecond) // 7 s
		assert.Equal(t, 1, e.rm.NumRegisteredTaskExecutors())
		advance(time.Minute)
		assert.Equal(t, seconds(1, 4), gone.requestTimes())
		assert.Equal(t, seconds(1, 6), silent.requestTimes()[:6], "te-silent was asked until its timeout")
	})
}
