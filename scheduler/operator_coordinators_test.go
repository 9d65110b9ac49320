package scheduler

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/slotpool"
)

// fakeOC is an operator coordinator context logging every call into a shared log; it answers a
// checkpoint inside the call with "<name>@<id>" (or nil when noState).
type fakeOC struct {
	vertex  jobgraph.JobVertexID
	name    string
	log     *[]string
	noState bool
	// failNext, if set, is returned (once) by the next ResetToCheckpoint or SubtaskReset.
	failNext error
}

func (f *fakeOC) logf(format string, args ...any) {
	*f.log = append(*f.log, "oc "+f.name+" "+fmt.Sprintf(format, args...))
}

func (f *fakeOC) takeFailure() error {
	err := f.failNext
	f.failNext = nil
	return err
}

func (f *fakeOC) VertexID() jobgraph.JobVertexID { return f.vertex }
func (f *fakeOC) CheckpointCoordinator(id checkpoint.CheckpointID, result func([]byte, error)) {
	f.logf("checkpoint %d", id)
	if f.noState {
		result(nil, nil)
		return
	}
	result(fmt.Appendf(nil, "%s@%d", f.name, id), nil)
}
func (f *fakeOC) AfterSourceBarrierInjection(id checkpoint.CheckpointID) {
	f.logf("afterBarrier %d", id)
}
func (f *fakeOC) AbortCurrentTriggering()                             { f.logf("abortTriggering") }
func (f *fakeOC) NotifyCheckpointComplete(id checkpoint.CheckpointID) { f.logf("complete %d", id) }
func (f *fakeOC) NotifyCheckpointAborted(id checkpoint.CheckpointID)  { f.logf("aborted %d", id) }
func (f *fakeOC) ResetToCheckpoint(id checkpoint.CheckpointID, state []byte) error {
	if state == nil {
		f.logf("reset %d nil", id)
	} else {
		f.logf("reset %d %q", id, state)
	}
	return f.takeFailure()
}
func (f *fakeOC) SubtaskReset(subtask int, id checkpoint.CheckpointID) error {
	f.logf("subtaskReset %d %d", subtask, id)
	return f.takeFailure()
}

// coordDeployer is a ckDeployer that also logs deployments and triggers into the shared log.
type coordDeployer struct {
	ckDeployer
	log   *[]string
	names map[jobgraph.JobVertexID]string
}

func (d *coordDeployer) Deploy(tdd rpc.TaskDeploymentDescriptor, slot slotpool.AllocatedSlot) {
	*d.log = append(*d.log, fmt.Sprintf("deploy %s#%d", tdd.TaskName, tdd.AttemptNumber))
	d.ckDeployer.Deploy(tdd, slot)
}

func (d *coordDeployer) TriggerCheckpoint(a jobgraph.ExecutionAttemptID, loc jobgraph.ResourceID, id checkpoint.CheckpointID, ts time.Time, p checkpoint.CheckpointProperties) {
	v := a.ExecutionVertexID
	*d.log = append(*d.log, fmt.Sprintf("trigger %d %s/%d#%d", id, d.names[v.JobVertexID], v.Subtask, a.AttemptNumber))
	d.ckDeployer.TriggerCheckpoint(a, loc, id, ts, p)
}

// coordHarness is a ckHarness over g whose vertices named in coordinated have a fakeOC each
// (in that order in Config.OperatorCoordinators), all logging into log.
type coordHarness struct {
	*ckHarness
	log []string
	ocs map[string]*fakeOC
}

func newCoordHarness(t *testing.T, g *jobgraph.JobGraph, cfg Config, coordinated ...string) *coordHarness {
	t.Helper()
	ch := &coordHarness{ocs: map[string]*fakeOC{}}
	d := &coordDeployer{log: &ch.log, names: map[jobgraph.JobVertexID]string{}}
	byName := map[string]jobgraph.JobVertexID{}
	for _, v := range g.Vertices {
		d.names[v.ID] = v.Name
		byName[v.Name] = v.ID
	}
	for _, n := range coordinated {
		oc := &fakeOC{vertex: byName[n], name: n, log: &ch.log}
		ch.ocs[n] = oc
		cfg.OperatorCoordinators = append(cfg.OperatorCoordinators, oc)
	}
	h := newHarnessWith(t, g, cfg, d, &d.fakeDeployer)
	ch.ckHarness = &ckHarness{harness: h, ck: &d.ckDeployer, t0: h.timers.Now()}
	return ch
}

