package scheduler

import (
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
// applies the TaskExecutors' state reports, releases consumed partitions, and fails or cancels
// the job. Flink: org.apache.flink.runtime.scheduler.DefaultScheduler (SchedulerNG) with
// SchedulerBase and DefaultExecutionDeployer.
//
// It is driven only from its JobMaster's main loop: no locks, no goroutines, no I/O. Create it
// with New.
type DefaultScheduler struct {
	cfg      Config
	log      *slog.Logger
	graph    *executiongraph.ExecutionGraph
	pool     *slotpool.Pool
	deployer Deployer

	strategy   SchedulingStrategy
	failures   failureHandler
	slots      *slotAllocator
	tdds       *tddFactory
	partitions *partitionTracker

	// nonTerminal counts the current executions not in a terminal state.
	nonTerminal int
	rootCause   error
	terminated  bool // OnTerminal ran (or the job was suspended)
}

// New builds the ExecutionGraph of g (status CREATED, reported to Config.JobStatusListener) and a
// scheduler for it that takes slots from pool and deploys through deployer. g must not change
// afterwards. Nothing is scheduled before StartScheduling.
//
// Errors: the graph's validation or build error wrapped with the job's name (errors.Is matches
// jobgraph.ErrInvalidJobGraph for an invalid graph; errors.As finds the
// *jobgraph.ValidationError); ErrUnknownStrategy; an error for a nil pool or deployer or a
// negative SlotRequestTimeout.
//
// Cost: Build's, plus O(subtasks + partitions + groups) for the scheduler's own tables.
func New(g *jobgraph.JobGraph, pool *slotpool.Pool, deployer Deployer, cfg Config) (*DefaultScheduler, error) {
	if pool == nil {
		return nil, errors.New("scheduler: nil slot pool")
	}
	if deployer == nil {
		return nil, errors.New("scheduler: nil deployer")
	}
	if cfg.SlotRequestTimeout < 0 {
		return nil, fmt.Errorf("scheduler: slot.request.timeout %v is negative", cfg.SlotRequestTimeout)
	}
	switch cfg.SchedulingStrategy {
	case "", StrategyRegion, StrategyVertexwise:
	default:
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
			name = fmt.Sprintf("%q (%s)", g.Name, g.JobID)
		}
		return nil, fmt.Errorf("scheduler: cannot build the execution graph of job %s: %w", name, err)
	}
	s := &DefaultScheduler{
		cfg:         cfg,
		log:         logger.With("job", eg.JobID().String(), "jobName", eg.JobName()),
		graph:       eg,
		pool:        pool,
		deployer:    deployer,
		failures:    noRestartFailureHandler{},
		nonTerminal: eg.NumVertices(),
	}
	s.slots = newSlotAllocator(s, pool, cfg.SlotRequestTimeout)
	s.tdds = newTDDFactory(eg)
	s.partitions = newPartitionTracker(eg)
	ops := schedulerOps{s}
	if cfg.SchedulingStrategy == StrategyVertexwise {
		s.strategy = NewVertexwiseSchedulingStrategy(ops, eg.Topology())
	} else {
		s.strategy = NewPipelinedRegionSchedulingStrategy(ops, eg.Topology())
	}
	s.notifyJobStatus(jobgraph.JobStatusCreated)
	return s, nil
}

// schedulerOps is the SchedulerOperations face of the scheduler, kept off its exported API.
type schedulerOps struct{ s *DefaultScheduler }

func (o schedulerOps) AllocateSlotsAndDeploy(vertices []*executiongraph.ExecutionVertex) {
	o.s.allocateSlotsAndDeploy(vertices)
}

// JobID is the job's ID.
func (s *DefaultScheduler) JobID() jobgraph.JobID { return s.graph.JobID() }

// JobStatus is the job's current status. Flink: SchedulerNG.requestJobStatus.
func (s *DefaultScheduler) JobStatus() jobgraph.JobStatus { return s.graph.State() }

// ExecutionGraph is the live graph, for reading on the main loop only; changing it (transitions,
// resets) behind the scheduler's back breaks the scheduler.
func (s *DefaultScheduler) ExecutionGraph() *executiongraph.ExecutionGraph { return s.graph }

// Archive is a snapshot of the graph as it is now. Flink: SchedulerNG.requestJob.
func (s *DefaultScheduler) Archive() *executiongraph.ArchivedExecutionGraph { return s.graph.Archive() }

// Done reports whether the job reached a terminal status (FINISHED, FAILED, CANCELED or
// SUSPENDED).
func (s *DefaultScheduler) Done() bool { return s.graph.State().IsTerminal() }

