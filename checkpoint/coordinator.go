package checkpoint

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/metrics"
)

// DefaultMaxQueuedRequests bounds the queue of trigger requests (Flink's
// CheckpointRequestDecider.DEFAULT_MAX_QUEUED_REQUESTS).
const DefaultMaxQueuedRequests = 1000

// Timers schedules fn to run on the coordinator owner's loop after d; cancel stops it if it has
// not run yet and reports whether it did. *mainloop.Loop and *manualtime.Timers satisfy it.
type Timers interface {
	Schedule(d time.Duration, fn func()) (cancel func() bool)
}

// IOExecutor runs work that may block (CheckpointIDCounter.GetAndIncrement,
// CompletedCheckpointStore.Add) off the owner's loop, then runs done on the loop. work touches
// only the store or counter, never the coordinator; done must run exactly once, after work, on
// the loop. Flink: the coordinator's ioExecutor and its main-thread executor.
type IOExecutor interface {
	Execute(work func(), done func())
}

// InlineExecutor runs work and then done at once, on the caller's goroutine: for in-memory stores
// and tests, where work cannot block.
type InlineExecutor struct{}

// Execute runs work, then done.
func (InlineExecutor) Execute(work func(), done func()) { work(); done() }

// TaskGateway is how the coordinator reaches tasks. Flink: the CheckpointCoordinatorGateway calls
// on Execution (triggerCheckpoint, notifyCheckpointComplete, notifyCheckpointAborted). Called on
// the coordinator's goroutine; implementations must not block (they queue the RPC).
type TaskGateway interface {
	TriggerCheckpoint(task jobgraph.ExecutionAttemptID, id CheckpointID, timestamp time.Time, props CheckpointProperties)
	NotifyCheckpointComplete(task jobgraph.ExecutionAttemptID, id CheckpointID, timestamp time.Time)
	NotifyCheckpointAborted(task jobgraph.ExecutionAttemptID, id CheckpointID, timestamp time.Time)
}

// AcknowledgeCheckpoint is a task's acknowledgement: its state for the checkpoint. Flink:
// org.apache.flink.runtime.messages.checkpoint.AcknowledgeCheckpoint. Plain data.
type AcknowledgeCheckpoint struct {
	Attempt      jobgraph.ExecutionAttemptID `json:"attempt"`
	CheckpointID CheckpointID                `json:"checkpointId"`
	State        StateHandle                 `json:"state"`
}

// DeclineCheckpoint is a task's refusal to take a checkpoint. Flink: DeclineCheckpoint. A zero
// Reason means CheckpointDeclined.
type DeclineCheckpoint struct {
	Attempt      jobgraph.ExecutionAttemptID `json:"attempt"`
	CheckpointID CheckpointID                `json:"checkpointId"`
	Reason       CheckpointFailureReason     `json:"reason,omitempty"`
	Message      string                      `json:"message,omitempty"`
}

// Config configures a CheckpointCoordinator. Timers, Tasks, Plan, Store, IDCounter and FailJob
// are required.
type Config struct {
	JobID jobgraph.JobID
	// JobMasterID is the current JobMaster session's fencing token: every message and trigger
	// carrying another is dropped.
	JobMasterID jobgraph.JobMasterID
	// Settings: Interval (execution.checkpointing.interval; 0: no periodic checkpoints, manual
	// triggers still work), Timeout (execution.checkpointing.timeout, 0 means 10 min),
	// MinPauseBetweenCheckpoints (execution.checkpointing.min-pause, 0), MaxConcurrentCheckpoints
	// (execution.checkpointing.max-concurrent-checkpoints, 0 means 1), TolerableFailedCheckpoints
	// (execution.checkpointing.tolerable-failed-checkpoints, 0). NumRetained is the store's.
	Settings jobgraph.CheckpointingSettings
	Timers   Timers
	// Clock reads the time for trigger, ack and completion timestamps and the min pause; nil
	// means time.Now.
	Clock func() time.Time
	Tasks TaskGateway
	// Plan returns the current attempts to trigger and to wait for; called on the loop at each
	// trigger. An error fails that trigger with NotAllRequiredTasksRunning (not counted).
	Plan      func() (CheckpointPlan, error)
	Store     CompletedCheckpointStore
	IDCounter CheckpointIDCounter
	// Executor runs store and counter calls; nil means InlineExecutor (only for stores that do no
	// I/O: the owner's loop would wait on the disk otherwise).
	Executor IOExecutor
	FailJob  FailJobCallback
	// Savepoints creates, writes and discards savepoint locations (through the Executor); nil
	// means FileSavepointStorage{}: a savepoint triggered with a target directory becomes the
	// directory "<target>/savepoint-<job prefix>-<random>" with a _metadata file.
	Savepoints SavepointStorage
	// MaxQueuedRequests bounds the trigger queue; 0 means DefaultMaxQueuedRequests.
	MaxQueuedRequests int
	// StatsHistorySize is web.checkpoints.history; 0 means DefaultStatsHistorySize.
	StatsHistorySize int
	// Metrics, if not nil, is the job's metric group: the coordinator's statistics register
	// Flink's checkpoint metrics there (CheckpointStatsTracker.RegisterMetrics).
	Metrics *metrics.Group
	// Coordinators are the job's operator coordinators: each is checkpointed (in parallel; all
	// results in) before any task is triggered, told AfterSourceBarrierInjection after the tasks
	// were triggered, and told of completion and abortion. A coordinator's error declines the
	// checkpoint (Flink: TRIGGER_CHECKPOINT_FAILURE).
	Coordinators []OperatorCoordinatorCheckpointContext
}

