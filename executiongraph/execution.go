package executiongraph

import (
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
)

// Execution is one attempt to run one subtask: its attempt number, its state with the time it
// entered each state, its failure and the slot it was given. Its state machine is jobgraph's
// ExecutionState table; TransitionState refuses anything else.
// Flink: org.apache.flink.runtime.executiongraph.Execution.
type Execution struct {
	jobVertex  *ExecutionJobVertex
	subtask    int32 // the vertex is jobVertex.vertices[subtask]
	attempt    int32
	state      jobgraph.ExecutionState
	reached    uint16 // bit s set: state s was reached
	superseded bool   // a reset replaced it: no longer current
	created    int64  // unix nanoseconds of entry into CREATED
	// times holds the entry times of the states after CREATED (unix nanoseconds), nil until the
	// first transition: a first attempt's are in its job vertex's timesSlab, made when the first
	// of its subtasks leaves CREATED, so a graph just built is 88 bytes a subtask and a job
	// vertex's slab of 10,000 fits the core's 1 MiB cache (with the times inline, 144 bytes at
	// 92ff6c9: BuildExecutionGraph/batch-10000 took twice as long); a later attempt's are
	// allocated with it.
	times *stateTimes
	// extra holds what only some attempts have: the failure cause, the accumulators and, in a
	// vertex's first attempt, the earlier attempts the vertex keeps. Nil until one of them is
	// set, so the attempts a graph is built with carry one pointer for all (each pointer-typed
	// word of the graph's slabs costs the garbage collector a load per cycle, nil or not).
	extra *executionExtra

	// ResourceID is the TaskExecutor the attempt was deployed to; set by the scheduler.
	ResourceID jobgraph.ResourceID
	// AllocationID is the slot the attempt runs in; set by the scheduler.
	AllocationID jobgraph.AllocationID
}

// executionExtra is what only some attempts have.
type executionExtra struct {
	failure error
	// accumulators is the newest snapshot of the attempt's accumulators (SetAccumulators).
	accumulators map[string]jobgraph.SerializedAccumulator
	// prior, in a vertex's first attempt, are the vertex's earlier attempts still kept, oldest
	// first, at most graph.maxPriorAttempts (ExecutionVertex.PriorExecutions).
	prior []*Execution
}

// failure is the recorded failure cause, or nil.
func (e *Execution) failure() error {
	if e.extra == nil {
		return nil
	}
	return e.extra.failure
}

// accumulators is the newest accumulator snapshot, or nil.
func (e *Execution) accumulators() map[string]jobgraph.SerializedAccumulator {
	if e.extra == nil {
		return nil
	}
	return e.extra.accumulators
}

func (e *Execution) setExtra() *executionExtra {
	if e.extra == nil {
		e.extra = new(executionExtra)
	}
	return e.extra
}

// stateTimes are an attempt's entry times, indexed by state (CREATED's is Execution.created).
type stateTimes [jobgraph.NumExecutionStates]int64

func (e *Execution) mark(s jobgraph.ExecutionState, at int64) {
	e.reached |= 1 << s
	if s == jobgraph.ExecutionStateCreated {
		e.created = at
		return
	}
	if e.times == nil {
		e.times = e.jobVertex.firstAttemptTimes(e.subtask)
	}
	e.times[s] = at
}

// AttemptID is the ExecutionAttemptID: graph ID, vertex ID and attempt number.
func (e *Execution) AttemptID() jobgraph.ExecutionAttemptID {
	return jobgraph.ExecutionAttemptID{
		ExecutionGraphID:  e.jobVertex.graph.id,
		ExecutionVertexID: e.Vertex().ID(),
		AttemptNumber:     int(e.attempt),
	}
}

// AttemptNumber is 0 for the first attempt of the vertex, n for the attempt after n resets.
func (e *Execution) AttemptNumber() int { return int(e.attempt) }

// Vertex is the subtask this attempt runs.
func (e *Execution) Vertex() *ExecutionVertex { return &e.jobVertex.vertices[e.subtask] }

// IsCurrent reports whether this is its vertex's current attempt (not a prior one).
func (e *Execution) IsCurrent() bool { return !e.superseded }

// State is the attempt's state.
func (e *Execution) State() jobgraph.ExecutionState { return e.state }

// StateTimestamp is when the attempt entered state s, or the zero time if it never did; UTC,
// nanosecond precision. Flink: Execution.getStateTimestamp.
func (e *Execution) StateTimestamp(s jobgraph.ExecutionState) time.Time {
	if int(s) >= jobgraph.NumExecutionStates || e.reached&(1<<s) == 0 {
		return time.Time{}
	}
	if s == jobgraph.ExecutionStateCreated {
		return time.Unix(0, e.created).UTC()
	}
	return time.Unix(0, e.times[s]).UTC()
}

