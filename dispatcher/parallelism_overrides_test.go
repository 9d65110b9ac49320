package dispatcher_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// overrideFixture is a Dispatcher with the cluster's overrides whose runners are fakeRunners;
// built records the graph each runner was built from.
func overrideFixture(t *testing.T, overrides map[jobgraph.JobVertexID]int) (*dispatcher.StandaloneDispatcher, *embedded.Services, *[]*jobgraph.JobGraph) {
	services := embedded.New()
	t.Cleanup(func() { _ = services.Close() })
	var built []*jobgraph.JobGraph
	d, err := dispatcher.New(dispatcher.Config{HA: services, ParallelismOverrides: overrides,
		JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
			built = append(built, g)
			return closingRunner{&fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}}, nil
		}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d, services, &built
}

// closingRunner is a fakeRunner that a Close ends (as CANCELED), so a Dispatcher's Close returns.
type closingRunner struct{ *fakeRunner }

func (r closingRunner) Close() {
	r.fakeRunner.Close()
	_ = r.Cancel(context.Background())
}

func twoVertices(p2, max2 int) (*jobgraph.JobGraph, *jobgraph.JobVertex) {
	g := jobgraph.New("overrides", jobgraph.Batch)
	v1 := g.AddVertex("v1", "noop", 2)
	v2 := g.AddVertex("v2", "noop", p2).WithMaxParallelism(max2)
	g.Connect(v1, v2, jobgraph.AllToAll, jobgraph.Blocking)
	return g, v2
}

// The cluster's override alone applies: the runner is built from, and the ExecutionPlanStore
// holds, the graph with v2 at 2; v1, which no override names, keeps its parallelism.
func TestClusterParallelismOverrideAppliesWhenTheJobHasNone(t *testing.T) {
	g, v2 := twoVertices(4, 0)
	d, services, built := overrideFixture(t, map[jobgraph.JobVertexID]int{v2.ID: 2, jobgraph.NewJobVertexID(): 9})
	ctx := context.Background()
	require.NoError(t, d.SubmitJob(ctx, g))
	require.Len(t, *built, 1)
	assert.Equal(t, []int{2, 2}, []int{(*built)[0].Vertices[0].Parallelism, (*built)[0].Vertices[1].Parallelism})
	stored, err := services.ExecutionPlanStore().Get(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 2}, []int{stored.Vertices[0].Parallelism, stored.Vertices[1].Parallelism})
	assert.Nil(t, stored.ParallelismOverrides, "the cluster's overrides are applied, not copied into the job")
}

// A cluster override above the max parallelism is refused naming v2 and the cluster's option;
// the runner factory is never called and nothing is stored.
func TestClusterParallelismOverrideAboveMaxIsRefused(t *testing.T) {
	g, v2 := twoVertices(4, 128)
	d, services, built := overrideFixture(t, map[jobgraph.JobVertexID]int{v2.ID: 300})
	ctx := context.Background()
	err := d.SubmitJob(ctx, g)
	require.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph)
	assert.Equal(t, "dispatcher: job "+g.JobID.String()+`: the cluster's pipeline.jobvertex-parallelism-overrides set vertex "v2" (`+v2.ID.String()+
		`) from parallelism 4 to 300: invalid job graph: parallelism: vertex "v2" (`+v2.ID.String()+`): parallelism 300 is above the max parallelism 128`, err.Error())
	assert.Empty(t, *built)
	ids, err := services.ExecutionPlanStore().JobIDs(ctx)
	require.NoError(t, err)
	assert.Empty(t, ids)
}

// A vertex without a max parallelism derives it from the overridden parallelism, as Flink's
// ExecutionJobVertex does from the parallelism it is built with: 300 gives 512
// (KeyGroupRangeAssignment.computeDefaultMaxParallelism: 300 + 150 rounded up to a power of
// two), so the override is accepted where the declared parallelism 4 alone would give 128.
func TestParallelismOverrideDerivesAnUnsetMaxParallelism(t *testing.T) {
	g, v2 := twoVertices(4, 0)
	require.Equal(t, 128, v2.EffectiveMaxParallelism())
	g.ParallelismOverrides = map[jobgraph.JobVertexID]int{v2.ID: 300}
	d, services, _ := overrideFixture(t, nil)
	ctx := context.Background()
	require.NoError(t, d.SubmitJob(ctx, g))
	stored, err := services.ExecutionPlanStore().Get(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, 300, stored.Vertices[1].Parallelism)
	assert.Equal(t, 0, stored.Vertices[1].MaxParallelism)
	assert.Equal(t, 512, stored.Vertices[1].EffectiveMaxParallelism())
}

// The cluster's overrides are checked by New: below 1 is ErrInvalidConfig naming the vertex.
func TestClusterParallelismOverrideBelowOneIsInvalidConfig(t *testing.T) {
	services := embedded.New()
	defer services.Close()
	v := jobgraph.NewJobVertexID()
	_, err := dispatcher.New(dispatcher.Config{HA: services, ParallelismOverrides: map[jobgraph.JobVertexID]int{v: 0},
		JobManagerRunnerFactory: func(*jobgraph.JobGraph, ha.Services) (jobmaster.JobManagerRunner, error) { return nil, nil }})
	require.ErrorIs(t, err, dispatcher.ErrInvalidConfig)
	assert.Equal(t, "dispatcher: invalid configuration: ParallelismOverrides (pipeline.jobvertex-parallelism-overrides) gives vertex "+v.String()+" parallelism 0, below 1", err.Error())
}
