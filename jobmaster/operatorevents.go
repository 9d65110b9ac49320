package jobmaster

import (
	"bytes"
	"context"
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/mainloop"
	"github.com/jobgraph/jobgraph/rpc"
)

// Operator events: the JobMaster's two ends of the event RPCs between a vertex's operator
// coordinator and its subtasks. Task → coordinator arrives through SendOperatorEventToCoordinator
// and is handed to the operatorCoordinatorHandler on the loop; coordinator → task leaves through
// sendOperatorEventToTask, in order with the checkpoint calls to the same TaskExecutor.

// operatorCoordinatorHandler is the JobMaster's operator-coordinator handler as the RPC entry
// point sees it (Flink's OperatorCoordinatorHandler.deliverOperatorEventToCoordinator). The
// JobMaster's coordinator handling (coordination.Holder per coordinated vertex) implements it and
// is installed in jm.coordinators; nil: none is installed, and every event is answered with
// rpc.ErrNoOperatorCoordinator.
type operatorCoordinatorHandler interface {
	// deliverOperatorEvent hands event, which attempt (subtask of vertex) sent, to vertex's
	// coordinator. It is called on the JobMaster's loop, in the order the events arrived, only
	// for an attempt that is its subtask's current one and INITIALIZING or RUNNING (the entry
	// point checks that first). It returns an error wrapping rpc.ErrNoOperatorCoordinator when
	// vertex has no coordinator; a coordinator that fails handling the event fails the job
	// globally (the handler's business) and is not the sender's error. event belongs to the
	// handler (the entry point copied it).
	deliverOperatorEvent(vertex jobgraph.JobVertexID, subtask int, attempt jobgraph.ExecutionAttemptID, event []byte) error
}

// coordinatedVertices returns the vertices of g that name an operator coordinator; nil if none does.
func coordinatedVertices(g *jobgraph.JobGraph) map[jobgraph.JobVertexID]bool {
	var m map[jobgraph.JobVertexID]bool
	for _, v := range g.Vertices {
		if v.OperatorCoordinator != "" {
			if m == nil {
				m = make(map[jobgraph.JobVertexID]bool)
			}
			m[v.ID] = true
		}
	}
	return m
}

// trackOperatorEventSender keeps the set of attempts of coordinated vertices that may send
// events: those INITIALIZING or RUNNING. Called with every state change (executionStateChanged),
// on the loop; costs nothing for a job without coordinators. A subtask's new attempt is created
// only once its previous one is terminal, so an attempt in the set is its subtask's current one.
func (jm *DefaultJobMaster) trackOperatorEventSender(attempt jobgraph.ExecutionAttemptID, st jobgraph.ExecutionState) {
	if !jm.coordinated[attempt.ExecutionVertexID.JobVertexID] {
		return
	}
	switch st {
	case jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning:
		jm.eventSenders[attempt] = struct{}{}
	default:
		delete(jm.eventSenders, attempt)
	}
}

// SendOperatorEventToCoordinator implements rpc.JobMasterGateway: fenced by token (a stale one
// fails with an *rpc.FencingError; a closed JobMaster answers ErrClosed; a done ctx its error),
// then, on the loop, handed to the vertex's coordinator if attempt is its subtask's current
// attempt and INITIALIZING or RUNNING (else an error wrapping rpc.ErrTaskNotRunning, and the
// event is dropped), and if the vertex has a coordinator (else an error wrapping
// rpc.ErrNoOperatorCoordinator). It returns once the coordinator took the event. Events of one
// sender that calls one after another reach the coordinator in that order. The JobMaster copies
// event. It learns the attempts' states from the scheduler's ExecutionStateListener
// (scheduler.Config), which a SchedulerNG of the host's must call as DefaultScheduler does. Flink: JobMaster.sendOperatorEventToCoordinator with
// DefaultOperatorCoordinatorHandler.deliverOperatorEventToCoordinator (TaskNotRunningException).
func (jm *DefaultJobMaster) SendOperatorEventToCoordinator(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, event []byte) error {
	event = bytes.Clone(event)
	return jm.fenced(ctx, token, func() error {
		vertex := attempt.ExecutionVertexID.JobVertexID
		if !jm.coordinated[vertex] {
			return fmt.Errorf("job %s: operator event from execution %s: vertex %s names no operator coordinator: %w", jm.job, attempt, vertex, rpc.ErrNoOperatorCoordinator)
		}
		if _, ok := jm.eventSenders[attempt]; !ok {
			return fmt.Errorf("job %s: operator event from execution %s dropped: it is not its subtask's current attempt, or not INITIALIZING or RUNNING: %w", jm.job, attempt, rpc.ErrTaskNotRunning)
		}
		if jm.coordinators == nil {
			return fmt.Errorf("job %s: operator event from execution %s: the JobMaster runs no operator coordinators: %w", jm.job, attempt, rpc.ErrNoOperatorCoordinator)
		}
		return jm.coordinators.deliverOperatorEvent(vertex, attempt.ExecutionVertexID.Subtask, attempt, event)
	})
}

