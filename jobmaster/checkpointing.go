package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
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
	if !jm.io.Execute(func() {
		work()
		jm.loop.Execute(done)
	}) {
		jm.log.Debug("checkpoint I/O dropped: the JobMaster is closed")
	}
}

// The deployer's checkpoint RPCs (scheduler.CheckpointDeployer): each goes through the outbox,
// after the deployments queued before it; a failed trigger comes back to the loop, where the
// scheduler drops it unless its checkpoint is still pending for that attempt.

var _ scheduler.CheckpointDeployer = deployer{}

func (d deployer) TriggerCheckpoint(attempt jobgraph.ExecutionAttemptID, location jobgraph.ResourceID, id checkpoint.CheckpointID, ts time.Time, props checkpoint.CheckpointProperties) {
	jm := d.jm
	failed := func(err error) {
		if jm.closed {
			return
		}
		if cs, ok := jm.sched.(scheduler.CheckpointScheduler); ok {
			cs.OnCheckpointTriggerFailed(attempt, id, err)
		}
	}
	te, ok := jm.taskExecutors[location]
	if !ok {
		err := fmt.Errorf("TaskExecutor %s is not connected", location)
		jm.loop.Execute(func() { failed(err) })
		return
	}
	token := jm.token
	jm.send(func(ctx context.Context) error { return te.TriggerCheckpoint(ctx, token, attempt, id, ts, props) }, failed)
}

func (d deployer) ConfirmCheckpoint(attempt jobgraph.ExecutionAttemptID, location jobgraph.ResourceID, id checkpoint.CheckpointID, ts time.Time) {
	jm := d.jm
	if te, ok := jm.taskExecutors[location]; ok {
		token := jm.token
		jm.send(func(ctx context.Context) error { return te.ConfirmCheckpoint(ctx, token, attempt, id, ts) }, func(err error) {
			jm.log.Debug("confirming a checkpoint failed", "checkpoint", id, "attempt", attempt, "err", err)
		})
	}
}

func (d deployer) AbortCheckpoint(attempt jobgraph.ExecutionAttemptID, location jobgraph.ResourceID, id checkpoint.CheckpointID, ts time.Time) {
	jm := d.jm
	if te, ok := jm.taskExecutors[location]; ok {
		token := jm.token
		jm.send(func(ctx context.Context) error { return te.AbortCheckpoint(ctx, token, attempt, id, ts) }, func(err error) {
			jm.log.Debug("aborting a checkpoint failed", "checkpoint", id, "attempt", attempt, "err", err)
		})
	}
}

// AcknowledgeCheckpoint implements rpc.JobMasterGateway: fenced by token (an older session's
// fails with an *rpc.FencingError; a closed JobMaster answers ErrClosed), then handed to the
// scheduler's CheckpointCoordinator on the loop. An acknowledgement the coordinator drops (an
// outdated attempt, an unknown or finished checkpoint, a duplicate, another job's, or a job
// without checkpoints) changes nothing and is not an error of the call; it is logged at debug.
// Flink: JobMaster.acknowledgeCheckpoint.
func (jm *DefaultJobMaster) AcknowledgeCheckpoint(ctx context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, ack checkpoint.AcknowledgeCheckpoint) error {
	return jm.fenced(ctx, token, func() error {
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
		return nil
	})
}

// DeclineCheckpoint implements rpc.JobMasterGateway, with the rules of AcknowledgeCheckpoint.
// Flink: JobMaster.declineCheckpoint.
func (jm *DefaultJobMaster) DeclineCheckpoint(ctx context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, d checkpoint.DeclineCheckpoint) error {
	return jm.fenced(ctx, token, func() error {
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
		return nil
	})
}
