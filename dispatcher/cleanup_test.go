package dispatcher_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// cleanupFixture is a Dispatcher over recordingHA whose JobMasters are fakes; made inside a
// synctest bubble, closed at the test's end.
type cleanupFixture struct {
	d       *dispatcher.StandaloneDispatcher
	h       *recordingHA
	jms     chan *fakeJobMaster
	created atomic.Int32
}

func newCleanupFixture(t *testing.T, cfg dispatcher.Config) *cleanupFixture {
	f := &cleanupFixture{h: newRecordingHA(), jms: make(chan *fakeJobMaster, 16)}
	cfg.HA = f.h
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.JobManagerRunnerFactory = dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
		return &fakeFactory{g: g, created: &f.created, last: f.jms}, nil
	})
	d, err := dispatcher.New(cfg)
	require.NoError(t, err)
	f.d = d
	t.Cleanup(func() {
		require.NoError(t, d.Close())
		require.NoError(t, f.h.Services.Close())
	})
	return f
}

// submitted are the calls of a submission: the Dispatcher's duplicate check, the plan's Put, and
// the runner's JobResultStore read on its grant.
var submitted = []string{"0s JobResultStore.Get", "0s ExecutionPlanStore.Put", "0s JobResultStore.Get"}

// submit runs g and returns its (fake) JobMaster, RUNNING; the submission's calls are checked
// and forgotten.
func (f *cleanupFixture) submit(t *testing.T, g *jobgraph.JobGraph) *fakeJobMaster {
	t.Helper()
	require.NoError(t, f.d.SubmitJob(context.Background(), g))
	jm := <-f.jms
	synctest.Wait()
	require.Equal(t, submitted, f.h.recorded())
	return jm
}

// checkpointingGraph is a streaming job with periodic checkpoints (it has a CheckpointCoordinator).
func checkpointingGraph(name string, retainOnCancellation bool) *jobgraph.JobGraph {
	g := jobgraph.New(name, jobgraph.Streaming)
	g.AddVertex("v", "noop", 1)
	g.Checkpointing = jobgraph.CheckpointingSettings{Interval: time.Second, NumRetained: 2, RetainOnCancellation: retainOnCancellation}
	return g
}

// factory is the embedded services' checkpoint recovery factory, unrecorded.
func (f *cleanupFixture) factory() *checkpoint.StandaloneCheckpointRecoveryFactory {
	return f.h.Services.CheckpointRecoveryFactory().(*checkpoint.StandaloneCheckpointRecoveryFactory)
}

// seedCheckpoints completes checkpoints 1 and 2 of job and shuts store and counter down without
// discard, as the job's scheduler does when the job reaches a globally terminal state.
func (f *cleanupFixture) seedCheckpoints(t *testing.T, job jobgraph.JobID) {
	t.Helper()
	store, err := f.factory().CreateRecoveredCompletedCheckpointStore(job, 2)
	require.NoError(t, err)
	counter, err := f.factory().CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	for range 2 {
		id, err := counter.GetAndIncrement()
		require.NoError(t, err)
		_, err = store.Add(checkpoint.CompletedCheckpoint{JobID: job, CheckpointID: id})
		require.NoError(t, err)
	}
	require.NoError(t, store.Shutdown(false))
	require.NoError(t, counter.Shutdown(false))
}

// checkpoints returns the IDs of the job's retained checkpoints and its counter's next ID as the
// factory holds them; nil and 0 once the factory holds nothing of the job (discarded).
func (f *cleanupFixture) checkpoints(t *testing.T, job jobgraph.JobID) ([]checkpoint.CheckpointID, checkpoint.CheckpointID) {
	t.Helper()
	if !slices.Contains(f.factory().Jobs(), job) {
		return nil, 0
	}
	store, err := f.factory().CreateRecoveredCompletedCheckpointStore(job, 2)
	require.NoError(t, err)
	var ids []checkpoint.CheckpointID
	for _, cp := range store.All() {
		ids = append(ids, cp.CheckpointID)
	}
	counter, err := f.factory().CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	next, err := counter.Get()
	require.NoError(t, err)
	return ids, next
}

