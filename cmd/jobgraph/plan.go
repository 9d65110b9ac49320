package main

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/jobgraph/jobgraph"
)

// The plan as Flink's JsonPlanGenerator writes it (JobPlanInfo.Plan, the "plan" of
// GET /jobs/:jobid/plan): one node per JobVertex, in the graph's vertex order, its inputs in
// input order. Field order follows Flink's JSON.
type plan struct {
	JID   string     `json:"jid"`
	Name  string     `json:"name"`
	Type  string     `json:"type"`
	Nodes []planNode `json:"nodes"`
}

type planNode struct {
	ID                  string          `json:"id"`
	Parallelism         int             `json:"parallelism"`
	Operator            string          `json:"operator"`
	OperatorStrategy    string          `json:"operator_strategy"`
	Description         string          `json:"description"`
	Inputs              []planInput     `json:"inputs,omitempty"`
	OptimizerProperties json.RawMessage `json:"optimizer_properties"`
}

type planInput struct {
	Num          int    `json:"num"`
	ID           string `json:"id"`
	ShipStrategy string `json:"ship_strategy"`
	Exchange     string `json:"exchange"`
}

// jobPlan builds g's plan as package rest serves GET /jobs/:jobid/plan for it: one node per
// vertex in topological order, its inputs in input order. A vertex has no operator name or
// strategy here (Flink's are those of the DataSet optimizer), so both are empty, as Flink writes
// them for a streaming job; the description is the vertex name (Flink escapes it as HTML; rest
// does not, and neither does this); an edge's ship_strategy is its ShipStrategy, or else FORWARD
// for POINTWISE and REBALANCE for ALL_TO_ALL, as rest names them; exchange is the data set's
// ResultPartitionType in lower case ("pipelined_bounded", "blocking"). An edge whose data set has
// no producer in g is left out, as Flink leaves out an input without a producer. Errors: g's
// TopologicalOrder's (a cycle); g should be valid (Validate).
func jobPlan(g *jobgraph.JobGraph) (plan, error) {
	p := plan{JID: g.JobID.String(), Name: g.Name, Type: g.Type.String(), Nodes: []planNode{}}
	order, err := g.TopologicalOrder()
	if err != nil {
		return p, err
	}
	producers := g.Producers()
	for _, v := range order {
		n := planNode{ID: v.ID.String(), Parallelism: v.Parallelism, Description: v.Name,
			OptimizerProperties: json.RawMessage("{}")}
		for i, e := range v.Inputs {
			producer := producers[e.Source]
			if producer == nil {
				continue
			}
			in := planInput{Num: i, ID: producer.ID.String(), ShipStrategy: e.ShipStrategy}
			if in.ShipStrategy == "" {
				in.ShipStrategy = "REBALANCE"
				if e.DistributionPattern == jobgraph.Pointwise {
					in.ShipStrategy = "FORWARD"
				}
			}
			for _, ds := range producer.Results {
				if ds.ID == e.Source {
					in.Exchange = strings.ToLower(ds.ResultType.String())
				}
			}
			n.Inputs = append(n.Inputs, in)
		}
		p.Nodes = append(p.Nodes, n)
	}
	return p, nil
}

// marshalPlan writes p as indented JSON without encoding/json's HTML escaping.
func marshalPlan(p plan) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
