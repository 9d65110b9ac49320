package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
)

// recovered is what a checkpointing job's JobMaster opened off its main loop before it built the
// scheduler: the store and the ID counter from Config.CheckpointRecoveryFactory, and, when the
// store holds no snapshot and the job names a savepoint, that savepoint as read (or the error of
// reading it). It is the scheduler's CheckpointRecoveryFactory and LoadSavepoint, so the
// scheduler's New, which runs on the loop, does no I/O.
type recovered struct {
	store        checkpoint.CompletedCheckpointStore
	counter      checkpoint.CheckpointIDCounter
	savepoint    checkpoint.CompletedCheckpoint
	savepointErr error
	loaded       bool
}

// openRecovery opens the job's store and counter, and reads the savepoint the job may start from.
// Off the loop.
func openRecovery(g *jobgraph.JobGraph, cfg Config) (*recovered, error) {
	f := cfg.CheckpointRecoveryFactory
	if f == nil {
		f = checkpoint.NewStandaloneCheckpointRecoveryFactory()
	}
	store, err := f.CreateRecoveredCompletedCheckpointStore(g.JobID, g.Checkpointing.NumRetained)
	if err != nil {
		return nil, fmt.Errorf("jobmaster: job %s: creating the completed checkpoint store: %w", g.JobID, err)
	}
	counter, err := f.CreateCheckpointIDCounter(g.JobID)
	if err != nil {
		return nil, fmt.Errorf("jobmaster: job %s: creating the checkpoint ID counter: %w", g.JobID, err)
	}
	r := &recovered{store: store, counter: counter}
	if _, ok := store.Latest(); !ok && g.SavepointRestore.Path != "" {
		r.loaded = true
		if cfg.LoadSavepoint == nil {
			r.savepointErr = errors.New("jobmaster.Config.LoadSavepoint is nil")
		} else {
			r.savepoint, r.savepointErr = cfg.LoadSavepoint(g.SavepointRestore.Path)
		}
	}
	return r, nil
}

func (r *recovered) CreateRecoveredCompletedCheckpointStore(jobgraph.JobID, int) (checkpoint.CompletedCheckpointStore, error) {
	return r.store, nil
}

func (r *recovered) CreateCheckpointIDCounter(jobgraph.JobID) (checkpoint.CheckpointIDCounter, error) {
	return r.counter, nil
}

func (r *recovered) loadSavepoint(string) (checkpoint.CompletedCheckpoint, error) {
	if !r.loaded {
		return checkpoint.CompletedCheckpoint{}, errors.New("the savepoint was not read: the store held a checkpoint when the JobMaster started")
	}
	return r.savepoint, r.savepointErr
}

// ioExecutor runs the coordinator's store and counter calls on the JobMaster's I/O loop, in
// order, and their completion on the main loop. A completion whose main loop has closed never
// runs (the coordinator is gone with it).
type ioExecutor struct{ jm *DefaultJobMaster }

func (e ioExecutor) Execute(work func(), done func()) {
	jm := e.jm
	if io := jm.ioLoop(); io == nil || !io.Execute(func() {
		work()
		jm.loop.Execute(done)
	}) {
		jm.log.Debug("checkpoint I/O dropped: the JobMaster is closed")
	}
}

// The deployer's checkpoint RPCs (scheduler.CheckpointDeployer). A checkpoint's calls come in
// bursts (a trigger per source, a confirmation or abort per task), so those the main loop makes
// in one task are gathered per TaskExecutor and go onto the outbox as one entry once that task
// has returned, as deployments do: one entry and one context (pekko.ask.timeout) per
// TaskExecutor and burst, the calls made one after another in the order they were asked for, after
// the outgoing calls queued before. A failed trigger comes back to the loop, where the scheduler
// drops it unless its checkpoint is still pending for that attempt.

var _ scheduler.CheckpointDeployer = deployer{}

type ckKind uint8

const (
	ckTrigger ckKind = iota
	ckConfirm
	ckAbort
	ckEvent // an operator event (sendOperatorEventToTask), in order with the checkpoint calls
)

type ckCall struct {
	kind    ckKind
	attempt jobgraph.ExecutionAttemptID
	id      checkpoint.CheckpointID
	ts      time.Time
	props   checkpoint.CheckpointProperties
	event   []byte      // ckEvent's
	ack     func(error) // ckEvent's: called on the loop with the call's outcome
}

// ckBatch is a burst of checkpoint calls by TaskExecutor, in order of first call. Owned by the
// main loop until it is handed to the outbox.
type ckBatch struct {
	byTE  map[jobgraph.ResourceID]int
	perTE []teCkCalls
}

