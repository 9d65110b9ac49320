package jobmaster

import (
	"context"
	"errors"
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/internal/mainloop"
	"github.com/jobgraph/jobgraph/scheduler"
)

// ErrJobNotRunning is matched (errors.Is) by the savepoint and checkpoint methods' error for a
// job that is not RUNNING: still INITIALIZING or CREATED, RESTARTING, or ended. The message
// names the status. It is scheduler.ErrJobNotRunning (the same value).
var ErrJobNotRunning = scheduler.ErrJobNotRunning

// SavepointGateway is a JobMaster or JobManagerRunner that takes savepoints and checkpoints on
// request: DefaultJobMaster and LeadershipRunner implement it, and the Dispatcher calls it on a
// job's runner, which calls it on its current JobMaster. A separate interface, so a host's
// JobMaster or runner need not implement it (the caller then fails with errors.ErrUnsupported).
// Methods are safe for concurrent use and wait, off every main loop, until the operation ended
// or ctx did. Flink: the triggerSavepoint, stopWithSavepoint and triggerCheckpoint methods of
// JobMasterGateway and RestfulGateway.
//
// ctx bounds the wait only: a savepoint or checkpoint under way when ctx ends carries on (as
// Flink's asynchronous REST operations do) and expires after execution.checkpointing.timeout.
type SavepointGateway interface {
	// TriggerSavepoint takes a savepoint under targetDirectory ("" means execution.checkpointing.savepoint-dir)
	// and returns its path once it completed: for the default storage the directory
	// "targetDirectory/savepoint-<first 6 hex digits of the JobID>-<12 random hex digits>",
	// holding the _metadata file checkpoint.LoadSavepoint reads. The job keeps running.
	TriggerSavepoint(ctx context.Context, targetDirectory string) (path string, err error)
	// StopWithSavepoint takes the synchronous savepoint and returns its path once every task
	// and the job are FINISHED. If the savepoint fails, it returns why, the savepoint's files
	// are gone and the job keeps running.
	StopWithSavepoint(ctx context.Context, targetDirectory string) (path string, err error)
	// TriggerCheckpoint takes a checkpoint now and returns its ID once it completed.
	TriggerCheckpoint(ctx context.Context) (checkpoint.CheckpointID, error)
}

var (
	_ SavepointGateway = (*DefaultJobMaster)(nil)
	_ SavepointGateway = (*LeadershipRunner)(nil)
)

type snapshotResult[T any] struct {
	v   T
	err error
}

// snapshotOperation starts op on the JobMaster's loop, if the JobMaster is open, its scheduler a
// scheduler.SavepointTrigger and the job RUNNING, and waits for op's done, ctx, or the
// JobMaster's close, whichever comes first. Never on the loop.
func snapshotOperation[T any](ctx context.Context, jm *DefaultJobMaster, what string, op func(t scheduler.SavepointTrigger, done func(T, error))) (T, error) {
	var zero T
	reply := make(chan snapshotResult[T], 1)
	err := jm.loop.Call(ctx, func() error {
		if jm.closed {
			return jm.closedErr
		}
		t, ok := jm.sched.(scheduler.SavepointTrigger)
		if !ok {
			return fmt.Errorf("jobmaster: job %s: %s: the scheduler (%T) takes no savepoints or checkpoints: %w", jm.job, what, jm.sched, errors.ErrUnsupported)
		}
		if status := jm.sched.JobStatus(); status != jobgraph.JobStatusRunning {
			return fmt.Errorf("jobmaster: job %s: %s: %w (it is %s)", jm.job, what, ErrJobNotRunning, status)
		}
		jm.log.Info(what+" requested", "job", jm.job)
		op(t, func(v T, err error) {
			if err != nil {
				err = fmt.Errorf("jobmaster: job %s: %s: %w", jm.job, what, err)
			}
			reply <- snapshotResult[T]{v, err} // buffered; done is called once
		})
		return nil
	})
	if err != nil {
		return zero, err
	}
	select {
	case r := <-reply:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-jm.loop.Done():
		select { // done may have run in the loop's last task
		case r := <-reply:
			return r.v, r.err
		default:
			return zero, jm.closedErr
		}
	}
}

// TriggerSavepoint implements SavepointGateway: it checks on the JobMaster's loop that the job is
// RUNNING and its scheduler a scheduler.SavepointTrigger, triggers the savepoint there (timeout
// execution.checkpointing.timeout) and waits for it. Errors: ErrClosed (also when the JobMaster
// closes meanwhile), ErrJobNotRunning naming the status, errors.ErrUnsupported for a scheduler
// without savepoints, scheduler.ErrNoCheckpointCoordinator for a job that is not a streaming job,
// scheduler.ErrNoSavepointDirectory, the savepoint's *checkpoint.CheckpointError, ctx's error.
// Flink: JobMaster.triggerSavepoint.
func (jm *DefaultJobMaster) TriggerSavepoint(ctx context.Context, targetDirectory string) (string, error) {
	return snapshotOperation(ctx, jm, "savepoint", func(t scheduler.SavepointTrigger, done func(string, error)) {
		t.TriggerSavepoint(targetDirectory, 0, done)
	})
}

