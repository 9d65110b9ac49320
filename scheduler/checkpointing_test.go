package scheduler

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/slotpool"
)

func slotpoolFor(t *testing.T) (*slotpool.Pool, error) {
	t.Helper()
	return slotpool.New(slotpool.Config{Timers: newFakeTimers()})
}

// ckCall is one checkpoint RPC the scheduler asked for: "trigger 1 v1/0#0 @12ms".
type ckCall struct {
	kind    string
	attempt jobgraph.ExecutionAttemptID
	id      checkpoint.CheckpointID
	at      time.Time
	props   checkpoint.CheckpointProperties
}

// ckDeployer is a fakeDeployer that also records the checkpoint RPCs.
type ckDeployer struct {
	fakeDeployer
	calls []ckCall
}

func (d *ckDeployer) TriggerCheckpoint(a jobgraph.ExecutionAttemptID, _ jobgraph.ResourceID, id checkpoint.CheckpointID, ts time.Time, p checkpoint.CheckpointProperties) {
	d.calls = append(d.calls, ckCall{"trigger", a, id, ts, p})
}

func (d *ckDeployer) ConfirmCheckpoint(a jobgraph.ExecutionAttemptID, _ jobgraph.ResourceID, id checkpoint.CheckpointID, ts time.Time) {
	d.calls = append(d.calls, ckCall{"confirm", a, id, ts, checkpoint.CheckpointProperties{}})
}

func (d *ckDeployer) AbortCheckpoint(a jobgraph.ExecutionAttemptID, _ jobgraph.ResourceID, id checkpoint.CheckpointID, ts time.Time) {
	d.calls = append(d.calls, ckCall{"abort", a, id, ts, checkpoint.CheckpointProperties{}})
}

// ckHarness is a harness whose deployer carries checkpoint RPCs.
type ckHarness struct {
	*harness
	ck *ckDeployer
	t0 time.Time
}

func newCkHarness(t *testing.T, g *jobgraph.JobGraph, cfg Config) *ckHarness {
	t.Helper()
	d := &ckDeployer{}
	h := newHarnessWith(t, g, cfg, d, &d.fakeDeployer)
	return &ckHarness{harness: h, ck: d, t0: h.timers.Now()}
}

// name is "<vertex>/<subtask>#<attempt>" of a.
func (h *ckHarness) name(a jobgraph.ExecutionAttemptID) string {
	v := h.s.ExecutionGraph().Vertex(a.ExecutionVertexID)
	return fmt.Sprintf("%s/%d#%d", v.JobVertex().Name(), a.ExecutionVertexID.Subtask, a.AttemptNumber)
}

// callsSince lists the checkpoint RPCs from the n-th on, as "trigger 1 v1/0#0 @12ms".
func (h *ckHarness) callsSince(n int) []string {
	var out []string
	for _, c := range h.ck.calls[n:] {
		out = append(out, fmt.Sprintf("%s %d %s @%v", c.kind, c.id, h.name(c.attempt), c.at.Sub(h.t0)))
	}
	return out
}

// triggers lists "<id>@<offset>" of every trigger RPC, once per checkpoint.
func (h *ckHarness) triggers() []string {
	var out []string
	seen := map[checkpoint.CheckpointID]bool{}
	for _, c := range h.ck.calls {
		if c.kind == "trigger" && !seen[c.id] {
			seen[c.id] = true
			out = append(out, fmt.Sprintf("%d@%v", c.id, c.at.Sub(h.t0)))
		}
	}
	return out
}

func (h *ckHarness) ack(name string, i int, id checkpoint.CheckpointID, state checkpoint.StateHandle) error {
	return h.s.AcknowledgeCheckpoint(checkpoint.AcknowledgeCheckpoint{Attempt: h.exec(name, i).AttemptID(), CheckpointID: id, State: state})
}

func (h *ckHarness) decline(name string, i int, id checkpoint.CheckpointID) error {
	return h.s.DeclineCheckpoint(checkpoint.DeclineCheckpoint{Attempt: h.exec(name, i).AttemptID(), CheckpointID: id})
}

// ackAll acknowledges checkpoint id for every RUNNING task, with state "<vertex>/<subtask>@<id>".
func (h *ckHarness) ackAll(id checkpoint.CheckpointID) {
	h.t.Helper()
	for v := range h.s.ExecutionGraph().Vertices() {
		if v.State() != jobgraph.ExecutionStateRunning {
			continue
		}
		st := checkpoint.StateHandle{Data: fmt.Appendf(nil, "%s/%d@%d", v.JobVertex().Name(), v.SubtaskIndex(), id), Size: 1}
		require.NoError(h.t, h.ack(v.JobVertex().Name(), v.SubtaskIndex(), id, st))
	}
}

