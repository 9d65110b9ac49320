package executiongraph

import (
	"iter"

	"github.com/jobgraph/jobgraph"
)

// IntermediateResult is the parallel form of one IntermediateDataSet: one partition per
// subtask of the producing job vertex (allocated in one slice), and the job vertices reading it
// (one entry per consuming edge). Flink: org.apache.flink.runtime.executiongraph.IntermediateResult.
type IntermediateResult struct {
	id          jobgraph.IntermediateDataSetID
	resultType  jobgraph.ResultPartitionType
	recordCodec string
	producer    *ExecutionJobVertex
	outputIndex int
	partitions  []IntermediateResultPartition
	consumers   []*ExecutionJobVertex // one per consuming edge, in the order they connected
	numEdges    int                   // edges that read this result (known before they connect)
	// consumerGroups[p*groupStride+e] and consumedGroups[p*groupStride+e] are the groups
	// partition p belongs to on the e-th consuming edge. groupStride is numEdges, or 0 when
	// every consuming edge is ALL_TO_ALL: then all partitions share one row.
	groupStride    int
	consumerGroups []*ConsumerVertexGroup
	consumedGroups []*ConsumedPartitionGroup
	unfinished     int
}

func newIntermediateResult(producer *ExecutionJobVertex, ds *jobgraph.IntermediateDataSet, out int, consumed edgeCount) *IntermediateResult {
	p := len(producer.vertices)
	numEdges, stride := consumed.edges, 0
	if consumed.pointwise {
		stride = numEdges
	}
	r := &IntermediateResult{
		id:          ds.ID,
		resultType:  ds.ResultType,
		recordCodec: ds.RecordCodec,
		producer:    producer,
		outputIndex: out,
		partitions:  make([]IntermediateResultPartition, p),
		consumers:   make([]*ExecutionJobVertex, 0, numEdges),
		numEdges:    numEdges,
		groupStride: stride,
		unfinished:  p,
	}
	if numEdges > 0 {
		rows := 1
		if stride > 0 {
			rows = p
		}
		r.consumerGroups = make([]*ConsumerVertexGroup, rows*numEdges)
		r.consumedGroups = make([]*ConsumedPartitionGroup, rows*numEdges)
	}
	for i := range r.partitions {
		r.partitions[i] = IntermediateResultPartition{result: r, index: int32(i)}
	}
	return r
}

// tracksFinished reports whether partitions of type t get a finished flag when their producer
// finishes: every type that need not be consumed while it is produced (BLOCKING,
// BLOCKING_PERSISTENT, HYBRID_FULL, HYBRID_SELECTIVE). Flink marks only blocking ones by
// default and hybrid ones too under adaptive batch scheduling; here both, always.
func tracksFinished(t jobgraph.ResultPartitionType) bool { return !t.IsPipelined() }

// ID is the IntermediateDataSetID.
func (r *IntermediateResult) ID() jobgraph.IntermediateDataSetID { return r.id }

// ResultType says how the partitions are exchanged.
func (r *IntermediateResult) ResultType() jobgraph.ResultPartitionType { return r.resultType }

// RecordCodec is the data set's jobgraph.IntermediateDataSet.RecordCodec: the codec a network
// shuffle encodes its records with ("" for the shuffle's default).
func (r *IntermediateResult) RecordCodec() string { return r.recordCodec }

// Producer is the job vertex producing the result.
func (r *IntermediateResult) Producer() *ExecutionJobVertex { return r.producer }

// OutputIndex is the result's index among its producer's outputs.
func (r *IntermediateResult) OutputIndex() int { return r.outputIndex }

// NumPartitions is the producer's parallelism.
func (r *IntermediateResult) NumPartitions() int { return len(r.partitions) }

// Partition is partition i; it panics outside [0, NumPartitions), as a slice index does.
func (r *IntermediateResult) Partition(i int) *IntermediateResultPartition { return &r.partitions[i] }