type triggerRequest struct {
	props    CheckpointProperties
	periodic bool
	path     string
	timeout  time.Duration
	seq      int64
	done     func(CompletedCheckpoint, error)
}

type completion struct {
	p  *PendingCheckpoint
	cp CompletedCheckpoint
}

// CheckpointCoordinator triggers checkpoints and savepoints, collects the tasks'
// acknowledgements, completes, stores and announces them, and counts failures. Flink:
// org.apache.flink.runtime.checkpoint.CheckpointCoordinator with its CheckpointRequestDecider.
//
// Every method must be called from one goroutine, the owner's loop, as must the Timers' callbacks
// and the IOExecutor's done functions: no locks, no goroutines, no I/O of its own.
//
// Semantics:
//   - periodic triggers every Interval once StartCheckpointScheduler ran (the first one Interval
//     after it: where Flink picks a random first delay in [min pause, interval], ours is fixed so
//     runs are reproducible); a periodic trigger while another periodic request is queued adds
//     nothing (Flink queues each);
//   - requests are queued (savepoints first, then manual before periodic, then in arrival
//     order); one trigger is initialized (ID counter) at a time, and one that arrives meanwhile
//     waits in the queue; a full queue drops the youngest periodic request, or the new request
//     with TooManyCheckpointRequests;
//   - at most MaxConcurrentCheckpoints checkpoints are pending or being stored; savepoints ignore
//     the limit and the min pause;
//   - a periodic request less than MinPauseBetweenCheckpoints after the last completion is
//     dropped (MinimumTimeBetweenCheckpoints, not counted) and the periodic trigger is
//     rescheduled to fire exactly when the pause ends;
//   - a checkpoint completes when every attempt in its plan acknowledged; it is stored
//     (Store.Add, through the Executor) before anything else happens: then the failure count is
//     reset, the statistics record it, older pending checkpoints (not savepoints) are aborted as
//     CheckpointSubsumed, tasks get NotifyCheckpointComplete and the trigger's callback gets it;
//   - a pending checkpoint expires after Timeout (or a savepoint's own timeout):
//     CheckpointExpired, counted;
//   - with operator coordinators (Config.Coordinators), a trigger creates the pending checkpoint
//     (its timeout runs from then), asks every coordinator for its state at once, and triggers
//     the tasks only once all answered; then each coordinator gets AfterSourceBarrierInjection.
//     No other trigger starts meanwhile. A coordinator's error fails the checkpoint with
//     TriggerCheckpointFailure (not counted); that, or the checkpoint being aborted, expiring or
//     the coordinator shutting down before all answered, calls AbortCurrentTriggering on every
//     coordinator, and results arriving later are ignored. Completion and abortion are told to
//     the coordinators after the tasks (NotifyCheckpointComplete, NotifyCheckpointAborted);
//   - failures go through the CheckpointFailureManager.
type CheckpointCoordinator struct {
	cfg      Config
	now      func() time.Time
	exec     IOExecutor
	sps      SavepointStorage
	interval time.Duration
	timeout  time.Duration
	minPause time.Duration
	maxConc  int
	maxQueue int

	failures *CheckpointFailureManager
	stats    *CheckpointStatsTracker

	pending        map[CheckpointID]*PendingCheckpoint
	queue          []*triggerRequest
	seq            int64
	triggering     bool
	storeQueue     []completion
	storing        bool
	lastCompletion time.Time
	hasCompleted   bool
	// lastSnapshot is the newest snapshot stored or restored: where FINISHED tasks' state is
	// carried forward from.
	lastSnapshot *CompletedCheckpoint

	periodicOn     bool
	periodicGen    int64
	periodicCancel func() bool

	shutdown bool
}

