package minicluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// scenarioHandler is a task's state (one number) that declines checkpoint declineID (0: none)
// and reports the checkpoints it hears completed.
type scenarioHandler struct {
	v         *int64
	declineID checkpoint.CheckpointID
	completed chan<- checkpoint.CheckpointID // nil: not reported
}

func (h scenarioHandler) SnapshotState(_ context.Context, id checkpoint.CheckpointID) (checkpoint.StateHandle, error) {
	if id == h.declineID {
		return checkpoint.StateHandle{}, fmt.Errorf("subtask refuses checkpoint %d", id)
	}
	return checkpoint.StateHandle{Data: strconv.AppendInt(nil, *h.v, 10), Size: 8}, nil
}

func (h scenarioHandler) NotifyCheckpointComplete(_ context.Context, id checkpoint.CheckpointID) error {
	if h.completed != nil {
		h.completed <- id
	}
	return nil
}

func (scenarioHandler) NotifyCheckpointAborted(context.Context, checkpoint.CheckpointID) {}

// stopped reports whether a task's read or write error ends it: nil for stop-with-savepoint.
func stopped(err error) error {
	if errors.Is(err, taskexecutor.ErrStopped) {
		return nil
	}
	return err
}

// The scenario on a whole MiniCluster: src(2) → map(2) → sink(1), checkpoints every
// 100 ms; once checkpoint 8 completed, stop-with-savepoint takes savepoint 9, which map's second
// subtask declines. The stop fails with the decline, savepoint 9's directory is gone, the job
// fails over, every task restarts from checkpoint 8, periodic checkpoints go on with 10, and the
// job is RUNNING. Virtual time.
func TestStopWithSavepointDeclinedByATaskKeepsTheJobRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		completed := make(chan checkpoint.CheckpointID, 64)
		restored := make(chan string, 16)
		restore := func(env taskexecutor.Environment, v *int64) {
			if id, st, ok := env.RestoredState(); ok {
				*v, _ = strconv.ParseInt(string(st.Data), 10, 64)
				restored <- fmt.Sprintf("%s <- %d", env.Info().TaskName, id)
			}
		}
		reg := taskexecutor.NewRegistry()
		reg.Register("src", func(ctx context.Context, env taskexecutor.Environment) error {
			var n int64
			restore(env, &n)
			env.SetCheckpointHandler(scenarioHandler{v: &n})
			for {
				time.Sleep(time.Millisecond) // a record a millisecond, in virtual time
				if err := env.Output(0).Emit(ctx, 0, n+1); err != nil {
					return stopped(err)
				}
				n++
			}
		})
		reg.Register("map", func(ctx context.Context, env taskexecutor.Environment) error {
			var seen int64
			restore(env, &seen)
			h := scenarioHandler{v: &seen}
			if env.Info().SubtaskIndex == 1 {
				h.declineID = 9
			}
			env.SetCheckpointHandler(h)
			for {
				r, err := env.Input(0).Next(ctx)
				if err != nil {
					return stopped(err)
				}
				seen++
				if err := env.Output(0).Emit(ctx, 0, r); err != nil {
					return stopped(err)
				}
			}
		})
		reg.Register("sink", func(ctx context.Context, env taskexecutor.Environment) error {
			var sum int64
			restore(env, &sum)
			env.SetCheckpointHandler(scenarioHandler{v: &sum, completed: completed})
			for {
				r, err := env.Input(0).Next(ctx)
				if err != nil {
					return stopped(err)
				}
				sum += r.(int64)
			}
		})
		spDir := t.TempDir()
		mc := start(t, minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 2, Registry: reg})
		ctx := context.Background()
		g := jobgraph.New("src-map-sink", jobgraph.Streaming)
		src := g.AddVertex("src", "src", 2)
		mp := g.AddVertex("map", "map", 2)
		sink := g.AddVertex("sink", "sink", 1)
		g.Connect(src, mp, jobgraph.Pointwise, jobgraph.PipelinedBounded)
		g.Connect(mp, sink, jobgraph.AllToAll, jobgraph.PipelinedBounded)
		g.Checkpointing = jobgraph.CheckpointingSettings{Interval: 100 * time.Millisecond}
		g.RestartStrategy = jobgraph.FixedDelayRestart(10, time.Second)
		require.NoError(t, mc.SubmitJob(ctx, g))
		for id := range completed {
			if id == 8 {
				break
			}
		}

		_, err := mc.StopWithSavepoint(ctx, g.JobID, spDir)
		require.Error(t, err)
		assert.ErrorIs(t, err, checkpoint.CheckpointDeclined)
		assert.ErrorContains(t, err, "stop-with-savepoint: checkpoint 9: Checkpoint was declined.")
		entries, rerr := os.ReadDir(spDir)
		require.NoError(t, rerr)
		assert.Empty(t, entries, "savepoint 9 is discarded with its directory")

		var got []string
		for range 5 {
			got = append(got, <-restored)
		}
		assert.ElementsMatch(t, []string{"src (1/2) <- 8", "src (2/2) <- 8", "map (1/2) <- 8", "map (2/2) <- 8", "sink (1/1) <- 8"}, got,
			"every task restarts from checkpoint 8")
		for id := range completed {
			if id > 8 {
				assert.Equal(t, checkpoint.CheckpointID(10), id, "periodic checkpoints go on with 10")
				break
			}
		}
		status, err := mc.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, status)

		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	})
}

