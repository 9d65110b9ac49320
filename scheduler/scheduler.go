package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/slotpool"
)

// DefaultScheduler runs one ExecutionGraph: it schedules through its SchedulingStrategy, gets
// slots from the slot pool through the slot-sharing allocator, deploys through the Deployer,
// applies the TaskExecutors' state reports, releases consumed partitions, restarts failed tasks
// under the job's failover and restart strategies, keeps the exception history, and fails or
// cancels the job. Flink: org.apache.flink.runtime.scheduler.DefaultScheduler (SchedulerNG) with
// SchedulerBase and DefaultExecutionDeployer.
//
// It is driven only from its JobMaster's main loop: no locks, no goroutines, no I/O. Create it
// with New.
type DefaultScheduler struct {
	cfg      Config
	log      *slog.Logger
	graph    *executiongraph.ExecutionGraph
	pool     SlotPool
	deployer Deployer

	strategy   SchedulingStrategy
	failures   *failureHandler
	timers     Timers
	history    *exceptionHistory
	slots      *slotAllocator
	tdds       *tddFactory
	partitions *partitionTracker
	// shuffle is Config.ShuffleMaster; shuffleDescs holds the descriptor it gave each partition's
	// current producer attempt. Both nil for the in-memory default.
	shuffle      ShuffleMaster
	shuffleDescs map[jobgraph.IntermediateResultPartitionID]rpc.ShuffleDescriptor
	// ck is the job's checkpointing (nil: the job takes no checkpoints).
	ck *checkpointing
	// coords are the job's operator coordinators (Config.OperatorCoordinators; never nil).
	coords *operatorCoordinators
	// stop is the stop-with-savepoint under way (nil: none); see savepoint.go.
	stop *stopWithSavepoint

	// versions[i] counts the failovers that named vertex i: a restart or a deployment recorded
	// for an older version was superseded. Flink: ExecutionVertexVersioner.
	versions []uint64
	// owner[i] is the pending restart vertex i waits for (Flink: verticesWaitingForRestart);
	// waiting counts the vertices that have one. The job is RESTARTING while waiting > 0.
	owner    []*pendingRestart
	waiting  int
	restarts []*pendingRestart // pending, in the order they were scheduled
	ready    []*pendingRestart // to carry out when the outermost call leaves
	depth    int               // nesting of enter/leave

	// nonTerminal counts the current executions not in a terminal state.
	nonTerminal int
	rootCause   error
	terminated  bool // OnTerminal ran (or the job was suspended)

	metrics *jobMetrics // nil without Config.Metrics
}

