package scheduler

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// lostPartitions is a ResultPartitionAvailabilityChecker that says every partition is available
// except the ones in the set. It counts the questions asked.
type lostPartitions struct {
	lost  map[jobgraph.IntermediateResultPartitionID]bool
	asked int
}

func newLostPartitions(lost ...*executiongraph.IntermediateResultPartition) *lostPartitions {
	c := &lostPartitions{lost: map[jobgraph.IntermediateResultPartitionID]bool{}}
	for _, p := range lost {
		c.lost[p.ID()] = true
	}
	return c
}

func (c *lostPartitions) IsAvailable(id jobgraph.IntermediateResultPartitionID) bool {
	c.asked++
	return !c.lost[id]
}

// lostPartitionsByPtr is lostPartitions asked with the partition itself
// (PartitionAvailabilityChecker): IsAvailable by ID must then not be asked at all.
type lostPartitionsByPtr struct{ *lostPartitions }

func (c lostPartitionsByPtr) IsAvailable(jobgraph.IntermediateResultPartitionID) bool {
	panic("asked by ID although the checker takes the partition")
}

func (c lostPartitionsByPtr) IsPartitionAvailable(p *executiongraph.IntermediateResultPartition) bool {
	c.asked++
	return !c.lost[p.ID()]
}

// partitionReadError is a task failure caused by an input partition that could not be read.
type partitionReadError struct {
	id jobgraph.IntermediateResultPartitionID
}

func (e *partitionReadError) Error() string {
	return "cannot read partition " + e.id.String()
}

func (e *partitionReadError) UnavailablePartition() jobgraph.IntermediateResultPartitionID {
	return e.id
}

var _ UnavailablePartitionError = (*partitionReadError)(nil)

// unreadable is a failure cause, wrapped once, that names p as unavailable.
func unreadable(p *executiongraph.IntermediateResultPartition) error {
	return fmt.Errorf("task failed: %w", &partitionReadError{p.ID()})
}

var errTaskFailure = errors.New("test failure")

// driveTo moves the current execution of v through the normal lifecycle (SCHEDULED, DEPLOYING,
// INITIALIZING, RUNNING) to state: one of those, FINISHED, FAILED or CANCELED.
func driveTo(tb testing.TB, v *executiongraph.ExecutionVertex, state jobgraph.ExecutionState) {
	tb.Helper()
	e := v.CurrentExecution()
	path := []jobgraph.ExecutionState{jobgraph.ExecutionStateScheduled, jobgraph.ExecutionStateDeploying,
		jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning}
	for _, st := range path {
		if e.State() == state {
			return
		}
		require.NoError(tb, e.TransitionState(st))
	}
	if state == jobgraph.ExecutionStateCanceled {
		require.NoError(tb, e.TransitionState(jobgraph.ExecutionStateCanceling))
	}
	if e.State() != state {
		require.NoError(tb, e.TransitionState(state))
	}
}

// singles is a graph of parallelism-1 vertices named v1…vn, in that topological order.
type singles struct {
	g  *jobgraph.JobGraph
	jv []*jobgraph.JobVertex // jv[i] is v(i+1)
	eg *executiongraph.ExecutionGraph
}

func newSingles(n int) *singles {
	s := &singles{g: jobgraph.New("failover", jobgraph.Batch)}
	for i := 1; i <= n; i++ {
		s.jv = append(s.jv, s.g.AddVertex(fmt.Sprintf("v%d", i), "noop", 1))
	}
	return s
}

// connect adds an ALL_TO_ALL edge from v<from> to v<to> with its own data set.
func (s *singles) connect(from, to int, rt jobgraph.ResultPartitionType) {
	s.g.Connect(s.jv[from-1], s.jv[to-1], jobgraph.AllToAll, rt)
}

func (s *singles) build(t *testing.T) {
	t.Helper()
	s.eg = buildGraph(t, s.g)
}

