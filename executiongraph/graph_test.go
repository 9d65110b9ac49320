package executiongraph

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

// runToState drives e from CREATED to the given state through the normal path.
func runToState(t *testing.T, e *Execution, target jobgraph.ExecutionState) {
	t.Helper()
	path := []jobgraph.ExecutionState{
		jobgraph.ExecutionStateCreated, jobgraph.ExecutionStateScheduled, jobgraph.ExecutionStateDeploying,
		jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFinished,
	}
	from, to := slices.Index(path, e.State()), slices.Index(path, target)
	require.True(t, from >= 0 && from <= to, "cannot run %s from %s to %s", e, e.State(), target)
	for _, s := range path[from+1 : to+1] {
		require.NoError(t, e.TransitionState(s))
	}
}

func TestBuildInvalidGraph(t *testing.T) {
	g := jobgraph.New("invalid", jobgraph.Streaming)
	g.AddVertex("bad", "noop", 0)
	want := g.Validate()
	require.Error(t, want)

	eg, err := Build(g)
	require.Nil(t, eg)
	require.Equal(t, want, err)
	var ve *jobgraph.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, jobgraph.RuleParallelism, ve.Rule)
	assert.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph)
	assert.EqualError(t, err, `invalid job graph: parallelism: vertex "bad" (`+g.Vertices[0].ID.String()+`): parallelism 0 is below 1`)

	eg, err = Build(nil)
	require.Nil(t, eg)
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, jobgraph.RuleNilGraph, ve.Rule)
	assert.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph)
	assert.EqualError(t, err, "invalid job graph: nil-graph: the job graph is nil")
}

// A long vertex name is cut in the task name every message uses; the job vertex keeps it whole.
func TestTaskNamesOfLongVertexNames(t *testing.T) {
	long := strings.Repeat("v", 1000)
	g := jobgraph.New("long", jobgraph.Batch)
	g.AddVertex(long, "noop", 2)
	eg := build(t, g)
	jv := eg.JobVertices()[0]
	assert.Equal(t, long, jv.Name())
	assert.Equal(t, strings.Repeat("v", 64)+"…(1000 bytes) (2/2)", jv.Vertex(1).Name())
	e := jv.Vertex(0).CurrentExecution()
	assert.Equal(t, strings.Repeat("v", 64)+"…(1000 bytes) (1/2) attempt #0 ("+e.AttemptID().String()+")", e.String())
}

func TestBuildShape(t *testing.T) {
	g := jobgraph.New("shape", jobgraph.Batch)
	sink := g.AddVertex("sink", "noop", 3)
	src := g.AddVertex("src", "noop", 4).WithMaxParallelism(64)
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Blocking)
	id := jobgraph.NewExecutionGraphID()
	eg := build(t, g, WithExecutionGraphID(id))

	assert.Equal(t, id, eg.ID())
	assert.Equal(t, g.JobID, eg.JobID())
	assert.Equal(t, "shape", eg.JobName())
	assert.Equal(t, jobgraph.Batch, eg.JobType())
	assert.Same(t, g, eg.JobGraph())
	assert.Equal(t, jobgraph.JobStatusCreated, eg.State())
	require.Len(t, eg.JobVertices(), 2)
	// Topological order: src before sink although sink was added first.
	assert.Equal(t, "src", eg.JobVertices()[0].Name())
	assert.Equal(t, "sink", eg.JobVertices()[1].Name())
	assert.Equal(t, 0, eg.JobVertices()[0].TopologicalIndex())
	assert.Equal(t, 1, eg.JobVertices()[1].TopologicalIndex())
	assert.Equal(t, 7, eg.NumVertices())
	assert.Equal(t, 7, eg.Topology().NumVertices())

	s := eg.JobVertex(src.ID)
	assert.Same(t, src, s.JobVertex())
	assert.Same(t, eg, s.Graph())
	assert.Equal(t, 4, s.Parallelism())
	assert.Equal(t, 64, s.MaxParallelism())
	assert.Equal(t, 128, eg.JobVertex(sink.ID).MaxParallelism())
	assert.Equal(t, "src (2/4)", s.Vertex(1).Name())
	assert.Equal(t, "sink (3/3)", eg.JobVertex(sink.ID).Vertex(2).String())
	assert.Same(t, eg.Result(src.Results[0].ID), s.ProducedResults()[0])
	assert.Equal(t, 0, s.ProducedResults()[0].OutputIndex())
	assert.Same(t, s, s.ProducedResults()[0].Producer())
	assert.Equal(t, eg.Results(), s.ProducedResults())

	var names []string
	for v := range eg.Vertices() {
		assert.Equal(t, len(names), v.Index())
		names = append(names, short(v))
	}
	assert.Equal(t, []string{"src0", "src1", "src2", "src3", "sink0", "sink1", "sink2"}, names)
	names = names[:0]
	for v := range eg.Topology().Vertices() {
		names = append(names, short(v))
	}
	assert.Len(t, names, 7)

	vid := jobgraph.ExecutionVertexID{JobVertexID: sink.ID, Subtask: 2}
	assert.Same(t, eg.JobVertex(sink.ID).Vertex(2), eg.Vertex(vid))
	assert.Same(t, eg.Vertex(vid), eg.Topology().Vertex(vid))
	assert.Equal(t, vid, eg.Vertex(vid).ID())
	assert.Nil(t, eg.Vertex(jobgraph.ExecutionVertexID{JobVertexID: sink.ID, Subtask: 3}))
	assert.Nil(t, eg.Vertex(jobgraph.ExecutionVertexID{JobVertexID: sink.ID, Subtask: -1}))
	assert.Nil(t, eg.Vertex(jobgraph.ExecutionVertexID{JobVertexID: jobgraph.NewJobVertexID()}))
	assert.Nil(t, eg.JobVertex(jobgraph.NewJobVertexID()))
	assert.Nil(t, eg.RegionOf(jobgraph.ExecutionVertexID{JobVertexID: jobgraph.NewJobVertexID()}))
	assert.Equal(t, eg.Regions(), eg.Topology().Regions())
	assert.Equal(t, eg.JobVertices(), eg.Topology().JobVertices())
}