// entry returns the job's JobResultStore entry (unrecorded); ok false if it has none.
func (f *cleanupFixture) entry(t *testing.T, job jobgraph.JobID) (ha.JobResultEntry, bool) {
	t.Helper()
	e, err := f.h.Services.JobResultStore().Get(context.Background(), job)
	if err != nil {
		require.ErrorIs(t, err, ha.ErrNotFound)
		return e, false
	}
	return e, true
}

// hasPlan reports whether the ExecutionPlanStore holds the job's plan (unrecorded).
func (f *cleanupFixture) hasPlan(t *testing.T, job jobgraph.JobID) bool {
	t.Helper()
	_, err := f.h.Services.ExecutionPlanStore().Get(context.Background(), job)
	if err != nil {
		require.ErrorIs(t, err, ha.ErrNotFound)
		return false
	}
	return true
}

// globalCleanup is the calls of a checkpointing job's global cleanup at at, every step
// succeeding at once.
func globalCleanup(at string) []string {
	return []string{
		at + " JobResultStore.CreateDirty",
		at + " CheckpointRecoveryFactory.CreateRecoveredCompletedCheckpointStore",
		at + " CompletedCheckpointStore.Shutdown(true)",
		at + " CheckpointRecoveryFactory.CreateCheckpointIDCounter",
		at + " CheckpointIDCounter.Shutdown(true)",
		at + " ExecutionPlanStore.Remove",
		at + " HA.CleanupJobData",
		at + " JobResultStore.MarkClean",
	}
}

// A FINISHED, CANCELED or FAILED job is cleaned up globally, in exactly this order: the dirty
// JobResult, the checkpoints and their counter discarded, the plan removed, the HA data, and only
// then the entry marked clean. Afterwards the checkpoint factory holds nothing of the job.
func TestGloballyTerminatedJobIsCleanedUpInOrder(t *testing.T) {
	for _, status := range []jobgraph.JobStatus{jobgraph.JobStatusFinished, jobgraph.JobStatusCanceled, jobgraph.JobStatusFailed} {
		t.Run(status.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newCleanupFixture(t, dispatcher.Config{})
				g := checkpointingGraph("cleanup", false)
				jm := f.submit(t, g)
				f.seedCheckpoints(t, g.JobID)
				ids, next := f.checkpoints(t, g.JobID)
				require.Equal(t, []checkpoint.CheckpointID{1, 2}, ids)
				require.Equal(t, checkpoint.CheckpointID(3), next)

				jm.end(status)
				res, err := f.d.RequestJobResult(context.Background(), g.JobID)
				require.NoError(t, err)
				assert.Equal(t, status, res.Status)
				synctest.Wait()
				assert.Equal(t, globalCleanup("0s"), f.h.recorded())
				e, ok := f.entry(t, g.JobID)
				require.True(t, ok)
				assert.True(t, e.Clean)
				assert.Equal(t, status, e.Result.Status)
				assert.False(t, f.hasPlan(t, g.JobID))
				assert.Empty(t, f.factory().Jobs(), "the factory holds nothing of the job")
			})
		})
	}
}

// A batch job has no CheckpointCoordinator: its global cleanup opens no checkpoint store.
func TestBatchJobCleanupOpensNoCheckpointStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newCleanupFixture(t, dispatcher.Config{})
		g := graph("batch")
		f.submit(t, g).end(jobgraph.JobStatusFinished)
		synctest.Wait()
		assert.Equal(t, []string{
			"0s JobResultStore.CreateDirty",
			"0s ExecutionPlanStore.Remove",
			"0s HA.CleanupJobData",
			"0s JobResultStore.MarkClean",
		}, f.h.recorded())
		assert.Empty(t, f.factory().Jobs())
	})
}

