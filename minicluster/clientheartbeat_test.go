package minicluster_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Issue 15's client heartbeats, with Flink's defaults (client.heartbeat.interval 30 s,
// client.heartbeat.timeout 180 s, the Dispatcher's aliveness check every 1 min from the first
// watched submission at t0): job A's attached client (execution.shutdown-on-attached-exit)
// heartbeats at t0+30 s … t0+120 s and then stops (Close), so its expiry is t0+300 s and the
// check at t0+300 s cancels it: CANCELED at exactly t0+300 s, RUNNING at t0+299 s. Job B's
// client keeps heartbeating and job C was submitted without shutdown-on-attached-exit (no
// heartbeats, detached): both still RUNNING at t0+360 s, past every expiry A's client had.
func TestJobOfAnAttachedClientIsCanceledWhenItsHeartbeatsStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := taskexecutor.NewRegistry()
		reg.Register("hold", func(ctx context.Context, env taskexecutor.Environment) error {
			<-ctx.Done()
			return ctx.Err()
		})
		mc := start(t, minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 3, Registry: reg})
		ctx := context.Background()
		job := func(name string) *jobgraph.JobGraph {
			g := jobgraph.New(name, jobgraph.Streaming)
			g.AddVertex("hold", "hold", 1)
			return g
		}
		t0 := time.Now()
		a, err := mc.SubmitAttached(ctx, job("A"), dispatcher.JobClientOptions{ShutdownOnAttachedExit: true})
		require.NoError(t, err)
		b, err := mc.SubmitAttached(ctx, job("B"), dispatcher.JobClientOptions{ShutdownOnAttachedExit: true})
		require.NoError(t, err)
		defer b.Close()
		gc := job("C")
		c, err := mc.SubmitAttached(ctx, gc, dispatcher.JobClientOptions{})
		require.NoError(t, err)
		defer c.Close()
		assert.Zero(t, gc.InitialClientHeartbeatTimeout, "the caller's graph is not changed")
		ended := make(chan time.Duration, 1)
		go func() {
			res, err := a.Result(ctx)
			assert.NoError(t, err)
			assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
			ended <- time.Since(t0)
		}()
		synctest.Wait()
		for _, jc := range []*dispatcher.JobClient{a, b, c} {
			st, err := jc.Status(ctx)
			require.NoError(t, err)
			require.Equal(t, jobgraph.JobStatusRunning, st)
		}

		time.Sleep(120 * time.Second) // A's client heartbeats at 30, 60, 90 and 120 s …
		synctest.Wait()
		require.NoError(t, a.Close()) // … and then stops: alive until t0+300 s
		time.Sleep(179 * time.Second)
		synctest.Wait()
		st, err := a.Status(ctx)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, st, "t0+299 s: A's client has not expired yet")
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case at := <-ended:
			assert.Equal(t, 300*time.Second, at, "canceled by the check at t0+300 s, when A's client expired")
		default:
			t.Fatal("A is not canceled at t0+300 s")
		}

		time.Sleep(60 * time.Second)
		synctest.Wait()
		for _, jc := range []*dispatcher.JobClient{b, c} {
			st, err := jc.Status(ctx)
			require.NoError(t, err)
			assert.Equal(t, jobgraph.JobStatusRunning, st, "t0+360 s")
		}
		require.NoError(t, b.Cancel(ctx))
		require.NoError(t, c.Cancel(ctx))
		for _, jc := range []*dispatcher.JobClient{b, c} {
			res, err := jc.Result(ctx)
			require.NoError(t, err)
			assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		}
	})
}
