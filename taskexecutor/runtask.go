package taskexecutor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/metrics"
	"github.com/jobgraph/jobgraph/rpc"
)

type stopKind uint8

const (
	stopCancel stopKind = iota // reported CANCELED
	stopFail                   // reported FAILED with err
	stopSilent                 // nothing reported: the TaskExecutor is closing or was killed
)

// stopReason is the cause a task's context is canceled with.
type stopReason struct {
	kind stopKind
	err  error
}

func (r *stopReason) Error() string {
	if r.kind == stopCancel {
		return "task canceled"
	}
	return r.err.Error()
}

func (r *stopReason) Unwrap() error { return r.err }

var (
	errShutdown   = &stopReason{kind: stopSilent, err: ErrClosed}
	errKilledStop = &stopReason{kind: stopSilent, err: ErrKilled}
)

// task is one execution attempt running on the TaskExecutor. The loop owns its registration;
// everything else is used by the task's goroutine only (ctx and cancel are safe anywhere).
type task struct {
	te         *TaskExecutor
	tdd        rpc.TaskDeploymentDescriptor
	attempt    jobgraph.ExecutionAttemptID
	allocation jobgraph.AllocationID
	slot       int
	fn         Invokable
	missing    error // the task code is not registered

	// Where the task reports its states: the JobMaster it was deployed by.
	jmAddress string
	jm        rpc.JobMasterGateway
	token     jobgraph.JobMasterID

	// sig carries the task's context (ctx, cancel are its fields, for brevity); safe anywhere.
	sig    *TaskStop
	ctx    context.Context
	cancel context.CancelCauseFunc

	// accs are the task's accumulators: its Environment's, read for heartbeats off the loop.
	accs *AccumulatorRegistry

	// mail carries checkpoint triggers and notifications from the loop to the task's goroutine;
	// reporter sends its acks and declines.
	mail     *mailbox
	reporter *taskReporter

	// metrics is the task's metric group (Config.Metrics; nil without), opened in setup and
	// closed when execute returns, both on the task's goroutine.
	metrics *metrics.Group

	watch    *watchdog // the loop's; set once the task is stopped (TaskExecutor.stopTask)
	released sync.Once // Close no longer waits for the goroutine (task.release)
}

// newTask runs on the loop.
func (te *TaskExecutor) newTask(tdd rpc.TaskDeploymentDescriptor, jc *jobConnection, slot int) *task {
	t := &task{
		te:         te,
		tdd:        tdd,
		attempt:    tdd.ExecutionAttemptID,
		allocation: tdd.AllocationID,
		slot:       slot,
		jmAddress:  jc.address,
		jm:         jc.gateway,
		token:      jc.token,
		accs:       NewAccumulatorRegistry(),
	}
	if fn, ok := te.registry.Lookup(tdd.Invokable); ok {
		t.fn = fn
	} else {
		t.missing = &UnknownInvokableError{Name: tdd.Invokable, TaskExecutor: te.id, Registered: te.registry.Names()}
	}
	t.sig = newTaskStop(te.ctx)
	t.ctx, t.cancel = t.sig.ctx, t.sig.cancel
	t.mail = newMailbox(make(chan struct{}, 1))
	t.reporter = &taskReporter{t: t, jm: jc.gateway}
	return t
}

// stop cancels the task's context with why; the first reason wins.
func (t *task) stop(why *stopReason) { t.sig.stop(why) }

// stopped returns why the task was stopped, or nil.
func (t *task) stopped() *stopReason {
	if t.ctx.Err() == nil {
		return nil
	}
	var why *stopReason
	if errors.As(context.Cause(t.ctx), &why) {
		return why
	}
	return &stopReason{kind: stopCancel}
}

