package flinkplan

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// slots is the number of slots the graph needs: per slot-sharing group the largest parallelism
// in it, summed over the groups (a vertex without a group needs its own).
func slots(g *jobgraph.JobGraph) int {
	perGroup := map[string]int{}
	alone := 0
	for _, v := range g.Vertices {
		if v.SlotSharingGroup == "" {
			alone += v.Parallelism
			continue
		}
		perGroup[v.SlotSharingGroup] = max(perGroup[v.SlotSharingGroup], v.Parallelism)
	}
	n := alone
	for _, p := range perGroup {
		n += p
	}
	return n
}

// label names a vertex in the tables below by the plan node it was built from (the chain head
// for execution plans): the node ID, cut to 4 characters for REST's 32-hex IDs.
func label(p *Plan, id jobgraph.JobVertexID) string {
	s := p.Operators[id][0].ID
	if p.Format == REST {
		s = s[:4]
	}
	return s
}

type vertexView struct {
	Label       string
	Name        string
	Parallelism int
}

type edgeView struct {
	From, To string
	Ship     string
	Pattern  jobgraph.DistributionPattern
	Result   jobgraph.ResultPartitionType
}

func views(p *Plan) ([]vertexView, []edgeView) {
	producers := p.Graph.Producers()
	results := map[jobgraph.IntermediateDataSetID]jobgraph.ResultPartitionType{}
	for _, v := range p.Graph.Vertices {
		for _, ds := range v.Results {
			results[ds.ID] = ds.ResultType
		}
	}
	var vs []vertexView
	var es []edgeView
	for _, v := range p.Graph.Vertices {
		vs = append(vs, vertexView{label(p, v.ID), v.Name, v.Parallelism})
		for _, e := range v.Inputs {
			es = append(es, edgeView{label(p, producers[e.Source].ID), label(p, v.ID), e.ShipStrategy, e.DistributionPattern, results[e.Source]})
		}
	}
	return vs, es
}

func readPlan(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return data
}

const (
	a2a = jobgraph.AllToAll
	pw  = jobgraph.Pointwise
	pb  = jobgraph.PipelinedBounded
	blk = jobgraph.Blocking
)