// NewCheckpointCoordinator checks cfg and returns a coordinator whose periodic scheduler is not
// started. Errors: ErrInvalidConfig naming the missing or negative field.
func NewCheckpointCoordinator(cfg Config) (*CheckpointCoordinator, error) {
	s := cfg.Settings
	switch {
	case cfg.Timers == nil:
		return nil, errorsJoin(ErrInvalidConfig, "Config.Timers is nil")
	case cfg.Tasks == nil:
		return nil, errorsJoin(ErrInvalidConfig, "Config.Tasks is nil")
	case cfg.Plan == nil:
		return nil, errorsJoin(ErrInvalidConfig, "Config.Plan is nil")
	case cfg.Store == nil:
		return nil, errorsJoin(ErrInvalidConfig, "Config.Store is nil")
	case cfg.IDCounter == nil:
		return nil, errorsJoin(ErrInvalidConfig, "Config.IDCounter is nil")
	case validCoordinators(cfg.Coordinators) != nil:
		return nil, validCoordinators(cfg.Coordinators)
	case s.Interval < 0, s.Timeout < 0, s.MinPauseBetweenCheckpoints < 0, s.MaxConcurrentCheckpoints < 0, cfg.MaxQueuedRequests < 0:
		return nil, errorsJoin(ErrInvalidConfig, "negative checkpointing setting (interval %v, timeout %v, min pause %v, max concurrent %d, max queued %d)",
			s.Interval, s.Timeout, s.MinPauseBetweenCheckpoints, s.MaxConcurrentCheckpoints, cfg.MaxQueuedRequests)
	}
	fm, err := NewCheckpointFailureManager(s.TolerableFailedCheckpoints, cfg.FailJob)
	if err != nil {
		return nil, err
	}
	c := &CheckpointCoordinator{cfg: cfg, now: cfg.Clock, exec: cfg.Executor, interval: s.Interval,
		timeout: s.Timeout, minPause: s.MinPauseBetweenCheckpoints, maxConc: s.MaxConcurrentCheckpoints,
		maxQueue: cfg.MaxQueuedRequests, failures: fm, stats: NewCheckpointStatsTracker(cfg.StatsHistorySize),
		pending: map[CheckpointID]*PendingCheckpoint{}}
	c.stats.RegisterMetrics(cfg.Metrics)
	if c.now == nil {
		c.now = time.Now
	}
	if c.exec == nil {
		c.exec = InlineExecutor{}
	}
	c.sps = cfg.Savepoints
	if c.sps == nil {
		c.sps = FileSavepointStorage{}
	}
	if c.timeout == 0 {
		c.timeout = jobgraph.DefaultCheckpointTimeout
	}
	if c.maxConc == 0 {
		c.maxConc = 1
	}
	if c.maxQueue == 0 {
		c.maxQueue = DefaultMaxQueuedRequests
	}
	return c, nil
}

// ---- periodic scheduler ----

// StartCheckpointScheduler starts periodic triggering: the first trigger Interval from now.
// Errors: ErrInvalidConfig when Interval is 0 (periodic checkpoints disabled), ErrShutdown.
func (c *CheckpointCoordinator) StartCheckpointScheduler() error {
	if c.shutdown {
		return ErrShutdown
	}
	if c.interval <= 0 {
		return errorsJoin(ErrInvalidConfig, "execution.checkpointing.interval is 0: periodic checkpoints are disabled")
	}
	if c.periodicOn {
		return nil
	}
	c.periodicOn = true
	c.schedulePeriodic(c.interval)
	return nil
}

// StopCheckpointScheduler stops periodic triggering and aborts every pending checkpoint and
// queued request with CheckpointCoordinatorSuspend (not counted), as Flink's does.
func (c *CheckpointCoordinator) StopCheckpointScheduler() {
	c.periodicOn = false
	c.cancelPeriodic()
	c.abortQueued(CheckpointCoordinatorSuspend)
	c.abortAllPending(CheckpointCoordinatorSuspend)
}

// IsPeriodicCheckpointingStarted reports whether the periodic scheduler runs.
func (c *CheckpointCoordinator) IsPeriodicCheckpointingStarted() bool { return c.periodicOn }

func (c *CheckpointCoordinator) cancelPeriodic() {
	c.periodicGen++ // a timer whose cancel came too late sees another generation and does nothing
	if c.periodicCancel != nil {
		c.periodicCancel()
		c.periodicCancel = nil
	}
}

func (c *CheckpointCoordinator) schedulePeriodic(delay time.Duration) {
	c.cancelPeriodic()
	gen := c.periodicGen
	c.periodicCancel = c.cfg.Timers.Schedule(delay, func() { c.periodicTick(gen) })
}

func (c *CheckpointCoordinator) periodicTick(gen int64) {
	if gen != c.periodicGen || !c.periodicOn || c.shutdown {
		return
	}
	c.periodicCancel = c.cfg.Timers.Schedule(c.interval, func() { c.periodicTick(gen) })
	for _, r := range c.queue {
		if r.periodic {
			return // one periodic request waits already
		}
	}
	c.enqueue(&triggerRequest{props: CheckpointPropertiesFor(Checkpoint), periodic: true})
}

// ---- triggers ----

// TriggerCheckpoint requests a checkpoint now (Flink's triggerCheckpoint(isPeriodic=false)); done
// (may be nil) gets the completed checkpoint or its *CheckpointError, once, on the loop. Errors
// (nothing queued, done not called): ErrWrongJobMasterID, ErrShutdown.
func (c *CheckpointCoordinator) TriggerCheckpoint(token jobgraph.JobMasterID, done func(CompletedCheckpoint, error)) error {
	return c.request(token, &triggerRequest{props: CheckpointPropertiesFor(Checkpoint), done: done})
}

