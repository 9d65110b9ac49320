package jobmaster_test

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
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// echoCoordinator answers each event e of a subtask with "ack-e" to the attempt that sent it,
// fails on "poison", and logs every call (and every ack it gets) as a line.
type echoCoordinator struct {
	rec      *coordRecorder
	ctx      coordination.Context
	gateways map[int]coordination.SubtaskGateway
}

// coordRecorder is the registry of "echo" and the log of every coordinator it created.
type coordRecorder struct {
	mu       sync.Mutex
	lines    []string
	registry *coordination.Registry
}

func newCoordRecorder(t *testing.T) *coordRecorder {
	r := &coordRecorder{registry: coordination.NewRegistry()}
	require.NoError(t, r.registry.Register("echo", coordination.ProviderFunc(func(ctx coordination.Context) (coordination.OperatorCoordinator, error) {
		r.logf("Create p=%d config=%s", ctx.CurrentParallelism(), ctx.Config())
		return &echoCoordinator{rec: r, ctx: ctx, gateways: map[int]coordination.SubtaskGateway{}}, nil
	})))
	return r
}

func (r *coordRecorder) logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

// take returns the lines logged since the last take.
func (r *coordRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.lines
	r.lines = nil
	return out
}

func (c *echoCoordinator) Start() error { c.rec.logf("Start"); return nil }
func (c *echoCoordinator) Close() error { c.rec.logf("Close"); return nil }
func (c *echoCoordinator) HandleEventFromOperator(subtask, attempt int, event []byte) error {
	c.rec.logf("Event %d/%d %s", subtask, attempt, event)
	if string(event) == "poison" {
		return errors.New("poisoned")
	}
	reply := "ack-" + string(event)
	c.gateways[subtask].SendEvent([]byte(reply), func(err error) { c.rec.logf("Acked %s %v", reply, err) })
	return nil
}
func (c *echoCoordinator) CheckpointCoordinator(id int64, result func([]byte, error)) {
	c.rec.logf("Checkpoint %d", id)
	result(nil, nil)
}
func (c *echoCoordinator) NotifyCheckpointComplete(id int64) { c.rec.logf("Complete %d", id) }
func (c *echoCoordinator) NotifyCheckpointAborted(id int64)  { c.rec.logf("Aborted %d", id) }
func (c *echoCoordinator) ResetToCheckpoint(id int64, _ []byte) error {
	c.rec.logf("Reset %d", id)
	return nil
}
func (c *echoCoordinator) SubtaskReset(subtask int, id int64) error {
	c.rec.logf("SubtaskReset %d %d", subtask, id)
	return nil
}
func (c *echoCoordinator) ExecutionAttemptFailed(subtask, attempt int, reason error) error {
	c.rec.logf("Failed %d/%d %v", subtask, attempt, reason)
	return nil
}
func (c *echoCoordinator) ExecutionAttemptReady(subtask, attempt int, g coordination.SubtaskGateway) error {
	c.rec.logf("Ready %d/%d", subtask, attempt)
	c.gateways[subtask] = g
	return nil
}

// echoJob is src (2) → sink (2), pointwise and pipelined (two regions), without checkpoints;
// src names the "echo" coordinator.
func echoJob(restart jobgraph.RestartStrategyConfig) *jobgraph.JobGraph {
	g := jobgraph.New("coordinated", jobgraph.Streaming)
	src := g.AddVertex("src", "noop", 2)
	sink := g.AddVertex("sink", "noop", 2)
	g.Connect(src, sink, jobgraph.Pointwise, jobgraph.Pipelined)
	src.WithOperatorCoordinator("echo", []byte("cfg"))
	g.RestartStrategy = restart
	return g
}

// startEcho runs echoJob's four tasks on one fake TaskExecutor (slots A and B), all deployed;
// the coordinator log up to then is checked and dropped.
func startEcho(t *testing.T, rec *coordRecorder, restart jobgraph.RestartStrategyConfig) (*hbEnv, *hbTE) {
	t.Helper()
	e := newHBEnvFor(t, jobmaster.Config{OperatorCoordinators: rec.registry}, echoJob(restart))
	assert.Equal(t, []string{"Create p=2 config=cfg", "Start"}, rec.take(), "created and started before any task is deployed")
	te := e.addTE("te-1")
	e.offer(te, 0, "A")
	e.offer(te, 1, "B")
	require.Len(t, te.snapshot().submits, 4)
	assert.Empty(t, rec.take())
	return e, te
}

