package coordination

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// Errors of a Holder and of the SubtaskGateways it hands out.
var (
	// ErrHolderClosed is returned (wrapped) by a Holder's methods after Close, and given to the
	// checkpoint result of a CheckpointCoordinator call made after Close.
	ErrHolderClosed = errors.New("coordination: operator coordinator closed")
	// ErrNotCurrentAttempt is returned (wrapped, naming the attempt) by
	// Holder.HandleEventFromOperator for an event of an attempt that is not its subtask's
	// current running attempt (an outdated attempt, one not INITIALIZING or RUNNING yet, one that
	// failed): the event is dropped before it reaches the coordinator.
	ErrNotCurrentAttempt = errors.New("coordination: event from an attempt that is not its subtask's current running attempt")
	// ErrGatewayClosed is the ack error of an event sent through, or held in, the gateway of an
	// attempt that failed or was replaced by a later attempt of its subtask: the event was not
	// sent (or, if held, not released).
	ErrGatewayClosed = errors.New("coordination: subtask gateway closed: its attempt failed or was replaced")
	// ErrCheckpointAborted is the checkpoint result error of a CheckpointCoordinator call whose
	// checkpoint was aborted (AbortCurrentTriggering, NotifyCheckpointAborted, ResetToCheckpoint)
	// before the coordinator's state was in and every event sent before it was acknowledged.
	ErrCheckpointAborted = errors.New("coordination: checkpoint aborted before the coordinator's state was taken")
	// ErrEventLost is matched by the checkpoint result error of a checkpoint that an event sent
	// before it did not reach its attempt, and by the cause a still-current attempt is failed
	// with when an event to it was lost (Flink's "An OperatorEvent from an OperatorCoordinator to
	// a task was lost").
	ErrEventLost = errors.New("coordination: an event from the operator coordinator to a task was lost")
)

func init() {
	jobgraph.RegisterErrorCode("coordination.holder-closed", ErrHolderClosed)
	jobgraph.RegisterErrorCode("coordination.not-current-attempt", ErrNotCurrentAttempt)
	jobgraph.RegisterErrorCode("coordination.gateway-closed", ErrGatewayClosed)
	jobgraph.RegisterErrorCode("coordination.checkpoint-aborted", ErrCheckpointAborted)
	jobgraph.RegisterErrorCode("coordination.event-lost", ErrEventLost)
	jobgraph.RegisterErrorCode("coordination.unknown-coordinator", ErrUnknownCoordinator)
}

// CoordinatorError is the cause a Holder fails the job with when its coordinator's method
// returned an error, or when the coordinator called Context.FailJob (Method "FailJob"). It
// unwraps to the coordinator's error. Across a transport only its message and the sentinels Err
// matches travel.
type CoordinatorError struct {
	Name   string               // the coordinator's name in the Registry
	Vertex jobgraph.JobVertexID // its vertex
	Method string               // "Start", "HandleEventFromOperator", …, or "FailJob"
	Err    error
}

func (e *CoordinatorError) Error() string {
	if e.Method == "FailJob" {
		return fmt.Sprintf("operator coordinator %q of vertex %s failed the job: %v", e.Name, e.Vertex, e.Err)
	}
	return fmt.Sprintf("operator coordinator %q of vertex %s: %s: %v", e.Name, e.Vertex, e.Method, e.Err)
}

func (e *CoordinatorError) Unwrap() error { return e.Err }