// start schedules the job, offers slots on "te-1" and runs every deployed task, at t0.
func (h *ckHarness) start(slots int) {
	h.t.Helper()
	h.s.StartScheduling()
	require.Equal(h.t, slots, h.offer("te-1", slots))
	h.runDeployed()
}

func (h *ckHarness) stats() checkpoint.CheckpointingStatistics {
	st, ok := h.s.CheckpointStatistics()
	require.True(h.t, ok)
	return st
}

// pointwise is v1(2) –POINTWISE PIPELINED→ v2(2), two regions {v1/0, v2/0} and {v1/1, v2/1}.
func pointwise(settings jobgraph.CheckpointingSettings) *jobgraph.JobGraph {
	g := jobgraph.New("pointwise", jobgraph.Streaming)
	v1 := g.AddVertex("v1", "noop", 2)
	v2 := g.AddVertex("v2", "noop", 2)
	g.Connect(v1, v2, jobgraph.Pointwise, jobgraph.Pipelined)
	g.Checkpointing = settings
	g.RestartStrategy = jobgraph.FixedDelayRestart(100, time.Second)
	return g
}

func TestCheckpointPlanTriggersSourcesAndTasksWhoseInputsFinished(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: time.Hour})
	h := newCkHarness(t, g, Config{})
	h.s.StartScheduling()

	_, err := h.s.checkpointPlan()
	require.ErrorContains(t, err, "task v1 (1/2) (attempt 0) is SCHEDULED, not RUNNING")

	require.Equal(t, 2, h.offer("te-1", 2))
	h.runDeployed()
	names := func(as []jobgraph.ExecutionAttemptID) []string {
		var out []string
		for _, a := range as {
			out = append(out, h.name(a))
		}
		return out
	}
	plan, err := h.s.checkpointPlan()
	require.NoError(t, err)
	assert.Equal(t, []string{"v1/0#0", "v1/1#0"}, names(plan.TasksToTrigger))
	assert.Equal(t, []string{"v1/0#0", "v1/1#0", "v2/0#0", "v2/1#0"}, names(plan.TasksToWaitFor))
	assert.Empty(t, plan.FinishedTasks)

	// v1/0 finishes: v2/0, whose only input ended, is triggered directly (FLIP-147); v1/0 is
	// neither triggered nor waited for.
	require.True(t, h.report("v1", 0, jobgraph.ExecutionStateFinished))
	plan, err = h.s.checkpointPlan()
	require.NoError(t, err)
	assert.Equal(t, []string{"v1/1#0", "v2/0#0"}, names(plan.TasksToTrigger))
	assert.Equal(t, []string{"v1/1#0", "v2/0#0", "v2/1#0"}, names(plan.TasksToWaitFor))
	assert.Equal(t, []jobgraph.ExecutionVertexID{h.exec("v1", 0).AttemptID().ExecutionVertexID}, plan.FinishedTasks)

	// A failed task and its canceled region partner fail the plan.
	require.True(t, h.fail("v2", 1, errors.New("boom")))
	_, err = h.s.checkpointPlan()
	require.ErrorContains(t, err, "task v1 (2/2) (attempt 0) is CANCELING, not RUNNING")
}

// The timing scenario: interval 12 ms, min pause 50 ms, max concurrent 1. Checkpoint 1
// triggers 12 ms after the job went RUNNING and completes at 20 ms; the ticks at 24, 36, … fall
// into the pause, so checkpoint 2 triggers exactly 50 ms after checkpoint 1 completed.
func TestPeriodicCheckpointsKeepTheMinPause(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 12 * time.Millisecond, MinPauseBetweenCheckpoints: 50 * time.Millisecond, MaxConcurrentCheckpoints: 1})
	h := newCkHarness(t, g, Config{})
	h.start(2)

	h.timers.Advance(12*time.Millisecond - time.Nanosecond)
	assert.Empty(t, h.ck.calls)
	h.timers.Advance(time.Nanosecond)
	assert.Equal(t, []string{"trigger 1 v1/0#0 @12ms", "trigger 1 v1/1#0 @12ms"}, h.callsSince(0))
	h.timers.Advance(8 * time.Millisecond)
	h.ackAll(1)
	assert.Equal(t, []string{"confirm 1 v1/0#0 @20ms", "confirm 1 v1/1#0 @20ms", "confirm 1 v2/0#0 @20ms", "confirm 1 v2/1#0 @20ms"}, h.callsSince(2))

	h.timers.Advance(50*time.Millisecond - time.Nanosecond)
	assert.Equal(t, []string{"1@12ms"}, h.triggers())
	h.timers.Advance(time.Nanosecond)
	assert.Equal(t, []string{"1@12ms", "2@70ms"}, h.triggers())

	st := h.stats()
	assert.Equal(t, checkpoint.CheckpointCounts{Total: 2, InProgress: 1, Completed: 1}, st.Counts)
	require.NotNil(t, st.Latest.Completed)
	assert.Equal(t, checkpoint.CheckpointID(1), st.Latest.Completed.ID)
	assert.Equal(t, int64(8), st.Latest.Completed.EndToEndDuration)
	assert.Equal(t, int64(4), st.Latest.Completed.StateSize)
}

