package jsonplan_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/internal/jsonplan"
)

// A plan in Flink's JSON: nodes in the order given, empty operator fields and optimizer
// properties, inputs numbered in order with FORWARD/REBALANCE for edges that name no ship
// strategy, a named one kept, and the exchange in lower case.
func TestNewWritesFlinksPlan(t *testing.T) {
	job := jobgraph.JobID{1}
	src, sink := jobgraph.JobVertexID{2}, jobgraph.JobVertexID{3}
	p := jsonplan.New(job, "j", jobgraph.Streaming, []jsonplan.Vertex{
		{ID: src, Name: "src <a>", Parallelism: 2},
		{ID: sink, Name: "sink", Parallelism: 1, Inputs: []executiongraph.ArchivedJobEdge{
			{Source: src, DistributionPattern: jobgraph.Pointwise, ResultType: jobgraph.PipelinedBounded},
			{Source: src, DistributionPattern: jobgraph.AllToAll, ResultType: jobgraph.Blocking},
			{Source: src, DistributionPattern: jobgraph.AllToAll, ShipStrategy: "HASH", ResultType: jobgraph.PipelinedBounded},
		}},
	})
	b, err := json.Marshal(p)
	require.NoError(t, err)
	assert.JSONEq(t, `{"jid":"`+job.String()+`","name":"j","type":"STREAMING","nodes":[
		{"id":"`+src.String()+`","parallelism":2,"operator":"","operator_strategy":"","description":"src <a>","optimizer_properties":{}},
		{"id":"`+sink.String()+`","parallelism":1,"operator":"","operator_strategy":"","description":"sink","optimizer_properties":{},"inputs":[
			{"num":0,"id":"`+src.String()+`","ship_strategy":"FORWARD","exchange":"pipelined_bounded"},
			{"num":1,"id":"`+src.String()+`","ship_strategy":"REBALANCE","exchange":"blocking"},
			{"num":2,"id":"`+src.String()+`","ship_strategy":"HASH","exchange":"pipelined_bounded"}]}]}`, string(b))
}
