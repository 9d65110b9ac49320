package taskexecutor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/logtest"
	"github.com/jobgraph/jobgraph/rpc"
)

// recordedLogs are the records logged at WARN or above, with instants relative to start.
type recordedLogs struct {
	start   time.Time
	records func() []logtest.TimedRecord
}

func newRecordedLogs(start time.Time) (*slog.Logger, recordedLogs) {
	logger, records := logtest.NewTimedRecorder(slog.LevelWarn)
	return logger, recordedLogs{start: start, records: records}
}

// at returns the instants of the records of level l.
func (l recordedLogs) at(lv slog.Level) []time.Duration {
	return logtest.Since(l.of(lv), l.start)
}

// of returns the records of level l.
func (l recordedLogs) of(lv slog.Level) []logtest.TimedRecord {
	return logtest.AtLevel(l.records(), lv)
}

// disconnect is one DisconnectTaskExecutor call a fake received, with its virtual time.
type disconnect struct {
	At           time.Duration
	Token        jobgraph.JobMasterID // zero for the ResourceManager
	TaskExecutor jobgraph.ResourceID
	Cause        error
}

type goodbyeJobMaster struct {
	*fakeJobMaster
	start time.Time
	mu    sync.Mutex
	got   []disconnect
}

func (f *goodbyeJobMaster) DisconnectTaskExecutor(_ context.Context, token jobgraph.JobMasterID, te jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, disconnect{time.Since(f.start), token, te, cause.Err()})
	return nil
}

func (f *goodbyeJobMaster) disconnects() []disconnect {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]disconnect(nil), f.got...)
}

type goodbyeResourceManager struct {
	*fakeResourceManager
	start time.Time
	mu    sync.Mutex
	got   []disconnect
}

func (f *goodbyeResourceManager) DisconnectTaskExecutor(_ context.Context, rm jobgraph.ResourceManagerID, te jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error {
	if rm != f.id {
		return &rpc.FencingError{Endpoint: "fake ResourceManager", Expected: f.id.String(), Got: rm.String()}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, disconnect{At: time.Since(f.start), TaskExecutor: te, Cause: cause.Err()})
	return nil
}

func (f *goodbyeResourceManager) disconnects() []disconnect {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]disconnect(nil), f.got...)
}

// watchdogCluster is one TaskExecutor te-1 of one slot, with a JobMaster and a ResourceManager
// that record the TaskExecutor's goodbyes, and a registry whose "stuck" task ignores its
// cancellation until release is closed (then it returns ctx's error) and whose "late" task
// returns lateBy after its cancellation.
type watchdogCluster struct {
	*cluster
	start   time.Time
	jm      *goodbyeJobMaster
	rm      *goodbyeResourceManager
	logs    recordedLogs
	te      *TaskExecutor
	release chan struct{}
}

const lateBy = 45 * time.Second

func newWatchdogCluster(t *testing.T, interval, timeout time.Duration) *watchdogCluster {
	t.Helper()
	c := &watchdogCluster{cluster: newCluster(t), start: time.Now(), release: make(chan struct{})}
	logger, logs := newRecordedLogs(c.start)
	c.logs = logs
	c.jm = &goodbyeJobMaster{fakeJobMaster: &fakeJobMaster{decline: map[jobgraph.AllocationID]bool{}}, start: c.start}
	c.rm = &goodbyeResourceManager{fakeResourceManager: &fakeResourceManager{id: rmToken(9)}, start: c.start}
	require.NoError(t, c.svc.Register("wd-jm", c.jm))
	require.NoError(t, c.svc.Register("wd-rm", c.rm))
	c.reg.Register("stuck", func(ctx context.Context, env Environment) error {
		<-c.release
		return ctx.Err()
	})
	c.reg.Register("late", func(ctx context.Context, env Environment) error {
		<-ctx.Done()
		time.Sleep(lateBy)
		return ctx.Err()
	})
	te, err := New(Config{
		ResourceID: "te-1", NumSlots: 1, Registry: c.reg, RPC: c.svc, ResourceManagerAddress: "wd-rm",
		Shuffle: c.shuffle, Logger: logger,
		// The fakes send no heartbeats: the TaskExecutor must not drop them for it.
		HeartbeatInterval: 100 * time.Hour, HeartbeatTimeout: 100 * time.Hour,
		TaskCancellationInterval: interval, TaskCancellationTimeout: timeout,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		close(c.release)
		te.Close()
	})
	require.NoError(t, te.Start(ctx))
	c.te = te
	return c
}

