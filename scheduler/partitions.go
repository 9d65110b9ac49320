package scheduler

import (
	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// partitionTracker tracks the partitions the scheduler must release itself (results that are not
// pipelined: BLOCKING, BLOCKING_PERSISTENT, HYBRID_*; pipelined ones the TaskExecutor drops once
// read) from the moment their producer FINISHED, and decides when they can go: a
// ConsumedPartitionGroup is releasable once every pipelined region consuming it has finished
// (not merely every consumer vertex: a region restart reruns finished vertices, which read their
// input again), and a partition is released once every group it belongs to (one per consuming
// edge) is releasable. A vertex reset for a restart releases its own partitions and, if its region
// had finished, makes the groups that region reads unreleasable again. Whatever is left goes when
// the job ends. The tracked partitions are also what the region failover asks about (available
// unless released or lost with their TaskExecutor).
// Flink: RegionPartitionGroupReleaseStrategy with JobMasterPartitionTracker and
// DefaultExecutionGraph.releasePartitionGroups.
//
// Cost: O(subtasks × inputs + partitions) memory; each region finish costs its vertices' input
// count, and each group released its size, once.
type partitionTracker struct {
	graph *executiongraph.ExecutionGraph
	base  map[*executiongraph.IntermediateResult]int // dense index of a result's partition 0

	tracked     []trackedPartition // by dense partition index
	groupsLeft  []int32            // by dense partition index: consuming groups not releasable yet
	regionsLeft []int32            // by group index: consumer regions not finished yet
	verticesOut []int32            // by region index: vertices not finished yet
	// regionGroups[regionOff[r]:regionOff[r+1]] are the distinct release-by-scheduler groups
	// region r consumes.
	regionGroups []*executiongraph.ConsumedPartitionGroup
	regionOff    []int
}

type trackedPartition struct {
	id       rpc.ResultPartitionID
	location jobgraph.ResourceID
	tracked  bool
}

// partitionBatch is one Deployer.ReleasePartitions call.
type partitionBatch struct {
	location   jobgraph.ResourceID
	partitions []rpc.ResultPartitionID
}

// releasedByScheduler reports whether partitions of type t wait for the scheduler to release them.
func releasedByScheduler(t jobgraph.ResultPartitionType) bool { return !t.IsPipelined() }

func newPartitionTracker(g *executiongraph.ExecutionGraph) *partitionTracker {
	t := &partitionTracker{
		graph:       g,
		base:        make(map[*executiongraph.IntermediateResult]int, len(g.Results())),
		regionsLeft: make([]int32, g.NumConsumedPartitionGroups()),
	}
	n := 0
	for _, r := range g.Results() {
		t.base[r] = n
		n += r.NumPartitions()
	}
	t.tracked = make([]trackedPartition, n)
	t.groupsLeft = make([]int32, n)
	for _, r := range g.Results() {
		b := t.base[r]
		for p := range r.Partitions() {
			t.groupsLeft[b+p.Index()] = int32(len(p.ConsumedPartitionGroups()))
		}
	}
	regions := g.Regions()
	t.verticesOut = make([]int32, len(regions))
	t.regionOff = make([]int, len(regions)+1)
	seen := make([]int32, g.NumConsumedPartitionGroups())
	for i, reg := range regions {
		t.regionOff[i] = len(t.regionGroups)
		t.verticesOut[i] = int32(reg.Len())
		stamp := int32(i + 1)
		for _, v := range reg.Vertices() {
			for _, cpg := range v.ConsumedPartitionGroups() {
				if !releasedByScheduler(cpg.ResultType()) || seen[cpg.Index()] == stamp {
					continue
				}
				seen[cpg.Index()] = stamp
				t.regionGroups = append(t.regionGroups, cpg)
				t.regionsLeft[cpg.Index()]++
			}
		}
	}
	t.regionOff[len(regions)] = len(t.regionGroups)
	return t
}

func (t *partitionTracker) index(p *executiongraph.IntermediateResultPartition) int {
	return t.base[p.Result()] + p.Index()
}

// vertexFinished records that v's current execution FINISHED: its partitions are tracked at its
// location, and if that finished v's region, the groups it consumed may become releasable. It
// returns what to release now.
func (t *partitionTracker) vertexFinished(v *executiongraph.ExecutionVertex) []partitionBatch {
	e := v.CurrentExecution()
	for _, p := range v.ProducedPartitions() {
		if releasedByScheduler(p.ResultType()) {
			t.tracked[t.index(p)] = trackedPartition{
				id:       rpc.ResultPartitionID{PartitionID: p.ID(), ProducerID: e.AttemptID()},
				location: e.ResourceID,
				tracked:  true,
			}
		}
	}
	r := v.Region().Index()
	if t.verticesOut[r]--; t.verticesOut[r] > 0 {
		return nil
	}
	var b batcher
	for _, cpg := range t.regionGroups[t.regionOff[r]:t.regionOff[r+1]] {
		if t.regionsLeft[cpg.Index()]--; t.regionsLeft[cpg.Index()] > 0 {
			continue
		}
		for p := range cpg.Partitions() {
			d := t.index(p)
			if t.groupsLeft[d]--; t.groupsLeft[d] == 0 {
				t.take(&b, d)
			}
		}
	}
	return b.out
}

// batcher collects partitions to release, one batch per location in order of first appearance.
type batcher struct {
	out []partitionBatch
	at  map[jobgraph.ResourceID]int
}

func (b *batcher) add(location jobgraph.ResourceID, id rpc.ResultPartitionID) {
	if i, ok := b.at[location]; ok {
		b.out[i].partitions = append(b.out[i].partitions, id)
		return
	}
	if b.at == nil {
		b.at = map[jobgraph.ResourceID]int{}
	}
	b.at[location] = len(b.out)
	b.out = append(b.out, partitionBatch{location: location, partitions: []rpc.ResultPartitionID{id}})
}

// take stops tracking partition d, if tracked, and adds it to the batches.
func (t *partitionTracker) take(b *batcher, d int) {
	tp := &t.tracked[d]
	if !tp.tracked {
		return
	}
	tp.tracked = false
	b.add(tp.location, tp.id)
}

// releaseAll stops tracking every partition and returns them for release, batched by location
// in order of first appearance; keepPersistent keeps BLOCKING_PERSISTENT ones (a FINISHED job's,
// which Flink promotes to cluster partitions).
func (t *partitionTracker) releaseAll(keepPersistent bool) []partitionBatch {
	var bt batcher
	for _, r := range t.graph.Results() {
		if keepPersistent && r.ResultType().IsPersistent() {
			continue
		}
		b := t.base[r]
		for i := range r.NumPartitions() {
			t.take(&bt, b+i)
		}
	}
	return bt.out
}

// isTracked reports whether p is tracked: its producer FINISHED and it was neither released nor
// lost since.
func (t *partitionTracker) isTracked(p *executiongraph.IntermediateResultPartition) bool {
	return t.tracked[t.index(p)].tracked
}

// vertexReset is called before v, whose current execution FINISHED, is reset for a new
// execution: its tracked partitions go to b for release (the new attempt produces them anew;
// Flink: Execution.handlePartitionCleanup on ExecutionVertex.resetForNewExecution), and its
// region counts v as unfinished again; if the region had finished, the groups it reads are read
// again and stop counting as releasable (Flink: RegionPartitionGroupReleaseStrategy.vertexUnfinished).
func (t *partitionTracker) vertexReset(v *executiongraph.ExecutionVertex, b *batcher) {
	for _, p := range v.ProducedPartitions() {
		if releasedByScheduler(p.ResultType()) {
			t.take(b, t.index(p))
		}
	}
	r := v.Region().Index()
	if t.verticesOut[r]++; t.verticesOut[r] != 1 {
		return
	}
	for _, cpg := range t.regionGroups[t.regionOff[r]:t.regionOff[r+1]] {
		if t.regionsLeft[cpg.Index()]++; t.regionsLeft[cpg.Index()] != 1 {
			continue
		}
		for p := range cpg.Partitions() {
			t.groupsLeft[t.index(p)]++
		}
	}
}

// lost stops tracking, without releasing, every partition at location (its TaskExecutor is gone)
// and returns how many there were. Cost: O(partitions).
func (t *partitionTracker) lost(location jobgraph.ResourceID) int {
	n := 0
	for i := range t.tracked {
		if tp := &t.tracked[i]; tp.tracked && tp.location == location {
			tp.tracked = false
			n++
		}
	}
	return n
}