type teCkCalls struct {
	id    jobgraph.ResourceID
	gw    rpc.TaskExecutorGateway
	calls []ckCall
}

// queueCheckpointCall adds c for the TaskExecutor at location to the open burst, opening one
// (and posting its flush) if there is none. On the loop.
func (jm *DefaultJobMaster) queueCheckpointCall(location jobgraph.ResourceID, c ckCall) {
	te, ok := jm.taskExecutors[location]
	if !ok {
		err := fmt.Errorf("TaskExecutor %s is not connected", location)
		switch c.kind {
		case ckTrigger:
			jm.loop.Execute(func() { jm.checkpointTriggerFailed(c.attempt, c.id, err) })
		case ckEvent:
			jm.loop.Execute(func() { jm.operatorEventAck(c.ack, err) })
		}
		return
	}
	b := jm.ckOpen
	if b == nil {
		b = &ckBatch{byTE: map[jobgraph.ResourceID]int{}}
		jm.ckOpen = b
		if !jm.loop.Execute(func() { jm.flushCheckpointCalls(b) }) {
			jm.ckOpen = nil // closing: nothing is sent any more (nor acked: see sendOperatorEventToTask)
			return
		}
	}
	i, ok := b.byTE[location]
	if !ok {
		i = len(b.perTE)
		b.byTE[location] = i
		b.perTE = append(b.perTE, teCkCalls{id: location, gw: te})
	}
	b.perTE[i].calls = append(b.perTE[i].calls, c)
}

// flushCheckpointCalls hands burst b to the outbox. On the loop. A job with operator coordinators
// goes on from the outbox into each TaskExecutor's lane (see sendOperatorEventToTask), so an
// event waiting for its task holds up only the calls to that TaskExecutor after it.
func (jm *DefaultJobMaster) flushCheckpointCalls(b *ckBatch) {
	if jm.ckOpen == b {
		jm.ckOpen = nil
	}
	token := jm.token
	jm.enqueue(func() {
		for _, te := range b.perTE {
			if jm.lanes == nil {
				jm.sendCheckpointCalls(context.Background(), token, te)
				continue
			}
			ctx := jm.lanes.ctx
			jm.lanes.lane(jm, te.id).Execute(func() { jm.sendCheckpointCalls(ctx, token, te) })
		}
	})
}

// sendCheckpointCalls makes te's calls of one burst, one after another, in one context
// (pekko.ask.timeout) but for events, each of which gets its own (it waits for its task's
// handler). Failed triggers go back to the loop in one closure, each event's outcome in one
// of its own as soon as it is known. On the outbox or te's lane.
func (jm *DefaultJobMaster) sendCheckpointCalls(parent context.Context, token jobgraph.JobMasterID, te teCkCalls) {
	type failed struct {
		attempt jobgraph.ExecutionAttemptID
		id      checkpoint.CheckpointID
		err     error
	}
	var failures []failed
	ctx, cancel := context.WithTimeout(parent, jm.cfg.RPCTimeout)
	for _, c := range te.calls {
		var err error
		switch c.kind {
		case ckTrigger:
			err = te.gw.TriggerCheckpoint(ctx, token, c.attempt, c.id, c.ts, c.props)
			if err != nil {
				failures = append(failures, failed{c.attempt, c.id, err})
			}
		case ckConfirm:
			err = te.gw.ConfirmCheckpoint(ctx, token, c.attempt, c.id, c.ts)
		case ckAbort:
			err = te.gw.AbortCheckpoint(ctx, token, c.attempt, c.id, c.ts)
		case ckEvent:
			ectx, ecancel := context.WithTimeout(parent, jm.cfg.RPCTimeout)
			err = te.gw.SendOperatorEventToTask(ectx, token, c.attempt, c.event)
			ecancel()
			ack := c.ack
			jm.loop.Execute(func() { jm.operatorEventAck(ack, err) })
			continue
		}
		if err != nil && c.kind != ckTrigger {
			jm.log.Debug("a checkpoint notification failed", "checkpoint", c.id, "attempt", c.attempt, "confirm", c.kind == ckConfirm, "err", err)
		}
	}
	cancel()
	if len(failures) > 0 {
		jm.loop.Execute(func() {
			for _, f := range failures {
				jm.checkpointTriggerFailed(f.attempt, f.id, f.err)
			}
		})
	}
}