// deploy runs task code name as subtask 0, attempt 0, of vertex 1 in the TaskExecutor's slot.
func (c *watchdogCluster) deploy(name string) jobgraph.ExecutionAttemptID {
	c.t.Helper()
	require.NoError(c.t, c.te.RequestSlot(ctx, rpc.SlotID{ResourceID: "te-1"}, jobID(1), allocID(1),
		jobgraph.ResourceProfile{CPUCores: 0.5}, "wd-jm", jmToken(1), rmToken(9)))
	synctest.Wait()
	d := tdd(1, 0, name, allocID(1))
	require.NoError(c.t, c.te.SubmitTask(ctx, jmToken(1), d))
	synctest.Wait()
	require.Equal(c.t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning}, c.jm.statesOf(d.ExecutionAttemptID))
	return d.ExecutionAttemptID
}

// until sleeps until d after the cluster's start and lets everything settle.
func (c *watchdogCluster) until(d time.Duration) {
	if wait := d - time.Since(c.start); wait > 0 {
		time.Sleep(wait)
	}
	synctest.Wait()
}

func every(from, step time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = from + time.Duration(i)*step
	}
	return out
}

// Scenario: a task that ignores its cancellation, stopped at t0 = 10 s in each way a
// TaskExecutor stops a task, with Flink's defaults (task.cancellation.interval 30 s,
// task.cancellation.timeout 180 s). The TaskExecutor warns at t0 + 30 s, + 60 s, …, + 150 s; at
// exactly t0 + 180 s it fails fatally: an ERROR names the task, the ResourceManager and the
// JobMaster are told it is gone, every gateway method fails with ErrFailed, and Close returns
// although the task still has not.
func TestTaskStuckAfterItsCancellationFailsTheTaskExecutorAtTheTimeout(t *testing.T) {
	for _, stop := range []struct {
		name string
		stop func(te *TaskExecutor, a jobgraph.ExecutionAttemptID) error
	}{
		{"CancelTask", func(te *TaskExecutor, a jobgraph.ExecutionAttemptID) error { return te.CancelTask(ctx, a) }},
		{"CrashTask", func(te *TaskExecutor, a jobgraph.ExecutionAttemptID) error {
			return te.CrashTask(a, errors.New("crash"))
		}},
		{"FreeSlot", func(te *TaskExecutor, a jobgraph.ExecutionAttemptID) error { return te.FreeSlot(ctx, allocID(1), nil) }},
	} {
		t.Run(stop.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newWatchdogCluster(t, 0, 0)
				a := c.deploy("stuck")
				t0 := 10 * time.Second
				c.until(t0)
				require.NoError(t, stop.stop(c.te, a))

				c.until(t0 + 30*time.Second - time.Nanosecond)
				assert.Empty(t, c.logs.at(slog.LevelWarn))
				c.until(t0 + 180*time.Second - time.Nanosecond)
				assert.Equal(t, every(t0+30*time.Second, 30*time.Second, 5), c.logs.at(slog.LevelWarn))
				w := c.logs.of(slog.LevelWarn)[0]
				assert.Equal(t, "task did not react to its cancellation", w.Msg)
				assert.Equal(t, "v1 (1/2)", w.Values["task"])
				assert.Equal(t, 30*time.Second, w.Values["since"])
				assert.Empty(t, c.logs.at(slog.LevelError))
				assert.Empty(t, c.rm.disconnects())
				assert.Nil(t, c.te.FatalError())
				_, err := c.te.SlotReport(ctx)
				require.NoError(t, err, "alive 1 ns before the timeout")

				c.until(t0 + 180*time.Second)
				errs := c.logs.of(slog.LevelError)
				require.Len(t, errs, 1)
				assert.Equal(t, t0+180*time.Second, errs[0].Time.Sub(c.start))
				for k, v := range map[string]any{"taskExecutor": "te-1", "task": "v1 (1/2)", "vertex": "v1", "subtask": int64(0), "attempt": int64(0), "timeout": 180 * time.Second} {
					assert.Equal(t, v, errs[0].Values[k], k)
				}
				want := &TaskCancellationTimeoutError{TaskExecutor: "te-1", ExecutionAttemptID: a, TaskName: "v1 (1/2)", VertexName: "v1", Timeout: 180 * time.Second}
				assert.Equal(t, want, c.te.FatalError())
				assert.Equal(t, `task v1 (1/2) (vertex "v1", subtask 0, attempt 0) on TaskExecutor te-1 did not return within task.cancellation.timeout 3m0s after its cancellation`, want.Error())

				rmBye, jmBye := c.rm.disconnects(), c.jm.disconnects()
				require.Len(t, rmBye, 1)
				require.Len(t, jmBye, 1)
				assert.Equal(t, t0+180*time.Second, rmBye[0].At)
				assert.Equal(t, jobgraph.ResourceID("te-1"), rmBye[0].TaskExecutor)
				assert.ErrorIs(t, rmBye[0].Cause, ErrTaskCancellationTimeout, "the cause crosses the gateway as a registered error")
				assert.Equal(t, disconnect{t0 + 180*time.Second, jmToken(1), "te-1", jmBye[0].Cause}, jmBye[0])
				assert.ErrorIs(t, jmBye[0].Cause, ErrTaskCancellationTimeout)
				assert.Contains(t, jmBye[0].Cause.Error(), "TaskExecutor te-1 failed fatally: task v1 (1/2)")

				_, err = c.te.SlotReport(ctx)
				assert.ErrorIs(t, err, ErrFailed)
				assert.ErrorIs(t, err, ErrTaskCancellationTimeout)
				assert.True(t, rpc.IsUnreachable(err), "it died as a killed one does")
				assert.ErrorIs(t, c.te.CancelTask(ctx, a), ErrFailed)
				assert.Equal(t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning}, c.jm.statesOf(a), "no final state: the TaskExecutor is gone")

				c.until(t0 + time.Hour)
				assert.Len(t, c.logs.at(slog.LevelWarn), 5, "no more warnings once it failed")
				assert.Len(t, c.rm.disconnects(), 1)
				c.te.Close() // returns, though the task has not
			})
		})
	}
}

