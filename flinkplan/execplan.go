package flinkplan

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/jobgraph/jobgraph"
)

// execPlan is what Flink's JSONGenerator writes for getExecutionPlan() and EXPLAIN
// JSON_EXECUTION_PLAN: one node per StreamNode (operator). Only the fields used are declared.
type execPlan struct {
	Name  string            `json:"name"`
	Type  string            `json:"type"`
	Nodes []json.RawMessage `json:"nodes"`
}

type execNode struct {
	ID           json.RawMessage `json:"id"`
	Type         string          `json:"type"` // the operator name
	Pact         string          `json:"pact"`
	Contents     string          `json:"contents"`
	Parallelism  json.RawMessage `json:"parallelism"`
	Predecessors []execPred      `json:"predecessors"`
}

type execPred struct {
	ID           json.RawMessage `json:"id"`
	ShipStrategy string          `json:"ship_strategy"`
}

// execEdge is one predecessor link, producer → consumer, as node indices.
type execEdge struct {
	producer, consumer int
	shipStrategy       string
	chained            bool
}

func buildExecutionPlan(data []byte, o options) (*builder, error) {
	var plan execPlan
	if err := json.Unmarshal(data, &plan); err != nil {
		return nil, &PlanError{Detail: "malformed JSON", Err: err}
	}

	n := len(plan.Nodes)
	nodes := make([]execNode, n)
	ops := make([]Operator, n)
	index := make(map[int64]int, n)
	for i, raw := range plan.Nodes {
		nd := &nodes[i]
		if err := json.Unmarshal(raw, nd); err != nil {
			return nil, &PlanError{Node: nodeRef(i, raw), Detail: "malformed node", Err: err}
		}
		name := strings.TrimSpace(nd.Type)
		if name == "" {
			name = strings.TrimSpace(nd.Contents)
		}
		id, ok, err := parseInt(nd.ID)
		if err != nil || !ok {
			return nil, &PlanError{Node: fmt.Sprintf("nodes[%d]", i), NodeName: name, Detail: fmt.Sprintf("the node ID %s is not an integer", orNone(nd.ID))}
		}
		ref := strconv.FormatInt(id, 10)
		if name == "" {
			name = ref
		}
		if j, dup := index[id]; dup {
			return nil, &PlanError{Node: ref, NodeName: name, Detail: fmt.Sprintf("node ID already used by nodes[%d] %q", j, ops[j].Name)}
		}
		index[id] = i
		p, err := parseParallelism(nd.Parallelism)
		if err != nil {
			return nil, &PlanError{Node: ref, NodeName: name, Detail: err.Error()}
		}
		ops[i] = Operator{ID: ref, Name: name, Parallelism: p, Pact: nd.Pact, Contents: nd.Contents}
	}

	// Resolve the predecessors. inEdges keep each node's predecessor order, outEdges each
	// producer's consumers in plan order (StreamNode.getOutEdges order as far as the plan shows it).
	var edges []execEdge
	inEdges := make([][]int, n)
	outEdges := make([][]int, n)
	preds := make([][]int, n)
	for i := range nodes {
		for k, pr := range nodes[i].Predecessors {
			pid, ok, err := parseInt(pr.ID)
			if err != nil || !ok {
				return nil, &PlanError{Node: ops[i].ID, NodeName: ops[i].Name,
					Detail: fmt.Sprintf("predecessor #%d: names node %s, which does not exist in the plan (not an integer node ID)", k, orNone(pr.ID))}
			}
			p, ok := index[pid]
			if !ok {
				return nil, &PlanError{Node: ops[i].ID, NodeName: ops[i].Name,
					Detail: fmt.Sprintf("predecessor #%d: names node %d, which does not exist in the plan", k, pid)}
			}
			edges = append(edges, execEdge{producer: p, consumer: i, shipStrategy: pr.ShipStrategy})
			inEdges[i] = append(inEdges[i], len(edges)-1)
			outEdges[p] = append(outEdges[p], len(edges)-1)
			preds[i] = append(preds[i], p)
		}
	}
	order, c := topoOrder(n, preds)
	if c >= 0 {
		return nil, &PlanError{Node: ops[c].ID, NodeName: ops[c].Name, Detail: "the node lies on a cycle; a plan must be acyclic"}
	}
	jobType, _, err := parseJobType(plan.Type)
	if err != nil {
		return nil, err
	}

	// Chaining, as StreamingJobGraphGenerator.isChainable with chaining enabled and every node in
	// the default slot-sharing group: the consumer has exactly one input edge, the partitioner is
	// FORWARD, and both ends have the same parallelism. A node thus has at most one chained input,
	// so every chain is a tree hanging from its head, the one node without a chained input.
	head := make([]int, n)
	for _, i := range order { // producers first, so head[producer] is known
		head[i] = i
		if len(inEdges[i]) != 1 {
			continue
		}
		e := &edges[inEdges[i][0]]
		if isForward(e.shipStrategy) && ops[e.producer].Parallelism == ops[i].Parallelism {
			e.chained = true
			head[i] = head[e.producer]
		}
	}

	b := newBuilder(o, ExecutionPlan, jobgraph.JobID{}, plan.Name, jobType)
	vertexOf := make([]*jobgraph.JobVertex, n) // by head index
	for _, h := range order {
		if head[h] != h {
			continue
		}
		name, members := chainName(h, ops, edges, outEdges)
		chainOps := make([]Operator, len(members))
		for k, m := range members {
			chainOps[k] = ops[m]
		}
		id := jobgraph.JobVertexID(derivedID("vertex", ops[h].ID))
		vertexOf[h] = b.addVertex(ExecutionPlan, id, name, ops[h].Parallelism, chainOps)
	}
	// Unchained edges, into each chain's head (the only member that can have them), in the
	// head's predecessor order; chains in topological order.
	resultType := defaultResultType(jobType)
	for _, h := range order {
		if head[h] != h {
			continue
		}
		for _, ei := range inEdges[h] {
			e := edges[ei]
			b.connect(vertexOf[head[e.producer]], vertexOf[h], e.shipStrategy, resultType)
		}
	}
	return b, nil
}