// Savepoint requests for a job the cluster does not know, and for a batch job, which has no
// CheckpointCoordinator (Flink: "Job … is not a streaming job.").
func TestSavepointRequestsForUnknownAndBatchJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := taskexecutor.NewRegistry()
		reg.Register("block", func(ctx context.Context, _ taskexecutor.Environment) error {
			<-ctx.Done()
			return ctx.Err()
		})
		mc := start(t, minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 1, Registry: reg})
		ctx := context.Background()
		unknown := jobgraph.NewJobID()
		_, err := mc.TriggerSavepoint(ctx, unknown, t.TempDir())
		assert.ErrorIs(t, err, dispatcher.ErrJobNotFound)
		_, err = mc.StopWithSavepoint(ctx, unknown, t.TempDir())
		assert.ErrorIs(t, err, dispatcher.ErrJobNotFound)
		_, err = mc.TriggerCheckpoint(ctx, unknown)
		assert.ErrorIs(t, err, dispatcher.ErrJobNotFound)

		g := jobgraph.New("batch", jobgraph.Batch)
		g.AddVertex("v", "block", 1)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		_, err = mc.TriggerSavepoint(ctx, g.JobID, t.TempDir())
		assert.ErrorIs(t, err, scheduler.ErrNoCheckpointCoordinator)
		assert.EqualError(t, err, "jobmaster: job "+g.JobID.String()+": savepoint: job has no CheckpointCoordinator (not a streaming job)")
		_, err = mc.TriggerCheckpoint(ctx, g.JobID)
		assert.ErrorIs(t, err, scheduler.ErrNoCheckpointCoordinator)

		s := jobgraph.New("streaming", jobgraph.Streaming)
		s.AddVertex("v", "block", 1)
		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		_, err = mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		require.NoError(t, mc.SubmitJob(ctx, s))
		synctest.Wait()
		_, err = mc.StopWithSavepoint(ctx, s.JobID, "")
		assert.ErrorIs(t, err, scheduler.ErrNoSavepointDirectory, "no target and no execution.checkpointing.savepoint-dir")
		require.NoError(t, mc.CancelJob(ctx, s.JobID))
		_, err = mc.RequestJobResult(ctx, s.JobID)
		require.NoError(t, err)
	})
}