func TestJobTransitions(t *testing.T) {
	g := jobgraph.New("job", jobgraph.Streaming)
	g.AddVertex("v", "noop", 1)
	clk := newManualClock()
	created := clk.Now()
	eg := build(t, g, WithClock(clk.Now))

	assert.Equal(t, created, eg.StatusTimestamp(jobgraph.JobStatusCreated))
	assert.True(t, eg.StatusTimestamp(jobgraph.JobStatusRunning).IsZero())

	// Illegal by the table.
	err := eg.TransitionState(jobgraph.JobStatusCreated, jobgraph.JobStatusFinished)
	require.ErrorIs(t, err, ErrIllegalTransition)
	assert.ErrorContains(t, err, `job "job" (`+g.JobID.String()+`): illegal state transition from CREATED to FINISHED`)
	// Current status is not from.
	err = eg.TransitionState(jobgraph.JobStatusRunning, jobgraph.JobStatusFinished)
	require.ErrorIs(t, err, ErrIllegalTransition)
	assert.ErrorContains(t, err, "cannot go from RUNNING to FINISHED: the job is CREATED")
	assert.Equal(t, jobgraph.JobStatusCreated, eg.State())

	clk.Advance(time.Second)
	require.NoError(t, eg.TransitionState(jobgraph.JobStatusCreated, jobgraph.JobStatusRunning))
	assert.Equal(t, jobgraph.JobStatusRunning, eg.State())
	assert.Equal(t, created.Add(time.Second), eg.StatusTimestamp(jobgraph.JobStatusRunning))

	clk.Advance(time.Second)
	require.NoError(t, eg.TransitionState(jobgraph.JobStatusRunning, jobgraph.JobStatusFailing))
	eg.SetFailureCause(errors.New("boom"))
	clk.Advance(time.Second)
	require.NoError(t, eg.TransitionState(jobgraph.JobStatusFailing, jobgraph.JobStatusFailed))
	assert.Equal(t, created.Add(3*time.Second), eg.StatusTimestamp(jobgraph.JobStatusFailed))
	assert.EqualError(t, eg.FailureCause(), "boom")
	assert.Equal(t, &jobgraph.ErrorInfo{Message: "boom", Timestamp: created.Add(2 * time.Second)}, eg.FailureInfo())

	// Terminal: no way out.
	err = eg.TransitionState(jobgraph.JobStatusFailed, jobgraph.JobStatusRunning)
	assert.ErrorContains(t, err, "illegal state transition from FAILED to RUNNING")
	assert.True(t, eg.StatusTimestamp(jobgraph.JobStatus(200)).IsZero())

	eg.SetFailureCause(nil)
	assert.Nil(t, eg.FailureCause())
	assert.Nil(t, eg.FailureInfo())
}