// Every plan in testdata, with the numbers counted by hand from the JSON. V and E are after
// chaining; T is the sum of the vertices' parallelism; S, with every vertex in the one
// slot-sharing group "default", is the largest parallelism.
var testdataPlans = []struct {
	file     string
	format   Format
	jobType  jobgraph.JobType
	jobID    string // "" when the plan has none (a random one is made)
	jobName  string
	v, e     int
	tasks    int
	slots    int
	vertices []vertexView // in graph order; nil: not checked
	edges    []edgeView   // grouped by consumer in graph order, in input order; nil: not checked
}{
	{
		// 3 nodes, so V = 3 (REST nodes are already chains). Inputs: b5c8 ← 20ba (HASH) and
		// 20ba ← bc76 (REBALANCE); bc76 has none: E = 2. Parallelism 4 + 4 + 1: T = 9, S = 4.
		// No "type", every exchange pipelined_bounded: STREAMING.
		file: "rest_streaming_wordcount_p4.json", format: REST, jobType: jobgraph.Streaming,
		jobID: "8ae3c1443d44142c861257df1fb2846c", jobName: "Streaming WordCount",
		v: 3, e: 2, tasks: 9, slots: 4,
		vertices: []vertexView{
			{"b5c8", "Keyed Aggregation -> Sink: Unnamed", 4},
			{"20ba", "Split Reader: Custom File Source -> Flat Map", 4},
			{"bc76", "Source: Custom File Source", 1},
		},
		edges: []edgeView{
			{"20ba", "b5c8", "HASH", a2a, pb},
			{"bc76", "20ba", "REBALANCE", a2a, pb},
		},
	},
	{
		// 4 nodes: V = 4. Inputs: c2cd ← 4bf7 (FORWARD), 4bf7 ← bc76 (num 0) and ← feca (num 1),
		// both HASH[id]; the two scans have none: E = 3. All parallelism 1: T = 4, S = 1. "type":
		// "BATCH", every exchange blocking: BATCH. Descriptions are Flink's tree style: "<br/>" is a
		// line break, the trailing one dropped.
		file: "rest_iceberg_batch_hashjoin_blocking.json", format: REST, jobType: jobgraph.Batch,
		jobID: "5a9d043fa00fe3244421f7b06a299c4a", jobName: "insert-into_cat2.cat2_db2.t4",
		v: 4, e: 3, tasks: 4, slots: 1,
		vertices: []vertexView{
			{"c2cd", "IcebergFilesCommitter\n+- Sink: IcebergSink cat2.cat2_db2.t4", 1},
			{"4bf7", "[23]:HashJoin(joinType=[InnerJoin], where=[(id = id0)], select=[id, id0, age], build=[left])\n+- [24]:Calc(select=[id, age])\n   +- IcebergStreamWriter", 1},
			{"bc76", "[19]:TableSourceScan(table=[[cat2, cat2_db2, t2, project=[id]]], fields=[id])", 1},
			{"feca", "[21]:TableSourceScan(table=[[cat2, cat2_db2, t2]], fields=[id, age])", 1},
		},
		edges: []edgeView{
			{"4bf7", "c2cd", "FORWARD", pw, blk},
			{"bc76", "4bf7", "HASH[id]", a2a, blk},
			{"feca", "4bf7", "HASH[id]", a2a, blk},
		},
	},
	{
		// Same shape as the batch join: V = 4, E = 3 (c2cd ← 4bf7 FORWARD; 4bf7 ← bc76, feca
		// HASH), all parallelism 1: T = 4, S = 1. "type": "STREAMING", pipelined_bounded.
		file: "rest_iceberg_streaming_join.json", format: REST, jobType: jobgraph.Streaming,
		jobID: "16aaf923d43413315e6b4b80b1c146c1", jobName: "insert-into_cat2.cat2_db2.t3",
		v: 4, e: 3, tasks: 4, slots: 1,
		edges: []edgeView{
			{"4bf7", "c2cd", "FORWARD", pw, pb},
			{"bc76", "4bf7", "HASH", a2a, pb},
			{"feca", "4bf7", "HASH", a2a, pb},
		},
	},
	{
		// 12 nodes: V = 12. Every node but the source e3df has one input: E = 11; e3df feeds two
		// pipelines (1e74 and c821). Parallelism in file order 1+4+1+4+2+1+4+1+4+2+2+2: T = 28,
		// S = 4. No "type", pipelined_bounded everywhere: STREAMING.
		file: "rest_hudi_two_sinks_12v.json", format: REST, jobType: jobgraph.Streaming,
		jobID: "f19a5f87b09115ed1d791fa88f84e676", jobName: "insert-into_default_catalog.default_database.user_sink,default_catalog.default_database.level_stat",
		v: 12, e: 11, tasks: 28, slots: 4,
		vertices: []vertexView{
			{"af00", "Sink: compact_commit", 1},
			{"2d0c", "compact_task", 4},
			{"7e50", "compact_plan_generate", 1},
			{"019f", "hoodie_stream_write", 4},
			{"1e74", "bucket_assigner", 2},
			{"a4de", "Sink: compact_commit", 1},
			{"1c60", "compact_task", 4},
			{"4154", "compact_plan_generate", 1},
			{"4de5", "hoodie_stream_write", 4},
			{"3406", "bucket_assigner", 2},
			{"c821", "GroupAggregate(groupBy=[level], select=[level, COUNT_RETRACT(*) AS EXPR$1]) -> NotNullEnforcer(fields=[level]) -> Map", 2},
			{"e3df", "Source: TableSourceScan(table=[[default_catalog, default_database, user_src]], fields=[id, userId, level, amount, update_time]) -> (NotNullEnforcer(fields=[id]) -> Map, Calc(select=[level]))", 2},
		},
		edges: []edgeView{
			{"2d0c", "af00", "REBALANCE", a2a, pb},
			{"7e50", "2d0c", "REBALANCE", a2a, pb},
			{"019f", "7e50", "REBALANCE", a2a, pb},
			{"1e74", "019f", "HASH", a2a, pb},
			{"e3df", "1e74", "HASH", a2a, pb},
			{"1c60", "a4de", "REBALANCE", a2a, pb},
			{"4154", "1c60", "REBALANCE", a2a, pb},
			{"4de5", "4154", "REBALANCE", a2a, pb},
			{"3406", "4de5", "HASH", a2a, pb},
			{"c821", "3406", "HASH", a2a, pb},
			{"e3df", "c821", "HASH", a2a, pb},
		},
	},
	{
		// 9 operators, all parallelism 4, a line 12→13→14→15→16→17→19→21→25. FORWARD with equal
		// parallelism and a single input chains 12-13-14-15-16-17 and 21-25; 17→19 and 19→21 are
		// HASH. Chains {12..17}, {19}, {21,25}: V = 3, E = 2, T = 3×4 = 12, S = 4. STREAMING (no
		// type, no exchanges).
		file: "execplan_nexmark_q16_p4.json", format: ExecutionPlan, jobType: jobgraph.Streaming,
		jobName: DefaultStreamingJobName, v: 3, e: 2, tasks: 12, slots: 4,
		vertices: []vertexView{
			{"12", "Source: kafka[7] -> MiniBatchAssigner[8] -> Calc[9] -> Expand[10] -> Calc[11] -> LocalGroupAggregate[12]", 4},
			{"19", "IncrementalGroupAggregate[14]", 4},
			{"21", "GlobalGroupAggregate[16] -> nexmark_q16[17]: Writer", 4},
		},
		edges: []edgeView{
			{"12", "19", "HASH", a2a, pb},
			{"19", "21", "HASH", a2a, pb},
		},
	},
	{
		// 7 operators in a line 1→4→5→7→8→10→11 with parallelism 1,1,1,4,4,1,1. FORWARD p1→p1
		// chains 1-4-5, FORWARD p4→p4 chains 7-8, FORWARD p1→p1 chains 10-11; 5→7 (p1→p4) and
		// 8→10 (p4→p1) are HASH. Chains {1,4,5} p1, {7,8} p4, {10,11} p1: V = 3, E = 2,
		// T = 1+4+1 = 6, S = 4. STREAMING.
		file: "execplan_lookupjoin_flink_testresource.json", format: ExecutionPlan, jobType: jobgraph.Streaming,
		jobName: DefaultStreamingJobName, v: 3, e: 2, tasks: 6, slots: 4,
		vertices: []vertexView{
			{"1", "Source: Collection Source -> SourceConversion[1] -> Calc[2]", 1},
			{"7", "GroupAggregate[4] -> Calc[5]", 4},
			{"10", "LookupJoin[6] -> Sink: Sink1[7]", 1},
		},
		edges: []edgeView{
			{"1", "7", "HASH", a2a, pb},
			{"7", "10", "HASH", a2a, pb},
		},
	},
}

