package minicluster_test

// A MiniCluster a host can shape and a test can drive (issue 8, items 4, 6 and 7): the config is
// checked at construction, Run refuses a nil graph and a cluster not started, Run cancels the job
// it owns when its context ends, the host brings its own RPC and HA services, TaskExecutors come
// and go at run time, and a job's slot pool can be observed.

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

func TestNewRefusesBadConfigNamingTheOptionKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  minicluster.Config
		want string
	}{
		{"no registry", minicluster.Config{}, "minicluster: invalid configuration: Config.Registry is required (the task code TaskExecutors run)"},
		{"strategy", minicluster.Config{SchedulingStrategy: "bogus"}, `minicluster: invalid configuration: SchedulingStrategy (jobmanager.scheduler.scheduling-strategy) "bogus": unknown scheduling strategy; want "region" or "vertexwise"`},
		{"slot request timeout", minicluster.Config{SlotRequestTimeout: -time.Second}, "minicluster: invalid configuration: SlotRequestTimeout (slot.request.timeout) is -1s, negative"},
		{"idle slot timeout", minicluster.Config{IdleSlotTimeout: -time.Millisecond}, "minicluster: invalid configuration: IdleSlotTimeout (slot.idle.timeout) is -1ms, negative"},
		{"task executors", minicluster.Config{TaskExecutors: -1}, "minicluster: invalid configuration: TaskExecutors (minicluster.number-of-taskmanagers) is -1, negative"},
		{"slots", minicluster.Config{SlotsPerTaskExecutor: -2}, "minicluster: invalid configuration: SlotsPerTaskExecutor (taskmanager.numberOfTaskSlots) is -2, negative"},
		{"exception history", minicluster.Config{ExceptionHistorySize: -1}, "minicluster: invalid configuration: ExceptionHistorySize (web.exception-history-size) is -1, negative"},
		{"job store capacity", minicluster.Config{JobStoreMaxCapacity: -1}, "minicluster: invalid configuration: JobStoreMaxCapacity (jobstore.max-capacity) is -1, negative"},
		{"run cancel timeout", minicluster.Config{RunCancelTimeout: -time.Second}, "minicluster: invalid configuration: RunCancelTimeout is -1s, negative"},
		{"task cancellation interval", minicluster.Config{TaskCancellationInterval: -time.Second}, "minicluster: invalid configuration: TaskCancellationInterval (task.cancellation.interval) is -1s, negative"},
		{"task cancellation timeout", minicluster.Config{TaskCancellationTimeout: -time.Second}, "minicluster: invalid configuration: TaskCancellationTimeout (task.cancellation.timeout) is -1s, negative; taskexecutor.NoTaskCancellationTimeout disables the watchdog"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name != "no registry" {
				tc.cfg.Registry = registry()
			}
			mc, err := minicluster.New(tc.cfg)
			assert.Nil(t, mc)
			require.ErrorIs(t, err, minicluster.ErrInvalidConfig)
			assert.EqualError(t, err, tc.want)
			if tc.name == "strategy" {
				assert.ErrorIs(t, err, scheduler.ErrUnknownStrategy)
			}
			// Start refuses it the same way, and nothing is left running.
			mc, err = minicluster.Start(context.Background(), tc.cfg)
			assert.Nil(t, mc)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestRunRefusesANilGraphAndAClusterNotStartedOrClosed(t *testing.T) {
	ctx := context.Background()
	mc, err := minicluster.New(minicluster.Config{Registry: registry()})
	require.NoError(t, err)
	g := jobgraph.New("noop", jobgraph.Batch)
	g.AddVertex("v", "noop", 1)

	res, err := mc.Run(ctx, g)
	assert.Nil(t, res)
	assert.ErrorIs(t, err, minicluster.ErrNotStarted)
	assert.ErrorIs(t, mc.SubmitJob(ctx, g), minicluster.ErrNotStarted)
	_, err = mc.AddTaskExecutor(ctx)
	assert.ErrorIs(t, err, minicluster.ErrNotStarted)

	require.NoError(t, mc.Start(ctx))
	res, err = mc.Run(ctx, nil)
	assert.Nil(t, res)
	assert.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph, "the Dispatcher's error for a nil graph")
	assert.EqualError(t, err, "dispatcher: SubmitJob: invalid job graph: the job graph is nil")
	// The refused submissions left nothing behind: the job runs now as if first submitted.
	res, err = mc.Run(ctx, g)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFinished, res.Status)

	require.NoError(t, mc.Close())
	require.NoError(t, mc.Close(), "closing twice")
	_, err = mc.Run(ctx, jobgraph.New("late", jobgraph.Batch))
	assert.ErrorIs(t, err, minicluster.ErrClosed)
	assert.ErrorIs(t, mc.SubmitJob(ctx, nil), minicluster.ErrClosed, "closed comes first, even for a nil graph")
	assert.ErrorIs(t, mc.Start(ctx), minicluster.ErrClosed)
	_, err = mc.AddTaskExecutor(ctx)
	assert.ErrorIs(t, err, minicluster.ErrClosed)
	assert.ErrorIs(t, mc.KillTaskExecutor("taskexecutor-0"), minicluster.ErrClosed)
}