func TestExecutionTransitions(t *testing.T) {
	g := jobgraph.New("job", jobgraph.Streaming)
	g.AddVertex("map", "noop", 4)
	clk := newManualClock()
	start := clk.Now()
	eg := build(t, g, WithClock(clk.Now))
	v := eg.JobVertices()[0].Vertex(1)
	e := v.CurrentExecution()

	assert.Equal(t, jobgraph.ExecutionStateCreated, e.State())
	assert.Equal(t, start, e.StateTimestamp(jobgraph.ExecutionStateCreated))
	assert.True(t, e.StateTimestamp(jobgraph.ExecutionStateRunning).IsZero())
	assert.True(t, e.StateTimestamp(jobgraph.ExecutionState(99)).IsZero())

	// CREATED → RUNNING skips SCHEDULED, DEPLOYING, INITIALIZING.
	err := e.TransitionState(jobgraph.ExecutionStateRunning)
	require.ErrorIs(t, err, ErrIllegalTransition)
	assert.ErrorContains(t, err, "execution map (2/4) attempt #0 ("+e.AttemptID().String()+"): illegal state transition from CREATED to RUNNING")
	// CREATED → DEPLOYING: jobgraph is stricter than Flink here.
	assert.ErrorContains(t, e.TransitionState(jobgraph.ExecutionStateDeploying), "from CREATED to DEPLOYING")
	assert.ErrorContains(t, e.MarkFinished(), "from CREATED to FINISHED")
	assert.Equal(t, jobgraph.ExecutionStateCreated, e.State())

	steps := []jobgraph.ExecutionState{
		jobgraph.ExecutionStateScheduled, jobgraph.ExecutionStateDeploying,
		jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning,
	}
	for i, s := range steps {
		clk.Advance(time.Second)
		require.NoError(t, e.TransitionState(s))
		assert.Equal(t, s, e.State())
		assert.Equal(t, start.Add(time.Duration(i+1)*time.Second), e.StateTimestamp(s))
	}
	clk.Advance(time.Second)
	require.NoError(t, e.MarkFinished())
	assert.Equal(t, start.Add(5*time.Second), e.StateTimestamp(jobgraph.ExecutionStateFinished))
	// Terminal: FINISHED → FAILED is refused, and the failure is not recorded.
	err = e.MarkFailed(errors.New("late"))
	assert.ErrorContains(t, err, "illegal state transition from FINISHED to FAILED")
	assert.Nil(t, e.FailureCause())
	assert.Nil(t, e.FailureInfo())
	assert.ErrorContains(t, e.TransitionState(jobgraph.ExecutionStateFinished), "from FINISHED to FINISHED")

	// Another subtask fails while running.
	f := eg.JobVertices()[0].Vertex(2).CurrentExecution()
	runToState(t, f, jobgraph.ExecutionStateRunning)
	clk.Advance(time.Second)
	require.NoError(t, f.MarkFailed(errors.New("disk full")))
	assert.Equal(t, jobgraph.ExecutionStateFailed, f.State())
	assert.EqualError(t, f.FailureCause(), "disk full")
	assert.Equal(t, &jobgraph.ErrorInfo{Message: "disk full", Timestamp: start.Add(6 * time.Second)}, f.FailureInfo())

	// RECONCILING is only ever entered from nowhere (a new JobMaster finds the task running).
	assert.ErrorContains(t, eg.JobVertices()[0].Vertex(3).CurrentExecution().TransitionState(jobgraph.ExecutionStateReconciling),
		"from CREATED to RECONCILING")
}

func TestCancel(t *testing.T) {
	g := jobgraph.New("job", jobgraph.Streaming)
	g.AddVertex("v", "noop", 6)
	eg := build(t, g)
	jv := eg.JobVertices()[0]
	for i, tc := range []struct {
		from, after jobgraph.ExecutionState
	}{
		{jobgraph.ExecutionStateCreated, jobgraph.ExecutionStateCanceled},
		{jobgraph.ExecutionStateScheduled, jobgraph.ExecutionStateCanceled},
		{jobgraph.ExecutionStateDeploying, jobgraph.ExecutionStateCanceling},
		{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateCanceling},
		{jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateCanceling},
		{jobgraph.ExecutionStateFinished, jobgraph.ExecutionStateFinished},
	} {
		e := jv.Vertex(i).CurrentExecution()
		runToState(t, e, tc.from)
		assert.Equal(t, tc.after, e.Cancel(), "cancel from %s", tc.from)
		assert.Equal(t, tc.after, e.State())
	}
	// CANCELING stays CANCELING until the task reports CANCELED.
	e := jv.Vertex(2).CurrentExecution()
	assert.Equal(t, jobgraph.ExecutionStateCanceling, e.Cancel())
	require.NoError(t, e.TransitionState(jobgraph.ExecutionStateCanceled))
	assert.Equal(t, jobgraph.ExecutionStateCanceled, e.Cancel())
	assert.Equal(t, 3, jv.StateCount(jobgraph.ExecutionStateCanceled))
	assert.Equal(t, 2, jv.StateCount(jobgraph.ExecutionStateCanceling))
	assert.Equal(t, 1, jv.StateCount(jobgraph.ExecutionStateFinished))
	assert.Equal(t, jobgraph.ExecutionStateCanceling, jv.AggregateState())
}

