package minicluster_test

// End-to-end failover scenarios of issue 4 on a real MiniCluster: each test runs the whole
// cluster (Dispatcher, ResourceManager, TaskExecutors, JobMaster) inside a testing/synctest
// bubble, so restart backoffs, heartbeat and slot request timeouts are asserted at exact virtual
// instants. The scheduler's restart_test.go has the same scenarios at unit level, with a fake
// clock; these show that the wiring around the scheduler keeps the numbers.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/slotpool"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// deployLog records every execution attempt that goes DEPLOYING, as "<vertex>_<subtask>#<attempt>
// at <virtual time since begin>". Its listen is the MiniCluster's ExecutionStateListener (it runs
// on the JobMaster's loop, inside the bubble, so time.Now is virtual).
type deployLog struct {
	mu    sync.Mutex
	begin time.Time
	names map[jobgraph.JobVertexID]string
	seen  []string
}

func newDeployLog(begin time.Time) *deployLog {
	return &deployLog{begin: begin, names: map[jobgraph.JobVertexID]string{}}
}

// name makes the vertices of g known by name; call it before submitting g.
func (l *deployLog) name(g *jobgraph.JobGraph) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, v := range g.Vertices {
		l.names[v.ID] = v.Name
	}
}

func (l *deployLog) listen(a jobgraph.ExecutionAttemptID, st jobgraph.ExecutionState) {
	if st != jobgraph.ExecutionStateDeploying {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, fmt.Sprintf("%s_%d#%d at %s", l.names[a.ExecutionVertexID.JobVertexID],
		a.ExecutionVertexID.Subtask, a.AttemptNumber, time.Since(l.begin)))
}

// since returns the deployments recorded so far, from the n-th on, sorted (deployments of one
// instant may be reported in any order).
func (l *deployLog) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.seen[min(n, len(l.seen)):])
	slices.Sort(out)
	return out
}

