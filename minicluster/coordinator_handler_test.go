package minicluster_test

// Operator coordinators on a real MiniCluster (the JobMaster's handler, issue 15): events both
// ways between a coordinator on the JobMaster and its vertex's tasks on the TaskExecutors, a
// coordinator error as a global failure under the restart strategy, a coordinator the cluster
// does not know, and the coordinator closed when the job ends. Each test runs the cluster in a
// synctest bubble.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// helloCoordinator answers each "hello" of subtask i with "ack-i" to the attempt that sent it,
// and logs every call. With failFirst it fails instead on the hello of attempt 0 of subtask 0.
type helloCoordinator struct {
	log       *callLog
	failFirst bool
	gateways  map[int]coordination.SubtaskGateway
}

// callLog is the coordinators' calls, in order, shared by every coordinator a registry creates.
type callLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *callLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *callLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

var errHelloRefused = errors.New("hello refused")

func init() { jobgraph.RegisterErrorCode("minicluster-test.hello-refused", errHelloRefused) }

func helloCoordinators(t *testing.T, log *callLog, failFirst bool) *coordination.Registry {
	reg := coordination.NewRegistry()
	require.NoError(t, reg.Register("hello", coordination.ProviderFunc(func(ctx coordination.Context) (coordination.OperatorCoordinator, error) {
		log.add("Create p=%d config=%s", ctx.CurrentParallelism(), ctx.Config())
		return &helloCoordinator{log: log, failFirst: failFirst, gateways: map[int]coordination.SubtaskGateway{}}, nil
	})))
	return reg
}

func (c *helloCoordinator) Start() error { c.log.add("Start"); return nil }
func (c *helloCoordinator) Close() error { c.log.add("Close"); return nil }
func (c *helloCoordinator) HandleEventFromOperator(subtask, attempt int, event []byte) error {
	c.log.add("Event %d/%d %s", subtask, attempt, event)
	if c.failFirst && subtask == 0 && attempt == 0 {
		return errHelloRefused
	}
	if string(event) != "hello" {
		return fmt.Errorf("unexpected event %q", event)
	}
	c.gateways[subtask].SendEvent(fmt.Appendf(nil, "ack-%d", subtask), nil)
	return nil
}
func (c *helloCoordinator) CheckpointCoordinator(id int64, result func([]byte, error)) {
	result(nil, nil)
}
func (c *helloCoordinator) NotifyCheckpointComplete(int64) {}
func (c *helloCoordinator) NotifyCheckpointAborted(int64)  {}
func (c *helloCoordinator) ResetToCheckpoint(id int64, _ []byte) error {
	c.log.add("Reset %d", id)
	return nil
}
func (c *helloCoordinator) SubtaskReset(subtask int, id int64) error {
	c.log.add("SubtaskReset %d %d", subtask, id)
	return nil
}
func (c *helloCoordinator) ExecutionAttemptFailed(subtask, attempt int, reason error) error {
	c.log.add("Failed %d/%d %v", subtask, attempt, reason)
	return nil
}
func (c *helloCoordinator) ExecutionAttemptReady(subtask, attempt int, g coordination.SubtaskGateway) error {
	c.log.add("Ready %d/%d", subtask, attempt)
	c.gateways[subtask] = g
	return nil
}

// greeter sends "hello" to its coordinator and finishes once the answer is "ack-<subtask>"; any
// other answer fails it.
func greeter(ctx context.Context, env taskexecutor.Environment) error {
	var reply []byte
	env.SetOperatorEventHandler(func(event []byte) error { reply = event; return nil })
	if err := env.SendEventToCoordinator([]byte("hello")); err != nil {
		return err
	}
	for reply == nil {
		if err := env.Yield(ctx); err != nil {
			return err
		}
	}
	if want := fmt.Sprintf("ack-%d", env.Info().SubtaskIndex); string(reply) != want {
		return fmt.Errorf("subtask %d got %q, want %q", env.Info().SubtaskIndex, reply, want)
	}
	return nil
}

func helloJob(parallelism int, coordinator string) *jobgraph.JobGraph {
	g := jobgraph.New("hello", jobgraph.Streaming)
	g.AddVertex("greeter", "greeter", parallelism).WithOperatorCoordinator(coordinator, []byte("cfg"))
	return g
}

func helloCluster(t *testing.T, reg *coordination.Registry) *minicluster.MiniCluster {
	tasks := registry()
	tasks.Register("greeter", greeter)
	return start(t, minicluster.Config{SlotsPerTaskExecutor: 3, Registry: tasks, OperatorCoordinators: reg})
}

// lines of subtask i ("… i/…") in log order.
func subtaskLines(lines []string, i int) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, fmt.Sprintf(" %d/", i)) {
			out = append(out, l)
		}
	}
	return out
}

