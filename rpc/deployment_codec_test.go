package rpc_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// gatePartitions lists partitions first … first+n-1 of ds, each produced by the subtask of the
// same index of vertex in eg, with the attempt number attempt(i).
func gatePartitions(eg jobgraph.ExecutionGraphID, vertex jobgraph.JobVertexID, ds jobgraph.IntermediateDataSetID, first, n int, attempt func(int) int) []rpc.ResultPartitionID {
	ps := make([]rpc.ResultPartitionID, n)
	for i := range ps {
		idx := first + i
		ps[i] = rpc.ResultPartitionID{
			PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: ds, PartitionIndex: idx},
			ProducerID: jobgraph.ExecutionAttemptID{ExecutionGraphID: eg,
				ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: vertex, Subtask: idx}, AttemptNumber: attempt(idx)},
		}
	}
	return ps
}

// A sink of a 10,000 × 10,000 ALL_TO_ALL edge names its 10,000 partitions in a few hundred bytes:
// the range and one run per change of attempt number, and reads back the same list.
func TestInputGateJSONEncodesAPartitionRangeInConstantSpace(t *testing.T) {
	eg, vertex, ds := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID(), jobgraph.NewIntermediateDataSetID()
	for _, tc := range []struct {
		name     string
		first, n int
		attempt  func(int) int
		attempts string
	}{
		{"never restarted", 0, 10000, func(int) int { return 0 }, `[[10000,0]]`},
		{"all restarted 3 times", 0, 10000, func(int) int { return 3 }, `[[10000,3]]`},
		{"subtask 7 restarted twice", 0, 10000, func(i int) int { return map[bool]int{true: 2}[i == 7] }, `[[7,0],[1,2],[9992,0]]`},
		{"a pointwise range", 40, 3, func(i int) int { return i - 40 }, `[[1,0],[1,1],[1,2]]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := rpc.InputGateDeploymentDescriptor{DataSetID: ds, ResultType: jobgraph.Blocking,
				Partitions: gatePartitions(eg, vertex, ds, tc.first, tc.n, tc.attempt), ConsumedSubpartitionIndex: 9}
			data, err := json.Marshal(gate)
			require.NoError(t, err)
			want := fmt.Sprintf(`{"dataSetId":"%s","resultType":"BLOCKING","partitionRange":{"executionGraphId":"%s","producerVertexId":"%s","first":%d,"count":%d,"attempts":%s},"consumedSubpartitionIndex":9}`,
				ds, eg, vertex, tc.first, tc.n, tc.attempts)
			assert.Equal(t, want, string(data))
			var got rpc.InputGateDeploymentDescriptor
			require.NoError(t, json.Unmarshal(data, &got))
			assert.Equal(t, gate, got)
		})
	}
}

// Partitions that are not one producer's consecutive range keep the explicit list.
func TestInputGateJSONKeepsTheListWhenThePartitionsAreNoRange(t *testing.T) {
	eg, vertex, ds := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID(), jobgraph.NewIntermediateDataSetID()
	zero := func(int) int { return 0 }
	gap := append(gatePartitions(eg, vertex, ds, 0, 2, zero), gatePartitions(eg, vertex, ds, 3, 1, zero)...)
	otherVertex := append(gatePartitions(eg, vertex, ds, 0, 1, zero), gatePartitions(eg, jobgraph.NewJobVertexID(), ds, 1, 1, zero)...)
	otherGraph := append(gatePartitions(eg, vertex, ds, 0, 1, zero), gatePartitions(jobgraph.NewExecutionGraphID(), vertex, ds, 1, 1, zero)...)
	otherDataSet := gatePartitions(eg, vertex, jobgraph.NewIntermediateDataSetID(), 0, 2, zero)
	subtaskOff := gatePartitions(eg, vertex, ds, 0, 2, zero)
	subtaskOff[1].ProducerID.ExecutionVertexID.Subtask = 0
	for name, ps := range map[string][]rpc.ResultPartitionID{
		"gap": gap, "other vertex": otherVertex, "other graph": otherGraph, "other data set": otherDataSet, "subtask is not the index": subtaskOff,
	} {
		t.Run(name, func(t *testing.T) {
			gate := rpc.InputGateDeploymentDescriptor{DataSetID: ds, ResultType: jobgraph.Pipelined, Partitions: ps}
			got, data := roundTrip(t, gate)
			assert.Equal(t, gate, got)
			assert.Contains(t, string(data), `"partitions":[`)
			assert.NotContains(t, string(data), "partitionRange")
		})
	}
	empty, data := roundTrip(t, rpc.InputGateDeploymentDescriptor{DataSetID: ds})
	assert.Equal(t, rpc.InputGateDeploymentDescriptor{DataSetID: ds}, empty)
	assert.NotContains(t, string(data), `"partitions"`)
	assert.NotContains(t, string(data), "partitionRange")
}

func TestInputGateJSONRefusesABadPartitionRange(t *testing.T) {
	ds := jobgraph.NewIntermediateDataSetID()
	rng := func(body string) string {
		return `{"dataSetId":"` + ds.String() + `","resultType":"BLOCKING","partitionRange":{"executionGraphId":"` +
			jobgraph.NewExecutionGraphID().String() + `","producerVertexId":"` + jobgraph.NewJobVertexID().String() + `",` + body + `}}`
	}
	for _, tc := range []struct{ name, json, err string }{
		{"both forms", strings.Replace(rng(`"first":0,"count":1,"attempts":[[1,0]]`), `"resultType":"BLOCKING",`, `"resultType":"BLOCKING","partitions":[],`, 1),
			"rpc: input gate: both partitions and partitionRange given"},
		{"runs short of count", rng(`"first":0,"count":3,"attempts":[[2,0]]`), "attempt runs cover 2 partitions, count is 3"},
		{"runs past count", rng(`"first":0,"count":3,"attempts":[[2,0],[2,1]]`), "attempt runs cover 4 partitions, count is 3"},
		{"empty run", rng(`"first":0,"count":1,"attempts":[[0,0],[1,0]]`), "attempts[0] = [0 0]: want a positive run length and a non-negative attempt number"},
		{"negative attempt", rng(`"first":0,"count":1,"attempts":[[1,-1]]`), "attempts[0] = [1 -1]: want a positive run length and a non-negative attempt number"},
		{"negative first", rng(`"first":-1,"count":1,"attempts":[[1,0]]`), "first -1 and count 1 must name partitions within [0, 32768)"},
		{"past the max parallelism", rng(`"first":32000,"count":1000,"attempts":[[1000,0]]`), "first 32000 and count 1000 must name partitions within [0, 32768)"},
		{"huge count", rng(`"first":0,"count":1000000000000,"attempts":[[1000000000000,0]]`), "first 0 and count 1000000000000 must name partitions within [0, 32768)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got rpc.InputGateDeploymentDescriptor
			err := json.Unmarshal([]byte(tc.json), &got)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.Equal(t, rpc.InputGateDeploymentDescriptor{}, got, "nothing is half-decoded")
		})
	}
}

// A gate's ShuffleDescriptors travel beside its partitions and read back the same; a list that
// does not describe the gate's partitions, one for one and in order, is refused.
func TestInputGateJSONCarriesShuffleDescriptors(t *testing.T) {
	eg, vertex, ds := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID(), jobgraph.NewIntermediateDataSetID()
	ps := gatePartitions(eg, vertex, ds, 0, 2, func(int) int { return 0 })
	gate := rpc.InputGateDeploymentDescriptor{DataSetID: ds, ResultType: jobgraph.Blocking, Partitions: ps,
		ShuffleDescriptors: []rpc.ShuffleDescriptor{
			{ResultPartitionID: ps[0], ProducerLocation: "te-1", Data: []byte("host-a:9000")},
			{ResultPartitionID: ps[1], ProducerLocation: "te-2"},
		}}
	data, err := json.Marshal(gate)
	require.NoError(t, err)
	var got rpc.InputGateDeploymentDescriptor
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, gate, got)

	short := gate
	short.ShuffleDescriptors = gate.ShuffleDescriptors[:1]
	data, err = json.Marshal(short)
	require.NoError(t, err)
	assert.EqualError(t, json.Unmarshal(data, &got), fmt.Sprintf("rpc: input gate of data set %s: 1 shuffleDescriptors for 2 partitions", ds))

	swapped := gate
	swapped.ShuffleDescriptors = []rpc.ShuffleDescriptor{gate.ShuffleDescriptors[1], gate.ShuffleDescriptors[0]}
	data, err = json.Marshal(swapped)
	require.NoError(t, err)
	assert.EqualError(t, json.Unmarshal(data, &got), fmt.Sprintf("rpc: input gate of data set %s: shuffleDescriptors[0] describes partition %v, not %v", ds, ps[1], ps[0]))
}
