package scheduler

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// The consumers of one ConsumedPartitionGroup get one partition list, built once: the same
// slice in every descriptor. A restart builds a new list with the new producer attempts and
// leaves the one the earlier consumers got as it was; the JSON form of a sink's gate is the
// range with its attempt runs.
func TestConsumersOfOneGroupShareOnePartitionList(t *testing.T) {
	const p = 3
	g := jobgraph.New("shared", jobgraph.Streaming)
	src := g.AddVertex("src", "noop", p)
	sink := g.AddVertex("sink", "noop", p)
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Pipelined)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, 0)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	require.Equal(t, p, h.offer(te1, p))
	require.Len(t, h.deployer.deployed, 2*p)

	// sinkLists returns the partition list of each sink deployed from the n-th deployment on.
	sinkLists := func(n int) [][]rpc.ResultPartitionID {
		var out [][]rpc.ResultPartitionID
		for _, c := range h.deployer.deployed[n:] {
			if c.tdd.VertexName == "sink" {
				require.Len(t, c.tdd.InputGates, 1)
				out = append(out, c.tdd.InputGates[0].Partitions)
			}
		}
		require.Len(t, out, p)
		return out
	}
	want := func(attempt int) []rpc.ResultPartitionID {
		var ps []rpc.ResultPartitionID
		for i := range p {
			ps = append(ps, rpc.ResultPartitionID{
				PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: src.Results[0].ID, PartitionIndex: i},
				ProducerID: jobgraph.ExecutionAttemptID{ExecutionGraphID: h.s.ExecutionGraph().ID(),
					ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: src.ID, Subtask: i}, AttemptNumber: attempt},
			})
		}
		return ps
	}
	first := sinkLists(0)
	for i, ps := range first {
		assert.Equal(t, want(0), ps, "sink %d", i)
		assert.Same(t, &first[0][0], &ps[0], "sink %d has a list of its own", i)
	}

	h.runDeployed()
	h.s.HandleGlobalFailure(errors.New("boom"))
	for _, name := range []string{"src", "sink"} {
		for i := range p {
			require.True(t, h.report(name, i, jobgraph.ExecutionStateCanceled))
		}
	}
	h.timers.Advance(0)
	require.Len(t, h.deployer.deployed, 4*p)
	second := sinkLists(2 * p)
	for i, ps := range second {
		assert.Equal(t, want(1), ps, "restarted sink %d", i)
		assert.Same(t, &second[0][0], &ps[0], "restarted sink %d has a list of its own", i)
	}
	assert.NotSame(t, &first[0][0], &second[0][0])
	assert.Equal(t, want(0), first[0], "the list the first consumers got did not change")

	var last rpc.TaskDeploymentDescriptor
	for _, c := range h.deployer.deployed {
		if c.tdd.VertexName == "sink" {
			last = c.tdd
		}
	}
	data, err := json.Marshal(last.InputGates[0])
	require.NoError(t, err)
	assert.Contains(t, string(data), fmt.Sprintf(`"partitionRange":{"executionGraphId":"%s","producerVertexId":"%s","first":0,"count":3,"attempts":[[3,1]]}`,
		h.s.ExecutionGraph().ID(), src.ID))
}

// A vertex that names an operator coordinator deploys its tasks with HasOperatorCoordinator;
// the others without it.
func TestTDDSaysWhetherTheVertexHasAnOperatorCoordinator(t *testing.T) {
	g := jobgraph.New("coordinated", jobgraph.Streaming)
	src := g.AddVertex("src", "noop", 2).WithOperatorCoordinator("split-enumerator", []byte("cfg"))
	sink := g.AddVertex("sink", "noop", 2)
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Pipelined)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	require.Equal(t, 2, h.offer(te1, 2))
	require.Len(t, h.deployer.deployed, 4)
	has := map[string]bool{}
	for _, c := range h.deployer.deployed {
		has[c.tdd.TaskName] = c.tdd.HasOperatorCoordinator
	}
	assert.Equal(t, map[string]bool{"src (1/2)": true, "src (2/2)": true, "sink (1/2)": false, "sink (2/2)": false}, has)
}

// Descriptors carve their produced-partition and input-gate slices out of shared chunks, each
// capped at its own length: appending to one descriptor's slice, or changing one of its
// elements, leaves every other descriptor as it was.
func TestDescriptorSlicesDoNotAlias(t *testing.T) {
	const p = 4
	g := jobgraph.New("chunks", jobgraph.Streaming)
	src := g.AddVertex("src", "noop", p)
	sink := g.AddVertex("sink", "noop", p)
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Pipelined)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	require.Equal(t, p, h.offer(te1, p))
	require.Len(t, h.deployer.deployed, 2*p)

	var sources, sinks []rpc.TaskDeploymentDescriptor
	for _, c := range h.deployer.deployed {
		switch c.tdd.VertexName {
		case "src":
			require.Len(t, c.tdd.ProducedPartitions, 1)
			require.Equal(t, 1, cap(c.tdd.ProducedPartitions))
			sources = append(sources, c.tdd)
		case "sink":
			require.Len(t, c.tdd.InputGates, 1)
			require.Equal(t, 1, cap(c.tdd.InputGates))
			sinks = append(sinks, c.tdd)
		}
	}
	require.Len(t, sources, p)
	require.Len(t, sinks, p)
	for i, tdd := range sources {
		assert.Equal(t, i, tdd.ProducedPartitions[0].ResultPartitionID.PartitionID.PartitionIndex)
		assert.Equal(t, fmt.Sprintf("src (%d/%d)", i+1, p), tdd.TaskName)
	}
	for i, tdd := range sinks {
		assert.Equal(t, i, tdd.InputGates[0].ConsumedSubpartitionIndex)
	}

	grown := append(sources[0].ProducedPartitions, rpc.ResultPartitionDeploymentDescriptor{NumberOfSubpartitions: 99})
	grown[0].NumberOfSubpartitions = 77
	assert.Equal(t, p, sources[0].ProducedPartitions[0].NumberOfSubpartitions, "append copied")
	assert.Equal(t, p, sources[1].ProducedPartitions[0].NumberOfSubpartitions)
	assert.Equal(t, 1, sources[1].ProducedPartitions[0].ResultPartitionID.PartitionID.PartitionIndex)
	sinks[0].InputGates[0].ConsumedSubpartitionIndex = 42
	assert.Equal(t, 1, sinks[1].InputGates[0].ConsumedSubpartitionIndex)
}