// Nothing is cleaned before the dirty entry is written: CreateDirty failing twice is retried at
// +1 s and +2 s after each failure (1 s, 3 s); until it succeeds the plan and the checkpoints
// are all there and no JobResult is answered (the status is FINISHED); at 3 s the cleanup runs,
// and afterwards the checkpoints are gone and the result is answered.
func TestNothingIsCleanedBeforeTheDirtyEntryIsWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newCleanupFixture(t, dispatcher.Config{})
		g := checkpointingGraph("dirty first", false)
		jm := f.submit(t, g)
		f.seedCheckpoints(t, g.JobID)
		f.h.failNext("JobResultStore.CreateDirty", 2)
		answered := make(chan *jobgraph.JobResult, 1)
		go func() {
			res, err := f.d.RequestJobResult(context.Background(), g.JobID)
			assert.NoError(t, err)
			answered <- res
		}()
		jm.end(jobgraph.JobStatusFinished)

		for _, at := range []time.Duration{0, time.Second, 2 * time.Second, 3*time.Second - time.Nanosecond} {
			time.Sleep(at - time.Since(f.h.start))
			synctest.Wait()
			ids, next := f.checkpoints(t, g.JobID)
			assert.Equal(t, []checkpoint.CheckpointID{1, 2}, ids, "at %v", at)
			assert.Equal(t, checkpoint.CheckpointID(3), next, "at %v", at)
			assert.True(t, f.hasPlan(t, g.JobID), "at %v", at)
			_, ok := f.entry(t, g.JobID)
			assert.False(t, ok, "at %v", at)
			assert.Empty(t, answered, "at %v: the result is answered once the job is cleaned up", at)
			st, err := f.d.RequestJobStatus(context.Background(), g.JobID)
			require.NoError(t, err)
			assert.Equal(t, jobgraph.JobStatusFinished, st)
		}
		assert.Equal(t, []string{"0s JobResultStore.CreateDirty", "1s JobResultStore.CreateDirty"}, f.h.recorded())

		time.Sleep(time.Nanosecond) // 3 s
		synctest.Wait()
		assert.Equal(t, globalCleanup("3s"), f.h.recorded())
		require.Len(t, answered, 1)
		assert.Equal(t, jobgraph.JobStatusFinished, (<-answered).Status)
		ids, _ := f.checkpoints(t, g.JobID)
		assert.Empty(t, ids)
		assert.Empty(t, f.factory().Jobs())
		e, ok := f.entry(t, g.JobID)
		require.True(t, ok)
		assert.True(t, e.Clean)
	})
}

// Each cleanup step failing twice is retried on its own at +1 s and +2 s (exact virtual instants
// 1 s and 3 s), then succeeds; the later steps run after it, and the entry is marked clean only
// once every step succeeded: it is dirty while a step retries.
func TestACleanupStepFailingTwiceIsRetriedThenSucceeds(t *testing.T) {
	full := globalCleanup("0s")
	for i, step := range []string{
		"CheckpointRecoveryFactory.CreateRecoveredCompletedCheckpointStore",
		"CompletedCheckpointStore.Shutdown(true)",
		"CheckpointRecoveryFactory.CreateCheckpointIDCounter",
		"CheckpointIDCounter.Shutdown(true)",
		"ExecutionPlanStore.Remove",
		"HA.CleanupJobData",
		"JobResultStore.MarkClean",
	} {
		t.Run(step, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newCleanupFixture(t, dispatcher.Config{})
				g := checkpointingGraph("retried", false)
				jm := f.submit(t, g)
				f.seedCheckpoints(t, g.JobID)
				f.h.failNext(step, 2)
				jm.end(jobgraph.JobStatusFinished)

				time.Sleep(2 * time.Second)
				synctest.Wait()
				e, ok := f.entry(t, g.JobID)
				require.True(t, ok, "written first")
				assert.False(t, e.Clean, "dirty while %s is retried", step)
				time.Sleep(time.Second)
				synctest.Wait()

				// The checkpoint step is one: a failure of any of its calls retries it whole.
				first := i + 1
				if i < 4 {
					first = 1
				}
				var want []string
				want = append(want, full[:first]...)
				for _, at := range []string{"0s", "1s"} {
					for _, c := range full[first : i+2] {
						want = append(want, at+c[2:])
					}
				}
				for _, c := range full[first:] {
					want = append(want, "3s"+c[2:])
				}
				assert.Equal(t, want, f.h.recorded())
				e, ok = f.entry(t, g.JobID)
				require.True(t, ok)
				assert.True(t, e.Clean)
				assert.False(t, f.hasPlan(t, g.JobID))
				assert.Empty(t, f.factory().Jobs())
			})
		})
	}
}