// RootCause is the error the job failed (or was suspended) with, or nil. For a task failure it
// wraps the task's error (errors.Is finds it) with the task's name, attempt and location.
func (s *DefaultScheduler) RootCause() error { return s.rootCause }

// StartScheduling moves the job from CREATED to RUNNING and lets the strategy schedule the
// first regions (or vertices). It does nothing unless the job is CREATED (e.g. it was canceled or
// suspended first). Flink: SchedulerNG.startScheduling.
func (s *DefaultScheduler) StartScheduling() {
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
// ExecutionGraph forgets executions once they are terminal and returns false too).
//
//   - INITIALIZING, RUNNING: the execution advances (through INITIALIZING if it was DEPLOYING).
//     Ignored while it is CANCELING.
//   - FINISHED: the execution FINISHED (through the states before, if any were skipped); its
//     blocking partitions become consumable and are tracked at its location; partitions whose
//     consumer regions have all finished are released (Deployer.ReleasePartitions); the strategy
//     schedules what became schedulable; when every execution FINISHED the job is FINISHED.
//     For an execution being canceled it counts as CANCELED (the task beat the cancel call).
//   - FAILED: the execution FAILED with s.Err (or s.Failure as text) wrapped as
//     "task <name> (attempt <n>) on <location> failed: <err>", and the failure handler decides;
//     with no restarts the job fails with that root cause. For an execution being canceled it
//     counts as CANCELED, as in Flink.
//   - CANCELED: completes a cancel we asked for. An unsolicited CANCELED is treated as a failure
//     of the task (Flink would leave such a job hanging).
//   - anything else is an illegal report: the execution fails with an error saying so, and the
//     result is false.
//
// Flink: SchedulerNG.updateTaskExecutionState.
func (s *DefaultScheduler) UpdateTaskExecutionState(st rpc.TaskExecutionState) bool {
	if s.graph.State().IsTerminal() {
		return false
	}
	e := s.graph.Execution(st.ExecutionAttemptID)
	if e == nil || !e.IsCurrent() || e.State().IsTerminal() {
		return false
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
		if e.State() == jobgraph.ExecutionStateCanceling {
			s.completeCancel(e)
			return true
		}
		cause := st.Err
		if cause == nil {
			msg := st.Failure
			if msg == "" {
				msg = "unknown failure"
			}
			cause = errors.New(msg)
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

// OnDeployFailed tells the scheduler that deploying attempt failed (SubmitTask returned err): the
// execution FAILED with err wrapped as "could not deploy task <name> (attempt <n>) to
// <location>: <err>", a cancel is sent in case the task started after all, and the failure is
// handled as a task failure. Ignored for an unknown, old or terminal attempt or a terminal job;
// an execution being canceled just counts as CANCELED. Flink: Execution.deploy's failure path.
func (s *DefaultScheduler) OnDeployFailed(attempt jobgraph.ExecutionAttemptID, err error) {
	if s.graph.State().IsTerminal() {
		return
	}
	e := s.graph.Execution(attempt)
	if e == nil || !e.IsCurrent() || e.State().IsTerminal() {
		return
	}
	if e.State() == jobgraph.ExecutionStateCanceling {
		s.completeCancel(e)
		return
	}
	s.failExecution(e, fmt.Errorf("could not deploy task %s (attempt %d) to %s: %w", e.Vertex().Name(), e.AttemptNumber(), e.ResourceID, err), true)
}

// HandleGlobalFailure fails the job with err as root cause (kept as is), unless it is already
// failing or terminal: FAILING, every execution canceled, FAILED once all are terminal. A
// CANCELLING job goes FAILING, as in Flink. Flink: SchedulerNG.handleGlobalFailure.
func (s *DefaultScheduler) HandleGlobalFailure(err error) {
	if s.graph.State().IsTerminal() {
		return
	}
	if err == nil {
		err = errors.New("global failure without a cause")
	}
	s.applyFailure(s.failures.globalFailure(err))
}

// Cancel cancels the job: from CREATED, RUNNING, RESTARTING or FAILING it goes CANCELLING, every
// execution is canceled (CREATED and SCHEDULED ones at once, giving up their slot requests;
// deployed ones go CANCELING and the Deployer cancels the task), and once every execution is
// terminal the job is CANCELED; with nothing deployed that happens before Cancel returns. A job
// in another status is left alone. Flink: SchedulerNG.cancel / DefaultExecutionGraph.cancel.
func (s *DefaultScheduler) Cancel() {
	switch s.graph.State() {
	case jobgraph.JobStatusCreated, jobgraph.JobStatusRunning, jobgraph.JobStatusRestarting, jobgraph.JobStatusFailing:
	default:
		return
	}
	s.transitionJob(jobgraph.JobStatusCancelling)
	s.cancelAll()
	s.checkAllTerminal()
}

// Suspend stops the job on this JobMaster without ending it globally (leadership lost, JobMaster
// shut down): the job goes SUSPENDED at once with cause as root cause, every execution is
// canceled without waiting (deployed ones get a cancel call and count as CANCELED), every slot
// goes back to the pool and tracked partitions are released. Later reports are ignored; OnTerminal
// is not called. Nothing happens for a terminal job. Flink: SchedulerNG.suspend.
func (s *DefaultScheduler) Suspend(cause error) {
	if s.graph.State().IsTerminal() {
		return
	}
	if cause == nil {
		cause = errors.New("job suspended")
	}
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
	if s.graph.State() != jobgraph.JobStatusRunning {
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

// failExecution fails e with err (a CANCELING e just completes its cancel) and hands the
// failure to the failure handler. cancelRemote asks the TaskExecutor to cancel a deployed task,
// for failures the TaskExecutor did not report itself.
func (s *DefaultScheduler) failExecution(e *executiongraph.Execution, err error, cancelRemote bool) {
	switch st := e.State(); {
	case st.IsTerminal():
		return
	case st == jobgraph.ExecutionStateCanceling:
		s.completeCancel(e)
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
	s.applyFailure(s.failures.taskFailure(e.Vertex(), err))
	s.checkAllTerminal()
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
	s.log.Info("job status changed", "from", from.String(), "to", to.String())
	s.notifyJobStatus(to)
}

func (s *DefaultScheduler) notifyJobStatus(st jobgraph.JobStatus) {
	if l := s.cfg.JobStatusListener; l != nil {
		l(s.graph.JobID(), st, s.graph.StatusTimestamp(st))
	}
}

// applyFailure carries out the failure handler's decision.
func (s *DefaultScheduler) applyFailure(d failureDecision) {
	if d.restart {
		// No failureHandler of this version asks for a restart.
		panic("scheduler: broken invariant: restarts are not supported yet")
	}
	s.failJob(d.cause)
}

// failJob moves the job to FAILING with cause as root cause and cancels every execution; FAILED
// follows once all are terminal. A job already FAILING or terminal keeps its first root cause.
// Flink: DefaultExecutionGraph.failJob.
func (s *DefaultScheduler) failJob(cause error) {
	st := s.graph.State()
	if st == jobgraph.JobStatusFailing || st.IsTerminal() {
		return
	}
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

// onGloballyTerminal gives back every slot, releases the partitions left (keeping
// BLOCKING_PERSISTENT ones of a FINISHED job, which Flink promotes to cluster partitions) and
// calls OnTerminal.
func (s *DefaultScheduler) onGloballyTerminal() {
	if s.terminated {
		return
	}
	s.terminated = true
	st := s.graph.State()
	s.slots.releaseAll(fmt.Errorf("scheduler: job %s is %s", s.graph.JobID(), st))
	s.releasePartitions(s.partitions.releaseAll(st == jobgraph.JobStatusFinished))
	if f := s.cfg.OnTerminal; f != nil {
		f(s.graph.Archive(), s.rootCause)
	}
}

func (s *DefaultScheduler) releasePartitions(batches []partitionBatch) {
	for _, b := range batches {
		s.deployer.ReleasePartitions(b.location, b.partitions)
	}
}

// ---- deployment ----

// allocateSlotsAndDeploy schedules one bulk. Flink: DefaultExecutionDeployer.allocateSlotsAndDeploy.
func (s *DefaultScheduler) allocateSlotsAndDeploy(vertices []*executiongraph.ExecutionVertex) {
	if s.graph.State() != jobgraph.JobStatusRunning || len(vertices) == 0 {
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
	s.log.Debug("scheduling bulk", "executions", len(execs))
	s.slots.allocate(execs)
}

// deployBulk deploys the executions of a bulk whose slots are all there.
// Flink: DefaultExecutionDeployer.deployAll.
func (s *DefaultScheduler) deployBulk(b *bulk) {
	if s.graph.State() != jobgraph.JobStatusRunning {
		return
	}
	for _, en := range b.entries {
		e, ss := en.exec, en.slot
		if !e.IsCurrent() || e.State() != jobgraph.ExecutionStateScheduled || e.Vertex().Version() != en.version ||
			ss.released || !ss.ready {
			continue
		}
		e.ResourceID = ss.slot.TaskExecutor
		e.AllocationID = ss.slot.AllocationID
		s.transition(e, jobgraph.ExecutionStateDeploying)
		s.deployer.Deploy(s.tdds.build(e), ss.slot)
		if s.graph.State() != jobgraph.JobStatusRunning {
			return
		}
	}
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
