package executiongraph

import (
	"cmp"
	"slices"
	"strconv"
)

// PipelinedRegion is a set of subtasks that exchange data through pipelined partitions (directly
// or transitively) and so must be scheduled, and restarted, together. Regions are joined only
// through reconnectable results (blocking, hybrid, approximate), which they read as
// ExternalConsumedPartitionGroups. Flink: DefaultSchedulingPipelinedRegion, computed by
// SchedulingPipelinedRegionComputeUtil.
type PipelinedRegion struct {
	set          *regionSet
	index        int32
	vStart, vEnd int32 // the region's vertices are set.vertices[vStart:vEnd]
	gStart, gEnd int32 // its external groups are set.external[gStart:gEnd]
}

// Index is the region's position in ExecutionGraph.Regions: regions are ordered by their first
// vertex in topological order.
func (r *PipelinedRegion) Index() int { return int(r.index) }

// Vertices are the region's subtasks in topological order (ExecutionVertex.Index ascending).
// The slice must not be modified.
func (r *PipelinedRegion) Vertices() []*ExecutionVertex {
	return r.set.vertices[r.vStart:r.vEnd:r.vEnd]
}

// Len is the number of subtasks in the region.
func (r *PipelinedRegion) Len() int { return int(r.vEnd - r.vStart) }

// Contains reports whether v belongs to the region.
func (r *PipelinedRegion) Contains(v *ExecutionVertex) bool { return v.Region() == r }

// ExternalConsumedPartitionGroups are the groups of reconnectable partitions (result types for
// which ResultPartitionType.IsReconnectable holds: blocking, hybrid, approximate) that the
// region's subtasks read and that at least one producer outside the region writes: what the
// region waits for before it can be scheduled. Each group appears once, in the order the
// region's vertices (then their inputs) first read it. A group some of whose producers are
// inside the region is listed too (Flink calls it cross-region); check producers with Contains. How a group becomes readable depends on its type: a blocking one
// (ResultPartitionType.IsBlocking) when AreAllPartitionsFinished; a hybrid or
// PIPELINED_APPROXIMATE one as soon as its producers run (the scheduling strategy checks them).
// Flink: SchedulingPipelinedRegion.getAllNonPipelinedConsumedPartitionGroups, which also lists
// groups produced wholly inside the region; those are left out here. The slice must not be
// modified.
func (r *PipelinedRegion) ExternalConsumedPartitionGroups() []*ConsumedPartitionGroup {
	if r.gStart == r.gEnd {
		return nil
	}
	return r.set.external[r.gStart:r.gEnd:r.gEnd]
}

func (r *PipelinedRegion) String() string {
	return "pipelined region #" + strconv.Itoa(int(r.index)) + " (" + strconv.Itoa(r.Len()) + " vertices)"
}

// regionSet is the graph's regions and their shared backing arrays.
type regionSet struct {
	regions  []PipelinedRegion
	ptrs     []*PipelinedRegion
	vertices []*ExecutionVertex        // every vertex, grouped by region
	regionOf []int32                   // regionOf[v.Index()] is the region of vertex v
	external []*ConsumedPartitionGroup // every region's external groups, grouped by region
}

// forceCycleCheck makes computeRegions run the cycle merge even when its fast path proves it
// unnecessary; tests set it to check the fast path against the general algorithm.
var forceCycleCheck = false

// computeRegions (re)computes the pipelined regions, as Flink's
// SchedulingPipelinedRegionComputeUtil.computePipelinedRegions, in time linear in the number of
// vertices plus the sizes of the groups:
//
//  1. Union-find over vertices (indexed by ExecutionVertex.Index): for every group of a result
//     that is not reconnectable, its producers are united once (cost: the group's size) and each
//     consumer of the group is united with the group's first producer (cost: 1 per consumer).
//     Producer × consumer pairs are never visited.
//  2. Regions are numbered by their first vertex in topological order. The union-find keeps the
//     smallest index as a set's root, so that is one pass.
//  3. Regions that reach each other through reconnectable results form cycles the scheduler could
//     never resolve; they are merged (FLINK-17330) by Tarjan's algorithm over a graph whose nodes
//     are regions and reconnectable groups (producer region → group → consumer region, each edge
//     once per group), so an ALL_TO_ALL edge adds O(P + C) edges, not O(P × C). Skipped when no
//     region spans more than one job vertex: then every region edge goes forward in topological
//     order of job vertices and no cycle can exist.
//  4. Each region lists the reconnectable groups it reads from outside.
func (g *ExecutionGraph) computeRegions() {
	n := g.numVertices
	uf := make(unionFind, n)
	for i := range uf {
		uf[i] = int32(i)
	}
	anyReconnectable := false
	for _, jv := range g.jobVertices {
		cbase := int32(jv.base)
		for i := range jv.inputs {
			in := &jv.inputs[i]
			if in.result.resultType.IsReconnectable() {
				anyReconnectable = true
				continue
			}
			pbase := int32(in.result.producer.base)
			for k := range in.consumed {
				cpg := &in.consumed[k]
				rep := pbase + cpg.start
				for p := cpg.start + 1; p < cpg.end; p++ {
					uf.union(rep, pbase+p)
				}
				cvg := cpg.consumers
				for c := cvg.start; c < cvg.end; c++ {
					uf.union(cbase+c, rep)
				}
			}
		}
	}

	regionOf := make([]int32, n)
	numRegions, multiJobVertex := g.assignRegions(uf, regionOf)
	if anyReconnectable && (multiJobVertex || forceCycleCheck) {
		if g.mergeCycles(uf, regionOf, numRegions) {
			numRegions, _ = g.assignRegions(uf, regionOf)
		}
	}
	g.buildRegions(regionOf, numRegions, uf) // uf is done with: its array is buildRegions' scratch
}