// run is the task's goroutine: Flink's Task.doRun.
func (t *task) run() {
	final, err := t.execute()
	t.mail.close(t.endedError) // the operator events it did not handle are answered
	t.metrics.Close()
	t.reporter.waitSent() // its acks reach the JobMaster before its final state
	t.cancel(nil)         // release the context's resources
	// Unregister the task before reporting its final state, as Flink's
	// TaskExecutor.unregisterTaskAndNotifyFinalState does: once the JobMaster hears of it, the
	// slot no longer holds the task, so freeing the slot frees it at once. The unregistration
	// is queued on the loop, not waited for: whatever the JobMaster sends the TaskExecutor
	// once it heard the final state (FreeSlot, say) reaches the loop after it, since the report
	// is sent only after the unregistration was queued; a heartbeat the loop builds meanwhile
	// still lists the task in its slot.
	// Until its final state has been delivered the task stays in its job's
	// ExecutionDeploymentReport, so no heartbeat tells the JobMaster it is gone before the
	// JobMaster heard how it ended.
	te := t.te
	job := t.tdd.JobID
	te.loop.Execute(func() {
		t.unwatch()
		te.taskDone(t)
		if final != noFinalState {
			te.reporting[t.attempt] = job
		}
	})
	if final != noFinalState {
		t.report(final, err)
		te.loop.Execute(func() { delete(te.reporting, t.attempt) })
	}
}

// noFinalState is what execute returns when nothing is to be reported (a task can never end
// CREATED).
const noFinalState = jobgraph.ExecutionStateCreated

// execute runs the task up to its final state, which it returns rather than reports
// (noFinalState when the TaskExecutor is closing or was killed).
func (t *task) execute() (jobgraph.ExecutionState, error) {
	te := t.te
	if t.missing != nil {
		te.shuffle.FailPartitions(t.ioOwner(), t.tdd.ProducedPartitions, t.missing)
		return jobgraph.ExecutionStateFailed, t.missing
	}
	t.report(jobgraph.ExecutionStateInitializing, nil)
	env, err := t.setup()
	if err != nil {
		te.shuffle.FailPartitions(t.ioOwner(), t.tdd.ProducedPartitions, err)
		return t.end(nil, fmt.Errorf("setting up %s: %w", t.tdd.TaskName, err))
	}
	if t.stopped() == nil {
		t.report(jobgraph.ExecutionStateRunning, nil)
		err = t.invoke(env)
		switch {
		case err != nil && env.cp.stopped && errors.Is(err, ErrStopped):
			err = nil // stop-with-savepoint: FINISHED
		case err == nil && env.info.CheckpointingEnabled && len(env.gates) == 0 && !env.cp.stopped && t.stopped() == nil:
			err = env.finalCheckpoint(t.ctx) // FLIP-147
		}
	}
	env.closeInputs()
	if err == nil && t.stopped() == nil {
		err = env.finishOutputs(t.ctx)
	}
	return t.end(env, err)
}

// end fails the task's outputs unless it finished, and returns its final state.
func (t *task) end(env *environment, err error) (jobgraph.ExecutionState, error) {
	why := t.stopped()
	if why == nil && err == nil {
		return jobgraph.ExecutionStateFinished, nil
	}
	cause := err
	if why != nil {
		cause = why
	}
	if env != nil {
		env.failOutputs(cause)
	}
	switch {
	case why == nil:
		return jobgraph.ExecutionStateFailed, err
	case why.kind == stopCancel:
		return jobgraph.ExecutionStateCanceled, nil
	case why.kind == stopFail:
		return jobgraph.ExecutionStateFailed, why.err
	}
	return noFinalState, nil // stopSilent
}

// invoke runs the task code, turning a panic into a failure.
func (t *task) invoke(env *environment) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("task code %q of %s panicked: %v\n%s", t.tdd.Invokable, t.tdd.TaskName, r, debug.Stack())
		}
	}()
	return t.fn(t.ctx, env)
}

// report sends the task's new state to its JobMaster, unless the TaskExecutor is closing or was
// killed. Called only from the task's goroutine, so reports leave in order.
func (t *task) report(state jobgraph.ExecutionState, err error) {
	te := t.te
	if te.ctx.Err() != nil {
		return
	}
	msg := rpc.TaskExecutionState{ExecutionAttemptID: t.attempt, State: state}
	if state.IsTerminal() {
		msg.Accumulators = t.accs.Snapshot()
	}
	msg.Failure = rpc.Failure(err)
	if t.jm == nil {
		jm, cerr := rpc.Connect[rpc.JobMasterGateway](te.ctx, te.rpc, t.jmAddress)
		if cerr != nil {
			te.log.Warn("cannot reach the JobMaster to report a task state", "task", t.tdd.TaskName, "state", state.String(), "error", cerr)
			return
		}
		t.jm = jm
	}
	if n, ok := t.jm.(rpc.TaskExecutionStateNotifier); ok {
		// Queued at the JobMaster, not waited for (the in-process JobMaster): the task goes on.
		n.NotifyTaskExecutionState(t.token, msg, func(err error) {
			if err != nil {
				te.loop.Execute(func() { t.reportFailed(state, err) })
			}
		})
		return
	}
	if _, rerr := t.jm.UpdateTaskExecutionState(te.ctx, t.token, msg); rerr != nil {
		t.reportFailed(state, rerr)
	}
}