// The retry delays double from cleanup-strategy.exponential-delay.initial-backoff (1 s) up to
// .max-backoff (1 h) and the attempts are unlimited: a plan removal failing 14 times is tried at
// 0 s, 1 s, 3 s, 7 s, … 4095 s (the 13th try, 2048 s after the 12th), then an hour apart, and
// succeeds at the 15th try, 11295 s in.
func TestCleanupRetriesBackOffExponentiallyToOneHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newCleanupFixture(t, dispatcher.Config{})
		g := graph("backoff")
		jm := f.submit(t, g)
		f.h.failNext("ExecutionPlanStore.Remove", 14)
		jm.end(jobgraph.JobStatusFinished)
		time.Sleep(4 * time.Hour)
		synctest.Wait()
		want := []string{"0s JobResultStore.CreateDirty"}
		for _, s := range []int{0, 1, 3, 7, 15, 31, 63, 127, 255, 511, 1023, 2047, 4095, 4095 + 3600, 4095 + 2*3600} {
			want = append(want, (time.Duration(s)*time.Second).String()+" ExecutionPlanStore.Remove")
		}
		want = append(want, "3h8m15s HA.CleanupJobData", "3h8m15s JobResultStore.MarkClean")
		assert.Equal(t, want, f.h.recorded())
		e, ok := f.entry(t, g.JobID)
		require.True(t, ok)
		assert.True(t, e.Clean)
	})
}

// The cleanup-strategy fields: a custom initial and max backoff, and a bounded number of retries
// after which the step gives up and the entry stays dirty (Flink: cleanup needs a manual
// intervention then; the next leader's recovery cleans it up again).
func TestCleanupStrategyConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newCleanupFixture(t, dispatcher.Config{
			CleanupExponentialDelayInitialBackoff: 100 * time.Millisecond,
			CleanupExponentialDelayMaxBackoff:     300 * time.Millisecond,
			CleanupExponentialDelayAttempts:       3,
		})
		g := graph("bounded")
		jm := f.submit(t, g)
		f.h.failNext("HA.CleanupJobData", 100)
		jm.end(jobgraph.JobStatusCanceled)
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, []string{
			"0s JobResultStore.CreateDirty",
			"0s ExecutionPlanStore.Remove",
			"0s HA.CleanupJobData",
			"100ms HA.CleanupJobData",
			"300ms HA.CleanupJobData",
			"600ms HA.CleanupJobData",
		}, f.h.recorded(), "three retries, delays 100, 200, 300 ms")
		e, ok := f.entry(t, g.JobID)
		require.True(t, ok)
		assert.False(t, e.Clean, "left dirty")
		res, err := f.d.RequestJobResult(context.Background(), g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	})

	for _, c := range []struct {
		cfg  dispatcher.Config
		want string
	}{
		{dispatcher.Config{CleanupExponentialDelayInitialBackoff: -time.Second}, "CleanupExponentialDelayInitialBackoff (cleanup-strategy.exponential-delay.initial-backoff) is -1s, negative (0 means 1s)"},
		{dispatcher.Config{CleanupExponentialDelayMaxBackoff: -time.Second}, "CleanupExponentialDelayMaxBackoff (cleanup-strategy.exponential-delay.max-backoff) is -1s, negative (0 means 1h0m0s)"},
		{dispatcher.Config{CleanupExponentialDelayAttempts: -1}, "CleanupExponentialDelayAttempts (cleanup-strategy.exponential-delay.attempts) is -1, negative (0 means unlimited)"},
		{dispatcher.Config{CleanupExponentialDelayInitialBackoff: 2 * time.Hour}, "CleanupExponentialDelayMaxBackoff (cleanup-strategy.exponential-delay.max-backoff) 1h0m0s is below the initial backoff 2h0m0s"},
	} {
		c.cfg.HA = newRecordingHA()
		c.cfg.JobManagerRunnerFactory = func(*jobgraph.JobGraph, ha.Services) (jobmaster.JobManagerRunner, error) { return nil, nil }
		_, err := dispatcher.New(c.cfg)
		require.ErrorIs(t, err, dispatcher.ErrInvalidConfig)
		assert.Equal(t, "dispatcher: invalid configuration: "+c.want, err.Error())
		require.NoError(t, c.cfg.HA.Close())
	}
}

