package cluster_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// locatingMaster is a ShuffleMaster that describes each partition by its producer's location
// only, as a network shuffle's does (with an address besides).
type locatingMaster struct{}

func (locatingMaster) RegisterPartitionWithProducer(_ jobgraph.JobID, p scheduler.PartitionDescriptor, producer scheduler.ProducerDescriptor) (rpc.ShuffleDescriptor, error) {
	return rpc.ShuffleDescriptor{ResultPartitionID: p.ResultPartitionID, ProducerLocation: producer.ProducerLocation}, nil
}
func (locatingMaster) ReleasePartitionExternally(rpc.ShuffleDescriptor) {}

// The other half-configured shuffle: the JobManager has a ShuffleMaster (as for a network
// shuffle), but the two TaskExecutors kept their own in-memory shuffles, as two processes would.
// A reader whose producer runs on the other TaskExecutor fails at deployment with
// ErrProducerNotInThisShuffle, naming the partition, the TaskExecutor and the fix, and the job
// (restart strategy none) ends FAILED instead of waiting forever.
func TestInMemoryShuffleRefusesAProducerOfAnotherProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := rpc.NewLocalService()
		defer svc.Close()
		services := embedded.New()
		defer services.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: services, ShuffleMaster: locatingMaster{}})
		require.NoError(t, err)
		for _, id := range []string{"te-a", "te-b"} {
			_, err := cluster.RunTaskExecutor(ctx, taskExecutor(id, svc, nil, services, nil)) // nil: a shuffle of its own
			require.NoError(t, err)
		}
		require.NoError(t, jm.AwaitLeadership(ctx))
		d := jm.LeaderDispatcher()
		g := wordCount() // lines (2) → ALL_TO_ALL → count (2): one subtask of each on each TaskExecutor
		require.NoError(t, d.SubmitJob(ctx, g))
		res, err := d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
		require.NotNil(t, res.Failure)
		require.ErrorIs(t, res.Failure.Err(), taskexecutor.ErrProducerNotInThisShuffle)
		assert.Contains(t, res.Failure.Message, "taskexecutor: the producer does not use this in-memory shuffle: result partition ")
		assert.Contains(t, res.Failure.Message, "which runs in another process or with another shuffle; TaskExecutors in several processes need a network shuffle (transport/grpc/netshuffle, whose Environment each TaskExecutor gets as Config.Shuffle)")
		cancel()
		require.NoError(t, jm.Wait())
	})
}
