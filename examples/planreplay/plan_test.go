package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/flinkplan"
)

// testdata is flinkplan's directory of real Flink plans, read in place.
const testdata = "../../flinkplan/testdata"

// planCase is one plan with its summary counted by hand from the plan's JSON.
type planCase struct {
	file string
	want summary // Status: FINISHED for every plan here
}

// realPlans are every plan in flinkplan/testdata, counted by hand. Regions are pipelined regions
// of the ExecutionGraph, over subtasks (ExecutionVertices), not job vertices: a pipelined
// ALL_TO_ALL edge joins every producer subtask with every consumer subtask; a pipelined POINTWISE
// edge joins only the subtasks it connects (subtask i with subtask i at equal parallelism); a
// BLOCKING edge joins nothing. Plans without an "exchange" (execution plans) get
// PIPELINED_BOUNDED edges for a STREAMING job. HASH, REBALANCE and HASH[…] are ALL_TO_ALL,
// FORWARD and RESCALE POINTWISE.
var realPlans = []planCase{
	// REST. Nodes: Source: Custom File Source (p1) -REBALANCE-> Split Reader -> Flat Map (p4)
	// -HASH-> Keyed Aggregation -> Sink (p4): 3 vertices, 2 edges, 1+4+4 = 9 tasks. Both edges
	// pipelined_bounded ALL_TO_ALL: the source subtask joins all 4 reader subtasks, which join all
	// 4 aggregation subtasks: 1 region. One "default" group: slots = max parallelism 4.
	{"rest_streaming_wordcount_p4.json", summary{Vertices: 3, Edges: 2, Tasks: 9, Regions: 1, Slots: 4}},
	// REST, type BATCH. Two TableSourceScans (p1 each) -HASH[id]-> HashJoin (p1) -FORWARD->
	// IcebergFilesCommitter -> Sink (p1): 4 vertices, 3 edges, 4 tasks. Every exchange is
	// blocking, so no edge joins subtasks: each of the 4 subtasks is its own region. Slots 1.
	{"rest_iceberg_batch_hashjoin_blocking.json", summary{Vertices: 4, Edges: 3, Tasks: 4, Regions: 4, Slots: 1}},
	// REST, type STREAMING. The same shape as the batch join (2 scans p1 -HASH-> Join p1
	// -FORWARD-> committer p1): 4 vertices, 3 edges, 4 tasks; every exchange pipelined_bounded,
	// so all 4 subtasks are one connected region. Slots 1.
	{"rest_iceberg_streaming_join.json", summary{Vertices: 4, Edges: 3, Tasks: 4, Regions: 1, Slots: 1}},
	// REST, 12 nodes, each but the source with one input: 12 vertices, 11 edges. The source (p2)
	// feeds two branches: bucket_assigner (p2) -> hoodie_stream_write (p4) ->
	// compact_plan_generate (p1) -> compact_task (p4) -> Sink: compact_commit (p1), and
	// GroupAggregate (p2) -> the same five again. Tasks 2 + 2×(2+4+1+4+1) = 26, plus the
	// GroupAggregate's 2 = 28. Every edge is HASH or REBALANCE (ALL_TO_ALL) and pipelined_bounded,
	// and both branches hang off the one source, so all 28 subtasks are 1 region. Slots 4.
	{"rest_hudi_two_sinks_12v.json", summary{Vertices: 12, Edges: 11, Tasks: 28, Regions: 1, Slots: 4}},
	// Execution plan, 7 operators. Chains (FORWARD, equal parallelism, single input):
	// [1 Source, 4 SourceConversion, 5 Calc] p1; [7 GroupAggregate, 8 Calc] p4;
	// [10 LookupJoin, 11 Sink] p1 — the HASH edges 5->7 and 8->10 stay: 3 vertices, 2 edges,
	// 1+4+1 = 6 tasks. STREAMING, so PIPELINED_BOUNDED ALL_TO_ALL edges: 1 region. Slots 4.
	{"execplan_lookupjoin_flink_testresource.json", summary{Vertices: 3, Edges: 2, Tasks: 6, Regions: 1, Slots: 4}},
	// Execution plan, 9 operators, all p4. Chains: [12 Source .. 17 LocalGroupAggregate] (FORWARD
	// throughout); [19 IncrementalGroupAggregate]; [21 GlobalGroupAggregate, 25 Writer]. The HASH
	// edges 17->19 and 19->21 stay: 3 vertices, 2 edges, 12 tasks, 1 region (pipelined
	// ALL_TO_ALL), slots 4.
	{"execplan_nexmark_q16_p4.json", summary{Vertices: 3, Edges: 2, Tasks: 12, Regions: 1, Slots: 4}},
}

