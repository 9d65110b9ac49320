package executiongraph

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// manualClock returns the time it was last set to.
type manualClock struct{ now time.Time }

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time          { return c.now }
func (c *manualClock) Advance(d time.Duration) { c.now = c.now.Add(d) }

// build builds g with a manual clock and fails the test on error.
func build(t testing.TB, g *jobgraph.JobGraph, opts ...Option) *ExecutionGraph {
	t.Helper()
	eg, err := Build(g, opts...)
	require.NoError(t, err)
	return eg
}

// short names a vertex by job vertex name and subtask index: "map2".
func short(v *ExecutionVertex) string {
	return fmt.Sprintf("%s%d", v.JobVertex().Name(), v.SubtaskIndex())
}

// regionNames lists every region's vertices by short name, regions in Regions order.
func regionNames(eg *ExecutionGraph) [][]string {
	var out [][]string
	for _, r := range eg.Regions() {
		var names []string
		for _, v := range r.Vertices() {
			names = append(names, short(v))
		}
		out = append(out, names)
	}
	return out
}

// chain returns a graph with one vertex per parallelism given, named a, b, c…, unconnected.
func vertices(g *jobgraph.JobGraph, parallelism ...int) []*jobgraph.JobVertex {
	var vs []*jobgraph.JobVertex
	for i, p := range parallelism {
		vs = append(vs, g.AddVertex(string(rune('a'+i)), "noop", p))
	}
	return vs
}

// consumerRange returns the contiguous range of partition indexes consumer c of input 0 reads,
// and checks it is contiguous.
func consumedRange(t *testing.T, v *ExecutionVertex) (start, end int) {
	t.Helper()
	groups := v.ConsumedPartitionGroups()
	require.Len(t, groups, 1)
	start, end = groups[0].PartitionRange()
	i := start
	for p := range groups[0].Partitions() {
		require.Equal(t, i, p.Index())
		i++
	}
	require.Equal(t, end, i)
	return start, end
}