// A SUSPENDED job, and every job a closing Dispatcher suspends, is cleaned up locally only: no HA
// call beyond the submission's; plan and checkpoints stay for the next leader, no entry.
func TestSuspendedJobsCleanNothingOfHA(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newCleanupFixture(t, dispatcher.Config{})
		suspended := checkpointingGraph("suspended", false)
		f.seedCheckpoints(t, suspended.JobID)
		f.submit(t, suspended).end(jobgraph.JobStatusSuspended)
		res, err := f.d.RequestJobResult(context.Background(), suspended.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusSuspended, res.Status)

		running := checkpointingGraph("running at close", false)
		f.seedCheckpoints(t, running.JobID)
		f.submit(t, running)
		require.NoError(t, f.d.Close())
		assert.Empty(t, f.h.recorded(), "no HA call")
		for _, g := range []*jobgraph.JobGraph{suspended, running} {
			ids, next := f.checkpoints(t, g.JobID)
			assert.Equal(t, []checkpoint.CheckpointID{1, 2}, ids, g.Name)
			assert.Equal(t, checkpoint.CheckpointID(3), next, g.Name)
			assert.True(t, f.hasPlan(t, g.JobID), g.Name)
			_, ok := f.entry(t, g.JobID)
			assert.False(t, ok, g.Name)
		}
	})
}

// Close stops a cleanup that retries: no call after Close, the entry stays dirty and the plan
// stays, for the next leader's recovery; Close does not wait for the backoff.
func TestCloseStopsACleanupThatRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newCleanupFixture(t, dispatcher.Config{})
		g := graph("stopped")
		jm := f.submit(t, g)
		f.h.failNext("ExecutionPlanStore.Remove", 100)
		jm.end(jobgraph.JobStatusFinished)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		start := time.Now()
		require.NoError(t, f.d.Close())
		assert.Zero(t, time.Since(start), "Close does not wait for the next try (at 3 s)")
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, []string{"0s JobResultStore.CreateDirty", "0s ExecutionPlanStore.Remove", "1s ExecutionPlanStore.Remove"}, f.h.recorded())
		e, ok := f.entry(t, g.JobID)
		require.True(t, ok)
		assert.False(t, e.Clean)
		assert.True(t, f.hasPlan(t, g.JobID))
	})
}

// execution.checkpointing.externalized-checkpoint-retention = RETAIN_ON_CANCELLATION keeps the
// checkpoints and counter of a job that did not finish (CANCELED, FAILED): the cleanup opens no
// checkpoint store and removes the rest. A FINISHED job's are discarded all the same.
func TestRetainOnCancellationKeepsTheCheckpointsOfAJobThatDidNotFinish(t *testing.T) {
	for _, status := range []jobgraph.JobStatus{jobgraph.JobStatusCanceled, jobgraph.JobStatusFailed, jobgraph.JobStatusFinished} {
		t.Run(status.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newCleanupFixture(t, dispatcher.Config{})
				g := checkpointingGraph("retained", true)
				jm := f.submit(t, g)
				f.seedCheckpoints(t, g.JobID)
				jm.end(status)
				synctest.Wait()
				ids, next := f.checkpoints(t, g.JobID)
				if status == jobgraph.JobStatusFinished {
					assert.Equal(t, globalCleanup("0s"), f.h.recorded())
					assert.Empty(t, ids)
					assert.Empty(t, f.factory().Jobs())
					return
				}
				assert.Equal(t, []string{
					"0s JobResultStore.CreateDirty",
					"0s ExecutionPlanStore.Remove",
					"0s HA.CleanupJobData",
					"0s JobResultStore.MarkClean",
				}, f.h.recorded())
				assert.Equal(t, []checkpoint.CheckpointID{1, 2}, ids)
				assert.Equal(t, checkpoint.CheckpointID(3), next)
				assert.False(t, f.hasPlan(t, g.JobID))
				e, ok := f.entry(t, g.JobID)
				require.True(t, ok)
				assert.True(t, e.Clean)
			})
		})
	}
}