func (l *deployLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// at moves the bubble's virtual clock to begin+d and waits until every goroutine of the cluster
// has done what that instant asks of it.
func at(begin time.Time, d time.Duration) {
	if wait := d - time.Since(begin); wait > 0 {
		time.Sleep(wait)
	}
	synctest.Wait()
}

// untilCanceledOrReleased is task code that runs until its context is canceled (it then returns
// at once) or release is closed (it then reads its inputs to their end and finishes).
func untilCanceledOrReleased(release <-chan struct{}) taskexecutor.Invokable {
	return func(ctx context.Context, env taskexecutor.Environment) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-release:
		}
		for i := range env.NumInputs() {
			for {
				_, err := env.Input(i).Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
}

func jobStatus(t *testing.T, mc *minicluster.MiniCluster, id jobgraph.JobID) jobgraph.JobStatus {
	t.Helper()
	st, err := mc.RequestJobStatus(context.Background(), id)
	require.NoError(t, err)
	return st
}

// Scenario: two independent regions A = v1 –PIPELINED→ v2 and B = b (parallelism 1 each),
// fixed-delay with 2 attempts and 10 s. v1 fails 5 s after it starts, on attempts 0, 1 and 2:
// each restart of A is deployed exactly 10 s after the failure and deploys v1 and v2 only; b keeps
// attempt 0 throughout; the third failure (no attempt left) fails the job with v1's error.
func TestFailoverFixedDelayRestartsOnlyTheFailedRegion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		statuses := &statusLog{begin: begin}
		deploys := newDeployLog(begin)
		release := make(chan struct{}) // never closed: v2 and b run until canceled
		reg := registry()
		reg.Register("fail-after-5s", func(ctx context.Context, env taskexecutor.Environment) error {
			if env.Info().AttemptNumber > 2 {
				return untilCanceledOrReleased(release)(ctx, env)
			}
			select {
			case <-time.After(5 * time.Second):
				return fmt.Errorf("attempt %d: %w", env.Info().AttemptNumber, errBoom)
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		reg.Register("run", untilCanceledOrReleased(release))
		mc := start(t, minicluster.Config{
			SlotsPerTaskExecutor:   3,
			Registry:               reg,
			JobStatusListener:      statuses.listen,
			ExecutionStateListener: deploys.listen,
		})
		g := jobgraph.New("two-regions", jobgraph.Streaming)
		v1 := g.AddVertex("v1", "fail-after-5s", 1)
		v2 := g.AddVertex("v2", "run", 1)
		g.Connect(v1, v2, jobgraph.Pointwise, jobgraph.Pipelined)
		g.AddVertex("b", "run", 1)
		g.RestartStrategy = jobgraph.FixedDelayRestart(2, 10*time.Second)
		deploys.name(g)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		assert.Equal(t, []string{"b_0#0 at 0s", "v1_0#0 at 0s", "v2_0#0 at 0s"}, deploys.since(0))

		for i, failAt := range []time.Duration{5 * time.Second, 20 * time.Second} {
			at(begin, failAt-time.Nanosecond)
			assert.Equal(t, jobgraph.JobStatusRunning, jobStatus(t, mc, g.JobID), "failure %d: 1 ns before", i)
			at(begin, failAt)
			assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID), "failure %d", i)
			n := deploys.len()
			at(begin, failAt+10*time.Second-time.Nanosecond)
			assert.Equal(t, n, deploys.len(), "failure %d: nothing deployed before 10 s", i)
			assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID), "failure %d", i)
			at(begin, failAt+10*time.Second)
			restartAt := failAt + 10*time.Second
			assert.Equal(t, []string{
				fmt.Sprintf("v1_0#%d at %s", i+1, restartAt),
				fmt.Sprintf("v2_0#%d at %s", i+1, restartAt),
			}, deploys.since(n), "failure %d: only region A is redeployed", i)
			assert.Equal(t, jobgraph.JobStatusRunning, jobStatus(t, mc, g.JobID), "failure %d", i)
		}

		at(begin, 35*time.Second-time.Nanosecond)
		assert.Equal(t, jobgraph.JobStatusRunning, jobStatus(t, mc, g.JobID))
		at(begin, 35*time.Second)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
		require.ErrorIs(t, res.RootCause, errBoom)
		assert.EqualError(t, res.RootCause, "recovery is suppressed by FixedDelayRestartBackoffTimeStrategy(attempts=2, delay=10s, failures=3): "+
			"task v1 (1/1) (attempt 2) on taskexecutor-0 failed: attempt 2: boom")
		assert.Equal(t, 35*time.Second, res.NetRuntime)
		assert.Equal(t, []string{
			"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s",
			"RESTARTING at 5s", "RUNNING at 15s",
			"RESTARTING at 20s", "RUNNING at 30s",
			"FAILING at 35s", "FAILED at 35s",
		}, statuses.get())
		assert.Len(t, deploys.since(0), 7, "b was deployed once, A three times")

		require.Len(t, res.ExceptionHistory, 3)
		for i, e := range res.ExceptionHistory {
			assert.Equal(t, time.Duration(5+15*i)*time.Second, e.Timestamp.Sub(begin))
			e.Timestamp = time.Time{}
			assert.Equal(t, jobgraph.ExceptionHistoryEntry{
				Message:  fmt.Sprintf("task v1 (1/1) (attempt %d) on taskexecutor-0 failed: attempt %d: boom", i, i),
				TaskName: "v1 (1/1)",
				Subtask:  0,
				Location: "taskexecutor-0",
			}, e)
		}

		archived, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		want := map[string]struct {
			state   jobgraph.ExecutionState
			attempt int
		}{
			"v1": {jobgraph.ExecutionStateFailed, 2},
			"v2": {jobgraph.ExecutionStateCanceled, 2},
			"b":  {jobgraph.ExecutionStateCanceled, 0},
		}
		for _, jv := range archived.JobVertices {
			st := jv.Subtasks[0]
			assert.Equal(t, want[jv.Name].state, st.State, jv.Name)
			assert.Equal(t, want[jv.Name].attempt, st.AttemptNumber, jv.Name)
		}
		b := archived.JobVertices[2].Subtasks[0]
		require.Equal(t, "b", archived.JobVertices[2].Name)
		assert.Equal(t, time.Duration(0), b.StateTimestamps[jobgraph.ExecutionStateRunning].Sub(begin), "b ran from the start")
		assert.Equal(t, 35*time.Second, b.StateTimestamps[jobgraph.ExecutionStateCanceled].Sub(begin), "b was canceled only when the job failed")
	})
}

