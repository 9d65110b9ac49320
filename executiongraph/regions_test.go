package executiongraph

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

func TestRegionsPipelinedThenBlocking(t *testing.T) {
	g := jobgraph.New("a-b-c", jobgraph.Batch)
	vs := vertices(g, 2, 2, 2)
	g.Connect(vs[0], vs[1], jobgraph.AllToAll, jobgraph.Pipelined)
	g.Connect(vs[1], vs[2], jobgraph.AllToAll, jobgraph.Blocking)
	eg := build(t, g)

	require.Equal(t, [][]string{{"a0", "a1", "b0", "b1"}, {"c0"}, {"c1"}}, regionNames(eg))
	regions := eg.Regions()
	shared := eg.JobVertex(vs[2].ID).Vertex(0).ConsumedPartitionGroups()[0]
	assert.Empty(t, regions[0].ExternalConsumedPartitionGroups())
	assert.Equal(t, []*ConsumedPartitionGroup{shared}, regions[1].ExternalConsumedPartitionGroups())
	assert.Equal(t, []*ConsumedPartitionGroup{shared}, regions[2].ExternalConsumedPartitionGroups())
	for i, r := range regions {
		assert.Equal(t, i, r.Index())
		for _, v := range r.Vertices() {
			assert.Same(t, r, v.Region())
			assert.Same(t, r, eg.RegionOf(v.ID()))
			assert.True(t, r.Contains(v))
		}
	}
	assert.False(t, regions[0].Contains(eg.JobVertex(vs[2].ID).Vertex(0)))
}

func TestRegionsCascadeOfJoins(t *testing.T) {
	// v1, v2 –PIPELINED→ v5; v3, v4 –PIPELINED→ v6; v5, v6 –BLOCKING→ v7.
	g := jobgraph.New("joins", jobgraph.Batch)
	v := make(map[int]*jobgraph.JobVertex)
	for i := 1; i <= 7; i++ {
		v[i] = g.AddVertex("v"+string(rune('0'+i)), "noop", 1)
	}
	g.Connect(v[1], v[5], jobgraph.AllToAll, jobgraph.Pipelined)
	g.Connect(v[2], v[5], jobgraph.AllToAll, jobgraph.Pipelined)
	g.Connect(v[3], v[6], jobgraph.AllToAll, jobgraph.Pipelined)
	g.Connect(v[4], v[6], jobgraph.AllToAll, jobgraph.Pipelined)
	g.Connect(v[5], v[7], jobgraph.AllToAll, jobgraph.Blocking)
	g.Connect(v[6], v[7], jobgraph.AllToAll, jobgraph.Blocking)
	eg := build(t, g)

	require.Equal(t, [][]string{{"v10", "v20", "v50"}, {"v30", "v40", "v60"}, {"v70"}}, regionNames(eg))
	r7 := eg.Regions()[2]
	require.Len(t, r7.ExternalConsumedPartitionGroups(), 2)
	assert.Equal(t, eg.JobVertex(v[7].ID).Vertex(0).ConsumedPartitionGroups(), r7.ExternalConsumedPartitionGroups())
}

func TestRegionsPointwisePipelinedBounded(t *testing.T) {
	g := jobgraph.New("source-map-sink", jobgraph.Streaming)
	source := g.AddVertex("source", "noop", 2)
	mapper := g.AddVertex("map", "noop", 2)
	sink := g.AddVertex("sink", "noop", 2)
	g.Connect(source, mapper, jobgraph.Pointwise, jobgraph.PipelinedBounded)
	g.Connect(mapper, sink, jobgraph.AllToAll, jobgraph.Blocking)
	eg := build(t, g)

	require.Equal(t, [][]string{{"source0", "map0"}, {"source1", "map1"}, {"sink0"}, {"sink1"}}, regionNames(eg))
}

