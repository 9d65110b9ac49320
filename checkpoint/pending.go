package checkpoint

import (
	"time"

	"github.com/jobgraph/jobgraph"
)

// CheckpointPlan says which tasks a checkpoint involves: the current attempts at trigger time.
// Flink: CheckpointPlan (tasks to trigger, to wait for, to commit to; here those waited for are
// those committed to).
type CheckpointPlan struct {
	// TasksToTrigger get the trigger (Flink: the sources); each must also be in TasksToWaitFor.
	TasksToTrigger []jobgraph.ExecutionAttemptID
	// TasksToWaitFor must all acknowledge; they get notify-complete and notify-aborted.
	TasksToWaitFor []jobgraph.ExecutionAttemptID
	// FinishedTasks are subtasks whose current attempt is FINISHED: they take no part, and the
	// completed checkpoint carries their state forward from the coordinator's last completed (or
	// restored) snapshot, so a restore gives a finished task its final state. Flink:
	// CheckpointPlan.getFinishedTasks (with the finished operators' state reported as
	// FullyFinishedOperatorState, where we copy the last state).
	FinishedTasks []jobgraph.ExecutionVertexID
}

// TaskAcknowledgeResult is the outcome of PendingCheckpoint.Acknowledge. Flink:
// PendingCheckpoint.TaskAcknowledgeResult.
type TaskAcknowledgeResult int

// The results.
const (
	AckSuccess   TaskAcknowledgeResult = iota // first acknowledgement of that attempt
	AckDuplicate                              // that attempt acknowledged already: nothing changed
	AckUnknown                                // the checkpoint does not wait for that attempt
	AckDiscarded                              // the checkpoint is already disposed
)

type pendingTask struct {
	attempt jobgraph.ExecutionAttemptID
	acked   bool
	ackTime time.Time
	state   StateHandle
}

// PendingCheckpoint is a triggered checkpoint waiting for its tasks' acknowledgements. Flink:
// org.apache.flink.runtime.checkpoint.PendingCheckpoint. Owned by the coordinator's goroutine;
// read it there only.
type PendingCheckpoint struct {
	id            CheckpointID
	props         CheckpointProperties
	trigger       time.Time
	tasks         map[jobgraph.ExecutionAttemptID]*pendingTask
	order         []*pendingTask
	stats         *CheckpointStatistics
	outstanding   int
	stateSize     int64
	disposed      bool
	external      string
	finished      []jobgraph.ExecutionVertexID
	cancelTimeout func() bool
	onDone        func(CompletedCheckpoint, error)
	toTrigger     []jobgraph.ExecutionAttemptID
	// coords is the operator coordinators' answers while they are asked (nil without
	// coordinators); coordinatorStates their states once all answered, sorted by vertex.
	coords            *coordinatorTrigger
	coordinatorStates []CoordinatorState
	// awaitingCoordinators: the coordinators are being asked; the CheckpointCoordinator's
	// triggering flag is set meanwhile.
	awaitingCoordinators bool
}

func newPendingCheckpoint(id CheckpointID, props CheckpointProperties, trigger time.Time, plan CheckpointPlan) *PendingCheckpoint {
	p := &PendingCheckpoint{id: id, props: props, trigger: trigger,
		tasks: make(map[jobgraph.ExecutionAttemptID]*pendingTask, len(plan.TasksToWaitFor)),
		order: make([]*pendingTask, 0, len(plan.TasksToWaitFor))}
	slab := make([]pendingTask, len(plan.TasksToWaitFor)) // one allocation for every task
	for i, a := range plan.TasksToWaitFor {
		if _, dup := p.tasks[a]; dup {
			continue
		}
		t := &slab[i]
		t.attempt = a
		p.tasks[a] = t
		p.order = append(p.order, t)
	}
	p.outstanding = len(p.order)
	return p
}

// ID is the checkpoint's ID.
func (p *PendingCheckpoint) ID() CheckpointID { return p.id }

// Properties are the checkpoint's properties.
func (p *PendingCheckpoint) Properties() CheckpointProperties { return p.props }