// Scenario: v1(4) –ALL_TO_ALL PIPELINED→ v2(4) (one region) under exponential-delay (initial
// 1 s, multiplier 2, 3 attempts, jitter 0), on TaskExecutors with 4 slots each. The TaskExecutor
// holding four of the eight tasks is killed at 2.5 s; with heartbeats every 1 s and a 5 s timeout
// (heartbeat.rpc-failure-threshold -1: only the timeout loses it) it is lost at exactly 7 s, and its four tasks fail at that instant (the other four are
// canceled). That is one restart attempt: the region restarts exactly 1 s later, at 8 s, every
// execution as attempt 1, and the exception history has one entry with the three other failures
// as its concurrent exceptions. The cluster has a third, idle TaskExecutor: the region needs 8
// slots and the survivor has 4 (with only two, the restarted region would wait for slots).
func TestFailoverTaskExecutorLossIsOneRestartWithConcurrentFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		statuses := &statusLog{begin: begin}
		deploys := newDeployLog(begin)
		release := make(chan struct{})
		reg := registry()
		reg.Register("run", untilCanceledOrReleased(release))
		mc := start(t, minicluster.Config{
			TaskExecutors:                3,
			SlotsPerTaskExecutor:         4,
			Registry:                     reg,
			HeartbeatInterval:            time.Second,
			HeartbeatTimeout:             5 * time.Second,
			HeartbeatRPCFailureThreshold: -1,
			JobStatusListener:            statuses.listen,
			ExecutionStateListener:       deploys.listen,
		})
		g := jobgraph.New("concurrent", jobgraph.Streaming)
		// Every subtask in a slot of its own (no slot sharing): the slot counts below are per subtask.
		v1 := g.AddVertex("v1", "run", 4).WithoutSlotSharingGroup()
		v2 := g.AddVertex("v2", "run", 4).WithoutSlotSharingGroup()
		g.Connect(v1, v2, jobgraph.AllToAll, jobgraph.Pipelined)
		g.RestartStrategy = jobgraph.ExponentialDelayRestart()
		g.RestartStrategy.ExponentialDelayInitialBackoff = time.Second
		g.RestartStrategy.ExponentialDelayBackoffMultiplier = 2
		g.RestartStrategy.ExponentialDelayAttemptsBeforeResetBackoff = 3
		g.RestartStrategy.ExponentialDelayJitterFactor = 0
		deploys.name(g)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		require.Len(t, deploys.since(0), 8)

		// Which subtask gets which slot depends on the order the slot offers arrive in; every
		// TaskExecutor is filled before the next is used, so taskexecutor-0 and -1 hold four tasks
		// each and taskexecutor-2 none. taskexecutor-0's four tasks are the ones to fail.
		archived, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		perTaskExecutor := map[jobgraph.ResourceID][]string{}
		for _, jv := range archived.JobVertices {
			for _, st := range jv.Subtasks {
				require.Equal(t, jobgraph.ExecutionStateRunning, st.State)
				perTaskExecutor[st.Location] = append(perTaskExecutor[st.Location], fmt.Sprintf("%s (%d/4)", jv.Name, st.Subtask+1))
			}
		}
		require.Len(t, perTaskExecutor, 2)
		lost := perTaskExecutor["taskexecutor-0"]
		require.Len(t, lost, 4)
		require.Len(t, perTaskExecutor["taskexecutor-1"], 4)

		at(begin, 2500*time.Millisecond)
		mc.TaskExecutors()[0].Kill()
		at(begin, 7*time.Second-time.Nanosecond)
		assert.Equal(t, jobgraph.JobStatusRunning, jobStatus(t, mc, g.JobID), "1 ns before the heartbeat timeout")
		at(begin, 7*time.Second)
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID))
		archived, err = mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		var failed, canceled []string
		for _, jv := range archived.JobVertices {
			for _, st := range jv.Subtasks {
				name := fmt.Sprintf("%s (%d/4)", jv.Name, st.Subtask+1)
				switch st.State {
				case jobgraph.ExecutionStateFailed:
					failed = append(failed, name)
					assert.Equal(t, 7*time.Second, st.StateTimestamps[jobgraph.ExecutionStateFailed].Sub(begin), name)
					assert.Contains(t, st.FailureMessage, "heartbeat of TaskExecutor taskexecutor-0 timed out after 5s", name)
				case jobgraph.ExecutionStateCanceled:
					canceled = append(canceled, name)
					assert.Equal(t, 7*time.Second, st.StateTimestamps[jobgraph.ExecutionStateCanceled].Sub(begin), name)
				default:
					t.Errorf("%s is %s", name, st.State)
				}
			}
		}
		assert.Equal(t, lost, failed, "the tasks on the lost TaskExecutor failed")
		assert.Equal(t, perTaskExecutor["taskexecutor-1"], canceled, "the rest of the region was canceled")

		at(begin, 8*time.Second-time.Nanosecond)
		assert.Len(t, deploys.since(0), 8, "no restart before 1 s")
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID))
		at(begin, 8*time.Second)
		var want []string
		for _, v := range []string{"v1", "v2"} {
			for i := range 4 {
				want = append(want, fmt.Sprintf("%s_%d#1 at 8s", v, i))
			}
		}
		assert.Equal(t, want, deploys.since(8), "the whole region restarts once, exactly 1 s after the loss")
		assert.Equal(t, jobgraph.JobStatusRunning, jobStatus(t, mc, g.JobID))
		archived, err = mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		for _, jv := range archived.JobVertices {
			for _, st := range jv.Subtasks {
				assert.Equal(t, jobgraph.ExecutionStateRunning, st.State)
				assert.Equal(t, 1, st.AttemptNumber)
				assert.NotEqual(t, jobgraph.ResourceID("taskexecutor-0"), st.Location)
			}
		}

		at(begin, 9*time.Second)
		close(release)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)
		assert.Equal(t, 9*time.Second, res.NetRuntime)
		assert.Equal(t, []string{"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s", "RESTARTING at 7s", "RUNNING at 8s", "FINISHED at 9s"}, statuses.get())
		assert.Len(t, deploys.since(0), 16)

		// One entry: the first of the four failures, with the other three as its concurrent
		// exceptions, all at 7 s on taskexecutor-0.
		require.Len(t, res.ExceptionHistory, 1)
		root := res.ExceptionHistory[0]
		require.Len(t, root.Concurrent, 3)
		var inHistory []string
		for _, e := range append([]jobgraph.ExceptionHistoryEntry{root}, root.Concurrent...) {
			inHistory = append(inHistory, e.TaskName)
			assert.Equal(t, jobgraph.ResourceID("taskexecutor-0"), e.Location, e.TaskName)
			assert.Equal(t, 7*time.Second, e.Timestamp.Sub(begin), e.TaskName)
			assert.Contains(t, e.Message, "heartbeat of TaskExecutor taskexecutor-0 timed out after 5s", e.TaskName)
		}
		for _, c := range root.Concurrent {
			assert.Empty(t, c.Concurrent)
		}
		slices.Sort(inHistory)
		assert.Equal(t, lost, inHistory)
		archived, err = mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, res.ExceptionHistory, archived.ExceptionHistory)
	})
}