func TestTestdataPlans(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.Len(t, files, len(testdataPlans), "every plan in testdata has a row")

	for _, tc := range testdataPlans {
		t.Run(tc.file, func(t *testing.T) {
			data := readPlan(t, tc.file)
			format, err := DetectFormat(data)
			require.NoError(t, err)
			require.Equal(t, tc.format, format)

			p, err := Parse(data)
			require.NoError(t, err)
			g := p.Graph
			require.NoError(t, g.Validate())
			require.Equal(t, tc.format, p.Format)
			require.Equal(t, tc.jobType, g.Type)
			require.Equal(t, tc.jobName, g.Name)
			if tc.jobID != "" {
				require.Equal(t, tc.jobID, g.JobID.String())
			}
			require.Len(t, g.Vertices, tc.v, "V")
			require.Equal(t, tc.e, g.NumEdges(), "E")
			require.Equal(t, tc.tasks, g.NumTasks(), "T")
			require.Equal(t, tc.slots, slots(g), "S")

			vs, es := views(p)
			if tc.vertices != nil {
				require.Equal(t, tc.vertices, vs)
			}
			if tc.edges != nil {
				require.Equal(t, tc.edges, es)
			}
			for _, v := range g.Vertices {
				require.Equal(t, DefaultInvokable, v.Invokable)
				require.Equal(t, SlotSharingGroup, v.SlotSharingGroup)
				var cfg VertexConfig
				require.NoError(t, json.Unmarshal(v.Config, &cfg))
				require.Equal(t, VertexConfig{Format: tc.format, Operators: p.Operators[v.ID]}, cfg)
				if tc.format == REST {
					require.Equal(t, v.ID.String(), cfg.Operators[0].ID, "REST vertices keep their IDs")
				}
			}

			// Importing again gives the same graph, JobID aside for execution plans.
			again, err := Parse(data, WithJobID(g.JobID))
			require.NoError(t, err)
			require.Equal(t, g, again.Graph)
		})
	}
}

func TestRequiredScenarios(t *testing.T) {
	g, err := Import(readPlan(t, "rest_streaming_wordcount_p4.json"))
	require.NoError(t, err)
	require.Equal(t, []int{3, 2, 9, 4}, []int{len(g.Vertices), g.NumEdges(), g.NumTasks(), slots(g)})
	require.Equal(t, jobgraph.Streaming, g.Type)

	g, err = Import(readPlan(t, "rest_iceberg_batch_hashjoin_blocking.json"))
	require.NoError(t, err)
	require.Equal(t, jobgraph.Batch, g.Type)
	require.Equal(t, []int{4, 3, 4, 1}, []int{len(g.Vertices), g.NumEdges(), g.NumTasks(), slots(g)})
}

