package dispatcher

import (
	"context"
	"errors"
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// savepointGateway is the runner of the job l found, as a jobmaster.SavepointGateway. Errors:
// ErrJobNotFound for an unknown JobID; jobmaster.ErrJobNotRunning for a job that ended (archived,
// being recorded, or in the JobResultStore: Flink answers FlinkJobNotFoundException there) or is
// still being submitted; errors.ErrUnsupported for a runner without savepoints.
func savepointGateway(l lookup, id jobgraph.JobID, what string) (jobmaster.SavepointGateway, error) {
	switch {
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

// snapshot runs op on the savepoint gateway of job id's runner (see savepointGateway) through
// answerJob: a runner or JobMaster that answers closed because the job ended after the lookup
// gave the runner out is answered as a job that had ended before it, with ErrJobNotRunning
// naming its status, never with that closed error (a closed JobMaster's is unreachable, which a
// caller over a transport would take for the Dispatcher gone). Flink: the Dispatcher's
// performOperationOnJobMasterGateway, whose job no longer running fails with
// FlinkJobNotFoundException.
func snapshot[T any](ctx context.Context, d *StandaloneDispatcher, id jobgraph.JobID, what string, op func(g jobmaster.SavepointGateway) (T, error)) (T, error) {
	return answerJob(ctx, d, id, func(l lookup) (T, error) {
		g, err := savepointGateway(l, id, what)
		if err != nil {
			var zero T
			return zero, err
		}
		return op(g)
	})
}

// TriggerSavepoint implements rpc.DispatcherGateway: it asks the job's runner
// (jobmaster.SavepointGateway) for a savepoint under targetDirectory ("" means the JobMaster's
// execution.checkpointing.savepoint-dir) and returns its path once it completed. Errors: ErrJobNotFound for an
// unknown JobID; jobmaster.ErrJobNotRunning for a job that is not RUNNING, ended included (also
// when it ends while its runner is asked, which then answers closed); errors.ErrUnsupported for
// a runner or scheduler without savepoints; the JobMaster's errors (see
// jobmaster.DefaultJobMaster.TriggerSavepoint); ErrClosed; ctx's. The wait runs on the caller's
// goroutine, never on the Dispatcher's loop. Flink: Dispatcher.triggerSavepointAndGetLocation.
func (d *StandaloneDispatcher) TriggerSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (string, error) {
	return snapshot(ctx, d, id, "savepoint", func(g jobmaster.SavepointGateway) (string, error) {
		return g.TriggerSavepoint(ctx, targetDirectory)
	})
}

// StopWithSavepoint implements rpc.DispatcherGateway: as TriggerSavepoint, for the runner's
// StopWithSavepoint; it returns once the job is FINISHED (its result may still be being
// recorded: RequestJobResult waits for that). Flink: Dispatcher.stopWithSavepointAndGetLocation.
func (d *StandaloneDispatcher) StopWithSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (string, error) {
	return snapshot(ctx, d, id, "stop-with-savepoint", func(g jobmaster.SavepointGateway) (string, error) {
		return g.StopWithSavepoint(ctx, targetDirectory)
	})
}

// TriggerCheckpoint implements rpc.DispatcherGateway: as TriggerSavepoint, for the runner's
// TriggerCheckpoint; it returns the completed checkpoint's ID. Flink: Dispatcher.triggerCheckpoint.
func (d *StandaloneDispatcher) TriggerCheckpoint(ctx context.Context, id jobgraph.JobID) (checkpoint.CheckpointID, error) {
	return snapshot(ctx, d, id, "checkpoint", func(g jobmaster.SavepointGateway) (checkpoint.CheckpointID, error) {
		return g.TriggerCheckpoint(ctx)
	})
}