// HolderConfig is what a Holder needs of its owner (the JobMaster's operator coordinator
// handler). Every field but FailAttempt is required.
type HolderConfig struct {
	// JobID and VertexID are the coordinator's job and vertex (Context.JobID, Context.VertexID).
	JobID    jobgraph.JobID
	VertexID jobgraph.JobVertexID
	// Name is the coordinator's name in Registry (jobgraph.JobVertex.OperatorCoordinator).
	// Registry nil, or without Name, fails NewHolder with ErrUnknownCoordinator.
	Name     string
	Registry *Registry
	// Config is Context.Config (jobgraph.JobVertex.OperatorCoordinatorConfig).
	Config []byte
	// Parallelism is the vertex's parallelism in the ExecutionGraph (Context.CurrentParallelism);
	// at least 1.
	Parallelism int
	// Execute posts fn to the owner's loop, from any goroutine, never blocking; false (fn
	// dropped) once the loop is closed. *mainloop.Loop's Execute.
	Execute func(fn func()) bool
	// Send delivers event to attempt, in the order of the calls (and, for the checkpoint valve,
	// in order with the checkpoint triggers the owner sends that attempt). Called on the loop; it
	// must not block. ack is called exactly once, from any goroutine: nil once the task handled
	// the event, else why it did not.
	Send func(attempt jobgraph.ExecutionAttemptID, event []byte, ack func(error))
	// FailJob fails the job globally (the scheduler's HandleGlobalFailure). Called on the loop,
	// possibly inside a Holder method the scheduler itself called (ExecutionAttemptReady from
	// its ExecutionStateListener): it must not call into the scheduler synchronously, but post.
	FailJob func(cause error)
	// FailAttempt, if set, fails an attempt that an event the coordinator sent did not reach
	// while the attempt is still its subtask's current one: it may have missed the event, and
	// only a restore makes the coordinator and the subtask agree again. Flink: SubtaskAccess.
	// triggerTaskFailover. Called on the loop, under FailJob's rule. nil: nothing is failed.
	FailAttempt func(attempt jobgraph.ExecutionAttemptID, cause error)
}

// Holder runs one OperatorCoordinator of one JobVertex for its owner, the JobMaster, and is
// what the scheduler and the CheckpointCoordinator see of it
// (checkpoint.OperatorCoordinatorCheckpointContext). It
//
//   - creates the coordinator (NewHolder) with a Context whose RunInMainThread runs on the
//     owner's loop until Close and whose FailJob fails the job globally;
//   - gives the coordinator one SubtaskGateway per attempt that reached INITIALIZING or RUNNING
//     (ExecutionAttemptReady) and closes it when the attempt failed or was canceled
//     (ExecutionAttemptFailed) or a later attempt of the subtask became ready: a closed
//     gateway's SendEvent acks ErrGatewayClosed;
//   - hands the coordinator only events of the subtask's current ready attempt
//     (HandleEventFromOperator);
//   - holds the events the coordinator sends from its checkpoint result until the checkpoint's
//     tasks were triggered (AfterSourceBarrierInjection) or the triggering failed
//     (AbortCurrentTriggering, NotifyCheckpointAborted, ResetToCheckpoint), then sends them in
//     the order they were sent, so each subtask gets them after its own snapshot (the valve);
//   - answers a checkpoint only once every event sent before the result was acknowledged, and
//     fails it (ErrEventLost) if one was not, as an event the coordinator's state counts as
//     delivered must not be lost;
//   - delivers every ack, checkpoint result and RunInMainThread function on the loop, never
//     inside the call that caused it, and none after Close;
//   - fails the job globally (HolderConfig.FailJob, with a *CoordinatorError) when a coordinator
//     method returns an error or the coordinator calls Context.FailJob — once, until the next
//     ResetToCheckpoint (Flink's LazyInitializedCoordinatorContext ignores repeated failJob
//     calls so too). ResetToCheckpoint's and SubtaskReset's errors are returned to the
//     scheduler instead.
//
// Every method is called on the owner's loop; none blocks. Context.RunInMainThread and
// Context.FailJob, checkpoint results and acks may come from any goroutine. Flink:
// OperatorCoordinatorHolder with SubtaskGatewayImpl (its per-checkpoint blocked events) and
// IncompleteFuturesTracker. Where we differ: gateways are per attempt (Flink re-creates them per
// subtask reset and checks the current attempt on send), and the coordinator runs on the
// JobMaster's loop itself, not on an executor of its own.
type Holder struct {
	cfg   HolderConfig
	coord OperatorCoordinator

	// arrived are checkpoint results that came in (from any goroutine) and were not processed
	// on the loop yet; a send processes them first, so "from the result on" holds exactly.
	mu      sync.Mutex
	arrived []arrivedResult

	// Loop-owned.
	started, closed bool
	failed          bool // FailJob was called since the last reset
	subtasks        []subtaskState
	marked          []checkpoint.CheckpointID // checkpoints asked for and not opened, ascending
	latestMarked    checkpoint.CheckpointID
	closedFor       []*heldBucket // the valve's closed checkpoints, ascending by ID
	unconfirmed     map[*outEvent]struct{}
	waiting         map[*checkpointWait]struct{}
}