// chainName names the chain headed by h as StreamingJobGraphGenerator.createChainedName does —
// "a", "a -> b", "a -> (b, c)" when a branches into two chained outputs — and lists the chain's
// nodes in the order their names appear. It walks with an explicit stack, so a long chain costs
// neither deep recursion nor quadratic string building.
func chainName(h int, ops []Operator, edges []execEdge, outEdges [][]int) (string, []int) {
	type item struct {
		node int    // a node to write, when text is ""
		text string // literal text to write
	}
	var b strings.Builder
	var members []int
	stack := []item{{node: h}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.text != "" {
			b.WriteString(it.text)
			continue
		}
		b.WriteString(ops[it.node].Name)
		members = append(members, it.node)
		var chained []int
		for _, ei := range outEdges[it.node] {
			if edges[ei].chained {
				chained = append(chained, edges[ei].consumer)
			}
		}
		// Push in reverse, so the stack pops in writing order.
		switch len(chained) {
		case 0:
		case 1:
			stack = append(stack, item{node: chained[0]}, item{text: " -> "})
		default:
			stack = append(stack, item{text: ")"})
			for k := len(chained) - 1; k >= 0; k-- {
				stack = append(stack, item{node: chained[k]})
				if k > 0 {
					stack = append(stack, item{text: ", "})
				}
			}
			stack = append(stack, item{text: " -> ("})
		}
	}
	return b.String(), members
}

// orNone prints a raw JSON value for an error, or "(none)" when it is absent.
func orNone(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(none)"
	}
	if len(raw) > 40 {
		return string(raw[:40]) + "…"
	}
	return string(raw)
}
