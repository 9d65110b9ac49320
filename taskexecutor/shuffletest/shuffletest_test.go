package shuffletest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/jobgraph/jobgraph/taskexecutor/shuffletest"
)

// inMemory is the in-memory default with its defaults: a gate holds QueueCapacity batches, its
// reader one more it hands out, and the writer one it is filling.
var inMemory = shuffletest.Config{
	NewEnvironment: func(*testing.T) taskexecutor.ShuffleEnvironment {
		return taskexecutor.NewShuffle(taskexecutor.ShuffleConfig{})
	},
	MaxBufferedRecords: (taskexecutor.DefaultQueueCapacity + 2) * taskexecutor.DefaultBatchSize,
}

// The in-memory *taskexecutor.Shuffle passes the ShuffleEnvironment conformance suite, in a
// bubble and in real time.
func TestInMemoryShuffleConformance(t *testing.T) {
	shuffletest.TestShuffleEnvironmentInBubble(t, inMemory)
}

func TestInMemoryShuffleConformanceRealTime(t *testing.T) {
	shuffletest.TestShuffleEnvironment(t, inMemory)
}

// describingMaster is a ShuffleMaster that describes every partition as a network shuffle's
// would (its producer's location and some data of its own), to run the suite with descriptors
// in every deployment descriptor; the in-memory shuffle needs none and must not mind them.
type describingMaster struct {
	t          *testing.T
	registered int
}

func (m *describingMaster) RegisterPartitionWithProducer(job jobgraph.JobID, p scheduler.PartitionDescriptor, producer scheduler.ProducerDescriptor) (rpc.ShuffleDescriptor, error) {
	assert.Equal(m.t, p.ResultPartitionID.ProducerID, producer.ExecutionAttemptID, "the producer registered is the partition's")
	assert.Equal(m.t, p.ResultPartitionID.PartitionID.IntermediateDataSetID, p.DataSetID)
	assert.Positive(m.t, p.NumberOfSubpartitions)
	m.registered++
	return rpc.ShuffleDescriptor{ResultPartitionID: p.ResultPartitionID, ProducerLocation: producer.ProducerLocation, Data: []byte("host:port")}, nil
}

func (m *describingMaster) ReleasePartitionExternally(rpc.ShuffleDescriptor) {}

// describedEnv checks that every descriptor the suite deploys with carries the ShuffleMaster's
// descriptors: the writer's own, and one per partition of a gate, in order.
type describedEnv struct {
	taskexecutor.ShuffleEnvironment
	t *testing.T
}

func (e describedEnv) CreateResultPartitionWriters(o taskexecutor.ShuffleIOOwnerContext, ds []rpc.ResultPartitionDeploymentDescriptor) ([]taskexecutor.ShuffleWriter, error) {
	for _, d := range ds {
		if assert.NotNil(e.t, d.ShuffleDescriptor, "a writer's descriptor") {
			assert.Equal(e.t, d.ResultPartitionID, d.ShuffleDescriptor.ResultPartitionID)
			assert.Equal(e.t, o.TaskExecutor, d.ShuffleDescriptor.ProducerLocation)
		}
	}
	return e.ShuffleEnvironment.CreateResultPartitionWriters(o, ds)
}

func (e describedEnv) CreateInputGates(o taskexecutor.ShuffleIOOwnerContext, ds []rpc.InputGateDeploymentDescriptor) ([]taskexecutor.ShuffleReader, error) {
	for _, d := range ds {
		if assert.Len(e.t, d.ShuffleDescriptors, len(d.Partitions), "a gate's descriptors") {
			for i, sd := range d.ShuffleDescriptors {
				assert.Equal(e.t, d.Partitions[i], sd.ResultPartitionID)
			}
		}
	}
	return e.ShuffleEnvironment.CreateInputGates(o, ds)
}

// With a ShuffleMaster the suite registers every partition it writes (each case writes at
// least one) and deploys with the descriptors; the in-memory shuffle passes it all the same.
func TestInMemoryShuffleConformanceWithShuffleMaster(t *testing.T) {
	cfg := inMemory
	cfg.NewEnvironment = func(t *testing.T) taskexecutor.ShuffleEnvironment {
		return describedEnv{ShuffleEnvironment: inMemory.NewEnvironment(t), t: t}
	}
	cfg.NewShuffleMaster = func(t *testing.T, _ taskexecutor.ShuffleEnvironment) scheduler.ShuffleMaster {
		m := &describingMaster{t: t}
		t.Cleanup(func() { assert.NotZero(t, m.registered, "partitions registered with the ShuffleMaster") })
		return m
	}
	shuffletest.TestShuffleEnvironmentInBubble(t, cfg)
}
