package executiongraph

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

func TestAllToAllSharesOneGroupPerSide(t *testing.T) {
	g := jobgraph.New("all-to-all", jobgraph.Batch)
	vs := vertices(g, 3, 2)
	g.Connect(vs[0], vs[1], jobgraph.AllToAll, jobgraph.Blocking)
	eg := build(t, g)

	producer, consumer := eg.JobVertex(vs[0].ID), eg.JobVertex(vs[1].ID)
	r := producer.ProducedResults()[0]
	require.Equal(t, 3, r.NumPartitions())
	require.Equal(t, 1, eg.NumConsumedPartitionGroups())

	cvg := r.Partition(0).ConsumerVertexGroups()
	require.Len(t, cvg, 1)
	for i := range 3 {
		got := r.Partition(i).ConsumerVertexGroups()
		require.Len(t, got, 1)
		assert.Same(t, cvg[0], got[0], "partition %d", i)
		assert.Same(t, cvg[0].ConsumedPartitionGroup(), r.Partition(i).ConsumedPartitionGroups()[0])
	}
	require.Equal(t, 2, cvg[0].Len())
	assert.Same(t, consumer.Vertex(0), cvg[0].Vertex(0))
	assert.Same(t, consumer.Vertex(1), cvg[0].Vertex(1))

	cpg := consumer.Vertex(0).ConsumedPartitionGroups()
	require.Len(t, cpg, 1)
	assert.Same(t, cpg[0], consumer.Vertex(1).ConsumedPartitionGroups()[0])
	require.Equal(t, 3, cpg[0].Len())
	for i := range 3 {
		assert.Same(t, r.Partition(i), cpg[0].Partition(i))
	}
	assert.Same(t, cvg[0], cpg[0].ConsumerVertexGroup())
	assert.Equal(t, jobgraph.Blocking, cpg[0].ResultType())
	assert.Equal(t, jobgraph.Blocking, cvg[0].ResultType())
	assert.Same(t, r, cpg[0].Result())
	assert.Same(t, consumer, cvg[0].JobVertex())
	assert.Equal(t, []*IntermediateResult{r}, consumer.Inputs())
	assert.Equal(t, []*ExecutionJobVertex{consumer}, r.Consumers())
}

func TestPointwiseFanIn(t *testing.T) {
	const n = 17
	g := jobgraph.New("fan-in", jobgraph.Streaming)
	vs := vertices(g, 3*n, n)
	g.Connect(vs[0], vs[1], jobgraph.Pointwise, jobgraph.Pipelined)
	eg := build(t, g)

	consumer := eg.JobVertex(vs[1].ID)
	r := eg.JobVertex(vs[0].ID).ProducedResults()[0]
	require.Equal(t, n, eg.NumConsumedPartitionGroups())
	for i := range n {
		v := consumer.Vertex(i)
		start, end := consumedRange(t, v)
		require.Equal(t, []int{3 * i, 3*i + 1, 3*i + 2}, rangeInts(start, end), "consumer %d", i)
		// The three partitions share one ConsumerVertexGroup: {i}.
		cvg := r.Partition(3 * i).ConsumerVertexGroups()[0]
		for p := 3 * i; p < 3*i+3; p++ {
			require.Same(t, cvg, r.Partition(p).ConsumerVertexGroups()[0])
			require.Same(t, v.ConsumedPartitionGroups()[0], r.Partition(p).ConsumedPartitionGroups()[0])
		}
		cs, ce := cvg.VertexRange()
		require.Equal(t, []int{i}, rangeInts(cs, ce))
	}
}

func TestPointwiseFanOut(t *testing.T) {
	for _, tc := range []struct{ n, k int }{{41, 2}, {11, 7}} {
		t.Run(fmt.Sprintf("%d-to-%d", tc.n, tc.k*tc.n), func(t *testing.T) {
			g := jobgraph.New("fan-out", jobgraph.Streaming)
			vs := vertices(g, tc.n, tc.k*tc.n)
			g.Connect(vs[0], vs[1], jobgraph.Pointwise, jobgraph.Pipelined)
			eg := build(t, g)

			consumer := eg.JobVertex(vs[1].ID)
			r := eg.JobVertex(vs[0].ID).ProducedResults()[0]
			require.Equal(t, tc.n, eg.NumConsumedPartitionGroups())
			for i := range tc.k * tc.n {
				start, end := consumedRange(t, consumer.Vertex(i))
				require.Equal(t, []int{i / tc.k}, rangeInts(start, end), "consumer %d", i)
			}
			for p := range tc.n {
				cvgs := r.Partition(p).ConsumerVertexGroups()
				require.Len(t, cvgs, 1)
				cs, ce := cvgs[0].VertexRange()
				require.Equal(t, tc.k*p, cs, "partition %d", p)
				require.Equal(t, tc.k*(p+1), ce, "partition %d", p)
				// Every consumer of the partition shares its one ConsumedPartitionGroup.
				for v := range cvgs[0].Vertices() {
					require.Same(t, r.Partition(p).ConsumedPartitionGroups()[0], v.ConsumedPartitionGroups()[0])
				}
			}
		})
	}
}

