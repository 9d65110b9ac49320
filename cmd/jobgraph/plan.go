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

// jobPlan builds g's plan. A vertex has no operator name or strategy here (Flink's are those of
// the DataSet optimizer), so both are empty, as Flink writes them for a streaming job; the
// description is the vertex name, HTML-escaped as Flink escapes it; an edge's ship_strategy is
// its ShipStrategy, or else its distribution pattern (ALL_TO_ALL, POINTWISE) where Flink would
// have the partitioner's name; exchange is the data set's ResultPartitionType in lower case
// ("pipelined_bounded", "blocking"). An edge whose data set has no producer in g is left out, as
// Flink leaves out an input without a producer. g should be valid (Validate).
func jobPlan(g *jobgraph.JobGraph) plan {
	p := plan{JID: g.JobID.String(), Name: g.Name, Type: g.Type.String(), Nodes: []planNode{}}
	producers := g.Producers()
	for _, v := range g.Vertices {
		n := planNode{ID: v.ID.String(), Parallelism: v.Parallelism, Description: flinkHTML(v.Name),
			OptimizerProperties: json.RawMessage("{}")}
		for i, e := range v.Inputs {
			producer := producers[e.Source]
			if producer == nil {
				continue
			}
			in := planInput{Num: i, ID: producer.ID.String(), ShipStrategy: e.ShipStrategy}
			if in.ShipStrategy == "" {
				in.ShipStrategy = e.DistributionPattern.String()
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
	return p
}

// flinkHTML escapes s as JsonPlanGenerator escapes a description (StringEscapeUtils.escapeHtml4
// for the characters that matter in HTML, then newlines as <br/> and backslashes as &#92;).
func flinkHTML(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "\n", "<br/>", `\`, "&#92;").Replace(s)
}

// marshalPlan writes p as indented JSON without encoding/json's HTML escaping (the description
// is escaped already, as Flink's).
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