// A host's submit-and-wait: build and start in one call, run, look at the result.
func TestStartBuildsAndStartsTheCluster(t *testing.T) {
	ctx := context.Background()
	g := jobgraph.New("noop", jobgraph.Batch)
	g.AddVertex("v", "noop", 2)

	mc, err := minicluster.Start(ctx, minicluster.Config{TaskExecutors: 2, Registry: registry()})
	require.NoError(t, err)
	defer mc.Close()
	res, err := mc.Run(ctx, g)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
	assert.Len(t, mc.TaskExecutors(), 2)
	assert.Equal(t, 2, mc.ResourceManager().NumRegisteredTaskExecutors())
}

func TestConfigTakesTheHostsRPCAndHAServices(t *testing.T) {
	ctx := context.Background()
	svc := rpc.NewLocalService()
	services := embedded.New()
	defer services.Close()
	mc := start(t, minicluster.Config{RPC: svc, HA: services})
	assert.Same(t, svc, mc.RPC())
	assert.Equal(t, ha.Services(services), mc.HA())

	// The ResourceManager is on the host's service, at the exported address.
	rm, err := rpc.Connect[rpc.ResourceManagerGateway](ctx, svc, minicluster.ResourceManagerAddress)
	require.NoError(t, err)
	assert.Same(t, mc.ResourceManager(), rm)

	g := jobgraph.New("noop", jobgraph.Batch)
	g.AddVertex("v", "noop", 1)
	res, err := mc.Run(ctx, g)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
	// The result went to the host's JobResultStore.
	entry, err := services.JobResultStore().Get(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFinished, entry.Result.Status)

	// Closing the cluster leaves the host's HA services open.
	require.NoError(t, mc.Close())
	entry, err = services.JobResultStore().Get(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFinished, entry.Result.Status)
}

func TestTaskExecutorsComeAndGoAtRunTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		started := make(chan jobgraph.ExecutionAttemptID, 4)
		mc := start(t, minicluster.Config{
			Registry:          blockingRegistry(started),
			HeartbeatInterval: time.Second,
			HeartbeatTimeout:  5 * time.Second,
		})
		rm := mc.ResourceManager()
		synctest.Wait()
		before := goleak.IgnoreCurrent()

		// Add: a second TaskExecutor registers with the ResourceManager.
		added, err := mc.AddTaskExecutor(ctx)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.ResourceID("taskexecutor-1"), added.ResourceID())
		assert.Equal(t, 2, rm.NumRegisteredTaskExecutors())
		assert.Equal(t, 2, rm.NumRegisteredSlots())

		// Kill: gone from the cluster at once, and its goroutines with it; the ResourceManager
		// notices only when its heartbeats stop, 5 s after the last one it answered.
		require.NoError(t, mc.KillTaskExecutor(added.ResourceID()))
		assert.Len(t, mc.TaskExecutors(), 1)
		synctest.Wait()
		assert.NoError(t, goleak.Find(before), "the killed TaskExecutor's goroutines are gone")
		assert.Equal(t, 2, rm.NumRegisteredTaskExecutors(), "still registered until its heartbeat times out")
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, 1, rm.NumRegisteredTaskExecutors())
		assert.ErrorIs(t, mc.KillTaskExecutor(added.ResourceID()), minicluster.ErrTaskExecutorNotFound)

		// Remove with a task running on it: the ResourceManager and the JobMaster hear at once,
		// and the job (no restarts) fails with the removal as its root cause.
		removed, err := mc.AddTaskExecutor(ctx)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.ResourceID("taskexecutor-2"), removed.ResourceID())
		g := jobgraph.New("blocking", jobgraph.Streaming)
		g.AddVertex("v", "block", 2)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		require.Len(t, started, 2)
		begin := time.Now()
		require.NoError(t, mc.RemoveTaskExecutor(ctx, removed.ResourceID()))
		assert.Equal(t, 1, rm.NumRegisteredTaskExecutors())
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, time.Duration(0), time.Since(begin), "no heartbeat timeout waited for")
		assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
		assert.ErrorIs(t, res.RootCause, minicluster.ErrTaskExecutorRemoved)
		assert.ErrorContains(t, res.RootCause, "taskexecutor-2: TaskExecutor removed from the MiniCluster")
		assert.ErrorIs(t, mc.RemoveTaskExecutor(ctx, removed.ResourceID()), minicluster.ErrTaskExecutorNotFound)
		ids := []jobgraph.ResourceID{}
		for _, te := range mc.TaskExecutors() {
			ids = append(ids, te.ResourceID())
		}
		assert.Equal(t, []jobgraph.ResourceID{"taskexecutor-0"}, ids)
	})
}