// Tolerable 2: declined 1, declined 2, 3 aborted by a region failover (not counted), declined 4:
// the job fails over (globally) exactly once, because of 4.
func TestTolerableFailedCheckpointsCountDeclinesNotFailoverAborts(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond, TolerableFailedCheckpoints: 2})
	h := newCkHarness(t, g, Config{})
	h.start(2)

	h.timers.Advance(10 * time.Millisecond)
	require.NoError(t, h.decline("v2", 0, 1))
	h.timers.Advance(10 * time.Millisecond)
	require.NoError(t, h.decline("v1", 1, 2))
	h.timers.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{"1@10ms", "2@20ms", "3@30ms"}, h.triggers())
	require.NoError(t, h.ack("v2", 0, 3, checkpoint.StateHandle{}))

	// v2/0, which acknowledged 3, fails: its region restarts and 3 is aborted by the failover.
	require.True(t, h.fail("v2", 0, errors.New("boom")))
	require.True(t, h.report("v1", 0, jobgraph.ExecutionStateCanceled))
	assert.Equal(t, jobgraph.JobStatusRestarting, h.s.JobStatus())
	assert.Equal(t, 2, h.s.CheckpointCoordinator().FailureManager().ContinuousFailureCount())
	h.timers.Advance(time.Second)
	h.runDeployed()
	require.Equal(t, jobgraph.JobStatusRunning, h.s.JobStatus())
	h.timers.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{"1@10ms", "2@20ms", "3@30ms", "4@1.04s"}, h.triggers())
	require.Len(t, h.s.ExceptionHistory(), 1)

	require.NoError(t, h.decline("v1", 0, 4))
	history := h.s.ExceptionHistory()
	require.Len(t, history, 2)
	assert.Equal(t, "task v2 (1/2) (attempt 0) on te-1 failed: boom", history[0].Message)
	assert.Contains(t, history[1].Message, "exceeded checkpoint tolerable failure threshold")
	assert.Equal(t, "", history[1].TaskName, "a global failover")
	assert.Equal(t, jobgraph.JobStatusRestarting, h.s.JobStatus())

	st := h.stats()
	assert.Equal(t, checkpoint.CheckpointCounts{Total: 4, Failed: 4}, st.Counts)
	var reasons []string
	for _, c := range st.History {
		reasons = append(reasons, fmt.Sprintf("%d %s", c.ID, c.FailureMessage))
	}
	assert.Equal(t, []string{
		"4 checkpoint 4: Checkpoint was declined.",
		"3 checkpoint 3: FailoverRegion is restarting.",
		"2 checkpoint 2: Checkpoint was declined.",
		"1 checkpoint 1: Checkpoint was declined.",
	}, reasons)
}