func TestPointwiseIrregular(t *testing.T) {
	for _, pair := range [][2]int{{3, 16}, {19, 21}, {15, 20}, {11, 31}} {
		for _, pc := range [][2]int{pair, {pair[1], pair[0]}} {
			producers, consumers := pc[0], pc[1]
			t.Run(fmt.Sprintf("%d-to-%d", producers, consumers), func(t *testing.T) {
				g := jobgraph.New("irregular", jobgraph.Streaming)
				vs := vertices(g, producers, consumers)
				g.Connect(vs[0], vs[1], jobgraph.Pointwise, jobgraph.Pipelined)
				eg := build(t, g)
				lo, hi := min(producers, consumers), max(producers, consumers)
				fan := []int{hi / lo, hi/lo + 1}

				readers := make([]int, producers) // consumers per partition
				for i := range consumers {
					start, end := consumedRange(t, eg.JobVertex(vs[1].ID).Vertex(i))
					require.Greater(t, end-start, 0, "consumer %d reads nothing", i)
					if producers > consumers {
						require.Contains(t, fan, end-start, "consumer %d", i)
					}
					for p := start; p < end; p++ {
						readers[p]++
					}
				}
				r := eg.JobVertex(vs[0].ID).ProducedResults()[0]
				for p, n := range readers {
					require.Greater(t, n, 0, "partition %d is read by nobody", p)
					if producers < consumers {
						require.Contains(t, fan, n, "partition %d", p)
					} else {
						require.Equal(t, 1, n, "partition %d", p)
					}
					require.Equal(t, n, r.Partition(p).ConsumerVertexGroups()[0].Len())
				}
			})
		}
	}
}

func TestResultReadByTwoEdges(t *testing.T) {
	g := jobgraph.New("two readers", jobgraph.Batch)
	vs := vertices(g, 2, 2, 4)
	e := g.Connect(vs[0], vs[1], jobgraph.AllToAll, jobgraph.Blocking)
	var ds *jobgraph.IntermediateDataSet
	for _, d := range vs[0].Results {
		if d.ID == e.Source {
			ds = d
		}
	}
	g.ConnectDataSet(ds, vs[2], jobgraph.Pointwise)
	eg := build(t, g)

	r := eg.Result(ds.ID)
	require.Equal(t, 1+2, eg.NumConsumedPartitionGroups())
	b, c := eg.JobVertex(vs[1].ID), eg.JobVertex(vs[2].ID)
	require.Equal(t, []*ExecutionJobVertex{b, c}, r.Consumers())
	p1 := r.Partition(1)
	require.Len(t, p1.ConsumerVertexGroups(), 2)
	require.Same(t, b, p1.ConsumerVertexGroups()[0].JobVertex())
	require.Same(t, c, p1.ConsumerVertexGroups()[1].JobVertex())
	start, end := p1.ConsumerVertexGroups()[1].VertexRange()
	require.Equal(t, []int{2, 3}, rangeInts(start, end))
	require.Same(t, p1, eg.Partition(p1.ID()))
	require.Same(t, eg.Vertex(jobgraph.ExecutionVertexID{JobVertexID: vs[0].ID, Subtask: 1}), p1.Producer())
	require.Equal(t, []*IntermediateResultPartition{p1}, p1.Producer().ProducedPartitions())
	require.Equal(t, jobgraph.Pointwise, c.InputDistributionPattern(0))
	require.Nil(t, eg.Partition(jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: ds.ID, PartitionIndex: 2}))
}

func rangeInts(start, end int) []int {
	var out []int
	for i := start; i < end; i++ {
		out = append(out, i)
	}
	return out
}

