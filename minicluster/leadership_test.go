package minicluster_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/ha/file"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// counting is a stateful task that counts, one a millisecond, until canceled; its state is the
// count, emitted downstream. Each attempt that starts reports "<subtask>#<attempt> <-
// <checkpoint>" (0: nothing restored) on restored; closing failNow fails subtask 0 once.
type counting struct {
	restored chan string
	failNow  chan struct{} // closed: the running attempt of subtask 0 fails, once
	failed   atomic.Bool
}

func newCounting() *counting {
	return &counting{restored: make(chan string, 64), failNow: make(chan struct{})}
}

var errInjected = errors.New("injected failure")

func (c *counting) registry() *taskexecutor.Registry {
	reg := registry()
	reg.Register("count", func(ctx context.Context, env taskexecutor.Environment) error {
		info := env.Info()
		var n int64
		var from checkpoint.CheckpointID
		if id, st, ok := env.RestoredState(); ok && !st.IsEmpty() {
			from = id
			n, _ = strconv.ParseInt(string(st.Data), 10, 64)
		}
		env.SetCheckpointHandler(counter{&n})
		c.restored <- fmt.Sprintf("%d#%d <- %d", info.SubtaskIndex, info.AttemptNumber, from)
		fail := c.failNow
		for {
			select {
			case <-ctx.Done(): // canceled at once, so its slot is freed at once
				return ctx.Err()
			case <-fail:
				if info.SubtaskIndex == 0 && c.failed.CompareAndSwap(false, true) {
					return errInjected
				}
				fail = nil
				continue
			case <-time.After(time.Millisecond):
			}
			// A source takes its snapshots inside Emit.
			if err := env.Output(0).Emit(ctx, 0, n); err != nil {
				return err
			}
			n++
		}
	})
	reg.Register("discard", func(ctx context.Context, env taskexecutor.Environment) error {
		for {
			if _, err := env.Input(0).Next(ctx); err != nil {
				return err
			}
		}
	})
	return reg
}

// drainStrings returns what ch holds now.
func drainStrings(ch chan string) []string {
	var out []string
	for {
		select {
		case s := <-ch:
			out = append(out, s)
		default:
			return out
		}
	}
}

// countingJob is count(p) –POINTWISE→ discard(p), in p slots (one slot sharing group),
// checkpointed only when asked (TriggerCheckpoint): the interval is an hour.
func countingJob(p int) *jobgraph.JobGraph {
	g := jobgraph.New("counting", jobgraph.Streaming)
	src := g.AddVertex("count", "count", p)
	sink := g.AddVertex("discard", "discard", p)
	g.Connect(src, sink, jobgraph.Pointwise, jobgraph.PipelinedBounded)
	g.Checkpointing = jobgraph.CheckpointingSettings{Interval: time.Hour}
	return g
}

// checkpoints triggers n checkpoints of the job and returns their IDs.
func checkpoints(t *testing.T, mc *minicluster.MiniCluster, job jobgraph.JobID, n int) []checkpoint.CheckpointID {
	t.Helper()
	var ids []checkpoint.CheckpointID
	for range n {
		time.Sleep(10 * time.Millisecond) // the count moves on between checkpoints
		id, err := mc.TriggerCheckpoint(context.Background(), job)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

// Scenario: checkpoints 1–5 completed, then the leading cluster's process exits (Close): the
// plan, the checkpoints and the counter are kept (no JobResultStore entry), and the standby
// cluster over the same HA services — which started without leading, and whose job methods
// waited — takes over and restores checkpoint 5; its next checkpoint is 6. HA data is removed only
// once the job is globally terminal (canceled under the new leader).
//
// It runs on ha/embedded (both clusters on one client) and on ha/file (each cluster on its own
// client over one directory, as two JobManager processes would be).
func TestStandbyClusterTakesOverAndRestoresTheLatestCheckpoint(t *testing.T) {
	t.Run("ha=embedded", func(t *testing.T) {
		standbyTakesOver(t, func(t *testing.T) (first, second ha.Services) {
			services := embedded.New()
			t.Cleanup(func() { services.Close() })
			return services, services
		})
	})
	t.Run("ha=file", func(t *testing.T) {
		standbyTakesOver(t, func(t *testing.T) (first, second ha.Services) {
			dir := t.TempDir()
			open := func() ha.Services {
				s, err := file.New(file.Options{Dir: dir})
				require.NoError(t, err)
				t.Cleanup(func() { s.Close() })
				return s
			}
			return open(), open()
		})
	})
}

func standbyTakesOver(t *testing.T, backend func(t *testing.T) (first, second ha.Services)) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		first, second := backend(t)
		services := second // the standby's client: what it reads, it reads as the next leader
		tasks := newCounting()
		mc1 := start(t, minicluster.Config{HA: first, Registry: tasks.registry()})
		synctest.Wait()
		mc2 := start(t, minicluster.Config{HA: second, Registry: tasks.registry()})
		g := countingJob(1)
		require.NoError(t, mc1.SubmitJob(ctx, g))
		synctest.Wait()
		assert.Equal(t, []string{"0#0 <- 0"}, drainStrings(tasks.restored))

		_, err := mc2.Dispatcher().RequestJobStatus(ctx, g.JobID)
		require.ErrorIs(t, err, dispatcher.ErrNotLeader, "the standby's Dispatcher does not lead")
		waiting, cancel := context.WithTimeout(ctx, time.Second)
		_, err = mc2.RequestJobStatus(waiting, g.JobID)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "the standby cluster's job methods wait for leadership")

		assert.Equal(t, []checkpoint.CheckpointID{1, 2, 3, 4, 5}, checkpoints(t, mc1, g.JobID, 5))
		require.NoError(t, mc1.Close())
		if first != second {
			require.NoError(t, first.Close()) // the process exits: its client goes too
		}
		// ha/file's standby takes the lock at its next poll (file.DefaultPollInterval), and its
		// TaskExecutors register with the new ResourceManager leader once retrieval reports it:
		// a virtual second covers both.
		time.Sleep(time.Second)
		synctest.Wait()
		_, err = services.JobResultStore().Get(ctx, g.JobID)
		require.ErrorIs(t, err, ha.ErrNotFound, "a suspended job has no JobResultStore entry")
		assert.Equal(t, []string{"0#0 <- 5"}, drainStrings(tasks.restored), "the standby's JobMaster restored checkpoint 5")
		assert.Equal(t, jobgraph.JobStatusRunning, jobStatus(t, mc2, g.JobID))
		assert.Equal(t, []checkpoint.CheckpointID{6}, checkpoints(t, mc2, g.JobID, 1), "the counter went on")

		require.NoError(t, mc2.CancelJob(ctx, g.JobID))
		res, err := mc2.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		_, err = services.ExecutionPlanStore().Get(ctx, g.JobID)
		require.ErrorIs(t, err, ha.ErrNotFound, "globally terminal: the plan is removed")
		entry, err := services.JobResultStore().Get(ctx, g.JobID)
		require.NoError(t, err)
		assert.True(t, entry.Clean)
	})
}

