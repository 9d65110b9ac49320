package jobgraph

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The JSON form of a JobGraph is what encoding/json produces from the struct (json.Marshal(g)):
// IDs as 32 hex characters, enumerations by Flink's names (e.g. "ALL_TO_ALL", "BLOCKING"),
// durations in nanoseconds, the task config in base64. Decode reads it back; encoding a decoded
// graph gives the same bytes. HA stores persist this form.

// Decode reads a JobGraph from its JSON form. It refuses unknown fields, trailing data, unknown
// enumeration names, malformed IDs and nil vertices, edges or data sets, with an error that says
// what and where; it never panics, whatever the input. A decoded graph is not yet validated: call
// Validate before running it.
func Decode(data []byte) (*JobGraph, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var g JobGraph
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("jobgraph: decode: %w", err)
	}
	// Only JSON whitespace may follow. (dec.More would miss a stray '}' or ']'.)
	if len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) > 0 {
		return nil, fmt.Errorf("jobgraph: decode: trailing data after the job graph")
	}
	if err := g.checkNil(); err != nil {
		return nil, fmt.Errorf("jobgraph: decode: %w", err)
	}
	return &g, nil
}

// Clone returns a deep copy of g, through its JSON form.
func (g *JobGraph) Clone() (*JobGraph, error) {
	data, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	return Decode(data)
}

// checkNil reports the first nil vertex, edge or data set.
func (g *JobGraph) checkNil() error {
	for i, v := range g.Vertices {
		if v == nil {
			return &ValidationError{Rule: RuleNilEntry, Detail: fmt.Sprintf("vertex #%d is nil", i)}
		}
		for j, e := range v.Inputs {
			if e == nil {
				return &ValidationError{Rule: RuleNilEntry, Vertex: v.ID, VertexName: v.Name, Detail: fmt.Sprintf("input #%d is nil", j)}
			}
		}
		for j, ds := range v.Results {
			if ds == nil {
				return &ValidationError{Rule: RuleNilEntry, Vertex: v.ID, VertexName: v.Name, Detail: fmt.Sprintf("result #%d is nil", j)}
			}
		}
	}
	return nil
}