// v1(2) –POINTWISE→ v2(2): checkpoint 5 acknowledged by 3 of 4 tasks, v2's second subtask fails,
// region failover aborts 5 (failed, not counted) and periodic triggering goes on with 6.
func TestRegionFailoverAbortsThePendingCheckpointAndPeriodicGoesOn(t *testing.T) {
	factory := checkpoint.NewStandaloneCheckpointRecoveryFactory()
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond, MaxConcurrentCheckpoints: 1})
	counter, err := factory.CreateCheckpointIDCounter(g.JobID)
	require.NoError(t, err)
	require.NoError(t, counter.SetCount(5))
	h := newCkHarness(t, g, Config{CheckpointRecoveryFactory: factory})
	h.start(2)

	h.timers.Advance(10 * time.Millisecond)
	require.NoError(t, h.ack("v1", 0, 5, checkpoint.StateHandle{}))
	require.NoError(t, h.ack("v1", 1, 5, checkpoint.StateHandle{}))
	require.NoError(t, h.ack("v2", 1, 5, checkpoint.StateHandle{}))
	p, ok := h.s.CheckpointCoordinator().PendingCheckpoint(5)
	require.True(t, ok)
	assert.Equal(t, 3, p.NumberOfAcknowledgedTasks())

	n := len(h.ck.calls)
	require.True(t, h.fail("v2", 1, errors.New("boom")))
	assert.Equal(t, 0, h.s.CheckpointCoordinator().NumberOfPendingCheckpoints())
	assert.Equal(t, []string{"abort 5 v1/0#0 @10ms", "abort 5 v1/1#0 @10ms", "abort 5 v2/0#0 @10ms", "abort 5 v2/1#0 @10ms"}, h.callsSince(n))
	st := h.stats()
	require.NotNil(t, st.Latest.Failed)
	assert.Equal(t, checkpoint.CheckpointID(5), st.Latest.Failed.ID)
	assert.Equal(t, checkpoint.StatusFailed, st.Latest.Failed.Status)
	assert.Equal(t, "checkpoint 5: FailoverRegion is restarting.", st.Latest.Failed.FailureMessage)
	assert.Equal(t, 0, h.s.CheckpointCoordinator().FailureManager().ContinuousFailureCount())

	require.True(t, h.report("v1", 1, jobgraph.ExecutionStateCanceled))
	h.timers.Advance(time.Second)
	h.runDeployed()
	h.timers.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{"5@10ms", "6@1.02s"}, h.triggers())
	h.ackAll(6)
	st = h.stats()
	assert.Equal(t, checkpoint.CheckpointID(6), st.Latest.Completed.ID)
}

// restores lists "<task>#<attempt> <- <checkpoint> <data>" of the deployments from the n-th on.
func (h *ckHarness) restores(n int) []string {
	var out []string
	for _, c := range h.deployer.deployed[n:] {
		r := "fresh"
		if tr := c.tdd.TaskRestore; tr != nil {
			r = fmt.Sprintf("%d %q", tr.CheckpointID, tr.State.Data)
		}
		assert.True(h.t, c.tdd.CheckpointingEnabled, c.tdd.TaskName)
		out = append(out, fmt.Sprintf("%s#%d <- %s", c.tdd.TaskName, c.tdd.AttemptNumber, r))
	}
	return out
}

// stateOf is a snapshot of g whose every subtask holds "<vertex>/<subtask>@<id>".
func stateOf(g *jobgraph.JobGraph, id checkpoint.CheckpointID, props checkpoint.CheckpointProperties) checkpoint.CompletedCheckpoint {
	cp := checkpoint.CompletedCheckpoint{JobID: g.JobID, CheckpointID: id, Properties: props}
	for _, v := range g.Vertices {
		for i := range v.Parallelism {
			cp.TaskStates = append(cp.TaskStates, checkpoint.SubtaskState{JobVertexID: v.ID, Subtask: i,
				State: checkpoint.StateHandle{Data: fmt.Appendf(nil, "%s/%d@%d", v.Name, i, id), Size: 1}})
		}
	}
	return cp
}

// Checkpoint 1 completed and savepoint 42 configured: the job restores checkpoint 1 and does not
// read the savepoint. Without a checkpoint it restores 42, and its own checkpoints count on from 43.
func TestJobStartRestoresTheLatestCheckpointElseTheSavepoint(t *testing.T) {
	for _, withCheckpoint := range []bool{true, false} {
		t.Run(fmt.Sprint("checkpoint=", withCheckpoint), func(t *testing.T) {
			factory := checkpoint.NewStandaloneCheckpointRecoveryFactory()
			g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
			g.SavepointRestore.Path = "/savepoints/sp-42"
			if withCheckpoint {
				store, err := factory.CreateRecoveredCompletedCheckpointStore(g.JobID, 1)
				require.NoError(t, err)
				_, err = store.Add(stateOf(g, 1, checkpoint.CheckpointPropertiesFor(checkpoint.Checkpoint)))
				require.NoError(t, err)
			}
			var loaded []string
			h := newCkHarness(t, g, Config{CheckpointRecoveryFactory: factory, LoadSavepoint: func(path string) (checkpoint.CompletedCheckpoint, error) {
				loaded = append(loaded, path)
				return stateOf(g, 42, checkpoint.CheckpointPropertiesFor(checkpoint.Savepoint)), nil
			}})
			h.start(2)
			want, next := []string{
				`v1 (1/2)#0 <- 1 "v1/0@1"`, `v2 (1/2)#0 <- 1 "v2/0@1"`, `v1 (2/2)#0 <- 1 "v1/1@1"`, `v2 (2/2)#0 <- 1 "v2/1@1"`,
			}, "2@10ms"
			if !withCheckpoint {
				want, next = []string{
					`v1 (1/2)#0 <- 42 "v1/0@42"`, `v2 (1/2)#0 <- 42 "v2/0@42"`, `v1 (2/2)#0 <- 42 "v1/1@42"`, `v2 (2/2)#0 <- 42 "v2/1@42"`,
				}, "43@10ms"
				assert.Equal(t, []string{"/savepoints/sp-42"}, loaded)
			} else {
				assert.Empty(t, loaded, "a checkpoint takes precedence")
			}
			assert.Equal(t, want, h.restores(0))
			st := h.stats()
			require.NotNil(t, st.Latest.Restored)
			assert.Equal(t, !withCheckpoint, st.Latest.Restored.IsSavepoint)
			assert.Equal(t, int64(1), st.Counts.Restored)
			h.timers.Advance(10 * time.Millisecond)
			assert.Equal(t, []string{next}, h.triggers())
		})
	}
}

