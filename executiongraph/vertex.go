package executiongraph

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jobgraph/jobgraph"
)

// ExecutionVertex is one subtask of a job vertex: its current Execution (attempt), a bounded
// history of earlier attempts, the partition groups it reads (one per input edge), the partitions
// it writes (one per produced result) and its pipelined region.
// Flink: org.apache.flink.runtime.executiongraph.ExecutionVertex.
type ExecutionVertex struct {
	// first is attempt 0, allocated with the vertex: one slab per job vertex holds its subtasks,
	// which are their first attempts. It also says which job vertex and subtask this is
	// (first.jobVertex, first.subtask), for the vertex and every later attempt alike, and its
	// extra holds the earlier attempts kept once the vertex was reset (first.extra.prior). The
	// garbage collector reads every pointer-typed word of that slab in each cycle, nil or not,
	// so a subtask of a graph just built costs it five words: the job vertex, the state times,
	// the extra, the ResourceID and current (all but the first nil or empty).
	first Execution
	// current is the current attempt once the vertex was reset, nil while it is first (read on
	// every lookup of the current attempt, so kept in the vertex rather than behind extra).
	current *Execution
}

// firstReset is what a vertex's first reset allocates: its second attempt with its state times
// and, if the first attempt had none, the first attempt's extra that keeps the earlier attempts.
type firstReset struct {
	execution Execution
	times     stateTimes
	extra     executionExtra
}

// laterAttempt is an attempt after the second, with its state times.
type laterAttempt struct {
	execution Execution
	times     stateTimes
}

// ID is the ExecutionVertexID: job vertex ID and subtask index.
func (v *ExecutionVertex) ID() jobgraph.ExecutionVertexID {
	return jobgraph.ExecutionVertexID{JobVertexID: v.first.jobVertex.jobVertex.ID, Subtask: int(v.first.subtask)}
}

// JobVertex is the job vertex this subtask belongs to.
func (v *ExecutionVertex) JobVertex() *ExecutionJobVertex { return v.first.jobVertex }

// SubtaskIndex is the subtask's index, 0 ≤ index < parallelism.
func (v *ExecutionVertex) SubtaskIndex() int { return int(v.first.subtask) }

// Index is the vertex's position in ExecutionGraph.Vertices (topological order), a dense
// index in [0, NumVertices) for per-vertex arrays.
func (v *ExecutionVertex) Index() int { return v.first.jobVertex.base + int(v.first.subtask) }

// Name is the task name with subtask index as Flink prints it
// (TaskNameWithSubtaskIndex): "name (i+1/parallelism)", e.g. "map (2/4)". It names the task in
// every message, log line, TaskDeploymentDescriptor and exception history entry, so the vertex
// name goes through jobgraph.Truncate: one over 64 runes is cut, with its length in bytes
// ("aaa…(1000 bytes) (2/4)"; Flink prints the whole name). ExecutionJobVertex.Name is whole.
func (v *ExecutionVertex) Name() string {
	// One allocation: every deployment names its task (strconv.Itoa allocates from 100 on).
	name := jobgraph.Truncate(v.first.jobVertex.jobVertex.Name)
	var b strings.Builder
	b.Grow(len(name) + 26) // " (" + two ints of up to 11 digits + "/" + ")"
	b.WriteString(name)
	b.WriteString(" (")
	var digits [20]byte
	b.Write(strconv.AppendInt(digits[:0], int64(v.first.subtask)+1, 10))
	b.WriteByte('/')
	b.Write(strconv.AppendInt(digits[:0], int64(len(v.first.jobVertex.vertices)), 10))
	b.WriteByte(')')
	return b.String()
}

func (v *ExecutionVertex) String() string { return v.Name() }

// CurrentExecution is the current attempt; never nil.
func (v *ExecutionVertex) CurrentExecution() *Execution {
	if c := v.current; c != nil {
		return c
	}
	return &v.first
}

// State is the current attempt's state.
func (v *ExecutionVertex) State() jobgraph.ExecutionState { return v.CurrentExecution().state }

// NumPriorAttempts is the number of attempts before the current one (its attempt number),
// whether or not they are still kept.
func (v *ExecutionVertex) NumPriorAttempts() int { return int(v.CurrentExecution().attempt) }

