package executiongraph

import (
	"iter"

	"github.com/jobgraph/jobgraph"
)

// ExecutionJobVertex is the parallel form of one JobVertex: its subtasks (ExecutionVertex, one
// per parallel instance, allocated in one slice), the results it consumes (one per input edge,
// in input order) and the results it produces (in output order), plus a count of subtasks per
// execution state kept up to date by transitions.
// Flink: org.apache.flink.runtime.executiongraph.ExecutionJobVertex.
type ExecutionJobVertex struct {
	graph     *ExecutionGraph
	jobVertex *jobgraph.JobVertex
	topoIndex int
	base      int // Index of subtask 0 among all vertices of the graph
	maxPar    int

	vertices []ExecutionVertex
	inputs   []jobInput
	inResult []*IntermediateResult // inputs[i].result, for Inputs
	produced []*IntermediateResult

	// consumedBacking[s*consumedStride+i] is the group subtask s reads through input i.
	// consumedStride is len(inputs), or 0 when every input is ALL_TO_ALL: then all subtasks
	// read the same groups and share one row.
	consumedBacking []*ConsumedPartitionGroup
	consumedStride  int
	// producedBacking[s*len(produced)+o] is the partition subtask s writes for output o.
	producedBacking []*IntermediateResultPartition

	stateCounts [jobgraph.NumExecutionStates]int32

	// timesSlab holds the state entry times of the subtasks' first attempts (Execution.times),
	// made when the first of them leaves CREATED.
	timesSlab []stateTimes
}

// firstAttemptTimes is where subtask s's first attempt keeps its state entry times.
func (jv *ExecutionJobVertex) firstAttemptTimes(s int32) *stateTimes {
	if jv.timesSlab == nil {
		jv.timesSlab = make([]stateTimes, len(jv.vertices))
	}
	return &jv.timesSlab[s]
}

// jobInput is one input edge of a job vertex, with the groups built for it.
type jobInput struct {
	result  *IntermediateResult
	pattern jobgraph.DistributionPattern
	// consumed[k] and consumers[k] are a pair: consumers[k] is every subtask that reads exactly
	// the partitions of consumed[k].
	consumed  []ConsumedPartitionGroup
	consumers []ConsumerVertexGroup
}

func newExecutionJobVertex(g *ExecutionGraph, v *jobgraph.JobVertex, topo, base int, now int64) *ExecutionJobVertex {
	p := v.Parallelism
	jv := &ExecutionJobVertex{
		graph:     g,
		jobVertex: v,
		topoIndex: topo,
		base:      base,
		maxPar:    v.EffectiveMaxParallelism(),
		vertices:  make([]ExecutionVertex, p),
		inputs:    make([]jobInput, 0, len(v.Inputs)),
		inResult:  make([]*IntermediateResult, 0, len(v.Inputs)),
		produced:  make([]*IntermediateResult, 0, len(v.Results)),
	}
	if n := len(v.Inputs); n > 0 {
		rows := 1
		for _, e := range v.Inputs {
			if e.DistributionPattern != jobgraph.AllToAll {
				jv.consumedStride, rows = n, p
				break
			}
		}
		jv.consumedBacking = make([]*ConsumedPartitionGroup, rows*n)
	}
	for i := range jv.vertices {
		e := &jv.vertices[i].first
		e.jobVertex = jv
		e.subtask = int32(i)
		e.state = jobgraph.ExecutionStateCreated
		e.mark(jobgraph.ExecutionStateCreated, now)
	}
	jv.stateCounts[jobgraph.ExecutionStateCreated] = int32(p)
	return jv
}

// consumedGroups is ExecutionVertex.ConsumedPartitionGroups of subtask s.
func (jv *ExecutionJobVertex) consumedGroups(s int) []*ConsumedPartitionGroup {
	n := len(jv.inputs)
	k := s * jv.consumedStride
	return jv.consumedBacking[k : k+n : k+n]
}

