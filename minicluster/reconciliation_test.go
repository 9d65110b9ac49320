package minicluster_test

// Deployment reconciliation (issue 15): each TaskExecutor's heartbeat to a JobMaster reports the
// execution attempts it holds for the job (rpc.ExecutionDeploymentReport), and the JobMaster
// fails what it deployed there that is no longer reported and cancels what is reported that it
// does not know. These scenarios lose a SubmitTask and a CancelTask on purpose, through an
// rpc.Service that wraps the TaskExecutors' gateways the JobMaster looks up.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// lossyRPC is an rpc.Service whose TaskExecutor gateways lose chosen messages: the SubmitTask of
// the attempts dropSubmit names (the call answers success, as a message lost after the
// TaskExecutor acknowledged it would look — the task never starts), and the first
// dropCancels[attempt] CancelTask calls of an attempt (each call waits for its context and
// answers its error: the timeout a caller sees when a message is lost). Every SubmitTask and
// CancelTask is logged as "<kind> <vertex>_<subtask>#<attempt> at <virtual time>", with
// "(lost)" for those dropped.
type lossyRPC struct {
	rpc.Service
	begin time.Time
	names map[jobgraph.JobVertexID]string

	mu          sync.Mutex
	dropSubmit  func(jobgraph.ExecutionAttemptID) bool
	dropCancels map[jobgraph.ExecutionAttemptID]int
	log         []string
	lost        []jobgraph.ExecutionAttemptID // SubmitTasks dropped, in order
}

func (s *lossyRPC) Lookup(ctx context.Context, address string) (any, error) {
	ep, err := s.Service.Lookup(ctx, address)
	if gw, ok := ep.(rpc.TaskExecutorGateway); ok && err == nil {
		return &lossyTaskExecutor{TaskExecutorGateway: gw, s: s}, nil
	}
	return ep, err
}

func (s *lossyRPC) name(a jobgraph.ExecutionAttemptID) string {
	return fmt.Sprintf("%s_%d#%d", s.names[a.ExecutionVertexID.JobVertexID], a.ExecutionVertexID.Subtask, a.AttemptNumber)
}

func (s *lossyRPC) record(kind string, a jobgraph.ExecutionAttemptID, lost bool) {
	line := fmt.Sprintf("%s %s at %s", kind, s.name(a), time.Since(s.begin))
	if lost {
		line += " (lost)"
	}
	s.log = append(s.log, line)
}

func (s *lossyRPC) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

type lossyTaskExecutor struct {
	rpc.TaskExecutorGateway
	s *lossyRPC
}

func (l *lossyTaskExecutor) SubmitTask(ctx context.Context, token jobgraph.JobMasterID, tdd rpc.TaskDeploymentDescriptor) error {
	errs, err := l.SubmitTasks(ctx, token, []rpc.TaskDeploymentDescriptor{tdd})
	if err == nil && errs != nil {
		err = errs[0]
	}
	return err
}

func (l *lossyTaskExecutor) SubmitTasks(ctx context.Context, token jobgraph.JobMasterID, tdds []rpc.TaskDeploymentDescriptor) ([]error, error) {
	var pass []rpc.TaskDeploymentDescriptor
	var at []int
	l.s.mu.Lock()
	for i, d := range tdds {
		lost := l.s.dropSubmit != nil && l.s.dropSubmit(d.ExecutionAttemptID)
		l.s.record("submit", d.ExecutionAttemptID, lost)
		if lost {
			l.s.lost = append(l.s.lost, d.ExecutionAttemptID)
		} else {
			pass = append(pass, d)
			at = append(at, i)
		}
	}
	l.s.mu.Unlock()
	if len(pass) == 0 {
		return nil, nil
	}
	errs, err := l.TaskExecutorGateway.SubmitTasks(ctx, token, pass)
	if err != nil || errs == nil {
		return nil, err
	}
	out := make([]error, len(tdds))
	for j, i := range at {
		out[i] = errs[j]
	}
	return out, nil
}

func (l *lossyTaskExecutor) CancelTask(ctx context.Context, attempt jobgraph.ExecutionAttemptID) error {
	l.s.mu.Lock()
	lost := l.s.dropCancels != nil && l.s.dropCancels[attempt] > 0
	if lost {
		l.s.dropCancels[attempt]--
	}
	l.s.record("cancel", attempt, lost)
	l.s.mu.Unlock()
	if lost {
		<-ctx.Done()
		return ctx.Err()
	}
	return l.TaskExecutorGateway.CancelTask(ctx, attempt)
}

// taskLog records, per task attempt, how its task code ended: "<vertex>_<subtask>#<attempt>
// <how> at <virtual time>".
type taskLog struct {
	begin time.Time
	mu    sync.Mutex
	seen  []string
}