// A task that returns 45 s after its cancellation is warned about once, at 30 s, reported
// CANCELED at 45 s, and never makes the TaskExecutor fail.
func TestTaskThatReturnsBeforeTheTimeoutIsWarnedAboutOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newWatchdogCluster(t, 0, 0)
		a := c.deploy("late")
		require.NoError(t, c.te.CancelTask(ctx, a))
		c.until(lateBy)
		assert.Equal(t, jobgraph.ExecutionStateCanceled, c.jm.lastState(t, a).State.State)
		c.until(time.Hour)
		assert.Equal(t, []time.Duration{30 * time.Second}, c.logs.at(slog.LevelWarn))
		assert.Empty(t, c.logs.at(slog.LevelError))
		assert.Nil(t, c.te.FatalError())
		assert.Empty(t, c.rm.disconnects())
		_, err := c.te.SlotReport(ctx)
		assert.NoError(t, err)
	})
}

// task.cancellation.interval 1 s and task.cancellation.timeout 3 s: warnings at 1 s and 2 s, the
// fatal error at 3 s. With NoTaskCancellationTimeout (Flink's 0) the watchdog never fires: a
// warning every 30 s, for an hour.
func TestTaskCancellationOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newWatchdogCluster(t, time.Second, 3*time.Second)
		require.NoError(t, c.te.CancelTask(ctx, c.deploy("stuck")))
		c.until(3*time.Second - time.Nanosecond)
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second}, c.logs.at(slog.LevelWarn))
		assert.Nil(t, c.te.FatalError())
		c.until(3 * time.Second)
		assert.Equal(t, []time.Duration{3 * time.Second}, c.logs.at(slog.LevelError))
		assert.ErrorIs(t, c.te.FatalError(), ErrTaskCancellationTimeout)
	})
	synctest.Test(t, func(t *testing.T) {
		c := newWatchdogCluster(t, 0, NoTaskCancellationTimeout)
		require.NoError(t, c.te.CancelTask(ctx, c.deploy("stuck")))
		c.until(time.Hour)
		assert.Equal(t, every(30*time.Second, 30*time.Second, 120), c.logs.at(slog.LevelWarn))
		assert.Empty(t, c.logs.at(slog.LevelError))
		assert.Nil(t, c.te.FatalError())
		assert.Empty(t, c.rm.disconnects())
	})
}