// TriggerSavepoint requests a savepoint in the target directory path: when it is triggered, the
// SavepointStorage creates its location there, whose pointer (for the default storage, the new
// directory "path/savepoint-<job prefix>-<random>") is the completed savepoint's
// ExternalPointer; once every task acknowledged, its metadata is written there and then it is
// added to the store. timeout bounds it (0: the checkpoint timeout); an expired savepoint fails
// with a *CheckpointError whose Reason is CheckpointExpired and whose Timeout() is true. A
// savepoint that fails after its location was created (declined, expired, aborted, its metadata
// or the store failing: FinalizeCheckpointFailure) has its location discarded before done hears
// of the failure; a location that cannot be created fails it with IOException naming the
// directory. done as for TriggerCheckpoint. Errors: ErrInvalidConfig for an empty path or a
// negative timeout, ErrWrongJobMasterID, ErrShutdown. Flink: CheckpointCoordinator.triggerSavepoint.
func (c *CheckpointCoordinator) TriggerSavepoint(token jobgraph.JobMasterID, path string, timeout time.Duration, done func(CompletedCheckpoint, error)) error {
	return c.triggerSavepoint(token, Savepoint, path, timeout, done)
}

// TriggerSynchronousSavepoint is TriggerSavepoint for stop-with-savepoint: a task's decline
// fails the job at once (Flink's CheckpointFailureManager). Stopping the periodic scheduler and
// finishing the tasks are the owner's.
func (c *CheckpointCoordinator) TriggerSynchronousSavepoint(token jobgraph.JobMasterID, path string, timeout time.Duration, done func(CompletedCheckpoint, error)) error {
	return c.triggerSavepoint(token, SyncSavepoint, path, timeout, done)
}

func (c *CheckpointCoordinator) triggerSavepoint(token jobgraph.JobMasterID, t SnapshotType, path string, timeout time.Duration, done func(CompletedCheckpoint, error)) error {
	if path == "" {
		return errorsJoin(ErrInvalidConfig, "savepoint path is empty")
	}
	if timeout < 0 {
		return errorsJoin(ErrInvalidConfig, "savepoint timeout %v is negative", timeout)
	}
	return c.request(token, &triggerRequest{props: CheckpointPropertiesFor(t), path: path, timeout: timeout, done: done})
}

func (c *CheckpointCoordinator) request(token jobgraph.JobMasterID, r *triggerRequest) error {
	if err := c.admit(token); err != nil {
		return err
	}
	c.enqueue(r)
	return nil
}

// before orders the queue as Flink's CheckpointRequestDecider does.
func before(a, b *triggerRequest) bool {
	if a.props.IsSavepoint() != b.props.IsSavepoint() {
		return a.props.IsSavepoint()
	}
	if a.periodic != b.periodic {
		return !a.periodic
	}
	return a.seq < b.seq
}

func (c *CheckpointCoordinator) enqueue(r *triggerRequest) {
	c.seq++
	r.seq = c.seq
	if len(c.queue) >= c.maxQueue && !c.queue[len(c.queue)-1].periodic {
		r.fail(&CheckpointError{Reason: TooManyCheckpointRequests})
		return
	}
	i, _ := slices.BinarySearchFunc(c.queue, r, func(q, r *triggerRequest) int {
		if before(q, r) {
			return -1
		}
		return 1
	})
	c.queue = slices.Insert(c.queue, i, r)
	if len(c.queue) > c.maxQueue {
		last := c.queue[len(c.queue)-1]
		c.queue = c.queue[:len(c.queue)-1]
		last.fail(&CheckpointError{Reason: TooManyCheckpointRequests})
	}
	c.executeQueued()
}

func (r *triggerRequest) fail(err error) {
	if r.done != nil {
		r.done(CompletedCheckpoint{}, err)
	}
}

// executeQueued starts the first queued request if nothing is being triggered and the limits
// allow (Flink's chooseRequestToExecute).
func (c *CheckpointCoordinator) executeQueued() {
	if c.triggering || c.shutdown || len(c.queue) == 0 {
		return
	}
	first := c.queue[0]
	if len(c.pending)+len(c.storeQueue) >= c.maxConc && !first.props.IsForced() {
		return
	}
	if first.periodic && c.hasCompleted && c.minPause > 0 {
		if wait := c.lastCompletion.Add(c.minPause).Sub(c.now()); wait > 0 {
			c.queue = c.queue[1:] // dropped: MinimumTimeBetweenCheckpoints, not counted, no statistics
			if c.periodicOn {
				c.schedulePeriodic(wait)
			}
			c.executeQueued()
			return
		}
	}
	c.queue = c.queue[1:]
	c.startTriggering(first)
}

// startTriggering draws the checkpoint's ID and, for a savepoint, creates its location, both
// through the executor (Flink's initializeCheckpointAndLocation).
func (c *CheckpointCoordinator) startTriggering(r *triggerRequest) {
	c.triggering = true
	trigger := c.now()
	var id CheckpointID
	var pointer string
	var err, locErr error
	counter, sps, job := c.cfg.IDCounter, c.sps, c.cfg.JobID
	c.exec.Execute(func() {
		id, err = counter.GetAndIncrement()
		if err == nil && r.props.IsSavepoint() {
			pointer, locErr = sps.InitializeLocationForSavepoint(job, r.path)
		}
	}, func() { c.onTriggerInitialized(r, trigger, id, pointer, err, locErr) })
}