// New builds the ExecutionGraph of g (status CREATED, reported to Config.JobStatusListener) and a
// scheduler for it that takes slots from pool (FromSlotPool adapts a *slotpool.Pool) and deploys through deployer. g must not change
// afterwards. Nothing is scheduled before StartScheduling. The failure handling follows
// g.RestartStrategy (resolved with g.Checkpointing: "none" without checkpointing) and
// g.FailoverStrategy (region by default).
//
// A job whose CheckpointingSettings are enabled, and every Streaming job (whose savepoints work
// without periodic checkpoints, as in Flink), gets a CheckpointCoordinator (see
// checkpointing.go): New opens its store and counter from Config.CheckpointRecoveryFactory and
// restores the latest snapshot in the store, else the savepoint of execution.savepoint.path
// (Config.LoadSavepoint); its tasks are deployed with that state in TDD.TaskRestore, and with
// TDD.CheckpointingEnabled when the interval is positive, and TDD.HasCheckpointCoordinator
// always (their tasks take savepoints). A streaming job without
// checkpoints and without Config.Timers gets no coordinator.
//
// Errors: the graph's validation or build error wrapped with the job's name (errors.Is matches
// jobgraph.ErrInvalidJobGraph for an invalid graph; errors.As finds the
// *jobgraph.ValidationError); ErrUnknownStrategy; ErrNoTimers; an error for a nil pool or
// deployer, a negative SlotRequestTimeout or ExceptionHistorySize; for a coordinator: the
// CheckpointRecoveryFactory's error, a savepoint path without LoadSavepoint or LoadSavepoint's
// error, checkpoint.ErrStateAssignment when the snapshot's state does not fit the job (also
// operator coordinator state of a vertex without a coordinator, unless AllowNonRestoredState);
// an error naming the vertex for a nil Config.OperatorCoordinators entry, two for one vertex, one
// for a vertex the job does not have; an operator coordinator's ResetToCheckpoint error on the
// initial restore (see operatorCoordinators for the order of the coordinators' calls).
//
// Cost: Build's, plus O(subtasks + partitions + groups) for the scheduler's own tables.
func New(g *jobgraph.JobGraph, pool SlotPool, deployer Deployer, cfg Config) (*DefaultScheduler, error) {
	if pool == nil {
		return nil, errors.New("scheduler: nil slot pool")
	}
	if deployer == nil {
		return nil, errors.New("scheduler: nil deployer")
	}
	if cfg.SlotRequestTimeout < 0 {
		return nil, fmt.Errorf("scheduler: slot.request.timeout %v is negative", cfg.SlotRequestTimeout)
	}
	if cfg.ExceptionHistorySize < 0 {
		return nil, fmt.Errorf("scheduler: web.exception-history-size %d is negative", cfg.ExceptionHistorySize)
	}
	if cfg.ExceptionHistorySize == 0 {
		cfg.ExceptionHistorySize = jobgraph.DefaultExceptionHistorySize
	}
	if !IsKnownStrategy(cfg.SchedulingStrategy) {
		return nil, fmt.Errorf("scheduler: %w %q (want %q or %q)", ErrUnknownStrategy, cfg.SchedulingStrategy, StrategyRegion, StrategyVertexwise)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	opts := append(append([]executiongraph.Option(nil), cfg.GraphOptions...), executiongraph.WithClock(cfg.Clock))
	eg, err := executiongraph.Build(g, opts...)
	if err != nil {
		name := "<nil>"
		if g != nil {
			name = fmt.Sprintf("%q (%s)", jobgraph.Truncate(g.Name), g.JobID)
		}
		return nil, fmt.Errorf("scheduler: cannot build the execution graph of job %s: %w", name, err)
	}
	jobName := func() string { return fmt.Sprintf("%q (%s)", jobgraph.Truncate(g.Name), g.JobID) } // for errors only
	restart, err := NewRestartBackoffTimeStrategy(g.RestartStrategy, g.Checkpointing, cfg.Clock, cfg.Random)
	if err != nil {
		return nil, fmt.Errorf("scheduler: job %s: %w", jobName(), err)
	}
	resolved := g.RestartStrategy.Resolve(g.Checkpointing).Type
	mayRestart := resolved != jobgraph.RestartStrategyNone
	if mayRestart && cfg.Timers == nil {
		return nil, fmt.Errorf("scheduler: job %s: restart strategy %s: %w", jobName(), resolved, ErrNoTimers)
	}
	s := &DefaultScheduler{
		cfg:         cfg,
		log:         withJob(logger, eg),
		graph:       eg,
		pool:        pool,
		deployer:    deployer,
		timers:      cfg.Timers,
		history:     &exceptionHistory{graph: eg, max: cfg.ExceptionHistorySize},
		versions:    make([]uint64, eg.NumVertices()),
		owner:       make([]*pendingRestart, eg.NumVertices()),
		nonTerminal: eg.NumVertices(),
	}
	s.slots = newSlotAllocator(s, pool, cfg.SlotRequestTimeout, cfg.NewSlotRequestID)
	s.tdds = newTDDFactory(eg)
	if cfg.ShuffleMaster != nil {
		s.shuffle = cfg.ShuffleMaster
		s.shuffleDescs = make(map[jobgraph.IntermediateResultPartitionID]rpc.ShuffleDescriptor)
		s.tdds.shuffleDescs = s.shuffleDescs
	}
	s.partitions = newPartitionTracker(eg)
	checker := cfg.PartitionAvailability
	if checker == nil {
		checker = trackedPartitions{s}
	}
	failover, err := NewFailoverStrategy(g.FailoverStrategy, eg.Topology(), checker)
	if err != nil {
		return nil, fmt.Errorf("scheduler: job %s: %w", jobName(), err)
	}
	s.failures = &failureHandler{restart: restart, failover: failover, mayRestart: mayRestart, graph: eg}
	if s.coords, err = newOperatorCoordinators(eg, cfg.OperatorCoordinators); err != nil {
		return nil, fmt.Errorf("scheduler: job %s: %w", jobName(), err)
	}
	if HasCheckpointCoordinator(g) {
		if err := s.setUpCheckpointing(g, cfg); err != nil {
			return nil, fmt.Errorf("scheduler: job %s: %w", jobName(), err)
		}
	}
	ops := schedulerOps{s}
	if cfg.SchedulingStrategy == StrategyVertexwise {
		s.strategy = NewVertexwiseSchedulingStrategy(ops, eg.Topology())
	} else {
		s.strategy = NewPipelinedRegionSchedulingStrategy(ops, eg.Topology())
	}
	s.registerJobMetrics(cfg.Metrics)
	s.notifyJobStatus(jobgraph.JobStatusCreated)
	return s, nil
}

// withJob is logger with the job's ID and name as attributes; a logger that discards everything
// (slog.DiscardHandler, the MiniCluster's default) as it is, since it never shows them.
func withJob(logger *slog.Logger, eg *executiongraph.ExecutionGraph) *slog.Logger {
	if logger.Handler() == slog.DiscardHandler {
		return logger
	}
	return logger.With("job", eg.JobID().String(), "jobName", jobgraph.Truncate(eg.JobName()))
}

// schedulerOps is the SchedulerOperations face of the scheduler, kept off its exported API.
type schedulerOps struct{ s *DefaultScheduler }

func (o schedulerOps) AllocateSlotsAndDeploy(vertices []*executiongraph.ExecutionVertex) {
	o.s.allocateSlotsAndDeploy(vertices)
}

// trackedPartitions is the default ResultPartitionAvailabilityChecker: the scheduler's own
// partition tracking.
type trackedPartitions struct{ s *DefaultScheduler }

// IsAvailable reports whether partition id is, or will be, readable without restarting its
// producer: it is tracked (its producer FINISHED and it was neither released nor lost), or its
// producer's current attempt is still to produce it — deployed and running, or not deployed yet
// (CREATED, SCHEDULED: it produces the partition when it runs). Only a producer whose attempt
// ended without a readable partition (FAILED, CANCELED, CANCELING, or FINISHED with the partition
// released or lost) must restart. Flink's JobMasterPartitionTracker tracks a partition from its
// producer's deployment on, so a consumer region that restarts while a BLOCKING producer still
// runs waits for it rather than restarting it; Flink also restarts a producer that has not been
// deployed yet, which only cancels its slot request and makes the restart set depend on when a
// slot arrived: we leave it waiting.
func (c trackedPartitions) IsAvailable(id jobgraph.IntermediateResultPartitionID) bool {
	p := c.s.graph.Partition(id)
	if p == nil {
		return false
	}
	return c.IsPartitionAvailable(p)
}

// IsPartitionAvailable is IsAvailable for a partition of the scheduler's graph, without looking
// it up (PartitionAvailabilityChecker).
func (c trackedPartitions) IsPartitionAvailable(p *executiongraph.IntermediateResultPartition) bool {
	if c.s.partitions.isTracked(p) {
		return true
	}
	switch st := p.Producer().State(); st {
	case jobgraph.ExecutionStateCreated, jobgraph.ExecutionStateScheduled:
		return true
	default:
		return isDeployed(st)
	}
}

// JobID is the job's ID.
func (s *DefaultScheduler) JobID() jobgraph.JobID { return s.graph.JobID() }

// JobStatus is the job's current status. Flink: SchedulerNG.requestJobStatus.
func (s *DefaultScheduler) JobStatus() jobgraph.JobStatus { return s.graph.State() }

// ExecutionGraph is the live graph, for reading on the main loop only; changing it (transitions,
// resets) behind the scheduler's back breaks the scheduler.
func (s *DefaultScheduler) ExecutionGraph() *executiongraph.ExecutionGraph { return s.graph }

// Archive is a snapshot of the graph as it is now, with the exception history.
// Flink: SchedulerNG.requestJob.
func (s *DefaultScheduler) Archive() *executiongraph.ArchivedExecutionGraph { return s.graph.Archive() }

// Done reports whether the job reached a terminal status (FINISHED, FAILED, CANCELED or
// SUSPENDED).
func (s *DefaultScheduler) Done() bool { return s.graph.State().IsTerminal() }

// RootCause is the error the job failed (or was suspended) with, or nil. For a task failure it
// wraps the task's error (errors.Is finds it) with the task's name, attempt and location, and,
// unless the restart strategy is "none", says which restart strategy suppressed the recovery.
// Failures that were restarted are not root causes; they are in the exception history.
func (s *DefaultScheduler) RootCause() error { return s.rootCause }

// ExceptionHistory is a copy of the job's exception history, oldest first: one entry per failure
// that started a restart attempt or ended the job, at most Config.ExceptionHistorySize (the
// newest), each with the failures that came while its restart was pending (merged into the same
// attempt by the restart strategy, or failures of tasks it was canceling) as concurrent
// exceptions. It is also in every Archive. Flink: SchedulerBase.getExceptionHistory.
func (s *DefaultScheduler) ExceptionHistory() []jobgraph.ExceptionHistoryEntry {
	return jobgraph.CloneExceptionHistory(s.history.entries)
}

// PartitionsLost tells the scheduler that the TaskExecutor at location is gone (heartbeat
// timeout, disconnection): the partitions it tracks there are no longer available, so a region
// that reads one again restarts its producer too, and they are not released (there is no one to
// ask). The JobMaster calls it before it releases the TaskExecutor's slots from the pool, so that
// the failovers of the tasks that ran there already see the partitions lost.
// Flink: JobMasterPartitionTracker.stopTrackingPartitionsFor.
func (s *DefaultScheduler) PartitionsLost(location jobgraph.ResourceID) {
	s.enter()
	defer s.leave()
	if n := s.partitions.lost(location); n > 0 {
		s.log.Info("partitions lost with their TaskExecutor", "location", string(location), "partitions", n)
	}
}

// StartScheduling moves the job from CREATED to RUNNING and lets the strategy schedule the
// first regions (or vertices). It does nothing unless the job is CREATED (e.g. it was canceled or
// suspended first). Flink: SchedulerNG.startScheduling.
func (s *DefaultScheduler) StartScheduling() {
	s.enter()
	defer s.leave()
	if s.graph.State() != jobgraph.JobStatusCreated {
		return
	}
	s.transitionJob(jobgraph.JobStatusRunning)
	s.strategy.StartScheduling()
}

// UpdateTaskExecutionState applies a TaskExecutor's report about one execution attempt and
// reports whether the attempt was known: false, and nothing changes, for an attempt of another
// graph, an unknown vertex, an attempt that is not the vertex's current one, one already in a
// terminal state, or any report after the job reached a terminal status (Flink's
// ExecutionGraph forgets executions once they are terminal and returns false too). A known
// attempt's report that carries accumulators (the final states do) makes them the attempt's
// before its state changes (Flink: Execution.markFinished / processFail with accumulators).
//
//   - INITIALIZING, RUNNING: the execution advances (through INITIALIZING if it was DEPLOYING).
//     Ignored while it is CANCELING.
//   - FINISHED: the execution FINISHED (through the states before, if any were skipped); its
//     blocking partitions become consumable and are tracked at its location; partitions whose
//     consumer regions have all finished are released (Deployer.ReleasePartitions); the strategy
//     schedules what became schedulable; when every execution FINISHED the job is FINISHED.
//     For an execution being canceled it counts as CANCELED (the task beat the cancel call).
//   - FAILED: the execution FAILED with s.Failure.Err() (which matches the library's sentinels
//     the failure matched on the TaskExecutor) wrapped as
//     "task <name> (attempt <n>) on <location> failed: <err>", and the failure handler decides:
//     the failover strategy's vertices restart after the restart strategy's backoff, or the job
//     fails with that root cause. For an execution being canceled for a restart it is a
//     concurrent failure of that restart (FAILED, in the exception history, no new restart); for
//     one being canceled because the job fails or is canceled it counts as CANCELED, as in Flink.
//   - CANCELED: completes a cancel we asked for. An unsolicited CANCELED is treated as a failure
//     of the task (Flink would leave such a job hanging).
//   - anything else is an illegal report: the execution fails with an error saying so, and the
//     result is false.
//
// Flink: SchedulerNG.updateTaskExecutionState.
func (s *DefaultScheduler) UpdateTaskExecutionState(st rpc.TaskExecutionState) bool {
	s.enter()
	defer s.leave()
	if s.graph.State().IsTerminal() {
		return false
	}
	e := s.graph.Execution(st.ExecutionAttemptID)
	if e == nil || !e.IsCurrent() || e.State().IsTerminal() {
		return false
	}
	if st.Accumulators != nil {
		e.SetAccumulators(st.Accumulators) // before the final state, which keeps them
	}
	switch st.State {
	case jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning:
		if e.State() == jobgraph.ExecutionStateCanceling {
			return true
		}
		if !s.advance(e, st.State) {
			s.failExecution(e, fmt.Errorf("%s: TaskExecutor reported %s while the scheduler had it %s", describe(e), st.State, e.State()), true)
		}
	case jobgraph.ExecutionStateFinished:
		s.onFinishedReport(e)
	case jobgraph.ExecutionStateFailed:
		cause := st.Failure.Err()
		switch {
		case cause == nil:
			cause = errors.New("unknown failure")
		case cause.Error() == "":
			cause = fmt.Errorf("unknown failure%w", cause) // keeps the codes
		}
		s.failExecution(e, fmt.Errorf("task %s (attempt %d) on %s failed: %w", e.Vertex().Name(), e.AttemptNumber(), e.ResourceID, cause), false)
	case jobgraph.ExecutionStateCanceled:
		if e.State() == jobgraph.ExecutionStateCanceling {
			s.completeCancel(e)
			return true
		}
		s.failExecution(e, fmt.Errorf("task %s (attempt %d) on %s was canceled without a cancel request", e.Vertex().Name(), e.AttemptNumber(), e.ResourceID), false)
	default:
		s.failExecution(e, fmt.Errorf("%s: TaskExecutor sent an illegal state update %s", describe(e), st.State), true)
		return false
	}
	return true
}

// UpdateAccumulators records the accumulator snapshot a TaskExecutor sent with a heartbeat as the
// newest of its execution attempt, and reports whether it did: not for another job, another
// graph's or an unknown attempt, an attempt that is not its vertex's current one (a restart
// superseded it, and its values no longer count), a terminal attempt (its final state carried
// the final values), or a terminal job. Flink: SchedulerNG.updateAccumulators.
func (s *DefaultScheduler) UpdateAccumulators(snap rpc.AccumulatorSnapshot) bool {
	if snap.JobID != s.graph.JobID() || s.graph.State().IsTerminal() {
		return false
	}
	e := s.graph.Execution(snap.ExecutionAttemptID)
	if e == nil || !e.IsCurrent() {
		return false
	}
	return e.SetAccumulators(snap.Accumulators)
}

// OnDeployFailed tells the scheduler that deploying attempt failed (SubmitTask returned err): the
// execution FAILED with err wrapped as "could not deploy task <name> (attempt <n>) to
// <location>: <err>", a cancel is sent in case the task started after all, and the failure is
// handled as a task failure. Ignored for an unknown, old or terminal attempt or a terminal job;
// an execution being canceled is handled as a FAILED report is (see UpdateTaskExecutionState).
// Flink: Execution.deploy's failure path.
func (s *DefaultScheduler) OnDeployFailed(attempt jobgraph.ExecutionAttemptID, err error) {
	s.enter()
	defer s.leave()
	if s.graph.State().IsTerminal() {
		return
	}
	e := s.graph.Execution(attempt)
	if e == nil || !e.IsCurrent() || e.State().IsTerminal() {
		return
	}
	s.failExecution(e, fmt.Errorf("could not deploy task %s (attempt %d) to %s: %w", e.Vertex().Name(), e.AttemptNumber(), e.ResourceID, err), true)
}

// HandleGlobalFailure handles a failure of the job as a whole. A RUNNING or RESTARTING job
// restarts every vertex under the restart strategy, as a task failure under full failover would
// (an exception history entry without a task), or, when the strategy cannot restart, fails with
// err as root cause (wrapped as for a task failure; errors.Is finds err): FAILING, every
// execution canceled, FAILED once all are terminal. A CREATED job fails; a CANCELLING job goes
// FAILING, as in Flink; a FAILING or terminal job ignores it. Flink: SchedulerNG.handleGlobalFailure.
func (s *DefaultScheduler) HandleGlobalFailure(err error) {
	s.enter()
	defer s.leave()
	st := s.graph.State()
	if st.IsTerminal() || st == jobgraph.JobStatusFailing {
		return
	}
	if err == nil {
		err = errors.New("global failure without a cause")
	}
	s.log.Warn("global failure", "error", err)
	if !s.schedulingAllowed() {
		s.history.add(s.globalEntry(err), true)
		s.failJob(err)
		return
	}
	defer s.slots.holdReleases()()
	s.applyFailure(s.failures.globalFailure(err), s.globalEntry(err))
	s.checkAllTerminal()
}

// Cancel cancels the job: from CREATED, RUNNING, RESTARTING or FAILING it goes CANCELLING,
// pending restarts are dropped, every execution is canceled (CREATED and SCHEDULED ones at once,
// giving up their slot requests; deployed ones go CANCELING and the Deployer cancels the task),
// and once every execution is terminal the job is CANCELED; with nothing deployed that happens
// before Cancel returns. A job in another status is left alone. Flink: SchedulerNG.cancel / DefaultExecutionGraph.cancel.
func (s *DefaultScheduler) Cancel() {
	s.enter()
	defer s.leave()
	switch s.graph.State() {
	case jobgraph.JobStatusCreated, jobgraph.JobStatusRunning, jobgraph.JobStatusRestarting, jobgraph.JobStatusFailing:
	default:
		return
	}
	s.dropRestarts()
	s.transitionJob(jobgraph.JobStatusCancelling)
	s.cancelAll()
	s.checkAllTerminal()
}

// Suspend stops the job on this JobMaster without ending it globally (leadership lost, JobMaster
// shut down): the job goes SUSPENDED at once with cause as root cause, pending restarts are
// dropped, every execution is canceled without waiting (deployed ones get a cancel call and count
// as CANCELED), every slot goes back to the pool and tracked partitions are released. Later
// reports are ignored; OnTerminal is not called. Nothing happens for a terminal job.
// Flink: SchedulerNG.suspend.
func (s *DefaultScheduler) Suspend(cause error) {
	s.enter()
	defer s.leave()
	if s.graph.State().IsTerminal() {
		return
	}
	if cause == nil {
		cause = errors.New("job suspended")
	}
	s.dropRestarts()
	s.rootCause = cause
	s.graph.SetFailureCause(cause)
	s.transitionJob(jobgraph.JobStatusSuspended)
	for v := range s.graph.Vertices() {
		e := v.CurrentExecution()
		s.cancelExecution(e)
		if e.State() == jobgraph.ExecutionStateCanceling {
			s.transition(e, jobgraph.ExecutionStateCanceled)
		}
	}
	s.slots.releaseAll(cause)
	s.releasePartitions(s.partitions.releaseAll(false))
	s.checkpointsOnTerminal(jobgraph.JobStatusSuspended)
	s.terminated = true
}

// ---- executions ----

// transition moves e to state to; an illegal transition here is a bug in the scheduler.
func (s *DefaultScheduler) transition(e *executiongraph.Execution, to jobgraph.ExecutionState) {
	from := e.State()
	if err := e.TransitionState(to); err != nil {
		panic("scheduler: broken invariant: " + err.Error())
	}
	s.afterTransition(e, from)
}

// afterTransition does the bookkeeping of every execution state change: the count of
// non-terminal executions, the logical slot of an execution that became terminal, the listener.
func (s *DefaultScheduler) afterTransition(e *executiongraph.Execution, from jobgraph.ExecutionState) {
	to := e.State()
	if to == from {
		return
	}
	if l := s.cfg.ExecutionStateListener; l != nil {
		l(e.AttemptID(), to)
	}
	if !from.IsTerminal() && to.IsTerminal() && e.IsCurrent() {
		s.nonTerminal--
		s.slots.releaseLogicalSlot(e)
		if r := s.owner[e.Vertex().Index()]; r != nil {
			s.restartWaitsLess(r)
		}
	}
}

// advance walks e forward along DEPLOYING → INITIALIZING → RUNNING → FINISHED up to target, and
// reports false (changing nothing) if e is not on that path before or at target.
func (s *DefaultScheduler) advance(e *executiongraph.Execution, target jobgraph.ExecutionState) bool {
	path := [...]jobgraph.ExecutionState{
		jobgraph.ExecutionStateDeploying, jobgraph.ExecutionStateInitializing,
		jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFinished,
	}
	cur, tgt := -1, -1
	for i, st := range path {
		if st == e.State() {
			cur = i
		}
		if st == target {
			tgt = i
		}
	}
	if cur < 0 || tgt < 0 || cur > tgt {
		return false
	}
	for i := cur + 1; i <= tgt; i++ {
		s.transition(e, path[i])
	}
	return true
}

func (s *DefaultScheduler) onFinishedReport(e *executiongraph.Execution) {
	if e.State() == jobgraph.ExecutionStateCanceling {
		s.completeCancel(e)
		return
	}
	if !s.advance(e, jobgraph.ExecutionStateFinished) {
		s.failExecution(e, fmt.Errorf("%s: TaskExecutor reported FINISHED while the scheduler had it %s", describe(e), e.State()), true)
		return
	}
	v := e.Vertex()
	s.releasePartitions(s.partitions.vertexFinished(v))
	if !s.schedulingAllowed() {
		s.checkAllTerminal()
		return
	}
	s.strategy.OnExecutionStateChange(v, jobgraph.ExecutionStateFinished)
	if s.graph.State() == jobgraph.JobStatusRunning && s.graph.AllVerticesFinished() {
		s.transitionJob(jobgraph.JobStatusFinished)
		s.onGloballyTerminal()
	}
}

// completeCancel moves a CANCELING execution to CANCELED and ends the job if it was the last.
func (s *DefaultScheduler) completeCancel(e *executiongraph.Execution) {
	s.transition(e, jobgraph.ExecutionStateCanceled)
	s.checkAllTerminal()
}

// cancelExecution starts canceling e: CREATED and SCHEDULED go CANCELED, deployed states go
// CANCELING and the Deployer cancels the task. Flink: Execution.cancel.
func (s *DefaultScheduler) cancelExecution(e *executiongraph.Execution) {
	from := e.State()
	to := e.Cancel()
	if to == from {
		return
	}
	s.afterTransition(e, from)
	if to == jobgraph.ExecutionStateCanceling {
		s.deployer.CancelTask(e.AttemptID(), e.ResourceID)
	}
}

// cancelAll cancels every current execution. Flink: DefaultExecutionGraph.cancelVerticesAsync.
func (s *DefaultScheduler) cancelAll() {
	for v := range s.graph.Vertices() {
		s.cancelExecution(v.CurrentExecution())
	}
}

// failExecution fails e with err and hands the failure to the failure handler; a CANCELING e
// is a concurrent failure of the restart it is canceled for, or else just completes its cancel.
// cancelRemote asks the TaskExecutor to cancel a deployed task, for failures the TaskExecutor
// did not report itself.
func (s *DefaultScheduler) failExecution(e *executiongraph.Execution, err error, cancelRemote bool) {
	switch st := e.State(); {
	case st.IsTerminal():
		return
	case st == jobgraph.ExecutionStateCanceling:
		s.failCanceling(e, err)
		return
	}
	defer s.slots.holdReleases()()
	deployed := isDeployed(e.State())
	from := e.State()
	if ferr := e.MarkFailed(err); ferr != nil {
		panic("scheduler: broken invariant: " + ferr.Error())
	}
	s.afterTransition(e, from)
	if cancelRemote && deployed {
		s.deployer.CancelTask(e.AttemptID(), e.ResourceID)
	}
	s.log.Warn("task failed", "task", e.Vertex().Name(), "attempt", e.AttemptNumber(), "location", string(e.ResourceID), "error", err)
	s.checkpointsOnTaskFailure(e.AttemptID(), err)
	if s.schedulingAllowed() {
		s.applyFailure(s.failures.taskFailure(e.Vertex(), err), s.taskEntry(e, err))
	} else {
		s.failJob(err) // nothing is restarted once the job fails or is canceled
	}
	s.checkAllTerminal()
}

// failCanceling handles a failure of e, which is CANCELING. If e is canceled for a pending
// restart, the failure belongs to that restart: e goes FAILED and the failure is grouped under
// the restart's exception history entry, without a restart of its own (Flink would count it as
// CANCELED and drop it). Otherwise the job is failing or canceled, and the failure completes the
// cancel, as in Flink.
func (s *DefaultScheduler) failCanceling(e *executiongraph.Execution, err error) {
	r := s.owner[e.Vertex().Index()]
	if r == nil {
		s.completeCancel(e)
		return
	}
	from := e.State()
	if ferr := e.MarkFailed(err); ferr != nil {
		panic("scheduler: broken invariant: " + ferr.Error())
	}
	s.log.Warn("task failed while canceled for a restart", "task", e.Vertex().Name(), "attempt", e.AttemptNumber(), "location", string(e.ResourceID), "error", err)
	s.history.addConcurrent(r.entry, s.taskEntry(e, err))
	s.afterTransition(e, from)
}

func isDeployed(st jobgraph.ExecutionState) bool {
	switch st {
	case jobgraph.ExecutionStateDeploying, jobgraph.ExecutionStateInitializing,
		jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateReconciling:
		return true
	}
	return false
}

func describe(e *executiongraph.Execution) string {
	return fmt.Sprintf("task %s (attempt %d)", e.Vertex().Name(), e.AttemptNumber())
}

// ---- the job ----

func (s *DefaultScheduler) transitionJob(to jobgraph.JobStatus) {
	from := s.graph.State()
	if err := s.graph.TransitionState(from, to); err != nil {
		panic("scheduler: broken invariant: " + err.Error())
	}
	if s.log.Enabled(context.Background(), slog.LevelInfo) { // no arguments made unless logged
		s.log.Info("job status changed", "from", from.String(), "to", to.String())
	}
	s.checkpointsOnJobStatus(from, to)
	s.stopWithSavepointOnJobStatus(to)
	s.notifyJobStatus(to)
}

func (s *DefaultScheduler) notifyJobStatus(st jobgraph.JobStatus) {
	s.metrics.publishStatus(st, s.graph.StatusTimestamp(st))
	if l := s.cfg.JobStatusListener; l != nil {
		l(s.graph.JobID(), st, s.graph.StatusTimestamp(st))
	}
}

// applyFailure records the failure in the exception history (entry describes it) and carries out
// the failure handler's decision: restart after the backoff, or fail the job.
// Flink: DefaultScheduler.maybeRestartTasks with archiveFromFailureHandlingResult.
func (s *DefaultScheduler) applyFailure(d failureDecision, entry jobgraph.ExceptionHistoryEntry) {
	seq := s.history.add(entry, d.newAttempt)
	if !d.restart {
		s.failJob(d.jobCause)
		return
	}
	if d.newAttempt {
		s.metrics.countRestart() // Flink: ExecutionFailureHandler counts each new restart attempt
	}
	s.restartTasksWithDelay(d, seq)
}

// schedulingAllowed reports whether the job schedules and restarts tasks: it is RUNNING, or
// RESTARTING (some vertices wait for a restart while others run).
func (s *DefaultScheduler) schedulingAllowed() bool {
	st := s.graph.State()
	return st == jobgraph.JobStatusRunning || st == jobgraph.JobStatusRestarting
}

// failJob moves the job to FAILING with cause as root cause, drops pending restarts and cancels
// every execution; FAILED follows once all are terminal. A job already FAILING or terminal keeps
// its first root cause. Flink: DefaultExecutionGraph.failJob.
func (s *DefaultScheduler) failJob(cause error) {
	st := s.graph.State()
	if st == jobgraph.JobStatusFailing || st.IsTerminal() {
		return
	}
	s.dropRestarts()
	s.rootCause = cause
	s.graph.SetFailureCause(cause)
	s.transitionJob(jobgraph.JobStatusFailing)
	s.cancelAll()
	s.checkAllTerminal()
}

// checkAllTerminal ends a FAILING or CANCELLING job once no execution is left running.
func (s *DefaultScheduler) checkAllTerminal() {
	if s.nonTerminal > 0 {
		return
	}
	switch s.graph.State() {
	case jobgraph.JobStatusFailing:
		s.transitionJob(jobgraph.JobStatusFailed)
	case jobgraph.JobStatusCancelling:
		s.transitionJob(jobgraph.JobStatusCanceled)
	default:
		return
	}
	s.onGloballyTerminal()
}

// jobTerminalError is why a globally terminal job gives its slots back ("scheduler: job <id> is
// <status>"): made for every job, rarely read, so formatted only when asked for.
type jobTerminalError struct {
	job    jobgraph.JobID
	status jobgraph.JobStatus
}

func (e *jobTerminalError) Error() string {
	return "scheduler: job " + e.job.String() + " is " + e.status.String()
}

// onGloballyTerminal gives back every slot, releases the partitions left (keeping
// BLOCKING_PERSISTENT ones of a FINISHED job, which Flink promotes to cluster partitions) and
// calls OnTerminal.
func (s *DefaultScheduler) onGloballyTerminal() {
	if s.terminated {
		return
	}
	s.terminated = true
	st := s.graph.State()
	s.slots.releaseAll(&jobTerminalError{job: s.graph.JobID(), status: st})
	s.releasePartitions(s.partitions.releaseAll(st == jobgraph.JobStatusFinished))
	s.checkpointsOnTerminal(st)
	if f := s.cfg.OnTerminal; f != nil {
		f(s.graph.Archive(), s.rootCause)
	}
}

func (s *DefaultScheduler) releasePartitions(batches []partitionBatch) {
	for _, b := range batches {
		s.deployer.ReleasePartitions(b.location, b.partitions)
		if s.shuffle == nil {
			continue
		}
		for _, id := range b.partitions {
			if d, ok := s.shuffleDescs[id.PartitionID]; ok && d.ResultPartitionID == id {
				delete(s.shuffleDescs, id.PartitionID)
				s.shuffle.ReleasePartitionExternally(d)
			}
		}
	}
}

// registerProducedPartitions registers e's partitions with the ShuffleMaster, as deployed to
// location. Flink: Execution.registerProducedPartitions.
func (s *DefaultScheduler) registerProducedPartitions(e *executiongraph.Execution, location jobgraph.ResourceID) error {
	v := e.Vertex()
	for _, p := range v.ProducedPartitions() {
		id := rpc.ResultPartitionID{PartitionID: p.ID(), ProducerID: e.AttemptID()}
		d, err := s.shuffle.RegisterPartitionWithProducer(s.graph.JobID(),
			PartitionDescriptor{ResultPartitionID: id, DataSetID: p.Result().ID(), ResultType: p.ResultType(),
				PartitionIndex: p.Index(), NumberOfSubpartitions: numberOfSubpartitions(p), RecordCodec: p.Result().RecordCodec()},
			ProducerDescriptor{ExecutionAttemptID: e.AttemptID(), ProducerLocation: location})
		if err != nil {
			return fmt.Errorf("cannot register partition %s of task %s (attempt %d) with the shuffle master: %w", p.ID(), v.Name(), e.AttemptNumber(), err)
		}
		if d.ResultPartitionID != id {
			return fmt.Errorf("the shuffle master described partition %v for partition %v of task %s (attempt %d)", d.ResultPartitionID, id, v.Name(), e.AttemptNumber())
		}
		s.shuffleDescs[p.ID()] = d
		// The cached lists of the groups reading p may name its old descriptor, or none yet (a
		// group whose consumers were deployed before this producer): rebuild those only.
		for _, cpg := range p.ConsumedPartitionGroups() {
			s.tdds.invalidateGroup(cpg)
		}
	}
	return nil
}

// ---- deployment ----

// allocateSlotsAndDeploy schedules one bulk. Flink: DefaultExecutionDeployer.allocateSlotsAndDeploy.
func (s *DefaultScheduler) allocateSlotsAndDeploy(vertices []*executiongraph.ExecutionVertex) {
	if !s.schedulingAllowed() || len(vertices) == 0 {
		return
	}
	execs := make([]*executiongraph.Execution, 0, len(vertices))
	for _, v := range vertices {
		e := v.CurrentExecution()
		if e.State() != jobgraph.ExecutionStateCreated {
			s.log.Warn("not scheduling a vertex that is not CREATED", "task", v.Name(), "state", e.State().String())
			continue
		}
		execs = append(execs, e)
	}
	for _, e := range execs {
		s.transition(e, jobgraph.ExecutionStateScheduled)
	}
	if s.log.Enabled(context.Background(), slog.LevelDebug) { // no arguments made unless logged
		s.log.Debug("scheduling bulk", "executions", len(execs))
	}
	s.slots.allocate(execs)
}

// deployBulk deploys the executions of a bulk whose slots are all there. An execution that is
// no longer the current SCHEDULED one of its vertex, or whose vertex a failover named since the
// bulk was scheduled (its version changed), is skipped: that deployment was superseded.
// Flink: DefaultExecutionDeployer.deployAll with its vertex version check.
func (s *DefaultScheduler) deployBulk(b *bulk) {
	if !s.schedulingAllowed() {
		return
	}
	current := func(en bulkEntry) bool {
		e, ss := en.exec, en.slot
		return e.IsCurrent() && e.State() == jobgraph.ExecutionStateScheduled && s.versions[e.Vertex().Index()] == en.version &&
			!ss.released && ss.ready
	}
	if s.shuffle != nil {
		// Every partition of the bulk is registered before any task is deployed, so a consumer's
		// descriptor finds its pipelined producers' descriptors. Flink registers them once the
		// bulk's slots are assigned too.
		for _, en := range b.entries {
			if !current(en) || len(en.exec.Vertex().ProducedPartitions()) == 0 {
				continue
			}
			if err := s.registerProducedPartitions(en.exec, en.slot.slot.TaskExecutor); err != nil {
				s.failExecution(en.exec, err, false)
				if !s.schedulingAllowed() {
					return
				}
			}
		}
	}
	for _, en := range b.entries {
		e, ss := en.exec, en.slot
		if !current(en) {
			s.log.Debug("skipping a superseded deployment", "task", e.Vertex().Name(), "attempt", e.AttemptNumber())
			continue
		}
		s.deploy(e, ss.slot)
		if !s.schedulingAllowed() {
			return
		}
	}
}

// deploy records slot on e (SCHEDULED, current), moves it to DEPLOYING and hands its descriptor
// to the Deployer. Flink: Execution.deploy.
func (s *DefaultScheduler) deploy(e *executiongraph.Execution, slot slotpool.AllocatedSlot) {
	e.ResourceID = slot.TaskExecutor
	e.AllocationID = slot.AllocationID
	s.transition(e, jobgraph.ExecutionStateDeploying)
	tdd := s.tdds.build(e)
	if s.ck != nil {
		tdd.CheckpointingEnabled = s.ck.interval > 0
		tdd.HasCheckpointCoordinator = true // savepoints reach the tasks without an interval too
		tdd.TaskRestore = s.ck.restore[e.Vertex().Index()]
	}
	s.deployer.Deploy(tdd, slot)
}

// slotRequestFailed fails the executions waiting for a shared slot whose request failed.
func (s *DefaultScheduler) slotRequestFailed(execs []*executiongraph.Execution, err error) {
	for _, e := range execs {
		if !e.IsCurrent() || e.State() != jobgraph.ExecutionStateScheduled {
			continue
		}
		s.failExecution(e, fmt.Errorf("could not allocate a slot for task %s (attempt %d): %w", e.Vertex().Name(), e.AttemptNumber(), err), false)
	}
}

// slotLost fails the executions running in a shared slot the pool took away.
func (s *DefaultScheduler) slotLost(execs []*executiongraph.Execution, slot slotpool.AllocatedSlot, cause error) {
	for _, e := range execs {
		if !e.IsCurrent() || e.State().IsTerminal() {
			continue
		}
		s.failExecution(e, fmt.Errorf("task %s (attempt %d) lost its slot %s on %s: %w", e.Vertex().Name(), e.AttemptNumber(), slot.AllocationID, slot.TaskExecutor, cause), true)
	}
}