var _ checkpoint.OperatorCoordinatorCheckpointContext = (*Holder)(nil)

type subtaskState struct {
	ready        *gateway // the current ready attempt's open gateway; nil if none
	latest       int      // the highest attempt number seen ready or failed; -1 for none
	latestFailed bool     // whether that attempt failed
}

type arrivedResult struct {
	id     checkpoint.CheckpointID
	state  []byte
	err    error
	result func([]byte, error)
}

// heldBucket holds the events sent after checkpoint id's result while its valve is closed.
type heldBucket struct {
	id     checkpoint.CheckpointID
	events []*outEvent
}

// outEvent is one event the coordinator sent, from SendEvent until its ack ran.
type outEvent struct {
	gw      *gateway
	event   []byte
	ack     func(error)
	done    bool
	waiters []*checkpointWait
}

// checkpointWait is a checkpoint whose state is in, waiting for the events sent before it.
type checkpointWait struct {
	id        checkpoint.CheckpointID
	state     []byte
	result    func([]byte, error)
	remaining int
	lost      error // the first event failure
	done      bool
}

// NewHolder creates cfg.Name's coordinator from cfg.Registry (Registry.Create: its errors name
// the coordinator and the vertex and wrap ErrUnknownCoordinator for a name not registered) on
// the owner's loop. It returns an error, and creates nothing, for a nil Registry (wrapping
// ErrUnknownCoordinator, naming both), a Parallelism below 1, or a missing Execute, Send or
// FailJob. The coordinator is not started: Start does that.
func NewHolder(cfg HolderConfig) (*Holder, error) {
	switch {
	case cfg.Registry == nil:
		return nil, fmt.Errorf("%w: %q (vertex %s; no coordination.Registry is configured)", ErrUnknownCoordinator, cfg.Name, cfg.VertexID)
	case cfg.Parallelism < 1:
		return nil, fmt.Errorf("coordination: coordinator %q of vertex %s: parallelism %d, want at least 1", cfg.Name, cfg.VertexID, cfg.Parallelism)
	case cfg.Execute == nil || cfg.Send == nil || cfg.FailJob == nil:
		return nil, fmt.Errorf("coordination: coordinator %q of vertex %s: HolderConfig needs Execute, Send and FailJob", cfg.Name, cfg.VertexID)
	}
	h := &Holder{
		cfg:          cfg,
		subtasks:     make([]subtaskState, cfg.Parallelism),
		latestMarked: checkpoint.NoCheckpoint,
		unconfirmed:  make(map[*outEvent]struct{}),
		waiting:      make(map[*checkpointWait]struct{}),
	}
	for i := range h.subtasks {
		h.subtasks[i].latest = -1
	}
	c, err := cfg.Registry.Create(cfg.Name, holderContext{h})
	if err != nil {
		return nil, err
	}
	h.coord = c
	return h, nil
}

// Name is the coordinator's name in the Registry.
func (h *Holder) Name() string { return h.cfg.Name }

// VertexID implements checkpoint.OperatorCoordinatorCheckpointContext.
func (h *Holder) VertexID() jobgraph.JobVertexID { return h.cfg.VertexID }

// Coordinator is the coordinator the Holder runs (for tests and diagnostics; call nothing on it).
func (h *Holder) Coordinator() OperatorCoordinator { return h.coord }

// Start starts the coordinator, once: the owner calls it after the initial ResetToCheckpoint (if
// any) and before scheduling starts. The coordinator's error fails the job (and is returned,
// wrapped in a *CoordinatorError); a second Start, or one after Close, returns an error and
// calls nothing. Flink: OperatorCoordinatorHolder.start.
func (h *Holder) Start() error {
	if h.closed {
		return h.closedErr()
	}
	if h.started {
		return fmt.Errorf("coordination: coordinator %q of vertex %s started twice", h.cfg.Name, h.cfg.VertexID)
	}
	h.started = true
	return h.check("Start", h.safely(h.coord.Start))
}

