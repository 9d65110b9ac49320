package taskexecutor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/rpc"
)

// CheckpointBarrier marks, in the record stream of every subpartition, where checkpoint ID
// cuts it: what a task emitted before it belongs to the checkpoint's state, what follows does
// not. Sources emit it when triggered, every other task once it aligned its inputs (see
// CheckpointHandler). It travels through the shuffle as a record of type *CheckpointBarrier
// (see ShuffleReader.Poll); task code never receives one, and must not emit one. Flink:
// org.apache.flink.runtime.io.network.api.CheckpointBarrier.
type CheckpointBarrier struct {
	ID         checkpoint.CheckpointID
	Timestamp  time.Time
	Properties checkpoint.CheckpointProperties
}

// The task side of checkpoints: the task's mailbox, barrier alignment across its inputs, the
// snapshot, and the waits of stop-with-savepoint and of the final checkpoint (FLIP-147). Every
// method of checkpoints below runs on the task's goroutine, inside a call of its Environment.

type mailKind uint8

const (
	mailTrigger mailKind = iota
	mailConfirm
	mailAbort
	mailEvent // an operator event (see operatorevents.go)
)

// mail is one message of the TaskExecutor to a task.
type mail struct {
	kind    mailKind
	barrier CheckpointBarrier // a trigger's; ID and Timestamp for the others
	// An operator event's: the event and its answer, called exactly once (the handler's
	// outcome, or the task's end before it ran).
	event []byte
	done  func(error)
}

// mailbox is what the TaskExecutor's loop hands to a task: posted from the loop without
// waiting, run on the task's goroutine inside its next read or write, or while it waits. Flink:
// StreamTask's TaskMailbox. Safe for concurrent use, but held, which only the task's goroutine
// uses.
type mailbox struct {
	pending atomic.Bool // items is not empty: the one load a read or write pays
	mu      sync.Mutex
	items   []mail
	closed  bool          // the task ended: post refuses
	wake    chan struct{} // the Environment's: every wait of the task selects on it
	// held are the operator events that arrived before the task set its handler, in order.
	held []mail
}

func newMailbox(wake chan struct{}) *mailbox { return &mailbox{wake: wake} }

// post queues m and wakes the task; false, with nothing queued, once the task ended (close).
// Never waits.
func (m *mailbox) post(x mail) bool {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false
	}
	m.items = append(m.items, x)
	m.pending.Store(true)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
	return true
}

// requeueFront puts xs back before everything queued, in their order: mail taken but not run.
func (m *mailbox) requeueFront(xs []mail) {
	if len(xs) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		answerEvents(xs, errors.New("the task ended")) // unreachable: only the task requeues, before it closes
		return
	}
	m.items = append(append(make([]mail, 0, len(xs)+len(m.items)), xs...), m.items...)
	m.pending.Store(true)
}

// close refuses every later post and answers the operator events queued or held with err() (made
// only if there is one): the task ended before it handled them. On the task's goroutine, once
// its code returned.
func (m *mailbox) close(err func() error) {
	m.mu.Lock()
	m.closed = true
	items := m.items
	m.items = nil
	m.pending.Store(false)
	m.mu.Unlock()
	if hasEvent(m.held) || hasEvent(items) {
		e := err()
		answerEvents(m.held, e)
		answerEvents(items, e)
	}
	m.held = nil
}

// hasEvent reports whether xs holds an operator event.
func hasEvent(xs []mail) bool {
	for _, x := range xs {
		if x.kind == mailEvent {
			return true
		}
	}
	return false
}

// answerEvents answers the operator events among xs with err.
func answerEvents(xs []mail, err error) {
	for _, x := range xs {
		if x.kind == mailEvent {
			x.done(err)
		}
	}
}

// take returns what was posted, oldest first, and empties the box.
func (m *mailbox) take() []mail {
	if !m.pending.Load() {
		return nil
	}
	m.mu.Lock()
	items := m.items
	m.items = nil
	m.pending.Store(false)
	m.mu.Unlock()
	return items
}

