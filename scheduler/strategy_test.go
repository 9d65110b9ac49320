package scheduler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

func buildGraph(t *testing.T, g *jobgraph.JobGraph) *executiongraph.ExecutionGraph {
	t.Helper()
	eg, err := executiongraph.Build(g)
	require.NoError(t, err)
	return eg
}

// Flink: PipelinedRegionSchedulingStrategyTest.testStartScheduling and
// testNotifyingBlockingResultPartitionProducerFinished.
func TestRegionStrategySchedulesRegionsThenBlockingConsumers(t *testing.T) {
	eg := buildGraph(t, threeStage(2, jobgraph.Pointwise, jobgraph.PipelinedBounded, jobgraph.AllToAll, jobgraph.Blocking))
	ops := &recordingOps{}
	s := NewPipelinedRegionSchedulingStrategy(ops, eg.Topology())

	s.StartScheduling()
	assert.Equal(t, [][]string{{"source0", "map0"}, {"source1", "map1"}}, ops.bulks)

	map0 := vertexOf(t, eg, "map", 0)
	finishVertex(t, map0)
	s.OnExecutionStateChange(map0, jobgraph.ExecutionStateFinished)
	assert.Len(t, ops.bulks, 2, "the sinks' ALL_TO_ALL input is not all finished yet")

	map1 := vertexOf(t, eg, "map", 1)
	finishVertex(t, map1)
	s.OnExecutionStateChange(map1, jobgraph.ExecutionStateFinished)
	require.Len(t, ops.bulks, 4)
	assert.Equal(t, [][]string{{"sink0"}, {"sink1"}}, ops.bulks[2:])

	// A duplicate notification schedules nothing twice.
	s.OnExecutionStateChange(map1, jobgraph.ExecutionStateFinished)
	assert.Len(t, ops.bulks, 4)
}

// Flink: PipelinedRegionSchedulingStrategyTest.testRestartTasks.
func TestRegionStrategyRestartTasks(t *testing.T) {
	eg := buildGraph(t, threeStage(2, jobgraph.Pointwise, jobgraph.PipelinedBounded, jobgraph.AllToAll, jobgraph.Blocking))
	ops := &recordingOps{}
	s := NewPipelinedRegionSchedulingStrategy(ops, eg.Topology())
	s.StartScheduling()
	ops.bulks = nil

	var all []*executiongraph.ExecutionVertex
	for v := range eg.Vertices() {
		all = append(all, v)
	}
	s.RestartTasks(all)
	assert.Equal(t, [][]string{{"source0", "map0"}, {"source1", "map1"}}, ops.bulks)
}

// Flink: PipelinedRegionSchedulingStrategyTest.testSchedulingTopologyWithPersistentBlockingEdges.
func TestRegionStrategyPersistentBlockingEdge(t *testing.T) {
	g := jobgraph.New("persistent", jobgraph.Batch)
	v1 := g.AddVertex("v1", "noop", 1)
	v2 := g.AddVertex("v2", "noop", 1)
	g.Connect(v1, v2, jobgraph.Pointwise, jobgraph.BlockingPersistent)
	eg := buildGraph(t, g)
	ops := &recordingOps{}
	NewPipelinedRegionSchedulingStrategy(ops, eg.Topology()).StartScheduling()
	assert.Equal(t, [][]string{{"v10"}}, ops.bulks)
}

// Flink: PipelinedRegionSchedulingStrategyTest.testSchedulingTopologyWithCrossRegionConsumedPartitionGroups
// and testComputingCrossRegionConsumedPartitionGroupsCorrectly: v1(4) –POINTWISE PIPELINED→
// v2(3) –POINTWISE BLOCKING→ v3(2), v1 –POINTWISE PIPELINED→ v3. Regions: {v1 0-1, v2 0-1, v3 0}
// and {v1 2-3, v2 2, v3 1}; v3 1 reads v2 [1,3), produced partly in its own region.
func TestRegionStrategyCrossRegionGroup(t *testing.T) {
	g := jobgraph.New("cross", jobgraph.Batch)
	v1 := g.AddVertex("v1", "noop", 4)
	v2 := g.AddVertex("v2", "noop", 3)
	v3 := g.AddVertex("v3", "noop", 2)
	g.Connect(v1, v2, jobgraph.Pointwise, jobgraph.Pipelined)
	g.Connect(v2, v3, jobgraph.Pointwise, jobgraph.Blocking)
	g.ConnectDataSet(v1.Results[0], v3, jobgraph.Pointwise)
	eg := buildGraph(t, g)
	require.Len(t, eg.Regions(), 2)

	ops := &recordingOps{}
	s := NewPipelinedRegionSchedulingStrategy(ops, eg.Topology())
	crossGroups := 0
	for _, c := range s.crossGroup {
		if c {
			crossGroups++
		}
	}
	assert.Equal(t, 1, crossGroups)
	assert.True(t, s.crossGroup[vertexOf(t, eg, "v3", 1).ConsumedPartitionGroups()[0].Index()])

	s.StartScheduling()
	require.Equal(t, [][]string{{"v10", "v11", "v20", "v21", "v30"}}, ops.bulks)

	v21 := vertexOf(t, eg, "v2", 1)
	finishVertex(t, v21)
	s.OnExecutionStateChange(v21, jobgraph.ExecutionStateFinished)
	require.Len(t, ops.bulks, 2)
	assert.Equal(t, []string{"v12", "v13", "v22", "v31"}, ops.bulks[1])
}

