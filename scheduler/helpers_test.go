package scheduler

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/internal/manualtime"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/slotpool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTimers is the hand-driven clock with timers the tests schedule on.
type fakeTimers = manualtime.Timers

func newFakeTimers() *fakeTimers { return manualtime.New(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) }

type deployCall struct {
	tdd  rpc.TaskDeploymentDescriptor
	slot slotpool.AllocatedSlot
}

type cancelCall struct {
	attempt  jobgraph.ExecutionAttemptID
	location jobgraph.ResourceID
}

type releaseCall struct {
	location   jobgraph.ResourceID
	partitions []rpc.ResultPartitionID
}

// fakeDeployer records what the scheduler asks of the TaskExecutors.
type fakeDeployer struct {
	deployed []deployCall
	canceled []cancelCall
	released []releaseCall
}

func (d *fakeDeployer) Deploy(tdd rpc.TaskDeploymentDescriptor, slot slotpool.AllocatedSlot) {
	d.deployed = append(d.deployed, deployCall{tdd, slot})
}

func (d *fakeDeployer) CancelTask(attempt jobgraph.ExecutionAttemptID, location jobgraph.ResourceID) {
	d.canceled = append(d.canceled, cancelCall{attempt, location})
}

func (d *fakeDeployer) ReleasePartitions(location jobgraph.ResourceID, partitions []rpc.ResultPartitionID) {
	d.released = append(d.released, releaseCall{location, partitions})
}

// deployedNames lists the task names deployed, in order.
func (d *fakeDeployer) deployedNames() []string {
	var out []string
	for _, c := range d.deployed {
		out = append(out, c.tdd.TaskName)
	}
	return out
}

type statusChange struct {
	status jobgraph.JobStatus
	at     time.Time
}

type terminal struct {
	archived *executiongraph.ArchivedExecutionGraph
	cause    error
}

// harness is a scheduler on a real slot pool with fake timers, a fake Deployer and recording
// listeners.
type harness struct {
	t        *testing.T
	s        *DefaultScheduler
	pool     *slotpool.Pool
	timers   *fakeTimers
	deployer *fakeDeployer
	statuses []statusChange
	states   map[jobgraph.ExecutionAttemptID][]jobgraph.ExecutionState
	terminal []terminal
	returned []slotpool.AllocatedSlot
}

func newHarness(t *testing.T, g *jobgraph.JobGraph, cfg Config) *harness {
	t.Helper()
	d := &fakeDeployer{}
	return newHarnessWith(t, g, cfg, d, d)
}

// newHarnessWith is newHarness with deployer as the scheduler's Deployer; fake is the
// fakeDeployer it records deployments in (deployer itself or one it embeds).
func newHarnessWith(t *testing.T, g *jobgraph.JobGraph, cfg Config, deployer Deployer, fake *fakeDeployer) *harness {
	t.Helper()
	h := &harness{t: t, timers: newFakeTimers(), deployer: fake, states: map[jobgraph.ExecutionAttemptID][]jobgraph.ExecutionState{}}
	pool, err := slotpool.New(slotpool.Config{
		Timers:       h.timers,
		Clock:        h.timers.Now,
		OnReturnSlot: func(s slotpool.AllocatedSlot, _ error) { h.returned = append(h.returned, s) },
	})
	require.NoError(t, err)
	h.pool = pool
	cfg.Clock = h.timers.Now
	if cfg.Timers == nil {
		cfg.Timers = h.timers
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.JobStatusListener = func(job jobgraph.JobID, st jobgraph.JobStatus, at time.Time) {
		require.Equal(t, g.JobID, job)
		h.statuses = append(h.statuses, statusChange{st, at})
	}
	cfg.ExecutionStateListener = func(a jobgraph.ExecutionAttemptID, st jobgraph.ExecutionState) {
		h.states[a] = append(h.states[a], st)
	}
	cfg.OnTerminal = func(a *executiongraph.ArchivedExecutionGraph, cause error) {
		h.terminal = append(h.terminal, terminal{a, cause})
	}
	s, err := New(g, FromSlotPool(pool), deployer, cfg)
	require.NoError(t, err)
	h.s = s
	return h
}

// offer offers n UNKNOWN-profile slots of TaskExecutor te (slot indexes from 0) and returns
// how many the pool accepted.
func (h *harness) offer(te jobgraph.ResourceID, n int) int {
	offers := make([]rpc.SlotOffer, n)
	for i := range offers {
		offers[i] = rpc.SlotOffer{AllocationID: jobgraph.NewAllocationID(), SlotIndex: i}
	}
	return len(h.pool.OfferSlots(te, offers))
}

// exec is the current execution of subtask i of the job vertex named name.
func (h *harness) exec(name string, i int) *executiongraph.Execution {
	h.t.Helper()
	for _, jv := range h.s.ExecutionGraph().JobVertices() {
		if jv.Name() == name {
			return jv.Vertex(i).CurrentExecution()
		}
	}
	h.t.Fatalf("no job vertex %q", name)
	return nil
}

// report sends a TaskExecutor report for the current execution of name/i.
func (h *harness) report(name string, i int, st jobgraph.ExecutionState) bool {
	return h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: h.exec(name, i).AttemptID(), State: st})
}