// checkpointTriggerFailed hands a failed trigger to the scheduler, unless the JobMaster closed.
// On the loop.
func (jm *DefaultJobMaster) checkpointTriggerFailed(attempt jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, err error) {
	if jm.closed {
		return
	}
	if cs, ok := jm.sched.(scheduler.CheckpointScheduler); ok {
		cs.OnCheckpointTriggerFailed(attempt, id, err)
	}
}

func (d deployer) TriggerCheckpoint(attempt jobgraph.ExecutionAttemptID, location jobgraph.ResourceID, id checkpoint.CheckpointID, ts time.Time, props checkpoint.CheckpointProperties) {
	d.jm.queueCheckpointCall(location, ckCall{kind: ckTrigger, attempt: attempt, id: id, ts: ts, props: props})
}

func (d deployer) ConfirmCheckpoint(attempt jobgraph.ExecutionAttemptID, location jobgraph.ResourceID, id checkpoint.CheckpointID, ts time.Time) {
	d.jm.queueCheckpointCall(location, ckCall{kind: ckConfirm, attempt: attempt, id: id, ts: ts})
}

func (d deployer) AbortCheckpoint(attempt jobgraph.ExecutionAttemptID, location jobgraph.ResourceID, id checkpoint.CheckpointID, ts time.Time) {
	d.jm.queueCheckpointCall(location, ckCall{kind: ckAbort, attempt: attempt, id: id, ts: ts})
}

// AcknowledgeCheckpoint implements rpc.JobMasterGateway: fenced by token (an older session's
// fails with an *rpc.FencingError; a closed JobMaster answers ErrClosed; a done ctx its error),
// then handed to the scheduler's CheckpointCoordinator on the loop. It returns once the ack is
// queued on the loop, before the coordinator has seen it, as Flink's acknowledgeCheckpoint is a
// call without an answer: the acks of a checkpoint's tasks then cost the loop one closure each
// and no sender waits for the loop (BenchmarkCheckpointAck); calls made one after another from
// one goroutine are applied in that order, and before any later call of that goroutine. An
// acknowledgement the coordinator drops (an outdated attempt, an unknown or finished checkpoint,
// a duplicate, another job's, or a job without checkpoints) changes nothing and is not an error
// of the call; it is logged at debug. Flink: JobMaster.acknowledgeCheckpoint.
func (jm *DefaultJobMaster) AcknowledgeCheckpoint(ctx context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, ack checkpoint.AcknowledgeCheckpoint) error {
	return jm.checkpointMessage(ctx, token, func() {
		cs, ok := jm.sched.(scheduler.CheckpointScheduler)
		var err error
		switch {
		case job != jm.job:
			err = fmt.Errorf("acknowledgement for job %s", job)
		case !ok:
			err = scheduler.ErrCheckpointingDisabled
		default:
			err = cs.AcknowledgeCheckpoint(ack)
		}
		if err != nil {
			jm.log.Debug("dropped a checkpoint acknowledgement", "checkpoint", ack.CheckpointID, "attempt", ack.Attempt, "err", err)
		}
	})
}

// DeclineCheckpoint implements rpc.JobMasterGateway, with the rules of AcknowledgeCheckpoint.
// Flink: JobMaster.declineCheckpoint.
func (jm *DefaultJobMaster) DeclineCheckpoint(ctx context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, d checkpoint.DeclineCheckpoint) error {
	return jm.checkpointMessage(ctx, token, func() {
		cs, ok := jm.sched.(scheduler.CheckpointScheduler)
		var err error
		switch {
		case job != jm.job:
			err = fmt.Errorf("decline for job %s", job)
		case !ok:
			err = scheduler.ErrCheckpointingDisabled
		default:
			err = cs.DeclineCheckpoint(d)
		}
		if err != nil {
			jm.log.Debug("dropped a checkpoint decline", "checkpoint", d.CheckpointID, "attempt", d.Attempt, "err", err)
		}
	})
}

// checkpointMessage fences a task's checkpoint message off the loop — the token never changes
// and closing sets closedFlag before anything else — and queues apply on the loop, which drops it
// if the JobMaster closed meanwhile.
func (jm *DefaultJobMaster) checkpointMessage(ctx context.Context, token jobgraph.JobMasterID, apply func()) error {
	if jm.closedFlag.Load() {
		return jm.closedErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := jm.tokenError(token); err != nil {
		return err
	}
	if !jm.loop.Execute(func() {
		if !jm.closed && jm.sched != nil {
			apply()
		}
	}) {
		return jm.closedErr
	}
	return nil
}