// Flink: PipelinedRegionSchedulingStrategyTest.testScheduleBlockingDownstreamTaskIndividually.
func TestRegionStrategySchedulesPointwiseBlockingConsumerIndividually(t *testing.T) {
	g := jobgraph.New("pointwise", jobgraph.Batch)
	v1 := g.AddVertex("v1", "noop", 2)
	v2 := g.AddVertex("v2", "noop", 2)
	g.Connect(v1, v2, jobgraph.Pointwise, jobgraph.Blocking)
	eg := buildGraph(t, g)
	ops := &recordingOps{}
	s := NewPipelinedRegionSchedulingStrategy(ops, eg.Topology())
	s.StartScheduling()
	assert.Len(t, ops.bulks, 2)
	v10 := vertexOf(t, eg, "v1", 0)
	finishVertex(t, v10)
	s.OnExecutionStateChange(v10, jobgraph.ExecutionStateFinished)
	assert.Equal(t, [][]string{{"v10"}, {"v11"}, {"v20"}}, ops.bulks)
}

// A hybrid edge makes the consumer region schedulable together with its producer region.
// Flink: PipelinedRegionSchedulingStrategy's handling of canBePipelinedConsumed groups.
func TestRegionStrategyHybridConsumersFollowTheirProducers(t *testing.T) {
	g := jobgraph.New("hybrid", jobgraph.Batch)
	a := g.AddVertex("a", "noop", 2)
	b := g.AddVertex("b", "noop", 2)
	g.Connect(a, b, jobgraph.AllToAll, jobgraph.HybridFull)
	eg := buildGraph(t, g)
	ops := &recordingOps{}
	NewPipelinedRegionSchedulingStrategy(ops, eg.Topology()).StartScheduling()
	assert.Equal(t, [][]string{{"a0"}, {"a1"}, {"b0"}, {"b1"}}, ops.bulks)
}

// Flink: VertexwiseSchedulingStrategyTest.testStartScheduling and
// testOnExecutionStateChangeToFinished: source(2) –POINTWISE BLOCKING→ map(2) –ALL_TO_ALL
// BLOCKING→ sink(2); one call per vertex.
func TestVertexwiseStrategy(t *testing.T) {
	eg := buildGraph(t, threeStage(2, jobgraph.Pointwise, jobgraph.Blocking, jobgraph.AllToAll, jobgraph.Blocking))
	ops := &recordingOps{}
	s := NewVertexwiseSchedulingStrategy(ops, eg.Topology())

	s.StartScheduling()
	assert.Equal(t, 2, ops.scheduledCount())
	assert.Equal(t, [][]string{{"source0"}, {"source1"}}, ops.bulks)

	step := func(name string, i, want int) {
		t.Helper()
		v := vertexOf(t, eg, name, i)
		finishVertex(t, v)
		s.OnExecutionStateChange(v, jobgraph.ExecutionStateFinished)
		assert.Equal(t, want, ops.scheduledCount(), "after %s%d finished", name, i)
	}
	step("source", 0, 3)
	step("source", 1, 4)
	step("map", 0, 4)
	step("map", 1, 6)
	assert.Equal(t, [][]string{{"source0"}, {"source1"}, {"map0"}, {"map1"}, {"sink0"}, {"sink1"}}, ops.bulks)
}

// Flink: VertexwiseSchedulingStrategyTest.testRestartTasks.
func TestVertexwiseStrategyRestartTasks(t *testing.T) {
	eg := buildGraph(t, threeStage(2, jobgraph.Pointwise, jobgraph.Blocking, jobgraph.AllToAll, jobgraph.Blocking))
	ops := &recordingOps{}
	s := NewVertexwiseSchedulingStrategy(ops, eg.Topology())
	s.StartScheduling()
	ops.bulks = nil
	var all []*executiongraph.ExecutionVertex
	for v := range eg.Vertices() {
		all = append(all, v)
	}
	s.RestartTasks(all)
	assert.Equal(t, [][]string{{"source0"}, {"source1"}}, ops.bulks)
}

// Vertex-wise with a hybrid edge: consumers follow once all their producers are scheduled.
func TestVertexwiseStrategyHybridEdge(t *testing.T) {
	g := jobgraph.New("hybrid", jobgraph.Batch)
	a := g.AddVertex("a", "noop", 2)
	b := g.AddVertex("b", "noop", 2)
	g.Connect(a, b, jobgraph.AllToAll, jobgraph.HybridSelective)
	eg := buildGraph(t, g)
	ops := &recordingOps{}
	s := NewVertexwiseSchedulingStrategy(ops, eg.Topology())
	s.StartScheduling()
	assert.Equal(t, [][]string{{"a0"}, {"a1"}, {"b0"}, {"b1"}}, ops.bulks)
	assert.True(t, s.IsScheduled(vertexOf(t, eg, "b", 1)))
}