// Scenario: v1(2) on one TaskExecutor with one slot, slot.request.timeout 100 ms, no restarts.
// v1 has two regions, each asking for its own slot: v1 (1/2) gets the slot and runs, v1 (2/2)'s
// request times out at exactly 100 ms, which fails the job with a no-resource-available root
// cause; the running task is canceled and its slot freed, so the ResourceManager shows no
// allocated slot afterwards.
func TestFailoverSlotRequestTimeoutFailsTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		statuses := &statusLog{begin: begin}
		deploys := newDeployLog(begin)
		reg := registry()
		reg.Register("run", untilCanceledOrReleased(nil))
		mc := start(t, minicluster.Config{
			Registry:               reg,
			SlotRequestTimeout:     100 * time.Millisecond,
			JobStatusListener:      statuses.listen,
			ExecutionStateListener: deploys.listen,
		})
		g := jobgraph.New("starved", jobgraph.Streaming)
		g.AddVertex("v1", "run", 2)
		g.RestartStrategy = jobgraph.NoRestart()
		deploys.name(g)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		assert.Equal(t, []string{"v1_0#0 at 0s"}, deploys.since(0))
		assert.Equal(t, 1, mc.ResourceManager().NumAllocatedSlots())

		at(begin, 100*time.Millisecond-time.Nanosecond)
		assert.Equal(t, jobgraph.JobStatusRunning, jobStatus(t, mc, g.JobID))
		at(begin, 100*time.Millisecond)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
		require.ErrorIs(t, res.RootCause, slotpool.ErrNoResourceAvailable)
		assert.Contains(t, res.RootCause.Error(), "could not allocate the required slots within the slot request timeout of 100ms")
		require.NotNil(t, res.Failure)
		assert.Contains(t, res.Failure.Message, "could not allocate the required slots within the slot request timeout of 100ms")
		assert.Equal(t, 100*time.Millisecond, res.NetRuntime)
		assert.Equal(t, []string{"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s", "FAILING at 100ms", "FAILED at 100ms"}, statuses.get())
		require.Len(t, res.ExceptionHistory, 1)
		assert.Equal(t, "v1 (2/2)", res.ExceptionHistory[0].TaskName)
		assert.Equal(t, 1, res.ExceptionHistory[0].Subtask)
		assert.Empty(t, res.ExceptionHistory[0].Location, "never deployed")
		assert.Equal(t, 100*time.Millisecond, res.ExceptionHistory[0].Timestamp.Sub(begin))

		archived, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		sub := archived.JobVertices[0].Subtasks
		assert.Equal(t, jobgraph.ExecutionStateCanceled, sub[0].State)
		assert.Equal(t, 100*time.Millisecond, sub[0].StateTimestamps[jobgraph.ExecutionStateCanceled].Sub(begin))
		assert.Equal(t, jobgraph.ExecutionStateFailed, sub[1].State)

		synctest.Wait()
		assert.Equal(t, 0, mc.ResourceManager().NumAllocatedSlots(), "the slot was freed")
		assert.Equal(t, 1, mc.ResourceManager().NumFreeSlots())
		assert.Equal(t, 0, mc.ResourceManager().NumPendingSlots())
		assert.Len(t, deploys.since(0), 1)
	})
}

