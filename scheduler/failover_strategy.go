package scheduler

import (
	"errors"
	"fmt"
	"slices"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// NewFailoverStrategy returns the failover strategy named by jobmanager.execution.failover-strategy
// for topo: "" or "region" gives NewRestartPipelinedRegionFailoverStrategy(topo, checker), "full"
// gives NewRestartAllFailoverStrategy(topo). Any other name is an error naming the option.
// Flink: FailoverStrategyFactoryLoader.loadFailoverStrategyFactory.
func NewFailoverStrategy(name jobgraph.FailoverStrategy, topo executiongraph.Topology, checker ResultPartitionAvailabilityChecker) (FailoverStrategy, error) {
	switch name {
	case "", jobgraph.FailoverRegion:
		return NewRestartPipelinedRegionFailoverStrategy(topo, checker), nil
	case jobgraph.FailoverFull:
		return NewRestartAllFailoverStrategy(topo), nil
	}
	return nil, fmt.Errorf("scheduler: jobmanager.execution.failover-strategy %q is not one of region, full", string(name))
}

// restartAllFailoverStrategy restarts every vertex of the graph on any failure.
type restartAllFailoverStrategy struct{ topo executiongraph.Topology }

// NewRestartAllFailoverStrategy returns the "full" failover strategy: every failure restarts
// every vertex, in topological order. Flink: RestartAllFailoverStrategy.
func NewRestartAllFailoverStrategy(topo executiongraph.Topology) FailoverStrategy {
	return restartAllFailoverStrategy{topo}
}

func (s restartAllFailoverStrategy) TasksToRestart(_ *executiongraph.ExecutionVertex, _ error) []*executiongraph.ExecutionVertex {
	out := make([]*executiongraph.ExecutionVertex, 0, s.topo.NumVertices())
	for v := range s.topo.Vertices() {
		out = append(out, v)
	}
	return out
}

// regionFailoverStrategy is the "region" failover strategy; see
// NewRestartPipelinedRegionFailoverStrategy.
type regionFailoverStrategy struct {
	topo    executiongraph.Topology
	regions []*executiongraph.PipelinedRegion
	checker ResultPartitionAvailabilityChecker
	byPtr   PartitionAvailabilityChecker // checker, when it implements it; else nil

	// Scratch reused between calls. A slot holds the stamp of the call that last marked it, so
	// nothing needs clearing between calls.
	stamp         uint32
	regionMark    []uint32 // by region index: region involved
	inputMark     []uint32 // by ConsumedPartitionGroup index: group's availability checked
	consumersMark []uint32 // by ConsumerVertexGroup index: group's regions involved
	queue         []int32  // region indexes involved in this call, in the order found
}

// NewRestartPipelinedRegionFailoverStrategy returns the "region" failover strategy, the default of
// jobmanager.execution.failover-strategy. A failure of a vertex restarts the regions involved,
// found from the failed vertex's pipelined region by two rules applied until nothing changes:
//
//   - every region that reads a partition produced by an involved region is involved (the
//     consumers would read data that is produced anew), whatever state its vertices are in;
//   - if an involved region reads a partition from another region that is not available, the
//     region producing it is involved (the data must be produced again).
//
// A partition is not available when checker says so, when the failure cause (or an error it
// wraps, found with errors.As) is an UnavailablePartitionError naming it, or when its type cannot
// be read a second time: HYBRID_SELECTIVE keeps in memory only what was consumed live. Only
// partitions of reconnectable types (blocking, hybrid, PIPELINED_APPROXIMATE) are checked:
// pipelined partitions are exchanged inside one region, which restarts as a whole. A nil checker
// says every partition is available.
//
// Flink: org.apache.flink.runtime.executiongraph.failover.RestartPipelinedRegionFailoverStrategy.
//
// Cost: each call is a traversal over the involved regions, their external ConsumedPartitionGroups
// and the ConsumerVertexGroups of their produced partitions, each group visited once per call; it
// is proportional to the vertices returned plus the sizes of the groups they read or write
// (an ALL_TO_ALL edge counts O(producers + consumers), never their product), plus a sort of the
// involved regions. Marks live in slices indexed by region and group index, allocated once.
//
// The strategy keeps that scratch state between calls: like the graph, it must be used from one
// goroutine only.
func NewRestartPipelinedRegionFailoverStrategy(topo executiongraph.Topology, checker ResultPartitionAvailabilityChecker) FailoverStrategy {
	regions := topo.Regions()
	nGroups := topo.NumConsumedPartitionGroups()
	byPtr, _ := checker.(PartitionAvailabilityChecker)
	return &regionFailoverStrategy{
		topo:          topo,
		regions:       regions,
		checker:       checker,
		byPtr:         byPtr,
		regionMark:    make([]uint32, len(regions)),
		inputMark:     make([]uint32, nGroups),
		consumersMark: make([]uint32, nGroups),
	}
}

// TasksToRestart returns the vertices of every region involved by the failure of failed with
// cause, in topological order (ExecutionVertex.Index ascending), each once. A nil failed returns
// nil; failed must otherwise belong to the strategy's graph (anything else is a scheduler bug and
// panics, as Flink's IllegalStateException).
func (s *regionFailoverStrategy) TasksToRestart(failed *executiongraph.ExecutionVertex, cause error) []*executiongraph.ExecutionVertex {
	if failed == nil {
		return nil
	}
	if s.topo.Vertex(failed.ID()) != failed {
		panic("scheduler: region failover: vertex " + failed.Name() + " does not belong to the strategy's graph")
	}

	// The partition the failure names as unreadable, if it is one of the graph's.
	var lost *executiongraph.IntermediateResultPartition
	if upe, ok := errors.AsType[UnavailablePartitionError](cause); ok {
		lost = s.topo.Partition(upe.UnavailablePartition())
	}

	s.nextStamp()
	stamp := s.stamp
	s.queue = s.queue[:0]
	s.involve(failed.Region().Index())
	for head := 0; head < len(s.queue); head++ {
		r := s.regions[s.queue[head]]

		// Producers of the partitions the region reads from outside that are not available.
		for _, cpg := range r.ExternalConsumedPartitionGroups() {
			if s.inputMark[cpg.Index()] == stamp {
				continue
			}
			s.inputMark[cpg.Index()] = stamp
			reconsumable := cpg.ResultType() != jobgraph.HybridSelective
			for p := range cpg.Partitions() {
				pr := p.Producer().Region().Index()
				if s.regionMark[pr] == stamp {
					continue // restarts anyway: no need to ask
				}
				if !reconsumable || p == lost || !s.available(p) {
					s.involve(pr)
				}
			}
		}

		// Consumers of what the region produces, in other regions.
		for _, v := range r.Vertices() {
			for _, p := range v.ProducedPartitions() {
				if !p.ResultType().IsReconnectable() {
					continue // read inside the region
				}
				for _, cvg := range p.ConsumerVertexGroups() {
					if s.consumersMark[cvg.Index()] == stamp {
						continue
					}
					s.consumersMark[cvg.Index()] = stamp
					for c := range cvg.Vertices() {
						s.involve(c.Region().Index())
					}
				}
			}
		}
	}
	return s.verticesOf(s.queue)
}

// available asks the checker whether p can still be read: with the partition itself when the
// checker takes it (PartitionAvailabilityChecker), else by its ID. No checker: available.
func (s *regionFailoverStrategy) available(p *executiongraph.IntermediateResultPartition) bool {
	switch {
	case s.byPtr != nil:
		return s.byPtr.IsPartitionAvailable(p)
	case s.checker != nil:
		return s.checker.IsAvailable(p.ID())
	}
	return true
}

// involve marks region r involved in the current call and queues it, once.
func (s *regionFailoverStrategy) involve(r int) {
	if s.regionMark[r] != s.stamp {
		s.regionMark[r] = s.stamp
		s.queue = append(s.queue, int32(r))
	}
}

// nextStamp starts a new call's marks, clearing the slices only when the stamp wraps around.
func (s *regionFailoverStrategy) nextStamp() {
	s.stamp++
	if s.stamp == 0 {
		clear(s.regionMark)
		clear(s.inputMark)
		clear(s.consumersMark)
		s.stamp = 1
	}
}

// verticesOf returns the vertices of the given regions in topological order. It sorts the
// region indexes in place. Regions are numbered by their first vertex, so when no region's
// vertices interleave with the next one's, concatenating them in region order is already
// topological; otherwise the vertices are sorted.
func (s *regionFailoverStrategy) verticesOf(regions []int32) []*executiongraph.ExecutionVertex {
	slices.Sort(regions)
	n := 0
	interleaved := false
	last := -1
	for _, ri := range regions {
		vs := s.regions[ri].Vertices()
		n += len(vs)
		if vs[0].Index() < last {
			interleaved = true
		}
		last = vs[len(vs)-1].Index()
	}
	out := make([]*executiongraph.ExecutionVertex, 0, n)
	for _, ri := range regions {
		out = append(out, s.regions[ri].Vertices()...)
	}
	if interleaved {
		slices.SortFunc(out, func(a, b *executiongraph.ExecutionVertex) int { return a.Index() - b.Index() })
	}
	return out
}