// FailureCause is the error MarkFailed recorded, or nil.
func (e *Execution) FailureCause() error { return e.failure() }

// FailureInfo is the failure as message and time (of entering FAILED), or nil.
func (e *Execution) FailureInfo() *jobgraph.ErrorInfo {
	err := e.failure()
	if err == nil {
		return nil
	}
	return jobgraph.NewErrorInfo(err, e.StateTimestamp(jobgraph.ExecutionStateFailed))
}

func (e *Execution) String() string {
	return fmt.Sprintf("%s attempt #%d (%s)", e.Vertex().Name(), e.attempt, e.AttemptID())
}

// TransitionState moves the attempt to state to, stamped with the graph's clock. Any transition
// missing from jobgraph's ExecutionState table (see jobgraph.ExecutionStateTransitions) is an
// error matching ErrIllegalTransition naming the execution, from and to, and changes nothing.
// A transition keeps the graph's counters consistent: per-state counts of the job vertex, the
// graph's finished count, and — on FINISHED — the finished flags of the vertex's partitions
// whose result type is not pipelined, with their groups' unfinished counters.
// Flink: Execution.transitionState.
func (e *Execution) TransitionState(to jobgraph.ExecutionState) error {
	from := e.state
	if !from.CanTransitionTo(to) {
		return fmt.Errorf("executiongraph: execution %s: %w from %s to %s", e, ErrIllegalTransition, from, to)
	}
	jv := e.jobVertex
	jv.stateCounts[from]--
	jv.stateCounts[to]++
	e.state = to
	e.mark(to, jv.graph.now())
	if to == jobgraph.ExecutionStateFinished {
		jv.graph.numFinished++
		for _, p := range e.Vertex().ProducedPartitions() {
			p.markFinished()
		}
	}
	return nil
}

// MarkFinished moves the attempt to FINISHED (from RUNNING, or RECONCILING); see TransitionState.
// Flink: Execution.markFinished.
func (e *Execution) MarkFinished() error { return e.TransitionState(jobgraph.ExecutionStateFinished) }

// MarkFailed records err as the attempt's failure cause and moves it to FAILED. From a state
// that cannot fail (a terminal one) it returns the TransitionState error and records nothing.
// Flink: Execution.markFailed.
func (e *Execution) MarkFailed(err error) error {
	if !e.state.CanTransitionTo(jobgraph.ExecutionStateFailed) {
		return e.TransitionState(jobgraph.ExecutionStateFailed)
	}
	e.setExtra().failure = err
	return e.TransitionState(jobgraph.ExecutionStateFailed)
}

// Cancel starts canceling the attempt, as Flink's Execution.cancel does, and returns the state
// it is in afterwards:
//
//   - CREATED, SCHEDULED: nothing was deployed, so it goes straight to CANCELED;
//   - DEPLOYING, INITIALIZING, RUNNING, RECONCILING: it goes to CANCELING, and the caller must
//     ask the TaskExecutor to cancel the task (which later reports CANCELED);
//   - CANCELING and terminal states: nothing changes.
func (e *Execution) Cancel() jobgraph.ExecutionState {
	var to jobgraph.ExecutionState
	switch e.state {
	case jobgraph.ExecutionStateCreated, jobgraph.ExecutionStateScheduled:
		to = jobgraph.ExecutionStateCanceled
	case jobgraph.ExecutionStateDeploying, jobgraph.ExecutionStateInitializing,
		jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateReconciling:
		to = jobgraph.ExecutionStateCanceling
	default:
		return e.state
	}
	if err := e.TransitionState(to); err != nil {
		panic("executiongraph: broken invariant: " + err.Error())
	}
	return e.state
}

// SetAccumulators records accs as the newest snapshot of the attempt's accumulators, from a
// heartbeat or with the attempt's final state, and reports whether it did: a terminal attempt
// keeps what it has, so a heartbeat that arrives after the final state cannot replace it. The
// attempt keeps accs itself and only reads it. Flink: Execution.setAccumulators.
func (e *Execution) SetAccumulators(accs map[string]jobgraph.SerializedAccumulator) bool {
	if e.state.IsTerminal() {
		return false
	}
	if accs != nil || e.extra != nil {
		e.setExtra().accumulators = accs
	}
	if e.IsCurrent() {
		e.jobVertex.graph.accumulatorsChanged()
	}
	return true
}

// UserAccumulators is the attempt's newest accumulator snapshot, nil before the first; the
// caller must not modify it. Flink: Execution.getUserAccumulators.
func (e *Execution) UserAccumulators() map[string]jobgraph.SerializedAccumulator {
	return e.accumulators()
}