// Close closes the coordinator, once; later calls return nil. From then on no coordinator method,
// ack, checkpoint result or RunInMainThread function runs; held events are dropped. It returns
// the coordinator's Close error (wrapped), and fails nothing: the job is ending.
func (h *Holder) Close() error {
	if h.closed {
		return nil
	}
	h.closed = true
	for i := range h.subtasks {
		if g := h.subtasks[i].ready; g != nil {
			g.closed = true
			h.subtasks[i].ready = nil
		}
	}
	h.closedFor, h.marked = nil, nil
	clear(h.unconfirmed)
	clear(h.waiting)
	h.mu.Lock()
	h.arrived = nil
	h.mu.Unlock()
	if err := h.safely(h.coord.Close); err != nil {
		return &CoordinatorError{Name: h.cfg.Name, Vertex: h.cfg.VertexID, Method: "Close", Err: err}
	}
	return nil
}

// HandleEventFromOperator hands the coordinator an event attempt sent, if attempt is its
// subtask's current ready attempt (ExecutionAttemptReady, not failed since); otherwise the event
// is dropped and the error wraps ErrNotCurrentAttempt. It also returns an error for an attempt of
// another vertex or a subtask outside the parallelism, and ErrHolderClosed after Close. The
// coordinator's error fails the job and is not returned: the event was delivered. Flink:
// DefaultOperatorCoordinatorHandler.deliverOperatorEventToCoordinator.
func (h *Holder) HandleEventFromOperator(attempt jobgraph.ExecutionAttemptID, event []byte) error {
	if h.closed {
		return h.closedErr()
	}
	s, err := h.subtaskOf(attempt)
	if err != nil {
		return err
	}
	if g := h.subtasks[s].ready; g == nil || g.id != attempt {
		return fmt.Errorf("%w: %s (vertex %s's coordinator %q)", ErrNotCurrentAttempt, attempt, h.cfg.VertexID, h.cfg.Name)
	}
	_ = h.check("HandleEventFromOperator", h.safely(func() error { return h.coord.HandleEventFromOperator(s, attempt.AttemptNumber, event) }))
	return nil
}

// ExecutionAttemptReady gives the coordinator a new gateway to attempt, which reached
// INITIALIZING or RUNNING (Flink: the execution's initializing-or-running future). It closes the
// gateway of an earlier attempt of the subtask still open. A repeated call for the same attempt
// (RUNNING after INITIALIZING), or a call for an attempt older than, or equal to and failed as,
// the newest one seen, does nothing. The coordinator's error fails the job. An error for an
// attempt of another vertex or a subtask outside the parallelism; nil after Close (nothing is
// called). Flink: OperatorCoordinatorHolder.notifySubtaskReady.
func (h *Holder) ExecutionAttemptReady(attempt jobgraph.ExecutionAttemptID) error {
	if h.closed {
		return nil
	}
	s, err := h.subtaskOf(attempt)
	if err != nil {
		return err
	}
	st := &h.subtasks[s]
	n := attempt.AttemptNumber
	switch {
	case st.ready != nil && st.ready.id == attempt:
		return nil
	case n < st.latest, n == st.latest && st.latestFailed:
		return nil
	}
	if st.ready != nil {
		h.closeGateway(st.ready)
	}
	g := &gateway{h: h, id: attempt}
	st.ready, st.latest, st.latestFailed = g, n, false
	_ = h.check("ExecutionAttemptReady", h.safely(func() error { return h.coord.ExecutionAttemptReady(s, n, g) }))
	return nil
}

// ExecutionAttemptFailed tells the coordinator that attempt failed (reason: its failure) or was
// canceled (reason nil), and closes its gateway: its held events are acked ErrGatewayClosed, and
// its events arriving later are dropped. Every attempt is passed on once per call, also one that
// never became ready. The coordinator's error fails the job. An error for an attempt of another
// vertex or a subtask outside the parallelism; nil after Close. Flink:
// OperatorCoordinatorHolder.executionAttemptFailed (from SchedulerBase's onTaskFailed and the
// cancellation workaround of FLINK-19167).
func (h *Holder) ExecutionAttemptFailed(attempt jobgraph.ExecutionAttemptID, reason error) error {
	if h.closed {
		return nil
	}
	s, err := h.subtaskOf(attempt)
	if err != nil {
		return err
	}
	st := &h.subtasks[s]
	if st.ready != nil && st.ready.id == attempt {
		h.closeGateway(st.ready)
		st.ready = nil
	}
	if attempt.AttemptNumber >= st.latest {
		st.latest, st.latestFailed = attempt.AttemptNumber, true
	}
	_ = h.check("ExecutionAttemptFailed", h.safely(func() error { return h.coord.ExecutionAttemptFailed(s, attempt.AttemptNumber, reason) }))
	return nil
}

