// Package jsonplan is a job's JSON plan as Flink's JsonPlanGenerator writes it (JobPlanInfo's
// "plan"): package rest serves it at GET /jobs/:jobid/plan from the archived graph, and
// cmd/jobgraph's info prints it from a JobGraph file, both through New, so the two cannot drift.
package jsonplan

import (
	"strings"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// Plan is Flink's JSON plan. Field order follows Flink's JSON.
type Plan struct {
	JID   string `json:"jid"`
	Name  string `json:"name"`
	Type  string `json:"type"`
	Nodes []Node `json:"nodes"`
}

// Node is one job vertex of the plan.
type Node struct {
	ID               string  `json:"id"`
	Parallelism      int     `json:"parallelism"`
	Operator         string  `json:"operator"`
	OperatorStrategy string  `json:"operator_strategy"`
	Description      string  `json:"description"`
	Inputs           []Input `json:"inputs,omitempty"`
	// OptimizerProperties is always the empty object, as Flink writes it for a streaming job.
	OptimizerProperties struct{} `json:"optimizer_properties"`
}

// Input is one input of a node: its producer, ship strategy and exchange.
type Input struct {
	Num          int    `json:"num"`
	ID           string `json:"id"`
	ShipStrategy string `json:"ship_strategy"`
	Exchange     string `json:"exchange"`
}

// Vertex is what New needs of a job vertex: the archived graph's vertices have it, and a
// JobGraph's give it with their inputs' producers resolved.
type Vertex struct {
	ID          jobgraph.JobVertexID
	Name        string
	Parallelism int
	Inputs      []executiongraph.ArchivedJobEdge
}

// New builds the plan of the job's vertices, in the order given (topological, as Flink writes
// it). A vertex has no operator name or strategy here (Flink's are those of the DataSet
// optimizer), so both are empty, as Flink writes them for a streaming job; the description is the
// vertex name, unescaped (Flink escapes it as HTML). An input's ship_strategy is its edge's
// ShipStrategy, or else FORWARD for POINTWISE and REBALANCE for ALL_TO_ALL; exchange is the
// data set's ResultPartitionType in lower case ("pipelined_bounded", "blocking").
func New(job jobgraph.JobID, name string, typ jobgraph.JobType, vertices []Vertex) Plan {
	p := Plan{JID: job.String(), Name: name, Type: typ.String(), Nodes: make([]Node, len(vertices))}
	for i, v := range vertices {
		n := Node{ID: v.ID.String(), Parallelism: v.Parallelism, Description: v.Name}
		for k, in := range v.Inputs {
			ship := in.ShipStrategy
			if ship == "" {
				ship = "REBALANCE"
				if in.DistributionPattern == jobgraph.Pointwise {
					ship = "FORWARD"
				}
			}
			n.Inputs = append(n.Inputs, Input{Num: k, ID: in.Source.String(), ShipStrategy: ship,
				Exchange: strings.ToLower(in.ResultType.String())})
		}
		p.Nodes[i] = n
	}
	return p
}
