package resourcemanager

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/heartbeat"
	"github.com/jobgraph/jobgraph/rpc"
)

// teDisconnects makes a fake TaskExecutor an rpc.ResourceManagerDisconnector: it records every
// DisconnectResourceManager call with its virtual time since dstart.
type teDisconnects struct {
	dstart time.Time
	dmu    sync.Mutex
	got    []teDisconnect
}

type teDisconnect struct {
	At    time.Duration
	RM    jobgraph.ResourceManagerID
	Cause error
}

func (d *teDisconnects) DisconnectResourceManager(_ context.Context, rm jobgraph.ResourceManagerID, cause *jobgraph.ErrorInfo) error {
	d.dmu.Lock()
	defer d.dmu.Unlock()
	d.got = append(d.got, teDisconnect{time.Since(d.dstart), rm, cause.Err()})
	return nil
}

func (d *teDisconnects) disconnects() []teDisconnect {
	d.dmu.Lock()
	defer d.dmu.Unlock()
	return slices.Clone(d.got)
}

// toldOnce requires that d was told exactly once so far, at virtual time at under rm, and returns
// the cause it was told.
func (d *teDisconnects) toldOnce(t *testing.T, at time.Duration, rm jobgraph.ResourceManagerID) error {
	t.Helper()
	got := d.disconnects()
	require.Len(t, got, 1)
	assert.Equal(t, at, got[0].At)
	assert.Equal(t, rm, got[0].RM)
	return got[0].Cause
}

// toldTaskExecutor is an hbTaskExecutor that is told when the ResourceManager drops it;
// toldGoneTaskExecutor a goneTaskExecutor that is.
type toldTaskExecutor struct {
	*hbTaskExecutor
	*teDisconnects
}

type toldGoneTaskExecutor struct {
	*goneTaskExecutor
	*teDisconnects
}

var (
	_ rpc.ResourceManagerDisconnector = toldTaskExecutor{}
	_ rpc.ResourceManagerDisconnector = toldGoneTaskExecutor{}
)

// register serves gw at "te/<id>" and registers it with report.
func (e *env) register(id jobgraph.ResourceID, gw rpc.TaskExecutorGateway, r rpc.SlotReport) {
	e.t.Helper()
	addr := "te/" + string(id)
	require.NoError(e.t, e.svc.Register(addr, gw))
	_, err := e.gw.RegisterTaskExecutor(e.ctx, rpc.TaskExecutorRegistration{ResourceID: id, Address: addr, SlotReport: r})
	require.NoError(e.t, err)
}

func (e *env) hbTaskExecutor(id jobgraph.ResourceID, start time.Time) *hbTaskExecutor {
	return &hbTaskExecutor{fakeTaskExecutor: &fakeTaskExecutor{}, id: id, rm: e.gw, rmID: e.rm.ResourceManagerID(), start: start, report: report(id, cpu(1))}
}

// A TaskExecutor whose heartbeat times out is unregistered and told so, exactly once, at that
// instant, under the ResourceManager's ResourceManagerID, the timeout as the cause (Flink's
// closeTaskManagerConnection calls disconnectResourceManager). One whose gateway is no
// rpc.ResourceManagerDisconnector is unregistered as before, untold.
func TestTaskExecutorWhoseHeartbeatTimedOutIsTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		e := newEnv(t, heartbeats1s5s)
		told := toldTaskExecutor{e.hbTaskExecutor("te-told", start), &teDisconnects{dstart: start}}
		e.register("te-told", told, told.report)
		plain := e.addAnsweringTaskExecutor("te-plain", start, cpu(1))
		e.addAnsweringTaskExecutor("te-stays", start, cpu(1))

		// Both answer the requests at 1 s and 2 s, then fall silent: dropped at 7 s.
		advance(2500 * time.Millisecond)
		told.set(func(f *hbTaskExecutor) { f.silent = true })
		plain.set(func(f *hbTaskExecutor) { f.silent = true })
		advance(4500*time.Millisecond - time.Nanosecond)
		assert.Equal(t, 3, e.rm.NumRegisteredTaskExecutors())
		assert.Empty(t, told.disconnects())

		advance(time.Nanosecond) // 7 s
		assert.Equal(t, 1, e.rm.NumRegisteredTaskExecutors(), "both silent ones are unregistered")
		cause := told.toldOnce(t, 7*time.Second, e.rm.ResourceManagerID())
		assert.ErrorIs(t, cause, heartbeat.ErrTimeout)
		assert.EqualError(t, cause, "heartbeat of TaskExecutor te-told timed out after 5s")

		advance(time.Minute)
		assert.Len(t, told.disconnects(), 1, "told once")
		assert.Equal(t, 1, e.rm.NumRegisteredTaskExecutors())
	})
}

// The same for a TaskExecutor whose heartbeat requests find it unreachable: dropped and told at
// the second failed request, with the unreachable cause.
func TestUnreachableTaskExecutorIsTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		e := newEnv(t, heartbeats1s5s)
		told := toldGoneTaskExecutor{&goneTaskExecutor{hbTaskExecutor: e.hbTaskExecutor("te-told", start)}, &teDisconnects{dstart: start}}
		e.register("te-told", told, told.report)
		plain := &goneTaskExecutor{hbTaskExecutor: e.hbTaskExecutor("te-plain", start)}
		e.register("te-plain", plain, plain.report)
		e.addAnsweringTaskExecutor("te-stays", start, cpu(1))

		advance(2500 * time.Millisecond)
		for _, g := range []*goneTaskExecutor{told.goneTaskExecutor, plain} {
			g.set(func(f *hbTaskExecutor) { f.silent = true })
			g.gone.Store(true)
		}
		advance(1500*time.Millisecond - time.Nanosecond)
		assert.Equal(t, 3, e.rm.NumRegisteredTaskExecutors())
		assert.Empty(t, told.disconnects())

		advance(time.Nanosecond) // 4 s
		assert.Equal(t, 1, e.rm.NumRegisteredTaskExecutors(), "both unreachable ones are unregistered")
		cause := told.toldOnce(t, 4*time.Second, e.rm.ResourceManagerID())
		assert.ErrorIs(t, cause, heartbeat.ErrUnreachable)
		assert.NotErrorIs(t, cause, heartbeat.ErrTimeout)
		assert.EqualError(t, cause, "TaskExecutor te-told is no longer reachable: 2 consecutive heartbeat RPCs failed, the last with: peer gone")

		advance(time.Minute)
		assert.Len(t, told.disconnects(), 1, "told once")
	})
}
