package executiongraph

import (
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// ArchivedExecutionGraph is an immutable snapshot of an ExecutionGraph for history, results
// and the REST-style views: the job's status with its timestamps, the failure cause, and per job
// vertex and subtask the state, attempt, timestamps, failure and location. It shares nothing
// with the live graph, so later changes there do not show here. It encodes to JSON (and back)
// with encoding/json; map keys are Flink's status and state names.
// Flink: org.apache.flink.runtime.executiongraph.ArchivedExecutionGraph.
type ArchivedExecutionGraph struct {
	JobID            jobgraph.JobID            `json:"jobId"`
	JobName          string                    `json:"jobName"`
	JobType          jobgraph.JobType          `json:"jobType"`
	ExecutionGraphID jobgraph.ExecutionGraphID `json:"executionGraphId"`
	Status           jobgraph.JobStatus        `json:"status"`
	// StatusTimestamps holds when the job last entered each status it reached (only those).
	StatusTimestamps map[jobgraph.JobStatus]time.Time `json:"statusTimestamps"`
	// FailureCause is the job's failure cause, if any.
	FailureCause *jobgraph.ErrorInfo `json:"failureCause,omitempty"`
	// JobVertices in topological order.
	JobVertices []ArchivedExecutionJobVertex `json:"jobVertices"`
	// ExceptionHistory is the job's exception history as the scheduler last set it
	// (SetExceptionHistory), oldest first; each entry groups the failures of one restart.
	// Flink: the exception history of the REST API (JobExceptionsInfoWithHistory).
	ExceptionHistory []jobgraph.ExceptionHistoryEntry `json:"exceptionHistory,omitempty"`
	// Accumulators are the job's accumulators by name, merged from the newest snapshot of every
	// subtask's current attempt (AggregateUserAccumulators); nil when there are none. Read one
	// with jobgraph.AccumulatorValue. Flink: ArchivedExecutionGraph's serialized user accumulators.
	Accumulators map[string]jobgraph.SerializedAccumulator `json:"accumulators,omitempty"`
	// CheckpointStatistics are the job's checkpoint statistics as its CheckpointCoordinator
	// keeps them, in the shape of Flink's REST /jobs/:jobid/checkpoints response; nil for a job
	// that takes no checkpoints. Flink: ArchivedExecutionGraph.getCheckpointStatsSnapshot.
	CheckpointStatistics *checkpoint.CheckpointingStatistics `json:"checkpointStatistics,omitempty"`
	// Checkpointing is the job's CheckpointingSettings as submitted (a copy), the zero value for
	// a job without checkpoints and in a sparse archive. Flink: ArchivedExecutionGraph's
	// CheckpointCoordinatorConfiguration (REST /jobs/:jobid/checkpoints/config).
	Checkpointing jobgraph.CheckpointingSettings `json:"checkpointing,omitzero"`
}

// ArchivedJobEdge is one input edge of an archived job vertex: what Flink's JSON plan (REST
// /jobs/:jobid/plan) lists as a node's input.
type ArchivedJobEdge struct {
	// Source is the producing job vertex.
	Source jobgraph.JobVertexID `json:"source"`
	// DistributionPattern and ShipStrategy are the JobEdge's; ShipStrategy is empty unless the
	// graph named one (Flink's plan writes its partitioner's name, FORWARD, HASH, …).
	DistributionPattern jobgraph.DistributionPattern `json:"distributionPattern"`
	ShipStrategy        string                       `json:"shipStrategy,omitempty"`
	// ResultType is the type of the intermediate result read (Flink's plan: its exchange mode).
	ResultType jobgraph.ResultPartitionType `json:"resultType"`
}

// SetCheckpointStatistics gives the graph the source of the checkpoint statistics every Archive
// carries (nil: none). The scheduler sets it when it creates the job's CheckpointCoordinator;
// stats is called on the graph's goroutine, once per Archive, and must return a value the
// archive may keep (a snapshot).
func (g *ExecutionGraph) SetCheckpointStatistics(stats func() *checkpoint.CheckpointingStatistics) {
	g.checkpointStats = stats
}

// SetExceptionHistory records the job's exception history, oldest first, for Archive. The graph
// keeps h itself, not a copy, and only reads it (Archive copies it); the scheduler, which owns
// the history, calls this again whenever it changed. Flink keeps the history in the scheduler
// and adds it when it archives the graph.
func (g *ExecutionGraph) SetExceptionHistory(h []jobgraph.ExceptionHistoryEntry) { g.exceptions = h }

// ArchivedExecutionJobVertex is one job vertex of an ArchivedExecutionGraph.
// Flink: ArchivedExecutionJobVertex.
type ArchivedExecutionJobVertex struct {
	ID             jobgraph.JobVertexID `json:"id"`
	Name           string               `json:"name"`
	Parallelism    int                  `json:"parallelism"`
	MaxParallelism int                  `json:"maxParallelism"`
	// AggregateState summarises the subtasks' states (see ExecutionJobVertex.AggregateState).
	AggregateState jobgraph.ExecutionState `json:"aggregateState"`
	// StateCounts is the number of subtasks per state, with every state present (Flink's
	// tasks-per-state / status-counts).
	StateCounts map[jobgraph.ExecutionState]int `json:"stateCounts"`
	// Subtasks in index order.
	Subtasks []ArchivedExecutionVertex `json:"subtasks"`
	// Inputs are the vertex's input edges in input order; empty for a source.
	Inputs []ArchivedJobEdge `json:"inputs,omitempty"`
}

// ArchivedExecutionVertex is one subtask's current attempt in an ArchivedExecutionGraph.
// Flink: ArchivedExecutionVertex with its current ArchivedExecution.
type ArchivedExecutionVertex struct {
	Subtask       int                     `json:"subtask"`
	State         jobgraph.ExecutionState `json:"state"`
	AttemptNumber int                     `json:"attemptNumber"`
	// StateTimestamps holds when the attempt entered each state it reached (only those).
	StateTimestamps map[jobgraph.ExecutionState]time.Time `json:"stateTimestamps"`
	// FailureMessage is the attempt's failure cause (err.Error()), if it failed with one.
	FailureMessage string `json:"failureMessage,omitempty"`
	// Location is the TaskExecutor the attempt was deployed to, if any.
	Location jobgraph.ResourceID `json:"location,omitempty"`
}

// Archive returns a snapshot of the graph as it is now. It copies everything it holds, in time
// and memory linear in the number of subtasks (plus the exception history's entries and the
// accumulator snapshots, which it merges). Flink: ArchivedExecutionGraph.createFrom.
func (g *ExecutionGraph) Archive() *ArchivedExecutionGraph {
	a := &ArchivedExecutionGraph{
		JobID:            g.JobID(),
		JobName:          g.JobName(),
		JobType:          g.JobType(),
		ExecutionGraphID: g.id,
		Status:           g.state,
		StatusTimestamps: make(map[jobgraph.JobStatus]time.Time),
		FailureCause:     g.FailureInfo(),
		JobVertices:      make([]ArchivedExecutionJobVertex, len(g.jobVertices)),
		ExceptionHistory: jobgraph.CloneExceptionHistory(g.exceptions),
		Accumulators:     g.AggregateUserAccumulators(),
	}
	if g.jobGraph.Checkpointing.Enabled() {
		a.Checkpointing = g.jobGraph.Checkpointing
	}
	if g.checkpointStats != nil {
		a.CheckpointStatistics = g.checkpointStats()
	}
	for s := range jobgraph.JobStatus(numJobStatuses) {
		if g.reached&(1<<s) != 0 {
			a.StatusTimestamps[s] = g.StatusTimestamp(s)
		}
	}
	for i, jv := range g.jobVertices {
		av := ArchivedExecutionJobVertex{
			ID:             jv.ID(),
			Name:           jv.Name(),
			Parallelism:    jv.Parallelism(),
			MaxParallelism: jv.maxPar,
			AggregateState: jv.AggregateState(),
			StateCounts:    make(map[jobgraph.ExecutionState]int, jobgraph.NumExecutionStates),
			Subtasks:       make([]ArchivedExecutionVertex, len(jv.vertices)),
		}
		if n := len(jv.inputs); n > 0 {
			av.Inputs = make([]ArchivedJobEdge, n)
			for k := range jv.inputs {
				in := &jv.inputs[k]
				av.Inputs[k] = ArchivedJobEdge{Source: in.result.producer.ID(), DistributionPattern: in.pattern,
					ResultType: in.result.resultType}
				if k < len(jv.jobVertex.Inputs) {
					av.Inputs[k].ShipStrategy = jv.jobVertex.Inputs[k].ShipStrategy
				}
			}
		}
		for s := range jobgraph.ExecutionState(jobgraph.NumExecutionStates) {
			av.StateCounts[s] = int(jv.stateCounts[s])
		}
		for k := range jv.vertices {
			e := jv.vertices[k].CurrentExecution()
			sub := ArchivedExecutionVertex{
				Subtask:         k,
				State:           e.state,
				AttemptNumber:   int(e.attempt),
				StateTimestamps: make(map[jobgraph.ExecutionState]time.Time),
				Location:        e.ResourceID,
			}
			for s := range jobgraph.ExecutionState(jobgraph.NumExecutionStates) {
				if e.reached&(1<<s) != 0 {
					sub.StateTimestamps[s] = e.StateTimestamp(s)
				}
			}
			if err := e.failure(); err != nil {
				sub.FailureMessage = err.Error()
			}
			av.Subtasks[k] = sub
		}
		a.JobVertices[i] = av
	}
	return a
}

// JobVertex is the archived job vertex with the given ID, or nil.
func (a *ArchivedExecutionGraph) JobVertex(id jobgraph.JobVertexID) *ArchivedExecutionJobVertex {
	for i := range a.JobVertices {
		if a.JobVertices[i].ID == id {
			return &a.JobVertices[i]
		}
	}
	return nil
}

// AggregateUserAccumulators merges the newest accumulator snapshot of every subtask's current
// attempt, job vertices in topological order and subtasks in index order, into one result per
// name (jobgraph.MergeAccumulators: a name used with two types, say, fails alone). Attempts a
// restart superseded do not count: their values are the ones a new attempt computes again.
// nil when no attempt reported any; the caller owns the map returned. It decodes and merges every
// snapshot, in time linear in the subtasks and the snapshots' size, when a current attempt's
// snapshot changed since the last call; otherwise it copies the last result.
// Flink: DefaultExecutionGraph.aggregateUserAccumulators.
func (g *ExecutionGraph) AggregateUserAccumulators() map[string]jobgraph.SerializedAccumulator {
	c := &g.accumulators
	if !c.valid {
		var snaps []map[string]jobgraph.SerializedAccumulator
		for _, jv := range g.jobVertices {
			for k := range jv.vertices {
				if accs := jv.vertices[k].CurrentExecution().accumulators(); len(accs) > 0 {
					snaps = append(snaps, accs)
				}
			}
		}
		c.merged, c.valid = jobgraph.MergeAccumulators(snaps...), true
	}
	return jobgraph.CloneAccumulators(c.merged)
}

// accumulatorCache is the last AggregateUserAccumulators result, valid until a current attempt's
// snapshot changes (a new one, or a reset vertex whose old attempt had one).
type accumulatorCache struct {
	merged map[string]jobgraph.SerializedAccumulator
	valid  bool
}

// accumulatorsChanged drops the cached aggregate.
func (g *ExecutionGraph) accumulatorsChanged() { g.accumulators = accumulatorCache{} }