func TestCountersAndAggregateState(t *testing.T) {
	g := jobgraph.New("job", jobgraph.Batch)
	vs := vertices(g, 2, 3)
	g.Connect(vs[0], vs[1], jobgraph.AllToAll, jobgraph.Blocking)
	eg := build(t, g)
	a, b := eg.JobVertex(vs[0].ID), eg.JobVertex(vs[1].ID)

	assert.Equal(t, 2, a.StateCount(jobgraph.ExecutionStateCreated))
	assert.Equal(t, 0, a.StateCount(jobgraph.ExecutionState(99)))
	assert.Equal(t, jobgraph.ExecutionStateCreated, a.AggregateState())
	assert.Equal(t, 0, eg.NumFinishedVertices())
	assert.False(t, eg.AllVerticesFinished())

	runToState(t, a.Vertex(0).CurrentExecution(), jobgraph.ExecutionStateRunning)
	assert.Equal(t, jobgraph.ExecutionStateRunning, a.AggregateState())
	runToState(t, a.Vertex(1).CurrentExecution(), jobgraph.ExecutionStateInitializing)
	assert.Equal(t, jobgraph.ExecutionStateInitializing, a.AggregateState())
	runToState(t, a.Vertex(1).CurrentExecution(), jobgraph.ExecutionStateFinished)
	assert.Equal(t, jobgraph.ExecutionStateRunning, a.AggregateState(), "some finished, one running")
	runToState(t, a.Vertex(0).CurrentExecution(), jobgraph.ExecutionStateFinished)
	assert.Equal(t, jobgraph.ExecutionStateFinished, a.AggregateState())
	assert.Equal(t, 2, eg.NumFinishedVertices())
	assert.True(t, a.ProducedResults()[0].AreAllPartitionsFinished())

	for i := range 3 {
		runToState(t, b.Vertex(i).CurrentExecution(), jobgraph.ExecutionStateFinished)
	}
	assert.Equal(t, 5, eg.NumFinishedVertices())
	assert.True(t, eg.AllVerticesFinished())

	_, err := b.Vertex(1).ResetForNewExecution()
	require.NoError(t, err)
	assert.Equal(t, 4, eg.NumFinishedVertices())
	assert.False(t, eg.AllVerticesFinished())
	assert.Equal(t, 1, b.StateCount(jobgraph.ExecutionStateCreated))
	assert.Equal(t, 2, b.StateCount(jobgraph.ExecutionStateFinished))
	assert.Equal(t, jobgraph.ExecutionStateRunning, b.AggregateState())

	require.NoError(t, b.Vertex(1).CurrentExecution().MarkFailed(errors.New("x")))
	assert.Equal(t, jobgraph.ExecutionStateFailed, b.AggregateState())
}

func TestConsumedGroupUnfinishedCounters(t *testing.T) {
	g := jobgraph.New("blocking", jobgraph.Batch)
	p := g.AddVertex("P", "noop", 2)
	c := g.AddVertex("C", "noop", 2)
	g.Connect(p, c, jobgraph.AllToAll, jobgraph.Blocking)
	eg := build(t, g)

	P := eg.JobVertex(p.ID)
	group := eg.JobVertex(c.ID).Vertex(0).ConsumedPartitionGroups()[0]
	result := P.ProducedResults()[0]
	require.Equal(t, 2, group.NumUnfinished())
	require.False(t, group.AreAllPartitionsFinished())

	runToState(t, P.Vertex(0).CurrentExecution(), jobgraph.ExecutionStateFinished)
	assert.True(t, result.Partition(0).IsFinished())
	assert.Equal(t, 1, group.NumUnfinished())
	assert.False(t, group.AreAllPartitionsFinished())
	assert.Equal(t, 1, result.NumUnfinishedPartitions())

	runToState(t, P.Vertex(1).CurrentExecution(), jobgraph.ExecutionStateFinished)
	assert.Equal(t, 0, group.NumUnfinished())
	assert.True(t, group.AreAllPartitionsFinished())
	assert.True(t, result.AreAllPartitionsFinished())

	e, err := P.Vertex(0).ResetForNewExecution()
	require.NoError(t, err)
	assert.Equal(t, 1, e.AttemptNumber())
	assert.False(t, result.Partition(0).IsFinished())
	assert.Equal(t, 1, group.NumUnfinished())
	assert.False(t, group.AreAllPartitionsFinished())
	assert.False(t, result.AreAllPartitionsFinished())

	// A reset of an attempt that did not finish leaves the counters alone.
	runToState(t, e, jobgraph.ExecutionStateRunning)
	require.NoError(t, e.MarkFailed(errors.New("lost")))
	_, err = P.Vertex(0).ResetForNewExecution()
	require.NoError(t, err)
	assert.Equal(t, 1, group.NumUnfinished())
}