// Checkpoints 1–4 completed, the job restarts (a new scheduler over the same factory, as a new
// JobMaster gets it): it restores 4 and its next checkpoint is 5, never a reused ID.
func TestCheckpointIDsAreNeverReusedAcrossARestart(t *testing.T) {
	factory := checkpoint.NewStandaloneCheckpointRecoveryFactory()
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCkHarness(t, g, Config{CheckpointRecoveryFactory: factory})
	h.start(2)
	for id := checkpoint.CheckpointID(1); id <= 4; id++ {
		h.timers.Advance(10 * time.Millisecond)
		h.ackAll(id)
	}
	assert.Equal(t, []string{"1@10ms", "2@20ms", "3@30ms", "4@40ms"}, h.triggers())
	h.s.Suspend(errors.New("leadership lost"))

	again := newCkHarness(t, g, Config{CheckpointRecoveryFactory: factory})
	again.start(2)
	assert.Equal(t, []string{`v1 (1/2)#0 <- 4 "v1/0@4"`, `v2 (1/2)#0 <- 4 "v2/0@4"`, `v1 (2/2)#0 <- 4 "v1/1@4"`, `v2 (2/2)#0 <- 4 "v2/1@4"`}, again.restores(0))
	again.timers.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{"5@10ms"}, again.triggers())
}

// Checkpoint 10 completed, then savepoint 11 completed (its side effects committed: the tasks
// were told), then a task fails: the restarted region restores 11.
func TestRecoveryUsesTheLatestSnapshotEvenASavepoint(t *testing.T) {
	factory := checkpoint.NewStandaloneCheckpointRecoveryFactory()
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond, NumRetained: 2})
	counter, err := factory.CreateCheckpointIDCounter(g.JobID)
	require.NoError(t, err)
	require.NoError(t, counter.SetCount(10))
	h := newCkHarness(t, g, Config{CheckpointRecoveryFactory: factory})
	h.start(2)
	h.timers.Advance(10 * time.Millisecond)
	h.ackAll(10)
	var saved []checkpoint.CheckpointID
	require.NoError(t, h.s.WithCheckpointCoordinator(func(c *checkpoint.CheckpointCoordinator) error {
		return c.TriggerSavepoint(h.s.cfg.JobMasterID, t.TempDir(), 0, func(cp checkpoint.CompletedCheckpoint, err error) {
			require.NoError(t, err)
			saved = append(saved, cp.CheckpointID)
		})
	}))
	n := len(h.ck.calls)
	h.ackAll(11)
	assert.Equal(t, []checkpoint.CheckpointID{11}, saved)
	assert.Equal(t, []string{"confirm 11 v1/0#0 @10ms", "confirm 11 v1/1#0 @10ms", "confirm 11 v2/0#0 @10ms", "confirm 11 v2/1#0 @10ms"}, h.callsSince(n))

	d := len(h.deployer.deployed)
	require.True(t, h.fail("v2", 1, errors.New("boom")))
	require.True(t, h.report("v1", 1, jobgraph.ExecutionStateCanceled))
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{`v1 (2/2)#1 <- 11 "v1/1@11"`, `v2 (2/2)#1 <- 11 "v2/1@11"`}, h.restores(d))
	assert.Equal(t, checkpoint.CheckpointID(11), h.stats().Latest.Restored.ID)
}