// checkpointReporter sends a task's acknowledgements and declines to its JobMaster, in order,
// off the task's goroutine. Never waits.
type checkpointReporter interface {
	acknowledge(checkpoint.AcknowledgeCheckpoint)
	decline(checkpoint.DeclineCheckpoint)
}

// checkpoints is an Environment's checkpoint state. Used only from the task's goroutine, except
// mail.
type checkpoints struct {
	mail     *mailbox
	reporter checkpointReporter // nil: acks and declines go nowhere (tests)
	fail     func(error)        // fails the task: a NotifyCheckpointComplete error; nil in tests

	// aligning is the checkpoint whose barriers the inputs align; nil for none.
	aligning *CheckpointBarrier
	// done is the newest checkpoint the task took, declined or gave up: barriers and triggers
	// of older ones are stale.
	done      checkpoint.CheckpointID
	lastAcked checkpoint.CheckpointID
	ackOpen   bool // lastAcked is neither confirmed nor aborted yet
	confirmed checkpoint.CheckpointID
	// sync is a stop-with-savepoint savepoint the task took and waits the outcome of; stopped
	// says it was confirmed: every read and write returns ErrStopped. busy is sync != 0 ||
	// stopped: every read and write takes the slow path.
	sync    checkpoint.CheckpointID
	stopped bool
	busy    bool
	// FLIP-147: final says the source returned and waits for a final checkpoint; finalID is the
	// first checkpoint it acknowledged since (0: none yet, or it was aborted).
	final   bool
	finalID checkpoint.CheckpointID

	inputEnded []bool // by input: it reported io.EOF
	numEnded   int

	mailRun uint64 // how many mails runMail ran (Yield's "ran at least one")
}

// attention says a read or write must run checkpoint work first.
func (e *environment) attention() bool { return e.cp.busy || e.cp.mail.pending.Load() }

// checkpointWork runs the task's mail and, while a stop-with-savepoint savepoint waits for its
// outcome, waits for it. It returns ErrStopped once that savepoint was confirmed, a
// NotifyCheckpointComplete error, or the error of ctx or of the task's stop.
func (e *environment) checkpointWork(ctx context.Context) error {
	for {
		if e.cp.stopped {
			return ErrStopped
		}
		if err := e.runMail(ctx); err != nil {
			return err
		}
		if e.cp.stopped {
			return ErrStopped
		}
		if e.cp.sync == 0 {
			return nil
		}
		if err := e.waitMail(ctx); err != nil {
			return err
		}
	}
}

// waitMail waits for the task's wake channel (mail or data), ctx or the task's stop.
func (e *environment) waitMail(ctx context.Context) error {
	if err := e.stop.Check(ctx); err != nil {
		return err
	}
	select {
	case <-e.wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.stop.ctx.Done():
		return e.stop.ctx.Err()
	}
}

// runMail runs the task's mail in the order it was posted. When one fails, the mail after it
// goes back to the front of the mailbox: it runs at the next call, or, once the task ended, its
// operator events are answered (mailbox.close).
func (e *environment) runMail(ctx context.Context) error {
	items := e.cp.mail.take()
	for i, m := range items {
		e.cp.mailRun++
		var err error
		switch m.kind {
		case mailTrigger:
			err = e.triggered(ctx, m.barrier)
		case mailConfirm:
			err = e.confirmed(ctx, m.barrier.ID)
		case mailAbort:
			e.aborted(ctx, m.barrier.ID)
		case mailEvent:
			err = e.operatorEvent(m)
		}
		if err != nil {
			e.cp.mail.requeueFront(items[i+1:])
			return err
		}
	}
	return nil
}