// v is the only subtask of v<i>.
func (s *singles) v(i int) *executiongraph.ExecutionVertex {
	return s.eg.JobVertex(s.jv[i-1].ID).Vertex(0)
}

// out is the partition v<from> writes for v<to>.
func (s *singles) out(t *testing.T, from, to int) *executiongraph.IntermediateResultPartition {
	t.Helper()
	for _, cpg := range s.v(to).ConsumedPartitionGroups() {
		if p := cpg.Partition(0); p.Producer() == s.v(from) {
			return p
		}
	}
	t.Fatalf("v%d does not read from v%d", to, from)
	return nil
}

// names names the vertices: the job vertex name for parallelism 1, else name and subtask.
func names(vs []*executiongraph.ExecutionVertex) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if v.JobVertex().Parallelism() == 1 {
			out = append(out, v.JobVertex().Name())
		} else {
			out = append(out, short(v))
		}
	}
	return out
}

// Flink: RestartPipelinedRegionFailoverStrategyTest.testRegionFailoverForRegionInternalErrors.
//
//	v1 ─┬─> v4
//	    ╳
//	v2 ─┴─> v5
//	v3 ───> v6      (all BLOCKING, every vertex its own region)
func TestRegionFailoverForRegionInternalErrors(t *testing.T) {
	s := newSingles(6)
	s.connect(1, 4, jobgraph.Blocking)
	s.connect(1, 5, jobgraph.Blocking)
	s.connect(2, 4, jobgraph.Blocking)
	s.connect(2, 5, jobgraph.Blocking)
	s.connect(3, 6, jobgraph.Blocking)
	s.build(t)
	require.Len(t, s.eg.Regions(), 6)
	for i := 1; i <= 4; i++ {
		driveTo(t, s.v(i), jobgraph.ExecutionStateFinished)
	}
	driveTo(t, s.v(5), jobgraph.ExecutionStateScheduled)
	driveTo(t, s.v(6), jobgraph.ExecutionStateRunning)

	strategy := NewRestartPipelinedRegionFailoverStrategy(s.eg.Topology(), newLostPartitions())
	for _, tc := range []struct {
		failed int
		want   []string
	}{
		{1, []string{"v1", "v4", "v5"}},
		{2, []string{"v2", "v4", "v5"}},
		{3, []string{"v3", "v6"}},
		{4, []string{"v4"}},
		{5, []string{"v5"}},
		{6, []string{"v6"}},
	} {
		assert.Equal(t, tc.want, names(strategy.TasksToRestart(s.v(tc.failed), errTaskFailure)), "v%d fails", tc.failed)
	}
}

// Flink: RestartPipelinedRegionFailoverStrategyTest.testRegionFailoverForDataConsumptionErrors:
// the same graph; a consumer fails because it cannot read one of its inputs, which restarts the
// producer of that input and every consumer of the producer.
func TestRegionFailoverForDataConsumptionErrors(t *testing.T) {
	s := newSingles(6)
	s.connect(1, 4, jobgraph.Blocking)
	s.connect(1, 5, jobgraph.Blocking)
	s.connect(2, 4, jobgraph.Blocking)
	s.connect(2, 5, jobgraph.Blocking)
	s.connect(3, 6, jobgraph.Blocking)
	s.build(t)
	for i := 1; i <= 3; i++ {
		driveTo(t, s.v(i), jobgraph.ExecutionStateFinished)
	}
	for i := 4; i <= 6; i++ {
		driveTo(t, s.v(i), jobgraph.ExecutionStateRunning)
	}

	// The checker says everything is available: only the cause names the lost partition.
	strategy := NewRestartPipelinedRegionFailoverStrategy(s.eg.Topology(), newLostPartitions())
	for _, tc := range []struct {
		failed, lostFrom int
		want             []string
	}{
		{4, 1, []string{"v1", "v4", "v5"}},
		{4, 2, []string{"v2", "v4", "v5"}},
		{5, 1, []string{"v1", "v4", "v5"}},
		{5, 2, []string{"v2", "v4", "v5"}},
		{6, 3, []string{"v3", "v6"}},
	} {
		cause := unreadable(s.out(t, tc.lostFrom, tc.failed))
		assert.Equal(t, tc.want, names(strategy.TasksToRestart(s.v(tc.failed), cause)),
			"v%d fails reading from v%d", tc.failed, tc.lostFrom)
	}
	// The cause is forgotten after the call: the next failure sees every partition available.
	assert.Equal(t, []string{"v4"}, names(strategy.TasksToRestart(s.v(4), errTaskFailure)))
}