// assignRegions numbers the union-find's sets by first vertex and writes each vertex's region
// number into regionOf. multiJobVertex reports whether some region spans several job vertices.
func (g *ExecutionGraph) assignRegions(uf unionFind, regionOf []int32) (numRegions int, multiJobVertex bool) {
	next := int32(0)
	for _, jv := range g.jobVertices {
		base := int32(jv.base)
		for v := base; v < base+int32(len(jv.vertices)); v++ {
			root := uf.find(v)
			if root == v {
				regionOf[v] = next
				next++
				continue
			}
			regionOf[v] = regionOf[root] // root < v: numbered already
			if root < base {
				multiJobVertex = true
			}
		}
	}
	return int(next), multiJobVertex
}

// mergeCycles unites the regions of every strongly connected component of the region graph
// (regions linked through reconnectable groups) in uf and reports whether it merged any.
func (g *ExecutionGraph) mergeCycles(uf unionFind, regionOf []int32, numRegions int) bool {
	R := int32(numRegions)
	markProducer := make([]int32, numRegions)
	markConsumer := make([]int32, numRegions)
	var src, dst []int32
	node := R // group nodes follow the region nodes
	for _, jv := range g.jobVertices {
		cbase := int32(jv.base)
		for i := range jv.inputs {
			in := &jv.inputs[i]
			if !in.result.resultType.IsReconnectable() {
				continue
			}
			pbase := int32(in.result.producer.base)
			for k := range in.consumed {
				cpg := &in.consumed[k]
				stamp := node - R + 1
				for p := cpg.start; p < cpg.end; p++ {
					if r := regionOf[pbase+p]; markProducer[r] != stamp {
						markProducer[r] = stamp
						src, dst = append(src, r), append(dst, node)
					}
				}
				cvg := cpg.consumers
				for c := cvg.start; c < cvg.end; c++ {
					if r := regionOf[cbase+c]; markConsumer[r] != stamp {
						markConsumer[r] = stamp
						src, dst = append(src, node), append(dst, r)
					}
				}
				node++
			}
		}
	}
	numNodes := int(node)
	off := make([]int32, numNodes+1)
	for _, s := range src {
		off[s+1]++
	}
	for i := 1; i <= numNodes; i++ {
		off[i] += off[i-1]
	}
	adj := make([]int32, len(src))
	fill := append([]int32(nil), off[:numNodes]...)
	for i, s := range src {
		adj[fill[s]] = dst[i]
		fill[s]++
	}
	comp := stronglyConnectedComponents(numNodes, off, adj)

	// The first vertex of each region is the root of its set in uf.
	first := make([]int32, numRegions)
	for i := range first {
		first[i] = -1
	}
	for v, r := range regionOf {
		if first[r] < 0 {
			first[r] = int32(v)
		}
	}
	leader := make([]int32, numNodes) // component → its first region, or -1
	for i := range leader {
		leader[i] = -1
	}
	merged := false
	for r := range R {
		c := comp[r]
		if leader[c] < 0 {
			leader[c] = r
			continue
		}
		uf.union(first[leader[c]], first[r])
		merged = true
	}
	return merged
}

