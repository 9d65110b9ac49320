package jobgraph

import (
	"slices"
	"time"
)

// JobGraph is the job a host program builds and submits: vertices (one per task, e.g. an operator
// chain), each with a parallelism and the name of its task code, joined by edges that say how data
// flows between them. It is plain data: build it with New, AddVertex and Connect (or fill the fields
// yourself), check it with Validate, persist it with encoding/json (see Decode).
// Flink: org.apache.flink.runtime.jobgraph.JobGraph.
//
// A JobGraph is not safe for concurrent mutation. Once submitted it must not be changed: the
// Dispatcher keeps its own decoded copy in the ExecutionPlanStore.
type JobGraph struct {
	// JobID identifies the job. New sets a random one.
	JobID JobID `json:"jobId"`
	// Name is shown in logs and results.
	Name string `json:"name"`
	// Type is STREAMING or BATCH.
	Type JobType `json:"type"`
	// Vertices in insertion order. Edges are stored on their target vertex (JobVertex.Inputs).
	Vertices []*JobVertex `json:"vertices"`

	// Checkpointing: zero value disables checkpoints.
	Checkpointing CheckpointingSettings `json:"checkpointing,omitzero"`
	// SavepointRestore: zero value restores nothing.
	SavepointRestore SavepointRestoreSettings `json:"savepointRestore,omitzero"`
	// RestartStrategy: zero value is Flink's default (none without checkpointing, exponential-delay
	// with it). See RestartStrategyConfig.Resolve.
	RestartStrategy RestartStrategyConfig `json:"restartStrategy,omitzero"`
	// FailoverStrategy: jobmanager.execution.failover-strategy, "" means region.
	FailoverStrategy FailoverStrategy `json:"failoverStrategy,omitempty"`
	// ParallelismOverrides is the job's own pipeline.jobvertex-parallelism-overrides: the
	// parallelism to run a vertex with, by vertex ID, in place of its Parallelism. The Dispatcher
	// applies it on submission, over the cluster's overrides (dispatcher.Config.ParallelismOverrides;
	// the job's win for a vertex both name), before it validates and persists the graph, so the
	// stored plan and the archived graph have the overridden parallelism. An entry for a vertex
	// the graph does not have is ignored, as in Flink; a value below 1 is invalid (Validate,
	// RuleParallelism). A vertex whose MaxParallelism is 0 derives its max parallelism from the
	// overridden parallelism (DefaultMaxParallelism), as Flink derives it when it builds the
	// ExecutionGraph. JSON: an object of vertex ID (32 hex digits) to parallelism; empty is left
	// out. Flink keeps the map in the JobGraph's job configuration as strings.
	ParallelismOverrides map[JobVertexID]int `json:"parallelismOverrides,omitempty"`
	// InitialClientHeartbeatTimeout, when positive, makes the Dispatcher cancel the job once its
	// client's heartbeats stop for that long (client.heartbeat.timeout): a client submitting
	// attached with execution.shutdown-on-attached-exit sets it (dispatcher.SubmitAttached).
	// 0, the default, is a detached job: the Dispatcher never cancels it for its client. Flink:
	// JobGraph.initialClientHeartbeatTimeout (milliseconds; here a duration, JSON nanoseconds).
	// Negative is invalid (Validate, RuleConfiguration).
	InitialClientHeartbeatTimeout time.Duration `json:"initialClientHeartbeatTimeout,omitempty"`
}