// triggered runs TriggerCheckpoint: only a task without inputs, or whose inputs' producers all
// finished, takes the checkpoint from a trigger; the others take it when its barriers arrived.
// A task whose producers finished but that has records left to read takes it once it handed
// them all out, as if the barrier came after them on every channel (Flink's
// triggerUnfinishedChannelsCheckpoint).
func (e *environment) triggered(ctx context.Context, b CheckpointBarrier) error {
	live := 0
	if e.cp.numEnded < len(e.gates) {
		for _, g := range e.gates {
			if !g.ProducersFinished() {
				live++
			}
		}
	}
	switch {
	case !e.takesSnapshots():
		e.decline(b.ID, checkpoint.CheckpointDeclinedTaskNotCheckpointing, "the job does not take checkpoints")
	case e.cp.sync != 0 || e.cp.stopped:
		e.decline(b.ID, checkpoint.CheckpointDeclinedTaskClosing, "the task is stopping with a savepoint")
	case live > 0:
		e.decline(b.ID, checkpoint.CheckpointDeclinedTaskNotReady,
			fmt.Sprintf("%s has %d inputs whose producers have not finished: it takes checkpoints when their barriers arrive", e.info.TaskName, live))
	case b.ID <= e.cp.done || (e.cp.aligning != nil && b.ID <= e.cp.aligning.ID):
		e.decline(b.ID, checkpoint.CheckpointDeclinedSubsumed, fmt.Sprintf("%s took, gave up or aligns a checkpoint as new already", e.info.TaskName))
	case e.cp.numEnded < len(e.gates):
		if a := e.cp.aligning; a != nil {
			e.decline(a.ID, checkpoint.CheckpointDeclinedSubsumed, fmt.Sprintf("%s: checkpoint %d was triggered while it aligned checkpoint %d", e.info.TaskName, b.ID, a.ID))
			e.cp.done = a.ID
			e.resumeInputs(a.ID)
		}
		e.cp.aligning = &b
		_, err := e.checkAligned(ctx)
		return err
	default:
		return e.perform(ctx, &b)
	}
	return nil
}

// perform takes checkpoint b: the snapshot, the barrier to every output, the inputs resumed,
// then the acknowledgement (or the decline of a failed snapshot; the barrier goes on anyway,
// so the tasks downstream are not kept aligning a checkpoint that will not complete).
func (e *environment) perform(ctx context.Context, b *CheckpointBarrier) error {
	if a := e.cp.aligning; a != nil && a.ID < b.ID {
		e.decline(a.ID, checkpoint.CheckpointDeclinedSubsumed, fmt.Sprintf("checkpoint %d came before its alignment ended", b.ID))
	}
	e.cp.aligning = nil
	e.cp.done = max(e.cp.done, b.ID)
	enabled := e.takesSnapshots()
	var state checkpoint.StateHandle
	var serr error
	if h := e.checkpointHandler; h != nil && enabled {
		state, serr = h.SnapshotState(ctx, b.ID)
	}
	for i, w := range e.writers {
		if err := w.BroadcastBarrier(ctx, b); err != nil {
			return fmt.Errorf("output %d: sending the barrier of checkpoint %d: %w", i, b.ID, err)
		}
	}
	e.resumeInputs(b.ID)
	if !enabled {
		return nil
	}
	if serr != nil {
		e.decline(b.ID, checkpoint.CheckpointDeclined, fmt.Sprintf("%s: snapshot of checkpoint %d failed: %v", e.info.TaskName, b.ID, serr))
		return nil
	}
	if r := e.cp.reporter; r != nil {
		r.acknowledge(checkpoint.AcknowledgeCheckpoint{Attempt: e.info.ExecutionAttemptID, CheckpointID: b.ID, State: state})
	}
	e.cp.lastAcked, e.cp.ackOpen = b.ID, b.ID > e.cp.confirmed
	if e.cp.final && e.cp.finalID == 0 {
		e.cp.finalID = b.ID
	}
	if b.Properties.IsSynchronous() {
		e.cp.sync, e.cp.busy = b.ID, true
	}
	return nil
}

