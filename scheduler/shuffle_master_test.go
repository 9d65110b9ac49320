package scheduler

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// recordingShuffleMaster describes each partition with "<location>/<partition index>#<attempt>"
// and records every call. fail, if set, is the error for the partition of that index.
type recordingShuffleMaster struct {
	registered []string
	released   []rpc.ShuffleDescriptor
	fail       map[int]error
	codecs     []string // PartitionDescriptor.RecordCodec of each registration
}

func (m *recordingShuffleMaster) RegisterPartitionWithProducer(job jobgraph.JobID, p PartitionDescriptor, producer ProducerDescriptor) (rpc.ShuffleDescriptor, error) {
	name := fmt.Sprintf("%s/%d#%d", producer.ProducerLocation, p.PartitionIndex, producer.ExecutionAttemptID.AttemptNumber)
	m.registered = append(m.registered, fmt.Sprintf("%s subpartitions=%d type=%s", name, p.NumberOfSubpartitions, p.ResultType))
	m.codecs = append(m.codecs, p.RecordCodec)
	if err := m.fail[p.PartitionIndex]; err != nil {
		return rpc.ShuffleDescriptor{}, err
	}
	return rpc.ShuffleDescriptor{ResultPartitionID: p.ResultPartitionID, ProducerLocation: producer.ProducerLocation, Data: []byte(name)}, nil
}

func (m *recordingShuffleMaster) ReleasePartitionExternally(d rpc.ShuffleDescriptor) {
	m.released = append(m.released, d)
}

func descData(ds []rpc.ShuffleDescriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d.Data)
	}
	return out
}

// A batch job: each source's partition is registered when the source is deployed and its
// descriptor travels to the source; the sinks, deployed once the sources finished, get the
// descriptors of both partitions in partition order (one list for both); once the sinks finished
// the scheduler releases the partitions, on the TaskExecutor and externally.
func TestShuffleMasterDescribesPartitionsToProducersAndConsumers(t *testing.T) {
	g := jobgraph.New("shuffle", jobgraph.Batch)
	src := g.AddVertex("src", "noop", 2)
	sink := g.AddVertex("sink", "noop", 2)
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Blocking)
	src.Results[0].RecordCodec = "int64"
	m := &recordingShuffleMaster{}
	h := newHarness(t, g, Config{ShuffleMaster: m})
	h.s.StartScheduling()
	require.Equal(t, 2, h.offer(te1, 2))
	assert.Equal(t, []string{
		"taskexecutor-1/0#0 subpartitions=2 type=BLOCKING",
		"taskexecutor-1/1#0 subpartitions=2 type=BLOCKING",
	}, m.registered)
	assert.Equal(t, []string{"int64", "int64"}, m.codecs, "the data set's record codec reaches the ShuffleMaster")
	require.Equal(t, []string{"src (1/2)#0", "src (2/2)#0"}, h.deployedSince(0))
	for i, c := range h.deployer.deployed {
		require.Len(t, c.tdd.ProducedPartitions, 1)
		d := c.tdd.ProducedPartitions[0].ShuffleDescriptor
		require.NotNil(t, d)
		assert.Equal(t, fmt.Sprintf("taskexecutor-1/%d#0", i), string(d.Data))
		assert.Equal(t, c.tdd.ProducedPartitions[0].ResultPartitionID, d.ResultPartitionID)
	}
	h.finish("src", 0)
	h.finish("src", 1)
	require.Equal(t, []string{"src (1/2)#0", "src (2/2)#0", "sink (1/2)#0", "sink (2/2)#0"}, h.deployedSince(0))
	assert.Len(t, m.registered, 2, "sinks produce nothing")
	var lists [][]rpc.ShuffleDescriptor
	for _, c := range h.deployer.deployed[2:] {
		require.Len(t, c.tdd.InputGates, 1)
		gate := c.tdd.InputGates[0]
		assert.Equal(t, []string{"taskexecutor-1/0#0", "taskexecutor-1/1#0"}, descData(gate.ShuffleDescriptors))
		for i, d := range gate.ShuffleDescriptors {
			assert.Equal(t, gate.Partitions[i], d.ResultPartitionID)
		}
		lists = append(lists, gate.ShuffleDescriptors)
	}
	assert.Same(t, &lists[0][0], &lists[1][0], "the consumers of one group share one descriptor list")

	assert.Empty(t, m.released)
	h.finish("sink", 0)
	h.finish("sink", 1)
	assert.Equal(t, jobgraph.JobStatusFinished, h.s.JobStatus())
	assert.Equal(t, []string{"taskexecutor-1/0#0", "taskexecutor-1/1#0"}, descData(m.released))
	require.Len(t, h.deployer.released, 1)
	assert.Len(t, h.deployer.released[0].partitions, 2)
}