// TestCoordinatorExchangesEventsWithItsTasks: three greeters each say hello and finish only on
// their own ack; the coordinator is created with the vertex's parallelism and config, started
// before any attempt is ready, sees each attempt ready and its hello, and is closed once the job
// FINISHED.
func TestCoordinatorExchangesEventsWithItsTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &callLog{}
		mc := helloCluster(t, helloCoordinators(t, log, false))
		g := helloJob(3, "hello")
		res, err := mc.Run(context.Background(), g)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)
		synctest.Wait() // the Dispatcher closes the job's runner, and with it the JobMaster

		lines := log.get()
		require.Len(t, lines, 9, "%q", lines)
		assert.Equal(t, []string{"Create p=3 config=cfg", "Start"}, lines[:2])
		for i := range 3 {
			assert.Equal(t, []string{fmt.Sprintf("Ready %d/0", i), fmt.Sprintf("Event %d/0 hello", i)}, subtaskLines(lines, i), "subtask %d", i)
		}
		assert.Equal(t, "Close", lines[8])
	})
}

// TestCoordinatorErrorRestartsTheJobGlobally: the coordinator refuses the first hello; that fails
// the job globally, the fixed-delay restart strategy restarts it after 1 s (the coordinator reset
// to no checkpoint), the second attempt's hello is answered and the job FINISHES with the
// coordinator's error in its exception history; the coordinator is closed at the end.
func TestCoordinatorErrorRestartsTheJobGlobally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begin := time.Now()
		log := &callLog{}
		mc := helloCluster(t, helloCoordinators(t, log, true))
		g := helloJob(1, "hello")
		g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
		res, err := mc.Run(context.Background(), g)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)
		assert.Equal(t, time.Second, time.Since(begin), "one restart backoff")
		synctest.Wait()

		assert.Equal(t, []string{
			"Create p=1 config=cfg", "Start",
			"Ready 0/0", "Event 0/0 hello",
			"Failed 0/0 <nil>", // canceled by the global failover
			"Reset -1",
			"Ready 0/1", "Event 0/1 hello",
			"Close",
		}, log.get())
		require.Len(t, res.ExceptionHistory, 1)
		assert.Equal(t, `operator coordinator "hello" of vertex `+g.Vertices[0].ID.String()+": HandleEventFromOperator: hello refused",
			res.ExceptionHistory[0].Message)
	})
}

// TestCoordinatorErrorWithoutRestartFailsTheJob: without restarts the coordinator's error is the
// job's root cause (errors.Is finds it across the JobMaster's boundary).
func TestCoordinatorErrorWithoutRestartFailsTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &callLog{}
		mc := helloCluster(t, helloCoordinators(t, log, true))
		g := helloJob(1, "hello")
		g.RestartStrategy = jobgraph.NoRestart()
		res, err := mc.Run(context.Background(), g)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
		require.ErrorIs(t, res.RootCause, errHelloRefused)
		assert.ErrorContains(t, res.RootCause, `operator coordinator "hello" of vertex `+g.Vertices[0].ID.String()+": HandleEventFromOperator: hello refused")
		synctest.Wait()
		assert.Equal(t, []string{"Create p=1 config=cfg", "Start", "Ready 0/0", "Event 0/0 hello", "Failed 0/0 <nil>", "Close"}, log.get())
	})
}

// TestUnknownCoordinatorFailsTheJobsInitialization: a vertex naming a coordinator the cluster's
// registry does not have fails the job's initialization with an error naming the vertex and the
// coordinator; no task runs and no coordinator is created.
func TestUnknownCoordinatorFailsTheJobsInitialization(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &callLog{}
		mc := helloCluster(t, helloCoordinators(t, log, false))
		g := helloJob(2, "enumerator")
		res, err := mc.Run(context.Background(), g)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
		require.ErrorIs(t, res.RootCause, jobmaster.ErrJobInitialization)
		require.ErrorIs(t, res.RootCause, coordination.ErrUnknownCoordinator)
		v := g.Vertices[0].ID
		assert.ErrorContains(t, res.RootCause, fmt.Sprintf(`operator coordinator "enumerator" of vertex "greeter" (%s): coordination: no operator coordinator registered under this name: "enumerator" (vertex %s)`, v, v))
		assert.Empty(t, log.get())
	})
}

// TestCoordinatorIsClosedWhenTheJobIsCanceled: greeters that never get their ack are canceled
// with the job; the coordinator hears each attempt canceled, then Close.
func TestCoordinatorIsClosedWhenTheJobIsCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &callLog{}
		mc := helloCluster(t, helloCoordinators(t, log, true)) // subtask 0's hello is refused…
		g := helloJob(1, "hello")
		g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Hour) // …and the restart waits an hour
		ctx := context.Background()
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID))
		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		synctest.Wait()
		assert.Equal(t, []string{"Create p=1 config=cfg", "Start", "Ready 0/0", "Event 0/0 hello", "Failed 0/0 <nil>", "Close"}, log.get())
	})
}