// A rejected duplicate submission deletes nothing. A JobID whose job runs is refused on the
// Dispatcher's loop with no HA call; a JobID the JobResultStore has a dirty entry for (a job that
// ended under an earlier leader, its cleanup pending) is refused after the read, and its plan and
// checkpoints stay for that cleanup.
func TestRejectedDuplicateSubmissionDeletesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newCleanupFixture(t, dispatcher.Config{})
		ctx := context.Background()
		g := checkpointingGraph("original", false)
		f.submit(t, g)
		again := checkpointingGraph("impostor", false)
		again.JobID = g.JobID
		require.ErrorIs(t, f.d.SubmitJob(ctx, again), dispatcher.ErrDuplicateJobSubmission)
		synctest.Wait()
		assert.Empty(t, f.h.recorded(), "refused on the loop")
		stored, err := f.h.Services.ExecutionPlanStore().Get(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, "original", stored.Name)
		st, err := f.d.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, st)

		// What a crashed leader leaves: a dirty entry, the plan and the checkpoints.
		left := checkpointingGraph("ended elsewhere", false)
		require.NoError(t, f.h.Services.ExecutionPlanStore().Put(ctx, left))
		require.NoError(t, f.h.Services.JobResultStore().CreateDirty(ctx, jobgraph.JobResult{JobID: left.JobID, Status: jobgraph.JobStatusFinished}))
		f.seedCheckpoints(t, left.JobID)
		var dup *dispatcher.DuplicateJobSubmissionError
		require.ErrorAs(t, f.d.SubmitJob(ctx, left), &dup)
		assert.True(t, dup.GloballyTerminated)
		synctest.Wait()
		assert.Equal(t, []string{"0s JobResultStore.Get"}, f.h.recorded())
		assert.True(t, f.hasPlan(t, left.JobID))
		ids, _ := f.checkpoints(t, left.JobID)
		assert.Equal(t, []checkpoint.CheckpointID{1, 2}, ids)
		assert.Equal(t, int32(1), f.created.Load())
	})
}

// A step refused with ha.ErrNotLeader is not retried: the Dispatcher's leader session is over,
// and the next leader recovers the dirty entry. Nothing after the refused step runs; the entry
// stays dirty, the plan stays.
func TestACleanupStepRefusedAsNotLeaderIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newCleanupFixture(t, dispatcher.Config{})
		g := graph("deposed")
		jm := f.submit(t, g)
		f.h.failNextWith("ExecutionPlanStore.Remove", 1, fmt.Errorf("removing the plan: %w", ha.ErrNotLeader))
		jm.end(jobgraph.JobStatusFinished)
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, []string{"0s JobResultStore.CreateDirty", "0s ExecutionPlanStore.Remove"}, f.h.recorded())
		e, ok := f.entry(t, g.JobID)
		require.True(t, ok)
		assert.False(t, e.Clean)
		assert.True(t, f.hasPlan(t, g.JobID))
	})
}