// Without a ShuffleMaster (the in-memory default) the descriptors stay nil.
func TestNoShuffleMasterNoDescriptors(t *testing.T) {
	g := jobgraph.New("plain", jobgraph.Streaming)
	src := g.AddVertex("src", "noop", 2)
	sink := g.AddVertex("sink", "noop", 2)
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Pipelined)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	require.Equal(t, 2, h.offer(te1, 2))
	require.Len(t, h.deployer.deployed, 4)
	for _, c := range h.deployer.deployed {
		for _, p := range c.tdd.ProducedPartitions {
			assert.Nil(t, p.ShuffleDescriptor)
		}
		for _, gate := range c.tdd.InputGates {
			assert.Nil(t, gate.ShuffleDescriptors)
		}
	}
}

// In a pipelined region every producer is registered before any task of the bulk is deployed,
// so consumers deployed before a producer still get its descriptor; a restarted producer is
// registered again, and the consumers restarted with it get the new descriptor.
func TestPipelinedConsumersGetTheDescriptorsOfTheirBulk(t *testing.T) {
	g := jobgraph.New("pipelined", jobgraph.Streaming)
	g.Connect(g.AddVertex("src", "noop", 2), g.AddVertex("sink", "noop", 1), jobgraph.AllToAll, jobgraph.Pipelined)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, 0)
	m := &recordingShuffleMaster{}
	h := newHarness(t, g, Config{ShuffleMaster: m})
	h.s.StartScheduling()
	require.Equal(t, 2, h.offer(te1, 2))
	sinkGate := func(n int) []string {
		for _, c := range h.deployer.deployed[n:] {
			if c.tdd.VertexName == "sink" {
				return descData(c.tdd.InputGates[0].ShuffleDescriptors)
			}
		}
		t.Fatal("no sink deployed")
		return nil
	}
	assert.Equal(t, []string{"taskexecutor-1/0#0", "taskexecutor-1/1#0"}, sinkGate(0))

	h.runDeployed()
	n := len(h.deployer.deployed)
	require.True(t, h.fail("src", 1, errors.New("boom")))
	for _, v := range []struct {
		name string
		p    int
	}{{"src", 2}, {"sink", 1}} {
		for i := range v.p {
			if e := h.exec(v.name, i); e.State() == jobgraph.ExecutionStateCanceling {
				require.True(t, h.report(v.name, i, jobgraph.ExecutionStateCanceled))
			}
		}
	}
	h.timers.Advance(0)
	require.Greater(t, len(h.deployer.deployed), n, "the region was redeployed")
	assert.Equal(t, []string{"taskexecutor-1/0#1", "taskexecutor-1/1#1"}, sinkGate(n))
}

// A registration error fails the producing attempt before anything of its bulk is deployed;
// without restarts the job fails with the ShuffleMaster's error.
func TestShuffleMasterRegistrationErrorFailsTheProducer(t *testing.T) {
	g := jobgraph.New("refused", jobgraph.Streaming)
	src := g.AddVertex("src", "noop", 2)
	sink := g.AddVertex("sink", "noop", 1)
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Pipelined)
	refused := errors.New("no shuffle capacity")
	m := &recordingShuffleMaster{fail: map[int]error{1: refused}}
	h := newHarness(t, g, Config{ShuffleMaster: m})
	h.s.StartScheduling()
	require.Equal(t, 2, h.offer(te1, 2))
	assert.Empty(t, h.deployer.deployed)
	require.ErrorIs(t, h.s.RootCause(), refused)
	assert.EqualError(t, h.s.RootCause(), fmt.Sprintf("cannot register partition %s of task src (2/2) (attempt 0) with the shuffle master: no shuffle capacity",
		jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: src.Results[0].ID, PartitionIndex: 1}))
	assert.Equal(t, jobgraph.ExecutionStateFailed, h.exec("src", 1).State())
}

// Registering a partition rebuilds only the cached lists of the groups that read it: two middle
// tasks of a batch job, deployed in bulks of their own that each register a partition, still
// share one descriptor list of the sources' partitions.
func TestRegistrationKeepsOtherGroupsListsShared(t *testing.T) {
	g := jobgraph.New("chain", jobgraph.Batch)
	src := g.AddVertex("src", "noop", 2)
	mid := g.AddVertex("mid", "noop", 2)
	g.Connect(src, mid, jobgraph.AllToAll, jobgraph.Blocking)
	g.Connect(mid, g.AddVertex("sink", "noop", 1), jobgraph.AllToAll, jobgraph.Blocking)
	m := &recordingShuffleMaster{}
	h := newHarness(t, g, Config{ShuffleMaster: m})
	h.s.StartScheduling()
	require.Equal(t, 2, h.offer(te1, 2))
	h.finish("src", 0)
	h.finish("src", 1)
	require.Equal(t, []string{"src (1/2)#0", "src (2/2)#0", "mid (1/2)#0", "mid (2/2)#0"}, h.deployedSince(0))
	assert.Len(t, m.registered, 4, "both sources and both middle tasks registered their partitions")
	a, b := h.deployer.deployed[2].tdd.InputGates[0].ShuffleDescriptors, h.deployer.deployed[3].tdd.InputGates[0].ShuffleDescriptors
	assert.Equal(t, []string{"taskexecutor-1/0#0", "taskexecutor-1/1#0"}, descData(a))
	assert.Same(t, &a[0], &b[0], "mid (2/2)'s bulk registering its partition left the sources' list shared")
}