// reportFailed logs a state report the JobMaster refused or did not take, unless the
// TaskExecutor is closing.
func (t *task) reportFailed(state jobgraph.ExecutionState, err error) {
	if t.te.ctx.Err() == nil {
		t.te.log.Warn("reporting a task state failed", "task", t.tdd.TaskName, "state", state.String(), "error", err)
	}
}

// setup builds the task's Environment: its writers (registering it as the producer of its
// partitions) and its input gates.
func (t *task) setup() (*environment, error) {
	te := t.te
	tdd := &t.tdd
	env := newEnvironment(t.sig, TaskInfo{
		JobID:                tdd.JobID,
		ExecutionAttemptID:   tdd.ExecutionAttemptID,
		TaskName:             tdd.TaskName,
		VertexName:           tdd.VertexName,
		SubtaskIndex:         tdd.SubtaskIndex,
		Parallelism:          tdd.Parallelism,
		MaxParallelism:       tdd.MaxParallelism,
		AttemptNumber:        tdd.AttemptNumber,
		Config:               tdd.Config,
		CheckpointingEnabled: tdd.CheckpointingEnabled,
	})
	env.accs = t.accs
	if te.metrics != nil {
		t.metrics = te.metrics.TaskGroup(metrics.Scope{JobID: tdd.JobID, JobName: tdd.JobName,
			TaskID: tdd.ExecutionAttemptID.ExecutionVertexID.JobVertexID, TaskName: tdd.VertexName,
			SubtaskIndex: tdd.SubtaskIndex, AttemptNumber: tdd.AttemptNumber})
		t.metrics.RegisterCounter("numRecordsIn", env.recordsIn) // newEnvironment's counters
		t.metrics.RegisterCounter("numRecordsOut", env.recordsOut)
		t.metrics.Meter("numRecordsInPerSecond", env.recordsIn)
		t.metrics.Meter("numRecordsOutPerSecond", env.recordsOut)
		env.backPressure = t.metrics.TimerGauge("backPressuredTimeMsPerSecond")
	}
	env.restore = tdd.TaskRestore
	env.snapshots = tdd.CheckpointingEnabled || tdd.HasCheckpointCoordinator
	env.wake, env.cp.mail = t.mail.wake, t.mail
	env.cp.reporter = t.reporter
	env.hasCoordinator, env.events = tdd.HasOperatorCoordinator, t.reporter
	env.cp.fail = func(err error) { t.stop(&stopReason{kind: stopFail, err: err}) }
	owner := t.ioOwner()
	owner.Wake, owner.BeforeWait, owner.BackPressure = env.wake, env.flushIdle, env.backPressure
	writers, err := te.shuffle.CreateResultPartitionWriters(owner, tdd.ProducedPartitions)
	if err != nil {
		return nil, err
	}
	env.writers = writers
	gates, err := te.shuffle.CreateInputGates(owner, tdd.InputGates)
	if err != nil {
		env.failOutputs(err)
		return nil, err
	}
	env.gates = gates
	return env, nil
}

// ioOwner describes the task to the shuffle.
func (t *task) ioOwner() ShuffleIOOwnerContext {
	return ShuffleIOOwnerContext{JobID: t.tdd.JobID, TaskName: t.tdd.TaskName, TaskExecutor: t.te.id, Stop: t.sig}
}

