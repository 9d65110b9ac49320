package taskexecutor

import (
	"context"
	"errors"

	"github.com/jobgraph/jobgraph/checkpoint"
)

// ErrStopped is what a task's reads and writes (Next, NextAny, Emit, Broadcast) return once the
// stop-with-savepoint savepoint the task took part in is confirmed: the task is to return, with
// ErrStopped (wrapped or not) or nil, and it ends FINISHED, not FAILED. Flink: the task
// finishing after a synchronous savepoint (stop-with-savepoint without --drain).
var ErrStopped = errors.New("taskexecutor: task stopped by stop-with-savepoint")

// CheckpointHandler is a task's part in checkpoints: it snapshots the task's state and hears
// whether a checkpoint completed or was aborted. A task registers one with
// Environment.SetCheckpointHandler; a task of a job that takes checkpoints without one
// acknowledges every checkpoint with an empty state. Flink: CheckpointedFunction
// (snapshotState) and CheckpointListener (notifyCheckpointComplete, notifyCheckpointAborted),
// driven by StreamTask's mailbox.
//
// Every method runs on the task's own goroutine, inside one of the task's calls to the
// Environment's readers and writers, so it never races with the task's code; a method must
// not call those readers and writers itself.
//
// When SnapshotState runs (aligned checkpoints, Flink's default):
//
//   - A task with inputs: inside Next or NextAny, once a barrier of checkpoint id arrived on
//     every input channel that has not ended (alignment: records that arrive on a channel after
//     its barrier are held back until the snapshot is taken). Every record Next or NextAny
//     returned before this call has been processed, since the task called again; none after
//     it. Then the barrier goes to every output subpartition, before any later record. A task
//     with several inputs reads them with AnyInputReader.NextAny: Input(i).Next on an input
//     whose channels all delivered the barrier waits until the other inputs' barriers arrive,
//     and only reads of those inputs deliver them.
//   - A task without inputs (a source): inside Emit or Broadcast, before the record given is
//     handed over, once TriggerCheckpoint reached the TaskExecutor; the state must cover
//     exactly the records emitted so far, not the one being emitted. The barrier goes out before
//     that record. A source that does not emit delays the checkpoint until it does.
//   - A source whose Invokable returned nil: the task waits for the next checkpoint's trigger,
//     snapshots (the handler is still called), sends the barrier and finishes only once that
//     checkpoint, or a later one, is confirmed (NotifyCheckpointComplete ran), so a sink
//     downstream commits everything before the job is FINISHED (Flink's FLIP-147).
//   - A task whose inputs' producers all finished (the JobMaster then triggers it directly):
//     inside the read after the last record left was handed out (the one that reports
//     io.EOF), as if the barrier had followed that record on every channel.
//   - A task whose inputs all ended: before Next or NextAny reports the end (io.EOF), it waits
//     until the last checkpoint it acknowledged is confirmed or aborted, and runs the
//     notification.
//
// Stop-with-savepoint (a checkpoint whose properties are checkpoint.SyncSavepoint): after its
// snapshot and barrier the task sends and processes nothing more; its next read or write waits
// for the savepoint's confirmation or abort. Confirmed: NotifyCheckpointComplete runs, and the
// read or write it ran inside, and every later one, return ErrStopped. Aborted:
// NotifyCheckpointAborted runs and the task goes on as if nothing happened. No final checkpoint follows a stop.
//
// A SnapshotState error declines the checkpoint (CheckpointDeclined, counted toward
// execution.checkpointing.tolerable-failed-checkpoints); the task goes on running.
//
// NotifyCheckpointComplete and NotifyCheckpointAborted run inside the task's next Next,
// NextAny, Emit or Broadcast call after the confirmation reached the TaskExecutor, or while
// Next or NextAny waits for input. A NotifyCheckpointComplete error fails the task.
type CheckpointHandler interface {
	// SnapshotState returns the task's state for checkpoint id (see the CheckpointHandler doc for when).
	SnapshotState(ctx context.Context, id checkpoint.CheckpointID) (checkpoint.StateHandle, error)
	// NotifyCheckpointComplete says checkpoint id completed: every task's state for it is
	// stored, so side effects up to its snapshot may be committed (a two-phase-commit sink
	// commits its transactions up to id). Checkpoints may be confirmed out of order and not
	// at all: a confirmation of id covers every earlier checkpoint of this attempt too.
	NotifyCheckpointComplete(ctx context.Context, id checkpoint.CheckpointID) error
	// NotifyCheckpointAborted says checkpoint id will never complete.
	NotifyCheckpointAborted(ctx context.Context, id checkpoint.CheckpointID)
}