func (l *taskLog) add(env taskexecutor.Environment, how string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := env.Info()
	l.seen = append(l.seen, fmt.Sprintf("%s_%d#%d %s at %s", i.VertexName, i.SubtaskIndex, i.AttemptNumber, how, time.Since(l.begin)))
}

func (l *taskLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// runsUntil is task code that runs until release is closed (then it finishes) or it is
// canceled, and logs which.
func runsUntil(release <-chan struct{}, log *taskLog) taskexecutor.Invokable {
	return func(ctx context.Context, env taskexecutor.Environment) error {
		select {
		case <-release:
			log.add(env, "finished")
			return nil
		case <-ctx.Done():
			log.add(env, "canceled")
			return ctx.Err()
		}
	}
}

// allSlotsFree asserts that no slot of any of the cluster's TaskExecutors is allocated.
func allSlotsFree(t *testing.T, mc *minicluster.MiniCluster) {
	t.Helper()
	for _, te := range mc.TaskExecutors() {
		report, err := te.SlotReport(context.Background())
		require.NoError(t, err)
		for _, s := range report.Slots {
			assert.Equal(t, jobgraph.AllocationID{}, s.AllocationID, "slot %d of %s", s.SlotID.SlotNumber, te.ResourceID())
		}
	}
}

// subtaskState returns the attempt number and state of subtask 0 of the vertex named.
func subtaskState(t *testing.T, mc *minicluster.MiniCluster, id jobgraph.JobID, vertex string) string {
	t.Helper()
	archived, err := mc.RequestJob(context.Background(), id)
	require.NoError(t, err)
	for _, jv := range archived.JobVertices {
		if jv.Name == vertex {
			st := jv.Subtasks[0]
			return fmt.Sprintf("#%d %s", st.AttemptNumber, st.State)
		}
	}
	t.Fatalf("no vertex %q", vertex)
	return ""
}

// Scenario: the SubmitTask of the job's only task (attempt 0) is lost — the TaskExecutor never
// gets it, the JobMaster sees the call succeed and counts the task as deployed there. Until the
// TaskExecutor's next heartbeat (at 10 s, heartbeat.interval) the attempt stays DEPLOYING; that
// heartbeat does not report it, so the attempt fails as a missing deployment at 10 s and the
// restart strategy (fixed-delay, 1 s) redeploys it once: attempt 1 runs from 11 s and finishes.
// The exception history has one entry, naming the missing deployment; no slot stays allocated.
func TestReconciliationLostSubmitTaskFailsAsMissingAndIsRedeployedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		release := make(chan struct{})
		tasks := &taskLog{begin: begin}
		reg := registry()
		reg.Register("run", runsUntil(release, tasks))
		lossy := &lossyRPC{Service: rpc.NewLocalService(), begin: begin, names: map[jobgraph.JobVertexID]string{}}
		lossy.dropSubmit = func(a jobgraph.ExecutionAttemptID) bool { return a.AttemptNumber == 0 }
		statuses := &statusLog{begin: begin}
		mc := start(t, minicluster.Config{Registry: reg, RPC: lossy, JobStatusListener: statuses.listen})

		g := jobgraph.New("lost-submit", jobgraph.Streaming)
		v := g.AddVertex("v", "run", 1)
		lossy.names[v.ID] = "v"
		g.RestartStrategy = jobgraph.FixedDelayRestart(3, time.Second)
		require.NoError(t, mc.SubmitJob(ctx, g))

		at(begin, 10*time.Second-time.Nanosecond)
		assert.Equal(t, "#0 DEPLOYING", subtaskState(t, mc, g.JobID, "v"), "the JobMaster counts the lost task as deployed")
		at(begin, 10*time.Second)
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID))
		at(begin, 11*time.Second)
		assert.Equal(t, "#1 RUNNING", subtaskState(t, mc, g.JobID, "v"))
		assert.Equal(t, []string{"submit v_0#0 at 0s (lost)", "submit v_0#1 at 11s"}, lossy.calls())

		close(release)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		assert.Equal(t, []string{"v_0#1 finished at 11s"}, tasks.get(), "attempt 0 never ran")
		assert.Equal(t, []string{"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s", "RESTARTING at 10s", "RUNNING at 11s", "FINISHED at 11s"}, statuses.get())
		require.Len(t, lossy.lost, 1)
		require.Len(t, res.ExceptionHistory, 1)
		e := res.ExceptionHistory[0]
		assert.Equal(t, 10*time.Second, e.Timestamp.Sub(begin))
		e.Timestamp = time.Time{}
		missing := &jobmaster.MissingDeploymentError{Attempt: lossy.lost[0], TaskExecutor: "taskexecutor-0"}
		assert.Equal(t, jobgraph.ExceptionHistoryEntry{
			Message:  "task v (1/1) (attempt 0) on taskexecutor-0 failed: " + missing.Error(),
			TaskName: "v (1/1)",
			Location: "taskexecutor-0",
		}, e)
		assert.Equal(t, fmt.Sprintf("execution %s is unexpectedly no longer running on TaskExecutor taskexecutor-0", lossy.lost[0]), missing.Error())
		allSlotsFree(t, mc)
	})
}

