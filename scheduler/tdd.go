package scheduler

import (
	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// tddFactory builds TaskDeploymentDescriptors. The list of partitions a ConsumedPartitionGroup
// stands for is built once per group (and per producer attempt generation) and shared by every
// consumer's descriptor, as Flink caches shuffle descriptors per group, so an ALL_TO_ALL edge of
// P producers and C consumers builds P partition IDs, not P × C; each consumer adds one
// subpartition index. Flink: TaskDeploymentDescriptorFactory.
type tddFactory struct {
	graph *executiongraph.ExecutionGraph
	// epoch goes up whenever a producer attempt may have changed (a vertex reset); cached
	// partition lists of an older epoch are rebuilt.
	epoch uint64
	cache []cachedPartitions // by ConsumedPartitionGroup.Index
	// shuffleDescs is the scheduler's map of ShuffleMaster descriptors; nil for the in-memory
	// shuffle, whose descriptors stay nil.
	shuffleDescs map[jobgraph.IntermediateResultPartitionID]rpc.ShuffleDescriptor

	// names caches each vertex's task name (ExecutionVertex.Name allocates it), by
	// ExecutionVertex.Index, made on the first deployment: a restart names every task again.
	names []string
	// The descriptors' produced-partition and input-gate slices are carved out of chunks of
	// tddChunk elements, one allocation per chunk instead of per descriptor; each slice is capped
	// at its own length, so appending to one never writes into another. A chunk lives as long
	// as any descriptor using it (a deployed task's descriptor).
	produced []rpc.ResultPartitionDeploymentDescriptor
	gates    []rpc.InputGateDeploymentDescriptor
}

// tddChunk is how many produced partitions or input gates one chunk holds.
const tddChunk = 256

// take returns the next n elements of *chunk (a fresh chunk when fewer are left), capped at n.
func take[T any](chunk *[]T, n int) []T {
	if len(*chunk) < n {
		*chunk = make([]T, max(n, tddChunk))
	}
	out := (*chunk)[:n:n]
	*chunk = (*chunk)[n:]
	return out
}

// name returns v's task name, cached.
func (f *tddFactory) name(v *executiongraph.ExecutionVertex) string {
	if f.names == nil {
		f.names = make([]string, f.graph.NumVertices())
	}
	n := &f.names[v.Index()]
	if *n == "" {
		*n = v.Name()
	}
	return *n
}

type cachedPartitions struct {
	epoch uint64
	ids   []rpc.ResultPartitionID
	descs []rpc.ShuffleDescriptor // only with a ShuffleMaster
}

func newTDDFactory(g *executiongraph.ExecutionGraph) *tddFactory {
	return &tddFactory{graph: g, epoch: 1, cache: make([]cachedPartitions, g.NumConsumedPartitionGroups())}
}

// invalidate drops every cached partition list; the failover calls it when it resets vertices.
func (f *tddFactory) invalidate() { f.epoch++ }

// invalidateGroup drops the cached lists of cpg alone (epochs start at 1, so 0 is always stale).
func (f *tddFactory) invalidateGroup(cpg *executiongraph.ConsumedPartitionGroup) {
	f.cache[cpg.Index()].epoch = 0
}

// build returns the descriptor of e, which must be DEPLOYING with its slot recorded.
//
//   - Produced partitions, one per output: ResultPartitionID{partition, e's attempt};
//     NumberOfSubpartitions is the size of the partition's consumer vertex group (ALL_TO_ALL: the
//     consumer parallelism; POINTWISE with producers ≥ consumers: 1; with producers < consumers:
//     the consumers of that partition), the largest over its consuming edges, at least 1.
//   - Input gates, one per input edge in JobVertex.Inputs order: the group's partitions in index
//     order, each with its producer's current attempt, and the subpartition this subtask reads:
//     its subtask index minus the first subtask of its consumer vertex group (ALL_TO_ALL: the
//     subtask index; POINTWISE producers ≥ consumers: 0; producers < consumers: its position among
//     the consumers of the partition).
func (f *tddFactory) build(e *executiongraph.Execution) rpc.TaskDeploymentDescriptor {
	v := e.Vertex()
	jv := v.JobVertex()
	spec := jv.JobVertex()
	attempt := e.AttemptID()
	tdd := rpc.TaskDeploymentDescriptor{
		JobID:              f.graph.JobID(),
		JobName:            f.graph.JobName(),
		ExecutionAttemptID: attempt,
		AllocationID:       e.AllocationID,
		TaskName:           f.name(v),
		VertexName:         jv.Name(),
		Invokable:          spec.Invokable,
		Config:             spec.Config,
		SubtaskIndex:       v.SubtaskIndex(),
		Parallelism:        jv.Parallelism(),
		MaxParallelism:     jv.MaxParallelism(),
		AttemptNumber:      e.AttemptNumber(),
		// The TaskExecutor lets the task send events to its coordinator only with this set.
		HasOperatorCoordinator: spec.OperatorCoordinator != "",
	}
	if produced := v.ProducedPartitions(); len(produced) > 0 {
		tdd.ProducedPartitions = take(&f.produced, len(produced))
		for i, p := range produced {
			tdd.ProducedPartitions[i] = rpc.ResultPartitionDeploymentDescriptor{
				ResultPartitionID:     rpc.ResultPartitionID{PartitionID: p.ID(), ProducerID: attempt},
				ResultType:            p.ResultType(),
				NumberOfSubpartitions: numberOfSubpartitions(p),
			}
			if f.shuffleDescs != nil {
				if d, ok := f.shuffleDescs[p.ID()]; ok {
					tdd.ProducedPartitions[i].ShuffleDescriptor = &d
				}
			}
		}
	}
	if consumed := v.ConsumedPartitionGroups(); len(consumed) > 0 {
		tdd.InputGates = take(&f.gates, len(consumed))
		for i, cpg := range consumed {
			first, _ := cpg.ConsumerVertexGroup().VertexRange()
			tdd.InputGates[i] = rpc.InputGateDeploymentDescriptor{
				DataSetID:                 cpg.Result().ID(),
				ResultType:                cpg.ResultType(),
				Partitions:                f.partitionIDs(cpg),
				ConsumedSubpartitionIndex: v.SubtaskIndex() - first,
			}
			if f.shuffleDescs != nil {
				tdd.InputGates[i].ShuffleDescriptors = f.cache[cpg.Index()].descs
			}
		}
	}
	return tdd
}

// partitionIDs lists the group's partitions with their producers' current attempts, cached.
func (f *tddFactory) partitionIDs(cpg *executiongraph.ConsumedPartitionGroup) []rpc.ResultPartitionID {
	c := &f.cache[cpg.Index()]
	if c.epoch == f.epoch {
		return c.ids
	}
	ids := make([]rpc.ResultPartitionID, 0, cpg.Len())
	for p := range cpg.Partitions() {
		ids = append(ids, rpc.ResultPartitionID{
			PartitionID: p.ID(),
			ProducerID:  p.Producer().CurrentExecution().AttemptID(),
		})
	}
	*c = cachedPartitions{epoch: f.epoch, ids: ids}
	if f.shuffleDescs != nil {
		c.descs = make([]rpc.ShuffleDescriptor, len(ids))
		for i, id := range ids {
			// A producer not deployed yet has no descriptor: its consumer gets one with the
			// partition ID only (an unknown location; Flink's UnknownShuffleDescriptor).
			d, ok := f.shuffleDescs[id.PartitionID]
			if !ok || d.ResultPartitionID != id {
				d = rpc.ShuffleDescriptor{ResultPartitionID: id}
			}
			c.descs[i] = d
		}
	}
	return ids
}

// numberOfSubpartitions is the size of p's largest consumer vertex group, at least 1.
func numberOfSubpartitions(p *executiongraph.IntermediateResultPartition) int {
	n := 1
	for _, cvg := range p.ConsumerVertexGroups() {
		n = max(n, cvg.Len())
	}
	return n
}