// JobVertex is one task of the job: Parallelism subtasks, each running the task code registered
// under Invokable, with Config handed to it. Flink: org.apache.flink.runtime.jobgraph.JobVertex.
type JobVertex struct {
	// ID identifies the vertex within the job. AddVertex sets a random one. Checkpoint and
	// savepoint state is matched to vertices by ID (Flink's operator uid hash), so a job meant
	// to restore another job's savepoint gives its vertices the same IDs — set them right
	// after AddVertex, before Connect, since edges record the IDs they join.
	ID JobVertexID `json:"id"`
	// Name is for people: logs, results, errors.
	Name string `json:"name"`
	// Parallelism is the number of subtasks, 1 ≤ Parallelism ≤ the effective max parallelism.
	Parallelism int `json:"parallelism"`
	// MaxParallelism bounds rescaling (the number of key groups); 0 means Flink's default, see
	// EffectiveMaxParallelism. At most MaxMaxParallelism (32768).
	MaxParallelism int `json:"maxParallelism,omitempty"`
	// Invokable names the task code; every TaskExecutor looks it up in its registry by this name.
	// Flink keeps a class name here.
	Invokable string `json:"invokable"`
	// Config is opaque to jobgraph and handed to the task code as is.
	Config []byte `json:"config,omitempty"`
	// OperatorCoordinator names the vertex's operator coordinator in the JobMaster's
	// coordination.Registry (jobmaster.Config.OperatorCoordinators); empty: the vertex has none.
	// The JobMaster creates it when it starts the job (an unknown name fails the job's
	// initialization, as an unknown Invokable fails the task on its TaskExecutor), and its
	// subtasks exchange events with it (taskexecutor.Environment.SendEventToCoordinator).
	// Flink: JobVertex.getOperatorCoordinators (a list, one per chained operator; ours is one
	// per vertex).
	OperatorCoordinator string `json:"operatorCoordinator,omitempty"`
	// OperatorCoordinatorConfig is opaque to jobgraph and handed to the coordinator as
	// coordination.Context.Config. Set without OperatorCoordinator it is invalid
	// (RuleOperatorCoordinator).
	OperatorCoordinatorConfig []byte `json:"operatorCoordinatorConfig,omitempty"`
	// Resources is the minimum the vertex needs per subtask; the zero value is UNKNOWN (any slot).
	Resources ResourceProfile `json:"resources,omitzero"`
	// SlotSharingGroup: subtasks of vertices with the same non-empty group name may share one
	// slot (one subtask of each vertex per slot), so a group needs as many slots as its largest
	// parallelism. AddVertex sets DefaultSlotSharingGroup ("default"), as Flink's DataStream API
	// puts every operator whose program names no group in "default"; WithoutSlotSharingGroup or
	// WithSlotSharingGroup change it. Empty: the vertex is alone in its own group (a slot per
	// subtask), as Flink's runtime JobVertex is when no group was set; this is the zero value,
	// so a JobVertex built as a struct literal or decoded from JSON without the field has no group.
	// The JSON form holds the group as set: an empty group is left out, and an absent, empty or
	// null "slotSharingGroup" decodes as empty (Decode applies no default), so a graph decodes to
	// the groups it was encoded with.
	SlotSharingGroup string `json:"slotSharingGroup,omitempty"`
	// CoLocationGroup: subtask i of every vertex in the same non-empty group runs in the same
	// slot. Co-located vertices need the same parallelism and the same SlotSharingGroup.
	CoLocationGroup string `json:"coLocationGroup,omitempty"`
	// Inputs are the edges that read into this vertex, in input-index order: a task gets its
	// inputs by this index.
	Inputs []*JobEdge `json:"inputs,omitempty"`
	// Results are the data sets this vertex produces, in output-index order: a task gets its
	// outputs by this index.
	Results []*IntermediateDataSet `json:"results,omitempty"`
}

// IntermediateDataSet is one output of a JobVertex: what its subtasks produce for one or more
// consuming edges. Flink: org.apache.flink.runtime.jobgraph.IntermediateDataSet.
type IntermediateDataSet struct {
	// ID identifies the data set within the job.
	ID IntermediateDataSetID `json:"id"`
	// ResultType says how its partitions are exchanged (pipelined, blocking, hybrid…).
	ResultType ResultPartitionType `json:"resultType"`
	// RecordCodec names the codec a network shuffle encodes this data set's records with when
	// they cross processes (transport/grpc/netshuffle: "bytes", "string", "int64", "json", or
	// one the host registers beside its task code); "" means the shuffle's default. The
	// in-memory shuffle passes records as they are and ignores it. At most MaxNameLength bytes
	// (RuleNameLength). Where we differ: Flink derives a TypeSerializer from the data set's
	// type information; a Go job names its codec.
	RecordCodec string `json:"recordCodec,omitempty"`
}

// JobEdge connects a data set to the vertex that reads it. It lives in the target's Inputs.
// Flink: org.apache.flink.runtime.jobgraph.JobEdge.
type JobEdge struct {
	// Source is the data set read.
	Source IntermediateDataSetID `json:"source"`
	// Target is the reading vertex; it must be the vertex whose Inputs hold this edge.
	Target JobVertexID `json:"target"`
	// DistributionPattern: ALL_TO_ALL or POINTWISE.
	DistributionPattern DistributionPattern `json:"distributionPattern"`
	// ShipStrategy is for display only (FORWARD, HASH, REBALANCE…), as Flink's
	// JobEdge.getShipStrategyName.
	ShipStrategy string `json:"shipStrategy,omitempty"`
}

// DefaultSlotSharingGroup is the slot-sharing group AddVertex puts a vertex in. Flink:
// StreamGraphGenerator.DEFAULT_SLOT_SHARING_GROUP, the group of every operator whose DataStream
// program sets none. A job whose vertices all share it needs as many slots as its largest
// parallelism.
const DefaultSlotSharingGroup = "default"

// MaxMaxParallelism is the largest max parallelism Flink allows (1 << 15).
// Flink: KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM.
const MaxMaxParallelism = 1 << 15

