package main

import (
	"bytes"
	"encoding/json"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/internal/jsonplan"
)

// jobPlan builds g's plan as package rest serves GET /jobs/:jobid/plan for it (both through
// internal/jsonplan): one node per vertex in topological order, its inputs in input order. An
// edge whose data set has no producer in g is left out, as Flink leaves out an input without a
// producer. Errors: g's TopologicalOrder's (a cycle); g should be valid (Validate).
func jobPlan(g *jobgraph.JobGraph) (jsonplan.Plan, error) {
	order, err := g.TopologicalOrder()
	if err != nil {
		return jsonplan.Plan{}, err
	}
	producers := g.Producers()
	vs := make([]jsonplan.Vertex, 0, len(order))
	for _, v := range order {
		jv := jsonplan.Vertex{ID: v.ID, Name: v.Name, Parallelism: v.Parallelism}
		for _, e := range v.Inputs {
			producer := producers[e.Source]
			if producer == nil {
				continue
			}
			in := executiongraph.ArchivedJobEdge{Source: producer.ID, DistributionPattern: e.DistributionPattern,
				ShipStrategy: e.ShipStrategy}
			for _, ds := range producer.Results {
				if ds.ID == e.Source {
					in.ResultType = ds.ResultType
				}
			}
			jv.Inputs = append(jv.Inputs, in)
		}
		vs = append(vs, jv)
	}
	return jsonplan.New(g.JobID, g.Name, g.Type, vs), nil
}

// marshalPlan writes p as indented JSON without encoding/json's HTML escaping.
func marshalPlan(p jsonplan.Plan) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