// reportAttempt reports state (with cause, if FAILED) for attempt.
func (e *hbEnv) reportAttempt(a jobgraph.ExecutionAttemptID, state jobgraph.ExecutionState, cause error) {
	e.t.Helper()
	applied, err := e.gw.UpdateTaskExecutionState(e.ctx, e.token, rpc.TaskExecutionState{ExecutionAttemptID: a, State: state, Failure: rpc.Failure(cause)})
	require.NoError(e.t, err)
	require.True(e.t, applied, "%v %v", a, state)
	synctest.Wait()
}

// TestJobMasterRunsTheOperatorCoordinatorOfItsVertex: the JobMaster creates and starts the
// coordinator before scheduling, gives it a gateway per attempt once INITIALIZING (not again for
// RUNNING), routes events both ways, tells it of failed and canceled attempts with their causes,
// resets the restarted subtask (the scheduler's SubtaskReset through the Holder), gives the
// restarted attempt a new gateway, drops the replaced attempt's events, and closes it
// last when it closes.
func TestJobMasterRunsTheOperatorCoordinatorOfItsVertex(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newCoordRecorder(t)
		e, te := startEcho(t, rec, jobgraph.FixedDelayRestart(5, time.Second))
		src1, src2 := e.attempt(te, "src (1/2)"), e.attempt(te, "src (2/2)")
		e.reportAttempt(src1, jobgraph.ExecutionStateInitializing, nil)
		e.reportAttempt(src1, jobgraph.ExecutionStateRunning, nil)
		e.reportAttempt(src2, jobgraph.ExecutionStateRunning, nil)
		for _, name := range []string{"sink (1/2)", "sink (2/2)"} {
			e.report(te, name, jobgraph.ExecutionStateRunning)
		}
		assert.Equal(t, []string{"Ready 0/0", "Ready 1/0"}, rec.take())

		require.NoError(t, e.gw.SendOperatorEventToCoordinator(e.ctx, e.token, src2, []byte("hello")))
		synctest.Wait()
		assert.Equal(t, []string{"Event 1/0 hello", "Acked ack-hello <nil>"}, rec.take())
		assert.Equal(t, []string{"event ack-hello src (2/2)#0 @0s"}, te.snapshot().ckCalls)

		// src (1/2) fails: its region (src (1/2), sink (1/2)) restarts after 1 s.
		e.reportAttempt(src1, jobgraph.ExecutionStateFailed, errors.New("disk full"))
		e.report(te, "sink (1/2)", jobgraph.ExecutionStateCanceled)
		lines := rec.take()
		require.Len(t, lines, 1)
		assert.Regexp(t, `^Failed 0/0 .*disk full$`, lines[0])
		err := e.gw.SendOperatorEventToCoordinator(e.ctx, e.token, src1, []byte("from the failed attempt"))
		require.ErrorIs(t, err, rpc.ErrTaskNotRunning)

		advance(time.Second)
		src1b := e.attempt(te, "src (1/2)")
		require.Equal(t, 1, src1b.AttemptNumber)
		e.reportAttempt(src1b, jobgraph.ExecutionStateRunning, nil)
		require.NoError(t, e.gw.SendOperatorEventToCoordinator(e.ctx, e.token, src1b, []byte("again")))
		synctest.Wait()
		assert.Equal(t, []string{"SubtaskReset 0 -1", "Ready 0/1", "Event 0/1 again", "Acked ack-again <nil>"}, rec.take(),
			"the region restart resets subtask 0 (no checkpoint), its new attempt gets a gateway")

		e.jm.Close() // SUSPENDED: the tasks are canceled, then the coordinator closes
		assert.Equal(t, []string{"Failed 0/1 <nil>", "Failed 1/0 <nil>", "Close"}, rec.take())
	})
}

// TestCoordinatorErrorFailsTheJobGlobally: the coordinator's error is a global failure: with the
// restart strategy "none" the job FAILS with it as root cause; the coordinator is closed once
// the JobMaster closes.
func TestCoordinatorErrorFailsTheJobGlobally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newCoordRecorder(t)
		e, te := startEcho(t, rec, jobgraph.NoRestart())
		for _, name := range ckTasks {
			e.report(te, name, jobgraph.ExecutionStateRunning)
		}
		rec.take()
		require.NoError(t, e.gw.SendOperatorEventToCoordinator(e.ctx, e.token, e.attempt(te, "src (1/2)"), []byte("poison")),
			"the event was delivered: the coordinator's failure is the job's, not the sender's")
		synctest.Wait()
		assert.Equal(t, jobgraph.JobStatusFailing, e.status())
		for _, name := range ckTasks {
			e.report(te, name, jobgraph.ExecutionStateCanceled)
		}
		assert.Equal(t, jobgraph.JobStatusFailed, e.status())
		res := e.jm.Result()
		var ce *coordination.CoordinatorError
		require.ErrorAs(t, res.Err, &ce)
		assert.Equal(t, "HandleEventFromOperator", ce.Method)
		assert.ErrorContains(t, res.Err, `operator coordinator "echo" of vertex `+e.g.Vertices[0].ID.String()+": HandleEventFromOperator: poisoned")
		assert.Equal(t, []string{"Event 0/0 poison", "Failed 0/0 <nil>", "Failed 1/0 <nil>"}, rec.take())
		e.jm.Close()
		assert.Equal(t, []string{"Close"}, rec.take())
	})
}