// DefaultMaxParallelism returns Flink's default max parallelism for a vertex of the given
// parallelism: 1.5 × parallelism rounded up to a power of two, at least 128, at most 32768.
// Flink: KeyGroupRangeAssignment.computeDefaultMaxParallelism.
func DefaultMaxParallelism(parallelism int) int {
	if parallelism >= MaxMaxParallelism {
		return MaxMaxParallelism // and p + p/2 below cannot overflow
	}
	n := parallelism + parallelism/2
	p := 1
	for p < n && p < MaxMaxParallelism {
		p <<= 1
	}
	return min(max(p, 128), MaxMaxParallelism)
}

// EffectiveMaxParallelism is MaxParallelism, or DefaultMaxParallelism(Parallelism) when unset.
func (v *JobVertex) EffectiveMaxParallelism() int {
	if v.MaxParallelism > 0 {
		return v.MaxParallelism
	}
	return DefaultMaxParallelism(v.Parallelism)
}

// New returns an empty JobGraph with a random JobID. Names longer than MaxNameLength bytes fail
// Validate.
func New(name string, jobType JobType) *JobGraph {
	return &JobGraph{JobID: NewJobID(), Name: name, Type: jobType}
}

// AddVertex appends a vertex with a random ID running the task code registered as invokable, in
// the slot-sharing group DefaultSlotSharingGroup, and returns it for further settings (e.g.
// WithoutSlotSharingGroup). It checks nothing: Validate does. On a nil g it returns the vertex
// without adding it anywhere (Validate of the nil graph fails).
func (g *JobGraph) AddVertex(name, invokable string, parallelism int) *JobVertex {
	v := &JobVertex{ID: NewJobVertexID(), Name: name, Invokable: invokable, Parallelism: parallelism,
		SlotSharingGroup: DefaultSlotSharingGroup}
	if g != nil {
		g.Vertices = append(g.Vertices, v)
	}
	return v
}

// Connect makes producer emit a new data set of the given result type and consumer read it with
// the given pattern, as Flink's JobVertex.connectNewDataSetAsInput does. The new data set is
// producer's last output and the edge is consumer's last input. Both vertices must be vertices of
// g; Connect checks nothing, and Validate fails a graph where they are not: a consumer of another
// graph leaves the data set unread here (RuleUnreadDataSet), a producer of another graph leaves
// the input dangling (RuleDanglingEdge). A nil vertex does not panic: the data set or the edge is
// left out where the nil vertex would hold it, and Validate reports the same rules; the edge is
// returned even so.
func (g *JobGraph) Connect(producer, consumer *JobVertex, pattern DistributionPattern, resultType ResultPartitionType) *JobEdge {
	ds := &IntermediateDataSet{ID: NewIntermediateDataSetID(), ResultType: resultType}
	if producer != nil {
		producer.Results = append(producer.Results, ds)
	}
	return g.ConnectDataSet(ds, consumer, pattern)
}

// ConnectDataSet makes consumer read an existing data set too (a data set with several
// consumers), and returns the new edge, consumer's last input. The data set must be produced by
// a vertex of g and consumer must be one (see Connect). A nil ds gives an edge reading the zero
// data set ID (RuleDanglingEdge); a nil consumer, an edge held by no vertex.
func (g *JobGraph) ConnectDataSet(ds *IntermediateDataSet, consumer *JobVertex, pattern DistributionPattern) *JobEdge {
	e := &JobEdge{DistributionPattern: pattern}
	if ds != nil {
		e.Source = ds.ID
	}
	if consumer != nil {
		e.Target = consumer.ID
		consumer.Inputs = append(consumer.Inputs, e)
	}
	return e
}

// Vertex returns the vertex with the given ID, or nil (also for a nil g).
func (g *JobGraph) Vertex(id JobVertexID) *JobVertex {
	if g == nil {
		return nil
	}
	for _, v := range g.Vertices {
		if v != nil && v.ID == id {
			return v
		}
	}
	return nil
}

// VertexByName returns the first vertex with the given name, or nil (also for a nil g).
func (g *JobGraph) VertexByName(name string) *JobVertex {
	if g == nil {
		return nil
	}
	for _, v := range g.Vertices {
		if v != nil && v.Name == name {
			return v
		}
	}
	return nil
}

// Producers maps every data set of the graph to the vertex producing it.
func (g *JobGraph) Producers() map[IntermediateDataSetID]*JobVertex {
	m := make(map[IntermediateDataSetID]*JobVertex)
	if g == nil {
		return m
	}
	for _, v := range g.Vertices {
		if v == nil {
			continue
		}
		for _, ds := range v.Results {
			if ds != nil {
				m[ds.ID] = v
			}
		}
	}
	return m
}

