package executiongraph

import (
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// ErrIllegalTransition matches (errors.Is) every error returned for a state change the state
// machines do not allow: a job status or execution state transition missing from jobgraph's
// tables, a job transition whose expected current status is not the current one, or a reset of a
// vertex whose current execution is not terminal.
var ErrIllegalTransition = errors.New("illegal state transition")

func init() { jobgraph.RegisterErrorCode("executiongraph.illegal-transition", ErrIllegalTransition) }

// numJobStatuses is the number of jobgraph.JobStatus values; per-status arrays are this long.
const numJobStatuses = jobgraph.NumJobStatuses

// The sets of statuses and states reached are uint16 bit masks.
var (
	_ [16 - numJobStatuses]struct{}
	_ [16 - jobgraph.NumExecutionStates]struct{}
)

// DefaultMaxPriorAttempts is how many earlier attempts each ExecutionVertex keeps (Flink's
// jobmanager.execution.attempts-history-size, default 16).
const DefaultMaxPriorAttempts = 16

// Option configures Build.
type Option func(*options)

type options struct {
	clock            func() time.Time
	graphID          jobgraph.ExecutionGraphID
	maxPriorAttempts int
}

// WithClock sets the clock that stamps job status and execution state changes (default
// time.Now). A nil clock is ignored. Tests pass a fake clock, or rely on testing/synctest.
func WithClock(clock func() time.Time) Option {
	return func(o *options) {
		if clock != nil {
			o.clock = clock
		}
	}
}

// WithExecutionGraphID fixes the ExecutionGraphID (default: a new random one). A zero ID is
// ignored. Meant for tests that compare attempt IDs.
func WithExecutionGraphID(id jobgraph.ExecutionGraphID) Option {
	return func(o *options) {
		if !id.IsZero() {
			o.graphID = id
		}
	}
}

// WithMaxPriorAttempts sets how many earlier attempts each ExecutionVertex keeps for lookups and
// history (Flink's jobmanager.execution.attempts-history-size, default 16). The oldest is
// dropped first; n ≤ 0 keeps none. The count of prior attempts is always exact.
func WithMaxPriorAttempts(n int) Option {
	return func(o *options) { o.maxPriorAttempts = max(n, 0) }
}

// ExecutionGraph is the parallel form of one JobGraph, as one JobMaster runs it: job vertices in
// topological order, each with its subtasks; intermediate results with their partitions; the
// groups that connect them; the pipelined regions; the job status with a timestamp per status
// reached; the failure cause. Flink: org.apache.flink.runtime.executiongraph.DefaultExecutionGraph.
//
// It is driven only from its JobMaster's main loop (no locks, no goroutines, no I/O).
// The zero value is not usable; call Build.
type ExecutionGraph struct {
	jobGraph         *jobgraph.JobGraph
	id               jobgraph.ExecutionGraphID
	clock            func() time.Time
	maxPriorAttempts int

	state       jobgraph.JobStatus
	reached     uint16                // bit s set: status s was reached
	stateTimes  [numJobStatuses]int64 // unix nanoseconds of the latest entry into each status
	failure     error
	failureTime int64 // unix nanoseconds
	// exceptions is the scheduler's exception history (see SetExceptionHistory), oldest first.
	exceptions []jobgraph.ExceptionHistoryEntry
	// checkpointStats gives the checkpoint statistics of Archive (see SetCheckpointStatistics).
	checkpointStats func() *checkpoint.CheckpointingStatistics
	// accumulators caches AggregateUserAccumulators (see accumulatorsChanged).
	accumulators accumulatorCache

	jobVertices   []*ExecutionJobVertex // topological order
	jobVertexByID map[jobgraph.JobVertexID]*ExecutionJobVertex
	results       []*IntermediateResult // in the order their producers appear, then output order
	resultByID    map[jobgraph.IntermediateDataSetID]*IntermediateResult

	numVertices int // subtasks over all job vertices
	numGroups   int // ConsumedPartitionGroups over all edges
	numFinished int // vertices whose current execution is FINISHED

	regions *regionSet
}

// Build expands g into an ExecutionGraph in status CREATED, with its pipelined regions.
//
// It validates g first and returns Validate's *jobgraph.ValidationError unchanged (errors.Is
// matches jobgraph.ErrInvalidJobGraph); a nil g is reported as a ValidationError too. Job vertices
// are built in g.TopologicalOrder(). Build keeps pointers to g's vertices (for names, task code
// and settings): g must not change afterwards, as for any submitted JobGraph.
//
// Cost: O(vertices + subtasks + partitions + edges) time and memory; an ALL_TO_ALL edge between
// P producer and C consumer subtasks costs O(P + C).
func Build(g *jobgraph.JobGraph, opts ...Option) (*ExecutionGraph, error) {
	if err := g.Validate(); err != nil { // RuleNilGraph for a nil g
		return nil, err
	}
	order, err := g.TopologicalOrder()
	if err != nil {
		return nil, err
	}
	o := options{clock: time.Now, maxPriorAttempts: DefaultMaxPriorAttempts}
	for _, opt := range opts {
		opt(&o)
	}
	if o.graphID.IsZero() {
		o.graphID = jobgraph.NewExecutionGraphID()
	}
	eg := &ExecutionGraph{
		jobGraph:         g,
		id:               o.graphID,
		clock:            o.clock,
		maxPriorAttempts: o.maxPriorAttempts,
		state:            jobgraph.JobStatusCreated,
		jobVertices:      make([]*ExecutionJobVertex, 0, len(order)),
		jobVertexByID:    make(map[jobgraph.JobVertexID]*ExecutionJobVertex, len(order)),
		resultByID:       make(map[jobgraph.IntermediateDataSetID]*IntermediateResult),
	}
	now := eg.now()
	eg.markStatus(jobgraph.JobStatusCreated, now)

	// How many edges read each data set (a partition keeps one consumer group per edge), and
	// whether one of them is POINTWISE (else every partition has the same groups).
	consumingEdges := make(map[jobgraph.IntermediateDataSetID]edgeCount)
	for _, v := range order {
		for _, e := range v.Inputs {
			c := consumingEdges[e.Source]
			c.edges++
			c.pointwise = c.pointwise || e.DistributionPattern != jobgraph.AllToAll
			consumingEdges[e.Source] = c
		}
	}

	for topo, v := range order {
		ejv := newExecutionJobVertex(eg, v, topo, eg.numVertices, now)
		eg.numVertices += v.Parallelism
		eg.jobVertices = append(eg.jobVertices, ejv)
		eg.jobVertexByID[v.ID] = ejv
		for out, ds := range v.Results {
			r := newIntermediateResult(ejv, ds, out, consumingEdges[ds.ID])
			ejv.produced = append(ejv.produced, r)
			eg.results = append(eg.results, r)
			eg.resultByID[ds.ID] = r
		}
		ejv.linkProducedPartitions()
		for in, e := range v.Inputs {
			// Validate guarantees the producer exists; topological order built it already.
			ejv.connect(in, eg.resultByID[e.Source], e.DistributionPattern)
		}
	}
	eg.computeRegions()
	return eg, nil
}

// edgeCount is how many edges read a data set and whether any of them is POINTWISE.
type edgeCount struct {
	edges     int
	pointwise bool
}

func (g *ExecutionGraph) now() int64 { return g.clock().UnixNano() }

func (g *ExecutionGraph) markStatus(s jobgraph.JobStatus, at int64) {
	g.reached |= 1 << s
	g.stateTimes[s] = at
}

// ID is this graph's ExecutionGraphID; every ExecutionAttemptID of the graph carries it.
func (g *ExecutionGraph) ID() jobgraph.ExecutionGraphID { return g.id }

// JobID is the ID of the job the graph runs.
func (g *ExecutionGraph) JobID() jobgraph.JobID { return g.jobGraph.JobID }

// JobName is the job's name.
func (g *ExecutionGraph) JobName() string { return g.jobGraph.Name }

// JobType is STREAMING or BATCH.
func (g *ExecutionGraph) JobType() jobgraph.JobType { return g.jobGraph.Type }

// JobGraph is the graph Build expanded. It must not be modified.
func (g *ExecutionGraph) JobGraph() *jobgraph.JobGraph { return g.jobGraph }

// State is the job's current status; CREATED after Build.
func (g *ExecutionGraph) State() jobgraph.JobStatus { return g.state }

// TransitionState moves the job from status from to status to and stamps to with the clock.
// It returns an error matching ErrIllegalTransition, and changes nothing, when the current
// status is not from or when jobgraph does not allow from → to (see jobgraph.JobStatusTransitions).
// Flink: DefaultExecutionGraph.transitionState, which returns false where this returns an error.
func (g *ExecutionGraph) TransitionState(from, to jobgraph.JobStatus) error {
	if g.state != from {
		return fmt.Errorf("executiongraph: job %q (%s): cannot go from %s to %s: the job is %s: %w",
			g.JobName(), g.JobID(), from, to, g.state, ErrIllegalTransition)
	}
	if !from.CanTransitionTo(to) {
		return fmt.Errorf("executiongraph: job %q (%s): %w from %s to %s",
			g.JobName(), g.JobID(), ErrIllegalTransition, from, to)
	}
	g.state = to
	g.markStatus(to, g.now())
	return nil
}

// StatusTimestamp is when the job last entered status s, or the zero time if it never did.
// Times are in UTC with nanosecond precision. Flink: ExecutionGraph.getStatusTimestamp.
func (g *ExecutionGraph) StatusTimestamp(s jobgraph.JobStatus) time.Time {
	if int(s) >= numJobStatuses || g.reached&(1<<s) == 0 {
		return time.Time{}
	}
	return time.Unix(0, g.stateTimes[s]).UTC()
}

// SetFailureCause records err as the job's failure cause, stamped with the clock; nil clears it.
// Flink: DefaultExecutionGraph.failureCause / failureInfo.
func (g *ExecutionGraph) SetFailureCause(err error) {
	g.failure = err
	g.failureTime = 0
	if err != nil {
		g.failureTime = g.now()
	}
}

// FailureCause is the error SetFailureCause recorded, or nil.
func (g *ExecutionGraph) FailureCause() error { return g.failure }

// FailureInfo is the failure cause as message and time, or nil when there is none.
func (g *ExecutionGraph) FailureInfo() *jobgraph.ErrorInfo {
	if g.failure == nil {
		return nil
	}
	return jobgraph.NewErrorInfo(g.failure, time.Unix(0, g.failureTime).UTC())
}

// JobVertices are the job vertices in topological order (producers before consumers; ties by
// insertion order, as jobgraph.JobGraph.TopologicalOrder). The slice must not be modified.
func (g *ExecutionGraph) JobVertices() []*ExecutionJobVertex { return g.jobVertices }

// JobVertex is the job vertex with the given ID, or nil.
func (g *ExecutionGraph) JobVertex(id jobgraph.JobVertexID) *ExecutionJobVertex {
	return g.jobVertexByID[id]
}

// Vertex is the subtask with the given ID, or nil if the job vertex is unknown or the subtask
// index out of range.
func (g *ExecutionGraph) Vertex(id jobgraph.ExecutionVertexID) *ExecutionVertex {
	jv := g.jobVertexByID[id.JobVertexID]
	if jv == nil || id.Subtask < 0 || id.Subtask >= len(jv.vertices) {
		return nil
	}
	return &jv.vertices[id.Subtask]
}

// Vertices yields every subtask in topological order: job vertex by job vertex, subtasks in
// index order. The position of a vertex in this sequence is its Index.
func (g *ExecutionGraph) Vertices() iter.Seq[*ExecutionVertex] {
	return func(yield func(*ExecutionVertex) bool) {
		for _, jv := range g.jobVertices {
			for i := range jv.vertices {
				if !yield(&jv.vertices[i]) {
					return
				}
			}
		}
	}
}

// NumVertices is the number of subtasks over all job vertices.
func (g *ExecutionGraph) NumVertices() int { return g.numVertices }

// NumConsumedPartitionGroups is the number of ConsumedPartitionGroups (and of
// ConsumerVertexGroups: they come in pairs) over all edges; ConsumedPartitionGroup.Index is below it.
func (g *ExecutionGraph) NumConsumedPartitionGroups() int { return g.numGroups }

// NumFinishedVertices is the number of subtasks whose current execution is FINISHED. It is kept
// up to date by transitions and resets, in O(1).
func (g *ExecutionGraph) NumFinishedVertices() int { return g.numFinished }

// AllVerticesFinished reports whether every subtask's current execution is FINISHED: the moment
// the scheduler moves the job from RUNNING to FINISHED. (Flink's DefaultExecutionGraph makes
// that transition itself; here the caller does, so that every job status change is explicit.)
func (g *ExecutionGraph) AllVerticesFinished() bool { return g.numFinished == g.numVertices }

// Execution is the attempt with the given ID, or nil: when the ID belongs to another
// ExecutionGraph, names an unknown vertex, or names an attempt that is neither the vertex's
// current one nor among the prior attempts it keeps (see WithMaxPriorAttempts). It looks the
// vertex up by job vertex and subtask index; no global map of attempts exists.
func (g *ExecutionGraph) Execution(id jobgraph.ExecutionAttemptID) *Execution {
	if id.ExecutionGraphID != g.id {
		return nil
	}
	v := g.Vertex(id.ExecutionVertexID)
	if v == nil {
		return nil
	}
	return v.Execution(id.AttemptNumber)
}

// Results are the intermediate results, grouped by producer in topological order, then in
// output order. The slice must not be modified.
func (g *ExecutionGraph) Results() []*IntermediateResult { return g.results }

// Result is the intermediate result built from the data set with the given ID, or nil.
func (g *ExecutionGraph) Result(id jobgraph.IntermediateDataSetID) *IntermediateResult {
	return g.resultByID[id]
}

// Partition is the partition with the given ID, or nil.
func (g *ExecutionGraph) Partition(id jobgraph.IntermediateResultPartitionID) *IntermediateResultPartition {
	r := g.resultByID[id.IntermediateDataSetID]
	if r == nil || id.PartitionIndex < 0 || id.PartitionIndex >= len(r.partitions) {
		return nil
	}
	return &r.partitions[id.PartitionIndex]
}

// Regions are the pipelined regions, ordered by their first vertex in topological order (so
// deterministic for a given JobGraph). The slice must not be modified.
func (g *ExecutionGraph) Regions() []*PipelinedRegion { return g.regions.ptrs }

// RegionOf is the pipelined region of the subtask with the given ID, or nil for an unknown ID.
func (g *ExecutionGraph) RegionOf(id jobgraph.ExecutionVertexID) *PipelinedRegion {
	if v := g.Vertex(id); v != nil {
		return v.Region()
	}
	return nil
}