// takeLog returns the log so far and empties it.
func (h *coordHarness) takeLog() []string {
	l := h.log
	h.log = nil
	return l
}

// cancelAll reports CANCELED for every execution being canceled.
func (h *coordHarness) cancelAll() {
	h.t.Helper()
	for v := range h.s.ExecutionGraph().Vertices() {
		if v.State() == jobgraph.ExecutionStateCanceling {
			require.True(h.t, h.report(v.JobVertex().Name(), v.SubtaskIndex(), jobgraph.ExecutionStateCanceled))
		}
	}
}

// The scheduler hands its coordinators to the CheckpointCoordinator: a periodic checkpoint asks
// them before triggering the sources, their states land in the stored checkpoint, and they hear
// of the completion after the tasks.
func TestSchedulerCheckpointsItsOperatorCoordinators(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCoordHarness(t, g, Config{}, "v1", "v2")
	h.ocs["v2"].noState = true
	h.start(2)
	h.takeLog()
	h.timers.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{
		"oc v1 checkpoint 1", "oc v2 checkpoint 1",
		"trigger 1 v1/0#0", "trigger 1 v1/1#0",
		"oc v1 afterBarrier 1", "oc v2 afterBarrier 1",
	}, h.takeLog())
	h.ackAll(1)
	assert.Equal(t, []string{"oc v1 complete 1", "oc v2 complete 1"}, h.takeLog())
	cp, ok := h.s.CheckpointCoordinator().LatestSnapshot()
	require.True(t, ok)
	assert.Equal(t, []checkpoint.CoordinatorState{{JobVertexID: g.Vertices[0].ID, State: []byte("v1@1")}}, cp.CoordinatorStates)
}

// A global failover after checkpoint 1: once every task is canceled and the backoff elapsed,
// each coordinator is reset to checkpoint 1 with its state there (v2 had none: nil), after the
// tasks' state was assigned and before any restarted task is deployed. No SubtaskReset.
func TestGlobalRestartResetsEveryCoordinatorToTheLatestCheckpoint(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCoordHarness(t, g, Config{}, "v1", "v2")
	h.ocs["v2"].noState = true
	h.start(2)
	h.timers.Advance(10 * time.Millisecond)
	h.ackAll(1)
	h.takeLog()

	h.s.HandleGlobalFailure(errors.New("global boom"))
	h.cancelAll()
	assert.Empty(t, h.takeLog(), "nothing before the backoff elapsed")
	d := len(h.deployer.deployed)
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{
		`oc v1 reset 1 "v1@1"`, "oc v2 reset 1 nil",
		"deploy v1 (1/2)#1", "deploy v2 (1/2)#1", "deploy v1 (2/2)#1", "deploy v2 (2/2)#1",
	}, h.takeLog())
	assert.Equal(t, []string{`v1 (1/2)#1 <- 1 "v1/0@1"`, `v2 (1/2)#1 <- 1 "v2/0@1"`, `v1 (2/2)#1 <- 1 "v1/1@1"`, `v2 (2/2)#1 <- 1 "v2/1@1"`}, h.restores(d))
}

// A region failover of v2/1 before any checkpoint: only subtask 1 of each coordinated vertex is
// reset, to NoCheckpoint; after checkpoint 1 the next one resets subtask 1 to 1. Never a global
// reset. The resets come after the tasks' state was assigned, before their deployment.
func TestRegionRestartResetsOnlyTheRestartedSubtasks(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCoordHarness(t, g, Config{}, "v1", "v2")
	h.start(2)
	h.takeLog()

	require.True(t, h.fail("v2", 1, errors.New("boom")))
	require.True(t, h.report("v1", 1, jobgraph.ExecutionStateCanceled))
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{
		"oc v1 subtaskReset 1 -1", "oc v2 subtaskReset 1 -1",
		"deploy v1 (2/2)#1", "deploy v2 (2/2)#1",
	}, h.takeLog())
	h.runDeployed()

	h.timers.Advance(10 * time.Millisecond)
	h.ackAll(1)
	h.takeLog()
	d := len(h.deployer.deployed)
	require.True(t, h.fail("v1", 1, errors.New("boom again")))
	require.True(t, h.report("v2", 1, jobgraph.ExecutionStateCanceled))
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{
		"oc v1 subtaskReset 1 1", "oc v2 subtaskReset 1 1",
		"deploy v1 (2/2)#2", "deploy v2 (2/2)#2",
	}, h.takeLog())
	assert.Equal(t, []string{`v1 (2/2)#2 <- 1 "v1/1@1"`, `v2 (2/2)#2 <- 1 "v2/1@1"`}, h.restores(d))
}

