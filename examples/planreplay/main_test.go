package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/flinkplan"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/slotpool"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// replay runs the program with args and returns its stdout, stderr and error.
func replay(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	err = run(ctx, args, &out, &errOut)
	return out.String(), errOut.String(), err
}

// summaryLine is the one line -summary prints for want with the given status.
func summaryLine(t *testing.T, want summary, status jobgraph.JobStatus) string {
	t.Helper()
	want.Status = status
	b, err := json.Marshal(want)
	require.NoError(t, err)
	return string(b) + "\n"
}

// TestRequiredSummaries are the two summaries the issue spells out, written as literals.
func TestRequiredSummaries(t *testing.T) {
	out, _, err := replay(t, "-summary", "-records", "50", "-plan", filepath.Join(testdata, "rest_streaming_wordcount_p4.json"))
	require.NoError(t, err)
	assert.Equal(t, `{"vertices":3,"edges":2,"tasks":9,"regions":1,"slots":4,"status":"FINISHED"}`+"\n", out)

	out, _, err = replay(t, "-summary", "-records", "50", "-plan", filepath.Join(testdata, "rest_iceberg_batch_hashjoin_blocking.json"))
	require.NoError(t, err)
	assert.Equal(t, `{"vertices":4,"edges":3,"tasks":4,"regions":4,"slots":1,"status":"FINISHED"}`+"\n", out)
}

// TestSummaryOfEveryRealPlan runs every plan of flinkplan/testdata on exactly the slots its
// summary says it needs and compares the line with the hand counts in realPlans.
func TestSummaryOfEveryRealPlan(t *testing.T) {
	for _, c := range realPlans {
		t.Run(c.file, func(t *testing.T) {
			out, stderr, err := replay(t, "-summary", "-records", "50", "-task-time", "0", "-plan", filepath.Join(testdata, c.file))
			require.NoError(t, err)
			assert.Equal(t, summaryLine(t, c.want, jobgraph.JobStatusFinished), out)
			assert.Empty(t, stderr)
		})
	}
}

// TestSummaryOfHandPlans runs the hand-made plans (pointwise, rescale, blocking, two
// components) on the cluster too.
func TestSummaryOfHandPlans(t *testing.T) {
	for _, c := range handPlans {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := replay(t, "-summary", "-records", "50", "-plan", writeRESTPlan(t, c.name, c.nodes...))
			require.NoError(t, err)
			assert.Equal(t, summaryLine(t, c.want, jobgraph.JobStatusFinished), out)
		})
	}
}

// TestSlotsSpreadOverTaskExecutors: with -taskexecutors N each gets ceil(S/N) slots, enough.
func TestSlotsSpreadOverTaskExecutors(t *testing.T) {
	for _, n := range []string{"2", "3", "4"} {
		t.Run(n, func(t *testing.T) {
			out, _, err := replay(t, "-summary", "-records", "50", "-taskexecutors", n, "-plan", filepath.Join(testdata, "rest_hudi_two_sinks_12v.json"))
			require.NoError(t, err)
			assert.Equal(t, `{"vertices":12,"edges":11,"tasks":28,"regions":1,"slots":4,"status":"FINISHED"}`+"\n", out)
		})
	}
}

// TestOneSlotTooFewFails proves the slot count matters: the streaming word count is one
// pipelined region needing 4 slots at once; with 3 its slot requests time out and the job FAILS
// with no resource available, and the program reports it with an error (exit code 1).
func TestOneSlotTooFewFails(t *testing.T) {
	start := time.Now()
	out, _, err := replay(t, "-summary", "-records", "50", "-taskexecutors", "1", "-slots", "3", "-slot-timeout", "200ms",
		"-plan", filepath.Join(testdata, "rest_streaming_wordcount_p4.json"))
	require.Error(t, err)
	assert.ErrorIs(t, err, slotpool.ErrNoResourceAvailable)
	assert.Contains(t, err.Error(), "ended FAILED")
	assert.Equal(t, `{"vertices":3,"edges":2,"tasks":9,"regions":1,"slots":4,"status":"FAILED"}`+"\n", out)
	assert.Less(t, time.Since(start), 10*time.Second)
}