// Flink: RestartPipelinedRegionFailoverStrategyTest.testRegionFailoverForVariousResultPartitionAvailabilityCombinations.
//
//	v1 ──rp1──┐
//	          v3      (BLOCKING; v1, v2 FINISHED, v3 RUNNING)
//	v2 ──rp2──┘
func TestRegionFailoverForVariousResultPartitionAvailabilityCombinations(t *testing.T) {
	s := newSingles(3)
	s.connect(1, 3, jobgraph.Blocking)
	s.connect(2, 3, jobgraph.Blocking)
	s.build(t)
	driveTo(t, s.v(1), jobgraph.ExecutionStateFinished)
	driveTo(t, s.v(2), jobgraph.ExecutionStateFinished)
	driveTo(t, s.v(3), jobgraph.ExecutionStateRunning)
	rp1, rp2 := s.out(t, 1, 3), s.out(t, 2, 3)

	for _, tc := range []struct {
		name             string
		lost             []*executiongraph.IntermediateResultPartition
		failV1, failV2   []string
		failV3           []string
		wantAskedOnFail3 int
	}{
		{"nothing lost", nil,
			[]string{"v1", "v3"}, []string{"v2", "v3"}, []string{"v3"}, 2},
		{"rp1 lost", []*executiongraph.IntermediateResultPartition{rp1},
			[]string{"v1", "v3"}, []string{"v1", "v2", "v3"}, []string{"v1", "v3"}, 2},
		// v1 restarts, so v3 (downstream) restarts, and v3 needs rp2, which is lost: v2 restarts.
		{"rp2 lost", []*executiongraph.IntermediateResultPartition{rp2},
			[]string{"v1", "v2", "v3"}, []string{"v2", "v3"}, []string{"v2", "v3"}, 2},
		{"both lost", []*executiongraph.IntermediateResultPartition{rp1, rp2},
			[]string{"v1", "v2", "v3"}, []string{"v1", "v2", "v3"}, []string{"v1", "v2", "v3"}, 2},
	} {
		for _, byPtr := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/by-partition=%t", tc.name, byPtr), func(t *testing.T) {
				lost := newLostPartitions(tc.lost...)
				var checker ResultPartitionAvailabilityChecker = lost
				if byPtr { // the same answers, asked with the partition (PartitionAvailabilityChecker)
					checker = lostPartitionsByPtr{lost}
				}
				strategy := NewRestartPipelinedRegionFailoverStrategy(s.eg.Topology(), checker)
				assert.Equal(t, tc.failV1, names(strategy.TasksToRestart(s.v(1), errTaskFailure)), "v1 fails")
				assert.Equal(t, tc.failV2, names(strategy.TasksToRestart(s.v(2), errTaskFailure)), "v2 fails")
				lost.asked = 0
				assert.Equal(t, tc.failV3, names(strategy.TasksToRestart(s.v(3), errTaskFailure)), "v3 fails")
				assert.Equal(t, tc.wantAskedOnFail3, lost.asked, "each input of v3 is checked once")
			})
		}
	}
}