// environment is the Environment of one task. Used only from the task's goroutine.
type environment struct {
	stop    *TaskStop // the task's; its gates and writers share it
	info    TaskInfo
	gates   []ShuffleReader
	writers []ShuffleWriter

	// What NextAny needs. wake is shared by every gate (inputGate.anyWake).
	wake    chan struct{}
	cur     int   // the gate whose batch NextAny hands out; -1 for none
	next    int   // the gate NextAny looks at first for its next batch
	errIn   int   // the input of err
	err     error // the error NextAny returned for input errIn; it sticks
	waiting bool  // NextAny marked the gates hungry before it waited

	accs *AccumulatorRegistry

	// The task's I/O metrics (taskexecutor.Config.Metrics): never nil, registered nowhere
	// without a registry, so counting costs the same atomic add either way.
	recordsIn, recordsOut *metrics.Counter
	backPressure          *metrics.TimerGauge // nil without a registry

	// Checkpoints: the handler the task registered and the state it starts from (nil: none).
	checkpointHandler CheckpointHandler
	restore           *rpc.TaskRestore
	// snapshots: the task takes part in the snapshots its job's coordinator triggers (periodic
	// checkpoints, or only savepoints and manual checkpoints of a job without an interval).
	snapshots bool
	cp        checkpoints

	// Operator events: the task's handler (nil until set; events wait in cp.mail.held),
	// whether its vertex has a coordinator (rpc.TaskDeploymentDescriptor.HasOperatorCoordinator)
	// and where its events to it go (nil in tests: nowhere).
	eventHandler   OperatorEventHandler
	hasCoordinator bool
	events         eventSender

	// What task code reads and writes through (Input, Output), built at first use; inErr is
	// the sticky error of each input read through Next.
	inputs  []taskInput
	outputs []taskOutput
	inErr   []error
}

var (
	_ Environment    = (*environment)(nil)
	_ AnyInputReader = (*environment)(nil)
)

func newEnvironment(stop *TaskStop, info TaskInfo) *environment {
	wake := make(chan struct{}, 1)
	return &environment{stop: stop, info: info, wake: wake, cur: -1, accs: NewAccumulatorRegistry(),
		cp: checkpoints{mail: newMailbox(wake)}, recordsIn: new(metrics.Counter), recordsOut: new(metrics.Counter)}
}

// openInput attaches the task's next input gate, reading what d names (in tests).
func (e *environment) openInput(s *Shuffle, job jobgraph.JobID, d rpc.InputGateDeploymentDescriptor) error {
	gates, err := s.CreateInputGates(ShuffleIOOwnerContext{JobID: job, Stop: e.stop, Wake: e.wake, BeforeWait: e.flushIdle}, []rpc.InputGateDeploymentDescriptor{d})
	if err != nil {
		return err
	}
	e.gates = append(e.gates, gates...)
	return nil
}

func (e *environment) Info() TaskInfo  { return e.info }
func (e *environment) NumInputs() int  { return len(e.gates) }
func (e *environment) NumOutputs() int { return len(e.writers) }

func (e *environment) AccumulatorRegistry() *AccumulatorRegistry { return e.accs }

func (e *environment) SetCheckpointHandler(h CheckpointHandler) { e.checkpointHandler = h }

func (e *environment) RestoredState() (checkpoint.CheckpointID, checkpoint.StateHandle, bool) {
	if e.restore == nil {
		return 0, checkpoint.StateHandle{}, false
	}
	return e.restore.CheckpointID, e.restore.State, true
}

func (e *environment) Input(i int) InputGate {
	if i < 0 || i >= len(e.gates) {
		return errorGate{fmt.Errorf("%s: input %d out of range [0, %d)", e.info.TaskName, i, len(e.gates))}
	}
	if len(e.inputs) != len(e.gates) {
		e.inputs = make([]taskInput, len(e.gates))
		for j := range e.inputs {
			e.inputs[j] = taskInput{e: e, i: j}
		}
	}
	return &e.inputs[i]
}

func (e *environment) Output(i int) ResultPartitionWriter {
	if i < 0 || i >= len(e.writers) {
		return errorWriter{fmt.Errorf("%s: output %d out of range [0, %d)", e.info.TaskName, i, len(e.writers))}
	}
	if len(e.outputs) != len(e.writers) {
		e.outputs = make([]taskOutput, len(e.writers))
		for j, w := range e.writers {
			e.outputs[j] = taskOutput{e: e, w: w}
		}
	}
	return &e.outputs[i]
}

