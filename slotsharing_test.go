package jobgraph_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

// AddVertex puts every vertex in Flink's "default" slot-sharing group; the host opts out with
// WithoutSlotSharingGroup (or WithSlotSharingGroup("")) or picks another group.
func TestAddVertexJoinsTheDefaultSlotSharingGroup(t *testing.T) {
	assert.Equal(t, "default", jobgraph.DefaultSlotSharingGroup)
	g := jobgraph.New("groups", jobgraph.Streaming)
	src := g.AddVertex("source", "read", 2)
	sink := g.AddVertex("sink", "write", 2)
	alone := g.AddVertex("alone", "run", 1).WithoutSlotSharingGroup()
	empty := g.AddVertex("empty", "run", 1).WithSlotSharingGroup("")
	other := g.AddVertex("other", "run", 1).WithSlotSharingGroup("sinks")
	assert.Equal(t, "default", src.SlotSharingGroup)
	assert.Equal(t, "default", sink.SlotSharingGroup)
	assert.Equal(t, "", alone.SlotSharingGroup)
	assert.Equal(t, "", empty.SlotSharingGroup)
	assert.Equal(t, "sinks", other.SlotSharingGroup)
	assert.Same(t, alone, alone.WithoutSlotSharingGroup(), "returns v for chaining")

	// A struct literal has no group: the default is the builder's, not the type's.
	assert.Equal(t, "", (&jobgraph.JobVertex{}).SlotSharingGroup)

	// Co-location with the default group is valid without naming a group.
	g = jobgraph.New("coloc", jobgraph.Streaming)
	head := g.AddVertex("head", "run", 2).WithCoLocationGroup("iter")
	tail := g.AddVertex("tail", "run", 2).WithCoLocationGroup("iter")
	g.Connect(head, tail, jobgraph.Pointwise, jobgraph.Pipelined)
	require.NoError(t, g.Validate())
}

// The JSON form holds each vertex's group as set: "default" from AddVertex is written out, an
// opted-out vertex has no "slotSharingGroup", and Decode applies no default, so absent, "" and
// null all decode as no group and every graph decodes to the groups it was encoded with.
func TestSlotSharingGroupJSONKeepsTheExplicitChoice(t *testing.T) {
	g := jobgraph.New("groups", jobgraph.Streaming)
	g.JobID = jid(1)
	src := g.AddVertex("source", "read", 2)
	src.ID = vid(2)
	alone := g.AddVertex("alone", "run", 2).WithoutSlotSharingGroup()
	alone.ID = vid(3)
	other := g.AddVertex("other", "run", 2).WithSlotSharingGroup("sinks")
	other.ID = vid(4)
	g.Connect(src, alone, jobgraph.Pointwise, jobgraph.Pipelined).Source = dsid(5)
	src.Results[0].ID = dsid(5)
	g.Connect(alone, other, jobgraph.Pointwise, jobgraph.Pipelined).Source = dsid(6)
	alone.Results[0].ID = dsid(6)
	require.NoError(t, g.Validate())

	data, err := json.Marshal(g)
	require.NoError(t, err)
	const want = `{"jobId":"00000000000000000000000000000001","name":"groups","type":"STREAMING","vertices":[` +
		`{"id":"00000000000000000000000000000002","name":"source","parallelism":2,"invokable":"read","slotSharingGroup":"default",` +
		`"results":[{"id":"00000000000000000000000000000005","resultType":"PIPELINED"}]},` +
		`{"id":"00000000000000000000000000000003","name":"alone","parallelism":2,"invokable":"run",` +
		`"inputs":[{"source":"00000000000000000000000000000005","target":"00000000000000000000000000000003","distributionPattern":"POINTWISE"}],` +
		`"results":[{"id":"00000000000000000000000000000006","resultType":"PIPELINED"}]},` +
		`{"id":"00000000000000000000000000000004","name":"other","parallelism":2,"invokable":"run","slotSharingGroup":"sinks",` +
		`"inputs":[{"source":"00000000000000000000000000000006","target":"00000000000000000000000000000004","distributionPattern":"POINTWISE"}]}]}`
	assert.Equal(t, want, string(data))

	back, err := jobgraph.Decode(data)
	require.NoError(t, err)
	require.Equal(t, g, back)
	assert.Equal(t, []string{"default", "", "sinks"}, groupsOf(back))
	again, err := json.Marshal(back)
	require.NoError(t, err)
	assert.Equal(t, string(data), string(again))

	// Hand-written JSON: absent, "" and null mean no group; a name is kept as written.
	for _, tc := range []struct{ field, want string }{
		{``, ""},
		{`,"slotSharingGroup":""`, ""},
		{`,"slotSharingGroup":null`, ""},
		{`,"slotSharingGroup":"default"`, "default"},
		{`,"slotSharingGroup":"mine"`, "mine"},
	} {
		in := `{"jobId":"00000000000000000000000000000001","vertices":[{"id":"00000000000000000000000000000002","parallelism":1,"invokable":"x"` + tc.field + `}]}`
		d, err := jobgraph.Decode([]byte(in))
		require.NoError(t, err, in)
		assert.Equal(t, tc.want, d.Vertices[0].SlotSharingGroup, in)
		out, err := json.Marshal(d)
		require.NoError(t, err)
		assert.Equal(t, tc.want != "", strings.Contains(string(out), `"slotSharingGroup"`), "re-encoded: %s", out)
	}
}

func groupsOf(g *jobgraph.JobGraph) []string {
	var out []string
	for _, v := range g.Vertices {
		out = append(out, v.SlotSharingGroup)
	}
	return out
}