// Flink: RestartPipelinedRegionFailoverStrategyTest.testRegionFailoverForMultipleVerticesRegions.
//
//	v1 ─pipelined─> v2 ─blocking─> v3 ─pipelined─> v4 ─blocking─> v5 ─pipelined─> v6
//
// Regions {v1, v2}, {v3, v4}, {v5, v6}.
func TestRegionFailoverForMultipleVerticesRegions(t *testing.T) {
	s := newSingles(6)
	s.connect(1, 2, jobgraph.Pipelined)
	s.connect(2, 3, jobgraph.Blocking)
	s.connect(3, 4, jobgraph.Pipelined)
	s.connect(4, 5, jobgraph.Blocking)
	s.connect(5, 6, jobgraph.Pipelined)
	s.build(t)
	require.Len(t, s.eg.Regions(), 3)
	driveTo(t, s.v(1), jobgraph.ExecutionStateFinished)
	driveTo(t, s.v(2), jobgraph.ExecutionStateFinished)
	driveTo(t, s.v(3), jobgraph.ExecutionStateRunning)
	driveTo(t, s.v(4), jobgraph.ExecutionStateRunning)
	driveTo(t, s.v(5), jobgraph.ExecutionStateFailed)
	driveTo(t, s.v(6), jobgraph.ExecutionStateCanceled)

	strategy := NewRestartPipelinedRegionFailoverStrategy(s.eg.Topology(), newLostPartitions())
	assert.Equal(t, []string{"v3", "v4", "v5", "v6"}, names(strategy.TasksToRestart(s.v(3), errTaskFailure)))
	assert.Equal(t, []string{"v1", "v2", "v3", "v4", "v5", "v6"},
		names(strategy.TasksToRestart(s.v(3), unreadable(s.out(t, 2, 3)))))
}

// Flink: RestartPipelinedRegionFailoverStrategyTest.testRegionFailoverForPipelinedApproximate:
// PIPELINED_APPROXIMATE separates regions, and a restart goes downstream only.
//
//	v1 ──> v2 ──> v4
//	 └───> v3 ───┘
func TestRegionFailoverForPipelinedApproximate(t *testing.T) {
	s := newSingles(4)
	s.connect(1, 2, jobgraph.PipelinedApproximate)
	s.connect(1, 3, jobgraph.PipelinedApproximate)
	s.connect(2, 4, jobgraph.PipelinedApproximate)
	s.connect(3, 4, jobgraph.PipelinedApproximate)
	s.build(t)
	require.Len(t, s.eg.Regions(), 4)
	for i := 1; i <= 4; i++ {
		driveTo(t, s.v(i), jobgraph.ExecutionStateRunning)
	}

	strategy := NewRestartPipelinedRegionFailoverStrategy(s.eg.Topology(), newLostPartitions())
	assert.Equal(t, []string{"v1", "v2", "v3", "v4"}, names(strategy.TasksToRestart(s.v(1), errTaskFailure)))
	assert.Equal(t, []string{"v2", "v4"}, names(strategy.TasksToRestart(s.v(2), errTaskFailure)))
	assert.Equal(t, []string{"v3", "v4"}, names(strategy.TasksToRestart(s.v(3), errTaskFailure)))
	assert.Equal(t, []string{"v4"}, names(strategy.TasksToRestart(s.v(4), errTaskFailure)))
}

// Flink: RestartPipelinedRegionFailoverStrategyTest.testRegionFailoverForHybridEdge: a
// HYBRID_SELECTIVE input cannot be read twice, so its producer restarts with the consumer;
// HYBRID_FULL and BLOCKING inputs that are available are read again.
//
//	v1 ─hybrid full──────┐
//	v2 ─blocking─────────┤
//	v3 ─hybrid selective─v5 ─hybrid full─> v6
//	v4 ─pipelined────────┘
//
// v4 and v5 form one region; every other vertex is its own.
func TestRegionFailoverForHybridEdge(t *testing.T) {
	s := newSingles(6)
	s.connect(1, 5, jobgraph.HybridFull)
	s.connect(2, 5, jobgraph.Blocking)
	s.connect(3, 5, jobgraph.HybridSelective)
	s.connect(4, 5, jobgraph.Pipelined)
	s.connect(5, 6, jobgraph.HybridFull)
	s.build(t)
	require.Len(t, s.eg.Regions(), 5)
	for i := 1; i <= 6; i++ {
		driveTo(t, s.v(i), jobgraph.ExecutionStateRunning)
	}

	strategy := NewRestartPipelinedRegionFailoverStrategy(s.eg.Topology(), newLostPartitions())
	assert.Equal(t, []string{"v3", "v4", "v5", "v6"}, names(strategy.TasksToRestart(s.v(5), errTaskFailure)))
	assert.Equal(t, []string{"v6"}, names(strategy.TasksToRestart(s.v(6), errTaskFailure)))
}