// run reports INITIALIZING and RUNNING for every deployed execution.
func (h *harness) runDeployed() {
	h.t.Helper()
	for v := range h.s.ExecutionGraph().Vertices() {
		e := v.CurrentExecution()
		if e.State() == jobgraph.ExecutionStateDeploying {
			require.True(h.t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: e.AttemptID(), State: jobgraph.ExecutionStateInitializing}))
			require.True(h.t, h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: e.AttemptID(), State: jobgraph.ExecutionStateRunning}))
		}
	}
}

// finish reports RUNNING then FINISHED for the current execution of name/i.
func (h *harness) finish(name string, i int) {
	h.t.Helper()
	require.True(h.t, h.report(name, i, jobgraph.ExecutionStateRunning))
	require.True(h.t, h.report(name, i, jobgraph.ExecutionStateFinished))
}

// fail reports FAILED with err for the current execution of name/i.
func (h *harness) fail(name string, i int, err error) bool {
	return h.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: h.exec(name, i).AttemptID(), State: jobgraph.ExecutionStateFailed, Failure: rpc.Failure(err)})
}

// deployedSince lists "<task name>#<attempt>" of the deployments from the n-th on.
func (h *harness) deployedSince(n int) []string {
	var out []string
	for _, c := range h.deployer.deployed[n:] {
		out = append(out, fmt.Sprintf("%s#%d", c.tdd.TaskName, c.tdd.AttemptNumber))
	}
	return out
}

// statusesSince lists the job statuses entered from the n-th change on, with their instants
// relative to t0.
func (h *harness) statusesSince(n int, t0 time.Time) []string {
	var out []string
	for _, c := range h.statuses[n:] {
		out = append(out, fmt.Sprintf("%s@%v", c.status, c.at.Sub(t0)))
	}
	return out
}

func (h *harness) statusList() []jobgraph.JobStatus {
	var out []jobgraph.JobStatus
	for _, c := range h.statuses {
		out = append(out, c.status)
	}
	return out
}

// countStates counts the current executions per state.
func (h *harness) countStates() map[jobgraph.ExecutionState]int {
	out := map[jobgraph.ExecutionState]int{}
	for v := range h.s.ExecutionGraph().Vertices() {
		out[v.State()]++
	}
	return out
}

// recordingOps is a SchedulerOperations that records each bulk by short vertex names.
type recordingOps struct{ bulks [][]string }

func (r *recordingOps) AllocateSlotsAndDeploy(vertices []*executiongraph.ExecutionVertex) {
	var names []string
	for _, v := range vertices {
		names = append(names, short(v))
	}
	r.bulks = append(r.bulks, names)
}

// scheduledCount is the number of vertices scheduled over all bulks.
func (r *recordingOps) scheduledCount() int {
	n := 0
	for _, b := range r.bulks {
		n += len(b)
	}
	return n
}

// short names a subtask "<job vertex name><subtask>", e.g. "map0".
func short(v *executiongraph.ExecutionVertex) string {
	return fmt.Sprintf("%s%d", v.JobVertex().Name(), v.SubtaskIndex())
}

// finishVertex drives the current execution of v to FINISHED directly on the graph, as a
// strategy test's stand-in for the scheduler.
func finishVertex(t *testing.T, v *executiongraph.ExecutionVertex) {
	t.Helper()
	e := v.CurrentExecution()
	for _, st := range []jobgraph.ExecutionState{jobgraph.ExecutionStateScheduled, jobgraph.ExecutionStateDeploying,
		jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFinished} {
		if e.State() < st {
			require.NoError(t, e.TransitionState(st))
		}
	}
}

// vertexOf is subtask i of the job vertex named name.
func vertexOf(t *testing.T, eg *executiongraph.ExecutionGraph, name string, i int) *executiongraph.ExecutionVertex {
	t.Helper()
	for _, jv := range eg.JobVertices() {
		if jv.Name() == name {
			return jv.Vertex(i)
		}
	}
	t.Fatalf("no job vertex %q", name)
	return nil
}

// threeStage is source(p) –e1→ map(p) –e2→ sink(p), the topology of Flink's strategy tests.
func threeStage(p int, e1Pattern jobgraph.DistributionPattern, e1 jobgraph.ResultPartitionType, e2Pattern jobgraph.DistributionPattern, e2 jobgraph.ResultPartitionType) *jobgraph.JobGraph {
	g := jobgraph.New("three-stage", jobgraph.Batch)
	src := g.AddVertex("source", "noop", p)
	m := g.AddVertex("map", "noop", p)
	sink := g.AddVertex("sink", "noop", p)
	g.Connect(src, m, e1Pattern, e1)
	g.Connect(m, sink, e2Pattern, e2)
	return g
}