// Partitions yields the partitions in index order.
func (r *IntermediateResult) Partitions() iter.Seq[*IntermediateResultPartition] {
	return func(yield func(*IntermediateResultPartition) bool) {
		for i := range r.partitions {
			if !yield(&r.partitions[i]) {
				return
			}
		}
	}
}

// Consumers are the job vertices reading the result, one per consuming edge. The slice must
// not be modified.
func (r *IntermediateResult) Consumers() []*ExecutionJobVertex { return r.consumers }

// NumUnfinishedPartitions is the number of partitions not finished; for pipelined result types,
// whose partitions are never marked finished, it stays NumPartitions.
func (r *IntermediateResult) NumUnfinishedPartitions() int { return r.unfinished }

// AreAllPartitionsFinished reports whether every partition is finished (never, for pipelined
// result types).
func (r *IntermediateResult) AreAllPartitionsFinished() bool { return r.unfinished == 0 }

// IntermediateResultPartition is the part of an IntermediateResult one producer subtask writes.
// Flink: org.apache.flink.runtime.executiongraph.IntermediateResultPartition.
type IntermediateResultPartition struct {
	result   *IntermediateResult
	index    int32
	finished bool
}

// ID is the partition's ID: data set and partition index.
func (p *IntermediateResultPartition) ID() jobgraph.IntermediateResultPartitionID {
	return jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: p.result.id, PartitionIndex: int(p.index)}
}

// Index is the partition's index, which is the producer's subtask index.
func (p *IntermediateResultPartition) Index() int { return int(p.index) }

// Result is the result the partition belongs to.
func (p *IntermediateResultPartition) Result() *IntermediateResult { return p.result }

// ResultType is the result's type.
func (p *IntermediateResultPartition) ResultType() jobgraph.ResultPartitionType {
	return p.result.resultType
}

// Producer is the subtask writing the partition.
func (p *IntermediateResultPartition) Producer() *ExecutionVertex {
	return &p.result.producer.vertices[p.index]
}

// IsFinished reports whether the producer's current attempt FINISHED, making the whole partition
// available. Only results that are not pipelined (see ResultPartitionType.IsPipelined) are ever
// finished; the flag goes back to false when the producer is reset.
func (p *IntermediateResultPartition) IsFinished() bool { return p.finished }

// ConsumerVertexGroups are the subtasks reading this partition, one group per consuming edge of
// the result. The slice must not be modified.
func (p *IntermediateResultPartition) ConsumerVertexGroups() []*ConsumerVertexGroup {
	n := p.result.numEdges
	s := int(p.index) * p.result.groupStride
	return p.result.consumerGroups[s : s+n : s+n]
}

// ConsumedPartitionGroups are the groups that contain this partition, one per consuming edge of
// the result. The slice must not be modified.
func (p *IntermediateResultPartition) ConsumedPartitionGroups() []*ConsumedPartitionGroup {
	n := p.result.numEdges
	s := int(p.index) * p.result.groupStride
	return p.result.consumedGroups[s : s+n : s+n]
}

// markFinished flags the partition finished when its result type tracks that, and updates the
// counters of its result and groups. Flink: IntermediateResultPartition.markFinished.
func (p *IntermediateResultPartition) markFinished() {
	if !tracksFinished(p.result.resultType) {
		return
	}
	if p.finished {
		panic("executiongraph: broken invariant: partition " + p.ID().String() + " finished twice")
	}
	p.finished = true
	p.result.unfinished--
	for _, g := range p.ConsumedPartitionGroups() {
		g.unfinished--
	}
}

// markUnfinished undoes markFinished. Flink: IntermediateResultPartition.resetForNewExecution.
func (p *IntermediateResultPartition) markUnfinished() {
	if !p.finished {
		return
	}
	p.finished = false
	p.result.unfinished++
	for _, g := range p.ConsumedPartitionGroups() {
		g.unfinished++
	}
}