// A lost partition restarts its producer region, whose other consumers restart in turn; the
// result is in topological order even when the regions' vertices interleave.
//
//	source(2) ─POINTWISE pipelined─> map(2) ─ALL_TO_ALL blocking─> sink(2)
//
// Regions {source0, map0}, {source1, map1}, {sink0}, {sink1}.
func TestRegionFailoverTransitiveProducersInTopologicalOrder(t *testing.T) {
	eg := buildGraph(t, threeStage(2, jobgraph.Pointwise, jobgraph.Pipelined, jobgraph.AllToAll, jobgraph.Blocking))
	require.Len(t, eg.Regions(), 4)
	for v := range eg.Vertices() {
		if v.JobVertex().Name() == "sink" {
			driveTo(t, v, jobgraph.ExecutionStateRunning)
		} else {
			driveTo(t, v, jobgraph.ExecutionStateFinished)
		}
	}
	map1 := vertexOf(t, eg, "map", 1)
	lost := map1.ProducedPartitions()[0]

	strategy := NewRestartPipelinedRegionFailoverStrategy(eg.Topology(), newLostPartitions())
	assert.Equal(t, []string{"sink0"}, names(strategy.TasksToRestart(vertexOf(t, eg, "sink", 0), errTaskFailure)))
	assert.Equal(t, []string{"source0", "map0", "sink0", "sink1"},
		names(strategy.TasksToRestart(vertexOf(t, eg, "source", 0), errTaskFailure)))
	assert.Equal(t, []string{"source1", "map1", "sink0", "sink1"},
		names(strategy.TasksToRestart(vertexOf(t, eg, "sink", 0), unreadable(lost))))

	// source0 fails while map1's output is lost: the sinks restart and need it, so map1's region
	// restarts too, and the two source-map regions interleave in topological order.
	checker := newLostPartitions(lost)
	strategy = NewRestartPipelinedRegionFailoverStrategy(eg.Topology(), checker)
	assert.Equal(t, []string{"source0", "source1", "map0", "map1", "sink0", "sink1"},
		names(strategy.TasksToRestart(vertexOf(t, eg, "source", 0), errTaskFailure)))
	// Failing map0 restarts its region and both sinks; the sinks read the ALL_TO_ALL group once,
	// and only map1's partition is asked about: map0 restarts anyway.
	checker.asked = 0
	checker.lost = nil
	assert.Equal(t, []string{"source0", "map0", "sink0", "sink1"},
		names(strategy.TasksToRestart(vertexOf(t, eg, "map", 0), errTaskFailure)))
	assert.Equal(t, 1, checker.asked)
}

// A partition named by the cause matters only if a restarted region reads it, as in Flink.
func TestRegionFailoverIgnoresUnavailablePartitionNotRead(t *testing.T) {
	s := newSingles(4)
	s.connect(1, 2, jobgraph.Blocking)
	s.connect(3, 4, jobgraph.Blocking)
	s.build(t)
	strategy := NewRestartPipelinedRegionFailoverStrategy(s.eg.Topology(), nil)
	assert.Equal(t, []string{"v4"}, names(strategy.TasksToRestart(s.v(4), unreadable(s.out(t, 1, 2)))))
	assert.Equal(t, []string{"v3", "v4"}, names(strategy.TasksToRestart(s.v(4), unreadable(s.out(t, 3, 4)))))
	// An unknown partition is ignored.
	unknown := &partitionReadError{jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: jobgraph.NewIntermediateDataSetID()}}
	assert.Equal(t, []string{"v2"}, names(strategy.TasksToRestart(s.v(2), unknown)))
}