// Scenario: v1(2) –ALL_TO_ALL PIPELINED→ v2(2), no restarts. v2 (1/2) fails at 2 s; the other
// three tasks take 1 s to react to their cancellation. The job is FAILING while they cancel;
// CancelJob at 2.5 s makes it CANCELLING, and once the last task is CANCELED, at 3 s, the job ends
// CANCELED, not FAILED.
func TestFailoverCancelWhileFailingEndsCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		statuses := &statusLog{begin: begin}
		signal := make(chan struct{})
		slowToCancel := func(ctx context.Context, env taskexecutor.Environment) error {
			<-ctx.Done()
			time.Sleep(time.Second) // ignores the cancellation for 1 s
			return ctx.Err()
		}
		reg := registry()
		reg.Register("slow", slowToCancel)
		reg.Register("fail-on-signal", func(ctx context.Context, env taskexecutor.Environment) error {
			if env.Info().SubtaskIndex != 0 {
				return slowToCancel(ctx, env)
			}
			select {
			case <-signal:
				return errBoom
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		mc := start(t, minicluster.Config{SlotsPerTaskExecutor: 4, Registry: reg, JobStatusListener: statuses.listen})
		g := jobgraph.New("cancel-while-failing", jobgraph.Streaming)
		v1 := g.AddVertex("v1", "slow", 2)
		v2 := g.AddVertex("v2", "fail-on-signal", 2)
		g.Connect(v1, v2, jobgraph.AllToAll, jobgraph.Pipelined)
		g.RestartStrategy = jobgraph.NoRestart()
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()

		at(begin, 2*time.Second)
		close(signal)
		synctest.Wait()
		assert.Equal(t, jobgraph.JobStatusFailing, jobStatus(t, mc, g.JobID))
		at(begin, 2500*time.Millisecond)
		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		synctest.Wait()
		assert.Equal(t, jobgraph.JobStatusCancelling, jobStatus(t, mc, g.JobID))
		at(begin, 3*time.Second-time.Nanosecond)
		assert.Equal(t, jobgraph.JobStatusCancelling, jobStatus(t, mc, g.JobID), "the tasks are still canceling")
		at(begin, 3*time.Second)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		assert.ErrorIs(t, res.RootCause, errBoom, "the failure stays the root cause of the canceled job")
		assert.Equal(t, 3*time.Second, res.NetRuntime)
		assert.Equal(t, []string{"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s", "FAILING at 2s", "CANCELLING at 2.5s", "CANCELED at 3s"}, statuses.get())
		require.Len(t, res.ExceptionHistory, 1)
		assert.Equal(t, "v2 (1/2)", res.ExceptionHistory[0].TaskName)
		assert.Equal(t, 2*time.Second, res.ExceptionHistory[0].Timestamp.Sub(begin))

		archived, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, archived.Status)
		for _, jv := range archived.JobVertices {
			for _, st := range jv.Subtasks {
				if jv.Name == "v2" && st.Subtask == 0 {
					assert.Equal(t, jobgraph.ExecutionStateFailed, st.State)
					assert.Equal(t, 2*time.Second, st.StateTimestamps[jobgraph.ExecutionStateFailed].Sub(begin))
					continue
				}
				assert.Equal(t, jobgraph.ExecutionStateCanceled, st.State, "%s (%d)", jv.Name, st.Subtask)
				assert.Equal(t, 3*time.Second, st.StateTimestamps[jobgraph.ExecutionStateCanceled].Sub(begin), "%s (%d)", jv.Name, st.Subtask)
			}
		}
		synctest.Wait()
		assert.Equal(t, 0, mc.ResourceManager().NumAllocatedSlots())
	})
}

