package jobgraph_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

func TestDefaultMaxParallelism(t *testing.T) {
	// Rule: n = p + p/2 (integer), rounded up to a power of two, at least 128, at most 32768.
	for _, tc := range []struct{ parallelism, want int }{
		{0, 128},         // n=0 → 1 → 128
		{1, 128},         // n=1 → 1 → 128
		{2, 128},         // n=3 → 4 → 128
		{85, 128},        // n=85+42=127 → 128
		{86, 256},        // n=86+43=129 → 256
		{100, 256},       // n=150 → 256
		{170, 256},       // n=170+85=255 → 256
		{171, 256},       // n=171+85=256 → 256 (already a power of two)
		{172, 512},       // n=172+86=258 → 512
		{1000, 2048},     // n=1500 → 2048
		{1365, 2048},     // n=1365+682=2047 → 2048
		{1366, 4096},     // n=1366+683=2049 → 4096
		{21845, 32768},   // n=21845+10922=32767 → 32768
		{21846, 32768},   // n=21846+10923=32769 → 65536, capped at 32768
		{30000, 32768},   // n=45000 → 65536, capped
		{32768, 32768},   // n=49152, capped
		{1 << 20, 32768}, // capped
		{math.MaxInt, 32768},
	} {
		assert.Equal(t, tc.want, jobgraph.DefaultMaxParallelism(tc.parallelism), "parallelism %d", tc.parallelism)
	}
	assert.Equal(t, 32768, jobgraph.MaxMaxParallelism)

	v := &jobgraph.JobVertex{Parallelism: 100}
	assert.Equal(t, 256, v.EffectiveMaxParallelism())
	v.WithMaxParallelism(10)
	assert.Equal(t, 10, v.EffectiveMaxParallelism())
}

func TestBuilder(t *testing.T) {
	g := jobgraph.New("wordcount", jobgraph.Batch)
	assert.False(t, g.JobID.IsZero())
	assert.NotEqual(t, g.JobID, jobgraph.New("wordcount", jobgraph.Batch).JobID)
	assert.Equal(t, "wordcount", g.Name)
	assert.Equal(t, jobgraph.Batch, g.Type)
	assert.Empty(t, g.Vertices)

	src := g.AddVertex("source", "read-files", 2).
		WithMaxParallelism(64).
		WithResources(jobgraph.ResourceProfile{CPUCores: 1}).
		WithSlotSharingGroup("ssg").
		WithCoLocationGroup("cl").
		WithConfig([]byte("cfg"))
	cnt := g.AddVertex("count", "count-words", 3)
	sink := g.AddVertex("sink", "print", 1)
	assert.Equal(t, &jobgraph.JobVertex{ID: src.ID, Name: "source", Parallelism: 2, MaxParallelism: 64, Invokable: "read-files",
		Config: []byte("cfg"), Resources: jobgraph.ResourceProfile{CPUCores: 1}, SlotSharingGroup: "ssg", CoLocationGroup: "cl",
		Results: nil, Inputs: nil}, src)
	assert.Equal(t, []*jobgraph.JobVertex{src, cnt, sink}, g.Vertices)
	assert.NotEqual(t, src.ID, cnt.ID)

	e1 := g.Connect(src, cnt, jobgraph.AllToAll, jobgraph.Blocking)
	require.Len(t, src.Results, 1)
	ds := src.Results[0]
	assert.False(t, ds.ID.IsZero())
	assert.Equal(t, jobgraph.Blocking, ds.ResultType)
	assert.Equal(t, &jobgraph.JobEdge{Source: ds.ID, Target: cnt.ID, DistributionPattern: jobgraph.AllToAll}, e1)
	assert.Equal(t, []*jobgraph.JobEdge{e1}, cnt.Inputs)

	// A second consumer of the same data set.
	e2 := g.ConnectDataSet(ds, sink, jobgraph.Pointwise)
	assert.Equal(t, &jobgraph.JobEdge{Source: ds.ID, Target: sink.ID, DistributionPattern: jobgraph.Pointwise}, e2)
	e3 := g.Connect(cnt, sink, jobgraph.Pointwise, jobgraph.Pipelined)
	assert.Equal(t, []*jobgraph.JobEdge{e2, e3}, sink.Inputs, "edges are appended in input-index order")

	assert.Same(t, cnt, g.Vertex(cnt.ID))
	assert.Nil(t, g.Vertex(jobgraph.NewJobVertexID()))
	assert.Same(t, sink, g.VertexByName("sink"))
	assert.Nil(t, g.VertexByName("nope"))
	assert.Equal(t, map[jobgraph.IntermediateDataSetID]*jobgraph.JobVertex{ds.ID: src, cnt.Results[0].ID: cnt}, g.Producers())
	assert.Equal(t, 3, g.NumEdges())
	assert.Equal(t, 6, g.NumTasks())
	require.NoError(t, g.Validate())

	// The helpers skip nil vertices rather than panicking.
	g.Vertices = append(g.Vertices, nil)
	assert.Nil(t, g.Vertex(jobgraph.JobVertexID{}))
	assert.Nil(t, g.VertexByName(""))
	assert.Len(t, g.Producers(), 2)
	assert.Equal(t, 3, g.NumEdges())
	assert.Equal(t, 6, g.NumTasks())
}