// Scenario: v(2) RUNNING on one TaskExecutor with 2 slots, checkpoint 1 completed, the
// Dispatcher's leadership revoked and granted again (L2): L2's JobMaster gets the 2 slots the
// old one released, restores checkpoint 1 in both subtasks and runs, at the same instant — it
// does not wait for slots. A RequestJobResult pending across the change returns the job's final
// result (CANCELED under L2), not L1's SUSPENDED.
func TestRevokedClusterLeaderResumesTheJobOnTheSameSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		tasks := newCounting()
		mc := start(t, minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 2, Registry: tasks.registry()})
		g := countingJob(2)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		assert.ElementsMatch(t, []string{"0#0 <- 0", "1#0 <- 0"}, drainStrings(tasks.restored))
		assert.Equal(t, []checkpoint.CheckpointID{1}, checkpoints(t, mc, g.JobID, 1))
		type answer struct {
			res *jobgraph.JobResult
			err error
		}
		pending := make(chan answer, 1)
		go func() {
			res, err := mc.RequestJobResult(ctx, g.JobID)
			pending <- answer{res, err}
		}()

		revoked := time.Now()
		mc.HA().(*embedded.Services).DispatcherElection().Revoke()
		synctest.Wait()
		assert.ElementsMatch(t, []string{"0#0 <- 1", "1#0 <- 1"}, drainStrings(tasks.restored), "L2's JobMaster restored checkpoint 1 in both subtasks")
		assert.Equal(t, time.Duration(0), time.Since(revoked), "no wait for slots")
		assert.Equal(t, jobgraph.JobStatusRunning, jobStatus(t, mc, g.JobID))
		pool, err := mc.SlotPoolStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, 2, pool.Allocated)
		assert.Empty(t, pending, "the result is not the SUSPENDED of L1")

		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		a := <-pending
		require.NoError(t, a.err)
		assert.Equal(t, jobgraph.JobStatusCanceled, a.res.Status)
	})
}

// Scenario: checkpoint 3 completed, a task fails, and the Dispatcher's leadership is revoked
// during the restart backoff (fixed-delay, 10 s): the job ends SUSPENDED under L1 with no
// JobResultStore entry, its plan and checkpoints kept; L2 restores checkpoint 3.
func TestLeadershipLostDuringRestartBackoffSuspendsAndTheNextLeaderRestores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		statuses := &statusLog{begin: begin}
		tasks := newCounting()
		mc := start(t, minicluster.Config{Registry: tasks.registry(), JobStatusListener: statuses.listen})
		g := countingJob(1)
		g.RestartStrategy = jobgraph.FixedDelayRestart(3, 10*time.Second)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		assert.Equal(t, []string{"0#0 <- 0"}, drainStrings(tasks.restored))
		assert.Equal(t, []checkpoint.CheckpointID{1, 2, 3}, checkpoints(t, mc, g.JobID, 3))

		close(tasks.failNow)
		synctest.Wait()
		failed := time.Now()
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID))
		time.Sleep(time.Second) // within the backoff
		mc.HA().(*embedded.Services).DispatcherElection().Revoke()
		synctest.Wait()
		_, err := mc.HA().JobResultStore().Get(ctx, g.JobID)
		require.ErrorIs(t, err, ha.ErrNotFound, "SUSPENDED: no JobResultStore entry")
		_, err = mc.HA().ExecutionPlanStore().Get(ctx, g.JobID)
		require.NoError(t, err, "the plan is kept")
		assert.Equal(t, []string{"0#0 <- 3"}, drainStrings(tasks.restored), "L2 restored checkpoint 3 at once, not after L1's backoff")
		assert.Equal(t, time.Second, time.Since(failed))
		assert.Equal(t, jobgraph.JobStatusRunning, jobStatus(t, mc, g.JobID))
		f, r := failed.Sub(begin), failed.Add(time.Second).Sub(begin)
		assert.Equal(t, []string{"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s", "RESTARTING at " + f.String(),
			"SUSPENDED at " + r.String(),                                                             // L1's JobMaster, closed during its backoff
			"INITIALIZING at " + r.String(), "CREATED at " + r.String(), "RUNNING at " + r.String()}, // L2's
			statuses.get())

		at(failed, 20*time.Second) // L1's backoff would have ended by now: nothing restarts
		assert.Empty(t, drainStrings(tasks.restored))
		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	})
}