func TestExecutionPlanDetails(t *testing.T) {
	p, err := Parse(readPlan(t, "execplan_nexmark_q16_p4.json"))
	require.NoError(t, err)
	head := p.Graph.Vertices[0]
	require.Equal(t, jobgraph.JobVertexID(derivedID("vertex", "12")), head.ID)
	ops := p.Operators[head.ID]
	require.Len(t, ops, 6)
	ids := make([]string, len(ops))
	for i, op := range ops {
		ids[i] = op.ID
	}
	require.Equal(t, []string{"12", "13", "14", "15", "16", "17"}, ids)
	require.Equal(t, Operator{ID: "13", Name: "MiniBatchAssigner[8]", Parallelism: 4, Pact: "Operator",
		Contents: "[8]:MiniBatchAssigner(interval=[2000ms], mode=[ProcTime])"}, ops[1])
	require.Equal(t, "Data Source", ops[0].Pact)
}

func TestOptions(t *testing.T) {
	jobID := jobgraph.NewJobID()
	g, err := Import(readPlan(t, "rest_streaming_wordcount_p4.json"), WithInvokable("my-task"), WithJobID(jobID), nil)
	require.NoError(t, err)
	require.Equal(t, jobID, g.JobID)
	for _, v := range g.Vertices {
		require.Equal(t, "my-task", v.Invokable)
	}
	g, err = Import(readPlan(t, "rest_streaming_wordcount_p4.json"), WithInvokable(""), WithJobID(jobgraph.JobID{}))
	require.NoError(t, err)
	require.Equal(t, "8ae3c1443d44142c861257df1fb2846c", g.JobID.String())
	require.Equal(t, DefaultInvokable, g.Vertices[0].Invokable)
}

// A REST node, as JSON, for the small plans below.
func restNodeJSON(id, desc string, parallelism any, inputs ...string) string {
	p, _ := json.Marshal(parallelism)
	s := `{"id":"` + id + `","parallelism":` + string(p) + `,"operator":"","operator_strategy":"","description":` + quote(desc) + `,"optimizer_properties":{}`
	if inputs != nil {
		s += `,"inputs":[` + strings.Join(inputs, ",") + `]`
	}
	return s + "}"
}

func restInputJSON(num int, id, ship, exchange string) string {
	s := `{"num":` + itoa(num) + `,"id":"` + id + `","ship_strategy":"` + ship + `"`
	if exchange != "" {
		s += `,"exchange":"` + exchange + `"`
	}
	return s + "}"
}