func TestSlotPoolOfARunningJobCanBeObserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		started := make(chan jobgraph.ExecutionAttemptID, 2)
		mc := start(t, minicluster.Config{Registry: blockingRegistry(started)})
		g := jobgraph.New("blocking", jobgraph.Streaming)
		g.AddVertex("v", "block", 2) // two regions; one slot in the cluster
		_, err := mc.SlotPoolStatus(ctx, g.JobID)
		assert.ErrorIs(t, err, minicluster.ErrJobNotRunning)

		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		st, err := mc.SlotPoolStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobmaster.SlotPoolStatus{Allocated: 1, Free: 0, Pending: 1}, st)

		_, err = mc.AddTaskExecutor(ctx)
		require.NoError(t, err)
		synctest.Wait()
		st, err = mc.SlotPoolStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobmaster.SlotPoolStatus{Allocated: 2, Free: 0, Pending: 0}, st)

		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		synctest.Wait()
		_, err = mc.SlotPoolStatus(ctx, g.JobID)
		assert.ErrorIs(t, err, minicluster.ErrJobNotRunning)
	})
}

func TestRunCancelsItsJobWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan jobgraph.ExecutionAttemptID, 1)
		mc := start(t, minicluster.Config{Registry: blockingRegistry(started)})
		g := jobgraph.New("blocking", jobgraph.Streaming)
		g.AddVertex("v", "block", 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		begin := time.Now()
		res, err := mc.Run(ctx, g)
		assert.Equal(t, time.Second, time.Since(begin))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.EqualError(t, err, "context deadline exceeded\nminicluster: job "+g.JobID.String()+" ended CANCELED after Run's context ended")
		require.NotNil(t, res)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		st, err := mc.RequestJobStatus(context.Background(), g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, st)
	})
}

func TestRunGivesUpOnAJobThatDoesNotStopWithinTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		reg := registry()
		reg.Register("stubborn", func(ctx context.Context, _ taskexecutor.Environment) error {
			<-release // ignores ctx
			return nil
		})
		mc := start(t, minicluster.Config{Registry: reg, RunCancelTimeout: 5 * time.Second})
		g := jobgraph.New("stubborn", jobgraph.Streaming)
		g.AddVertex("v", "stubborn", 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		begin := time.Now()
		res, err := mc.Run(ctx, g)
		assert.Equal(t, 6*time.Second, time.Since(begin), "1 s until ctx ends, then the 5 s bound")
		assert.Nil(t, res)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, "minicluster: job "+g.JobID.String()+" not terminal 5s after canceling it")
		st, err := mc.RequestJobStatus(context.Background(), g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCancelling, st)
		close(release)
		res, err = mc.RequestJobResult(context.Background(), g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		assert.False(t, errors.Is(err, context.DeadlineExceeded))
	})
}

// A TaskExecutor killed through its own Kill, or closed through its own Close, is gone from
// TaskExecutors at once, as one KillTaskExecutor took away is; the others stay, in start order. The cluster still releases it
// on Close (the goroutine check of TestMain would see one it kept).
func TestTaskExecutorsListsNoKilledOrClosedTaskExecutor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := start(t, minicluster.Config{TaskExecutors: 4})
		ids := func() []jobgraph.ResourceID {
			ids := []jobgraph.ResourceID{}
			for _, te := range mc.TaskExecutors() {
				ids = append(ids, te.ResourceID())
			}
			return ids
		}
		require.Equal(t, []jobgraph.ResourceID{"taskexecutor-0", "taskexecutor-1", "taskexecutor-2", "taskexecutor-3"}, ids())

		mc.TaskExecutors()[1].Kill()
		assert.Equal(t, []jobgraph.ResourceID{"taskexecutor-0", "taskexecutor-2", "taskexecutor-3"}, ids(), "killed through its own Kill")
		require.NoError(t, mc.KillTaskExecutor("taskexecutor-3"))
		assert.Equal(t, []jobgraph.ResourceID{"taskexecutor-0", "taskexecutor-2"}, ids(), "killed through the cluster")
		synctest.Wait()
		assert.Equal(t, []jobgraph.ResourceID{"taskexecutor-0", "taskexecutor-2"}, ids(), "and it does not come back")
		require.NoError(t, mc.TaskExecutors()[0].Close())
		assert.Equal(t, []jobgraph.ResourceID{"taskexecutor-2"}, ids(), "closed through its own Close")
	})
}
