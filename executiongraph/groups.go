package executiongraph

import (
	"iter"

	"github.com/jobgraph/jobgraph"
)

// ConsumedPartitionGroup is a set of partitions of one IntermediateResult that the same
// subtasks read together through one edge: every subtask of its ConsumerVertexGroup reads every
// partition of it. Its partitions are always a contiguous range [start, end) of the result, so
// it is stored as that range. On an ALL_TO_ALL edge one group holds every partition and is
// shared by every consumer. Flink: org.apache.flink.runtime.scheduler.strategy.ConsumedPartitionGroup.
//
// It counts its unfinished partitions (Flink's partitionFinished / partitionUnfinished), so
// whether a blocking input is consumable is an O(1) question.
type ConsumedPartitionGroup struct {
	result     *IntermediateResult
	consumers  *ConsumerVertexGroup
	start, end int32
	unfinished int32
	index      int32
}

// Index is the group's dense index in [0, ExecutionGraph.NumConsumedPartitionGroups()), for
// per-group arrays (visited sets, caches). Its ConsumerVertexGroup has the same index.
func (g *ConsumedPartitionGroup) Index() int { return int(g.index) }

// Result is the result whose partitions the group holds.
func (g *ConsumedPartitionGroup) Result() *IntermediateResult { return g.result }

// ResultType is the result's type (the same for every partition of the group).
func (g *ConsumedPartitionGroup) ResultType() jobgraph.ResultPartitionType {
	return g.result.resultType
}

// Len is the number of partitions in the group (at least 1).
func (g *ConsumedPartitionGroup) Len() int { return int(g.end - g.start) }

// PartitionRange is the range [start, end) of partition indexes of the result the group holds.
func (g *ConsumedPartitionGroup) PartitionRange() (start, end int) { return int(g.start), int(g.end) }

// Partition is the group's i-th partition, 0 ≤ i < Len; it panics outside that range.
func (g *ConsumedPartitionGroup) Partition(i int) *IntermediateResultPartition {
	if i < 0 || i >= g.Len() {
		panic("executiongraph: ConsumedPartitionGroup.Partition: index out of range")
	}
	return &g.result.partitions[int(g.start)+i]
}

// Partitions yields the group's partitions in index order.
func (g *ConsumedPartitionGroup) Partitions() iter.Seq[*IntermediateResultPartition] {
	return func(yield func(*IntermediateResultPartition) bool) {
		for i := g.start; i < g.end; i++ {
			if !yield(&g.result.partitions[i]) {
				return
			}
		}
	}
}

// NumUnfinished is the number of the group's partitions not finished. Partitions of pipelined
// results are never marked finished, so for them it stays Len.
func (g *ConsumedPartitionGroup) NumUnfinished() int { return int(g.unfinished) }

// AreAllPartitionsFinished reports whether every partition of the group is finished: a blocking
// input the consumers can read in full. Flink: ConsumedPartitionGroup.areAllPartitionsFinished.
func (g *ConsumedPartitionGroup) AreAllPartitionsFinished() bool { return g.unfinished == 0 }

// ConsumerVertexGroup is the group of subtasks that read this group.
func (g *ConsumedPartitionGroup) ConsumerVertexGroup() *ConsumerVertexGroup { return g.consumers }

// ConsumerVertexGroup is a set of subtasks of one job vertex that read the same partitions
// through one edge: the subtasks of its ConsumedPartitionGroup's consumers. They are always a
// contiguous range [start, end) of the job vertex's subtasks, so it is stored as that range. On
// an ALL_TO_ALL edge one group holds every consumer subtask and every partition of the result
// shares it. Flink: org.apache.flink.runtime.scheduler.strategy.ConsumerVertexGroup.
type ConsumerVertexGroup struct {
	jobVertex  *ExecutionJobVertex
	consumed   *ConsumedPartitionGroup
	start, end int32
}

// Index is the same dense index as its ConsumedPartitionGroup's.
func (g *ConsumerVertexGroup) Index() int { return int(g.consumed.index) }

// JobVertex is the consuming job vertex.
func (g *ConsumerVertexGroup) JobVertex() *ExecutionJobVertex { return g.jobVertex }

// ResultType is the type of the result the group reads.
func (g *ConsumerVertexGroup) ResultType() jobgraph.ResultPartitionType {
	return g.consumed.result.resultType
}

// Len is the number of subtasks in the group (at least 1).
func (g *ConsumerVertexGroup) Len() int { return int(g.end - g.start) }

// VertexRange is the range [start, end) of subtask indexes of the job vertex the group holds.
func (g *ConsumerVertexGroup) VertexRange() (start, end int) { return int(g.start), int(g.end) }

// Vertex is the group's i-th subtask, 0 ≤ i < Len; it panics outside that range.
func (g *ConsumerVertexGroup) Vertex(i int) *ExecutionVertex {
	if i < 0 || i >= g.Len() {
		panic("executiongraph: ConsumerVertexGroup.Vertex: index out of range")
	}
	return &g.jobVertex.vertices[int(g.start)+i]
}

// Vertices yields the group's subtasks in index order.
func (g *ConsumerVertexGroup) Vertices() iter.Seq[*ExecutionVertex] {
	return func(yield func(*ExecutionVertex) bool) {
		for i := g.start; i < g.end; i++ {
			if !yield(&g.jobVertex.vertices[i]) {
				return
			}
		}
	}
}

// ConsumedPartitionGroup is the group of partitions the subtasks read.
func (g *ConsumerVertexGroup) ConsumedPartitionGroup() *ConsumedPartitionGroup { return g.consumed }