// RequestJobResult answers once the job's global cleanup ended (the seed design's "marks it
// clean, archives the ExecutionGraph"), so a host that runs a job and then closes the cluster
// leaves nothing dirty: with the plan's removal failing twice the result comes at 3 s, the entry
// clean; RequestJobStatus answers FINISHED meanwhile.
func TestRequestJobResultAnswersOnceTheGlobalCleanupEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newCleanupFixture(t, dispatcher.Config{})
		g := graph("result after cleanup")
		jm := f.submit(t, g)
		f.h.failNext("ExecutionPlanStore.Remove", 2)
		type answer struct {
			res *jobgraph.JobResult
			at  time.Duration
		}
		answered := make(chan answer, 1)
		go func() {
			res, err := f.d.RequestJobResult(context.Background(), g.JobID)
			assert.NoError(t, err)
			answered <- answer{res, time.Since(f.h.start)}
		}()
		jm.end(jobgraph.JobStatusFinished)
		time.Sleep(3*time.Second - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, answered, "the removal is retried at 3 s")
		st, err := f.d.RequestJobStatus(context.Background(), g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, st)
		time.Sleep(time.Nanosecond)
		got := <-answered
		assert.Equal(t, 3*time.Second, got.at)
		assert.Equal(t, jobgraph.JobStatusFinished, got.res.Status)
		e, ok := f.entry(t, g.JobID)
		require.True(t, ok)
		assert.True(t, e.Clean)
		assert.False(t, f.hasPlan(t, g.JobID))
	})
}

// The cleanup of a dirty result recovered with no JobMaster (Config.RecoveredDirtyResults)
// reads the job's plan for its checkpoint settings: a FINISHED job's checkpoints are discarded, a
// CANCELED one's kept under RetainOnCancellation, and with the plan gone — an earlier cleanup
// removed it, which it does only after the checkpoint step — the checkpoints are left as that
// step left them.
func TestRecoveredDirtyResultIsCleanedUpAsItsPlanSays(t *testing.T) {
	for _, c := range []struct {
		name    string
		status  jobgraph.JobStatus
		retain  bool
		stored  bool
		discard bool
	}{
		{"finished", jobgraph.JobStatusFinished, false, true, true},
		{"canceled, retained", jobgraph.JobStatusCanceled, true, true, false},
		{"canceled, retained, plan gone", jobgraph.JobStatusCanceled, true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newRecordingHA()
				ctx := context.Background()
				g := checkpointingGraph("recovered", c.retain)
				if c.stored {
					require.NoError(t, h.Services.ExecutionPlanStore().Put(ctx, g))
				}
				require.NoError(t, h.Services.JobResultStore().CreateDirty(ctx, jobgraph.JobResult{JobID: g.JobID, Status: c.status}))
				f := &cleanupFixture{h: h}
				f.seedCheckpoints(t, g.JobID)
				d, err := dispatcher.New(dispatcher.Config{HA: h, Logger: slog.New(slog.DiscardHandler),
					JobManagerRunnerFactory: func(*jobgraph.JobGraph, ha.Services) (jobmaster.JobManagerRunner, error) {
						t.Error("no runner for a job with a dirty result")
						return nil, nil
					},
					RecoveredDirtyResults: []jobgraph.JobResult{{JobID: g.JobID, Status: c.status}}})
				require.NoError(t, err)
				synctest.Wait()
				want := []string{"0s ExecutionPlanStore.Get"}
				if c.discard {
					want = globalCleanup("0s")[:5]
					want[0] = "0s ExecutionPlanStore.Get"
				}
				want = append(want, "0s ExecutionPlanStore.Remove", "0s HA.CleanupJobData", "0s JobResultStore.MarkClean")
				assert.Equal(t, want, h.recorded())
				ids, _ := f.checkpoints(t, g.JobID)
				if c.discard {
					assert.Empty(t, ids)
					assert.Empty(t, f.factory().Jobs())
				} else {
					assert.Equal(t, []checkpoint.CheckpointID{1, 2}, ids)
				}
				e, ok := f.entry(t, g.JobID)
				require.True(t, ok)
				assert.True(t, e.Clean)
				require.NoError(t, d.Close())
				require.NoError(t, h.Services.Close())
			})
		})
	}
}