// restNode and restInput write hand-made REST plans.
type restNode struct {
	ID          string      `json:"id"`
	Parallelism int         `json:"parallelism"`
	Description string      `json:"description"`
	Inputs      []restInput `json:"inputs,omitempty"`
}

type restInput struct {
	Num          int    `json:"num"`
	ID           string `json:"id"`
	ShipStrategy string `json:"ship_strategy"`
	Exchange     string `json:"exchange"`
}

// nodeID is a REST node ID (32 hex characters) for a small number.
func nodeID(n int) string { return fmt.Sprintf("%032x", n) }

// writeRESTPlan writes a REST plan with the given nodes to a temporary file and returns its path.
func writeRESTPlan(t *testing.T, name string, nodes ...restNode) string {
	t.Helper()
	data, err := json.MarshalIndent(map[string]any{"jid": nodeID(0xabc), "name": name, "nodes": nodes}, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), name+".json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

func in(producer int, ship, exchange string) restInput {
	return restInput{ID: nodeID(producer), ShipStrategy: ship, Exchange: exchange}
}

// handPlan is a hand-made plan for the region and slot rules the real plans do not exercise.
type handPlan struct {
	name  string
	nodes []restNode
	want  summary
}

var handPlans = []handPlan{
	// A (p2) -FORWARD-> B (p2) -FORWARD-> C (p2), pipelined: POINTWISE at equal parallelism joins
	// subtask i with subtask i only, so {A0,B0,C0} and {A1,B1,C1}: 2 regions. Slots 2.
	{"forward_chain_p2", []restNode{
		{ID: nodeID(1), Parallelism: 2, Description: "A"},
		{ID: nodeID(2), Parallelism: 2, Description: "B", Inputs: []restInput{in(1, "FORWARD", "pipelined_bounded")}},
		{ID: nodeID(3), Parallelism: 2, Description: "C", Inputs: []restInput{in(2, "FORWARD", "pipelined")}},
	}, summary{Vertices: 3, Edges: 2, Tasks: 6, Regions: 2, Slots: 2}},
	// A (p4) -RESCALE-> B (p2), pipelined POINTWISE: B's subtask j reads A's subtasks 2j and
	// 2j+1, so {A0,A1,B0} and {A2,A3,B1}: 2 regions. Slots 4.
	{"rescale_p4_p2", []restNode{
		{ID: nodeID(1), Parallelism: 4, Description: "A"},
		{ID: nodeID(2), Parallelism: 2, Description: "B", Inputs: []restInput{in(1, "RESCALE", "pipelined_bounded")}},
	}, summary{Vertices: 2, Edges: 1, Tasks: 6, Regions: 2, Slots: 4}},
	// A (p2) -HASH-> B (p2), blocking: nothing is joined, each of the 4 subtasks is a region.
	{"blocking_hash_p2", []restNode{
		{ID: nodeID(1), Parallelism: 2, Description: "A"},
		{ID: nodeID(2), Parallelism: 2, Description: "B", Inputs: []restInput{in(1, "HASH", "blocking")}},
	}, summary{Vertices: 2, Edges: 1, Tasks: 4, Regions: 4, Slots: 2}},
	// Two unconnected pipelines, A (p2) -HASH-> B (p3) and C (p1) -REBALANCE-> D (p1), all
	// pipelined ALL_TO_ALL: one region per connected component, 2. Slots max(2,3,1,1) = 3.
	{"two_components", []restNode{
		{ID: nodeID(1), Parallelism: 2, Description: "A"},
		{ID: nodeID(2), Parallelism: 3, Description: "B", Inputs: []restInput{in(1, "HASH", "pipelined_bounded")}},
		{ID: nodeID(3), Parallelism: 1, Description: "C"},
		{ID: nodeID(4), Parallelism: 1, Description: "D", Inputs: []restInput{in(3, "REBALANCE", "pipelined_bounded")}},
	}, summary{Vertices: 4, Edges: 2, Tasks: 7, Regions: 2, Slots: 3}},
	// A (p2) -FORWARD, blocking-> B (p2) -HASH, pipelined-> C (p3): A0 and A1 are regions of their
	// own; B's and C's 5 subtasks are joined ALL_TO_ALL: 3 regions. Slots 3.
	{"blocking_then_pipelined", []restNode{
		{ID: nodeID(1), Parallelism: 2, Description: "A"},
		{ID: nodeID(2), Parallelism: 2, Description: "B", Inputs: []restInput{in(1, "FORWARD", "blocking")}},
		{ID: nodeID(3), Parallelism: 3, Description: "C", Inputs: []restInput{in(2, "HASH", "pipelined_bounded")}},
	}, summary{Vertices: 3, Edges: 2, Tasks: 7, Regions: 3, Slots: 3}},
}

// TestRealPlansAreAllCounted keeps realPlans in step with flinkplan/testdata: a plan added there
// must be counted by hand here.
func TestRealPlansAreAllCounted(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testdata, "*.json"))
	require.NoError(t, err)
	var files, counted []string
	for _, p := range paths {
		files = append(files, filepath.Base(p))
	}
	for _, c := range realPlans {
		counted = append(counted, c.file)
	}
	slices.Sort(counted)
	assert.Equal(t, files, counted)
}