func TestRegionsCyclicDependentRegionsAreMerged(t *testing.T) {
	// Flink's SchedulingPipelinedRegionComputeUtilTest.testCyclicDependentRegionsAreMerged:
	// v1 –BLOCKING→ v2 –BLOCKING→ v4 and v1 –PIPELINED→ v3 –PIPELINED→ v4. Without merging,
	// {v1, v3, v4} would wait for {v2} (v2 → v4) and {v2} for {v1, v3, v4} (v1 → v2).
	t.Run("parallelism 1", func(t *testing.T) {
		g := jobgraph.New("cycle", jobgraph.Batch)
		vs := vertices(g, 1, 1, 1, 1)
		g.Connect(vs[0], vs[1], jobgraph.AllToAll, jobgraph.Blocking)
		g.Connect(vs[0], vs[2], jobgraph.AllToAll, jobgraph.Pipelined)
		g.Connect(vs[1], vs[3], jobgraph.AllToAll, jobgraph.Blocking)
		g.Connect(vs[2], vs[3], jobgraph.AllToAll, jobgraph.Pipelined)
		eg := build(t, g)
		require.Equal(t, [][]string{{"a0", "b0", "c0", "d0"}}, regionNames(eg))
		// Both blocking groups are produced inside the merged region: nothing external.
		assert.Empty(t, eg.Regions()[0].ExternalConsumedPartitionGroups())
	})
	t.Run("parallelism 2, all-to-all blocking", func(t *testing.T) {
		// Raw regions {a0 c0 d0}, {a1 c1 d1}, {b0}, {b1}; a → b is all-to-all, b → d pointwise:
		// {a0 c0 d0} → b1 → {a1 c1 d1} → b0 → {a0 c0 d0} is one cycle through all four.
		g := jobgraph.New("cycle", jobgraph.Batch)
		vs := vertices(g, 2, 2, 2, 2)
		g.Connect(vs[0], vs[1], jobgraph.AllToAll, jobgraph.Blocking)
		g.Connect(vs[0], vs[2], jobgraph.Pointwise, jobgraph.Pipelined)
		g.Connect(vs[1], vs[3], jobgraph.Pointwise, jobgraph.HybridFull)
		g.Connect(vs[2], vs[3], jobgraph.Pointwise, jobgraph.Pipelined)
		eg := build(t, g)
		require.Equal(t, [][]string{{"a0", "a1", "b0", "b1", "c0", "c1", "d0", "d1"}}, regionNames(eg))
	})
	t.Run("parallelism 2, pointwise", func(t *testing.T) {
		// Every edge pointwise: two independent cycles, each merged on its own.
		g := jobgraph.New("cycle", jobgraph.Batch)
		vs := vertices(g, 2, 2, 2, 2)
		g.Connect(vs[0], vs[1], jobgraph.Pointwise, jobgraph.Blocking)
		g.Connect(vs[0], vs[2], jobgraph.Pointwise, jobgraph.Pipelined)
		g.Connect(vs[1], vs[3], jobgraph.Pointwise, jobgraph.Blocking)
		g.Connect(vs[2], vs[3], jobgraph.Pointwise, jobgraph.Pipelined)
		eg := build(t, g)
		require.Equal(t, [][]string{{"a0", "b0", "c0", "d0"}, {"a1", "b1", "c1", "d1"}}, regionNames(eg))
	})
	t.Run("blocking side chain without a way back", func(t *testing.T) {
		// Flink's testDiamondWithMixedPipelinedAndBlockingExchanges: v1 –BLOCKING→ v2 –PIPELINED→ v4
		// and v1 –PIPELINED→ v3 –PIPELINED→ v4 is one region by pipelined edges alone.
		g := jobgraph.New("diamond", jobgraph.Batch)
		vs := vertices(g, 1, 1, 1, 1)
		g.Connect(vs[0], vs[1], jobgraph.AllToAll, jobgraph.Blocking)
		g.Connect(vs[0], vs[2], jobgraph.AllToAll, jobgraph.Pipelined)
		g.Connect(vs[1], vs[3], jobgraph.AllToAll, jobgraph.Pipelined)
		g.Connect(vs[2], vs[3], jobgraph.AllToAll, jobgraph.Pipelined)
		eg := build(t, g)
		require.Equal(t, [][]string{{"a0", "b0", "c0", "d0"}}, regionNames(eg))
	})
}

