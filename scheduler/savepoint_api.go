package scheduler

import (
	"errors"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// Errors of the SavepointTrigger methods. The scheduler's errors say what is wrong; the JobMaster
// wraps them with the job and the operation.
var (
	// ErrJobNotRunning: the job is not RUNNING (still being created, restarting, or ended), so
	// it takes no savepoint or checkpoint now. The message names the status.
	ErrJobNotRunning = errors.New("job is not RUNNING")
	// ErrNoCheckpointCoordinator: the job has no CheckpointCoordinator — it is not a streaming
	// job — so it takes no savepoint or checkpoint. Flink: SchedulerBase's "Job %s is not a
	// streaming job." A streaming job without periodic checkpoints (interval 0) has one, as in
	// Flink, where savepoints work without checkpointing.
	ErrNoCheckpointCoordinator = errors.New("job has no CheckpointCoordinator (not a streaming job)")
	// ErrNoSavepointDirectory: the target directory is empty and no default is configured
	// (execution.checkpointing.savepoint-dir, Config.SavepointDirectory). Flink: "No savepoint directory
	// configured. You can either specify a directory …".
	ErrNoSavepointDirectory = errors.New("no savepoint directory: give a target directory or configure execution.checkpointing.savepoint-dir (state.savepoints.dir)")
	// ErrStopWithSavepointInProgress: a stop-with-savepoint of the job is under way; another
	// stop, savepoint or checkpoint request is refused until it ended (Flink does not refuse
	// them; our stopping tasks take no other snapshot, so they would wait for their timeout).
	ErrStopWithSavepointInProgress = errors.New("stop-with-savepoint already in progress")
)

func init() {
	jobgraph.RegisterErrorCode("scheduler.job-not-running", ErrJobNotRunning)
	jobgraph.RegisterErrorCode("scheduler.no-checkpoint-coordinator", ErrNoCheckpointCoordinator)
	jobgraph.RegisterErrorCode("scheduler.no-savepoint-directory", ErrNoSavepointDirectory)
	jobgraph.RegisterErrorCode("scheduler.stop-with-savepoint-in-progress", ErrStopWithSavepointInProgress)
}

// SavepointTrigger is a SchedulerNG that takes savepoints, stops its job with a savepoint, and
// takes checkpoints on request. The JobMaster calls these if its scheduler implements this, on
// the JobMaster's main loop; with a scheduler that does not, the JobMaster's savepoint methods
// fail with errors.ErrUnsupported. DefaultScheduler implements it (savepoint.go). A separate
// interface, as AccumulatorUpdater, so a host's SchedulerNG need not change. Flink: SchedulerNG.triggerSavepoint, stopWithSavepoint and
// triggerCheckpoint.
//
// Each method returns at once; done is called exactly once, on the main loop, with the result
// or the error: ErrJobNotRunning, ErrNoCheckpointCoordinator, ErrNoSavepointDirectory, or the
// coordinator's *checkpoint.CheckpointError (an expired savepoint's reports Timeout() true and
// matches checkpoint.CheckpointExpired). done must not call into the scheduler synchronously.
type SavepointTrigger interface {
	// TriggerSavepoint takes a savepoint under targetDirectory ("" means the scheduler's
	// default, execution.checkpointing.savepoint-dir), expiring after timeout (0 means
	// execution.checkpointing.timeout); done gets the savepoint's path (its ExternalPointer: for
	// the default storage the directory "targetDirectory/savepoint-<job>-<random>"). The job
	// keeps running either way.
	TriggerSavepoint(targetDirectory string, timeout time.Duration, done func(path string, err error))
	// StopWithSavepoint stops the periodic checkpoint scheduler, takes the synchronous
	// savepoint (after which the tasks finish), and calls done with the savepoint's path only
	// once every task is FINISHED and the job FINISHED. If the savepoint fails or is declined,
	// done gets that error, the savepoint's files are discarded, periodic checkpointing resumes
	// and the job keeps running (a declined synchronous savepoint fails the job over, as Flink's
	// CheckpointFailureManager does: it restarts from the latest checkpoint). If the savepoint
	// completed but the job ends otherwise than FINISHED, done gets an error naming the status.
	// Flink: SchedulerBase.stopWithSavepoint with its StopWithSavepointTerminationManager.
	StopWithSavepoint(targetDirectory string, timeout time.Duration, done func(path string, err error))
	// TriggerCheckpoint takes a checkpoint now, outside the periodic schedule; done gets its ID
	// once it completed. Flink: SchedulerNG.triggerCheckpoint(CheckpointType.FULL).
	TriggerCheckpoint(done func(id checkpoint.CheckpointID, err error))
}