func (c *CheckpointCoordinator) onTriggerInitialized(r *triggerRequest, trigger time.Time, id CheckpointID, pointer string, err, locErr error) {
	c.triggering = false
	if c.shutdown {
		c.failWithLocation(pointer, func() { r.fail(&CheckpointError{Reason: CheckpointCoordinatorShutdown, CheckpointID: id}) })
		return
	}
	if err != nil {
		c.failBeforePending(r, &CheckpointError{Reason: IOException, Cause: err})
		return
	}
	if locErr != nil {
		c.failBeforePending(r, &CheckpointError{Reason: IOException, CheckpointID: id, Cause: locErr})
		return
	}
	plan, err := c.cfg.Plan()
	if err != nil {
		ce := &CheckpointError{Reason: NotAllRequiredTasksRunning, CheckpointID: id, Cause: err}
		c.stats.ReportFailedCheckpointsWithoutInProgress()
		c.failures.HandleJobLevelCheckpointException(r.props, ce)
		c.failWithLocation(pointer, func() { r.fail(ce) })
		c.executeQueued()
		return
	}
	p := newPendingCheckpoint(id, r.props, trigger, plan)
	p.external, p.onDone, p.finished, p.toTrigger = pointer, r.done, plan.FinishedTasks, plan.TasksToTrigger
	c.pending[id] = p
	p.stats = c.stats.reportPending(id, trigger, r.props, p.subtasksPerVertex())
	timeout := c.timeout
	if r.timeout > 0 {
		timeout = r.timeout
	}
	p.cancelTimeout = c.cfg.Timers.Schedule(timeout, func() {
		if !p.disposed && !c.shutdown {
			c.abort(p, &CheckpointError{Reason: CheckpointExpired, CheckpointID: p.id}, nil)
		}
	})
	if len(c.cfg.Coordinators) > 0 {
		c.checkpointCoordinators(p)
		return
	}
	c.triggerTasks(p)
	c.executeQueued()
}

// triggerTasks sends p's trigger to the plan's TasksToTrigger, then tells every operator
// coordinator that the barriers are injected (their held events go out), then completes p if it
// waits for no task. Flink: triggerCheckpointRequest / triggerTasks with the coordinators'
// afterSourceBarrierInjection.
func (c *CheckpointCoordinator) triggerTasks(p *PendingCheckpoint) {
	for _, a := range p.toTrigger {
		c.cfg.Tasks.TriggerCheckpoint(a, p.id, p.trigger, p.props)
	}
	for _, oc := range c.cfg.Coordinators {
		oc.AfterSourceBarrierInjection(p.id)
	}
	if p.outstanding == 0 && !p.disposed {
		c.complete(p)
	}
}

func (c *CheckpointCoordinator) failBeforePending(r *triggerRequest, ce *CheckpointError) {
	c.stats.ReportFailedCheckpointsWithoutInProgress()
	c.failures.HandleJobLevelCheckpointException(r.props, ce)
	r.fail(ce)
	c.executeQueued()
}

// ---- messages from tasks ----

// admit is the check every message and request of a JobMaster session passes first:
// ErrShutdown once the coordinator is shut down, ErrWrongJobMasterID for another session's token.
func (c *CheckpointCoordinator) admit(token jobgraph.JobMasterID) error {
	if c.shutdown {
		return ErrShutdown
	}
	if token != c.cfg.JobMasterID {
		return ErrWrongJobMasterID
	}
	return nil
}

// pendingFor is admit, then the pending checkpoint id that waits for attempt: ErrUnknownCheckpoint
// when id is not pending, ErrUnknownTask when it does not wait for attempt.
func (c *CheckpointCoordinator) pendingFor(token jobgraph.JobMasterID, id CheckpointID, attempt jobgraph.ExecutionAttemptID) (*PendingCheckpoint, error) {
	if err := c.admit(token); err != nil {
		return nil, err
	}
	p := c.pending[id]
	if p == nil {
		return nil, ErrUnknownCheckpoint
	}
	if p.tasks[attempt] == nil {
		return nil, ErrUnknownTask
	}
	return p, nil
}

// ReceiveAcknowledgeMessage records a task's acknowledgement; the last one completes the
// checkpoint. Errors, each for a message dropped without any change: ErrShutdown,
// ErrWrongJobMasterID, ErrUnknownCheckpoint (not pending: completed, aborted, never triggered),
// ErrUnknownTask (an attempt the checkpoint does not wait for, e.g. an outdated one),
// ErrDuplicateAcknowledge.
func (c *CheckpointCoordinator) ReceiveAcknowledgeMessage(token jobgraph.JobMasterID, ack AcknowledgeCheckpoint) error {
	if err := c.admit(token); err != nil {
		return err
	}
	p := c.pending[ack.CheckpointID]
	if p == nil {
		return ErrUnknownCheckpoint
	}
	now := c.now()
	switch p.Acknowledge(ack.Attempt, ack.State, now) {
	case AckUnknown:
		return ErrUnknownTask
	case AckDuplicate:
		return ErrDuplicateAcknowledge
	case AckDiscarded:
		return ErrUnknownCheckpoint
	}
	v := ack.Attempt.ExecutionVertexID
	reportSubtaskAck(p.stats, v.JobVertexID, v.Subtask, now, ack.State.Size)
	if p.outstanding == 0 && !p.awaitingCoordinators {
		c.complete(p)
		c.executeQueued()
	}
	return nil
}