// PriorExecutions are the earlier attempts still kept, oldest first (at most
// WithMaxPriorAttempts of them). The slice must not be modified.
func (v *ExecutionVertex) PriorExecutions() []*Execution {
	if x := v.first.extra; x != nil {
		return x.prior
	}
	return nil
}

// Execution is the attempt with the given number if it is the current one or still kept, else nil.
func (v *ExecutionVertex) Execution(attempt int) *Execution {
	if cur := v.CurrentExecution(); int(cur.attempt) == attempt {
		return cur
	}
	for _, e := range v.PriorExecutions() {
		if int(e.attempt) == attempt {
			return e
		}
	}
	return nil
}

// Version counts the resets of this vertex (0 after Build). The scheduler records it when it
// starts deploying and drops the deployment if the vertex was reset meanwhile.
func (v *ExecutionVertex) Version() uint64 { return uint64(v.CurrentExecution().attempt) } // each reset adds an attempt

// ConsumedPartitionGroups are the groups this subtask reads, one per input edge, in input
// order. The slice must not be modified.
func (v *ExecutionVertex) ConsumedPartitionGroups() []*ConsumedPartitionGroup {
	return v.first.jobVertex.consumedGroups(int(v.first.subtask))
}

// ProducedPartitions are the partitions this subtask writes, one per produced result, in output
// order. The slice must not be modified.
func (v *ExecutionVertex) ProducedPartitions() []*IntermediateResultPartition {
	n := len(v.first.jobVertex.produced)
	s := int(v.first.subtask) * n
	return v.first.jobVertex.producedBacking[s : s+n : s+n]
}

// Region is the pipelined region the subtask belongs to.
func (v *ExecutionVertex) Region() *PipelinedRegion {
	set := v.first.jobVertex.graph.regions
	return &set.regions[set.regionOf[v.Index()]]
}

// ResetForNewExecution replaces the current attempt, which must be terminal (FINISHED, CANCELED
// or FAILED), by attempt n+1 in CREATED, and returns it. The old attempt joins the prior
// attempts. If the old attempt had FINISHED, the vertex's partitions become unfinished again
// (their groups' counters go up) and the graph's finished count goes down. The version goes up
// by one. A non-terminal current attempt is an error matching ErrIllegalTransition, and nothing
// changes. Flink: ExecutionVertex.resetForNewExecution.
func (v *ExecutionVertex) ResetForNewExecution() (*Execution, error) {
	old := v.CurrentExecution()
	if !old.state.IsTerminal() {
		return nil, fmt.Errorf("executiongraph: cannot reset %s for a new execution: attempt #%d is %s, not terminal: %w",
			v.Name(), old.attempt, old.state, ErrIllegalTransition)
	}
	jv := v.first.jobVertex
	g := jv.graph
	if old.state == jobgraph.ExecutionStateFinished {
		g.numFinished--
		for _, p := range v.ProducedPartitions() {
			p.markUnfinished()
		}
	}
	jv.stateCounts[old.state]--
	jv.stateCounts[jobgraph.ExecutionStateCreated]++

	var e *Execution
	var times *stateTimes
	if v.current == nil {
		// The first reset: the second attempt, its times and the extra that keeps the earlier
		// attempts in one allocation, as the attempt alone was before they moved out of the vertex.
		b := new(firstReset)
		e, times = &b.execution, &b.times
		if v.first.extra == nil {
			v.first.extra = &b.extra
		}
	} else {
		a := new(laterAttempt)
		e, times = &a.execution, &a.times
	}
	if limit := g.maxPriorAttempts; limit > 0 {
		x := v.first.extra // set at the first reset
		if len(x.prior) == limit {
			copy(x.prior, x.prior[1:])
			x.prior = x.prior[:limit-1]
		}
		x.prior = append(x.prior, old)
	}
	*e = Execution{jobVertex: jv, subtask: v.first.subtask, attempt: old.attempt + 1, state: jobgraph.ExecutionStateCreated, times: times}
	e.mark(jobgraph.ExecutionStateCreated, g.now())
	if old.accumulators() != nil {
		g.accumulatorsChanged() // the old attempt's no longer count
	}
	old.superseded = true
	v.current = e
	return e, nil
}