func restPlanJSON(extra string, nodes ...string) []byte {
	return []byte(`{"jid":"00000000000000000000000000000001","name":"t"` + extra + `,"nodes":[` + strings.Join(nodes, ",") + `]}`)
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

const (
	idA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	idB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	idC = "cccccccccccccccccccccccccccccccc"
	idX = "0123456789abcdef0123456789abcdef"
)

func TestRESTDetails(t *testing.T) {
	t.Run("html entities and line breaks decoded", func(t *testing.T) {
		g, err := Import(restPlanJSON("", restNodeJSON(idA, `Map -&gt; Filter &amp; &quot;x&quot; &lt;y&gt; C:&#92;tmp&#39;s<br/>+- Sink<br/>`, 1)))
		require.NoError(t, err)
		require.Equal(t, "Map -> Filter & \"x\" <y> C:\\tmp's\n+- Sink", g.Vertices[0].Name)
	})
	t.Run("empty description falls back to operator, then the ID", func(t *testing.T) {
		data := restPlanJSON("",
			`{"id":"`+idA+`","parallelism":1,"operator":"Data Source &amp; more","operator_strategy":"","description":""}`,
			`{"id":"`+idB+`","parallelism":1}`)
		g, err := Import(data)
		require.NoError(t, err)
		require.Equal(t, "Data Source & more", g.Vertices[0].Name)
		require.Equal(t, idB, g.Vertices[1].Name)
	})
	t.Run("parallelism as a string", func(t *testing.T) {
		g, err := Import(restPlanJSON("", restNodeJSON(idA, "src", "4")))
		require.NoError(t, err)
		require.Equal(t, 4, g.Vertices[0].Parallelism)
	})
	t.Run("optimizer_properties as a string, inputs [] on a source", func(t *testing.T) {
		data := restPlanJSON("",
			`{"id":"`+idA+`","parallelism":2,"operator":"","operator_strategy":"","description":"src","inputs":[],"optimizer_properties":"{}"}`,
			restNodeJSON(idB, "sink", 2, restInputJSON(0, idA, "FORWARD", "pipelined_bounded")))
		p, err := Parse(data)
		require.NoError(t, err)
		require.Len(t, p.Graph.Vertices, 2)
		require.Empty(t, p.Graph.Vertices[0].Inputs)
		require.Equal(t, 1, p.Graph.NumEdges())
		_, es := views(p)
		require.Equal(t, []edgeView{{"aaaa", "bbbb", "FORWARD", pw, pb}}, es)
	})
	t.Run("inputs in num order, exchanges and patterns", func(t *testing.T) {
		data := restPlanJSON("",
			restNodeJSON(idC, "join", 2,
				restInputJSON(2, idA, "rescale", "HYBRID_FULL"),
				restInputJSON(0, idB, "Hash Partition on [0]", "pipelined"),
				restInputJSON(1, idA, "Forward", "pipelined_approximate")),
			restNodeJSON(idA, "a", 1), restNodeJSON(idB, "b", 3))
		p, err := Parse(data)
		require.NoError(t, err)
		_, es := views(p)
		require.Equal(t, []edgeView{
			{"bbbb", "cccc", "Hash Partition on [0]", a2a, jobgraph.Pipelined},
			{"aaaa", "cccc", "Forward", pw, jobgraph.PipelinedApproximate},
			{"aaaa", "cccc", "rescale", pw, jobgraph.HybridFull},
		}, es)
		require.Len(t, p.Graph.Vertex(mustVertexID(t, idA)).Results, 2, "two inputs from one producer: two data sets")
		require.Equal(t, jobgraph.Streaming, p.Graph.Type)
	})
	t.Run("no type: BATCH when an exchange is blocking; missing exchange follows the job type", func(t *testing.T) {
		data := restPlanJSON("",
			restNodeJSON(idC, "sink", 1, restInputJSON(0, idB, "FORWARD", "")),
			restNodeJSON(idB, "mid", 1, restInputJSON(0, idA, "HASH", "blocking_persistent")),
			restNodeJSON(idA, "src", 1))
		p, err := Parse(data)
		require.NoError(t, err)
		require.Equal(t, jobgraph.Batch, p.Graph.Type)
		_, es := views(p)
		require.Equal(t, []edgeView{
			{"bbbb", "cccc", "FORWARD", pw, blk},
			{"aaaa", "bbbb", "HASH", a2a, jobgraph.BlockingPersistent},
		}, es)
	})
	t.Run("type given wins, any case", func(t *testing.T) {
		data := restPlanJSON(`,"type":"batch"`,
			restNodeJSON(idB, "sink", 1, restInputJSON(0, idA, "REBALANCE", "")),
			restNodeJSON(idA, "src", 1))
		p, err := Parse(data)
		require.NoError(t, err)
		require.Equal(t, jobgraph.Batch, p.Graph.Type)
		require.Equal(t, blk, p.Graph.Vertices[1].Results[0].ResultType)

		data = restPlanJSON(`,"type":"Streaming"`,
			restNodeJSON(idB, "sink", 1, restInputJSON(0, idA, "REBALANCE", "blocking")),
			restNodeJSON(idA, "src", 1))
		p, err = Parse(data)
		require.NoError(t, err)
		require.Equal(t, jobgraph.Streaming, p.Graph.Type)
	})
	t.Run("jid that is not 32 hex: random JobID; no name: Flink's default", func(t *testing.T) {
		data := []byte(`{"jid":"not-an-id","nodes":[` + restNodeJSON(idA, "src", 1) + `]}`)
		g, err := Import(data)
		require.NoError(t, err)
		require.False(t, g.JobID.IsZero())
		require.Equal(t, DefaultStreamingJobName, g.Name)
	})
	t.Run("upper-case IDs match", func(t *testing.T) {
		data := restPlanJSON("",
			restNodeJSON(strings.ToUpper(idX), "sink", 1, restInputJSON(0, strings.ToUpper(idA), "HASH", "")),
			restNodeJSON(idA, "src", 1))
		g, err := Import(data)
		require.NoError(t, err)
		require.Equal(t, idX, g.Vertices[0].ID.String())
	})
}

func mustVertexID(t *testing.T, s string) jobgraph.JobVertexID {
	t.Helper()
	id, err := jobgraph.ParseJobVertexID(s)
	require.NoError(t, err)
	return id
}

// An execution-plan node, as JSON.
func execNodeJSON(id int, name string, parallelism any, preds ...string) string {
	p, _ := json.Marshal(parallelism)
	s := `{"id":` + itoa(id) + `,"type":` + quote(name) + `,"pact":"Operator","contents":` + quote(name) + `,"parallelism":` + string(p)
	if preds != nil {
		s += `,"predecessors":[` + strings.Join(preds, ",") + `]`
	}
	return s + "}"
}

func pred(id int, ship string) string {
	return `{"id":` + itoa(id) + `,"ship_strategy":"` + ship + `","side":"second"}`
}

func execPlanJSON(extra string, nodes ...string) []byte {
	return []byte(`{"nodes":[` + strings.Join(nodes, ",") + `]` + extra + `}`)
}

func TestExecutionPlanChaining(t *testing.T) {
	t.Run("a producer chained into two outputs: one chain, Flink's branch name", func(t *testing.T) {
		// 1 → 2 and 1 → 3, both FORWARD, parallelism 2 everywhere; 2 → 4 FORWARD, 3 → 5 HASH.
		data := execPlanJSON("",
			execNodeJSON(5, "E", 2, pred(3, "HASH")),
			execNodeJSON(4, "D", 2, pred(2, "FORWARD")),
			execNodeJSON(3, "C", 2, pred(1, "FORWARD")),
			execNodeJSON(2, "B", 2, pred(1, "FORWARD")),
			execNodeJSON(1, "A", 2))
		p, err := Parse(data)
		require.NoError(t, err)
		vs, es := views(p)
		// Outputs of a node are in plan order of their consumers: 3 (C) is listed before 2 (B).
		require.Equal(t, []vertexView{{"1", "A -> (C, B -> D)", 2}, {"5", "E", 2}}, vs)
		require.Equal(t, []edgeView{{"1", "5", "HASH", a2a, pb}}, es)
		var ids []string
		for _, op := range p.Operators[p.Graph.Vertices[0].ID] {
			ids = append(ids, op.ID)
		}
		require.Equal(t, []string{"1", "3", "2", "4"}, ids)
	})
	t.Run("not chained: different parallelism, two inputs, non-FORWARD", func(t *testing.T) {
		// 1 (p1) → 2 (p2) FORWARD: parallelism differs. 2 → 3 FORWARD and 2 → 3 FORWARD again:
		// 3 has two inputs (two edges between the same chains stay two). 3 → 4 RESCALE.
		data := execPlanJSON("",
			execNodeJSON(1, "A", 1),
			execNodeJSON(2, "B", 2, pred(1, "FORWARD")),
			execNodeJSON(3, "C", 2, pred(2, "FORWARD"), pred(2, "FORWARD")),
			execNodeJSON(4, "D", 2, pred(3, "RESCALE")))
		p, err := Parse(data)
		require.NoError(t, err)
		vs, es := views(p)
		require.Equal(t, []vertexView{{"1", "A", 1}, {"2", "B", 2}, {"3", "C", 2}, {"4", "D", 2}}, vs)
		require.Equal(t, []edgeView{
			{"1", "2", "FORWARD", pw, pb},
			{"2", "3", "FORWARD", pw, pb},
			{"2", "3", "FORWARD", pw, pb},
			{"3", "4", "RESCALE", pw, pb},
		}, es)
		require.Len(t, p.Graph.Vertices[1].Results, 2)
	})
	t.Run("parallelism as a string, BATCH type gives blocking edges", func(t *testing.T) {
		data := execPlanJSON(`,"type":"BATCH"`,
			execNodeJSON(1, "A", "4"),
			execNodeJSON(2, "B", " 4 ", pred(1, "forward")),
			execNodeJSON(3, "C", 4, pred(2, "HASH")))
		p, err := Parse(data)
		require.NoError(t, err)
		require.Equal(t, jobgraph.Batch, p.Graph.Type)
		require.Equal(t, DefaultBatchJobName, p.Graph.Name)
		vs, es := views(p)
		require.Equal(t, []vertexView{{"1", "A -> B", 4}, {"3", "C", 4}}, vs)
		require.Equal(t, []edgeView{{"1", "3", "HASH", a2a, blk}}, es)
	})
	t.Run("EXPLAIN text before the JSON", func(t *testing.T) {
		text := "== Abstract Syntax Tree ==\nLogicalSink(...)\n\n== Physical Execution Plan ==\n" +
			string(execPlanJSON("", execNodeJSON(1, "A", 1)))
		p, err := Parse([]byte(text))
		require.NoError(t, err)
		require.Equal(t, ExecutionPlan, p.Format)
		require.Len(t, p.Graph.Vertices, 1)
	})
}

func TestDetectFormat(t *testing.T) {
	for _, tc := range []struct {
		data string
		want Format
	}{
		{`{"jid":"x","nodes":[]}`, REST},
		{`{"nodes":[{"id":"` + idA + `"}]}`, REST},
		{`{"nodes":[{"id":1}]}`, ExecutionPlan},
		{`{"nodes":[{"id":"1","pact":"Operator"}]}`, ExecutionPlan},
		{`{"nodes":[{"id":1,"inputs":[]}]}`, REST},
	} {
		got, err := DetectFormat([]byte(tc.data))
		require.NoError(t, err, tc.data)
		require.Equal(t, tc.want, got, tc.data)
	}
	for _, bad := range []string{``, `[]`, `{"nodes":[]}`, `{}`, `{"nodes":[1]}`, `{"nodes":[{}]}`, `{"nodes":[{"id":true}]}`} {
		_, err := DetectFormat([]byte(bad))
		require.ErrorIs(t, err, ErrInvalidPlan, bad)
	}
}

func TestFormatText(t *testing.T) {
	for _, f := range []Format{REST, ExecutionPlan} {
		b, err := f.MarshalText()
		require.NoError(t, err)
		var back Format
		require.NoError(t, back.UnmarshalText(b))
		require.Equal(t, f, back)
	}
	_, err := Format(0).MarshalText()
	require.Error(t, err)
	require.Equal(t, "Format(9)", Format(9).String())
	var f Format
	require.Error(t, f.UnmarshalText([]byte("rest")))
}

// planError asserts that err is a *PlanError naming node (and nodeName), whose message holds
// every part.
func planError(t *testing.T, err error, node, nodeName string, parts ...string) *PlanError {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, ErrInvalidPlan)
	var pe *PlanError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, node, pe.Node, err.Error())
	require.Equal(t, nodeName, pe.NodeName, err.Error())
	for _, part := range parts {
		require.Contains(t, err.Error(), part)
	}
	return pe
}