// Only the coordinated vertex's subtask is reset: v1 has no coordinator.
func TestRegionRestartResetsOnlyCoordinatedVertices(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCoordHarness(t, g, Config{}, "v2")
	h.start(2)
	h.takeLog()
	require.True(t, h.fail("v1", 0, errors.New("boom")))
	require.True(t, h.report("v2", 0, jobgraph.ExecutionStateCanceled))
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{"oc v2 subtaskReset 0 -1", "deploy v1 (1/2)#1", "deploy v2 (1/2)#1"}, h.takeLog())
}

// A batch job without checkpointing (no CheckpointCoordinator): a region restart resets the
// subtask to NoCheckpoint, a global one every coordinator to (NoCheckpoint, nil).
func TestCoordinatorsOfAJobWithoutCheckpointing(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{})
	g.Type = jobgraph.Batch
	h := newCoordHarness(t, g, Config{}, "v1", "v2")
	h.start(2)
	require.Nil(t, h.s.CheckpointCoordinator())
	assert.Equal(t, []string{"deploy v1 (1/2)#0", "deploy v2 (1/2)#0", "deploy v1 (2/2)#0", "deploy v2 (2/2)#0"}, h.takeLog(), "no reset at the start")

	require.True(t, h.fail("v2", 0, errors.New("boom")))
	require.True(t, h.report("v1", 0, jobgraph.ExecutionStateCanceled))
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{"oc v1 subtaskReset 0 -1", "oc v2 subtaskReset 0 -1", "deploy v1 (1/2)#1", "deploy v2 (1/2)#1"}, h.takeLog())
	h.runDeployed()

	h.s.HandleGlobalFailure(errors.New("global boom"))
	h.cancelAll()
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{
		"oc v1 reset -1 nil", "oc v2 reset -1 nil",
		"deploy v1 (1/2)#2", "deploy v2 (1/2)#2", "deploy v1 (2/2)#1", "deploy v2 (2/2)#1",
	}, h.takeLog())
}

// A streaming job restarting before its first checkpoint globally resets to NoCheckpoint too.
func TestGlobalRestartWithoutASnapshotResetsToNoCheckpoint(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCoordHarness(t, g, Config{}, "v1")
	h.start(2)
	h.takeLog()
	h.s.HandleGlobalFailure(errors.New("global boom"))
	h.cancelAll()
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{"oc v1 reset -1 nil", "deploy v1 (1/2)#1", "deploy v2 (1/2)#1", "deploy v1 (2/2)#1", "deploy v2 (2/2)#1"}, h.takeLog())
}

// savepointWithCoordinators is stateOf(g, id) as a savepoint whose coordinator states are states.
func savepointWithCoordinators(g *jobgraph.JobGraph, id checkpoint.CheckpointID, states ...checkpoint.CoordinatorState) checkpoint.CompletedCheckpoint {
	cp := stateOf(g, id, checkpoint.CheckpointPropertiesFor(checkpoint.Savepoint))
	cp.CoordinatorStates = states
	return cp
}