// TestLostOperatorEventFailsItsAttempt: an event the TaskExecutor does not take from the
// coordinator fails the still-current attempt it was sent to (it may have missed it) and cancels
// its task; the coordinator hears the ack's error and the failure.
func TestLostOperatorEventFailsItsAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newCoordRecorder(t)
		e, te := startEcho(t, rec, jobgraph.FixedDelayRestart(5, time.Second))
		for _, name := range ckTasks {
			e.report(te, name, jobgraph.ExecutionStateRunning)
		}
		rec.take()
		te.set(func(f *hbTE) { f.eventErr = errors.New("mailbox full") })
		require.NoError(t, e.gw.SendOperatorEventToCoordinator(e.ctx, e.token, e.attempt(te, "src (2/2)"), []byte("x")))
		synctest.Wait()
		lines := rec.take()
		require.Len(t, lines, 3)
		assert.Equal(t, "Event 1/0 x", lines[0])
		assert.Equal(t, "Acked ack-x mailbox full", lines[1])
		assert.Regexp(t, `^Failed 1/0 task src \(2/2\) \(attempt 0\) on te-1 failed: coordination: an event from the operator coordinator to a task was lost: attempt .*: mailbox full$`, lines[2])
		assert.Equal(t, []string{"sink (2/2)#0 @0s", "src (2/2)#0 @0s"}, te.snapshot().cancels,
			"the failover cancels the region's other task, the JobMaster the failed one")
		assert.Equal(t, jobgraph.JobStatusRestarting, e.status())
	})
}

// TestUnknownOperatorCoordinatorFailsTheJobMaster: a vertex naming a coordinator the registry
// does not have — or with no registry at all — fails the JobMaster's creation with an error
// naming the vertex and the coordinator.
func TestUnknownOperatorCoordinatorFailsTheJobMaster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		other := coordination.NewRegistry()
		for name, reg := range map[string]*coordination.Registry{"unregistered": other, "no registry": nil} {
			svc := rpc.NewLocalService()
			require.NoError(t, svc.Register("rm", &hbRM{id: jobgraph.NewResourceManagerID()}))
			g := echoJob(jobgraph.NoRestart())
			f, err := jobmaster.NewFactory(g, jobmaster.Config{RPC: svc, ResourceManagerAddress: "rm", OperatorCoordinators: reg, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			_, err = f.Create(context.Background(), jobgraph.NewJobMasterID())
			require.ErrorIs(t, err, coordination.ErrUnknownCoordinator, name)
			want := fmt.Sprintf(`jobmaster: job %s: operator coordinator "echo" of vertex "src" (%s): coordination: no operator coordinator registered under this name: "echo" (vertex %s)`,
				g.JobID, g.Vertices[0].ID, g.Vertices[0].ID)
			if reg == nil {
				want = want[:len(want)-1] + "; no coordination.Registry is configured)"
			}
			assert.EqualError(t, err, want, name)
		}
	})
}

// silentCoordinator does nothing.
type silentCoordinator struct{}

func (silentCoordinator) Start() error                                              { return nil }
func (silentCoordinator) Close() error                                              { return nil }
func (silentCoordinator) HandleEventFromOperator(int, int, []byte) error            { return nil }
func (silentCoordinator) CheckpointCoordinator(_ int64, result func([]byte, error)) { result(nil, nil) }
func (silentCoordinator) NotifyCheckpointComplete(int64)                            {}
func (silentCoordinator) NotifyCheckpointAborted(int64)                             {}
func (silentCoordinator) ResetToCheckpoint(int64, []byte) error                     { return nil }
func (silentCoordinator) SubtaskReset(int, int64) error                             { return nil }
func (silentCoordinator) ExecutionAttemptFailed(int, int, error) error              { return nil }
func (silentCoordinator) ExecutionAttemptReady(int, int, coordination.SubtaskGateway) error {
	return nil
}