func TestPipelinedPartitionsNeverFinish(t *testing.T) {
	g := jobgraph.New("pipelined", jobgraph.Streaming)
	vs := vertices(g, 1, 1)
	g.Connect(vs[0], vs[1], jobgraph.AllToAll, jobgraph.Pipelined)
	eg := build(t, g)
	runToState(t, eg.JobVertex(vs[0].ID).Vertex(0).CurrentExecution(), jobgraph.ExecutionStateFinished)
	group := eg.JobVertex(vs[1].ID).Vertex(0).ConsumedPartitionGroups()[0]
	assert.False(t, eg.JobVertex(vs[0].ID).ProducedResults()[0].Partition(0).IsFinished())
	assert.Equal(t, 1, group.NumUnfinished())
}

func TestResetForNewExecution(t *testing.T) {
	g := jobgraph.New("job", jobgraph.Streaming)
	g.AddVertex("map", "noop", 2)
	clk := newManualClock()
	eg := build(t, g, WithClock(clk.Now), WithMaxPriorAttempts(2))
	v := eg.JobVertices()[0].Vertex(1)
	first := v.CurrentExecution()
	firstID := first.AttemptID()
	assert.Equal(t, jobgraph.ExecutionAttemptID{ExecutionGraphID: eg.ID(), ExecutionVertexID: v.ID(), AttemptNumber: 0}, firstID)
	assert.Same(t, first, eg.Execution(firstID))
	assert.Same(t, v, first.Vertex())
	assert.True(t, first.IsCurrent())
	assert.Equal(t, uint64(0), v.Version())

	// Not terminal: refused, nothing changes.
	runToState(t, first, jobgraph.ExecutionStateRunning)
	_, err := v.ResetForNewExecution()
	require.ErrorIs(t, err, ErrIllegalTransition)
	assert.ErrorContains(t, err, "cannot reset map (2/2) for a new execution: attempt #0 is RUNNING, not terminal")
	assert.Same(t, first, v.CurrentExecution())
	assert.Equal(t, uint64(0), v.Version())

	require.NoError(t, first.MarkFailed(errors.New("crash")))
	first.ResourceID = "te-1"
	clk.Advance(time.Minute)
	second, err := v.ResetForNewExecution()
	require.NoError(t, err)
	assert.Same(t, second, v.CurrentExecution())
	assert.Equal(t, 1, second.AttemptNumber())
	assert.Equal(t, jobgraph.ExecutionStateCreated, second.State())
	assert.Equal(t, clk.Now(), second.StateTimestamp(jobgraph.ExecutionStateCreated))
	assert.Equal(t, jobgraph.ResourceID(""), second.ResourceID)
	assert.Equal(t, uint64(1), v.Version())
	assert.Equal(t, 1, v.NumPriorAttempts())
	assert.Equal(t, []*Execution{first}, v.PriorExecutions())
	assert.False(t, first.IsCurrent())
	assert.Same(t, first, eg.Execution(firstID))
	assert.Same(t, second, eg.Execution(second.AttemptID()))
	assert.Same(t, first, v.Execution(0))
	// A prior attempt is terminal: it cannot change state any more.
	assert.ErrorContains(t, first.TransitionState(jobgraph.ExecutionStateRunning), "from FAILED to RUNNING")

	// Two more resets: WithMaxPriorAttempts(2) drops attempt 0.
	for range 2 {
		require.Equal(t, jobgraph.ExecutionStateCanceled, v.CurrentExecution().Cancel())
		_, err := v.ResetForNewExecution()
		require.NoError(t, err)
	}
	assert.Equal(t, 3, v.CurrentExecution().AttemptNumber())
	assert.Equal(t, 3, v.NumPriorAttempts())
	assert.Equal(t, uint64(3), v.Version())
	require.Len(t, v.PriorExecutions(), 2)
	assert.Equal(t, 1, v.PriorExecutions()[0].AttemptNumber())
	assert.Equal(t, 2, v.PriorExecutions()[1].AttemptNumber())
	assert.Nil(t, eg.Execution(firstID), "attempt 0 is no longer kept")
	assert.Same(t, second, eg.Execution(second.AttemptID()))

	// Lookups that miss.
	other := firstID
	other.ExecutionGraphID = jobgraph.NewExecutionGraphID()
	assert.Nil(t, eg.Execution(other), "another graph's attempt")
	other = firstID
	other.AttemptNumber = 7
	assert.Nil(t, eg.Execution(other), "an attempt that never existed")
	other = firstID
	other.ExecutionVertexID.Subtask = 2
	assert.Nil(t, eg.Execution(other), "a subtask out of range")

	// WithMaxPriorAttempts(0) keeps none, but still counts.
	eg0 := build(t, g, WithMaxPriorAttempts(0))
	v0 := eg0.JobVertices()[0].Vertex(0)
	v0.CurrentExecution().Cancel()
	_, err = v0.ResetForNewExecution()
	require.NoError(t, err)
	assert.Empty(t, v0.PriorExecutions())
	assert.Equal(t, 1, v0.NumPriorAttempts())
	assert.Nil(t, v0.Execution(0))
}