// confirmed runs ConfirmCheckpoint: the handler hears of the newest confirmation only (one
// covers every earlier checkpoint).
func (e *environment) confirmed(ctx context.Context, id checkpoint.CheckpointID) error {
	if id <= e.cp.confirmed {
		return nil
	}
	e.cp.confirmed = id
	if id >= e.cp.lastAcked {
		e.cp.ackOpen = false
	}
	if h := e.checkpointHandler; h != nil && e.takesSnapshots() {
		if err := h.NotifyCheckpointComplete(ctx, id); err != nil {
			err = fmt.Errorf("%s: NotifyCheckpointComplete(%d): %w", e.info.TaskName, id, err)
			if e.cp.fail != nil {
				e.cp.fail(err)
			}
			return err
		}
	}
	if e.cp.sync != 0 && id >= e.cp.sync {
		e.cp.sync, e.cp.stopped = 0, true
	}
	return nil
}

// aborted runs AbortCheckpoint: an alignment of id (or older) ends, its later barriers are
// dropped, a stop-with-savepoint savepoint id lets the task go on.
func (e *environment) aborted(ctx context.Context, id checkpoint.CheckpointID) {
	if a := e.cp.aligning; a != nil && a.ID <= id {
		e.cp.aligning = nil
	}
	if id > e.cp.done {
		e.cp.done = id
	}
	e.resumeInputs(e.cp.done)
	if id == e.cp.lastAcked {
		e.cp.ackOpen = false
	}
	if e.cp.sync == id {
		e.cp.sync, e.cp.busy = 0, e.cp.stopped
	}
	if e.cp.final && e.cp.finalID == id {
		e.cp.finalID = 0
		if e.cp.lastAcked > id {
			e.cp.finalID = e.cp.lastAcked
		}
	}
	if h := e.checkpointHandler; h != nil && e.takesSnapshots() {
		h.NotifyCheckpointAborted(ctx, id)
	}
}

func (e *environment) decline(id checkpoint.CheckpointID, reason checkpoint.CheckpointFailureReason, msg string) {
	if r := e.cp.reporter; r != nil {
		r.decline(checkpoint.DeclineCheckpoint{Attempt: e.info.ExecutionAttemptID, CheckpointID: id, Reason: reason, Message: msg})
	}
}

// takesSnapshots reports whether the task takes part in its job's snapshots: with periodic
// checkpoints (TaskInfo.CheckpointingEnabled), or savepoints and manual checkpoints only
// (rpc.TaskDeploymentDescriptor.HasCheckpointCoordinator).
func (e *environment) takesSnapshots() bool { return e.info.CheckpointingEnabled || e.snapshots }

func (e *environment) resumeInputs(upTo checkpoint.CheckpointID) {
	for _, g := range e.gates {
		g.ResumeAlignment(upTo)
	}
}

// onBarrier handles barrier b that input i handed out: the task aligns b's checkpoint (a newer
// one subsumes the one aligned, which is declined) and takes it once every input is aligned.
func (e *environment) onBarrier(ctx context.Context, i int, b *CheckpointBarrier) error {
	a := e.cp.aligning
	switch {
	case b.ID <= e.cp.done || (a != nil && b.ID < a.ID):
		e.gates[i].ResumeAlignment(b.ID) // stale: its channel goes on
		return nil
	case a != nil && b.ID > a.ID:
		e.decline(a.ID, checkpoint.CheckpointDeclinedSubsumed,
			fmt.Sprintf("%s: the barrier of checkpoint %d arrived while it aligned checkpoint %d", e.info.TaskName, b.ID, a.ID))
		e.cp.done = a.ID
		e.resumeInputs(a.ID) // input i aligns b.ID now: untouched
		a = nil
	}
	if a == nil {
		c := *b
		e.cp.aligning = &c
	}
	_, err := e.checkAligned(ctx)
	return err
}

// checkAligned takes the checkpoint being aligned once every input is aligned (or ended).
func (e *environment) checkAligned(ctx context.Context) (performed bool, err error) {
	a := e.cp.aligning
	if a == nil {
		return false, nil
	}
	for _, g := range e.gates {
		if !g.Aligned(a.ID) {
			return false, nil
		}
	}
	return true, e.perform(ctx, a)
}

