package scheduler

import (
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

var _ SavepointTrigger = (*DefaultScheduler)(nil)

// stopWithSavepoint is a stop-with-savepoint under way: its caller's done, and the savepoint's
// path once the synchronous savepoint completed (then it waits for the job to be FINISHED).
// Flink: StopWithSavepointTerminationManager with StopWithSavepointTerminationHandlerImpl.
type stopWithSavepoint struct {
	done func(string, error)
	path string
}

// snapshotsAllowed says why the job takes no savepoint or checkpoint now: no coordinator (not a
// streaming job), not RUNNING, or being stopped with a savepoint (its tasks take no other
// snapshot once they took the synchronous one; Flink does not refuse, and such a request would
// wait for its timeout).
func (s *DefaultScheduler) snapshotsAllowed() error {
	if s.ck == nil {
		return ErrNoCheckpointCoordinator
	}
	if st := s.graph.State(); st != jobgraph.JobStatusRunning {
		return fmt.Errorf("%w (it is %s)", ErrJobNotRunning, st)
	}
	if s.stop != nil {
		return ErrStopWithSavepointInProgress
	}
	return nil
}

// savepointTarget is dir, else execution.checkpointing.savepoint-dir, once snapshotsAllowed.
func (s *DefaultScheduler) savepointTarget(dir string) (string, error) {
	if err := s.snapshotsAllowed(); err != nil {
		return "", err
	}
	if dir == "" {
		dir = s.cfg.SavepointDirectory
	}
	if dir == "" {
		return "", ErrNoSavepointDirectory
	}
	return dir, nil
}

func pathOf(done func(string, error)) func(checkpoint.CompletedCheckpoint, error) {
	return func(cp checkpoint.CompletedCheckpoint, err error) {
		if err != nil {
			done("", err)
			return
		}
		done(cp.ExternalPointer, nil)
	}
}

// TriggerSavepoint implements SavepointTrigger with the job's CheckpointCoordinator
// (checkpoint.CheckpointCoordinator.TriggerSavepoint): the savepoint ignores max concurrent
// checkpoints and the min pause, and the periodic checkpoints go on meanwhile. Flink:
// SchedulerBase.triggerSavepoint.
func (s *DefaultScheduler) TriggerSavepoint(targetDirectory string, timeout time.Duration, done func(string, error)) {
	s.enter()
	defer s.leave()
	target, err := s.savepointTarget(targetDirectory)
	if err != nil {
		done("", err)
		return
	}
	s.log.Info("triggering a savepoint", "target", target)
	if err := s.ck.coord.TriggerSavepoint(s.cfg.JobMasterID, target, timeout, pathOf(done)); err != nil {
		done("", err)
	}
}

// TriggerCheckpoint implements SavepointTrigger (checkpoint.CheckpointCoordinator.TriggerCheckpoint:
// queued behind what is in flight, within max concurrent checkpoints; the min pause does not
// apply to it). Flink: SchedulerBase.triggerCheckpoint.
func (s *DefaultScheduler) TriggerCheckpoint(done func(checkpoint.CheckpointID, error)) {
	s.enter()
	defer s.leave()
	if err := s.snapshotsAllowed(); err != nil {
		done(0, err)
		return
	}
	err := s.ck.coord.TriggerCheckpoint(s.cfg.JobMasterID, func(cp checkpoint.CompletedCheckpoint, err error) {
		done(cp.CheckpointID, err)
	})
	if err != nil {
		done(0, err)
	}
}

// StopWithSavepoint implements SavepointTrigger as Flink's SchedulerBase.stopWithSavepoint: it
// stops the periodic checkpoint scheduler (aborting pending checkpoints, not counted), so only
// the synchronous savepoint's side effects are committed, and triggers it. Once it completed the
// tasks finish (on its confirmation), and done gets the path when the job is FINISHED, or an
// error naming the status the job reached instead (after a failover it runs on). If the
// savepoint fails, done gets its error once its files are removed, and the periodic scheduler
// starts again if the job is still RUNNING (a job failing over restarts it when it is RUNNING
// again). A second stop while one is under way gets ErrStopWithSavepointInProgress.
func (s *DefaultScheduler) StopWithSavepoint(targetDirectory string, timeout time.Duration, done func(string, error)) {
	s.enter()
	defer s.leave()
	target, err := s.savepointTarget(targetDirectory)
	if err != nil {
		done("", err)
		return
	}
	op := &stopWithSavepoint{done: done}
	s.stop = op
	s.log.Info("stopping the job with a savepoint", "target", target)
	coord := s.ck.coord
	coord.StopCheckpointScheduler()
	if err := coord.TriggerSynchronousSavepoint(s.cfg.JobMasterID, target, timeout, func(cp checkpoint.CompletedCheckpoint, err error) {
		s.onSynchronousSavepoint(op, cp, err)
	}); err != nil {
		s.stop = nil
		s.resumePeriodicCheckpoints()
		done("", err)
	}
}

// onSynchronousSavepoint is the synchronous savepoint's outcome, on the loop.
func (s *DefaultScheduler) onSynchronousSavepoint(op *stopWithSavepoint, cp checkpoint.CompletedCheckpoint, err error) {
	if s.stop != op {
		return
	}
	if err != nil {
		s.stop = nil
		s.log.Warn("stop-with-savepoint failed: the savepoint failed; the job keeps running", "error", err)
		s.resumePeriodicCheckpoints()
		op.done("", err)
		return
	}
	op.path = cp.ExternalPointer
	s.log.Info("stop-with-savepoint: the savepoint completed; waiting for the tasks to finish", "checkpoint", cp.CheckpointID, "path", op.path)
}

// resumePeriodicCheckpoints starts the periodic checkpoint scheduler again after a failed
// stop-with-savepoint, if the job is RUNNING and checkpoints periodically.
func (s *DefaultScheduler) resumePeriodicCheckpoints() {
	if s.ck == nil || s.ck.interval <= 0 || s.graph.State() != jobgraph.JobStatusRunning {
		return
	}
	if err := s.ck.coord.StartCheckpointScheduler(); err != nil {
		s.log.Warn("cannot start the periodic checkpoint scheduler again", "error", err)
	}
}

// stopWithSavepointOnJobStatus ends a stop-with-savepoint whose savepoint completed once the job
// leaves RUNNING: with the path for FINISHED, with an error for anything else. Before the
// savepoint completed, the coordinator reports its abort instead. Called by transitionJob.
func (s *DefaultScheduler) stopWithSavepointOnJobStatus(to jobgraph.JobStatus) {
	op := s.stop
	if op == nil || op.path == "" || to == jobgraph.JobStatusRunning {
		return
	}
	s.stop = nil
	if to == jobgraph.JobStatusFinished {
		op.done(op.path, nil)
		return
	}
	s.log.Warn("stop-with-savepoint: the job did not finish after its savepoint", "path", op.path, "status", to.String())
	op.done("", fmt.Errorf("the savepoint %s completed, but the job went %s instead of FINISHED", op.path, to))
}