// A FINISHED task's state is carried forward from the last completed checkpoint into the next
// ones, so a restore gives it its final state.
func TestFinishedTasksStateIsCarriedForward(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCkHarness(t, g, Config{})
	h.start(2)
	h.timers.Advance(10 * time.Millisecond)
	h.ackAll(1)
	require.True(t, h.report("v1", 0, jobgraph.ExecutionStateFinished))
	h.timers.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{"1@10ms", "2@20ms"}, h.triggers())
	assert.Equal(t, []string{"trigger 2 v1/1#0 @20ms", "trigger 2 v2/0#0 @20ms"}, h.callsSince(len(h.ck.calls)-2))
	h.ackAll(2)
	cp, ok := h.s.CheckpointCoordinator().LatestSnapshot()
	require.True(t, ok)
	var got []string
	for _, s := range cp.TaskStates {
		got = append(got, string(s.State.Data))
	}
	assert.Equal(t, []string{"v1/1@2", "v2/0@2", "v2/1@2", "v1/0@1"}, got)
	assert.Equal(t, int64(4), cp.StateSize)

	// v2/0 fails: its region {v1/0, v2/0} restarts, v1/0 from its final state.
	d := len(h.deployer.deployed)
	require.True(t, h.fail("v2", 0, errors.New("boom")))
	h.timers.Advance(time.Second)
	assert.Equal(t, []string{`v1 (1/2)#1 <- 2 "v1/0@1"`, `v2 (1/2)#1 <- 2 "v2/0@2"`}, h.restores(d))
}

// Acknowledgements and declines of an outdated attempt, of an unknown checkpoint or a duplicate
// are dropped and change nothing; so is a failed trigger RPC of a checkpoint no longer pending.
func TestStaleCheckpointMessagesAreDropped(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCkHarness(t, g, Config{})
	h.start(2)
	old := h.exec("v2", 1).AttemptID()
	require.True(t, h.fail("v2", 1, errors.New("boom")))
	require.True(t, h.report("v1", 1, jobgraph.ExecutionStateCanceled))
	h.timers.Advance(time.Second)
	h.runDeployed()
	h.timers.Advance(10 * time.Millisecond)
	assert.Equal(t, []string{"1@1.01s"}, h.triggers())
	coord := h.s.CheckpointCoordinator()

	err := h.s.AcknowledgeCheckpoint(checkpoint.AcknowledgeCheckpoint{Attempt: old, CheckpointID: 1})
	require.ErrorIs(t, err, checkpoint.ErrUnknownTask)
	err = h.s.DeclineCheckpoint(checkpoint.DeclineCheckpoint{Attempt: old, CheckpointID: 1})
	require.ErrorIs(t, err, checkpoint.ErrUnknownTask)
	require.ErrorIs(t, h.ack("v2", 1, 7, checkpoint.StateHandle{}), checkpoint.ErrUnknownCheckpoint)
	require.NoError(t, h.ack("v2", 1, 1, checkpoint.StateHandle{}))
	require.ErrorIs(t, h.ack("v2", 1, 1, checkpoint.StateHandle{}), checkpoint.ErrDuplicateAcknowledge)
	h.s.OnCheckpointTriggerFailed(old, 1, errors.New("unreachable"))
	p, ok := coord.PendingCheckpoint(1)
	require.True(t, ok)
	assert.Equal(t, 1, p.NumberOfAcknowledgedTasks())
	assert.Equal(t, 3, p.NumberOfNonAcknowledgedTasks())
	assert.Equal(t, 0, coord.FailureManager().ContinuousFailureCount())

	// The current attempt's failed trigger aborts the checkpoint, not counted.
	h.s.OnCheckpointTriggerFailed(h.exec("v1", 0).AttemptID(), 1, errors.New("unreachable"))
	assert.Equal(t, 0, coord.NumberOfPendingCheckpoints())
	assert.Equal(t, "checkpoint 1: Trigger checkpoint failure.: unreachable", h.stats().Latest.Failed.FailureMessage)
	assert.Equal(t, 0, coord.FailureManager().ContinuousFailureCount())
}

// A batch job has no coordinator: its messages are refused, its tasks are deployed without
// checkpointing, and its archive carries no statistics. A streaming job without an interval has
// one (for savepoints), takes no periodic checkpoints, and deploys without checkpointing.
func TestNoCheckpointingWithoutAnInterval(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{})
	g.Type = jobgraph.Batch
	h := newCkHarness(t, g, Config{})
	h.start(2)
	assert.Nil(t, h.s.CheckpointCoordinator())
	require.ErrorIs(t, h.ack("v1", 0, 1, checkpoint.StateHandle{}), ErrCheckpointingDisabled)
	require.ErrorIs(t, h.decline("v1", 0, 1), ErrCheckpointingDisabled)
	_, ok := h.s.CheckpointStatistics()
	assert.False(t, ok)
	assert.Nil(t, h.s.Archive().CheckpointStatistics)
	require.Len(t, h.deployer.deployed, 4)
	for _, c := range h.deployer.deployed {
		assert.False(t, c.tdd.CheckpointingEnabled)
		assert.Nil(t, c.tdd.TaskRestore)
	}

	streaming := newCkHarness(t, pointwise(jobgraph.CheckpointingSettings{}), Config{})
	streaming.start(2)
	coord := streaming.s.CheckpointCoordinator()
	require.NotNil(t, coord)
	assert.False(t, coord.IsPeriodicCheckpointingStarted())
	streaming.timers.Advance(time.Hour)
	assert.Empty(t, streaming.ck.calls)
	require.Len(t, streaming.deployer.deployed, 4)
	for _, c := range streaming.deployer.deployed {
		assert.False(t, c.tdd.CheckpointingEnabled)
	}
	require.NotNil(t, streaming.s.Archive().CheckpointStatistics)
}