func TestRegionsReconnectableTypesSeparate(t *testing.T) {
	// Flink's testPipelinedApproximateDifferentRegions, over every result type.
	for _, rt := range []jobgraph.ResultPartitionType{
		jobgraph.PipelinedBounded, jobgraph.Pipelined, jobgraph.Blocking, jobgraph.BlockingPersistent,
		jobgraph.PipelinedApproximate, jobgraph.HybridFull, jobgraph.HybridSelective,
	} {
		t.Run(rt.String(), func(t *testing.T) {
			g := jobgraph.New("diamond", jobgraph.Streaming)
			vs := vertices(g, 1, 1, 1, 1)
			g.Connect(vs[0], vs[1], jobgraph.AllToAll, rt)
			g.Connect(vs[0], vs[2], jobgraph.AllToAll, rt)
			g.Connect(vs[1], vs[3], jobgraph.AllToAll, rt)
			g.Connect(vs[2], vs[3], jobgraph.AllToAll, rt)
			eg := build(t, g)
			if rt.IsReconnectable() {
				require.Equal(t, [][]string{{"a0"}, {"b0"}, {"c0"}, {"d0"}}, regionNames(eg))
			} else {
				require.Equal(t, [][]string{{"a0", "b0", "c0", "d0"}}, regionNames(eg))
			}
		})
	}
}

func TestRegionsIndividualVertices(t *testing.T) {
	g := jobgraph.New("lonely", jobgraph.Streaming)
	vertices(g, 2, 1)
	eg := build(t, g)
	require.Equal(t, [][]string{{"a0"}, {"a1"}, {"b0"}}, regionNames(eg))
}

// TestRegionsMatchReference compares computeRegions, with and without its fast path, with a
// direct transcription of the definition on random graphs: vertex-level edges, union over
// pipelined ones, then merging regions that reach each other.
func TestRegionsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	types := []jobgraph.ResultPartitionType{jobgraph.Pipelined, jobgraph.PipelinedBounded, jobgraph.Blocking, jobgraph.HybridSelective}
	for iter := range 400 {
		g := jobgraph.New("random", jobgraph.Batch)
		n := 2 + rng.IntN(5)
		var vs []*jobgraph.JobVertex
		for i := range n {
			vs = append(vs, g.AddVertex(string(rune('a'+i)), "noop", 1+rng.IntN(4)))
		}
		for j := 1; j < n; j++ {
			for i := range j {
				if rng.IntN(3) == 0 {
					continue
				}
				pattern := jobgraph.DistributionPattern(rng.IntN(2))
				g.Connect(vs[i], vs[j], pattern, types[rng.IntN(len(types))])
			}
		}
		eg := build(t, g)
		want := referenceRegions(eg)
		require.Equal(t, want, regionNames(eg), "graph %d", iter)
		checkExternalGroups(t, eg)

		forceCycleCheck = true
		eg.computeRegions()
		forceCycleCheck = false
		require.Equal(t, want, regionNames(eg), "graph %d with the cycle check forced", iter)
		checkExternalGroups(t, eg)
	}
}

