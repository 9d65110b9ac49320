package dispatcher

import (
	"context"
	"errors"
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// savepointGateway finds the running job's runner as a jobmaster.SavepointGateway. Errors:
// ErrJobNotFound for an unknown JobID; jobmaster.ErrJobNotRunning for a job that ended (archived,
// being recorded, or in the JobResultStore: Flink answers FlinkJobNotFoundException there) or is
// still being submitted; errors.ErrUnsupported for a runner without savepoints; ErrClosed.
func (d *StandaloneDispatcher) savepointGateway(ctx context.Context, id jobgraph.JobID, what string) (jobmaster.SavepointGateway, error) {
	l, err := d.lookup(ctx, id)
	switch {
	case err != nil:
		return nil, err
	case l.result() != nil:
		return nil, fmt.Errorf("dispatcher: job %s: %s: %w (it ended %s)", id, what, jobmaster.ErrJobNotRunning, l.result().Status)
	case l.runner == nil:
		return nil, fmt.Errorf("dispatcher: job %s: %s: %w (it is still being submitted)", id, what, jobmaster.ErrJobNotRunning)
	}
	g, ok := l.runner.(jobmaster.SavepointGateway)
	if !ok {
		return nil, fmt.Errorf("dispatcher: job %s: %s: its JobManagerRunner (%T) takes no savepoints or checkpoints: %w", id, what, l.runner, errors.ErrUnsupported)
	}
	return g, nil
}

// TriggerSavepoint implements rpc.DispatcherGateway: it asks the job's runner
// (jobmaster.SavepointGateway) for a savepoint under targetDirectory ("" means the JobMaster's
// execution.checkpointing.savepoint-dir) and returns its path once it completed. Errors: ErrJobNotFound for an
// unknown JobID; jobmaster.ErrJobNotRunning for a job that is not RUNNING, ended included;
// errors.ErrUnsupported for a runner or scheduler without savepoints; the JobMaster's errors (see
// jobmaster.DefaultJobMaster.TriggerSavepoint); ctx's. The wait runs on the caller's goroutine,
// never on the Dispatcher's loop. Flink: Dispatcher.triggerSavepointAndGetLocation.
func (d *StandaloneDispatcher) TriggerSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (string, error) {
	g, err := d.savepointGateway(ctx, id, "savepoint")
	if err != nil {
		return "", err
	}
	return g.TriggerSavepoint(ctx, targetDirectory)
}

// StopWithSavepoint implements rpc.DispatcherGateway: as TriggerSavepoint, for the runner's
// StopWithSavepoint; it returns once the job is FINISHED (its result may still be being
// recorded: RequestJobResult waits for that). Flink: Dispatcher.stopWithSavepointAndGetLocation.
func (d *StandaloneDispatcher) StopWithSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (string, error) {
	g, err := d.savepointGateway(ctx, id, "stop-with-savepoint")
	if err != nil {
		return "", err
	}
	return g.StopWithSavepoint(ctx, targetDirectory)
}

// TriggerCheckpoint implements rpc.DispatcherGateway: as TriggerSavepoint, for the runner's
// TriggerCheckpoint; it returns the completed checkpoint's ID. Flink: Dispatcher.triggerCheckpoint.
func (d *StandaloneDispatcher) TriggerCheckpoint(ctx context.Context, id jobgraph.JobID) (checkpoint.CheckpointID, error) {
	g, err := d.savepointGateway(ctx, id, "checkpoint")
	if err != nil {
		return 0, err
	}
	return g.TriggerCheckpoint(ctx)
}