// A job stopped with a savepoint continues from it: a copy of the graph under a new JobID with
// execution.savepoint.path set starts every task from the savepoint's state, read through
// checkpoint.LoadSavepoint, and its own checkpoints count on from the savepoint's ID.
func TestStopWithSavepointThenRestoreFromIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		restored := make(chan string, 4)
		completed := make(chan checkpoint.CheckpointID, 64)
		reg := taskexecutor.NewRegistry()
		reg.Register("numbers", func(ctx context.Context, env taskexecutor.Environment) error {
			var n int64
			if id, st, ok := env.RestoredState(); ok {
				n, _ = strconv.ParseInt(string(st.Data), 10, 64)
				restored <- fmt.Sprintf("numbers <- %d: %d", id, n)
			}
			env.SetCheckpointHandler(scenarioHandler{v: &n})
			for {
				time.Sleep(time.Millisecond)
				if err := env.Output(0).Emit(ctx, 0, n+1); err != nil {
					return stopped(err)
				}
				n++
			}
		})
		reg.Register("sum", func(ctx context.Context, env taskexecutor.Environment) error {
			var sum int64
			if id, st, ok := env.RestoredState(); ok {
				sum, _ = strconv.ParseInt(string(st.Data), 10, 64)
				restored <- fmt.Sprintf("sum <- %d: %d", id, sum)
			}
			env.SetCheckpointHandler(scenarioHandler{v: &sum, completed: completed})
			for {
				r, err := env.Input(0).Next(ctx)
				if err != nil {
					return stopped(err)
				}
				sum += r.(int64)
			}
		})
		mc := start(t, minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 1, Registry: reg, SavepointDirectory: t.TempDir()})
		ctx := context.Background()
		g := jobgraph.New("numbers", jobgraph.Streaming)
		numbers := g.AddVertex("numbers", "numbers", 1)
		sum := g.AddVertex("sum", "sum", 1)
		g.Connect(numbers, sum, jobgraph.Pointwise, jobgraph.PipelinedBounded)
		g.Checkpointing = jobgraph.CheckpointingSettings{Interval: 100 * time.Millisecond}
		again, err := g.Clone()
		require.NoError(t, err)
		require.NoError(t, mc.SubmitJob(ctx, g))
		for id := range completed {
			if id == 3 {
				break
			}
		}
		path, err := mc.StopWithSavepoint(ctx, g.JobID, "")
		require.NoError(t, err)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusFinished, res.Status)
		sp, err := checkpoint.LoadSavepoint(path)
		require.NoError(t, err)
		require.Equal(t, checkpoint.CheckpointID(4), sp.CheckpointID)
		n, _ := strconv.ParseInt(string(sp.TaskStates[0].State.Data), 10, 64)
		total, _ := strconv.ParseInt(string(sp.TaskStates[1].State.Data), 10, 64)
		require.Equal(t, n*(n+1)/2, total, "the savepoint is consistent")
		assert.Equal(t, checkpoint.CheckpointID(4), <-completed, "the sink heard the savepoint complete before it stopped")

		again.JobID = jobgraph.NewJobID()
		again.SavepointRestore.Path = path
		require.NoError(t, mc.SubmitJob(ctx, again))
		got := []string{<-restored, <-restored}
		assert.ElementsMatch(t, []string{fmt.Sprintf("numbers <- 4: %d", n), fmt.Sprintf("sum <- 4: %d", total)}, got)
		assert.Equal(t, checkpoint.CheckpointID(5), <-completed, "the restored job's checkpoints count on from the savepoint")
		require.NoError(t, mc.CancelJob(ctx, again.JobID))
		_, err = mc.RequestJobResult(ctx, again.JobID)
		require.NoError(t, err)
	})
}

// As in Flink, a streaming job without periodic checkpoints (interval 0) takes savepoints: its
// tasks snapshot their state for the savepoint and stop with it; no checkpoint is taken before,
// and the sources do not wait for a final checkpoint.
func TestStopWithSavepointWithoutPeriodicCheckpoints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		received := make(chan struct{})
		reg := taskexecutor.NewRegistry()
		reg.Register("numbers", func(ctx context.Context, env taskexecutor.Environment) error {
			var n int64
			env.SetCheckpointHandler(scenarioHandler{v: &n})
			for {
				time.Sleep(time.Millisecond)
				if err := env.Output(0).Emit(ctx, 0, n+1); err != nil {
					return stopped(err)
				}
				n++
			}
		})
		reg.Register("sum", func(ctx context.Context, env taskexecutor.Environment) error {
			var sum, records int64
			env.SetCheckpointHandler(scenarioHandler{v: &sum})
			for {
				r, err := env.Input(0).Next(ctx)
				if err != nil {
					return stopped(err)
				}
				sum += r.(int64)
				if records++; records == 1000 {
					close(received)
				}
			}
		})
		mc := start(t, minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 1, Registry: reg})
		ctx := context.Background()
		g := jobgraph.New("numbers", jobgraph.Streaming)
		numbers := g.AddVertex("numbers", "numbers", 1)
		sum := g.AddVertex("sum", "sum", 1)
		g.Connect(numbers, sum, jobgraph.Pointwise, jobgraph.PipelinedBounded)
		require.NoError(t, mc.SubmitJob(ctx, g))
		<-received // a thousand records through
		path, err := mc.StopWithSavepoint(ctx, g.JobID, t.TempDir())
		require.NoError(t, err)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		sp, err := checkpoint.LoadSavepoint(path)
		require.NoError(t, err)
		assert.Equal(t, checkpoint.CheckpointID(1), sp.CheckpointID, "no checkpoint before it")
		require.Len(t, sp.TaskStates, 2)
		n, _ := strconv.ParseInt(string(sp.TaskStates[0].State.Data), 10, 64)
		total, _ := strconv.ParseInt(string(sp.TaskStates[1].State.Data), 10, 64)
		assert.GreaterOrEqual(t, n, int64(1000), "the source's state is in the savepoint")
		assert.Equal(t, n*(n+1)/2, total)
	})
}