// NextAny hands out the records of the batch it took last; see AnyInputReader. Each record
// counts in numRecordsIn.
func (e *environment) NextAny(ctx context.Context) (int, any, error) {
	i, r, err := e.nextAny(ctx)
	if err == nil {
		e.recordsIn.Inc()
	}
	return i, r, err
}

func (e *environment) nextAny(ctx context.Context) (int, any, error) {
	if err := e.stop.Err(); err != nil {
		return -1, nil, err
	}
	if e.attention() {
		if err := e.checkpointWork(ctx); err != nil {
			return -1, nil, err
		}
	}
	if i := e.cur; i >= 0 {
		if r, ok := e.gates[i].Buffered(); ok {
			return i, r, nil
		}
	}
	return e.nextAnyBatch(ctx)
}

// nextAnyBatch takes a batch from the first input, in turn from e.next, that has one, and waits
// on the gates' shared wake channel while none has. Flink:
// StreamMultipleInputProcessor.selectNextReadingInputIndex, with InputSelection.ALL.
func (e *environment) nextAnyBatch(ctx context.Context) (int, any, error) {
	if e.err != nil {
		return e.errIn, nil, e.err
	}
	e.cur = -1
	n := len(e.gates)
	defer e.notWaiting()
	for {
		if err := e.stop.Check(ctx); err != nil {
			return -1, nil, err
		}
		if e.attention() {
			if err := e.checkpointWork(ctx); err != nil {
				return -1, nil, err
			}
		}
		open, barriers := 0, false
	round:
		for k := range n {
			i := e.next + k
			if i >= n {
				i -= n
			}
			g := e.gates[i]
			r, ok, err := g.Poll()
			switch {
			case ok:
				if b, isBarrier := r.(*CheckpointBarrier); isBarrier {
					if err := e.onBarrier(ctx, i, b); err != nil {
						return -1, nil, err
					}
					// Look again from the top: the checkpoint may have been taken (the
					// inputs resumed, or a stop-with-savepoint to wait for).
					barriers = true
					break round
				}
				e.cur = i
				if e.next = i + 1; e.next == n {
					e.next = 0
				}
				return i, r, nil
			case err == io.EOF:
				e.endedInput(i)
			case err != nil:
				e.errIn, e.err = i, fmt.Errorf("input %d: %w", i, err)
				return i, nil, e.err
			default:
				open++
			}
		}
		if barriers {
			continue
		}
		if performed, err := e.checkAligned(ctx); err != nil {
			return -1, nil, err
		} else if performed {
			continue
		}
		if open == 0 {
			if err := e.endOfInput(ctx); err != nil {
				return -1, nil, err
			}
			return -1, nil, io.EOF
		}
		// Nothing to read: hand over what the task wrote, so that its consumers are not kept
		// waiting for it while it waits, tell the writers of the open inputs to hand over what
		// they hold, and wait for any of them.
		e.flushIdle()
		if !e.waiting {
			e.waiting = true
			for _, g := range e.gates {
				g.SetWaiting(true)
			}
		}
		select {
		case <-e.wake:
		case <-ctx.Done():
		case <-e.stop.ctx.Done():
		}
	}
}

// notWaiting clears the gates' hungry flags NextAny set: the task reads again.
func (e *environment) notWaiting() {
	if !e.waiting {
		return
	}
	e.waiting = false
	for _, g := range e.gates {
		g.SetWaiting(false)
	}
}

func (e *environment) flushIdle() {
	for _, w := range e.writers {
		w.FlushIdle()
	}
}

func (e *environment) closeInputs() {
	for _, g := range e.gates {
		g.Close()
	}
}

func (e *environment) finishOutputs(ctx context.Context) error {
	for _, w := range e.writers {
		if err := w.Finish(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (e *environment) failOutputs(cause error) {
	for _, w := range e.writers {
		w.Fail(cause)
	}
}

type errorGate struct{ err error }

func (g errorGate) Next(context.Context) (any, error) { return nil, g.err }

type errorWriter struct{ err error }

func (w errorWriter) NumSubpartitions() int                           { return 1 }
func (w errorWriter) Emit(context.Context, int, any) error            { return w.err }
func (w errorWriter) Broadcast(ctx context.Context, record any) error { return w.err }
