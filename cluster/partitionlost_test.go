package cluster_test

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Issue 13's "a consumer of a partition whose process died gets the partition-lost error and
// region failover restarts the producer", as a job: a BLOCKING partition is finished on one of
// two producer TaskExecutors; that TaskExecutor dies (Kill: its process is gone, its partitions
// lost) before the consumer, on a third, reads it. The consumer fails with ErrPartitionLost, the
// scheduler restarts the producer's region too (the failure names the unavailable partition),
// the producer runs again on the surviving producer TaskExecutor, and the job finishes with the
// exact sum. The JobMaster asks every TaskExecutor for a heartbeat each second from 0 s; the
// dead one is killed at 0.5 s, its requests at 1 s and 2 s fail as unreachable, and at 2 s
// (heartbeat.rpc-failure-threshold, 2) the JobMaster drops it, 3 s before its heartbeat.timeout
// would have: one deployment onto its free slot fails (at 1.5 s, the restart delay after the
// consumer's failure), and the next one, at 2.5 s, goes to the other producer TaskExecutor.
func TestLostBlockingPartitionRestartsItsProducerElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := rpc.NewLocalService()
		defer svc.Close()
		services := embedded.New()
		defer services.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: services, Logger: discard,
			HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second})
		require.NoError(t, err)

		const n = 100
		gate := make(chan struct{})
		var consumerAttempts atomic.Int32
		reg := taskexecutor.NewRegistry()
		reg.Register("numbers", func(ctx context.Context, env taskexecutor.Environment) error {
			out := env.Output(0)
			for i := range n {
				if err := out.Emit(ctx, 0, i+1); err != nil {
					return err
				}
			}
			return nil
		})
		reg.Register("sum", func(ctx context.Context, env taskexecutor.Environment) error {
			if consumerAttempts.Add(1) == 1 {
				select { // the first attempt waits until the producer's TaskExecutor is dead
				case <-gate:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			acc, err := env.AccumulatorRegistry().IntCounter("sum")
			if err != nil {
				return err
			}
			in := env.Input(0)
			for {
				rec, err := in.Next(ctx)
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return err
				}
				acc.Add(rec.(int))
			}
		})
		producerSlot := jobgraph.ResourceProfile{CPUCores: 2}
		consumerSlot := jobgraph.ResourceProfile{CPUCores: 1, ManagedMemory: 1 << 20}
		shuffle := taskexecutor.NewShuffle(taskexecutor.ShuffleConfig{})
		runners := map[jobgraph.ResourceID]*cluster.TaskExecutorRunner{}
		for id, profile := range map[string]jobgraph.ResourceProfile{"te-p1": producerSlot, "te-p2": producerSlot, "te-c": consumerSlot} {
			cfg := taskExecutor(id, svc, shuffle, services, nil)
			cfg.TaskExecutor.Registry = reg
			cfg.TaskExecutor.SlotProfile = profile
			cfg.TaskExecutor.HeartbeatInterval, cfg.TaskExecutor.HeartbeatTimeout = time.Second, 5*time.Second
			r, err := cluster.RunTaskExecutor(ctx, cfg)
			require.NoError(t, err)
			_, err = r.TaskExecutor().WaitRegistered(ctx)
			require.NoError(t, err)
			runners[jobgraph.ResourceID(id)] = r
		}
		require.NoError(t, jm.AwaitLeadership(ctx))

		g := jobgraph.New("lost partition", jobgraph.Batch)
		src := g.AddVertex("numbers", "numbers", 1).WithResources(jobgraph.ResourceProfile{CPUCores: 2}).WithSlotSharingGroup("producers")
		sink := g.AddVertex("sum", "sum", 1).WithResources(jobgraph.ResourceProfile{ManagedMemory: 1 << 20}).WithSlotSharingGroup("consumers")
		g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Blocking)
		g.RestartStrategy = jobgraph.FixedDelayRestart(10, time.Second)
		d := jm.LeaderDispatcher()
		require.NoError(t, d.SubmitJob(ctx, g))
		synctest.Wait() // the producer finished; the consumer runs and waits at the gate

		a, err := d.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		require.Len(t, a.JobVertices, 2)
		producer := a.JobVertices[0].Subtasks[0]
		require.Equal(t, jobgraph.ExecutionStateFinished, producer.State)
		require.Equal(t, jobgraph.ExecutionStateRunning, a.JobVertices[1].Subtasks[0].State)
		dead := producer.Location
		require.Contains(t, []jobgraph.ResourceID{"te-p1", "te-p2"}, dead)
		begin := time.Now()
		time.Sleep(500 * time.Millisecond)  // off the heartbeat requests' whole seconds
		runners[dead].TaskExecutor().Kill() // its process is gone: the finished partition with it
		killed := time.Now()
		close(gate)

		res, err := d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.Failure)
		sum, err := jobgraph.AccumulatorValue[int](res.Accumulators, "sum")
		require.NoError(t, err)
		assert.Equal(t, n*(n+1)/2, sum)

		// The consumer's failure is the lost partition (the history is oldest first).
		require.NotEmpty(t, res.ExceptionHistory)
		first := res.ExceptionHistory[0]
		assert.Equal(t, "sum (1/1)", first.TaskName)
		assert.Equal(t, jobgraph.ResourceID("te-c"), first.Location)
		assert.Contains(t, first.Message, ": "+taskexecutor.ErrPartitionLost.Error()+": TaskExecutor "+string(dead)+" is gone", "the consumer's failure is the lost partition")
		assert.Equal(t, time.Duration(0), first.Timestamp.Sub(killed))
		// One deployment onto the dead TaskExecutor's free slot fails, 1 s (the restart delay)
		// after the consumer's failure; at 2 s the JobMaster dropped the dead TaskExecutor, so the
		// deployment at 2.5 s goes elsewhere and succeeds. (With only heartbeat.timeout, 5 s, the
		// deployments at 1.5, 2.5, 3.5 and 4.5 s all went to the dead one.)
		rest := res.ExceptionHistory[1:]
		require.Len(t, rest, 1, "%v", rest)
		assert.Equal(t, "numbers (1/1)", rest[0].TaskName)
		assert.Equal(t, dead, rest[0].Location)
		assert.Equal(t, 1500*time.Millisecond, rest[0].Timestamp.Sub(begin))
		assert.Contains(t, rest[0].Message, "TaskExecutor "+string(dead)+": taskexecutor: killed")

		final, err := d.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		again := final.JobVertices[0].Subtasks[0]
		assert.Equal(t, jobgraph.ExecutionStateFinished, again.State)
		assert.Equal(t, 2, again.AttemptNumber, "the producer ran again, after the one attempt that could not be deployed")
		assert.NotEqual(t, dead, again.Location, "elsewhere than on the dead TaskExecutor")
		assert.Contains(t, []jobgraph.ResourceID{"te-p1", "te-p2"}, again.Location)
		assert.Equal(t, 2500*time.Millisecond, again.StateTimestamps[jobgraph.ExecutionStateDeploying].Sub(begin))

		cancel()
		require.NoError(t, jm.Wait())
	})
}
