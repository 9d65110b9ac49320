package scheduler

import (
	"slices"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// VertexwiseSchedulingStrategy schedules single vertices, one AllocateSlotsAndDeploy call per
// vertex, in topological order, once all their inputs are consumable: a group of a blocking type
// once all its partitions finished, a group that can be consumed while produced (pipelined,
// hybrid) once all its producers are scheduled. A vertex is scheduled at most once (until
// RestartTasks names it). It is meant for jobs whose edges are all blocking, as Flink's.
//
// Flink: org.apache.flink.runtime.scheduler.strategy.VertexwiseSchedulingStrategy with the
// DefaultInputConsumableDecider. Two differences, both about cost: Flink looks at every consumer
// of a finished vertex's partitions (P × C work over an ALL_TO_ALL edge); this looks only at the
// consumers of groups the vertex completed. And a pipelined-consumable group's consumers are
// looked at when its last producer is scheduled, not at the next FINISHED report.
type VertexwiseSchedulingStrategy struct {
	ops  SchedulerOperations
	topo executiongraph.Topology

	scheduled []bool  // by ExecutionVertex.Index
	producers []int32 // by group index: scheduled producers of a pipelined-consumable group
}

var _ SchedulingStrategy = (*VertexwiseSchedulingStrategy)(nil)

// NewVertexwiseSchedulingStrategy returns the vertex-wise strategy for topo, scheduling through ops.
func NewVertexwiseSchedulingStrategy(ops SchedulerOperations, topo executiongraph.Topology) *VertexwiseSchedulingStrategy {
	return &VertexwiseSchedulingStrategy{
		ops:       ops,
		topo:      topo,
		scheduled: make([]bool, topo.NumVertices()),
		producers: make([]int32, topo.NumConsumedPartitionGroups()),
	}
}

// StartScheduling schedules the vertices without inputs.
func (s *VertexwiseSchedulingStrategy) StartScheduling() {
	var sources []*executiongraph.ExecutionVertex
	for v := range s.topo.Vertices() {
		if len(v.ConsumedPartitionGroups()) == 0 {
			sources = append(sources, v)
		}
	}
	s.maybeSchedule(sources)
}

// RestartTasks forgets that vertices were scheduled and schedules those whose inputs are
// consumable.
func (s *VertexwiseSchedulingStrategy) RestartTasks(vertices []*executiongraph.ExecutionVertex) {
	for _, v := range vertices {
		if s.scheduled[v.Index()] {
			s.scheduled[v.Index()] = false
			s.countProducer(v, -1)
		}
	}
	s.maybeSchedule(vertices)
}

// OnExecutionStateChange schedules, when v FINISHED, the consumers of the blocking groups v
// completed whose inputs are all consumable.
func (s *VertexwiseSchedulingStrategy) OnExecutionStateChange(v *executiongraph.ExecutionVertex, state jobgraph.ExecutionState) {
	if state != jobgraph.ExecutionStateFinished {
		return
	}
	var candidates []*executiongraph.ExecutionVertex
	for _, p := range v.ProducedPartitions() {
		if canBePipelinedConsumed(p.ResultType()) {
			continue
		}
		for _, g := range p.ConsumedPartitionGroups() {
			if g.AreAllPartitionsFinished() {
				candidates = slices.AppendSeq(candidates, g.ConsumerVertexGroup().Vertices())
			}
		}
	}
	s.maybeSchedule(candidates)
}

// OnPartitionConsumable does nothing.
func (s *VertexwiseSchedulingStrategy) OnPartitionConsumable(*executiongraph.IntermediateResultPartition) {
}

// IsScheduled reports whether v was scheduled (and not restarted since).
func (s *VertexwiseSchedulingStrategy) IsScheduled(v *executiongraph.ExecutionVertex) bool {
	return s.scheduled[v.Index()]
}

// countProducer adds d to the scheduled-producer counts of v's pipelined-consumable groups and
// returns the groups that now have all their producers scheduled.
func (s *VertexwiseSchedulingStrategy) countProducer(v *executiongraph.ExecutionVertex, d int32) []*executiongraph.ConsumedPartitionGroup {
	var complete []*executiongraph.ConsumedPartitionGroup
	for _, p := range v.ProducedPartitions() {
		if !canBePipelinedConsumed(p.ResultType()) {
			continue
		}
		for _, g := range p.ConsumedPartitionGroups() {
			s.producers[g.Index()] += d
			if d > 0 && int(s.producers[g.Index()]) == g.Len() {
				complete = append(complete, g)
			}
		}
	}
	return complete
}

func (s *VertexwiseSchedulingStrategy) consumable(v *executiongraph.ExecutionVertex) bool {
	for _, g := range v.ConsumedPartitionGroups() {
		if canBePipelinedConsumed(g.ResultType()) {
			if int(s.producers[g.Index()]) < g.Len() {
				return false
			}
		} else if !g.AreAllPartitionsFinished() {
			return false
		}
	}
	return true
}

// maybeSchedule schedules the candidates that are CREATED, not scheduled and consumable, and
// the consumers that become consumable because their pipelined producers were scheduled, one
// call per vertex in topological order.
func (s *VertexwiseSchedulingStrategy) maybeSchedule(candidates []*executiongraph.ExecutionVertex) {
	var picked []*executiongraph.ExecutionVertex
	for len(candidates) > 0 {
		var more []*executiongraph.ExecutionVertex
		for _, v := range candidates {
			if s.scheduled[v.Index()] || v.State() != jobgraph.ExecutionStateCreated || !s.consumable(v) {
				continue
			}
			s.scheduled[v.Index()] = true
			picked = append(picked, v)
			for _, g := range s.countProducer(v, 1) {
				more = slices.AppendSeq(more, g.ConsumerVertexGroup().Vertices())
			}
		}
		candidates = more
	}
	slices.SortFunc(picked, func(a, b *executiongraph.ExecutionVertex) int { return a.Index() - b.Index() })
	for _, v := range picked {
		s.ops.AllocateSlotsAndDeploy([]*executiongraph.ExecutionVertex{v})
	}
}