// buildRegions turns the region numbers into PipelinedRegions backed by one array of vertex
// pointers and one of groups, and records every vertex's region.
// scratch has one element per vertex and is overwritten.
func (g *ExecutionGraph) buildRegions(regionOf []int32, numRegions int, scratch []int32) {
	set := &regionSet{

		regions:  make([]PipelinedRegion, numRegions),
		ptrs:     make([]*PipelinedRegion, numRegions),
		vertices: make([]*ExecutionVertex, g.numVertices),
		regionOf: regionOf,
	}
	// fill[r] counts region r's vertices, then becomes where the next one goes.
	fill := make([]int32, numRegions+1)
	for _, r := range regionOf {
		fill[r+1]++
	}
	for r := range numRegions {
		fill[r+1] += fill[r]
		set.regions[r] = PipelinedRegion{set: set, index: int32(r), vStart: fill[r], vEnd: fill[r+1]}
		set.ptrs[r] = &set.regions[r]
	}
	// at[k] is the Index of set.vertices[k], so the loop over external groups below reads the
	// job vertices' group tables, not the vertices (a cache line each).
	at := scratch[:g.numVertices]
	for _, jv := range g.jobVertices {
		for s := range jv.vertices {
			r := regionOf[jv.base+s]
			set.vertices[fill[r]] = &jv.vertices[s]
			at[fill[r]] = int32(jv.base + s)
			fill[r]++
		}
	}

	// External reconnectable inputs of each region. Every subtask reads at most one group per
	// reconnectable input edge, which bounds their number.
	bound := 0
	for _, jv := range g.jobVertices {
		for i := range jv.inputs {
			if jv.inputs[i].result.resultType.IsReconnectable() {
				bound += len(jv.vertices)
			}
		}
	}
	if bound == 0 {
		g.regions = set
		return
	}
	external := make([]*ConsumedPartitionGroup, 0, bound)
	marks := make([]int32, 2*g.numGroups)
	producerRegion, seen := marks[:g.numGroups], marks[g.numGroups:]
	for i := range producerRegion {
		producerRegion[i] = -1 // not computed yet
	}
	const mixed = -2
	jv := g.jobVertices[0]
	for r := range set.regions {
		reg := &set.regions[r]
		reg.gStart = int32(len(external))
		stamp := int32(r + 1)
		for _, idx := range at[reg.vStart:reg.vEnd] {
			jv = g.jobVertexAt(jv, idx)
			s := int(idx) - jv.base
			for _, cpg := range jv.consumedGroups(s) {
				if !cpg.result.resultType.IsReconnectable() || seen[cpg.index] == stamp {
					continue
				}
				seen[cpg.index] = stamp
				pr := producerRegion[cpg.index]
				if pr == -1 {
					pbase := int32(cpg.result.producer.base)
					pr = regionOf[pbase+cpg.start]
					for p := cpg.start + 1; p < cpg.end; p++ {
						if regionOf[pbase+p] != pr {
							pr = mixed
							break
						}
					}
					producerRegion[cpg.index] = pr
				}
				if pr != int32(r) {
					external = append(external, cpg)
				}
			}
		}
		reg.gEnd = int32(len(external))
	}
	if len(external) < cap(external)/2 {
		external = append([]*ConsumedPartitionGroup(nil), external...)
	}
	set.external = external
	g.regions = set
}

// jobVertexAt is the job vertex of the vertex with Index idx; hint, a job vertex, is returned
// when it holds idx (consecutive lookups mostly stay in one job vertex).
func (g *ExecutionGraph) jobVertexAt(hint *ExecutionJobVertex, idx int32) *ExecutionJobVertex {
	if i := int(idx); i >= hint.base && i < hint.base+len(hint.vertices) {
		return hint
	}
	k, _ := slices.BinarySearchFunc(g.jobVertices, int(idx), func(jv *ExecutionJobVertex, i int) int {
		return cmp.Compare(jv.base+len(jv.vertices), i+1)
	})
	return g.jobVertices[k]
}

// unionFind is a disjoint-set forest over int32 elements whose root is always the smallest
// element of its set (union links the larger root below the smaller), with path halving.
type unionFind []int32

func (u unionFind) find(x int32) int32 {
	for u[x] != x {
		u[x] = u[u[x]]
		x = u[x]
	}
	return x
}

func (u unionFind) union(a, b int32) {
	a, b = u.find(a), u.find(b)
	switch {
	case a < b:
		u[b] = a
	case b < a:
		u[a] = b
	}
}

// stronglyConnectedComponents numbers the strongly connected components of the graph of n nodes
// whose edges from node v are adj[off[v]:off[v+1]], with an iterative Tarjan's algorithm, and
// returns each node's component number. Flink: StronglyConnectedComponentsComputeUtils.
func stronglyConnectedComponents(n int, off, adj []int32) []int32 {
	index := make([]int32, n)
	low := make([]int32, n)
	comp := make([]int32, n)
	for i := range n {
		index[i] = -1
		comp[i] = -1
	}
	type frame struct{ v, next int32 }
	var calls []frame
	var stack []int32
	counter, numComps := int32(0), int32(0)
	visit := func(v int32) {
		index[v], low[v] = counter, counter
		counter++
		stack = append(stack, v)
		calls = append(calls, frame{v, off[v]})
	}
	for s := range int32(n) {
		if index[s] >= 0 {
			continue
		}
		visit(s)
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			v := f.v
			if f.next < off[v+1] {
				w := adj[f.next]
				f.next++
				if index[w] < 0 {
					visit(w)
				} else if comp[w] < 0 { // w is on the stack
					low[v] = min(low[v], index[w])
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					comp[w] = numComps
					if w == v {
						break
					}
				}
				numComps++
			}
			if len(calls) > 0 {
				u := calls[len(calls)-1].v
				low[u] = min(low[u], low[v])
			}
		}
	}
	return comp
}
