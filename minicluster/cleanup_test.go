package minicluster_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// checkpointedJob is src(1) → sink(1), checkpoints every 100 ms, running until canceled; the
// tasks take their snapshots inside their reads and writes: the source emits one record a
// millisecond, the sink reads them.
func checkpointedJob(retainOnCancellation bool) (*taskexecutor.Registry, *jobgraph.JobGraph) {
	reg := taskexecutor.NewRegistry()
	reg.Register("src", func(ctx context.Context, env taskexecutor.Environment) error {
		var n int64
		env.SetCheckpointHandler(counter{&n})
		for {
			time.Sleep(time.Millisecond)
			if err := env.Output(0).Emit(ctx, 0, n); err != nil {
				return err
			}
			n++
		}
	})
	reg.Register("sink", func(ctx context.Context, env taskexecutor.Environment) error {
		var n int64
		env.SetCheckpointHandler(counter{&n})
		for {
			if _, err := env.Input(0).Next(ctx); err != nil {
				return err
			}
			n++
		}
	})
	g := jobgraph.New("checkpointed", jobgraph.Streaming)
	g.Connect(g.AddVertex("src", "src", 1), g.AddVertex("sink", "sink", 1), jobgraph.Pointwise, jobgraph.PipelinedBounded)
	g.Checkpointing = jobgraph.CheckpointingSettings{Interval: 100 * time.Millisecond, RetainOnCancellation: retainOnCancellation}
	return reg, g
}

// latestCheckpoint returns the ID of the job's newest retained checkpoint and its counter's next
// ID as the factory holds them; 0, 0 once it holds nothing of the job.
func latestCheckpoint(t *testing.T, f *checkpoint.StandaloneCheckpointRecoveryFactory, job jobgraph.JobID) (checkpoint.CheckpointID, checkpoint.CheckpointID) {
	t.Helper()
	if len(f.Jobs()) == 0 {
		return 0, 0
	}
	store, err := f.CreateRecoveredCompletedCheckpointStore(job, 0)
	require.NoError(t, err)
	latest, ok := store.Latest()
	require.True(t, ok)
	counter, err := f.CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	next, err := counter.Get()
	require.NoError(t, err)
	return latest.CheckpointID, next
}

// The JobMasters and the Dispatcher's global cleanup share HA.CheckpointRecoveryFactory(): a
// checkpointing job's completed checkpoints are there while it runs, and once it is CANCELED the
// cleanup discards them, so the factory holds nothing of the job; with RetainOnCancellation
// (externalized-checkpoint-retention RETAIN_ON_CANCELLATION) they stay, the latest one and the
// counter going on from it, for the host to restore from.
func TestGlobalCleanupDiscardsTheCheckpointsUnlessRetained(t *testing.T) {
	for _, retain := range []bool{false, true} {
		t.Run(fmt.Sprintf("retain=%t", retain), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg, g := checkpointedJob(retain)
				mc := start(t, minicluster.Config{Registry: reg})
				ctx := context.Background()
				require.NoError(t, mc.SubmitJob(ctx, g))
				time.Sleep(350 * time.Millisecond)
				synctest.Wait()
				factory := mc.HA().CheckpointRecoveryFactory().(*checkpoint.StandaloneCheckpointRecoveryFactory)
				latest, _ := latestCheckpoint(t, factory, g.JobID)
				assert.Equal(t, checkpoint.CheckpointID(3), latest, "at 100, 200 and 300 ms")

				require.NoError(t, mc.CancelJob(ctx, g.JobID))
				res, err := mc.RequestJobResult(ctx, g.JobID)
				require.NoError(t, err)
				require.Equal(t, jobgraph.JobStatusCanceled, res.Status)
				entry, err := mc.HA().JobResultStore().Get(ctx, g.JobID)
				require.NoError(t, err)
				assert.True(t, entry.Clean)
				if !retain {
					assert.Empty(t, factory.Jobs(), "discarded: nothing of the job is kept")
					return
				}
				assert.Equal(t, []jobgraph.JobID{g.JobID}, factory.Jobs())
				latest, next := latestCheckpoint(t, factory, g.JobID)
				assert.Equal(t, checkpoint.CheckpointID(3), latest)
				assert.Equal(t, checkpoint.CheckpointID(4), next)
			})
		})
	}
}
