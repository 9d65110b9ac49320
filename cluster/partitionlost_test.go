package cluster_test

import (
	"context"
	"errors"
	"io"
	"strings"
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
// exact sum.
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
		// Deploying onto the dead TaskExecutor's free slot fails at 1, 2, 3 and 4 s; at 5 s its
		// heartbeat.timeout drops it, and a fifth attempt may still have gone there at that instant
		// (failing to deploy, or losing its slot with the heartbeat): the order within the instant
		// decides.
		rest := res.ExceptionHistory[1:]
		require.Contains(t, []int{4, 5}, len(rest), "%v", rest)
		for i, e := range rest[:4] {
			assert.Equal(t, "numbers (1/1)", e.TaskName, i)
			assert.Equal(t, dead, e.Location, i)
			assert.Equal(t, time.Duration(i+1)*time.Second, e.Timestamp.Sub(killed), i)
			assert.Contains(t, e.Message, "TaskExecutor "+string(dead)+": taskexecutor: killed", i)
		}
		if len(rest) == 5 {
			assert.Equal(t, dead, rest[4].Location)
			assert.Equal(t, 5*time.Second, rest[4].Timestamp.Sub(killed))
			deployFailed := strings.Contains(rest[4].Message, "TaskExecutor "+string(dead)+": taskexecutor: killed")
			slotLost := strings.Contains(rest[4].Message, "heartbeat of TaskExecutor "+string(dead)+" timed out after 5s")
			assert.True(t, deployFailed || slotLost, rest[4].Message)
		}

		final, err := d.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		again := final.JobVertices[0].Subtasks[0]
		assert.Equal(t, jobgraph.ExecutionStateFinished, again.State)
		assert.GreaterOrEqual(t, again.AttemptNumber, 1, "the producer ran again")
		assert.NotEqual(t, dead, again.Location, "elsewhere than on the dead TaskExecutor")
		assert.Contains(t, []jobgraph.ResourceID{"te-p1", "te-p2"}, again.Location)

		cancel()
		require.NoError(t, jm.Wait())
	})
}