// The archive carries the coordinator's statistics, and a globally terminal job shuts its store
// and counter down without discarding anything (no externalized retention, still): the
// Dispatcher's global cleanup discards the checkpoints once the job's dirty JobResult is written,
// and finds them through the factory, with the counter going on.
func TestArchiveCarriesCheckpointStatisticsAndTheEndKeepsCheckpointsForTheCleanup(t *testing.T) {
	factory := checkpoint.NewStandaloneCheckpointRecoveryFactory()
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	h := newCkHarness(t, g, Config{CheckpointRecoveryFactory: factory})
	h.start(2)
	h.timers.Advance(10 * time.Millisecond)
	h.ackAll(1)
	a := h.s.Archive()
	require.NotNil(t, a.CheckpointStatistics)
	assert.Equal(t, checkpoint.CheckpointCounts{Total: 1, Completed: 1}, a.CheckpointStatistics.Counts)
	store, err := factory.CreateRecoveredCompletedCheckpointStore(g.JobID, 1)
	require.NoError(t, err)
	require.Len(t, store.All(), 1)

	h.s.Cancel()
	for _, name := range []string{"v1", "v2"} {
		for i := range 2 {
			require.True(t, h.report(name, i, jobgraph.ExecutionStateCanceled))
		}
	}
	require.Equal(t, jobgraph.JobStatusCanceled, h.s.JobStatus())
	require.Len(t, h.terminal, 1)
	require.NotNil(t, h.terminal[0].archived.CheckpointStatistics)
	assert.Equal(t, int64(1), h.terminal[0].archived.CheckpointStatistics.Counts.Completed)
	require.Len(t, store.All(), 1, "not discarded by the scheduler")
	_, err = store.Add(stateOf(g, 2, checkpoint.CheckpointProperties{}))
	require.ErrorIs(t, err, checkpoint.ErrShutdown, "shut down")
	cleanup, err := factory.CreateRecoveredCompletedCheckpointStore(g.JobID, 1)
	require.NoError(t, err)
	require.Len(t, cleanup.All(), 1, "the cleanup finds checkpoint 1")
	assert.Equal(t, checkpoint.CheckpointID(1), cleanup.All()[0].CheckpointID)
	counter, err := factory.CreateCheckpointIDCounter(g.JobID)
	require.NoError(t, err)
	next, err := counter.Get()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(2), next)
}

