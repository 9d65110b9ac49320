package flinkplan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/jobgraph/jobgraph"
)

// restPlan is the body of GET /jobs/:jobid/plan (Flink's JobPlanInfo.Plan). Only the fields
// used are declared, so the others (optimizer_properties, local_strategy, caching) may hold
// anything.
type restPlan struct {
	JID   string            `json:"jid"`
	Name  string            `json:"name"`
	Type  string            `json:"type"`
	Nodes []json.RawMessage `json:"nodes"`
}

type restNode struct {
	ID               string          `json:"id"`
	Parallelism      json.RawMessage `json:"parallelism"`
	Operator         string          `json:"operator"`
	OperatorStrategy string          `json:"operator_strategy"`
	Description      string          `json:"description"`
	Inputs           []restInput     `json:"inputs"`
}

type restInput struct {
	Num          json.RawMessage `json:"num"`
	ID           string          `json:"id"`
	ShipStrategy string          `json:"ship_strategy"`
	Exchange     string          `json:"exchange"`
}

// restInputResolved is an input with its producer and exchange parsed.
type restInputResolved struct {
	num          int64
	producer     int // node index
	shipStrategy string
	resultType   jobgraph.ResultPartitionType
	hasExchange  bool
}

func buildREST(data []byte, o options) (*builder, error) {
	var plan restPlan
	if err := json.Unmarshal(data, &plan); err != nil {
		return nil, &PlanError{Detail: "malformed JSON", Err: err}
	}

	n := len(plan.Nodes)
	nodes := make([]restNode, n)
	ids := make([]jobgraph.JobVertexID, n)
	ops := make([]Operator, n)
	index := make(map[jobgraph.JobVertexID]int, n)
	for i, raw := range plan.Nodes {
		nd := &nodes[i]
		if err := json.Unmarshal(raw, nd); err != nil {
			return nil, &PlanError{Node: nodeRef(i, raw), Detail: "malformed node", Err: err}
		}
		name := unescapeFlink(nd.Description)
		if name == "" {
			name = unescapeFlink(nd.Operator)
		}
		ref := nd.ID
		if ref == "" {
			ref = fmt.Sprintf("nodes[%d]", i)
		}
		id, err := jobgraph.ParseJobVertexID(nd.ID)
		if err != nil {
			return nil, &PlanError{Node: ref, NodeName: name, Detail: "the node ID is not 32 hexadecimal characters"}
		}
		if name == "" {
			name = nd.ID
		}
		if j, dup := index[id]; dup {
			return nil, &PlanError{Node: nd.ID, NodeName: name, Detail: fmt.Sprintf("node ID already used by nodes[%d] %q", j, ops[j].Name)}
		}
		index[id] = i
		ids[i] = id
		p, err := parseParallelism(nd.Parallelism)
		if err != nil {
			return nil, &PlanError{Node: nd.ID, NodeName: name, Detail: err.Error()}
		}
		ops[i] = Operator{ID: nd.ID, Name: name, Parallelism: p,
			Operator: unescapeFlink(nd.Operator), OperatorStrategy: unescapeFlink(nd.OperatorStrategy)}
	}

	// Resolve the inputs; infer the job type from the exchanges if the plan does not say it.
	inputs := make([][]restInputResolved, n)
	preds := make([][]int, n)
	anyBlocking := false
	for i := range nodes {
		for k, in := range nodes[i].Inputs {
			fail := func(format string, args ...any) error {
				return &PlanError{Node: ops[i].ID, NodeName: ops[i].Name, Detail: fmt.Sprintf("input #%d: ", k) + fmt.Sprintf(format, args...)}
			}
			num, ok, err := parseInt(in.Num)
			if err != nil {
				return nil, fail("num %v", err)
			}
			if !ok {
				num = int64(k)
			}
			pid, err := jobgraph.ParseJobVertexID(in.ID)
			if err != nil {
				return nil, fail("names node %q, which does not exist in the plan (not a 32-hex-character node ID)", in.ID)
			}
			p, ok := index[pid]
			if !ok {
				return nil, fail("names node %s, which does not exist in the plan", in.ID)
			}
			t, hasExchange, err := parseExchange(in.Exchange)
			if err != nil {
				return nil, fail("%v", err)
			}
			anyBlocking = anyBlocking || (hasExchange && t.IsBlocking())
			inputs[i] = append(inputs[i], restInputResolved{num: num, producer: p, shipStrategy: in.ShipStrategy, resultType: t, hasExchange: hasExchange})
			preds[i] = append(preds[i], p)
		}
		slices.SortStableFunc(inputs[i], func(a, b restInputResolved) int { return cmp.Compare(a.num, b.num) })
	}
	if _, c := topoOrder(n, preds); c >= 0 {
		return nil, &PlanError{Node: ops[c].ID, NodeName: ops[c].Name, Detail: "the node lies on a cycle; a plan must be acyclic"}
	}
	jobType, ok, err := parseJobType(plan.Type)
	if err != nil {
		return nil, err
	}
	if !ok && anyBlocking {
		jobType = jobgraph.Batch
	}

	jobID, err := jobgraph.ParseJobID(plan.JID)
	if err != nil {
		jobID = jobgraph.JobID{}
	}
	b := newBuilder(o, REST, jobID, plan.Name, jobType)
	// Vertices in the plan's order, which is the order of Flink's JobGraph.
	vertices := make([]*jobgraph.JobVertex, n)
	for i := range nodes {
		vertices[i] = b.addVertex(REST, ids[i], ops[i].Name, ops[i].Parallelism, []Operator{ops[i]})
	}
	for i := range nodes {
		for _, in := range inputs[i] {
			t := in.resultType
			if !in.hasExchange {
				t = defaultResultType(jobType)
			}
			b.connect(vertices[in.producer], vertices[i], in.shipStrategy, t)
		}
	}
	return b, nil
}

// nodeRef names node i for an error when its ID cannot be decoded: its "id" if that much is
// readable, else "nodes[i]".
func nodeRef(i int, raw json.RawMessage) string {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(raw, &probe) == nil && len(probe.ID) > 0 && string(probe.ID) != "null" {
		var s string
		if json.Unmarshal(probe.ID, &s) == nil && s != "" {
			return s
		}
		if _, err := strconv.ParseInt(string(probe.ID), 10, 64); err == nil {
			return string(probe.ID)
		}
	}
	return fmt.Sprintf("nodes[%d]", i)
}