// endedInput notes that input i reported io.EOF.
func (e *environment) endedInput(i int) {
	if e.cp.inputEnded == nil {
		e.cp.inputEnded = make([]bool, len(e.gates))
	}
	if !e.cp.inputEnded[i] {
		e.cp.inputEnded[i] = true
		e.cp.numEnded++
	}
}

// endOfInput runs before a read reports that every input ended: in a job that takes
// checkpoints, the task waits until the last checkpoint it acknowledged is confirmed or
// aborted, taking the checkpoints triggered meanwhile.
func (e *environment) endOfInput(ctx context.Context) error {
	if !e.info.CheckpointingEnabled {
		return nil
	}
	for {
		if e.attention() {
			if err := e.checkpointWork(ctx); err != nil {
				return err
			}
		}
		if !e.cp.ackOpen {
			return nil
		}
		e.flushIdle()
		if err := e.waitMail(ctx); err != nil {
			return err
		}
	}
}

// finalCheckpoint is FLIP-147 for a source whose task code returned nil: it waits for the next
// checkpoint's trigger, takes it, and returns once that checkpoint (or a later one) is
// confirmed. An aborted one makes it wait for the next. It returns nil too when a
// stop-with-savepoint savepoint taken meanwhile was confirmed.
func (e *environment) finalCheckpoint(ctx context.Context) error {
	e.cp.final = true
	for {
		if err := e.checkpointWork(ctx); err != nil {
			if errors.Is(err, ErrStopped) {
				return nil
			}
			return err
		}
		if e.cp.finalID != 0 && e.cp.confirmed >= e.cp.finalID {
			return nil
		}
		e.flushIdle()
		if err := e.waitMail(ctx); err != nil {
			return err
		}
	}
}

// taskInput is the InputGate task code gets: reads run the task's mail and consume barriers.
type taskInput struct {
	e *environment
	i int
	// notInt64 is the error of a record NextInt64s took that is not an int64, for its next
	// call.
	notInt64 error
}

// Next counts each record it returns in numRecordsIn.
func (in *taskInput) Next(ctx context.Context) (any, error) {
	r, err := in.next(ctx)
	if err == nil {
		in.e.recordsIn.Inc()
	}
	return r, err
}

func (in *taskInput) next(ctx context.Context) (any, error) {
	e := in.e
	if err := e.stop.Err(); err != nil {
		return nil, err
	}
	if e.attention() {
		if err := e.checkpointWork(ctx); err != nil {
			return nil, err
		}
	}
	if r, ok := e.gates[in.i].Buffered(); ok {
		return r, nil
	}
	return e.nextOf(ctx, in.i)
}

// nextOf takes the next batch of input i and waits while there is none: InputGate.Next with the
// task's mail, barriers and alignment.
func (e *environment) nextOf(ctx context.Context, i int) (any, error) {
	g := e.gates[i]
	waiting := false
	defer func() {
		if waiting {
			g.SetWaiting(false)
		}
	}()
	for {
		if e.inErr == nil || e.inErr[i] == nil {
			if err := e.stop.Check(ctx); err != nil {
				return nil, err
			}
		}
		if e.attention() {
			if err := e.checkpointWork(ctx); err != nil {
				return nil, err
			}
		}
		r, ok, err := g.Poll()
		switch {
		case ok:
			if b, isBarrier := r.(*CheckpointBarrier); isBarrier {
				if err := e.onBarrier(ctx, i, b); err != nil {
					return nil, err
				}
				continue
			}
			return r, nil
		case err == io.EOF:
			e.endedInput(i)
			if _, err := e.checkAligned(ctx); err != nil {
				return nil, err
			}
			if e.cp.numEnded == len(e.gates) {
				if err := e.endOfInput(ctx); err != nil {
					return nil, err
				}
			}
			return nil, io.EOF
		case err != nil:
			if e.inErr == nil {
				e.inErr = make([]error, len(e.gates))
			}
			e.inErr[i] = err
			return nil, err
		}
		if performed, err := e.checkAligned(ctx); err != nil {
			return nil, err
		} else if performed {
			continue
		}
		e.flushIdle()
		if !waiting {
			g.SetWaiting(true)
			waiting = true
		}
		select {
		case <-e.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-e.stop.ctx.Done():
			return nil, e.stop.ctx.Err()
		}
	}
}