// A savepoint of a keyed vertex at parallelism 4 (max parallelism 128) restored at 2: each new
// subtask's TDD carries exactly its key groups. Opaque Data at another parallelism fails New,
// naming the vertex.
func TestRestoreAtAnotherParallelismRedistributesState(t *testing.T) {
	g := jobgraph.New("rescale", jobgraph.Streaming)
	sum := g.AddVertex("sum", "noop", 2)
	sum.MaxParallelism = 128
	g.Checkpointing = jobgraph.CheckpointingSettings{Interval: time.Second}
	g.SavepointRestore.Path = "/savepoints/sp-9"
	sp := checkpoint.CompletedCheckpoint{CheckpointID: 9, Properties: checkpoint.CheckpointPropertiesFor(checkpoint.Savepoint)}
	for i := range 4 {
		r := keygroup.KeyGroupRange{Start: i * 32, End: i*32 + 31}
		k := keygroup.KeyGroupsState[[]byte]{Range: r, Groups: map[int][]byte{}}
		for kg := range r.All() {
			k.Groups[kg] = fmt.Appendf(nil, "%d", kg)
		}
		sp.TaskStates = append(sp.TaskStates, checkpoint.SubtaskState{JobVertexID: sum.ID, Subtask: i, State: checkpoint.StateHandle{KeyedState: &k}})
	}
	load := func(cp checkpoint.CompletedCheckpoint) func(string) (checkpoint.CompletedCheckpoint, error) {
		return func(string) (checkpoint.CompletedCheckpoint, error) { return cp, nil }
	}
	h := newCkHarness(t, g, Config{LoadSavepoint: load(sp)})
	h.start(2)
	require.Len(t, h.deployer.deployed, 2)
	for i, c := range h.deployer.deployed {
		tr := c.tdd.TaskRestore
		require.NotNil(t, tr)
		assert.Equal(t, checkpoint.CheckpointID(9), tr.CheckpointID)
		require.NotNil(t, tr.State.KeyedState)
		assert.Equal(t, keygroup.KeyGroupRange{Start: i * 64, End: i*64 + 63}, tr.State.KeyedState.Range)
		assert.Len(t, tr.State.KeyedState.Groups, 64)
		assert.Equal(t, fmt.Sprint(i*64), string(tr.State.KeyedState.Groups[i*64]))
	}

	opaque := checkpoint.CompletedCheckpoint{CheckpointID: 9, TaskStates: []checkpoint.SubtaskState{
		{JobVertexID: sum.ID, Subtask: 0, State: checkpoint.StateHandle{Data: []byte("x")}},
		{JobVertexID: sum.ID, Subtask: 2, State: checkpoint.StateHandle{Data: []byte("y")}},
	}}
	pool, err := slotpoolFor(t)
	require.NoError(t, err)
	_, err = New(g, FromSlotPool(pool), &ckDeployer{}, Config{Timers: newFakeTimers(), LoadSavepoint: load(opaque)})
	require.ErrorIs(t, err, checkpoint.ErrStateAssignment)
	assert.ErrorContains(t, err, `job vertex "sum"`)
	assert.ErrorContains(t, err, "cannot be redistributed from parallelism 3 to 2")
}

// The same job, clock and events give byte-identical archives with checkpoint statistics too:
// checkpoints completed, declined and aborted by a region failover, twice.
func TestSameCheckpointsGiveTheSameArchive(t *testing.T) {
	run := func() string {
		g := jobgraph.New("pointwise", jobgraph.Streaming)
		g.JobID = jobgraph.JobID(requestID(7))
		v1 := g.AddVertex("v1", "noop", 2)
		v1.ID = jobgraph.JobVertexID(requestID(1))
		v2 := g.AddVertex("v2", "noop", 2)
		v2.ID = jobgraph.JobVertexID(requestID(2))
		g.Connect(v1, v2, jobgraph.Pointwise, jobgraph.Pipelined)
		v1.Results[0].ID = jobgraph.IntermediateDataSetID(requestID(3))
		v2.Inputs[0].Source = v1.Results[0].ID
		g.Checkpointing = jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond, TolerableFailedCheckpoints: 5}
		g.RestartStrategy = jobgraph.FixedDelayRestart(100, time.Second)
		next, _ := counterIDs()
		var graphID jobgraph.ExecutionGraphID
		graphID[15] = 9
		h := newCkHarness(t, g, Config{NewSlotRequestID: next, GraphOptions: []executiongraph.Option{executiongraph.WithExecutionGraphID(graphID)}})
		h.s.StartScheduling()
		offers := []rpc.SlotOffer{
			{AllocationID: jobgraph.AllocationID(requestID(100)), SlotIndex: 0},
			{AllocationID: jobgraph.AllocationID(requestID(101)), SlotIndex: 1},
		}
		require.Len(t, h.pool.OfferSlots("te-1", offers), 2)
		h.runDeployed()
		h.timers.Advance(10 * time.Millisecond)
		h.timers.Advance(3 * time.Millisecond)
		h.ackAll(1)
		h.timers.Advance(7 * time.Millisecond)
		require.NoError(t, h.decline("v2", 1, 2))
		h.timers.Advance(10 * time.Millisecond)
		require.NoError(t, h.ack("v1", 0, 3, checkpoint.StateHandle{Size: 5}))
		require.True(t, h.fail("v2", 0, errors.New("boom")))
		data, err := json.Marshal(h.s.Archive())
		require.NoError(t, err)
		return string(data)
	}
	first, second := run(), run()
	assert.Equal(t, first, second)
	var a executiongraph.ArchivedExecutionGraph
	require.NoError(t, json.Unmarshal([]byte(first), &a))
	require.NotNil(t, a.CheckpointStatistics)
	assert.Equal(t, checkpoint.CheckpointCounts{Total: 3, Completed: 1, Failed: 2}, a.CheckpointStatistics.Counts)
	assert.Contains(t, first, `"checkpointStatistics":{"counts":{"restored":0,"total":3,"in_progress":0,"completed":1,"failed":2}`)
}