// One pipelined region restarts as a whole, and its ALL_TO_ALL blocking consumers follow.
func TestRegionFailoverWholeRegion(t *testing.T) {
	eg := buildGraph(t, threeStage(3, jobgraph.AllToAll, jobgraph.PipelinedBounded, jobgraph.AllToAll, jobgraph.BlockingPersistent))
	require.Len(t, eg.Regions(), 4)
	strategy := NewRestartPipelinedRegionFailoverStrategy(eg.Topology(), nil)
	assert.Equal(t, []string{"source0", "source1", "source2", "map0", "map1", "map2", "sink0", "sink1", "sink2"},
		names(strategy.TasksToRestart(vertexOf(t, eg, "map", 2), errTaskFailure)))
	assert.Equal(t, []string{"sink1"}, names(strategy.TasksToRestart(vertexOf(t, eg, "sink", 1), errTaskFailure)))
}

func TestRegionFailoverRejectsForeignVertex(t *testing.T) {
	s := newSingles(1)
	s.build(t)
	other := newSingles(1)
	other.build(t)
	strategy := NewRestartPipelinedRegionFailoverStrategy(s.eg.Topology(), nil)
	assert.Nil(t, strategy.TasksToRestart(nil, errTaskFailure))
	assert.Panics(t, func() { strategy.TasksToRestart(other.v(1), errTaskFailure) })
}

// Flink: RestartAllFailoverStrategyTest.testGetTasksNeedingRestart.
func TestRestartAllFailoverStrategy(t *testing.T) {
	s := newSingles(6)
	s.connect(1, 2, jobgraph.Pipelined)
	s.connect(2, 3, jobgraph.Blocking)
	s.connect(4, 5, jobgraph.Blocking)
	s.build(t)
	strategy := NewRestartAllFailoverStrategy(s.eg.Topology())
	all := []string{"v1", "v2", "v3", "v4", "v5", "v6"}
	for i := 1; i <= 6; i++ {
		assert.Equal(t, all, names(strategy.TasksToRestart(s.v(i), errTaskFailure)), "v%d fails", i)
	}
	assert.Equal(t, all, names(strategy.TasksToRestart(s.v(3), unreadable(s.out(t, 2, 3)))))
	got := strategy.TasksToRestart(s.v(1), errTaskFailure)
	for i, v := range got {
		assert.Equal(t, i, v.Index())
	}
}

// Flink: FailoverStrategyFactoryLoaderTest.
func TestNewFailoverStrategy(t *testing.T) {
	s := newSingles(3)
	s.connect(1, 2, jobgraph.Blocking)
	s.connect(2, 3, jobgraph.Blocking)
	s.build(t)
	topo := s.eg.Topology()

	for _, name := range []jobgraph.FailoverStrategy{"", jobgraph.FailoverRegion} {
		strategy, err := NewFailoverStrategy(name, topo, nil)
		require.NoError(t, err, "%q", name)
		assert.IsType(t, &regionFailoverStrategy{}, strategy, "%q", name)
		assert.Equal(t, []string{"v2", "v3"}, names(strategy.TasksToRestart(s.v(2), errTaskFailure)), "%q", name)
	}

	strategy, err := NewFailoverStrategy(jobgraph.FailoverFull, topo, nil)
	require.NoError(t, err)
	assert.IsType(t, restartAllFailoverStrategy{}, strategy)
	assert.Equal(t, []string{"v1", "v2", "v3"}, names(strategy.TasksToRestart(s.v(2), errTaskFailure)))

	strategy, err = NewFailoverStrategy("regional", topo, nil)
	assert.Nil(t, strategy)
	assert.EqualError(t, err, `scheduler: jobmanager.execution.failover-strategy "regional" is not one of region, full`)
}