// NumEdges is the number of JobEdges (inputs over all vertices); 0 for a nil g.
func (g *JobGraph) NumEdges() int {
	n := 0
	if g == nil {
		return 0
	}
	for _, v := range g.Vertices {
		if v != nil {
			n += len(v.Inputs)
		}
	}
	return n
}

// NumTasks is the sum of the vertices' parallelism; 0 for a nil g.
func (g *JobGraph) NumTasks() int {
	n := 0
	if g == nil {
		return 0
	}
	for _, v := range g.Vertices {
		if v != nil {
			n += v.Parallelism
		}
	}
	return n
}

// WithMaxParallelism sets MaxParallelism and returns v.
func (v *JobVertex) WithMaxParallelism(n int) *JobVertex { v.MaxParallelism = n; return v }

// WithResources sets the per-subtask ResourceProfile and returns v.
func (v *JobVertex) WithResources(p ResourceProfile) *JobVertex { v.Resources = p; return v }

// WithSlotSharingGroup sets SlotSharingGroup and returns v; "" takes v out of every group, as
// WithoutSlotSharingGroup does. Flink: SingleOutputStreamOperator.slotSharingGroup.
func (v *JobVertex) WithSlotSharingGroup(name string) *JobVertex { v.SlotSharingGroup = name; return v }

// WithoutSlotSharingGroup takes v out of every slot-sharing group (SlotSharingGroup ""): each of
// its subtasks needs a slot of its own, shared with no other vertex. It returns v.
func (v *JobVertex) WithoutSlotSharingGroup() *JobVertex { v.SlotSharingGroup = ""; return v }

// WithCoLocationGroup sets CoLocationGroup and returns v.
func (v *JobVertex) WithCoLocationGroup(name string) *JobVertex { v.CoLocationGroup = name; return v }

// WithConfig sets the opaque task config and returns v.
func (v *JobVertex) WithConfig(config []byte) *JobVertex { v.Config = config; return v }

// WithOperatorCoordinator names the vertex's operator coordinator and its config (see
// OperatorCoordinator) and returns v.
func (v *JobVertex) WithOperatorCoordinator(name string, config []byte) *JobVertex {
	v.OperatorCoordinator, v.OperatorCoordinatorConfig = name, config
	return v
}

// TopologicalOrder returns the vertices so that every producer comes before its consumers; among
// vertices that are free to go next, insertion order decides, so the result is deterministic.
// It returns a *ValidationError (RuleCycle, or RuleDanglingEdge for an input whose data set no
// vertex produces; RuleNilGraph, RuleNilEntry for nil parts) when there is no such order.
func (g *JobGraph) TopologicalOrder() ([]*JobVertex, error) {
	if err := g.checkNil(); err != nil {
		return nil, err
	}
	producers := g.Producers()
	index := make(map[*JobVertex]int, len(g.Vertices))
	for i, v := range g.Vertices {
		index[v] = i
	}
	indegree := make([]int, len(g.Vertices))
	consumers := make([][]int, len(g.Vertices))
	for i, v := range g.Vertices {
		for _, e := range v.Inputs {
			p, ok := producers[e.Source]
			if !ok {
				return nil, &ValidationError{Rule: RuleDanglingEdge, Vertex: v.ID, VertexName: v.Name, DataSet: e.Source,
					Detail: "input reads data set " + e.Source.String() + ", which no vertex of the graph produces (is its producer a vertex of another graph?)"}
			}
			indegree[i]++
			consumers[index[p]] = append(consumers[index[p]], i)
		}
	}
	// Kahn's algorithm; ready holds vertex indexes in ascending (insertion) order, so the next
	// vertex is always the earliest-inserted of those free to go.
	order := make([]*JobVertex, 0, len(g.Vertices))
	ready := make([]int, 0, len(g.Vertices))
	for i := range g.Vertices {
		if indegree[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		order = append(order, g.Vertices[i])
		for _, c := range consumers[i] {
			if indegree[c]--; indegree[c] == 0 {
				j, _ := slices.BinarySearch(ready, c)
				ready = slices.Insert(ready, j, c)
			}
		}
	}
	if len(order) < len(g.Vertices) {
		// Every vertex left has a producer that is left too; walking from one to a producer of it
		// must come back to a vertex already seen, and that vertex lies on a cycle.
		seen := make(map[int]bool)
		i := slices.IndexFunc(indegree, func(d int) bool { return d > 0 })
		for !seen[i] {
			seen[i] = true
			for _, e := range g.Vertices[i].Inputs {
				if p := index[producers[e.Source]]; indegree[p] > 0 {
					i = p
					break
				}
			}
		}
		v := g.Vertices[i]
		return nil, &ValidationError{Rule: RuleCycle, Vertex: v.ID, VertexName: v.Name,
			Detail: "the vertex lies on a cycle; a job graph must be acyclic"}
	}
	return order, nil
}
