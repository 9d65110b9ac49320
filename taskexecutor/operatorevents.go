package taskexecutor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// The task side of operator events: a coordinator's events reach the task through its mailbox
// (mailEvent), in order with checkpoint mail, and are handed to its OperatorEventHandler on its
// goroutine; the task's events to the coordinator leave through its reporter, in order, off its
// goroutine. Flink: Task.deliverOperatorEvent, OperatorEventDispatcherImpl,
// RpcTaskOperatorEventGateway, MailboxExecutor.yield.

// OperatorEventHandler handles an event from the vertex's operator coordinator on the task's
// goroutine (see Environment.SetOperatorEventHandler). A returned error fails the task, and is
// what the coordinator's send hears. It must not call the task's readers, writers or Yield.
// Flink: OperatorEventHandler.handleOperatorEvent.
type OperatorEventHandler func(event []byte) error

// ErrNoOperatorCoordinator is rpc.ErrNoOperatorCoordinator: Environment.SendEventToCoordinator
// of a task whose vertex names no coordinator returns it.
var ErrNoOperatorCoordinator = rpc.ErrNoOperatorCoordinator

// eventSender sends a task's events to its coordinator, in order, without waiting.
type eventSender interface {
	operatorEvent(event []byte)
}

// SetOperatorEventHandler implements Environment.
func (e *environment) SetOperatorEventHandler(h OperatorEventHandler) {
	e.eventHandler = h
	if h != nil && len(e.cp.mail.held) > 0 {
		// Before anything posted since: they arrived first.
		e.cp.mail.requeueFront(e.cp.mail.held)
		e.cp.mail.held = nil
	}
}

// SendEventToCoordinator implements Environment.
func (e *environment) SendEventToCoordinator(event []byte) error {
	if !e.hasCoordinator {
		return fmt.Errorf("%s: cannot send an operator event from vertex %q: %w",
			e.info.TaskName, jobgraph.Truncate(e.info.VertexName), ErrNoOperatorCoordinator)
	}
	if err := e.stop.Err(); err != nil {
		return err
	}
	if e.events != nil {
		e.events.operatorEvent(bytes.Clone(event))
	}
	return nil
}

// Yield implements Environment.
func (e *environment) Yield(ctx context.Context) error {
	for {
		if err := e.stop.Err(); err != nil {
			return err
		}
		if err := e.stop.Check(ctx); err != nil {
			return err
		}
		if e.attention() {
			before := e.cp.mailRun
			if err := e.checkpointWork(ctx); err != nil {
				return err
			}
			if e.cp.mailRun != before {
				return nil
			}
		}
		e.flushIdle() // what the task wrote goes on while it waits
		select {
		case <-e.wake:
		case <-ctx.Done():
		case <-e.stop.ctx.Done():
		}
	}
}

// operatorEvent runs mail m of kind mailEvent: the handler's outcome is m's answer. Without a
// handler yet, m is kept until one is set. A handler's error (or panic) fails the task.
func (e *environment) operatorEvent(m mail) error {
	h := e.eventHandler
	if h == nil {
		e.cp.mail.held = append(e.cp.mail.held, m)
		return nil
	}
	if err := callEventHandler(h, m.event); err != nil {
		err = fmt.Errorf("%s: operator event handler: %w", e.info.TaskName, err)
		m.done(err)
		if e.cp.fail != nil {
			e.cp.fail(err)
		}
		return err
	}
	m.done(nil)
	return nil
}

// callEventHandler calls h, turning a panic into an error.
func callEventHandler(h OperatorEventHandler, event []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return h(event)
}

// operatorEvent queues event for the task's coordinator (Environment.SendEventToCoordinator).
// A delivery that fails, other than for an outdated attempt (rpc.ErrTaskNotRunning: the
// JobMaster dropped it), fails the task, as Flink's RpcTaskOperatorEventGateway does.
func (r *taskReporter) operatorEvent(event []byte) {
	t := r.t
	r.postItem(reportItem{
		send: func(ctx context.Context, jm rpc.JobMasterGateway) error {
			return jm.SendOperatorEventToCoordinator(ctx, t.token, t.attempt, event)
		},
		failed: func(err error) {
			if errors.Is(err, rpc.ErrTaskNotRunning) {
				t.te.log.Debug("the JobMaster dropped an operator event of an attempt it does not run", "task", t.tdd.TaskName, "error", err)
				return
			}
			t.stop(&stopReason{kind: stopFail, err: fmt.Errorf("%s: sending an operator event to the coordinator failed: %w", t.tdd.TaskName, err)})
		},
	})
}

// SendOperatorEventToTask implements rpc.TaskExecutorGateway: the event is queued in the mailbox
// of the task of attempt, fenced as TriggerCheckpoint is, and handed to the task's
// OperatorEventHandler on the task's goroutine, inside its next read, write or Yield or while a
// read or Yield waits (not while a write waits for room), in the order the calls reached the TaskExecutor's loop and in order with the
// checkpoint calls to the attempt (one mailbox carries both). It returns once the handler ran:
// nil, or the handler's error (which fails the task). An event that arrives before the task set
// its handler waits, in order, until it does. Errors: an *rpc.FencingError when token is not the
// JobMasterID of the attempt's job (nothing is queued); for an attempt that does not run here,
// or whose task ends (or was stopped) before it handled the event, an error matching both
// ErrTaskNotFound and rpc.ErrTaskNotRunning; ctx's error (the event may still be handled);
// the TaskExecutor's closed error. event is copied. Flink: TaskExecutor.sendOperatorEventToTask,
// which answers once the event is queued for the operator; ours once it is handled.
func (te *TaskExecutor) SendOperatorEventToTask(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, event []byte) error {
	answer := make(chan error, 1)
	m := mail{kind: mailEvent, event: bytes.Clone(event), done: func(err error) { answer <- err }}
	err := te.call(ctx, func() error {
		t, _, err := te.checkpointTarget(token, attempt)
		if err != nil {
			return err
		}
		if t == nil || t.stopped() != nil || !t.mail.post(m) {
			return fmt.Errorf("TaskExecutor %s: cannot deliver an operator event to execution %s: %w (%w)", te.id, attempt, ErrTaskNotFound, rpc.ErrTaskNotRunning)
		}
		return nil
	})
	if err != nil {
		return err
	}
	select {
	case err := <-answer:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// endedError answers the operator events a task did not handle before it ended: made only when
// there is one (the mailbox's close asks for it then).
func (t *task) endedError() error {
	return fmt.Errorf("%s ended before it handled the operator event: %w (%w)", t.tdd.TaskName, ErrTaskNotFound, rpc.ErrTaskNotRunning)
}