// Scenario: one vertex of parallelism 2 (two regions), fixed-delay with 2 attempts and 1 s.
// Subtask 0 fails at 0 s, subtask 1 at 500 ms: the job is RESTARTING from the first failure on,
// still RESTARTING after subtask 0's restart at 1 s (subtask 1 still waits), and RUNNING after
// subtask 1's restart at 1.5 s.
func TestFailoverRestartingWhileAnyRegionWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		statuses := &statusLog{begin: begin}
		deploys := newDeployLog(begin)
		release := make(chan struct{})
		reg := registry()
		reg.Register("fail-once", func(ctx context.Context, env taskexecutor.Environment) error {
			if env.Info().AttemptNumber > 0 {
				return untilCanceledOrReleased(release)(ctx, env)
			}
			select {
			case <-time.After(time.Duration(env.Info().SubtaskIndex) * 500 * time.Millisecond):
				return errBoom
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		mc := start(t, minicluster.Config{
			SlotsPerTaskExecutor:   2,
			Registry:               reg,
			JobStatusListener:      statuses.listen,
			ExecutionStateListener: deploys.listen,
		})
		g := jobgraph.New("waiting", jobgraph.Streaming)
		g.AddVertex("v", "fail-once", 2)
		g.RestartStrategy = jobgraph.FixedDelayRestart(2, time.Second)
		deploys.name(g)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID), "v (1/2) failed at 0 s")
		assert.Equal(t, []string{"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s", "RESTARTING at 0s"}, statuses.get())

		at(begin, 500*time.Millisecond)
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID), "v (2/2) failed at 500 ms")
		at(begin, time.Second-time.Nanosecond)
		assert.Len(t, deploys.since(0), 2)
		at(begin, time.Second)
		assert.Equal(t, []string{"v_0#1 at 1s"}, deploys.since(2))
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID), "v (2/2) still waits for its restart")
		archived, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.ExecutionStateRunning, archived.JobVertices[0].Subtasks[0].State, "a restarted task runs while the job is RESTARTING")
		assert.Equal(t, jobgraph.ExecutionStateFailed, archived.JobVertices[0].Subtasks[1].State)

		at(begin, 1500*time.Millisecond-time.Nanosecond)
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID))
		at(begin, 1500*time.Millisecond)
		assert.Equal(t, []string{"v_0#1 at 1s", "v_1#1 at 1.5s"}, deploys.since(2))
		assert.Equal(t, jobgraph.JobStatusRunning, jobStatus(t, mc, g.JobID))

		at(begin, 2*time.Second)
		close(release)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)
		assert.Equal(t, []string{"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s", "RESTARTING at 0s", "RUNNING at 1.5s", "FINISHED at 2s"}, statuses.get())
		require.Len(t, res.ExceptionHistory, 2)
		for i, e := range res.ExceptionHistory {
			assert.Equal(t, time.Duration(i)*500*time.Millisecond, e.Timestamp.Sub(begin))
			e.Timestamp = time.Time{}
			assert.Equal(t, jobgraph.ExceptionHistoryEntry{
				Message:  fmt.Sprintf("task v (%d/2) (attempt 0) on taskexecutor-0 failed: boom", i+1),
				TaskName: fmt.Sprintf("v (%d/2)", i+1),
				Subtask:  i,
				Location: "taskexecutor-0",
			}, e)
		}
	})
}