// sendOperatorEventToTask sends event from a coordinator to the task of attempt:
// TaskExecutorGateway.SendOperatorEventToTask to the TaskExecutor attempt was deployed to, off the
// loop, in order with every event and checkpoint call (trigger, confirmation, abort) the loop
// queued for that TaskExecutor before it, after the calls the outbox holds (the attempt's
// deployment among them). ack is called on the loop exactly once — nil once the task's handler
// returned nil; else why not: the handler's error, an error wrapping rpc.ErrTaskNotRunning
// (attempt is not deployed, or its task ended before it handled the event), the TaskExecutor not
// being connected, the call's failure or its timeout (Config.RPCTimeout) — unless the JobMaster
// closes first, when it is not called at all. It is never called from within
// sendOperatorEventToTask. The caller must not change event afterwards. On the loop. This is the
// send function the coordinators' SubtaskGateways use (Flink: SubtaskGatewayImpl.sendEvent through
// ExecutionVertex's TaskManagerGateway.sendOperatorEventToTask).
//
// A job with coordinators sends every checkpoint call and event to one TaskExecutor through a
// lane of its own, one call after another: an event's call waits until the task handled it, so it
// must not hold up the outbox (deployments, cancellations) while it waits.
func (jm *DefaultJobMaster) sendOperatorEventToTask(attempt jobgraph.ExecutionAttemptID, event []byte, ack func(error)) {
	host, ok := jm.deployments.hostOf(attempt)
	if !ok {
		err := fmt.Errorf("job %s: operator event to execution %s: it is not deployed: %w", jm.job, attempt, rpc.ErrTaskNotRunning)
		jm.loop.Execute(func() { jm.operatorEventAck(ack, err) })
		return
	}
	jm.queueCheckpointCall(host, ckCall{kind: ckEvent, attempt: attempt, event: event, ack: ack})
}

// operatorEventAck calls ack with err unless the JobMaster closed. On the loop.
func (jm *DefaultJobMaster) operatorEventAck(ack func(error), err error) {
	if !jm.closed {
		ack(err)
	}
}

// teLanes are the per-TaskExecutor lanes of a job with coordinators: one loop per TaskExecutor,
// started by its first burst. Used only on the outbox's goroutine, and by shutDown once the
// outbox has closed.
type teLanes struct {
	ctx    context.Context // canceled by shutDown: a call waiting in a lane returns
	cancel context.CancelFunc
	byTE   map[jobgraph.ResourceID]*mainloop.Loop
}

func newTELanes() *teLanes {
	ctx, cancel := context.WithCancel(context.Background())
	return &teLanes{ctx: ctx, cancel: cancel, byTE: make(map[jobgraph.ResourceID]*mainloop.Loop)}
}

// lane returns the lane of te, starting it if needed. On the outbox.
func (l *teLanes) lane(jm *DefaultJobMaster, te jobgraph.ResourceID) *mainloop.Loop {
	lane := l.byTE[te]
	if lane == nil {
		lane = mainloop.NewNamedOn(jm.cfg.Goroutines, textName("jobmaster-lane-"+jm.job.String()+"-"+string(te)), jm.closedErr)
		lane.SetPanicHandler(jm.onPanic)
		l.byTE[te] = lane
	}
	return lane
}

// close cancels what the lanes wait on and waits for them. After the outbox closed.
func (l *teLanes) close() {
	l.cancel()
	for _, lane := range l.byTE {
		lane.Close()
	}
}
