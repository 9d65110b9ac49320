package scheduler

import (
	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// SchedulerOperations is what a SchedulingStrategy asks of its scheduler.
// Flink: org.apache.flink.runtime.scheduler.SchedulerOperations.
type SchedulerOperations interface {
	// AllocateSlotsAndDeploy schedules one bulk: the executions of vertices (in the order given,
	// topological) go to SCHEDULED, get slots, and are deployed together once every slot of the
	// bulk is there. Every vertex must be in CREATED. Called on the main loop.
	AllocateSlotsAndDeploy(vertices []*executiongraph.ExecutionVertex)
}

// SchedulingStrategy decides which vertices to schedule, and when. The scheduler calls it on the
// main loop; it answers by calling SchedulerOperations.AllocateSlotsAndDeploy, synchronously.
// Vertices are the graph's own pointers; slices passed in are not kept.
// Flink: org.apache.flink.runtime.scheduler.strategy.SchedulingStrategy.
type SchedulingStrategy interface {
	// StartScheduling schedules what can run first (regions or vertices without unfinished
	// blocking inputs).
	StartScheduling()
	// RestartTasks schedules again the given vertices (reset to CREATED by the failover), as far
	// as their inputs allow; the rest follow when their inputs become consumable.
	RestartTasks(vertices []*executiongraph.ExecutionVertex)
	// OnExecutionStateChange tells the strategy that v's current execution entered state. The
	// DefaultScheduler reports FINISHED only (as Flink's does); other states are ignored.
	OnExecutionStateChange(v *executiongraph.ExecutionVertex, state jobgraph.ExecutionState)
	// OnPartitionConsumable tells the strategy that a pipelined partition has data. Neither
	// strategy here needs it (as in Flink); it is kept for strategies that do.
	OnPartitionConsumable(p *executiongraph.IntermediateResultPartition)
}

// canBePipelinedConsumed reports whether a consumer may read a partition of type t while it is
// being produced, so that it is consumable once its producer is scheduled rather than once it
// finished: the pipelined types and the hybrid ones. Flink: ResultPartitionType.canBePipelinedConsumed.
func canBePipelinedConsumed(t jobgraph.ResultPartitionType) bool {
	return t.IsPipelined() || t.IsHybrid()
}