// referenceRegions computes regions from the definition, in O(V²·E) time: fine for tests.
func referenceRegions(eg *ExecutionGraph) [][]string {
	var all []*ExecutionVertex
	for v := range eg.Vertices() {
		all = append(all, v)
	}
	n := len(all)
	type edge struct {
		from, to      int
		reconnectable bool
	}
	var edges []edge
	for _, v := range all {
		for _, cpg := range v.ConsumedPartitionGroups() {
			for p := range cpg.Partitions() {
				edges = append(edges, edge{p.Producer().Index(), v.Index(), cpg.ResultType().IsReconnectable()})
			}
		}
	}
	region := make([]int, n)
	for i := range region {
		region[i] = i
	}
	relabel := func(from, to int) {
		for i := range region {
			if region[i] == from {
				region[i] = to
			}
		}
	}
	for _, e := range edges {
		if !e.reconnectable && region[e.from] != region[e.to] {
			relabel(region[e.from], region[e.to])
		}
	}
	// reach[a][b]: region label a reaches region label b through any edges.
	reach := make([][]bool, n)
	for i := range reach {
		reach[i] = make([]bool, n)
		reach[i][i] = true
	}
	for _, e := range edges {
		reach[region[e.from]][region[e.to]] = true
	}
	for k := range n {
		for i := range n {
			for j := range n {
				if reach[i][k] && reach[k][j] {
					reach[i][j] = true
				}
			}
		}
	}
	labels := slices.Clone(region)
	for i := range n {
		for j := range n {
			a, b := labels[i], labels[j]
			if a != b && reach[a][b] && reach[b][a] {
				relabel(region[j], region[i])
			}
		}
	}
	// Group by label, ordered by first vertex.
	var out [][]string
	seen := map[int]int{}
	for i, v := range all {
		k, ok := seen[region[i]]
		if !ok {
			k = len(out)
			seen[region[i]] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], short(v))
	}
	return out
}

// checkExternalGroups checks every region's external groups against their definition.
func checkExternalGroups(t *testing.T, eg *ExecutionGraph) {
	t.Helper()
	for _, r := range eg.Regions() {
		var want []*ConsumedPartitionGroup
		for _, v := range r.Vertices() {
			for _, cpg := range v.ConsumedPartitionGroups() {
				if !cpg.ResultType().IsReconnectable() || slices.Contains(want, cpg) {
					continue
				}
				outside := false
				for p := range cpg.Partitions() {
					outside = outside || !r.Contains(p.Producer())
				}
				if outside {
					want = append(want, cpg)
				}
			}
		}
		require.Equal(t, want, r.ExternalConsumedPartitionGroups(), "region %d", r.Index())
	}
}

func TestStronglyConnectedComponents(t *testing.T) {
	// 0 → 1 → 2 → 0, 2 → 3, 3 → 4 → 3, 5 alone, 6 → 6.
	adjacency := [][]int32{{1}, {2}, {0, 3}, {4}, {3}, {}, {6}}
	off := []int32{0}
	var adj []int32
	for _, out := range adjacency {
		adj = append(adj, out...)
		off = append(off, int32(len(adj)))
	}
	comp := stronglyConnectedComponents(len(adjacency), off, adj)
	assert.Equal(t, comp[0], comp[1])
	assert.Equal(t, comp[0], comp[2])
	assert.Equal(t, comp[3], comp[4])
	assert.NotEqual(t, comp[0], comp[3])
	assert.NotEqual(t, comp[5], comp[3])
	assert.NotEqual(t, comp[5], comp[0])
	assert.NotEqual(t, comp[6], comp[5])
	distinct := map[int32]bool{}
	for _, c := range comp {
		distinct[c] = true
	}
	assert.Len(t, distinct, 4)
}

// TestJobVertexAt: the job vertex of every vertex Index, whatever the hint.
func TestJobVertexAt(t *testing.T) {
	g := jobgraph.New("three", jobgraph.Batch)
	vs := vertices(g, 2, 3, 1)
	g.Connect(vs[0], vs[1], jobgraph.AllToAll, jobgraph.Blocking)
	g.Connect(vs[1], vs[2], jobgraph.AllToAll, jobgraph.Pipelined)
	eg := build(t, g)
	want := []string{"a", "a", "b", "b", "b", "c"}
	all := slices.Collect(eg.Vertices())
	require.Len(t, all, len(want))
	for _, hint := range eg.JobVertices() {
		for idx, name := range want {
			jv := eg.jobVertexAt(hint, int32(idx))
			require.Equal(t, name, jv.Name(), "index %d, hint %s", idx, hint.Name())
			require.Same(t, all[idx].JobVertex(), jv)
		}
	}
}