// ReceiveDeclineMessage aborts the checkpoint a task declined, with the decline's reason
// (CheckpointDeclined if none), counted as a task-level failure. Errors as for
// ReceiveAcknowledgeMessage (no duplicate: a later decline finds no pending checkpoint).
func (c *CheckpointCoordinator) ReceiveDeclineMessage(token jobgraph.JobMasterID, d DeclineCheckpoint) error {
	p, err := c.pendingFor(token, d.CheckpointID, d.Attempt)
	if err != nil {
		return err
	}
	reason := d.Reason
	if reason == 0 {
		reason = CheckpointDeclined
	}
	ce := &CheckpointError{Reason: reason, CheckpointID: p.id}
	if d.Message != "" {
		ce.Cause = errors.New(d.Message)
	}
	c.abort(p, ce, &d.Attempt)
	return nil
}

// FailUnacknowledgedPendingCheckpointsFor aborts, with TaskFailure (not counted), every pending
// checkpoint that waits for attempt and has no acknowledgement from it; it returns how many. An
// outdated attempt no checkpoint waits for changes nothing. Flink: the method of that name.
func (c *CheckpointCoordinator) FailUnacknowledgedPendingCheckpointsFor(token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, cause error) (int, error) {
	if err := c.admit(token); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range c.sortedPending() {
		if t := p.tasks[attempt]; t != nil && !t.acked {
			c.abort(p, &CheckpointError{Reason: TaskFailure, CheckpointID: p.id, Cause: cause}, nil)
			n++
		}
	}
	return n, nil
}

// AbortPendingCheckpoints aborts every pending checkpoint with reason, as a failover does
// (JobFailoverRegion or JobFailure: not counted). Periodic triggering goes on: the next periodic
// trigger, or a queued request, starts the next checkpoint with the plan of that moment.
func (c *CheckpointCoordinator) AbortPendingCheckpoints(token jobgraph.JobMasterID, reason CheckpointFailureReason) error {
	if err := c.admit(token); err != nil {
		return err
	}
	c.abortAllPending(reason)
	c.executeQueued()
	return nil
}

func (c *CheckpointCoordinator) sortedPending() []*PendingCheckpoint {
	ps := make([]*PendingCheckpoint, 0, len(c.pending))
	for _, p := range c.pending {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b *PendingCheckpoint) int { return int(a.id - b.id) })
	return ps
}

func (c *CheckpointCoordinator) abortAllPending(reason CheckpointFailureReason) {
	for _, p := range c.sortedPending() {
		c.abort(p, &CheckpointError{Reason: reason, CheckpointID: p.id}, nil)
	}
}

func (c *CheckpointCoordinator) abortQueued(reason CheckpointFailureReason) {
	q := c.queue
	c.queue = nil
	for _, r := range q {
		r.fail(&CheckpointError{Reason: reason})
	}
}

// abort disposes p and reports the failure; attempt is the declining task, nil for JobManager-side
// failures. The state changes come first, the callbacks after, so a callback may call back in.
func (c *CheckpointCoordinator) abort(p *PendingCheckpoint, ce *CheckpointError, attempt *jobgraph.ExecutionAttemptID) {
	if p.disposed {
		return
	}
	c.dispose(p)
	c.endCoordinatorTriggering(p)
	c.reportFailure(p, ce, attempt, c.now())
	c.failWithLocation(p.external, func() {
		if p.onDone != nil {
			p.onDone(CompletedCheckpoint{}, ce)
		}
	})
	c.executeQueued()
}

// dispose takes p out of the pending checkpoints and stops its timeout.
func (c *CheckpointCoordinator) dispose(p *PendingCheckpoint) {
	p.disposed = true
	delete(c.pending, p.id)
	if p.cancelTimeout != nil {
		p.cancelTimeout()
	}
}

// reportFailure records p's failure ce at now in the statistics, tells p's tasks it was aborted
// and hands ce to the failure manager: as a task's (attempt's) failure, or the job's when attempt
// is nil.
func (c *CheckpointCoordinator) reportFailure(p *PendingCheckpoint, ce *CheckpointError, attempt *jobgraph.ExecutionAttemptID, now time.Time) {
	c.stats.ReportFailedCheckpoint(p.id, now, ce)
	for _, t := range p.order {
		c.cfg.Tasks.NotifyCheckpointAborted(t.attempt, p.id, now)
	}
	for _, oc := range c.cfg.Coordinators {
		oc.NotifyCheckpointAborted(p.id)
	}
	if attempt != nil {
		c.failures.HandleTaskLevelCheckpointException(p.props, ce, *attempt)
	} else {
		c.failures.HandleJobLevelCheckpointException(p.props, ce)
	}
}

