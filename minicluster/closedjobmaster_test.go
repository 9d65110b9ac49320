package minicluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// endLog records when each job's "block" task ended (its ctx canceled), in virtual time since
// begin.
type endLog struct {
	mu    sync.Mutex
	begin time.Time
	ended map[jobgraph.JobID]time.Duration
}

func (l *endLog) registry() *taskexecutor.Registry {
	reg := registry()
	reg.Register("block", func(ctx context.Context, env taskexecutor.Environment) error {
		<-ctx.Done()
		l.mu.Lock()
		defer l.mu.Unlock()
		l.ended[env.Info().JobID] = time.Since(l.begin)
		return ctx.Err()
	})
	return reg
}

func (l *endLog) get(job jobgraph.JobID) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.ended[job]
	return d, ok
}

// A JobMaster can close without disconnecting first: Close disconnects its TaskExecutors and its
// ResourceManager from its main loop, and a JobMaster whose loop died of a panic (a broken
// invariant; the host's FatalErrorHandler keeps the cluster up) runs nothing there any more. It
// answers every call with its closed error (jobmaster.ErrClosed wrapping the PanicError), which is
// unreachable (rpc.IsUnreachable) as a stopped endpoint is in Flink, so the heartbeat senders
// that still know it count those failures toward heartbeat.rpc-failure-threshold:
//
//   - the ResourceManager, which asks each registered JobMaster every second from its
//     registration at 0 s, fails at 1 s and 2 s and drops the job's JobMaster at 2 s (its
//     requirements go), not at its heartbeat.timeout at 5 s;
//   - the TaskExecutor, which answers every JobMaster it is registered with whenever one asks —
//     here the healthy job's, every second from 0 s — fails its answers to the dead one at 1 s
//     and 2 s and disconnects that job at 2 s: the task it runs for it is canceled then, not at
//     its heartbeat.timeout at 5 s. The healthy job's task runs on.
//
// With the threshold -1 both wait for the timeout. Before a closed JobMaster's error was
// unreachable both lost it at 5 s whatever the threshold.
func TestDeadJobMasterIsLostAtTheRPCFailureThreshold(t *testing.T) {
	for _, tc := range []struct {
		threshold int
		lost      time.Duration
	}{
		{0, 2 * time.Second},
		{-1, 5 * time.Second},
	} {
		t.Run(fmt.Sprintf("threshold%d", tc.threshold), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				ends := &endLog{begin: time.Now(), ended: map[jobgraph.JobID]time.Duration{}}
				var mu sync.Mutex
				var fatal []error
				mc, err := minicluster.New(minicluster.Config{
					TaskExecutors:                1,
					SlotsPerTaskExecutor:         2,
					Registry:                     ends.registry(),
					HeartbeatInterval:            time.Second,
					HeartbeatTimeout:             5 * time.Second,
					HeartbeatRPCFailureThreshold: tc.threshold,
					// The job named "broken" panics on its JobMaster's loop when its task runs.
					SchedulerFactory: func(g *jobgraph.JobGraph, pool scheduler.SlotPool, d scheduler.Deployer, cfg scheduler.Config) (scheduler.SchedulerNG, error) {
						if g.Name == "broken" {
							return brokenSchedulerFactory(g, pool, d, cfg)
						}
						return scheduler.DefaultSchedulerFactory(g, pool, d, cfg)
					},
					FatalErrorHandler: func(err error) {
						mu.Lock()
						defer mu.Unlock()
						fatal = append(fatal, err)
					},
				})
				require.NoError(t, err)
				require.NoError(t, mc.Start(ctx))
				healthy := jobgraph.New("healthy", jobgraph.Streaming)
				healthy.AddVertex("block", "block", 1)
				require.NoError(t, mc.SubmitJob(ctx, healthy))
				broken := jobgraph.New("broken", jobgraph.Streaming)
				broken.AddVertex("block", "block", 1)
				require.NoError(t, mc.SubmitJob(ctx, broken))
				synctest.Wait()

				mu.Lock()
				require.Len(t, fatal, 1, "the broken job's JobMaster panicked")
				requirePanic(t, fatal[0], broken.JobID)
				mu.Unlock()
				info, registered := mc.ResourceManager().JobMaster(broken.JobID)
				require.True(t, registered, "the dead JobMaster did not disconnect from the ResourceManager")
				jm, err := rpc.Connect[rpc.JobMasterGateway](ctx, mc.RPC(), info.Address)
				require.NoError(t, err, "nor was it unregistered")
				herr := jm.HeartbeatFromResourceManager(ctx, "rm")
				requirePanic(t, herr, broken.JobID)
				assert.True(t, rpc.IsUnreachable(herr), "a dead JobMaster is gone: %v", herr)

				time.Sleep(tc.lost - time.Nanosecond)
				synctest.Wait()
				_, registered = mc.ResourceManager().JobMaster(broken.JobID)
				assert.True(t, registered, "1 ns before it is lost")
				_, ended := ends.get(broken.JobID)
				assert.False(t, ended, "the TaskExecutor still runs the dead job's task 1 ns before it is lost")

				time.Sleep(time.Nanosecond)
				synctest.Wait()
				_, registered = mc.ResourceManager().JobMaster(broken.JobID)
				assert.False(t, registered, "the ResourceManager dropped the dead JobMaster")
				at, ended := ends.get(broken.JobID)
				assert.True(t, ended, "the TaskExecutor disconnected the dead job")
				assert.Equal(t, tc.lost, at)
				_, registered = mc.ResourceManager().JobMaster(healthy.JobID)
				assert.True(t, registered, "the healthy job's JobMaster stays")
				_, ended = ends.get(healthy.JobID)
				assert.False(t, ended, "the healthy job's task runs on")

				requirePanic(t, mc.Close(), broken.JobID)
			})
		})
	}
}
