package taskexecutor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// Defaults of Config.TaskCancellationInterval and Config.TaskCancellationTimeout: Flink's.
const (
	// DefaultTaskCancellationInterval is option task.cancellation.interval's default.
	DefaultTaskCancellationInterval = 30 * time.Second
	// DefaultTaskCancellationTimeout is option task.cancellation.timeout's default.
	DefaultTaskCancellationTimeout = 180 * time.Second
	// NoTaskCancellationTimeout as Config.TaskCancellationTimeout disables the watchdog: a task
	// that never returns after its cancellation is warned about forever and the TaskExecutor
	// never fails because of it. It is Flink's task.cancellation.timeout = 0; here 0 means the
	// default, as for every other option of Config.
	NoTaskCancellationTimeout time.Duration = -1
)

var (
	// ErrTaskCancellationTimeout is matched by the *TaskCancellationTimeoutError a TaskExecutor
	// fails with when a task has not returned task.cancellation.timeout after it was canceled,
	// also once it crossed a gateway as a jobgraph.ErrorInfo (the cause JobMasters and the
	// ResourceManager are given when the TaskExecutor disconnects).
	ErrTaskCancellationTimeout = errors.New("task did not return within task.cancellation.timeout after its cancellation")
	// ErrFailed is returned by every gateway method of a TaskExecutor that failed fatally
	// (wrapped together with the cause, see TaskExecutor.FatalError). Flink's TaskExecutor
	// process ends on a fatal error.
	ErrFailed = errors.New("taskexecutor: failed fatally")
)

func init() {
	jobgraph.RegisterErrorCode("taskexecutor.task-cancellation-timeout", ErrTaskCancellationTimeout)
	jobgraph.RegisterErrorCode("taskexecutor.failed", ErrFailed)
}

// TaskCancellationTimeoutError names the task that made its TaskExecutor fail fatally: it had
// not returned Timeout after it was canceled (or failed from outside). errors.Is matches
// ErrTaskCancellationTimeout. Flink: the fatal error of Task.TaskCancelerWatchDog ("Task did not
// exit gracefully within …").
type TaskCancellationTimeoutError struct {
	TaskExecutor       jobgraph.ResourceID
	ExecutionAttemptID jobgraph.ExecutionAttemptID
	// TaskName is "<vertex name> (<subtask+1>/<parallelism>)".
	TaskName      string
	VertexName    string
	SubtaskIndex  int
	AttemptNumber int
	// Timeout is task.cancellation.timeout.
	Timeout time.Duration
}

func (e *TaskCancellationTimeoutError) Error() string {
	return fmt.Sprintf("task %s (vertex %q, subtask %d, attempt %d) on TaskExecutor %s did not return within task.cancellation.timeout %v after its cancellation",
		e.TaskName, e.VertexName, e.SubtaskIndex, e.AttemptNumber, e.TaskExecutor, e.Timeout)
}

func (e *TaskCancellationTimeoutError) Is(target error) bool {
	return target == ErrTaskCancellationTimeout
}

// resolveCancellation applies the defaults of task.cancellation.interval and
// task.cancellation.timeout; timeout ≤ 0 on return means no watchdog.
func resolveCancellation(interval, timeout time.Duration) (time.Duration, time.Duration, error) {
	switch {
	case interval < 0:
		return 0, 0, fmt.Errorf("taskexecutor: task.cancellation.interval (Config.TaskCancellationInterval) %v is negative", interval)
	case timeout < 0 && timeout != NoTaskCancellationTimeout:
		return 0, 0, fmt.Errorf("taskexecutor: task.cancellation.timeout (Config.TaskCancellationTimeout) %v is negative; NoTaskCancellationTimeout disables the watchdog", timeout)
	}
	if interval == 0 {
		interval = DefaultTaskCancellationInterval
	}
	if timeout == 0 {
		timeout = DefaultTaskCancellationTimeout
	}
	return interval, timeout, nil
}

// watchdog follows one stopped task until it returns. Flink: Task.TaskInterrupter (the periodic
// warnings; a goroutine cannot be interrupted, so there is only the warning) and
// Task.TaskCancelerWatchDog (the fatal error). Owned by the loop.
type watchdog struct {
	stopWarn  func() bool
	stopFatal func() bool
}

// stopTask stops t with why and, the first time t is canceled or failed from outside, starts
// its watchdog: every task.cancellation.interval it logs a warning that t has not returned, and
// once task.cancellation.timeout has passed the TaskExecutor fails fatally (failFatally). A task
// stopped silently (the TaskExecutor is closing or dying) is not watched. On the loop.
func (te *TaskExecutor) stopTask(t *task, why *stopReason) {
	t.stop(why)
	if t.watch != nil || why.kind == stopSilent || te.killed.Load() {
		return
	}
	w := &watchdog{}
	t.watch = w
	interval, timeout := te.cancelInterval, te.cancelTimeout
	warnings := 0
	var warn func()
	warn = func() {
		if te.tasks[t.attempt] != t || te.killed.Load() {
			return
		}
		warnings++
		te.log.Warn("task did not react to its cancellation",
			"task", t.tdd.TaskName, "execution", t.attempt.String(), "since", time.Duration(warnings)*interval)
		// The last warning comes before the timeout: at the timeout the TaskExecutor fails.
		if timeout <= 0 || time.Duration(warnings+1)*interval < timeout {
			w.stopWarn = te.loop.Schedule(interval, warn)
		}
	}
	if timeout <= 0 || interval < timeout {
		w.stopWarn = te.loop.Schedule(interval, warn)
	}
	if timeout > 0 {
		w.stopFatal = te.loop.Schedule(timeout, func() {
			if te.tasks[t.attempt] == t {
				te.failFatally(t, timeout)
			}
		})
	}
}