// TriggerTimestamp is when it was triggered.
func (p *PendingCheckpoint) TriggerTimestamp() time.Time { return p.trigger }

// NumberOfAcknowledgedTasks counts the attempts that acknowledged.
func (p *PendingCheckpoint) NumberOfAcknowledgedTasks() int { return len(p.order) - p.outstanding }

// NumberOfNonAcknowledgedTasks counts the attempts still outstanding.
func (p *PendingCheckpoint) NumberOfNonAcknowledgedTasks() int { return p.outstanding }

// IsFullyAcknowledged reports that every task and every operator coordinator acknowledged.
func (p *PendingCheckpoint) IsFullyAcknowledged() bool {
	return p.outstanding == 0 && !p.disposed && !p.awaitingCoordinators
}

// IsDisposed reports an aborted or completed checkpoint.
func (p *PendingCheckpoint) IsDisposed() bool { return p.disposed }

// IsAcknowledgedBy reports whether attempt acknowledged.
func (p *PendingCheckpoint) IsAcknowledgedBy(attempt jobgraph.ExecutionAttemptID) bool {
	t := p.tasks[attempt]
	return t != nil && t.acked
}

// TaskAcknowledgement returns when attempt acknowledged and the state size it reported; acked is
// false for an attempt that has not acknowledged or that the checkpoint does not wait for.
func (p *PendingCheckpoint) TaskAcknowledgement(attempt jobgraph.ExecutionAttemptID) (ackTime time.Time, stateSize int64, acked bool) {
	t := p.tasks[attempt]
	if t == nil || !t.acked {
		return time.Time{}, 0, false
	}
	return t.ackTime, t.state.Size, true
}

// Acknowledge records attempt's state, acknowledged at ackTime.
func (p *PendingCheckpoint) Acknowledge(attempt jobgraph.ExecutionAttemptID, state StateHandle, ackTime time.Time) TaskAcknowledgeResult {
	if p.disposed {
		return AckDiscarded
	}
	t := p.tasks[attempt]
	switch {
	case t == nil:
		return AckUnknown
	case t.acked:
		return AckDuplicate
	}
	t.acked, t.ackTime, t.state = true, ackTime, state
	p.outstanding--
	p.stateSize += state.Size
	return AckSuccess
}

// finalize builds the CompletedCheckpoint: the acknowledged states in TasksToWaitFor order,
// then the states of the plan's FinishedTasks found in last (nil: none), in FinishedTasks order.
func (p *PendingCheckpoint) finalize(job jobgraph.JobID, completion time.Time, last *CompletedCheckpoint) CompletedCheckpoint {
	cp := CompletedCheckpoint{JobID: job, CheckpointID: p.id, Properties: p.props, TriggerTimestamp: p.trigger,
		CompletionTimestamp: completion, StateSize: p.stateSize, ExternalPointer: p.external,
		TaskStates:        make([]SubtaskState, 0, len(p.order)+len(p.finished)),
		CoordinatorStates: p.coordinatorStates}
	for _, t := range p.order {
		cp.TaskStates = append(cp.TaskStates, SubtaskState{JobVertexID: t.attempt.ExecutionVertexID.JobVertexID,
			Subtask: t.attempt.ExecutionVertexID.Subtask, State: t.state})
	}
	if len(p.finished) > 0 && last != nil {
		prev := make(map[jobgraph.ExecutionVertexID]int, len(last.TaskStates))
		for i, s := range last.TaskStates {
			prev[jobgraph.ExecutionVertexID{JobVertexID: s.JobVertexID, Subtask: s.Subtask}] = i
		}
		for _, v := range p.finished {
			if i, ok := prev[v]; ok {
				s := last.TaskStates[i]
				cp.TaskStates = append(cp.TaskStates, s)
				cp.StateSize += s.State.Size
			}
		}
	}
	return cp
}

func (p *PendingCheckpoint) subtasksPerVertex() map[jobgraph.JobVertexID]int {
	n := map[jobgraph.JobVertexID]int{}
	for _, t := range p.order {
		v := t.attempt.ExecutionVertexID
		n[v.JobVertexID] = max(n[v.JobVertexID], v.Subtask+1)
	}
	return n
}