// Scenario: a –PIPELINED→ b (one region, one shared slot), fixed-delay 1 s. b fails at 5 s; the
// region failover cancels a's attempt 0, and that CancelTask is lost: each of the JobMaster's
// CancelTaskTries (3) calls times out after pekko.ask.timeout (10 s), at 15, 25 and 35 s, and
// meanwhile a#0 stays CANCELING (tracked, so the heartbeats at 10, 20 and 30 s change nothing).
// At 35 s the JobMaster gives up and counts a#0 CANCELED (Flink: "Task could not be canceled."),
// and the region restarts at once (its 1 s backoff ran from the failure). The TaskExecutor still runs a#0: its heartbeat at 40 s
// reports an execution the JobMaster no longer knows, which is canceled there at once — the one
// CancelTask that gets through. The job then finishes with attempt 1 and one restart; no slot
// stays allocated.
func TestReconciliationLostCancelTaskIsCanceledByTheNextHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		release := make(chan struct{})
		tasks := &taskLog{begin: begin}
		reg := registry()
		reg.Register("run", runsUntil(release, tasks))
		reg.Register("fail-at-5s", func(ctx context.Context, env taskexecutor.Environment) error {
			if env.Info().AttemptNumber > 0 {
				return runsUntil(release, tasks)(ctx, env)
			}
			select {
			case <-time.After(5 * time.Second):
				tasks.add(env, "failed")
				return errBoom
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		lossy := &lossyRPC{Service: rpc.NewLocalService(), begin: begin, names: map[jobgraph.JobVertexID]string{},
			dropCancels: map[jobgraph.ExecutionAttemptID]int{}}
		statuses := &statusLog{begin: begin}
		var deployedA jobgraph.ExecutionAttemptID
		g := jobgraph.New("lost-cancel", jobgraph.Streaming)
		a := g.AddVertex("a", "run", 1)
		b := g.AddVertex("b", "fail-at-5s", 1)
		g.Connect(a, b, jobgraph.Pointwise, jobgraph.Pipelined)
		g.RestartStrategy = jobgraph.FixedDelayRestart(3, time.Second)
		lossy.names[a.ID], lossy.names[b.ID] = "a", "b"
		mc := start(t, minicluster.Config{Registry: reg, RPC: lossy, JobStatusListener: statuses.listen,
			ExecutionStateListener: func(id jobgraph.ExecutionAttemptID, st jobgraph.ExecutionState) {
				if st == jobgraph.ExecutionStateDeploying && id.ExecutionVertexID.JobVertexID == a.ID && id.AttemptNumber == 0 {
					lossy.mu.Lock()
					deployedA = id
					lossy.dropCancels[id] = jobmaster.CancelTaskTries
					lossy.mu.Unlock()
				}
			}})
		require.NoError(t, mc.SubmitJob(ctx, g))

		at(begin, 35*time.Second-time.Nanosecond)
		assert.Equal(t, "#0 CANCELING", subtaskState(t, mc, g.JobID, "a"))
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID))
		at(begin, 35*time.Second)
		assert.Equal(t, "#1 RUNNING", subtaskState(t, mc, g.JobID, "a"), "the JobMaster gave up canceling a#0 and restarted")
		at(begin, 40*time.Second-time.Nanosecond)
		assert.Equal(t, []string{"b_0#0 failed at 5s"}, tasks.get(), "a#0 still runs on the TaskExecutor")
		at(begin, 40*time.Second)
		assert.Equal(t, []string{"b_0#0 failed at 5s", "a_0#0 canceled at 40s"}, tasks.get())
		assert.Equal(t, []string{
			"submit a_0#0 at 0s", "submit b_0#0 at 0s",
			"cancel a_0#0 at 5s (lost)", "cancel a_0#0 at 15s (lost)", "cancel a_0#0 at 25s (lost)",
			"submit a_0#1 at 35s", "submit b_0#1 at 35s",
			"cancel a_0#0 at 40s",
		}, lossy.calls())

		close(release)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		assert.Equal(t, []string{"INITIALIZING at 0s", "CREATED at 0s", "RUNNING at 0s", "RESTARTING at 5s", "RUNNING at 35s", "FINISHED at 40s"}, statuses.get())
		require.Len(t, res.ExceptionHistory, 1, "one restart")
		assert.Equal(t, "task b (1/1) (attempt 0) on taskexecutor-0 failed: boom", res.ExceptionHistory[0].Message)
		assert.Empty(t, res.ExceptionHistory[0].Concurrent, "a#0 counts as CANCELED, not as a failure")
		assert.NotEqual(t, jobgraph.ExecutionAttemptID{}, deployedA)
		allSlotsFree(t, mc)
	})
}