// The initial restore from the savepoint of execution.savepoint.path resets every coordinator to
// it inside New (before anything is scheduled, so before the JobMaster starts them), each with
// its state there (nil for v2, which has none). From the store's latest checkpoint likewise; a
// job starting from nothing resets none.
func TestInitialRestoreResetsTheCoordinatorsBeforeScheduling(t *testing.T) {
	t.Run("savepoint", func(t *testing.T) {
		g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
		g.SavepointRestore.Path = "/savepoints/sp-42"
		sp := savepointWithCoordinators(g, 42, checkpoint.CoordinatorState{JobVertexID: g.Vertices[0].ID, State: []byte("splits-left")})
		h := newCoordHarness(t, g, Config{LoadSavepoint: func(string) (checkpoint.CompletedCheckpoint, error) { return sp, nil }}, "v1", "v2")
		assert.Equal(t, []string{`oc v1 reset 42 "splits-left"`, "oc v2 reset 42 nil"}, h.takeLog())
		h.start(2)
		assert.Equal(t, []string{"deploy v1 (1/2)#0", "deploy v2 (1/2)#0", "deploy v1 (2/2)#0", "deploy v2 (2/2)#0"}, h.takeLog())
		// A failover later falls back to the savepoint the job started from.
		h.s.HandleGlobalFailure(errors.New("global boom"))
		h.cancelAll()
		h.timers.Advance(time.Second)
		assert.Equal(t, []string{`oc v1 reset 42 "splits-left"`, "oc v2 reset 42 nil"}, h.takeLog()[:2])
	})
	t.Run("latest checkpoint", func(t *testing.T) {
		factory := checkpoint.NewStandaloneCheckpointRecoveryFactory()
		g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
		store, err := factory.CreateRecoveredCompletedCheckpointStore(g.JobID, 1)
		require.NoError(t, err)
		cp := stateOf(g, 7, checkpoint.CheckpointPropertiesFor(checkpoint.Checkpoint))
		cp.CoordinatorStates = []checkpoint.CoordinatorState{{JobVertexID: g.Vertices[1].ID, State: []byte("v2@7")}}
		_, err = store.Add(cp)
		require.NoError(t, err)
		h := newCoordHarness(t, g, Config{CheckpointRecoveryFactory: factory}, "v1", "v2")
		assert.Equal(t, []string{"oc v1 reset 7 nil", `oc v2 reset 7 "v2@7"`}, h.takeLog())
	})
	t.Run("nothing", func(t *testing.T) {
		h := newCoordHarness(t, pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond}), Config{}, "v1", "v2")
		assert.Empty(t, h.takeLog())
	})
}

// Coordinator state the job cannot take — of a vertex it does not have, or of a vertex without a
// coordinator — is non-restored state: New refuses it naming the vertex, unless
// AllowNonRestoredState, which drops it and resets the coordinators with the rest.
func TestCoordinatorStateThatCannotBeRestored(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	gone := jobgraph.NewJobVertexID()
	g.SavepointRestore.Path = "/savepoints/sp-42"
	newWith := func(allow bool, states ...checkpoint.CoordinatorState) ([]string, error) {
		g.SavepointRestore.AllowNonRestoredState = allow
		var log []string
		oc := &fakeOC{vertex: g.Vertices[0].ID, name: "v1", log: &log}
		pool, err := slotpoolFor(t)
		require.NoError(t, err)
		_, err = New(g, FromSlotPool(pool), &fakeDeployer{}, Config{Timers: newFakeTimers(), Logger: slog.New(slog.DiscardHandler),
			OperatorCoordinators: []checkpoint.OperatorCoordinatorCheckpointContext{oc},
			LoadSavepoint: func(string) (checkpoint.CompletedCheckpoint, error) {
				return savepointWithCoordinators(g, 42, states...), nil
			}})
		return log, err
	}
	mine := checkpoint.CoordinatorState{JobVertexID: g.Vertices[0].ID, State: []byte("mine")}

	log, err := newWith(false, mine, checkpoint.CoordinatorState{JobVertexID: gone, State: []byte("x")})
	require.ErrorIs(t, err, checkpoint.ErrStateAssignment)
	assert.ErrorContains(t, err, fmt.Sprintf("snapshot 42 has operator coordinator state of job vertex %s, which the job does not have", gone))
	assert.Empty(t, log, "no coordinator is reset")

	log, err = newWith(false, mine, checkpoint.CoordinatorState{JobVertexID: g.Vertices[1].ID, State: []byte("v2's")})
	require.ErrorIs(t, err, checkpoint.ErrStateAssignment)
	assert.ErrorContains(t, err, fmt.Sprintf("snapshot 42 has operator coordinator state of job vertex %s, which has no operator coordinator", g.Vertices[1].ID))
	assert.Empty(t, log)

	log, err = newWith(true, mine, checkpoint.CoordinatorState{JobVertexID: gone, State: []byte("x")}, checkpoint.CoordinatorState{JobVertexID: g.Vertices[1].ID, State: []byte("v2's")})
	require.NoError(t, err)
	assert.Equal(t, []string{`oc v1 reset 42 "mine"`}, log)
}