func names(vs []*jobgraph.JobVertex) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}

func TestTopologicalOrderDiamond(t *testing.T) {
	// src → left → sink, src → right → sink, inserted as sink, right, src, left.
	build := func() *jobgraph.JobGraph {
		g := jobgraph.New("diamond", jobgraph.Streaming)
		sink := g.AddVertex("sink", "i", 1)
		right := g.AddVertex("right", "i", 1)
		src := g.AddVertex("src", "i", 1)
		left := g.AddVertex("left", "i", 1)
		g.Connect(src, left, jobgraph.AllToAll, jobgraph.Pipelined)
		g.Connect(src, right, jobgraph.AllToAll, jobgraph.Pipelined)
		g.Connect(left, sink, jobgraph.Pointwise, jobgraph.Pipelined)
		g.Connect(right, sink, jobgraph.Pointwise, jobgraph.Pipelined)
		return g
	}
	g := build()
	order, err := g.TopologicalOrder()
	require.NoError(t, err)
	// right and left are free at the same time; right was inserted first.
	want := []string{"src", "right", "left", "sink"}
	assert.Equal(t, want, names(order))
	for range 20 {
		order, err := g.TopologicalOrder()
		require.NoError(t, err)
		assert.Equal(t, want, names(order))
		order, err = build().TopologicalOrder()
		require.NoError(t, err)
		assert.Equal(t, want, names(order), "fresh random IDs give the same order")
	}
	// The order is a permutation of g.Vertices, and g is left as it was.
	assert.ElementsMatch(t, g.Vertices, order)
	assert.Equal(t, []string{"sink", "right", "src", "left"}, names(g.Vertices))
}

func TestTopologicalOrderInsertionOrderAmongFreeVertices(t *testing.T) {
	// x reads p; y is a source inserted after p. Once p is done, x and y are both free and x was
	// inserted first, so x goes before y (a plain FIFO queue would give p, y, x).
	g := jobgraph.New("t", jobgraph.Batch)
	x := g.AddVertex("x", "i", 1)
	p := g.AddVertex("p", "i", 1)
	g.AddVertex("y", "i", 1)
	g.Connect(p, x, jobgraph.AllToAll, jobgraph.Blocking)
	order, err := g.TopologicalOrder()
	require.NoError(t, err)
	assert.Equal(t, []string{"p", "x", "y"}, names(order))

	// A chain c ← b ← a inserted backwards, then an unrelated source z: each time a chain vertex
	// becomes free it was inserted before z, so it goes first.
	g = jobgraph.New("t", jobgraph.Batch)
	c := g.AddVertex("c", "i", 1)
	b := g.AddVertex("b", "i", 1)
	a := g.AddVertex("a", "i", 1)
	g.AddVertex("z", "i", 1)
	g.Connect(a, b, jobgraph.AllToAll, jobgraph.Blocking)
	g.Connect(b, c, jobgraph.AllToAll, jobgraph.Blocking)
	order, err = g.TopologicalOrder()
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "z"}, names(order))

	// Empty graph: empty order.
	order, err = jobgraph.New("e", jobgraph.Batch).TopologicalOrder()
	require.NoError(t, err)
	assert.Empty(t, order)
}

func TestTopologicalOrderErrors(t *testing.T) {
	// Cycle a → b → c → b.
	g := jobgraph.New("cycle", jobgraph.Streaming)
	a := g.AddVertex("a", "i", 1)
	b := g.AddVertex("b", "i", 1)
	c := g.AddVertex("c", "i", 1)
	g.Connect(a, b, jobgraph.AllToAll, jobgraph.Pipelined)
	g.Connect(b, c, jobgraph.AllToAll, jobgraph.Pipelined)
	g.Connect(c, b, jobgraph.AllToAll, jobgraph.Pipelined)
	_, err := g.TopologicalOrder()
	var ve *jobgraph.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, jobgraph.RuleCycle, ve.Rule)
	assert.Contains(t, []jobgraph.JobVertexID{b.ID, c.ID}, ve.Vertex)

	// Self loop.
	g = jobgraph.New("self", jobgraph.Streaming)
	s := g.AddVertex("s", "i", 1)
	g.Connect(s, s, jobgraph.Pointwise, jobgraph.Pipelined)
	_, err = g.TopologicalOrder()
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, jobgraph.RuleCycle, ve.Rule)
	assert.Equal(t, s.ID, ve.Vertex)
	assert.Equal(t, "s", ve.VertexName)

	// Dangling input.
	g = jobgraph.New("dangling", jobgraph.Streaming)
	d := g.AddVertex("d", "i", 1)
	missing := &jobgraph.IntermediateDataSet{ID: jobgraph.NewIntermediateDataSetID()}
	g.ConnectDataSet(missing, d, jobgraph.AllToAll)
	_, err = g.TopologicalOrder()
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, jobgraph.RuleDanglingEdge, ve.Rule)
	assert.Equal(t, d.ID, ve.Vertex)
	assert.Equal(t, missing.ID, ve.DataSet)

	// Nil vertex.
	g.Vertices = append(g.Vertices, nil)
	_, err = g.TopologicalOrder()
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, jobgraph.RuleNilEntry, ve.Rule)
	assert.True(t, errors.Is(err, jobgraph.ErrInvalidJobGraph))
}