func TestDescribeCountsRealPlans(t *testing.T) {
	for _, c := range realPlans {
		t.Run(c.file, func(t *testing.T) {
			p, err := loadPlan(filepath.Join(testdata, c.file))
			require.NoError(t, err)
			got, err := describe(p.Graph)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestDescribeCountsHandPlans(t *testing.T) {
	for _, c := range handPlans {
		t.Run(c.name, func(t *testing.T) {
			p, err := loadPlan(writeRESTPlan(t, c.name, c.nodes...))
			require.NoError(t, err)
			got, err := describe(p.Graph)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// TestDescribeLeavesGraphAlone: counting regions builds an ExecutionGraph from a copy, so the
// graph to submit is unchanged, and two calls agree.
func TestDescribeLeavesGraphAlone(t *testing.T) {
	p, err := loadPlan(filepath.Join(testdata, "rest_hudi_two_sinks_12v.json"))
	require.NoError(t, err)
	before, err := json.Marshal(p.Graph)
	require.NoError(t, err)
	first, err := describe(p.Graph)
	require.NoError(t, err)
	second, err := describe(p.Graph)
	require.NoError(t, err)
	assert.Equal(t, first, second)
	after, err := json.Marshal(p.Graph)
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after))
}

// vspec is a vertex for TestSlotsNeeded: its parallelism and slot-sharing group.
type vspec struct {
	p     int
	group string
}

func TestSlotsNeeded(t *testing.T) {
	tests := []struct {
		name string
		vs   []vspec
		want int
	}{
		{"one group: the largest parallelism", []vspec{{1, "default"}, {4, "default"}, {4, "default"}}, 4},
		{"groups add up", []vspec{{3, "a"}, {2, "a"}, {4, "b"}, {1, "b"}}, 7},
		{"no group: every vertex alone", []vspec{{3, ""}, {2, ""}}, 5},
		{"mixed", []vspec{{3, "a"}, {2, "a"}, {4, "b"}, {1, ""}, {5, ""}}, 13},
		{"empty graph", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := jobgraph.New("slots", jobgraph.Streaming)
			for i, v := range tt.vs {
				g.AddVertex(fmt.Sprintf("v%d", i), "x", v.p).WithSlotSharingGroup(v.group)
			}
			assert.Equal(t, tt.want, slotsNeeded(g))
		})
	}
}

func TestLoadPlanNamesMissingNode(t *testing.T) {
	missing := nodeID(0xdead)
	path := writeRESTPlan(t, "missing_input",
		restNode{ID: nodeID(1), Parallelism: 1, Description: "Source: numbers"},
		restNode{ID: nodeID(2), Parallelism: 1, Description: "Sink: print", Inputs: []restInput{
			in(1, "FORWARD", "pipelined_bounded"),
			{Num: 1, ID: missing, ShipStrategy: "HASH", Exchange: "pipelined_bounded"},
		}},
	)
	_, err := loadPlan(path)
	require.ErrorIs(t, err, flinkplan.ErrInvalidPlan)
	var pe *flinkplan.PlanError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, nodeID(2), pe.Node)
	assert.Equal(t, "Sink: print", pe.NodeName)
	assert.Contains(t, err.Error(), missing)
	assert.Contains(t, err.Error(), "does not exist")
	assert.True(t, strings.HasPrefix(err.Error(), path+": "), err.Error())
}

func TestLoadPlanNamesMissingPredecessor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "execplan.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"nodes":[
		{"id":1,"type":"Source: a","pact":"Data Source","contents":"Source: a","parallelism":1},
		{"id":2,"type":"Sink: b","pact":"Data Sink","contents":"Sink: b","parallelism":1,
		 "predecessors":[{"id":77,"ship_strategy":"FORWARD","side":"second"}]}]}`), 0o644))
	_, err := loadPlan(path)
	require.ErrorIs(t, err, flinkplan.ErrInvalidPlan)
	var pe *flinkplan.PlanError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "2", pe.Node)
	assert.Contains(t, err.Error(), "names node 77, which does not exist")
}

func TestLoadPlanMissingFile(t *testing.T) {
	_, err := loadPlan(filepath.Join(t.TempDir(), "nope.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