// Config.OperatorCoordinators is checked against the graph.
func TestOperatorCoordinatorsConfigIsChecked(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	var log []string
	newWith := func(ocs ...checkpoint.OperatorCoordinatorCheckpointContext) error {
		pool, err := slotpoolFor(t)
		require.NoError(t, err)
		_, err = New(g, FromSlotPool(pool), &fakeDeployer{}, Config{Timers: newFakeTimers(), Logger: slog.New(slog.DiscardHandler), OperatorCoordinators: ocs})
		return err
	}
	v1 := &fakeOC{vertex: g.Vertices[0].ID, name: "v1", log: &log}
	gone := jobgraph.NewJobVertexID()
	assert.ErrorContains(t, newWith(v1, &fakeOC{vertex: gone, log: &log}),
		fmt.Sprintf("Config.OperatorCoordinators[1] belongs to vertex %s, which the job does not have", gone))
	assert.ErrorContains(t, newWith(v1, &fakeOC{vertex: g.Vertices[0].ID, log: &log}),
		fmt.Sprintf("Config.OperatorCoordinators has two operator coordinators of vertex %s", g.Vertices[0].ID))
	assert.ErrorContains(t, newWith(nil), "Config.OperatorCoordinators[0] is nil")
	require.NoError(t, newWith(v1))
}

// A coordinator that cannot be reset on a region restart fails the job over globally: the
// restarted subtasks are not scheduled; after the global backoff every coordinator is reset.
func TestCoordinatorResetFailureIsAGlobalFailover(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCoordHarness(t, g, Config{}, "v1")
	h.start(2)
	h.takeLog()
	h.ocs["v1"].failNext = errors.New("cannot give back the splits")
	require.True(t, h.fail("v2", 1, errors.New("boom")))
	require.True(t, h.report("v1", 1, jobgraph.ExecutionStateCanceled))
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{"oc v1 subtaskReset 1 -1"}, h.takeLog(), "the restarted subtasks are not deployed")
	h.cancelAll()
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{"oc v1 reset -1 nil", "deploy v1 (1/2)#1", "deploy v2 (1/2)#1", "deploy v1 (2/2)#2", "deploy v2 (2/2)#2"}, h.takeLog())
	hist := h.s.ExceptionHistory()
	require.NotEmpty(t, hist)
	assert.Contains(t, hist[len(hist)-1].Message, "resetting subtask 1 of the operator coordinator of vertex "+g.Vertices[0].ID.String()+" to checkpoint -1: cannot give back the splits")
}

// keepingOC keeps the result function, to deliver it later, from outside any scheduler call
// (as a coordination.Holder does, from the JobMaster's loop).
type keepingOC struct {
	fakeOC
	result func([]byte, error)
}

func (k *keepingOC) CheckpointCoordinator(id checkpoint.CheckpointID, result func([]byte, error)) {
	k.logf("checkpoint %d", id)
	k.result = result
}

// A coordinator's result that arrives later, from outside any scheduler call, is delivered as a
// scheduler entry of its own, so what it causes (tasks triggered, a checkpoint completed, a
// FailJob of the CheckpointCoordinator) is carried out when it leaves.
func TestLateCoordinatorResultIsASchedulerEntry(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCoordHarness(t, g, Config{})
	k := &keepingOC{fakeOC: fakeOC{vertex: g.Vertices[0].ID, name: "v1", log: &h.log}}
	ocs := (&operatorCoordinators{all: []checkpoint.OperatorCoordinatorCheckpointContext{k}}).forCheckpointing(h.s)
	require.Len(t, ocs, 1)
	var depths []int
	ocs[0].CheckpointCoordinator(3, func([]byte, error) { depths = append(depths, h.s.depth) })
	require.NotNil(t, k.result)
	assert.Equal(t, 0, h.s.depth)
	k.result([]byte("x"), nil)
	assert.Equal(t, []int{1}, depths, "the result runs inside enter/leave")
	assert.Equal(t, 0, h.s.depth)
}