// TestDiamondFinishes: D reads two pipelined inputs fed by one source, A -> B -> D and A -> D,
// with far more records than the shuffle buffers (8 batches of 256 per subpartition). Reading
// D's inputs one after another would hang: D waits on B while A is blocked on D's full second
// input. Reading whichever input has data first finishes.
func TestDiamondFinishes(t *testing.T) {
	path := writeRESTPlan(t, "diamond",
		restNode{ID: nodeID(1), Parallelism: 1, Description: "A"},
		restNode{ID: nodeID(2), Parallelism: 1, Description: "B", Inputs: []restInput{in(1, "FORWARD", "pipelined_bounded")}},
		restNode{ID: nodeID(3), Parallelism: 1, Description: "D", Inputs: []restInput{
			in(2, "FORWARD", "pipelined_bounded"),
			{Num: 1, ID: nodeID(1), ShipStrategy: "FORWARD", Exchange: "pipelined_bounded"},
		}},
	)
	out, _, err := replay(t, "-summary", "-records", "20000", "-plan", path)
	require.NoError(t, err)
	assert.Equal(t, `{"vertices":3,"edges":3,"tasks":3,"regions":1,"slots":1,"status":"FINISHED"}`+"\n", out)
}

// TestUnbalancedDiamondFinishes: the diamond A -> B -> D, A -> D at parallelism 2, all
// PIPELINED_BOUNDED ALL_TO_ALL, with 100,000 records from A and B writing each record 3 times, so
// D's input from B carries three times as many records as its input from A. Taking turns one
// record at a time (what the task did before NextAny) hangs here: B's queues to D fill up, B
// stops reading, A blocks on its full queues to B, and D waits on its input from A, which is
// empty. Reading whichever input has data first drains B's queues and finishes.
func TestUnbalancedDiamondFinishes(t *testing.T) {
	path := writeRESTPlan(t, "unbalanced_diamond",
		restNode{ID: nodeID(1), Parallelism: 2, Description: "A"},
		restNode{ID: nodeID(2), Parallelism: 2, Description: "B", Inputs: []restInput{in(1, "HASH", "pipelined_bounded")}},
		restNode{ID: nodeID(3), Parallelism: 2, Description: "D", Inputs: []restInput{
			in(2, "HASH", "pipelined_bounded"),
			{Num: 1, ID: nodeID(1), ShipStrategy: "HASH", Exchange: "pipelined_bounded"},
		}},
	)
	plan, err := loadPlan(path)
	require.NoError(t, err)
	g := plan.Graph
	sum, err := describe(g)
	require.NoError(t, err)
	assert.Equal(t, summary{Vertices: 3, Edges: 3, Tasks: 6, Regions: 1, Slots: 2}, sum)
	ids := make(map[string]jobgraph.JobVertexID)
	stats := make(map[jobgraph.JobVertexID]*vertexStats)
	for _, v := range g.Vertices {
		ids[v.Name] = v.ID
		stats[v.ID] = &vertexStats{}
	}
	require.Len(t, ids, 3)
	require.Contains(t, ids, "B")

	const records = 100_000
	task := &syntheticTask{records: records, stats: stats, repeat: map[jobgraph.JobVertexID]int{ids["B"]: 3}}
	reg := taskexecutor.NewRegistry()
	reg.Register(flinkplan.DefaultInvokable, task.invoke)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, _, err := runJob(ctx, g, reg, minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: sum.Slots, SlotRequestTimeout: 10 * time.Second})
	require.NoError(t, err, "the job hangs until the deadline if D waits on one input while the other is full")
	assert.Equal(t, jobgraph.JobStatusFinished, res.Status)

	type counts struct{ Records, Written int64 }
	got := make(map[string]counts)
	for name, id := range ids {
		got[name] = counts{stats[id].records.Load(), stats[id].written.Load()}
	}
	assert.Equal(t, map[string]counts{
		"A": {records, 2 * records},   // generated, written to B and to D
		"B": {records, 3 * records},   // read from A, each written 3 times
		"D": {records + 3*records, 0}, // everything of both inputs; a sink
	}, got)
}

// tableRow matches one row of the per-vertex table: ID, parallelism, records, written, time, name.
var tableRow = regexp.MustCompile(`(?m)^  ([0-9a-f]{8})  +(\d+)  +(\d+)  +(\d+)  +\S+  (.*)$`)