// taskOutput is the ResultPartitionWriter task code gets: writes run the task's mail first (a
// source's trigger, before the record is handed over).
type taskOutput struct {
	e *environment
	w ShuffleWriter
}

func (o *taskOutput) NumSubpartitions() int { return o.w.NumSubpartitions() }

func (o *taskOutput) Emit(ctx context.Context, s int, record any) error {
	if o.e.attention() {
		if err := o.e.checkpointWork(ctx); err != nil {
			return err
		}
	}
	if err := o.w.Emit(ctx, s, record); err != nil {
		return err
	}
	o.e.recordsOut.Inc()
	return nil
}

func (o *taskOutput) Broadcast(ctx context.Context, record any) error {
	if o.e.attention() {
		if err := o.e.checkpointWork(ctx); err != nil {
			return err
		}
	}
	if err := o.w.Broadcast(ctx, record); err != nil {
		return err
	}
	o.e.recordsOut.Inc()
	return nil
}

// taskReporter is a task's checkpointReporter and eventSender: one goroutine at a time sends what is queued,
// in order, started when there is something to send; the task's goroutine waits for it before
// it reports its final state (waitSent), so a JobMaster hears a task's acks before its end.
type taskReporter struct {
	t       *task
	mu      sync.Mutex
	queue   []reportItem
	running bool
	wg      sync.WaitGroup
	jm      rpc.JobMasterGateway // the sending goroutine's
}

// reportItem is one call to the task's JobMaster. failed, if set, hears why it could not be
// made or failed (not while the TaskExecutor is closing); nil: the failure is logged.
type reportItem struct {
	send   func(context.Context, rpc.JobMasterGateway) error
	failed func(error)
}

func (r *taskReporter) acknowledge(ack checkpoint.AcknowledgeCheckpoint) {
	t := r.t
	r.post(func(ctx context.Context, jm rpc.JobMasterGateway) error {
		return jm.AcknowledgeCheckpoint(ctx, t.token, t.tdd.JobID, ack)
	})
}

func (r *taskReporter) decline(d checkpoint.DeclineCheckpoint) {
	t := r.t
	r.post(func(ctx context.Context, jm rpc.JobMasterGateway) error {
		return jm.DeclineCheckpoint(ctx, t.token, t.tdd.JobID, d)
	})
}

func (r *taskReporter) post(send func(context.Context, rpc.JobMasterGateway) error) {
	r.postItem(reportItem{send: send})
}

func (r *taskReporter) postItem(item reportItem) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue = append(r.queue, item)
	if !r.running {
		r.running = true
		r.wg.Add(1)
		go r.send()
	}
}

func (r *taskReporter) send() {
	defer r.wg.Done()
	te := r.t.te
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		item := r.queue[0]
		r.queue[0] = reportItem{}
		r.queue = r.queue[1:]
		r.mu.Unlock()
		if te.ctx.Err() != nil {
			continue // closing or killed: nothing more leaves
		}
		if r.jm == nil {
			jm, err := rpc.Connect[rpc.JobMasterGateway](te.ctx, te.rpc, r.t.jmAddress)
			if err != nil {
				if item.failed != nil {
					item.failed(err)
				} else {
					te.log.Warn("cannot reach the JobMaster to report a checkpoint", "task", r.t.tdd.TaskName, "error", err)
				}
				continue
			}
			r.jm = jm
		}
		if err := item.send(te.ctx, r.jm); err != nil && te.ctx.Err() == nil {
			if item.failed != nil {
				item.failed(err)
			} else {
				te.log.Warn("reporting a checkpoint failed", "task", r.t.tdd.TaskName, "error", err)
			}
		}
	}
}

// waitSent waits until everything queued was sent. On the task's goroutine.
func (r *taskReporter) waitSent() { r.wg.Wait() }
