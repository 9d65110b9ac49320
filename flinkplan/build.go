package flinkplan

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"html"
	"strconv"
	"strings"

	"github.com/jobgraph/jobgraph"
)

// builder holds the graph under construction and the plan nodes of each vertex.
type builder struct {
	o   options
	g   *jobgraph.JobGraph
	ops map[jobgraph.JobVertexID][]Operator
}

func newBuilder(o options, format Format, jobID jobgraph.JobID, name string, jobType jobgraph.JobType) *builder {
	if !o.jobID.IsZero() {
		jobID = o.jobID
	}
	if jobID.IsZero() {
		jobID = jobgraph.NewJobID()
	}
	if name == "" {
		name = DefaultStreamingJobName
		if jobType == jobgraph.Batch {
			name = DefaultBatchJobName
		}
	}
	g := jobgraph.New(name, jobType)
	g.JobID = jobID
	return &builder{o: o, g: g, ops: make(map[jobgraph.JobVertexID][]Operator)}
}

// addVertex appends a vertex in the default slot-sharing group whose Config describes ops.
func (b *builder) addVertex(format Format, id jobgraph.JobVertexID, name string, parallelism int, ops []Operator) *jobgraph.JobVertex {
	v := b.g.AddVertex(name, b.o.invokable, parallelism)
	v.ID = id
	v.SlotSharingGroup = SlotSharingGroup
	// Marshalling plain strings and ints cannot fail.
	cfg, _ := json.Marshal(VertexConfig{Format: format, Operators: ops})
	v.Config = cfg
	b.ops[id] = ops
	return v
}

// connect makes consumer read a new data set of producer, whose ID is derived from the producer's
// vertex ID and output index so that imports are reproducible.
func (b *builder) connect(producer, consumer *jobgraph.JobVertex, shipStrategy string, resultType jobgraph.ResultPartitionType) *jobgraph.JobEdge {
	e := b.g.Connect(producer, consumer, distributionPattern(shipStrategy), resultType)
	ds := producer.Results[len(producer.Results)-1]
	ds.ID = jobgraph.IntermediateDataSetID(derivedID("dataset", producer.ID.String()+"/"+strconv.Itoa(len(producer.Results)-1)))
	e.Source = ds.ID
	e.ShipStrategy = shipStrategy
	return e
}

// derivedID is a 16-byte ID derived from a kind and a key (the first half of a SHA-256).
func derivedID(kind, key string) [16]byte {
	sum := sha256.Sum256([]byte("flinkplan/" + kind + "/" + key))
	return [16]byte(sum[:16])
}

// distributionPattern maps a ship strategy to Flink's distribution pattern: POINTWISE for the
// pointwise partitioners (ForwardPartitioner, RescalePartitioner; DataSet's "Forward"),
// ALL_TO_ALL for everything else.
func distributionPattern(shipStrategy string) jobgraph.DistributionPattern {
	s := strings.TrimSpace(shipStrategy)
	if strings.EqualFold(s, "FORWARD") || strings.EqualFold(s, "RESCALE") {
		return jobgraph.Pointwise
	}
	return jobgraph.AllToAll
}

// isForward reports whether a ship strategy is Flink's ForwardPartitioner ("FORWARD").
func isForward(shipStrategy string) bool {
	return strings.EqualFold(strings.TrimSpace(shipStrategy), "FORWARD")
}

// parseExchange parses a REST input's exchange (a ResultPartitionType name, any case); ok is
// false for an empty exchange.
func parseExchange(s string) (t jobgraph.ResultPartitionType, ok bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false, nil
	}
	t, err = jobgraph.ParseResultPartitionType(strings.ToUpper(s))
	if err != nil {
		return 0, false, fmt.Errorf("unknown exchange %q (want pipelined_bounded, pipelined, blocking, blocking_persistent, pipelined_approximate, hybrid_full or hybrid_selective)", s)
	}
	return t, true, nil
}

// parseJobType parses the plan's "type"; ok is false when the plan gives none.
func parseJobType(s string) (t jobgraph.JobType, ok bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false, nil
	}
	t, err = jobgraph.ParseJobType(strings.ToUpper(s))
	if err != nil {
		return 0, false, &PlanError{Detail: fmt.Sprintf("unknown job type %q (want STREAMING or BATCH)", s)}
	}
	return t, true, nil
}

// defaultResultType is the result partition type of an edge the plan gives no exchange for.
func defaultResultType(t jobgraph.JobType) jobgraph.ResultPartitionType {
	if t == jobgraph.Batch {
		return jobgraph.Blocking
	}
	return jobgraph.PipelinedBounded
}

// parseInt reads a JSON integer, or a string holding one (very old plans write parallelism as a
// string). ok is false when raw is absent or null.
func parseInt(raw json.RawMessage) (n int64, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, nil
	}
	text := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return 0, false, err
		}
		text = strings.TrimSpace(text)
	}
	n, err = strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s is not an integer", raw)
	}
	return n, true, nil
}

// parseParallelism reads a node's parallelism: an integer ≥ 1, or a string holding one.
func parseParallelism(raw json.RawMessage) (int, error) {
	n, ok, err := parseInt(raw)
	switch {
	case err != nil:
		return 0, fmt.Errorf("parallelism %v", err)
	case !ok:
		return 0, fmt.Errorf("no parallelism")
	case n < 1:
		return 0, fmt.Errorf("parallelism %d is below 1", n)
	case n > jobgraph.MaxMaxParallelism:
		return 0, fmt.Errorf("parallelism %d is above Flink's largest max parallelism %d", n, jobgraph.MaxMaxParallelism)
	}
	return int(n), nil
}

// unescapeFlink undoes the escaping JsonPlanGenerator applies to descriptions: HTML entities
// (StringEscapeUtils.escapeHtml4, and "\" written as "&#92;"), and line breaks written as "<br/>"
// (a literal "<" is always escaped, so every "<br/>" was a line break). Trailing line breaks,
// which Flink's tree-style descriptions end with, are dropped.
func unescapeFlink(s string) string {
	s = strings.ReplaceAll(s, "<br/>", "\n")
	return strings.TrimRight(html.UnescapeString(s), "\n")
}

// topoOrder orders n nodes so that every node's predecessors (preds, as node indices) come first;
// among nodes free to go next, index order decides. When the nodes have a cycle it returns
// cycle ≥ 0, a node that lies on one.
func topoOrder(n int, preds [][]int) (order []int, cycle int) {
	indegree := make([]int, n)
	succs := make([][]int, n)
	for c, ps := range preds {
		for _, p := range ps {
			indegree[c]++
			succs[p] = append(succs[p], c)
		}
	}
	order = make([]int, 0, n)
	for i := range n {
		if indegree[i] == 0 {
			order = append(order, i)
		}
	}
	for k := 0; k < len(order); k++ {
		for _, c := range succs[order[k]] {
			if indegree[c]--; indegree[c] == 0 {
				order = append(order, c)
			}
		}
	}
	if len(order) == n {
		return order, -1
	}
	// Every node left has a predecessor that is left too; walking from one to such a predecessor
	// must come back to a node already seen, which lies on a cycle.
	i := 0
	for indegree[i] == 0 {
		i++
	}
	seen := make([]bool, n)
	for !seen[i] {
		seen[i] = true
		for _, p := range preds[i] {
			if indegree[p] > 0 {
				i = p
				break
			}
		}
	}
	return nil, i
}