// TestHumanOutput: without -summary the program prints the plan, the job's status transitions,
// records per vertex and a summary line.
func TestHumanOutput(t *testing.T) {
	out, _, err := replay(t, "-records", "50", "-plan", filepath.Join(testdata, "rest_streaming_wordcount_p4.json"))
	require.NoError(t, err)
	for _, s := range []string{
		"planreplay: REST plan ", `STREAMING job "Streaming WordCount"`,
		"3 vertices, 2 edges, 9 tasks, 1 pipelined regions; needs 4 slots; 1 TaskExecutor(s) × 4 slots",
		"HASH ALL_TO_ALL PIPELINED_BOUNDED", "REBALANCE ALL_TO_ALL PIPELINED_BOUNDED",
		"job 8ae3c144 is CREATED", "job 8ae3c144 is RUNNING", "job 8ae3c144 is FINISHED",
	} {
		assert.Contains(t, out, s)
	}
	assert.Regexp(t, `\nFINISHED in \S+: 3 vertices, 2 edges, 9 tasks, 1 pipelined regions, 4 slots\n$`, out)

	// The source generates 50 records; every vertex after it reads all 50 (one input each) and
	// writes them to its one output; the sink writes nothing.
	type row struct {
		parallelism, records, written int
		name                          string
	}
	var rows []row
	for _, m := range tableRow.FindAllStringSubmatch(out, -1) {
		p, _ := strconv.Atoi(m[2])
		r, _ := strconv.Atoi(m[3])
		w, _ := strconv.Atoi(m[4])
		rows = append(rows, row{p, r, w, m[5]})
	}
	assert.Equal(t, []row{
		{1, 50, 50, "Source: Custom File Source"},
		{4, 50, 50, "Split Reader: Custom File Source -> Flat Map"},
		{4, 50, 0, "Keyed Aggregation -> Sink: Unnamed"},
	}, rows)
}

// TestHumanOutputCountsFanOut: the hudi source (p2) writes each of its 50 records to both of its
// outputs; each branch then carries 50 records to its sink.
func TestHumanOutputCountsFanOut(t *testing.T) {
	out, _, err := replay(t, "-records", "50", "-plan", filepath.Join(testdata, "rest_hudi_two_sinks_12v.json"))
	require.NoError(t, err)
	var got []string
	for _, m := range tableRow.FindAllStringSubmatch(out, -1) {
		got = append(got, fmt.Sprintf("%s/%s/%s %s", m[2], m[3], m[4], strings.SplitN(m[5], "(", 2)[0]))
	}
	assert.ElementsMatch(t, []string{
		"2/50/100 Source: TableSourceScan",
		"2/50/50 bucket_assigner", "2/50/50 bucket_assigner", "2/50/50 GroupAggregate",
		"4/50/50 hoodie_stream_write", "4/50/50 hoodie_stream_write",
		"1/50/50 compact_plan_generate", "1/50/50 compact_plan_generate",
		"4/50/50 compact_task", "4/50/50 compact_task",
		"1/50/0 Sink: compact_commit", "1/50/0 Sink: compact_commit",
	}, got)
}

// TestPlanWithMissingNodeFails: an input naming a node the plan does not have is reported with
// that node's ID (exit code 1), and nothing runs.
func TestPlanWithMissingNodeFails(t *testing.T) {
	missing := nodeID(0xbeef)
	path := writeRESTPlan(t, "missing_input",
		restNode{ID: nodeID(1), Parallelism: 2, Description: "Source: numbers"},
		restNode{ID: nodeID(2), Parallelism: 2, Description: "Sink: print", Inputs: []restInput{{ID: missing, ShipStrategy: "HASH", Exchange: "pipelined_bounded"}}},
	)
	for _, args := range [][]string{{"-summary"}, {}} {
		out, _, err := replay(t, append(args, "-plan", path)...)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "names node "+missing+", which does not exist in the plan")
		assert.Contains(t, err.Error(), `node `+nodeID(2)+` "Sink: print"`)
		assert.Empty(t, out)
	}
}

func TestBadFlags(t *testing.T) {
	plan := filepath.Join(testdata, "rest_streaming_wordcount_p4.json")
	for _, args := range [][]string{
		{},
		{"-plan", plan, "extra"},
		{"-plan", plan, "-records", "-1"},
		{"-plan", plan, "-task-time", "-1s"},
		{"-plan", plan, "-taskexecutors", "0"},
		{"-plan", plan, "-slots", "-1"},
		{"-plan", plan, "-slot-timeout", "0s"},
		{"-plan", plan, "-no-such-flag"},
		{"-plan", filepath.Join(t.TempDir(), "missing.json")},
	} {
		out, _, err := replay(t, args...)
		assert.Error(t, err, "%q", args)
		assert.Empty(t, out, "%q", args)
	}
}