func TestAccessors(t *testing.T) {
	g := jobgraph.New("accessors", jobgraph.Batch)
	vs := vertices(g, 4, 2)
	g.Connect(vs[0], vs[1], jobgraph.Pointwise, jobgraph.Blocking)
	eg := build(t, g)
	top := eg.Topology()
	a, b := eg.JobVertex(vs[0].ID), eg.JobVertex(vs[1].ID)
	r := a.ProducedResults()[0]

	assert.Equal(t, vs[0].Results[0].ID, r.ID())
	assert.Equal(t, jobgraph.Blocking, r.ResultType())
	var idx []int
	for p := range r.Partitions() {
		idx = append(idx, p.Index())
		assert.Same(t, r, p.Result())
		assert.Equal(t, jobgraph.Blocking, p.ResultType())
		assert.Same(t, p, top.Partition(p.ID()))
		if len(idx) == 3 {
			break
		}
	}
	assert.Equal(t, []int{0, 1, 2}, idx)

	var subtasks []int
	for v := range a.Vertices() {
		subtasks = append(subtasks, v.SubtaskIndex())
		assert.Equal(t, jobgraph.ExecutionStateCreated, v.State())
		assert.Same(t, v.Region(), top.RegionOf(v.ID()))
	}
	assert.Equal(t, []int{0, 1, 2, 3}, subtasks)
	for range a.Vertices() {
		break
	}
	for range eg.Vertices() {
		break
	}

	assert.Equal(t, 2, top.NumConsumedPartitionGroups())
	for i := range 2 {
		cpg := b.Vertex(i).ConsumedPartitionGroups()[0]
		assert.Equal(t, i, cpg.Index())
		assert.Equal(t, i, cpg.ConsumerVertexGroup().Index())
		assert.Same(t, r.Partition(2*i+1), cpg.Partition(1))
		for range cpg.Partitions() {
			break
		}
		cvg := cpg.ConsumerVertexGroup()
		assert.Same(t, b.Vertex(i), cvg.Vertex(0))
		for range cvg.Vertices() {
			break
		}
		assert.Panics(t, func() { cpg.Partition(2) })
		assert.Panics(t, func() { cvg.Vertex(1) })
	}

	regions := eg.Regions()
	require.Len(t, regions, 6)
	assert.Equal(t, 1, regions[0].Len())
	assert.Equal(t, "pipelined region #5 (1 vertices)", regions[5].String())
	assert.Nil(t, top.RegionOf(jobgraph.ExecutionVertexID{JobVertexID: vs[0].ID, Subtask: 4}))
}

// TestAllToAllGroupsShareOneRow: where every edge of a result (or every input of a vertex) is
// ALL_TO_ALL, all partitions (or subtasks) have the same groups, so the tables behind
// ConsumedPartitionGroups and ConsumerVertexGroups keep one row for them; a POINTWISE edge
// anywhere keeps one row per partition (or subtask), and both kinds answer the same.
func TestAllToAllGroupsShareOneRow(t *testing.T) {
	g := jobgraph.New("rows", jobgraph.Batch)
	vs := vertices(g, 3, 4, 3, 2)
	a, b, c, d := vs[0], vs[1], vs[2], vs[3]
	ab := g.Connect(a, b, jobgraph.AllToAll, jobgraph.Blocking) // result read by one ALL_TO_ALL edge
	ac := g.Connect(a, c, jobgraph.AllToAll, jobgraph.Blocking) // a second result of a: read ALL_TO_ALL and POINTWISE
	var acSet *jobgraph.IntermediateDataSet
	for _, ds := range a.Results {
		if ds.ID == ac.Source {
			acSet = ds
		}
	}
	g.ConnectDataSet(acSet, d, jobgraph.Pointwise)
	g.Connect(b, d, jobgraph.AllToAll, jobgraph.Blocking) // d: one POINTWISE and one ALL_TO_ALL input
	eg := build(t, g)

	rab, rac := eg.Result(ab.Source), eg.Result(ac.Source)
	assert.Len(t, rab.consumedGroups, 1, "one ALL_TO_ALL edge: one shared row")
	assert.Len(t, rab.consumerGroups, 1)
	assert.Len(t, rac.consumedGroups, 3*2, "an edge is POINTWISE: a row per partition")
	eb, ec, ed := eg.JobVertex(b.ID), eg.JobVertex(c.ID), eg.JobVertex(d.ID)
	assert.Len(t, eb.consumedBacking, 1, "b's only input is ALL_TO_ALL")
	assert.Len(t, ec.consumedBacking, 1)
	assert.Len(t, ed.consumedBacking, 2*2, "d has a POINTWISE input: a row per subtask")

	bGroup := &eb.inputs[0].consumed[0]
	for s := range 4 {
		require.Equal(t, []*ConsumedPartitionGroup{bGroup}, eb.Vertex(s).ConsumedPartitionGroups(), "b%d", s)
	}
	for p := range 3 {
		part := rab.Partition(p)
		require.Equal(t, []*ConsumedPartitionGroup{bGroup}, part.ConsumedPartitionGroups(), "partition %d of a→b", p)
		require.Equal(t, []*ConsumerVertexGroup{bGroup.ConsumerVertexGroup()}, part.ConsumerVertexGroups())
	}
	// a→c (ALL_TO_ALL) and a→d (POINTWISE, 3 partitions to 2 subtasks: [0,1) and [1,3)).
	cGroup := &ec.inputs[0].consumed[0]
	dGroups := ed.inputs[0].consumed
	require.Len(t, dGroups, 2)
	for p, want := range []int{0, 1, 1} {
		require.Equal(t, []*ConsumedPartitionGroup{cGroup, &dGroups[want]}, rac.Partition(p).ConsumedPartitionGroups(), "partition %d of a's second result", p)
	}
	bdGroup := &ed.inputs[1].consumed[0]
	for s, want := range []int{0, 1} {
		require.Equal(t, []*ConsumedPartitionGroup{&dGroups[want], bdGroup}, ed.Vertex(s).ConsumedPartitionGroups(), "d%d", s)
	}
	assert.Equal(t, 1+1+2+1, eg.NumConsumedPartitionGroups())
}
