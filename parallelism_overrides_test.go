package jobgraph_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

// The job's pipeline.jobvertex-parallelism-overrides travel with the graph: the JSON codec
// writes them as an object keyed by the vertex ID's hex form and reads them back, and Clone
// gives a copy of its own.
func TestParallelismOverridesRoundTripAndClone(t *testing.T) {
	g := jobgraph.New("overridden", jobgraph.Batch)
	v := g.AddVertex("v", "noop", 4)
	g.ParallelismOverrides = map[jobgraph.JobVertexID]int{v.ID: 3}

	data, err := json.Marshal(g)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"parallelismOverrides":{"`+v.ID.String()+`":3}`)
	back, err := jobgraph.Decode(data)
	require.NoError(t, err)
	assert.Equal(t, map[jobgraph.JobVertexID]int{v.ID: 3}, back.ParallelismOverrides)

	c, err := g.Clone()
	require.NoError(t, err)
	c.ParallelismOverrides[v.ID] = 7
	assert.Equal(t, 3, g.ParallelismOverrides[v.ID], "the clone shares no map with the original")

	// An empty map is left out of the JSON, so the clone (as the round trip) has none.
	g.ParallelismOverrides = map[jobgraph.JobVertexID]int{}
	c, err = g.Clone()
	require.NoError(t, err)
	assert.Nil(t, c.ParallelismOverrides)
	data, err = json.Marshal(g)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "parallelismOverrides")
}

// An override below 1 is refused by Validate, naming the vertex; one for a vertex the graph does
// not have is ignored unless it is below 1.
func TestValidateRefusesParallelismOverrideBelowOne(t *testing.T) {
	g := jobgraph.New("overridden", jobgraph.Batch)
	v := g.AddVertex("v2", "noop", 4)
	g.ParallelismOverrides = map[jobgraph.JobVertexID]int{vid(99): 5}
	require.NoError(t, g.Validate())

	g.ParallelismOverrides = map[jobgraph.JobVertexID]int{v.ID: 0, vid(99): 2}
	err := g.Validate()
	var verr *jobgraph.ValidationError
	require.True(t, errors.As(err, &verr), "%v", err)
	assert.Equal(t, jobgraph.RuleParallelism, verr.Rule)
	assert.Equal(t, v.ID, verr.Vertex)
	assert.Equal(t, "v2", verr.VertexName)
	assert.Equal(t, `invalid job graph: parallelism: vertex "v2" (`+v.ID.String()+`): the parallelism override (pipeline.jobvertex-parallelism-overrides) 0 is below 1`, err.Error())
}