func TestArchiveSnapshot(t *testing.T) {
	g := jobgraph.New("archived", jobgraph.Batch)
	src := g.AddVertex("src", "noop", 2)
	sink := g.AddVertex("sink", "noop", 1)
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Blocking).ShipStrategy = "HASH"
	g.Checkpointing = jobgraph.CheckpointingSettings{Interval: time.Minute, MaxConcurrentCheckpoints: 1}
	clk := newManualClock()
	t0 := clk.Now()
	id := jobgraph.NewExecutionGraphID()
	eg := build(t, g, WithClock(clk.Now), WithExecutionGraphID(id))

	clk.Advance(time.Second)
	require.NoError(t, eg.TransitionState(jobgraph.JobStatusCreated, jobgraph.JobStatusRunning))
	s0 := eg.JobVertex(src.ID).Vertex(0).CurrentExecution()
	s0.ResourceID = "te-a"
	runToState(t, s0, jobgraph.ExecutionStateRunning) // at t0+1s
	clk.Advance(time.Second)
	require.NoError(t, s0.MarkFinished())
	s1 := eg.JobVertex(src.ID).Vertex(1).CurrentExecution()
	runToState(t, s1, jobgraph.ExecutionStateScheduled)
	require.NoError(t, s1.MarkFailed(errors.New("no slot")))
	eg.SetFailureCause(errors.New("no slot"))

	a := eg.Archive()
	want := &ArchivedExecutionGraph{
		JobID:            g.JobID,
		JobName:          "archived",
		JobType:          jobgraph.Batch,
		ExecutionGraphID: id,
		Status:           jobgraph.JobStatusRunning,
		StatusTimestamps: map[jobgraph.JobStatus]time.Time{
			jobgraph.JobStatusCreated: t0,
			jobgraph.JobStatusRunning: t0.Add(time.Second),
		},
		FailureCause: &jobgraph.ErrorInfo{Message: "no slot", Timestamp: t0.Add(2 * time.Second)},
		JobVertices: []ArchivedExecutionJobVertex{
			{
				ID: src.ID, Name: "src", Parallelism: 2, MaxParallelism: 128,
				AggregateState: jobgraph.ExecutionStateFailed,
				StateCounts:    stateCounts(map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateFinished: 1, jobgraph.ExecutionStateFailed: 1}),
				Subtasks: []ArchivedExecutionVertex{
					{
						Subtask: 0, State: jobgraph.ExecutionStateFinished, AttemptNumber: 0, Location: "te-a",
						StateTimestamps: map[jobgraph.ExecutionState]time.Time{
							jobgraph.ExecutionStateCreated:      t0,
							jobgraph.ExecutionStateScheduled:    t0.Add(time.Second),
							jobgraph.ExecutionStateDeploying:    t0.Add(time.Second),
							jobgraph.ExecutionStateInitializing: t0.Add(time.Second),
							jobgraph.ExecutionStateRunning:      t0.Add(time.Second),
							jobgraph.ExecutionStateFinished:     t0.Add(2 * time.Second),
						},
					},
					{
						Subtask: 1, State: jobgraph.ExecutionStateFailed, AttemptNumber: 0, FailureMessage: "no slot",
						StateTimestamps: map[jobgraph.ExecutionState]time.Time{
							jobgraph.ExecutionStateCreated:   t0,
							jobgraph.ExecutionStateScheduled: t0.Add(2 * time.Second),
							jobgraph.ExecutionStateFailed:    t0.Add(2 * time.Second),
						},
					},
				},
			},
			{
				ID: sink.ID, Name: "sink", Parallelism: 1, MaxParallelism: 128,
				AggregateState: jobgraph.ExecutionStateCreated,
				StateCounts:    stateCounts(map[jobgraph.ExecutionState]int{jobgraph.ExecutionStateCreated: 1}),
				Subtasks: []ArchivedExecutionVertex{{
					Subtask: 0, State: jobgraph.ExecutionStateCreated,
					StateTimestamps: map[jobgraph.ExecutionState]time.Time{jobgraph.ExecutionStateCreated: t0},
				}},
				Inputs: []ArchivedJobEdge{{Source: src.ID, DistributionPattern: jobgraph.AllToAll, ShipStrategy: "HASH",
					ResultType: jobgraph.Blocking}},
			},
		},
		Checkpointing: jobgraph.CheckpointingSettings{Interval: time.Minute, MaxConcurrentCheckpoints: 1},
	}
	require.Equal(t, want, a)
	require.Same(t, &a.JobVertices[1], a.JobVertex(sink.ID))
	require.Nil(t, a.JobVertex(jobgraph.NewJobVertexID()))

	data, err := json.Marshal(a)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"status":"RUNNING"`)
	assert.Contains(t, string(data), `"statusTimestamps":{"CREATED":"2024-05-06T07:08:09Z","RUNNING":"2024-05-06T07:08:10Z"}`)
	assert.Contains(t, string(data), `"aggregateState":"FAILED"`)
	assert.Contains(t, string(data), `"failureMessage":"no slot"`)
	assert.Contains(t, string(data), `"location":"te-a"`)
	var decoded ArchivedExecutionGraph
	require.NoError(t, json.Unmarshal(data, &decoded))
	require.Equal(t, want, &decoded)

	// Later changes to the live graph do not show in the snapshot.
	clk.Advance(time.Second)
	_, err = eg.JobVertex(src.ID).Vertex(1).ResetForNewExecution()
	require.NoError(t, err)
	require.NoError(t, eg.TransitionState(jobgraph.JobStatusRunning, jobgraph.JobStatusCancelling))
	eg.SetFailureCause(errors.New("other"))
	eg.JobVertex(sink.ID).Vertex(0).CurrentExecution().Cancel()
	require.Equal(t, want, a)
}

// stateCounts returns a count for every state, zero unless given.
func stateCounts(nonZero map[jobgraph.ExecutionState]int) map[jobgraph.ExecutionState]int {
	out := make(map[jobgraph.ExecutionState]int)
	for _, s := range jobgraph.AllExecutionStates() {
		out[s] = nonZero[s]
	}
	return out
}

func TestNumJobStatuses(t *testing.T) {
	require.Len(t, jobgraph.AllJobStatuses(), numJobStatuses)
}

func TestSparseArchivedExecutionGraph(t *testing.T) {
	job := jobgraph.NewJobID()
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	later := at.Add(90 * time.Second)
	a := NewSparseArchivedExecutionGraph(job, "pending", jobgraph.Streaming, jobgraph.JobStatusInitializing, nil, at, later)
	assert.Equal(t, &ArchivedExecutionGraph{
		JobID: job, JobName: "pending", JobType: jobgraph.Streaming, Status: jobgraph.JobStatusInitializing,
		StatusTimestamps: map[jobgraph.JobStatus]time.Time{jobgraph.JobStatusInitializing: at},
	}, a, "a non-terminal status is stamped at initialized, not now")
	assert.Equal(t, at, a.StatusTimestamp(jobgraph.JobStatusInitializing))
	assert.True(t, a.StatusTimestamp(jobgraph.JobStatusRunning).IsZero())

	failed := NewSparseArchivedExecutionGraph(job, "broken", jobgraph.Batch, jobgraph.JobStatusFailed, errors.New("no such task"), at, later)
	assert.Equal(t, &ArchivedExecutionGraph{
		JobID: job, JobName: "broken", JobType: jobgraph.Batch, Status: jobgraph.JobStatusFailed,
		StatusTimestamps: map[jobgraph.JobStatus]time.Time{jobgraph.JobStatusInitializing: at, jobgraph.JobStatusFailed: later},
		FailureCause:     &jobgraph.ErrorInfo{Message: "no such task", Timestamp: later},
		ExceptionHistory: []jobgraph.ExceptionHistoryEntry{{Message: "no such task", Timestamp: later, Subtask: -1}},
	}, failed, "a terminal status and its failure are stamped at the caller's now; the failure is the exception history's one global entry")
	assert.Empty(t, failed.JobVertices)

	// The same arguments give the same bytes: no clock is read inside.
	first, err := json.Marshal(failed)
	require.NoError(t, err)
	again, err := json.Marshal(NewSparseArchivedExecutionGraph(job, "broken", jobgraph.Batch, jobgraph.JobStatusFailed, errors.New("no such task"), at, later))
	require.NoError(t, err)
	assert.Equal(t, string(first), string(again))
}

// A task's name costs one allocation, however large the subtask index and the parallelism
// (every deployment names its task; strconv.Itoa allocates from 100 on).
func TestVertexNameAllocatesOnce(t *testing.T) {
	g := jobgraph.New("names", jobgraph.Streaming)
	g.AddVertex("source", "noop", 12345)
	eg, err := Build(g)
	require.NoError(t, err)
	v := eg.JobVertices()[0].Vertex(9999)
	assert.Equal(t, "source (10000/12345)", v.Name())
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _ = v.Name() }))
}

// TestStateTimestampsOfFirstAndLaterAttempts: every state an attempt entered has the clock's
// time of that transition, every other the zero time. A first attempt's times after CREATED live
// in its job vertex's slab, made at the first transition of any of its subtasks; a later attempt
// keeps its own, so a reset does not touch the first attempt's.
func TestStateTimestampsOfFirstAndLaterAttempts(t *testing.T) {
	g := jobgraph.New("job", jobgraph.Streaming)
	g.AddVertex("map", "noop", 3)
	clk := newManualClock()
	built := clk.Now()
	eg := build(t, g, WithClock(clk.Now))
	jv := eg.JobVertices()[0]
	require.Nil(t, jv.timesSlab, "no subtask left CREATED yet")

	first := jv.Vertex(1).CurrentExecution()
	want := map[jobgraph.ExecutionState]time.Time{jobgraph.ExecutionStateCreated: built}
	for _, s := range []jobgraph.ExecutionState{jobgraph.ExecutionStateScheduled, jobgraph.ExecutionStateDeploying,
		jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning} {
		clk.Advance(time.Second)
		require.NoError(t, first.TransitionState(s))
		want[s] = clk.Now()
	}
	require.Len(t, jv.timesSlab, 3)
	clk.Advance(time.Second)
	require.NoError(t, first.MarkFailed(errors.New("boom")))
	want[jobgraph.ExecutionStateFailed] = clk.Now()
	for s := range jobgraph.ExecutionState(jobgraph.NumExecutionStates) {
		assert.Equal(t, want[s], first.StateTimestamp(s), "attempt 0, %s", s)
	}
	assert.Equal(t, built, jv.Vertex(0).CurrentExecution().StateTimestamp(jobgraph.ExecutionStateCreated))
	assert.True(t, jv.Vertex(0).CurrentExecution().StateTimestamp(jobgraph.ExecutionStateScheduled).IsZero(), "another subtask's times are its own")

	clk.Advance(time.Minute)
	second, err := jv.Vertex(1).ResetForNewExecution()
	require.NoError(t, err)
	reset := clk.Now()
	clk.Advance(time.Second)
	require.NoError(t, second.TransitionState(jobgraph.ExecutionStateScheduled))
	assert.Equal(t, reset, second.StateTimestamp(jobgraph.ExecutionStateCreated))
	assert.Equal(t, clk.Now(), second.StateTimestamp(jobgraph.ExecutionStateScheduled))
	assert.True(t, second.StateTimestamp(jobgraph.ExecutionStateFailed).IsZero())
	for s := range jobgraph.ExecutionState(jobgraph.NumExecutionStates) {
		assert.Equal(t, want[s], first.StateTimestamp(s), "attempt 0 after the reset, %s", s)
	}
	// A third attempt (allocated without the history) keeps its own times too.
	require.NoError(t, second.MarkFailed(errors.New("again")))
	third, err := jv.Vertex(1).ResetForNewExecution()
	require.NoError(t, err)
	clk.Advance(time.Second)
	require.NoError(t, third.TransitionState(jobgraph.ExecutionStateScheduled))
	assert.Equal(t, clk.Now(), third.StateTimestamp(jobgraph.ExecutionStateScheduled))
	assert.Equal(t, clk.Now().Add(-time.Second), second.StateTimestamp(jobgraph.ExecutionStateFailed))
	assert.Same(t, third, jv.Vertex(1).CurrentExecution())
	assert.Equal(t, uint64(2), jv.Vertex(1).Version())
}