// failWithLocation runs report once the savepoint location pointer (if any: "" for checkpoints)
// is discarded, so whoever hears of a failed savepoint finds its files gone. The discard runs
// through the executor; a discard that fails leaves garbage, never a loss, and is not the
// savepoint's error.
func (c *CheckpointCoordinator) failWithLocation(pointer string, report func()) {
	if pointer == "" {
		report()
		return
	}
	sps := c.sps
	c.exec.Execute(func() { _ = sps.DiscardLocation(pointer) }, report)
}

// ---- completion ----

// complete takes a fully acknowledged checkpoint out of the pending ones and queues it for the
// store; stores run one at a time, in completion order.
func (c *CheckpointCoordinator) complete(p *PendingCheckpoint) {
	c.dispose(p)
	c.storeQueue = append(c.storeQueue, completion{p: p, cp: p.finalize(c.cfg.JobID, c.now(), c.lastSnapshot)})
	c.runStore()
}

func (c *CheckpointCoordinator) runStore() {
	if c.storing || len(c.storeQueue) == 0 {
		return
	}
	c.storing = true
	next := c.storeQueue[0]
	var err error
	store, sps := c.cfg.Store, c.sps
	c.exec.Execute(func() {
		// A savepoint's metadata is written before the store hears of it (Flink:
		// PendingCheckpoint.finalizeCheckpoint); a savepoint that is not stored is discarded
		// here, before the loop reports the failure.
		// Only savepoints have a location pointer.
		pointer := next.cp.ExternalPointer
		if pointer != "" {
			err = sps.StoreMetadata(pointer, next.cp)
		}
		if err == nil {
			_, err = store.Add(next.cp)
		}
		if err != nil && pointer != "" {
			_ = sps.DiscardLocation(pointer)
		}
	}, func() {
		c.storing = false
		c.storeQueue = c.storeQueue[1:]
		c.onStored(next, err)
		c.runStore()
		c.executeQueued()
	})
}

func (c *CheckpointCoordinator) onStored(done completion, err error) {
	p, cp := done.p, done.cp
	now := c.now()
	if err != nil {
		ce := &CheckpointError{Reason: FinalizeCheckpointFailure, CheckpointID: p.id, Cause: err}
		c.reportFailure(p, ce, nil, now)
		if p.onDone != nil {
			p.onDone(CompletedCheckpoint{}, ce)
		}
		return
	}
	c.lastCompletion, c.hasCompleted = now, true
	if c.lastSnapshot == nil || c.lastSnapshot.CheckpointID < cp.CheckpointID {
		c.lastSnapshot = &cp
	}
	c.failures.HandleCheckpointSuccess(p.id)
	c.stats.ReportCompletedCheckpoint(p.id, now, cp.ExternalPointer)
	for _, older := range c.sortedPending() {
		if older.id < p.id && !older.props.IsSavepoint() {
			c.abort(older, &CheckpointError{Reason: CheckpointSubsumed, CheckpointID: older.id}, nil)
		}
	}
	for _, t := range p.order {
		c.cfg.Tasks.NotifyCheckpointComplete(t.attempt, p.id, now)
	}
	for _, oc := range c.cfg.Coordinators {
		oc.NotifyCheckpointComplete(p.id)
	}
	if p.onDone != nil {
		p.onDone(cp, nil)
	}
}

// ---- restore, shutdown, observation ----

// RestoreLatestCheckpointedState returns the newest stored snapshot (checkpoint or savepoint)
// for recovery and records the restore in the statistics; false when the store is empty. It
// reads the store's in-memory list (no I/O).
func (c *CheckpointCoordinator) RestoreLatestCheckpointedState() (CompletedCheckpoint, bool) {
	cp, ok := c.cfg.Store.Latest()
	if ok {
		c.stats.ReportRestoredCheckpoint(cp, c.now())
		c.noteSnapshot(cp)
	}
	return cp, ok
}

func (c *CheckpointCoordinator) noteSnapshot(cp CompletedCheckpoint) {
	if c.lastSnapshot == nil || c.lastSnapshot.CheckpointID <= cp.CheckpointID {
		c.lastSnapshot = &cp
	}
}

// RestoreSavepoint records cp, a snapshot from outside the store (the savepoint of
// execution.savepoint.path), as the one the job starts from: the statistics count the restore,
// FINISHED tasks' state is carried forward from it until a newer one completes, and the ID
// counter is advanced past cp's ID (AdvanceIDCounterPast), so the job's own checkpoints get
// higher IDs. Flink: CheckpointCoordinator.restoreSavepoint. Errors as AdvanceIDCounterPast.
func (c *CheckpointCoordinator) RestoreSavepoint(cp CompletedCheckpoint) error {
	if err := c.AdvanceIDCounterPast(cp.CheckpointID); err != nil {
		return err
	}
	c.stats.ReportRestoredCheckpoint(cp, c.now())
	c.noteSnapshot(cp)
	return nil
}

