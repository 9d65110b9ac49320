package executiongraph

import (
	"iter"

	"github.com/jobgraph/jobgraph"
)

// Topology is the read-only view of an ExecutionGraph that scheduling and failover strategies
// read: vertices in topological order, their consumed groups, partitions with their consumer
// groups and finished flags, and the pipelined regions. It is a value wrapping the graph; it
// copies nothing. Strategies only read through it (and through the vertices, groups and
// partitions it returns); state changes go through the scheduler.
// Flink: org.apache.flink.runtime.scheduler.strategy.SchedulingTopology.
type Topology struct{ g *ExecutionGraph }

// Topology returns the read-only scheduling view of g.
func (g *ExecutionGraph) Topology() Topology { return Topology{g} }

// Vertices yields every subtask in topological order (see ExecutionGraph.Vertices).
func (t Topology) Vertices() iter.Seq[*ExecutionVertex] { return t.g.Vertices() }

// NumVertices is the number of subtasks.
func (t Topology) NumVertices() int { return t.g.numVertices }

// JobVertices are the job vertices in topological order. The slice must not be modified.
func (t Topology) JobVertices() []*ExecutionJobVertex { return t.g.jobVertices }

// Vertex is the subtask with the given ID, or nil.
func (t Topology) Vertex(id jobgraph.ExecutionVertexID) *ExecutionVertex { return t.g.Vertex(id) }

// Partition is the partition with the given ID, or nil.
func (t Topology) Partition(id jobgraph.IntermediateResultPartitionID) *IntermediateResultPartition {
	return t.g.Partition(id)
}

// Regions are the pipelined regions in deterministic order. The slice must not be modified.
func (t Topology) Regions() []*PipelinedRegion { return t.g.regions.ptrs }

// RegionOf is the region of the subtask with the given ID, or nil.
func (t Topology) RegionOf(id jobgraph.ExecutionVertexID) *PipelinedRegion { return t.g.RegionOf(id) }

// NumConsumedPartitionGroups bounds ConsumedPartitionGroup.Index (and ConsumerVertexGroup.Index).
func (t Topology) NumConsumedPartitionGroups() int { return t.g.numGroups }