func TestNewChecksTheTaskCancellationOptions(t *testing.T) {
	for _, tc := range []struct {
		interval, timeout time.Duration
		want              string
	}{
		{-time.Second, 0, "task.cancellation.interval (Config.TaskCancellationInterval) -1s is negative"},
		{0, -2 * time.Second, "task.cancellation.timeout (Config.TaskCancellationTimeout) -2s is negative; NoTaskCancellationTimeout disables the watchdog"},
	} {
		t.Run(fmt.Sprint(tc.interval, tc.timeout), func(t *testing.T) {
			_, err := New(Config{RPC: rpc.NewLocalService(), TaskCancellationInterval: tc.interval, TaskCancellationTimeout: tc.timeout})
			assert.EqualError(t, err, "taskexecutor: "+tc.want)
		})
	}
}

// A panic on the TaskExecutor's main loop (a broken invariant of its slot table, say) makes the
// TaskExecutor fail fatally, as a stuck task does: FatalError is the *jobgraph.PanicError, one
// ERROR carries the stack, the ResourceManager and the JobMaster are told it is gone with the
// cause, every gateway method fails with ErrFailed wrapping the PanicError, and Close returns
// although the running task never did.
func TestPanicOnTheTaskExecutorsLoopFailsItFatally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newWatchdogCluster(t, 0, 0)
		a := c.deploy("stuck")
		c.until(10 * time.Second)
		c.te.loop.Execute(func() { panic("taskexecutor: broken invariant: slot 1 is free and runs a task") })
		synctest.Wait()

		var pe *jobgraph.PanicError
		require.ErrorAs(t, c.te.FatalError(), &pe)
		assert.Equal(t, "taskexecutor te-1", pe.Endpoint)
		assert.Equal(t, "taskexecutor: broken invariant: slot 1 is free and runs a task", pe.Value)
		errs := c.logs.of(slog.LevelError)
		require.Len(t, errs, 1)
		assert.Equal(t, "the TaskExecutor's main loop panicked; the TaskExecutor fails fatally", errs[0].Msg)
		assert.Contains(t, errs[0].Values["stack"], "TestPanicOnTheTaskExecutorsLoopFailsItFatally")

		rmBye, jmBye := c.rm.disconnects(), c.jm.disconnects()
		require.Len(t, rmBye, 1)
		require.Len(t, jmBye, 1)
		assert.Equal(t, jobgraph.ResourceID("te-1"), rmBye[0].TaskExecutor)
		assert.Equal(t, "TaskExecutor te-1 failed fatally: taskexecutor te-1: panic: taskexecutor: broken invariant: slot 1 is free and runs a task", jmBye[0].Cause.Error())

		_, err := c.te.SlotReport(ctx)
		assert.ErrorIs(t, err, ErrFailed)
		var pe2 *jobgraph.PanicError
		require.ErrorAs(t, err, &pe2)
		assert.Same(t, pe, pe2)
		assert.ErrorIs(t, c.te.CancelTask(ctx, a), ErrFailed)
		c.te.Close() // returns, though the stuck task never does
	})
}
