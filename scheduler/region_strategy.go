package scheduler

import (
	"slices"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// PipelinedRegionSchedulingStrategy schedules whole pipelined regions, one
// AllocateSlotsAndDeploy call per region, once the region's inputs from other regions are
// consumable: a blocking group once all its partitions finished, a hybrid (or approximate) group
// once its producers' regions are scheduled. A region is scheduled at most once (until
// RestartTasks names it). Regions scheduled together go in the graph's region order (by first
// vertex in topological order), as Flink's sortPipelinedRegionSetsInTopologicalOrder.
//
// A group some of whose producers lie in the consuming region itself (a "cross-region" group)
// only waits for the partitions produced outside the region.
//
// Flink: org.apache.flink.runtime.scheduler.strategy.PipelinedRegionSchedulingStrategy.
//
// Cost: construction O(regions' external groups + their sizes); each FINISHED report O(the
// producer's groups) plus O(consumer regions) of each group it completes.
type PipelinedRegionSchedulingStrategy struct {
	ops     SchedulerOperations
	topo    executiongraph.Topology
	regions []*executiongraph.PipelinedRegion

	scheduled []bool // by region index
	// consumerRegions[g]: the regions reading group g from outside, in region order.
	consumerRegions [][]*executiongraph.PipelinedRegion
	// producedPipelined[r]: groups of a pipelined-consumable type produced in region r that
	// other regions read.
	producedPipelined [][]*executiongraph.ConsumedPartitionGroup
	crossGroup        []bool            // by group index: cross-region for some consumer region
	crossPair         map[[2]int32]bool // {region, group} pairs that are cross-region

	// scratch, stamped per maybeSchedule call (and per round of it, for the cache)
	call, round uint32
	picked      []uint32 // by region index
	visited     []uint32 // by group index
	cachedAt    []uint32 // by group index: round of the cached pipelined-consumable answer
	cachedVal   []bool
}

var _ SchedulingStrategy = (*PipelinedRegionSchedulingStrategy)(nil)

// NewPipelinedRegionSchedulingStrategy returns the region strategy for topo, scheduling through ops.
func NewPipelinedRegionSchedulingStrategy(ops SchedulerOperations, topo executiongraph.Topology) *PipelinedRegionSchedulingStrategy {
	regions := topo.Regions()
	nGroups := topo.NumConsumedPartitionGroups()
	s := &PipelinedRegionSchedulingStrategy{
		ops:             ops,
		topo:            topo,
		regions:         regions,
		scheduled:       make([]bool, len(regions)),
		consumerRegions: make([][]*executiongraph.PipelinedRegion, nGroups),
		crossGroup:      make([]bool, nGroups),
		picked:          make([]uint32, len(regions)),
		visited:         make([]uint32, nGroups),
		cachedAt:        make([]uint32, nGroups),
		cachedVal:       make([]bool, nGroups),
	}
	var groups []*executiongraph.ConsumedPartitionGroup
	for _, r := range regions {
		for _, g := range r.ExternalConsumedPartitionGroups() {
			if s.consumerRegions[g.Index()] == nil {
				groups = append(groups, g)
			}
			s.consumerRegions[g.Index()] = append(s.consumerRegions[g.Index()], r)
		}
	}
	// Classify each external group once: its producer regions, whether any consumer region of
	// it produces part of it, and which regions produce pipelined-consumable groups.
	mark := make([]int32, len(regions))
	for _, g := range groups {
		gi := g.Index()
		stamp := int32(gi + 1)
		var prs []int32
		for p := range g.Partitions() {
			r := p.Producer().Region().Index()
			if mark[r] != stamp {
				mark[r] = stamp
				prs = append(prs, int32(r))
			}
		}
		if canBePipelinedConsumed(g.ResultType()) {
			if s.producedPipelined == nil {
				s.producedPipelined = make([][]*executiongraph.ConsumedPartitionGroup, len(regions))
			}
			for _, r := range prs {
				s.producedPipelined[r] = append(s.producedPipelined[r], g)
			}
		}
		if len(prs) < 2 {
			continue
		}
		for _, c := range s.consumerRegions[gi] {
			if mark[c.Index()] == stamp {
				if s.crossPair == nil {
					s.crossPair = map[[2]int32]bool{}
				}
				s.crossPair[[2]int32{int32(c.Index()), int32(gi)}] = true
				s.crossGroup[gi] = true
			}
		}
	}
	return s
}

// StartScheduling schedules the source regions: those whose every input from another region is
// cross-region (and then only if the outside part is already consumable).
func (s *PipelinedRegionSchedulingStrategy) StartScheduling() {
	var sources []*executiongraph.PipelinedRegion
	for _, r := range s.regions {
		if s.isSource(r) {
			sources = append(sources, r)
		}
	}
	s.maybeSchedule(sources)
}

func (s *PipelinedRegionSchedulingStrategy) isSource(r *executiongraph.PipelinedRegion) bool {
	for _, g := range r.ExternalConsumedPartitionGroups() {
		if !s.isCross(r, g) {
			return false
		}
	}
	return true
}

func (s *PipelinedRegionSchedulingStrategy) isCross(r *executiongraph.PipelinedRegion, g *executiongraph.ConsumedPartitionGroup) bool {
	return s.crossGroup[g.Index()] && s.crossPair[[2]int32{int32(r.Index()), int32(g.Index())}]
}

// RestartTasks forgets that the regions of vertices were scheduled and schedules those whose
// inputs are consumable.
func (s *PipelinedRegionSchedulingStrategy) RestartTasks(vertices []*executiongraph.ExecutionVertex) {
	s.call++
	var regions []*executiongraph.PipelinedRegion
	for _, v := range vertices {
		r := v.Region()
		if s.picked[r.Index()] != s.call { // once each
			s.picked[r.Index()] = s.call
			s.scheduled[r.Index()] = false
			regions = append(regions, r)
		}
	}
	s.maybeSchedule(regions)
}

// OnExecutionStateChange schedules, when v FINISHED, the consumer regions of the blocking groups
// v's partitions completed (and of cross-region groups v contributes to) whose inputs are all
// consumable.
func (s *PipelinedRegionSchedulingStrategy) OnExecutionStateChange(v *executiongraph.ExecutionVertex, state jobgraph.ExecutionState) {
	if state != jobgraph.ExecutionStateFinished {
		return
	}
	var candidates []*executiongraph.PipelinedRegion
	for _, p := range v.ProducedPartitions() {
		if canBePipelinedConsumed(p.ResultType()) {
			continue
		}
		for _, g := range p.ConsumedPartitionGroups() {
			if s.crossGroup[g.Index()] || g.AreAllPartitionsFinished() {
				candidates = append(candidates, s.consumerRegions[g.Index()]...)
			}
		}
	}
	s.maybeSchedule(candidates)
}

// OnPartitionConsumable does nothing: consumability is decided from finished partitions and
// scheduled regions.
func (s *PipelinedRegionSchedulingStrategy) OnPartitionConsumable(*executiongraph.IntermediateResultPartition) {
}

// IsScheduled reports whether region r was scheduled (and not restarted since).
func (s *PipelinedRegionSchedulingStrategy) IsScheduled(r *executiongraph.PipelinedRegion) bool {
	return s.scheduled[r.Index()]
}

// maybeSchedule schedules those candidates whose inputs are consumable, then the regions that
// become consumable through hybrid inputs because of them, each region once, in region order.
// Flink: PipelinedRegionSchedulingStrategy.maybeScheduleRegions.
func (s *PipelinedRegionSchedulingStrategy) maybeSchedule(candidates []*executiongraph.PipelinedRegion) {
	if len(candidates) == 0 {
		return
	}
	s.call++
	call := s.call
	var picked []*executiongraph.PipelinedRegion
	for next := candidates; len(next) > 0; {
		s.round++
		var more []*executiongraph.PipelinedRegion
		for _, r := range next {
			if s.scheduled[r.Index()] || s.picked[r.Index()] == call || !s.inputsConsumable(r, call) {
				continue
			}
			s.picked[r.Index()] = call
			picked = append(picked, r)
			if s.producedPipelined == nil {
				continue
			}
			for _, g := range s.producedPipelined[r.Index()] {
				if s.visited[g.Index()] != call {
					s.visited[g.Index()] = call
					more = append(more, s.consumerRegions[g.Index()]...)
				}
			}
		}
		next = more
	}
	slices.SortFunc(picked, func(a, b *executiongraph.PipelinedRegion) int { return a.Index() - b.Index() })
	for _, r := range picked {
		if s.scheduled[r.Index()] {
			continue // scheduled meanwhile (the scheduler called back into the strategy)
		}
		s.scheduled[r.Index()] = true
		s.ops.AllocateSlotsAndDeploy(r.Vertices())
	}
}

// regionReady reports whether region index r is scheduled or being picked in this call.
func (s *PipelinedRegionSchedulingStrategy) regionReady(r int, call uint32) bool {
	return s.scheduled[r] || s.picked[r] == call
}

func (s *PipelinedRegionSchedulingStrategy) inputsConsumable(r *executiongraph.PipelinedRegion, call uint32) bool {
	for _, g := range r.ExternalConsumedPartitionGroups() {
		pipelined := canBePipelinedConsumed(g.ResultType())
		if s.isCross(r, g) {
			// Only the partitions produced outside r count.
			for p := range g.Partitions() {
				pr := p.Producer().Region()
				if pr == r {
					continue
				}
				if pipelined && !s.regionReady(pr.Index(), call) || !pipelined && !p.IsFinished() {
					return false
				}
			}
			continue
		}
		if !pipelined {
			if !g.AreAllPartitionsFinished() {
				return false
			}
			continue
		}
		// Cached per round, as Flink's consumableStatusCache: a region picked later in the
		// round does not change the answer until the next round.
		gi := g.Index()
		if s.cachedAt[gi] != s.round {
			s.cachedAt[gi] = s.round
			s.cachedVal[gi] = true
			for p := range g.Partitions() {
				if !s.regionReady(p.Producer().Region().Index(), call) {
					s.cachedVal[gi] = false
					break
				}
			}
		}
		if !s.cachedVal[gi] {
			return false
		}
	}
	return true
}
