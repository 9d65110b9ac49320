package minicluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
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

// failingDirty is the embedded services with a JobResultStore whose first CreateDirty calls
// fail.
type failingDirty struct {
	*embedded.Services
	failures atomic.Int32
}

func (h *failingDirty) JobResultStore() ha.JobResultStore {
	return failingResults{h.Services.JobResultStore(), &h.failures}
}

type failingResults struct {
	ha.JobResultStore
	failures *atomic.Int32
}

func (s failingResults) CreateDirty(ctx context.Context, r jobgraph.JobResult) error {
	if s.failures.Add(-1) >= 0 {
		return errors.New("injected CreateDirty failure")
	}
	return s.JobResultStore.CreateDirty(ctx, r)
}

// End to end, with the real scheduler: a checkpointing job's checkpoints exist until its dirty
// JobResult is written and are gone right after. The job is canceled at 350 ms (checkpoints 1–3
// completed); CreateDirty fails twice, so the entry is written 1 s + 2 s after the job reached
// CANCELED; until then checkpoint 3 and the counter are there and no entry, from then on neither the
// checkpoints nor the counter, and the entry is clean.
func TestCheckpointsExistUntilTheDirtyEntryIsWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := &failingDirty{Services: embedded.New()}
		defer services.Services.Close()
		services.failures.Store(2)
		reg, g := checkpointedJob(false)
		canceled := make(chan time.Time, 1)
		mc := start(t, minicluster.Config{Registry: reg, HA: services,
			JobStatusListener: func(_ jobgraph.JobID, st jobgraph.JobStatus, at time.Time) {
				if st == jobgraph.JobStatusCanceled {
					canceled <- at
				}
			}})
		ctx := context.Background()
		require.NoError(t, mc.SubmitJob(ctx, g))
		time.Sleep(350 * time.Millisecond)
		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		ended := <-canceled
		factory := services.Services.CheckpointRecoveryFactory().(*checkpoint.StandaloneCheckpointRecoveryFactory)
		for _, at := range []time.Duration{0, time.Second, 3*time.Second - time.Nanosecond} {
			time.Sleep(at - time.Since(ended))
			synctest.Wait()
			latest, next := latestCheckpoint(t, factory, g.JobID)
			assert.Equal(t, checkpoint.CheckpointID(3), latest, "at +%v", at)
			assert.Equal(t, checkpoint.CheckpointID(4), next, "at +%v", at)
			_, err := services.Services.JobResultStore().Get(ctx, g.JobID)
			assert.ErrorIs(t, err, ha.ErrNotFound, "at +%v", at)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, factory.Jobs(), "discarded once the dirty entry was written")
		entry, err := services.Services.JobResultStore().Get(ctx, g.JobID)
		require.NoError(t, err)
		assert.True(t, entry.Clean)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	})
}