func TestBadInput(t *testing.T) {
	t.Run("REST input names a node that does not exist", func(t *testing.T) {
		data := restPlanJSON("", restNodeJSON(idB, "sink", 1, restInputJSON(0, idX, "HASH", "pipelined_bounded")))
		_, err := Import(data)
		planError(t, err, idB, "sink", "input #0", idX, "does not exist")
	})
	t.Run("REST input with a malformed producer ID", func(t *testing.T) {
		data := restPlanJSON("", restNodeJSON(idB, "sink", 1, restInputJSON(0, "42", "HASH", "")))
		_, err := Import(data)
		planError(t, err, idB, "sink", `"42"`, "does not exist")
	})
	t.Run("execution-plan predecessor names a node that does not exist", func(t *testing.T) {
		data := execPlanJSON("", execNodeJSON(1, "A", 1), execNodeJSON(2, "B", 1, pred(99, "FORWARD")))
		_, err := Import(data)
		planError(t, err, "2", "B", "predecessor #0", "node 99", "does not exist")
	})
	t.Run("malformed JSON", func(t *testing.T) {
		_, err := Import([]byte(`{"jid":"x","nodes":[`))
		planError(t, err, "", "", "malformed JSON")
		var syntax *json.SyntaxError
		require.ErrorAs(t, err, &syntax)
	})
	t.Run("malformed node", func(t *testing.T) {
		_, err := Import(restPlanJSON("", `{"id":"`+idA+`","parallelism":1,"description":7}`))
		planError(t, err, idA, "", "malformed node")
		_, err = Import(execPlanJSON("", `{"id":3,"type":"A","parallelism":1,"predecessors":{}}`))
		planError(t, err, "3", "", "malformed node")
	})
	t.Run("duplicate node IDs", func(t *testing.T) {
		_, err := Import(restPlanJSON("", restNodeJSON(idA, "one", 1), restNodeJSON(strings.ToUpper(idA), "two", 1)))
		planError(t, err, strings.ToUpper(idA), "two", `already used by nodes[0] "one"`)
		_, err = Import(execPlanJSON("", execNodeJSON(1, "A", 1), execNodeJSON(1, "B", 1)))
		planError(t, err, "1", "B", `already used by nodes[0] "A"`)
	})
	t.Run("cycle", func(t *testing.T) {
		// a ← c ← b ← a, and a source s feeding a.
		data := restPlanJSON("",
			restNodeJSON(idA, "a", 1, restInputJSON(0, idC, "HASH", ""), restInputJSON(1, idX, "HASH", "")),
			restNodeJSON(idB, "b", 1, restInputJSON(0, idA, "HASH", "")),
			restNodeJSON(idC, "c", 1, restInputJSON(0, idB, "HASH", "")),
			restNodeJSON(idX, "s", 1))
		_, err := Import(data)
		// The walk starts at a, the first node left over, and goes to a producer still left
		// over until it meets a node twice: a → c → b → a, so a is named.
		planError(t, err, idA, "a", "cycle")

		data = execPlanJSON("", execNodeJSON(1, "A", 1, pred(2, "FORWARD")), execNodeJSON(2, "B", 1, pred(1, "FORWARD")))
		_, err = Import(data)
		planError(t, err, "1", "A", "cycle")

		_, err = Import(execPlanJSON("", execNodeJSON(7, "self", 1, pred(7, "HASH"))))
		planError(t, err, "7", "self", "cycle")
	})
	t.Run("parallelism 0, negative, missing, non-numeric, too large", func(t *testing.T) {
		_, err := Import(restPlanJSON("", restNodeJSON(idA, "src", 0)))
		planError(t, err, idA, "src", "parallelism 0 is below 1")
		_, err = Import(execPlanJSON("", execNodeJSON(1, "A", -1)))
		planError(t, err, "1", "A", "parallelism -1 is below 1")
		_, err = Import(execPlanJSON("", `{"id":1,"type":"A","pact":"Operator"}`))
		planError(t, err, "1", "A", "no parallelism")
		_, err = Import(execPlanJSON("", execNodeJSON(1, "A", "default")))
		planError(t, err, "1", "A", `parallelism "default" is not an integer`)
		_, err = Import(restPlanJSON("", restNodeJSON(idA, "src", 2.5)))
		planError(t, err, idA, "src", "not an integer")
		_, err = Import(restPlanJSON("", restNodeJSON(idA, "src", 40000)))
		planError(t, err, idA, "src", "above")
	})
	t.Run("unknown exchange", func(t *testing.T) {
		data := restPlanJSON("", restNodeJSON(idB, "sink", 1, restInputJSON(0, idA, "HASH", "carrier_pigeon")), restNodeJSON(idA, "src", 1))
		_, err := Import(data)
		planError(t, err, idB, "sink", `unknown exchange "carrier_pigeon"`)
	})
	t.Run("unknown job type", func(t *testing.T) {
		_, err := Import(restPlanJSON(`,"type":"MICRO_BATCH"`, restNodeJSON(idA, "src", 1)))
		planError(t, err, "", "", `unknown job type "MICRO_BATCH"`)
	})
	t.Run("bad node IDs", func(t *testing.T) {
		_, err := Import(restPlanJSON("", restNodeJSON("xyz", "src", 1)))
		planError(t, err, "xyz", "src", "not 32 hexadecimal")
		_, err = Import(restPlanJSON("", `{"parallelism":1,"description":"src"}`))
		planError(t, err, "nodes[0]", "src", "not 32 hexadecimal")
		_, err = Import(execPlanJSON("", `{"id":"one","type":"A","pact":"Operator","parallelism":1}`))
		planError(t, err, "nodes[0]", "A", "not an integer")
	})
	t.Run("a graph that Validate refuses is wrapped", func(t *testing.T) {
		_, err := Import([]byte(`{"jid":"` + idA + `","nodes":[]}`))
		planError(t, err, "", "", "imported job graph is invalid")
		require.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph)
		var ve *jobgraph.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, jobgraph.RuleEmptyGraph, ve.Rule)
	})
}

func TestPlanErrorMessage(t *testing.T) {
	cause := errors.New("boom")
	err := &PlanError{Node: "7", NodeName: "Map", Detail: "bad", Err: cause}
	require.Equal(t, `flinkplan: invalid plan: node 7 "Map": bad: boom`, err.Error())
	require.ErrorIs(t, err, cause)
	require.Equal(t, "flinkplan: invalid plan", (&PlanError{}).Error())
}