// CheckpointCoordinator implements checkpoint.OperatorCoordinatorCheckpointContext: it asks the
// coordinator for its state for id and calls result exactly once, on the loop, never inside this
// call: with the state once the coordinator gave it and every event sent before was
// acknowledged; with the coordinator's error; with an error matching ErrEventLost if such an
// event was not acknowledged; ErrCheckpointAborted if id was aborted or the coordinator reset
// first; an error for an id not above every earlier one; ErrHolderClosed for a call after Close.
// A result still to come when Close is called is never delivered. From the coordinator's
// result on (even when it came from another goroutine), the valve holds its events back until
// AfterSourceBarrierInjection(id), AbortCurrentTriggering, NotifyCheckpointAborted(id) or
// ResetToCheckpoint. Flink: OperatorCoordinatorHolder.checkpointCoordinator with
// completeCheckpointOnceEventsAreDone.
func (h *Holder) CheckpointCoordinator(id checkpoint.CheckpointID, result func(state []byte, err error)) {
	if h.closed {
		err := h.closedErr()
		h.cfg.Execute(func() { result(nil, err) })
		return
	}
	if id <= h.latestMarked {
		err := fmt.Errorf("coordination: coordinator %q of vertex %s: checkpoint %d is not newer than checkpoint %d", h.cfg.Name, h.cfg.VertexID, id, h.latestMarked)
		h.post(func() { result(nil, err) })
		return
	}
	h.latestMarked = id
	h.marked = append(h.marked, id)
	var once sync.Once
	deliver := func(state []byte, err error) {
		once.Do(func() {
			h.mu.Lock()
			h.arrived = append(h.arrived, arrivedResult{id: id, state: state, err: err, result: result})
			h.mu.Unlock()
			h.cfg.Execute(func() {
				if !h.closed {
					h.processArrived()
				}
			})
		})
	}
	// A coordinator that panics here fails the checkpoint (and the job, as its other methods'
	// panics do); a result it still delivers later is ignored (once).
	if err := h.safely(func() error { h.coord.CheckpointCoordinator(int64(id), deliver); return nil }); err != nil {
		deliver(nil, h.check("CheckpointCoordinator", err))
	}
}

// processArrived closes the valve for each checkpoint whose coordinator state came in and starts
// waiting for the events sent before it. On the loop.
func (h *Holder) processArrived() {
	h.mu.Lock()
	arrived := h.arrived
	h.arrived = nil
	h.mu.Unlock()
	for _, a := range arrived {
		switch {
		case !slices.Contains(h.marked, a.id):
			h.post(func() { a.result(nil, h.abortedErr(a.id)) })
		case a.err != nil:
			h.unmark(a.id)
			err := &CoordinatorError{Name: h.cfg.Name, Vertex: h.cfg.VertexID, Method: "CheckpointCoordinator", Err: a.err}
			h.post(func() { a.result(nil, err) })
		default:
			h.shut(a.id)
			w := &checkpointWait{id: a.id, state: a.state, result: a.result}
			for ev := range h.unconfirmed {
				ev.waiters = append(ev.waiters, w)
				w.remaining++
			}
			if w.remaining == 0 {
				w.done = true
				h.post(func() { a.result(a.state, nil) })
			} else {
				h.waiting[w] = struct{}{}
			}
		}
	}
}

// shut closes the valve for id: events sent from now on are held in its bucket.
func (h *Holder) shut(id checkpoint.CheckpointID) {
	i, _ := slices.BinarySearchFunc(h.closedFor, id, func(b *heldBucket, id checkpoint.CheckpointID) int { return cmpID(b.id, id) })
	h.closedFor = slices.Insert(h.closedFor, i, &heldBucket{id: id})
}