// linkProducedPartitions fills producedBacking once every produced result exists.
func (jv *ExecutionJobVertex) linkProducedPartitions() {
	n := len(jv.produced)
	if n == 0 {
		return
	}
	jv.producedBacking = make([]*IntermediateResultPartition, len(jv.vertices)*n)
	for o, r := range jv.produced {
		for s := range r.partitions {
			jv.producedBacking[s*n+o] = &r.partitions[s]
		}
	}
}

// connect builds the groups of input edge in, which reads result r with the given pattern, as
// Flink's EdgeManagerBuildUtil.connectVertexToResult does:
//
//   - ALL_TO_ALL: one ConsumedPartitionGroup of every partition, read by every subtask, and one
//     ConsumerVertexGroup of every subtask, read from every partition.
//   - POINTWISE, P partitions, C subtasks, P ≥ C: subtask i reads partitions [⌊iP/C⌋, ⌊(i+1)P/C⌋);
//     one group pair per subtask.
//   - POINTWISE, P < C: partition p is read by subtasks [⌈pC/P⌉, ⌈(p+1)C/P⌉); one group pair per
//     partition.
//
// Either way each partition lies in exactly one group pair of the edge, and each subtask reads
// exactly one group of it. Groups are allocated in two slices per edge.
func (jv *ExecutionJobVertex) connect(in int, r *IntermediateResult, pattern jobgraph.DistributionPattern) {
	g := jv.graph
	P, C := len(r.partitions), len(jv.vertices)
	col := len(r.consumers) // this edge's column in r's per-partition group tables
	r.consumers = append(r.consumers, jv)

	n := 1
	if pattern == jobgraph.Pointwise {
		n = min(P, C)
	}
	cpgs := make([]ConsumedPartitionGroup, n)
	cvgs := make([]ConsumerVertexGroup, n)
	for k := range n {
		cpgs[k] = ConsumedPartitionGroup{result: r, consumers: &cvgs[k], index: int32(g.numGroups)}
		cvgs[k] = ConsumerVertexGroup{jobVertex: jv, consumed: &cpgs[k]}
		g.numGroups++
	}
	jv.inputs = append(jv.inputs, jobInput{result: r, pattern: pattern, consumed: cpgs, consumers: cvgs})
	jv.inResult = append(jv.inResult, r)

	E, S := r.groupStride, jv.consumedStride
	pair := func(k, pStart, pEnd, cStart, cEnd int) {
		cpg, cvg := &cpgs[k], &cvgs[k]
		cpg.start, cpg.end, cpg.unfinished = int32(pStart), int32(pEnd), int32(pEnd-pStart)
		cvg.start, cvg.end = int32(cStart), int32(cEnd)
		if E == 0 { // every edge of r is ALL_TO_ALL: one shared row
			pEnd = pStart + 1
		}
		for p := pStart; p < pEnd; p++ {
			r.consumedGroups[p*E+col] = cpg
			r.consumerGroups[p*E+col] = cvg
		}
		if S == 0 { // every input of jv is ALL_TO_ALL: one shared row
			cEnd = cStart + 1
		}
		for c := cStart; c < cEnd; c++ {
			jv.consumedBacking[c*S+in] = cpg
		}
	}
	switch {
	case pattern == jobgraph.AllToAll:
		pair(0, 0, P, 0, C)
	case P >= C:
		for i := range C {
			pair(i, i*P/C, (i+1)*P/C, i, i+1)
		}
	default:
		for p := range P {
			pair(p, p, p+1, (p*C+P-1)/P, ((p+1)*C+P-1)/P)
		}
	}
}

// Graph is the ExecutionGraph the vertex belongs to.
func (jv *ExecutionJobVertex) Graph() *ExecutionGraph { return jv.graph }

// JobVertex is the JobVertex this was built from (name, task code, config, resources, slot
// sharing and co-location). It must not be modified.
func (jv *ExecutionJobVertex) JobVertex() *jobgraph.JobVertex { return jv.jobVertex }

