package scheduler

import (
	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// ShuffleMaster is the JobMaster's side of a shuffle service: it registers each partition a
// task produces, when the task is deployed, and hands out the descriptor its producer and its
// consumers are deployed with; it releases what the service keeps outside the producer's
// TaskExecutor once the scheduler releases a partition. taskexecutor.ShuffleEnvironment is the
// TaskExecutor's side. Config.ShuffleMaster takes one; nil means the in-memory shuffle's, which
// needs no descriptor: partitions are found by their ResultPartitionID alone, and the
// descriptors' fields stay nil. Flink: org.apache.flink.runtime.shuffle.ShuffleMaster.
//
// Both methods are called on the JobMaster's main loop and must not block (no I/O: a service
// that must reach a remote party registers ahead or answers from a cache). Where we differ:
// Flink's registerPartitionWithProducer returns a future, which its default scheduler requires
// to be completed already; here the call returns the descriptor.
type ShuffleMaster interface {
	// RegisterPartitionWithProducer registers partition, produced by the attempt and at the
	// location producer names, and returns its descriptor; its ResultPartitionID must be
	// partition.ResultPartitionID. Called once per produced partition of every attempt the
	// scheduler deploys, before any task of that deployment bulk is deployed. An error fails
	// the producing attempt (its deployment does not happen). Flink: registerPartitionWithProducer.
	RegisterPartitionWithProducer(job jobgraph.JobID, partition PartitionDescriptor, producer ProducerDescriptor) (rpc.ShuffleDescriptor, error)
	// ReleasePartitionExternally releases what the service keeps of the partition outside its
	// producer's TaskExecutor; the TaskExecutor's own copy is released through
	// TaskExecutorGateway.ReleasePartitions at the same time. Called for the partitions the
	// scheduler releases (BLOCKING and HYBRID ones once consumed, all left when the job ends, a
	// restarted producer's old ones). Flink: releasePartitionExternally.
	ReleasePartitionExternally(d rpc.ShuffleDescriptor)
}

// PartitionDescriptor describes a partition to its ShuffleMaster. Flink: PartitionDescriptor.
type PartitionDescriptor struct {
	ResultPartitionID rpc.ResultPartitionID
	DataSetID         jobgraph.IntermediateDataSetID
	ResultType        jobgraph.ResultPartitionType
	// PartitionIndex is the partition's index in its data set (its producer's subtask index).
	PartitionIndex int
	// NumberOfSubpartitions is the number of consumer subtasks that read it (as in
	// rpc.ResultPartitionDeploymentDescriptor).
	NumberOfSubpartitions int
	// RecordCodec is the data set's jobgraph.IntermediateDataSet.RecordCodec: the codec a
	// network shuffle encodes its records with ("" for the service's default). A ShuffleMaster
	// that needs it puts it in the descriptor's Data, so that producer and consumers agree.
	RecordCodec string
}

// ProducerDescriptor describes the producing attempt to the ShuffleMaster. Flink:
// ProducerDescriptor (where the TaskExecutor's address and data port would be; a ShuffleMaster
// that needs the address maps the ResourceID through its own registry).
type ProducerDescriptor struct {
	ExecutionAttemptID jobgraph.ExecutionAttemptID
	// ProducerLocation is the TaskExecutor the producer is deployed to.
	ProducerLocation jobgraph.ResourceID
}