func cmpID(a, b checkpoint.CheckpointID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// open unmarks id and opens its valve: if it is the earliest closed checkpoint its held events
// go out in order; otherwise they join the earlier checkpoint's, still held. A wait for id's
// events ends with ErrCheckpointAborted when aborted. Flink: SubtaskGatewayImpl.
// openGatewayAndUnmarkCheckpoint.
func (h *Holder) open(id checkpoint.CheckpointID, aborted bool) {
	if !h.unmark(id) {
		return
	}
	if aborted {
		h.abortWaits(func(w *checkpointWait) bool { return w.id == id })
	}
	i := slices.IndexFunc(h.closedFor, func(b *heldBucket) bool { return b.id == id })
	if i < 0 {
		return
	}
	b := h.closedFor[i]
	h.closedFor = slices.Delete(h.closedFor, i, i+1)
	if i > 0 {
		prev := h.closedFor[i-1]
		prev.events = append(prev.events, b.events...)
		return
	}
	for _, ev := range b.events {
		h.transmit(ev)
	}
}

func (h *Holder) unmark(id checkpoint.CheckpointID) bool {
	i := slices.Index(h.marked, id)
	if i < 0 {
		return false
	}
	h.marked = slices.Delete(h.marked, i, i+1)
	return true
}

func (h *Holder) abortWaits(which func(*checkpointWait) bool) {
	for w := range h.waiting {
		if which(w) {
			delete(h.waiting, w)
			w.done = true
			err := h.abortedErr(w.id)
			h.post(func() { w.result(nil, err) })
		}
	}
}

func (h *Holder) abortedErr(id checkpoint.CheckpointID) error {
	return fmt.Errorf("%w: checkpoint %d of coordinator %q of vertex %s", ErrCheckpointAborted, id, h.cfg.Name, h.cfg.VertexID)
}

// AfterSourceBarrierInjection implements checkpoint.OperatorCoordinatorCheckpointContext: id's
// tasks were triggered, so the events held since id's result go out (if no earlier checkpoint
// still holds them). Nothing for an id not being triggered, or after Close.
func (h *Holder) AfterSourceBarrierInjection(id checkpoint.CheckpointID) {
	if h.closed {
		return
	}
	h.processArrived()
	h.open(id, false)
}

// AbortCurrentTriggering implements checkpoint.OperatorCoordinatorCheckpointContext: the newest
// checkpoint being triggered failed before its tasks were triggered; its held events go out and
// its result, if still to come, is ErrCheckpointAborted. Nothing after Close.
func (h *Holder) AbortCurrentTriggering() {
	if h.closed || len(h.marked) == 0 {
		return
	}
	h.processArrived()
	if len(h.marked) > 0 {
		h.open(h.marked[len(h.marked)-1], true)
	}
}

// NotifyCheckpointComplete implements checkpoint.OperatorCoordinatorCheckpointContext (passed on
// to the coordinator; nothing after Close).
func (h *Holder) NotifyCheckpointComplete(id checkpoint.CheckpointID) {
	if h.closed {
		return
	}
	_ = h.check("NotifyCheckpointComplete", h.safely(func() error { h.coord.NotifyCheckpointComplete(int64(id)); return nil }))
}

// NotifyCheckpointAborted implements checkpoint.OperatorCoordinatorCheckpointContext: id's valve
// opens if it was still closed, its result if still to come is ErrCheckpointAborted, and the
// coordinator is told. Nothing after Close.
func (h *Holder) NotifyCheckpointAborted(id checkpoint.CheckpointID) {
	if h.closed {
		return
	}
	h.processArrived()
	h.open(id, true)
	_ = h.check("NotifyCheckpointAborted", h.safely(func() error { h.coord.NotifyCheckpointAborted(int64(id)); return nil }))
}

// ResetToCheckpoint implements checkpoint.OperatorCoordinatorCheckpointContext: every checkpoint
// under way is aborted (held events go out in order, results still to come are
// ErrCheckpointAborted), the job may be failed again by the coordinator, and the coordinator is
// reset to id with state (checkpoint.NoCheckpoint and nil: its initial state). The coordinator's
// error is returned, wrapped in a *CoordinatorError (the scheduler decides), and fails nothing;
// ErrHolderClosed after Close. Flink: OperatorCoordinatorHolder.resetToCheckpoint.
func (h *Holder) ResetToCheckpoint(id checkpoint.CheckpointID, state []byte) error {
	if h.closed {
		return h.closedErr()
	}
	h.processArrived()
	for len(h.marked) > 0 {
		h.open(h.marked[0], true)
	}
	h.abortWaits(func(*checkpointWait) bool { return true })
	h.failed = false
	if err := h.safely(func() error { return h.coord.ResetToCheckpoint(int64(id), state) }); err != nil {
		return &CoordinatorError{Name: h.cfg.Name, Vertex: h.cfg.VertexID, Method: "ResetToCheckpoint", Err: err}
	}
	return nil
}

// SubtaskReset implements checkpoint.OperatorCoordinatorCheckpointContext: passed on to the
// coordinator; its error is returned wrapped in a *CoordinatorError and fails nothing. An error
// for a subtask outside the parallelism; ErrHolderClosed after Close.
func (h *Holder) SubtaskReset(subtask int, id checkpoint.CheckpointID) error {
	if h.closed {
		return h.closedErr()
	}
	if subtask < 0 || subtask >= len(h.subtasks) {
		return fmt.Errorf("coordination: coordinator %q of vertex %s: SubtaskReset of subtask %d, parallelism %d", h.cfg.Name, h.cfg.VertexID, subtask, len(h.subtasks))
	}
	if err := h.safely(func() error { return h.coord.SubtaskReset(subtask, int64(id)) }); err != nil {
		return &CoordinatorError{Name: h.cfg.Name, Vertex: h.cfg.VertexID, Method: "SubtaskReset", Err: err}
	}
	return nil
}

// safely calls one of the coordinator's methods and turns a panic in it into its error: a
// *jobgraph.PanicError naming the coordinator. The coordinator is the host's code, and as
// Flink's OperatorCoordinatorHolder fails the job on a coordinator's exception, a panic fails
// the job (check) instead of the JobMaster's main loop, which would be fatal for the cluster.
func (h *Holder) safely(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &jobgraph.PanicError{Endpoint: fmt.Sprintf("coordinator %q of vertex %s", h.cfg.Name, h.cfg.VertexID), Value: r, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// check fails the job with a method's error (once until the next reset) and returns it wrapped.
func (h *Holder) check(method string, err error) error {
	if err == nil {
		return nil
	}
	cerr := &CoordinatorError{Name: h.cfg.Name, Vertex: h.cfg.VertexID, Method: method, Err: err}
	h.failJob(cerr)
	return cerr
}

func (h *Holder) failJob(cause error) {
	if h.failed || h.closed {
		return
	}
	h.failed = true
	h.cfg.FailJob(cause)
}

func (h *Holder) closedErr() error {
	return fmt.Errorf("%w: coordinator %q of vertex %s", ErrHolderClosed, h.cfg.Name, h.cfg.VertexID)
}

// post runs fn on the loop later, unless the Holder is closed by then.
func (h *Holder) post(fn func()) {
	h.cfg.Execute(func() {
		if !h.closed {
			fn()
		}
	})
}

func (h *Holder) subtaskOf(attempt jobgraph.ExecutionAttemptID) (int, error) {
	v := attempt.ExecutionVertexID
	if v.JobVertexID != h.cfg.VertexID {
		return 0, fmt.Errorf("coordination: attempt %s is not of vertex %s (coordinator %q)", attempt, h.cfg.VertexID, h.cfg.Name)
	}
	if v.Subtask < 0 || v.Subtask >= len(h.subtasks) {
		return 0, fmt.Errorf("coordination: attempt %s: subtask %d outside vertex %s's parallelism %d", attempt, v.Subtask, h.cfg.VertexID, len(h.subtasks))
	}
	return v.Subtask, nil
}

// send is SubtaskGateway.SendEvent. On the loop.
func (h *Holder) send(g *gateway, event []byte, ack func(error)) {
	if h.closed {
		return
	}
	h.processArrived()
	ev := &outEvent{gw: g, event: event, ack: ack}
	if g.closed {
		h.finish(ev, h.gatewayClosedErr(g))
		return
	}
	h.unconfirmed[ev] = struct{}{}
	if n := len(h.closedFor); n > 0 {
		b := h.closedFor[n-1]
		b.events = append(b.events, ev)
		return
	}
	h.transmit(ev)
}

func (h *Holder) gatewayClosedErr(g *gateway) error {
	return fmt.Errorf("%w: attempt %s (coordinator %q)", ErrGatewayClosed, g.id, h.cfg.Name)
}

// transmit hands ev to the owner's Send, unless its gateway closed meanwhile.
func (h *Holder) transmit(ev *outEvent) {
	if ev.gw.closed {
		h.finish(ev, h.gatewayClosedErr(ev.gw))
		return
	}
	var once sync.Once
	h.cfg.Send(ev.gw.id, ev.event, func(err error) {
		once.Do(func() { h.finish(ev, err) })
	})
}

// finish posts ev's completion to the loop: the checkpoints waiting for it hear of it, a loss to
// a still-current attempt fails that attempt, then the coordinator's ack runs.
func (h *Holder) finish(ev *outEvent, err error) {
	h.post(func() {
		if ev.done {
			return
		}
		ev.done = true
		delete(h.unconfirmed, ev)
		for _, w := range ev.waiters {
			if w.done {
				continue
			}
			if err != nil && w.lost == nil {
				w.lost = err
			}
			if w.remaining--; w.remaining == 0 {
				w.done = true
				delete(h.waiting, w)
				if w.lost != nil {
					w.result(nil, fmt.Errorf("%w before checkpoint %d (coordinator %q of vertex %s): %w", ErrEventLost, w.id, h.cfg.Name, h.cfg.VertexID, w.lost))
				} else {
					w.result(w.state, nil)
				}
			}
		}
		if err != nil && !ev.gw.closed && h.cfg.FailAttempt != nil {
			h.cfg.FailAttempt(ev.gw.id, fmt.Errorf("%w: attempt %s (coordinator %q of vertex %s): %w", ErrEventLost, ev.gw.id, h.cfg.Name, h.cfg.VertexID, err))
		}
		if ev.ack != nil {
			ev.ack(err)
		}
	})
}

// closeGateway closes g: its held events are acked ErrGatewayClosed.
func (h *Holder) closeGateway(g *gateway) {
	g.closed = true
	for _, b := range h.closedFor {
		kept := b.events[:0]
		for _, ev := range b.events {
			if ev.gw == g {
				h.finish(ev, h.gatewayClosedErr(g))
			} else {
				kept = append(kept, ev)
			}
		}
		clear(b.events[len(kept):])
		b.events = kept
	}
}

// gateway is the SubtaskGateway of one attempt. Flink: SubtaskGatewayImpl.
type gateway struct {
	h      *Holder
	id     jobgraph.ExecutionAttemptID
	closed bool // loop-owned
}

func (g *gateway) Subtask() int { return g.id.ExecutionVertexID.Subtask }
func (g *gateway) Attempt() int { return g.id.AttemptNumber }

// SendEvent implements SubtaskGateway; on the loop, as every coordinator method is. The gateway
// owns event from now on: it must not be changed.
func (g *gateway) SendEvent(event []byte, ack func(error)) { g.h.send(g, event, ack) }

// holderContext is the coordinator's Context.
type holderContext struct{ h *Holder }

func (c holderContext) JobID() jobgraph.JobID          { return c.h.cfg.JobID }
func (c holderContext) VertexID() jobgraph.JobVertexID { return c.h.cfg.VertexID }
func (c holderContext) Config() []byte                 { return c.h.cfg.Config }
func (c holderContext) CurrentParallelism() int        { return c.h.cfg.Parallelism }

// RunInMainThread posts fn to the owner's loop; it does not run if the Holder closed first. A
// panic in fn fails the job, as a coordinator method's does (safely).
func (c holderContext) RunInMainThread(fn func()) {
	h := c.h
	h.post(func() { _ = h.check("RunInMainThread", h.safely(func() error { fn(); return nil })) })
}

// FailJob fails the job globally from any goroutine, later on the loop, unless the Holder closed
// first or the job was failed already since the last reset.
func (c holderContext) FailJob(cause error) {
	h := c.h
	h.post(func() {
		h.failJob(&CoordinatorError{Name: h.cfg.Name, Vertex: h.cfg.VertexID, Method: "FailJob", Err: cause})
	})
}