// ID is the JobVertexID.
func (jv *ExecutionJobVertex) ID() jobgraph.JobVertexID { return jv.jobVertex.ID }

// Name is the JobVertex's name.
func (jv *ExecutionJobVertex) Name() string { return jv.jobVertex.Name }

// TopologicalIndex is the position of the vertex in ExecutionGraph.JobVertices.
func (jv *ExecutionJobVertex) TopologicalIndex() int { return jv.topoIndex }

// Parallelism is the number of subtasks.
func (jv *ExecutionJobVertex) Parallelism() int { return len(jv.vertices) }

// MaxParallelism is the JobVertex's effective max parallelism
// (jobgraph.JobVertex.EffectiveMaxParallelism).
func (jv *ExecutionJobVertex) MaxParallelism() int { return jv.maxPar }

// Vertex is subtask i, 0 ≤ i < Parallelism; it panics outside that range, as a slice index does.
func (jv *ExecutionJobVertex) Vertex(i int) *ExecutionVertex { return &jv.vertices[i] }

// Vertices yields the subtasks in index order.
func (jv *ExecutionJobVertex) Vertices() iter.Seq[*ExecutionVertex] {
	return func(yield func(*ExecutionVertex) bool) {
		for i := range jv.vertices {
			if !yield(&jv.vertices[i]) {
				return
			}
		}
	}
}

// Inputs are the results consumed, one per input edge, in input order (a result read through
// two edges appears twice). The slice must not be modified.
func (jv *ExecutionJobVertex) Inputs() []*IntermediateResult { return jv.inResult }

// InputDistributionPattern is the distribution pattern of input edge i.
func (jv *ExecutionJobVertex) InputDistributionPattern(i int) jobgraph.DistributionPattern {
	return jv.inputs[i].pattern
}

// ProducedResults are the results produced, in output order. The slice must not be modified.
func (jv *ExecutionJobVertex) ProducedResults() []*IntermediateResult { return jv.produced }

// StateCount is the number of subtasks whose current execution is in state s.
func (jv *ExecutionJobVertex) StateCount(s jobgraph.ExecutionState) int {
	if int(s) >= jobgraph.NumExecutionStates {
		return 0
	}
	return int(jv.stateCounts[s])
}

// AggregateState summarises the subtasks' states for display, as Flink's
// ExecutionJobVertex.getAggregateJobVertexState: FAILED if any failed; else CANCELING if any is
// canceling; else CANCELED if any was canceled; else INITIALIZING if any is initializing; else
// RUNNING if any runs; else FINISHED if all finished, RUNNING if only some did; else CREATED.
func (jv *ExecutionJobVertex) AggregateState() jobgraph.ExecutionState {
	return aggregateState(&jv.stateCounts, len(jv.vertices))
}

func aggregateState(counts *[jobgraph.NumExecutionStates]int32, parallelism int) jobgraph.ExecutionState {
	switch {
	case counts[jobgraph.ExecutionStateFailed] > 0:
		return jobgraph.ExecutionStateFailed
	case counts[jobgraph.ExecutionStateCanceling] > 0:
		return jobgraph.ExecutionStateCanceling
	case counts[jobgraph.ExecutionStateCanceled] > 0:
		return jobgraph.ExecutionStateCanceled
	case counts[jobgraph.ExecutionStateInitializing] > 0:
		return jobgraph.ExecutionStateInitializing
	case counts[jobgraph.ExecutionStateRunning] > 0:
		return jobgraph.ExecutionStateRunning
	case counts[jobgraph.ExecutionStateFinished] > 0:
		if int(counts[jobgraph.ExecutionStateFinished]) == parallelism {
			return jobgraph.ExecutionStateFinished
		}
		return jobgraph.ExecutionStateRunning
	default:
		return jobgraph.ExecutionStateCreated
	}
}