// StopWithSavepoint implements SavepointGateway: as TriggerSavepoint, with the scheduler's
// StopWithSavepoint; it returns the savepoint's path once every task and the job are FINISHED
// (the JobMaster's Done is closed by then). Flink: JobMaster.stopWithSavepoint.
func (jm *DefaultJobMaster) StopWithSavepoint(ctx context.Context, targetDirectory string) (string, error) {
	return snapshotOperation(ctx, jm, "stop-with-savepoint", func(t scheduler.SavepointTrigger, done func(string, error)) {
		t.StopWithSavepoint(targetDirectory, 0, done)
	})
}

// TriggerCheckpoint implements SavepointGateway: as TriggerSavepoint, with the scheduler's
// TriggerCheckpoint; it returns the checkpoint's ID once the checkpoint completed. Flink:
// JobMaster.triggerCheckpoint.
func (jm *DefaultJobMaster) TriggerCheckpoint(ctx context.Context) (checkpoint.CheckpointID, error) {
	return snapshotOperation(ctx, jm, "checkpoint", func(t scheduler.SavepointTrigger, done func(checkpoint.CheckpointID, error)) {
		t.TriggerCheckpoint(done)
	})
}

// savepointGateway is the current JobMaster as a SavepointGateway. Errors: ErrJobNotRunning
// while no JobMaster runs the job (INITIALIZING, a cancel pending) or once it ended;
// errors.ErrUnsupported for a JobMaster without savepoints; the runner's ErrClosed.
func (r *LeadershipRunner) savepointGateway(ctx context.Context, what string) (SavepointGateway, error) {
	jm, err := mainloop.Submit(ctx, r.loop, func() (JobMaster, error) {
		switch {
		case r.finished:
			return nil, fmt.Errorf("jobmaster: job %s: %s: %w (it ended %s)", r.JobID(), what, ErrJobNotRunning, r.result.Archived.Status)
		case r.cancelRequested:
			return nil, fmt.Errorf("jobmaster: job %s: %s: %w (it is %s)", r.JobID(), what, ErrJobNotRunning, jobgraph.JobStatusCancelling)
		case r.createdJobMaster() != nil:
			return r.createdJobMaster(), nil
		}
		if jm := r.currentJobMaster(); jm != nil {
			return jm, nil
		}
		return nil, fmt.Errorf("jobmaster: job %s: %s: %w (it is %s)", r.JobID(), what, ErrJobNotRunning, jobgraph.JobStatusInitializing)
	})
	if err != nil {
		return nil, err
	}
	g, ok := jm.(SavepointGateway)
	if !ok {
		return nil, fmt.Errorf("jobmaster: job %s: %s: its JobMaster (%T) takes no savepoints or checkpoints: %w", r.JobID(), what, jm, errors.ErrUnsupported)
	}
	return g, nil
}

// TriggerSavepoint implements SavepointGateway on the current JobMaster; see
// DefaultJobMaster.TriggerSavepoint, and savepointGateway for the runner's own errors
// (ErrJobNotRunning while no JobMaster runs the job).
func (r *LeadershipRunner) TriggerSavepoint(ctx context.Context, targetDirectory string) (string, error) {
	g, err := r.savepointGateway(ctx, "savepoint")
	if err != nil {
		return "", err
	}
	return g.TriggerSavepoint(ctx, targetDirectory)
}

// StopWithSavepoint implements SavepointGateway on the current JobMaster; see
// DefaultJobMaster.StopWithSavepoint.
func (r *LeadershipRunner) StopWithSavepoint(ctx context.Context, targetDirectory string) (string, error) {
	g, err := r.savepointGateway(ctx, "stop-with-savepoint")
	if err != nil {
		return "", err
	}
	return g.StopWithSavepoint(ctx, targetDirectory)
}

// TriggerCheckpoint implements SavepointGateway on the current JobMaster; see
// DefaultJobMaster.TriggerCheckpoint.
func (r *LeadershipRunner) TriggerCheckpoint(ctx context.Context) (checkpoint.CheckpointID, error) {
	g, err := r.savepointGateway(ctx, "checkpoint")
	if err != nil {
		return 0, err
	}
	return g.TriggerCheckpoint(ctx)
}
