package rpc

import (
	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// SlotID names one slot of a TaskExecutor's slot table: the TaskExecutor and the slot's index.
// Flink: org.apache.flink.runtime.clusterframework.types.SlotID.
type SlotID struct {
	ResourceID jobgraph.ResourceID `json:"resourceId"`
	SlotNumber int                 `json:"slotNumber"`
}

// SlotStatus is one slot in a SlotReport: its profile and, when allocated, to which job.
// Flink: org.apache.flink.runtime.taskexecutor.SlotStatus.
type SlotStatus struct {
	SlotID          SlotID                   `json:"slotId"`
	ResourceProfile jobgraph.ResourceProfile `json:"resourceProfile"`
	// AllocationID and JobID are zero for a free slot.
	AllocationID jobgraph.AllocationID `json:"allocationId"`
	JobID        jobgraph.JobID        `json:"jobId"`
}

// SlotReport is what a TaskExecutor tells the ResourceManager about its slots, on registration
// and with every heartbeat. Flink: org.apache.flink.runtime.taskexecutor.SlotReport.
type SlotReport struct {
	Slots []SlotStatus `json:"slots"`
}

// TaskExecutorRegistration is what a TaskExecutor sends to register with the ResourceManager.
// Flink: org.apache.flink.runtime.resourcemanager.TaskExecutorRegistration.
type TaskExecutorRegistration struct {
	ResourceID jobgraph.ResourceID `json:"resourceId"`
	// Address resolves to the TaskExecutor's gateway through the rpc.Service.
	Address string `json:"address"`
	// TotalResource is the sum of all slots; DefaultSlotResource the profile of one slot.
	TotalResource       jobgraph.ResourceProfile `json:"totalResource"`
	DefaultSlotResource jobgraph.ResourceProfile `json:"defaultSlotResource"`
	SlotReport          SlotReport               `json:"slotReport"`
}

// ResourceRequirement is one line of a job's declared needs: Count slots matching Profile.
// Flink: org.apache.flink.runtime.slots.ResourceRequirement.
type ResourceRequirement struct {
	Profile jobgraph.ResourceProfile `json:"profile"`
	Count   int                      `json:"count"`
}

// ResourceRequirements is the whole of what a JobMaster needs now; each declaration replaces
// the previous one. Flink: org.apache.flink.runtime.slots.ResourceRequirements.
type ResourceRequirements struct {
	JobID jobgraph.JobID `json:"jobId"`
	// TargetAddress is the JobMaster's address, where TaskExecutors offer the slots.
	TargetAddress string                `json:"targetAddress"`
	Requirements  []ResourceRequirement `json:"requirements"`
}

// SlotOffer is a slot a TaskExecutor offers to a JobMaster. Flink: org.apache.flink.runtime.taskexecutor.slot.SlotOffer.
type SlotOffer struct {
	AllocationID    jobgraph.AllocationID    `json:"allocationId"`
	SlotIndex       int                      `json:"slotIndex"`
	ResourceProfile jobgraph.ResourceProfile `json:"resourceProfile"`
}

// ResultPartitionID names one produced partition at run time: the partition and the attempt that
// produces it, so the output of a restarted producer never mixes with the old one.
// Flink: org.apache.flink.runtime.io.network.partition.ResultPartitionID.
type ResultPartitionID struct {
	PartitionID jobgraph.IntermediateResultPartitionID `json:"partitionId"`
	ProducerID  jobgraph.ExecutionAttemptID            `json:"producerId"`
}

// ResultPartitionDeploymentDescriptor tells a task about one partition it produces (one per
// output, in output-index order). Flink: org.apache.flink.runtime.deployment.ResultPartitionDeploymentDescriptor.
type ResultPartitionDeploymentDescriptor struct {
	ResultPartitionID ResultPartitionID            `json:"resultPartitionId"`
	ResultType        jobgraph.ResultPartitionType `json:"resultType"`
	// NumberOfSubpartitions is the number of consumer subtasks that read this partition
	// (ALL_TO_ALL: all consumers; POINTWISE: those of its consumer range), at least 1.
	NumberOfSubpartitions int `json:"numberOfSubpartitions"`
	// ShuffleDescriptor is what the job's ShuffleMaster registered for the partition (see
	// scheduler.ShuffleMaster); nil when the ShuffleMaster hands out none (the in-memory
	// default, which needs only the ResultPartitionID). Flink:
	// ResultPartitionDeploymentDescriptor.shuffleDescriptor.
	ShuffleDescriptor *ShuffleDescriptor `json:"shuffleDescriptor,omitempty"`
}

// ShuffleDescriptor is a shuffle service's handle of one produced partition: whatever the
// producer needs to write it and its consumers need to read it (where the producer runs, and the
// service's own data: a network address, a remote path). A scheduler.ShuffleMaster makes it when
// the producer is deployed; it travels in the producer's ResultPartitionDeploymentDescriptor and
// in every consumer's InputGateDeploymentDescriptor. Plain data. Flink:
// org.apache.flink.runtime.shuffle.ShuffleDescriptor (NettyShuffleDescriptor's producer location
// and connection are ProducerLocation and Data here).
type ShuffleDescriptor struct {
	ResultPartitionID ResultPartitionID `json:"resultPartitionId"`
	// ProducerLocation is the TaskExecutor the producer was deployed to.
	ProducerLocation jobgraph.ResourceID `json:"producerLocation"`
	// Data is the shuffle service's own description of the partition, opaque to the JobMaster.
	Data []byte `json:"data,omitempty"`
}

// InputGateDeploymentDescriptor tells a task about one input (one per JobEdge, in input-index
// order): the partitions it reads and which subpartition of each.
//
// The scheduler builds the Partitions of one ConsumedPartitionGroup once (per generation of
// producer attempts) and gives the same slice to every consumer of the group: deploying the C
// consumers of a P-partition group costs P IDs, not P × C. Whoever receives a descriptor must
// not modify its slices. Its JSON form names a range of one producer's partitions in O(1) bytes
// plus one pair per change of attempt number along the range ("partitionRange", see
// MarshalJSON), the explicit list otherwise.
// Flink: org.apache.flink.runtime.deployment.InputGateDeploymentDescriptor, whose
// ShuffleDescriptors Flink serializes and compresses once per group.
type InputGateDeploymentDescriptor struct {
	DataSetID  jobgraph.IntermediateDataSetID `json:"dataSetId"`
	ResultType jobgraph.ResultPartitionType   `json:"resultType"`
	// Partitions are read in this order; shared, read-only.
	Partitions []ResultPartitionID `json:"partitions"`
	// ConsumedSubpartitionIndex is the subpartition this consumer reads of every partition of the
	// gate: one index for the gate, not one per partition, so an ALL_TO_ALL gate of P partitions
	// costs P partition IDs (which the scheduler shares among consumers) and one int.
	// Flink: InputGateDeploymentDescriptor.consumedSubpartitionIndexRange (a range of one here).
	ConsumedSubpartitionIndex int `json:"consumedSubpartitionIndex"`
	// ShuffleDescriptors are the ShuffleMaster's descriptors of Partitions, in the same order,
	// shared like Partitions; nil when the ShuffleMaster hands out none (the in-memory default).
	// Flink: InputGateDeploymentDescriptor.inputChannels (the ShuffleDescriptors).
	ShuffleDescriptors []ShuffleDescriptor `json:"shuffleDescriptors,omitempty"`
}

// TaskDeploymentDescriptor is everything a TaskExecutor needs to run one execution attempt.
// Flink: org.apache.flink.runtime.deployment.TaskDeploymentDescriptor.
type TaskDeploymentDescriptor struct {
	JobID jobgraph.JobID `json:"jobId"`
	// JobName is the job's name (Flink's JobInformation carries it), for the task's metric
	// scope (<job_name>).
	JobName            string                      `json:"jobName,omitempty"`
	ExecutionAttemptID jobgraph.ExecutionAttemptID `json:"executionAttemptId"`
	AllocationID       jobgraph.AllocationID       `json:"allocationId"`
	// TaskName is "<vertex name> (<subtask+1>/<parallelism>)", as Flink prints it.
	TaskName       string `json:"taskName"`
	VertexName     string `json:"vertexName"`
	Invokable      string `json:"invokable"`
	Config         []byte `json:"config,omitempty"`
	SubtaskIndex   int    `json:"subtaskIndex"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"maxParallelism"`
	AttemptNumber  int    `json:"attemptNumber"`

	ProducedPartitions []ResultPartitionDeploymentDescriptor `json:"producedPartitions,omitempty"`
	InputGates         []InputGateDeploymentDescriptor       `json:"inputGates,omitempty"`

	// CheckpointingEnabled says the job takes checkpoints (its CheckpointingSettings are
	// enabled): the task answers TriggerCheckpoint and barriers, and once its input has ended it
	// takes part in a final checkpoint and waits for that checkpoint's confirmation before it
	// finishes (Flink's FLIP-147, execution.checkpointing.checkpoints-after-tasks-finish = true).
	CheckpointingEnabled bool `json:"checkpointingEnabled,omitempty"`
	// HasCheckpointCoordinator says the job has a CheckpointCoordinator (every streaming job,
	// scheduler.HasCheckpointCoordinator), so the task takes part in the snapshots it triggers —
	// savepoints, stop-with-savepoint, manual checkpoints — with its CheckpointHandler, also
	// when CheckpointingEnabled is false, as Flink's streaming tasks always do. Without
	// CheckpointingEnabled there is no final checkpoint and no wait for one at the end of input.
	HasCheckpointCoordinator bool `json:"hasCheckpointCoordinator,omitempty"`
	// HasOperatorCoordinator says the vertex has an operator coordinator
	// (jobgraph.JobVertex.OperatorCoordinator is set): the task's
	// Environment.SendEventToCoordinator delivers to it (without one it returns
	// ErrNoOperatorCoordinator). Flink: the OperatorIDs of the task's coordinators, in
	// TaskInformation's chained operator config.
	HasOperatorCoordinator bool `json:"hasOperatorCoordinator,omitempty"`
	// TaskRestore is the state the attempt starts from: nil for a fresh start. Flink:
	// TaskDeploymentDescriptor.taskRestore (a JobManagerTaskRestore).
	TaskRestore *TaskRestore `json:"taskRestore,omitempty"`
}

// TaskRestore is the state one execution attempt restores: the snapshot it comes from and the
// subtask's share of it, already redistributed to the attempt's subtask index and parallelism
// (keyed state by key group, operator list state round robin, see checkpoint/keygroup). Flink:
// org.apache.flink.runtime.checkpoint.JobManagerTaskRestore.
type TaskRestore struct {
	// CheckpointID is the checkpoint or savepoint restored.
	CheckpointID checkpoint.CheckpointID `json:"checkpointId"`
	// State is the subtask's state; its zero value means the subtask had none.
	State checkpoint.StateHandle `json:"state"`
}

// TaskExecutionState is a TaskExecutor's report of an execution's new state.
// Flink: org.apache.flink.runtime.taskmanager.TaskExecutionState.
type TaskExecutionState struct {
	ExecutionAttemptID jobgraph.ExecutionAttemptID `json:"executionAttemptId"`
	State              jobgraph.ExecutionState     `json:"state"`
	// Failure is why the execution FAILED (nil otherwise): plain data, see Failure; the
	// JobMaster matches it against the library's sentinels with Failure.Err().
	Failure *jobgraph.ErrorInfo `json:"failure,omitempty"`
	// Accumulators is the snapshot of the task's accumulators by name, sent with its final
	// state (FINISHED, FAILED or CANCELED); nil when the task added none, and on the other states.
	// Flink: TaskExecutionState.accumulators (an AccumulatorSnapshot).
	Accumulators map[string]jobgraph.SerializedAccumulator `json:"accumulators,omitempty"`
}

// AccumulatorSnapshot is what one running execution attempt's accumulators hold now, by name,
// sent with heartbeats to its JobMaster (AllocatedSlotReport.Accumulators). The JobMaster keeps
// the newest snapshot of each current, non-terminal attempt and drops those of other attempts.
// Flink: org.apache.flink.runtime.accumulators.AccumulatorSnapshot.
type AccumulatorSnapshot struct {
	JobID              jobgraph.JobID                            `json:"jobId"`
	ExecutionAttemptID jobgraph.ExecutionAttemptID               `json:"executionAttemptId"`
	Accumulators       map[string]jobgraph.SerializedAccumulator `json:"accumulators"`
}

// JobStatusMessage is one line of ListJobs. Flink: org.apache.flink.runtime.client.JobStatusMessage.
type JobStatusMessage struct {
	JobID     jobgraph.JobID     `json:"jobId"`
	Name      string             `json:"name"`
	Status    jobgraph.JobStatus `json:"status"`
	StartTime int64              `json:"startTime"` // unix milliseconds
}

// AllocatedSlotReport lists the slots a TaskExecutor holds for one job, sent with heartbeats to
// that job's JobMaster, together with the accumulator snapshots of the job's tasks running there.
// Flink: org.apache.flink.runtime.jobmaster.AllocatedSlotReport; Flink sends the snapshots in a
// TaskExecutorToJobManagerHeartbeatPayload's AccumulatorReport.
type AllocatedSlotReport struct {
	JobID jobgraph.JobID          `json:"jobId"`
	Slots []jobgraph.AllocationID `json:"slots"`
	// Accumulators holds one snapshot per running task of the job that added accumulators
	// (Flink's AccumulatorReport); empty when none did.
	Accumulators []AccumulatorSnapshot `json:"accumulators,omitempty"`
	// ExecutionDeploymentReport lists the execution attempts of the job the TaskExecutor holds,
	// which the JobMaster reconciles with what it deployed there (see ExecutionDeploymentReport).
	// nil means the TaskExecutor does not report its executions, and the JobMaster then
	// reconciles nothing: a TaskExecutorGateway written before the field existed keeps working.
	// Flink: TaskExecutorToJobManagerHeartbeatPayload.executionDeploymentReport, always sent.
	ExecutionDeploymentReport *ExecutionDeploymentReport `json:"executionDeploymentReport,omitempty"`
}

// ExecutionDeploymentReport is what a TaskExecutor tells a job's JobMaster, with each heartbeat,
// about the job's execution attempts it holds: every attempt deployed there (SubmitTask
// accepted) whose final state has not yet been delivered to the JobMaster. An attempt stays in
// the report until its final UpdateTaskExecutionState call (or TaskExecutionStateNotifier's
// NotifyTaskExecutionState, which queues the state) has returned, and a report taken
// before a SubmitTask was accepted reaches the JobMaster before that SubmitTask returns (the
// in-process TaskExecutor holds the answer back while such a heartbeat is in flight): so a
// report never lacks an attempt the JobMaster counts as running there, which Flink gets from
// its RPC's message order. The JobMaster cancels an attempt reported that it does not know (a
// cancel that was lost) and fails an attempt it deployed there that is not reported (a
// deployment that was lost). Plain data. Flink:
// org.apache.flink.runtime.taskexecutor.ExecutionDeploymentReport.
type ExecutionDeploymentReport struct {
	Executions []jobgraph.ExecutionAttemptID `json:"executions"`
}