// AdvanceIDCounterPast makes the ID counter hand out only IDs above id
// (CheckpointIDCounter.SetCount(id+1) through the IOExecutor; a counter already beyond it is
// left alone), for a job that restores snapshot id at its start; triggers wait until it is done.
// A failure of the counter is a job-level IOException (counted). Errors: ErrShutdown;
// ErrInvalidConfig when a trigger or checkpoint is in flight (call it before
// StartCheckpointScheduler).
func (c *CheckpointCoordinator) AdvanceIDCounterPast(id CheckpointID) error {
	if c.shutdown {
		return ErrShutdown
	}
	if c.triggering || len(c.pending) > 0 || len(c.storeQueue) > 0 {
		return errorsJoin(ErrInvalidConfig, "advancing the ID counter past %d while a checkpoint is in flight", id)
	}
	next := id + 1
	counter := c.cfg.IDCounter
	c.triggering = true // the trigger queue waits for the counter
	var err error
	c.exec.Execute(func() {
		var cur CheckpointID
		if cur, err = counter.Get(); err == nil && cur < next {
			err = counter.SetCount(next)
		}
	}, func() {
		c.triggering = false
		if err != nil {
			c.failures.HandleJobLevelCheckpointException(CheckpointPropertiesFor(Checkpoint),
				&CheckpointError{Reason: IOException, Cause: fmt.Errorf("advancing the ID counter past %d: %w", id, err)})
		}
		c.executeQueued()
	})
	return nil
}

// HandleTriggerFailure aborts pending checkpoint id with TriggerCheckpointFailure (not counted)
// because the trigger RPC to attempt failed (cause), as Flink's onTriggerFailure does. It returns
// the dropped message's error, changing nothing: ErrShutdown, ErrWrongJobMasterID,
// ErrUnknownCheckpoint (no longer pending), ErrUnknownTask (the checkpoint does not wait for
// attempt).
func (c *CheckpointCoordinator) HandleTriggerFailure(token jobgraph.JobMasterID, id CheckpointID, attempt jobgraph.ExecutionAttemptID, cause error) error {
	p, err := c.pendingFor(token, id, attempt)
	if err != nil {
		return err
	}
	c.abort(p, &CheckpointError{Reason: TriggerCheckpointFailure, CheckpointID: id, Cause: cause}, nil)
	return nil
}

// RestoreLatestSnapshot is RestoreLatestCheckpointedState for a restart: the newest stored
// snapshot, else the newest one this coordinator restored from outside the store (the savepoint
// the job started from, RestoreSavepoint), recording the restore in the statistics either way;
// false when there is none. Flink counts a failover that falls back to the start savepoint as a
// restore too (it keeps that savepoint in its store). No I/O.
func (c *CheckpointCoordinator) RestoreLatestSnapshot() (CompletedCheckpoint, bool) {
	if cp, ok := c.RestoreLatestCheckpointedState(); ok {
		return cp, true
	}
	if c.lastSnapshot == nil {
		return CompletedCheckpoint{}, false
	}
	c.stats.ReportRestoredCheckpoint(*c.lastSnapshot, c.now())
	return *c.lastSnapshot, true
}

// LatestSnapshot returns the newest snapshot stored or restored by this coordinator (a
// checkpoint or a savepoint); false if none. No I/O.
func (c *CheckpointCoordinator) LatestSnapshot() (CompletedCheckpoint, bool) {
	if c.lastSnapshot == nil {
		return CompletedCheckpoint{}, false
	}
	return *c.lastSnapshot, true
}

// Shutdown stops periodic triggering and aborts every pending checkpoint and queued request with
// CheckpointCoordinatorShutdown (not counted). The store and counter are the owner's to shut down
// (it knows whether the job is globally terminal). Later calls return ErrShutdown.
func (c *CheckpointCoordinator) Shutdown() {
	if c.shutdown {
		return
	}
	c.periodicOn = false
	c.cancelPeriodic()
	c.abortQueued(CheckpointCoordinatorShutdown)
	c.abortAllPending(CheckpointCoordinatorShutdown)
	c.shutdown = true
}

// NumberOfPendingCheckpoints counts the pending checkpoints (not those being stored).
func (c *CheckpointCoordinator) NumberOfPendingCheckpoints() int { return len(c.pending) }

// PendingCheckpoint returns the pending checkpoint id.
func (c *CheckpointCoordinator) PendingCheckpoint(id CheckpointID) (*PendingCheckpoint, bool) {
	p, ok := c.pending[id]
	return p, ok
}

// NumQueuedRequests counts the trigger requests waiting in the queue.
func (c *CheckpointCoordinator) NumQueuedRequests() int { return len(c.queue) }

// IsTriggering reports a trigger whose initialization (ID counter) has not come back.
func (c *CheckpointCoordinator) IsTriggering() bool { return c.triggering }

// FailureManager returns the coordinator's CheckpointFailureManager.
func (c *CheckpointCoordinator) FailureManager() *CheckpointFailureManager { return c.failures }

// Statistics returns a snapshot of the checkpoint statistics.
func (c *CheckpointCoordinator) Statistics() CheckpointingStatistics { return c.stats.Snapshot() }