// unwatch stops t's watchdog: t has returned. On the loop.
func (t *task) unwatch() {
	if w := t.watch; w != nil {
		if w.stopWarn != nil {
			w.stopWarn()
		}
		if w.stopFatal != nil {
			w.stopFatal()
		}
	}
}

// failFatally fails the TaskExecutor because task t has not returned timeout after it was
// stopped, as Flink's TaskCancelerWatchDog makes its TaskManager fail (and its process end): an
// ERROR log names t; the TaskExecutor dies as Kill makes it die (its tasks are canceled without
// reports, its partitions are lost, every gateway method fails, now with ErrFailed); and it says
// goodbye, as Flink's TaskExecutor.onStop does: the ResourceManager, then the JobMaster of every
// job it is registered with, are told it is gone (DisconnectTaskExecutor), so its slots are lost
// and the jobs fail over elsewhere at once rather than after heartbeat.timeout. Close no longer
// waits for its task goroutines (t would never let it return). On the loop.
func (te *TaskExecutor) failFatally(t *task, timeout time.Duration) {
	if te.killed.Load() {
		return
	}
	cause := &TaskCancellationTimeoutError{
		TaskExecutor:       te.id,
		ExecutionAttemptID: t.attempt,
		TaskName:           t.tdd.TaskName,
		VertexName:         t.tdd.VertexName,
		SubtaskIndex:       t.tdd.SubtaskIndex,
		AttemptNumber:      t.tdd.AttemptNumber,
		Timeout:            timeout,
	}
	te.log.Error("task did not return within task.cancellation.timeout after its cancellation; the TaskExecutor fails fatally",
		"task", t.tdd.TaskName, "vertex", t.tdd.VertexName, "subtask", t.tdd.SubtaskIndex,
		"attempt", t.tdd.AttemptNumber, "execution", t.attempt.String(), "timeout", timeout)
	te.failWith(cause)
}

// failWith makes the TaskExecutor fail fatally with cause: FatalError returns it from now on, it
// dies as Kill makes it die (every gateway method fails with ErrFailed wrapping cause), its
// tasks are released (Close no longer waits for them) and it says goodbye to the
// ResourceManager and the JobMasters it is registered with. On the loop, or on the loop's
// goroutine after a panic ended the loop (onPanic: nothing else touches the loop's state then).
func (te *TaskExecutor) failWith(cause error) {
	if te.killed.Load() {
		return
	}
	te.fatal.Store(&cause)
	type goodbye struct {
		gw    rpc.JobMasterGateway
		token jobgraph.JobMasterID
	}
	var jobMasters []goodbye
	for _, jc := range te.jobs {
		if jc.gateway != nil && jc.registered {
			jobMasters = append(jobMasters, goodbye{jc.gateway, jc.token})
		}
	}
	rm, rmID, timeoutRPC := te.rm, te.rmID, te.rmHeartbeats.Timeout()
	if !te.die(&stopReason{kind: stopSilent, err: fmt.Errorf("%w: %w", ErrFailed, cause)}) {
		return
	}
	for _, other := range te.tasks {
		other.release()
	}
	info := rpc.Failure(fmt.Errorf("TaskExecutor %s failed fatally: %w", te.id, cause))
	te.spawn(func() {
		// Not te.ctx: it ended with the TaskExecutor.
		ctx, cancel := context.WithTimeout(context.Background(), timeoutRPC)
		defer cancel()
		if rm != nil {
			if err := rm.DisconnectTaskExecutor(ctx, rmID, te.id, info); err != nil {
				te.log.Warn("telling the ResourceManager that the TaskExecutor failed", "error", err)
			}
		}
		for _, jm := range jobMasters {
			if err := jm.gw.DisconnectTaskExecutor(ctx, jm.token, te.id, info); err != nil {
				te.log.Warn("telling a JobMaster that the TaskExecutor failed", "error", err)
			}
		}
	})
	if te.onFatal != nil {
		te.onFatal(cause)
	}
}

// onPanic is the panic handler of the TaskExecutor's loop: a broken invariant (or a bug) there
// makes the TaskExecutor fail fatally with the *jobgraph.PanicError, as a task stuck past
// task.cancellation.timeout does. On the dead loop's goroutine.
func (te *TaskExecutor) onPanic(err *jobgraph.PanicError) {
	te.log.Error("the TaskExecutor's main loop panicked; the TaskExecutor fails fatally", "panic", err.Value, "stack", string(err.Stack))
	// What die posts to the loop (stopping the heartbeats, closing the registration) cannot run
	// on a dead loop: the heartbeats' timers died with it, and the registration ends with ctx.
	te.failWith(err)
}

// FatalError returns the error the TaskExecutor failed fatally with — a
// *TaskCancellationTimeoutError naming the task that would not return, or a *jobgraph.PanicError
// when its main loop panicked (a broken invariant) — or nil. Safe anywhere.
func (te *TaskExecutor) FatalError() error {
	if err := te.fatal.Load(); err != nil {
		return *err
	}
	return nil
}

// spawnTask runs t on a goroutine of its own that Close waits for, unless the TaskExecutor
// failed fatally first (task.release). On the loop.
func (te *TaskExecutor) spawnTask(t *task) {
	te.wg.Add(1)
	go func() {
		defer t.release()
		t.run()
	}()
}

// release gives up Close's wait for t's goroutine, once. Safe anywhere.
func (t *task) release() { t.released.Do(t.te.wg.Done) }
