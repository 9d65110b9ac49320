package scheduler

import (
	"errors"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// CheckpointDeployer is a Deployer that also carries the checkpoint RPCs to the tasks: the
// scheduler's CheckpointCoordinator reaches the TaskExecutors through it. The JobMaster's
// Deployer implements it; a Deployer without it still works, but a checkpointing job's triggers
// then reach no task (its checkpoints expire), which New logs as a warning. Like every Deployer
// method, each starts its RPC off the main loop and returns at once; a failed TriggerCheckpoint
// comes back through CheckpointScheduler.OnCheckpointTriggerFailed, on the loop. Flink: the
// checkpoint calls of Execution (triggerCheckpoint, notifyCheckpointComplete,
// notifyCheckpointAborted) through its TaskManagerGateway.
type CheckpointDeployer interface {
	// TriggerCheckpoint asks the TaskExecutor at location to start checkpoint id at attempt
	// (TaskExecutorGateway.TriggerCheckpoint).
	TriggerCheckpoint(attempt jobgraph.ExecutionAttemptID, location jobgraph.ResourceID, id checkpoint.CheckpointID, timestamp time.Time, props checkpoint.CheckpointProperties)
	// ConfirmCheckpoint tells attempt that checkpoint id completed (TaskExecutorGateway.ConfirmCheckpoint).
	ConfirmCheckpoint(attempt jobgraph.ExecutionAttemptID, location jobgraph.ResourceID, id checkpoint.CheckpointID, timestamp time.Time)
	// AbortCheckpoint tells attempt that checkpoint id was aborted (TaskExecutorGateway.AbortCheckpoint).
	AbortCheckpoint(attempt jobgraph.ExecutionAttemptID, location jobgraph.ResourceID, id checkpoint.CheckpointID, timestamp time.Time)
}

// CheckpointScheduler is a SchedulerNG that coordinates checkpoints: the JobMaster hands it the
// tasks' acknowledgements and declines, on its main loop, if its scheduler implements this.
// DefaultScheduler does. Flink: the checkpoint part of SchedulerNG (acknowledgeCheckpoint,
// declineCheckpoint), a separate interface here so a host's SchedulerNG need not change.
type CheckpointScheduler interface {
	// AcknowledgeCheckpoint hands a task's acknowledgement to the CheckpointCoordinator. Errors,
	// for a message dropped without any change: ErrCheckpointingDisabled, or the coordinator's
	// (checkpoint.ErrUnknownCheckpoint, ErrUnknownTask for an outdated attempt,
	// ErrDuplicateAcknowledge, ErrShutdown).
	AcknowledgeCheckpoint(ack checkpoint.AcknowledgeCheckpoint) error
	// DeclineCheckpoint hands a task's decline to the CheckpointCoordinator; errors as for
	// AcknowledgeCheckpoint.
	DeclineCheckpoint(decline checkpoint.DeclineCheckpoint) error
	// OnCheckpointTriggerFailed reports that the TriggerCheckpoint RPC of checkpoint id to
	// attempt failed with err: the checkpoint is aborted (TriggerCheckpointFailure, not counted)
	// if it is still pending and waits for attempt; otherwise nothing changes.
	OnCheckpointTriggerFailed(attempt jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, err error)
	// CheckpointStatistics is the coordinator's statistics now; false when the job does not
	// checkpoint.
	CheckpointStatistics() (checkpoint.CheckpointingStatistics, bool)
}

var _ CheckpointScheduler = (*DefaultScheduler)(nil)

// ErrCheckpointingDisabled is returned by the CheckpointScheduler methods of a scheduler whose
// job does not checkpoint (CheckpointingSettings.Interval is 0).
var ErrCheckpointingDisabled = errors.New("scheduler: the job does not take checkpoints")

func init() {
	jobgraph.RegisterErrorCode("scheduler.checkpointing-disabled", ErrCheckpointingDisabled)
}

// HasCheckpointCoordinator reports whether New gives the job g a CheckpointCoordinator: its
// CheckpointingSettings are enabled, or it is a Streaming job (savepoints work without periodic
// checkpoints, as in Flink, where every streaming job has a coordinator).
func HasCheckpointCoordinator(g *jobgraph.JobGraph) bool {
	return g.Checkpointing.Enabled() || g.Type == jobgraph.Streaming
}

// checkpointing is the scheduler's part in checkpoints: its CheckpointCoordinator, the store and
// counter it got from the CheckpointRecoveryFactory, and the state each subtask restores.
type checkpointing struct {
	coord     *checkpoint.CheckpointCoordinator
	store     checkpoint.CompletedCheckpointStore
	counter   checkpoint.CheckpointIDCounter
	exec      checkpoint.IOExecutor
	messenger CheckpointDeployer // nil: the Deployer carries no checkpoint RPCs
	interval  time.Duration
	// restore[i] is what vertex i's next deployment restores (nil: a fresh start).
	restore []*rpc.TaskRestore
	// failJobs are the coordinator's FailJob calls, carried out as global failures when the
	// outermost scheduler call leaves (the coordinator must not be re-entered from its callback).
	failJobs []error
}

// enteringTimers runs every coordinator timer inside enter/leave, so that what the callback
// causes (a FailJob, a restart) is carried out when it returns, as for any scheduler entry.
type enteringTimers struct{ s *DefaultScheduler }

func (t enteringTimers) Schedule(d time.Duration, fn func()) func() bool {
	return t.s.timers.Schedule(d, func() {
		t.s.enter()
		defer t.s.leave()
		fn()
	})
}

// enteringExecutor brackets the coordinator's IOExecutor completions with enter/leave.
type enteringExecutor struct {
	s     *DefaultScheduler
	inner checkpoint.IOExecutor
}

func (e enteringExecutor) Execute(work func(), done func()) {
	e.inner.Execute(work, func() {
		e.s.enter()
		defer e.s.leave()
		done()
	})
}

// checkpointTasks is the coordinator's TaskGateway: each call goes to the attempt's location
// through the CheckpointDeployer.
type checkpointTasks struct{ s *DefaultScheduler }

func (t checkpointTasks) location(a jobgraph.ExecutionAttemptID) (jobgraph.ResourceID, bool) {
	ck := t.s.ck
	if ck.messenger == nil {
		return "", false
	}
	e := t.s.graph.Execution(a)
	if e == nil || e.ResourceID == "" {
		return "", false
	}
	return e.ResourceID, true
}

func (t checkpointTasks) TriggerCheckpoint(a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, ts time.Time, props checkpoint.CheckpointProperties) {
	if loc, ok := t.location(a); ok {
		t.s.ck.messenger.TriggerCheckpoint(a, loc, id, ts, props)
	}
}

func (t checkpointTasks) NotifyCheckpointComplete(a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, ts time.Time) {
	if loc, ok := t.location(a); ok {
		t.s.ck.messenger.ConfirmCheckpoint(a, loc, id, ts)
	}
}

func (t checkpointTasks) NotifyCheckpointAborted(a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, ts time.Time) {
	if loc, ok := t.location(a); ok {
		t.s.ck.messenger.AbortCheckpoint(a, loc, id, ts)
	}
}

// failJobCallback is the coordinator's FailJobCallback: both kinds become a global failure of
// the job (restarted or failed under the restart strategy), carried out after the coordinator's
// call returns. Flink: SchedulerBase's FailJobCallback (failJob and failJobDueToTaskFailure both
// end in a global failover).
type failJobCallback struct{ s *DefaultScheduler }

func (f failJobCallback) FailJob(cause error) { f.s.ck.failJobs = append(f.s.ck.failJobs, cause) }

func (f failJobCallback) FailJobDueToTaskFailure(cause error, task jobgraph.ExecutionAttemptID) {
	f.s.ck.failJobs = append(f.s.ck.failJobs, fmt.Errorf("checkpoint failure reported by %s: %w", task, cause))
}

// setUpCheckpointing creates the CheckpointCoordinator of a checkpointing or streaming job and
// restores the job's initial state: the latest snapshot in the store, else the savepoint of
// execution.savepoint.path. Flink: SchedulerBase's createAndRestoreExecutionGraph with
// DefaultExecutionGraphBuilder's enableCheckpointing.
func (s *DefaultScheduler) setUpCheckpointing(g *jobgraph.JobGraph, cfg Config) error {
	settings := g.Checkpointing
	factory := cfg.CheckpointRecoveryFactory
	if factory == nil {
		factory = checkpoint.NewStandaloneCheckpointRecoveryFactory()
	}
	if s.timers == nil {
		if settings.Interval == 0 {
			s.log.Debug("no Config.Timers: the streaming job gets no CheckpointCoordinator (no savepoints)")
			return nil
		}
		return fmt.Errorf("checkpointing (execution.checkpointing.interval %v): %w", settings.Interval, ErrNoTimers)
	}
	store, err := factory.CreateRecoveredCompletedCheckpointStore(g.JobID, settings.NumRetained)
	if err != nil {
		return fmt.Errorf("creating the completed checkpoint store: %w", err)
	}
	counter, err := factory.CreateCheckpointIDCounter(g.JobID)
	if err != nil {
		return fmt.Errorf("creating the checkpoint ID counter: %w", err)
	}
	// Savepoints write files through the executor too, so one that leaves the loop is used
	// whenever there is one; in place only for in-memory stores without one (tests).
	exec := cfg.CheckpointIOExecutor
	if exec == nil {
		if !checkpoint.DoesNoIO(store, counter) {
			return errors.New("the checkpoint store or ID counter does I/O and Config.CheckpointIOExecutor is nil")
		}
		exec = checkpoint.InlineExecutor{}
	}
	ck := &checkpointing{store: store, counter: counter, exec: exec, interval: settings.Interval,
		restore: make([]*rpc.TaskRestore, s.graph.NumVertices())}
	if m, ok := s.deployer.(CheckpointDeployer); ok {
		ck.messenger = m
	} else {
		s.log.Warn("the Deployer carries no checkpoint RPCs (scheduler.CheckpointDeployer): checkpoints will reach no task")
	}
	s.ck = ck
	coord, err := checkpoint.NewCheckpointCoordinator(checkpoint.Config{
		JobID:        g.JobID,
		JobMasterID:  cfg.JobMasterID,
		Settings:     settings,
		Timers:       enteringTimers{s},
		Clock:        cfg.Clock,
		Tasks:        checkpointTasks{s},
		Plan:         s.checkpointPlan,
		Store:        store,
		IDCounter:    counter,
		Executor:     enteringExecutor{s, exec},
		FailJob:      failJobCallback{s},
		Metrics:      cfg.Metrics,
		Coordinators: s.coords.forCheckpointing(s),
	})
	if err != nil {
		return err
	}
	ck.coord = coord
	s.graph.SetCheckpointStatistics(func() *checkpoint.CheckpointingStatistics {
		st := coord.Statistics()
		return &st
	})
	if cp, ok := coord.RestoreLatestCheckpointedState(); ok {
		s.log.Info("restoring the latest checkpoint", "checkpoint", cp.CheckpointID, "savepoint", cp.Properties.IsSavepoint())
		if err := coord.AdvanceIDCounterPast(cp.CheckpointID); err != nil {
			return err
		}
		if err := s.assignRestore(cp, nil, false); err != nil {
			return err
		}
		return s.coords.resetAll(&cp, true)
	}
	path := g.SavepointRestore.Path
	if path == "" {
		return nil
	}
	if cfg.LoadSavepoint == nil {
		return fmt.Errorf("execution.savepoint.path %q is set, but Config.LoadSavepoint is nil", jobgraph.Truncate(path))
	}
	cp, err := cfg.LoadSavepoint(path)
	if err != nil {
		return fmt.Errorf("loading the savepoint %q (execution.savepoint.path): %w", jobgraph.Truncate(path), err)
	}
	if err := coord.RestoreSavepoint(cp); err != nil {
		return err
	}
	s.log.Info("restoring a savepoint", "checkpoint", cp.CheckpointID, "path", path)
	if err := s.assignRestore(cp, nil, g.SavepointRestore.AllowNonRestoredState); err != nil {
		return err
	}
	return s.coords.resetAll(&cp, !g.SavepointRestore.AllowNonRestoredState)
}

// assignRestore computes the state each of vertices (nil: every vertex) restores from cp.
// Flink: StateAssignmentOperation.
func (s *DefaultScheduler) assignRestore(cp checkpoint.CompletedCheckpoint, vertices []*executiongraph.ExecutionVertex, allowNonRestored bool) error {
	// The state of the job vertices whose subtasks restart, or of every one at a job start; a
	// region failover redistributes only its own vertices' state.
	jvs := s.graph.JobVertices()
	if vertices != nil {
		jvs = nil
		seen := make(map[*executiongraph.ExecutionJobVertex]bool)
		for _, v := range vertices {
			if jv := v.JobVertex(); !seen[jv] {
				seen[jv] = true
				jvs = append(jvs, jv)
			}
		}
	}
	toRestore := make([]checkpoint.VertexToRestore, len(jvs))
	for i, jv := range jvs {
		toRestore[i] = checkpoint.VertexToRestore{ID: jv.ID(), Name: jv.Name(), Parallelism: jv.Parallelism(), MaxParallelism: jv.MaxParallelism()}
	}
	assigned, err := checkpoint.AssignStates(cp, toRestore, allowNonRestored)
	if err != nil {
		return err
	}
	set := func(v *executiongraph.ExecutionVertex) {
		states, ok := assigned[v.JobVertex().ID()]
		if !ok {
			s.ck.restore[v.Index()] = &rpc.TaskRestore{CheckpointID: cp.CheckpointID}
			return
		}
		s.ck.restore[v.Index()] = &rpc.TaskRestore{CheckpointID: cp.CheckpointID, State: states[v.SubtaskIndex()]}
	}
	if vertices == nil {
		for v := range s.graph.Vertices() {
			set(v)
		}
		return nil
	}
	for _, v := range vertices {
		set(v)
	}
	return nil
}

// restoreForRestart gives the vertices a restart resets the latest completed snapshot's state
// (checkpoint or savepoint, whichever is newer; the one the job started from if none completed
// since) and returns that snapshot (nil: none). Flink: SchedulerBase.restoreState
// (restoreLatestCheckpointedStateToSubtasks / ToAll). Flink also aborts the pending checkpoints
// there (JOB_FAILOVER_REGION); ours were aborted when the failover was decided
// (abortCheckpointsForFailover), and none can be triggered between that and the restore: the
// plan refuses while a vertex of the restart is neither RUNNING nor FINISHED, and the failed one
// is FAILED (or, for a global failure, every running one CANCELING) until it is reset here.
func (s *DefaultScheduler) restoreForRestart(vertices []*executiongraph.ExecutionVertex) (*checkpoint.CompletedCheckpoint, error) {
	ck := s.ck
	cp, ok := ck.coord.RestoreLatestSnapshot()
	if !ok {
		for _, v := range vertices {
			ck.restore[v.Index()] = nil
		}
		return nil, nil
	}
	s.log.Info("restoring restarted tasks from a snapshot", "checkpoint", cp.CheckpointID, "tasks", len(vertices))
	if err := s.assignRestore(cp, vertices, true); err != nil {
		return nil, err
	}
	return &cp, nil
}

// checkpointPlan is the coordinator's Plan: TasksToTrigger are the RUNNING attempts of vertices
// without inputs and the RUNNING attempts all of whose upstream attempts are FINISHED;
// TasksToWaitFor every attempt not FINISHED; FinishedTasks the FINISHED ones. Any attempt
// neither RUNNING nor FINISHED makes it fail (the checkpoint fails with
// NotAllRequiredTasksRunning, not counted). Cost: O(subtasks + consumed partitions), each
// ConsumedPartitionGroup looked at once. Flink: DefaultCheckpointPlanCalculator (with
// checkpoints after tasks finish).
func (s *DefaultScheduler) checkpointPlan() (checkpoint.CheckpointPlan, error) {
	var plan checkpoint.CheckpointPlan
	// A first pass refuses the plan before anything is allocated (a trigger while tasks are
	// still being deployed costs no more than the walk).
	for v := range s.graph.Vertices() {
		if st := v.State(); st != jobgraph.ExecutionStateRunning && st != jobgraph.ExecutionStateFinished {
			return checkpoint.CheckpointPlan{}, fmt.Errorf("task %s (attempt %d) is %s, not RUNNING", v.Name(), v.CurrentExecution().AttemptNumber(), st)
		}
	}
	plan.TasksToWaitFor = make([]jobgraph.ExecutionAttemptID, 0, s.graph.NumVertices()-s.graph.NumFinishedVertices())
	// finished[g] caches, per ConsumedPartitionGroup index, 1 when every producer FINISHED, 2 when not.
	var finished []uint8
	for v := range s.graph.Vertices() {
		e := v.CurrentExecution()
		switch e.State() {
		case jobgraph.ExecutionStateFinished:
			plan.FinishedTasks = append(plan.FinishedTasks, v.ID())
			continue
		case jobgraph.ExecutionStateRunning:
		default:
			return checkpoint.CheckpointPlan{}, fmt.Errorf("task %s (attempt %d) is %s, not RUNNING", v.Name(), e.AttemptNumber(), e.State())
		}
		plan.TasksToWaitFor = append(plan.TasksToWaitFor, e.AttemptID())
		trigger := true
		for _, cpg := range v.ConsumedPartitionGroups() {
			if finished == nil {
				finished = make([]uint8, s.graph.NumConsumedPartitionGroups())
			}
			c := &finished[cpg.Index()]
			if *c == 0 {
				*c = 1
				for p := range cpg.Partitions() {
					if p.Producer().State() != jobgraph.ExecutionStateFinished {
						*c = 2
						break
					}
				}
			}
			if *c == 2 {
				trigger = false
				break
			}
		}
		if trigger {
			plan.TasksToTrigger = append(plan.TasksToTrigger, e.AttemptID())
		}
	}
	return plan, nil
}

// ---- the job's status and failures (Flink: CheckpointCoordinatorDeActivator) ----

// checkpointsOnJobStatus starts the periodic scheduler when the job goes RUNNING and stops it
// when the job leaves RUNNING (CheckpointCoordinatorSuspend for what is pending, not counted).
func (s *DefaultScheduler) checkpointsOnJobStatus(from, to jobgraph.JobStatus) {
	ck := s.ck
	if ck == nil || from == to {
		return
	}
	switch {
	case to == jobgraph.JobStatusRunning && ck.interval > 0:
		if err := ck.coord.StartCheckpointScheduler(); err != nil {
			s.log.Warn("cannot start the periodic checkpoint scheduler", "error", err)
		}
	case from == jobgraph.JobStatusRunning:
		ck.coord.StopCheckpointScheduler()
	}
}

// abortCheckpointsForFailover aborts every pending checkpoint because tasks restart:
// JobFailoverRegion for a region failover, JobFailure for a global one; neither is counted.
func (s *DefaultScheduler) abortCheckpointsForFailover(global bool) {
	if s.ck == nil {
		return
	}
	reason := checkpoint.JobFailoverRegion
	if global {
		reason = checkpoint.JobFailure
	}
	if err := s.ck.coord.AbortPendingCheckpoints(s.cfg.JobMasterID, reason); err != nil && !errors.Is(err, checkpoint.ErrShutdown) {
		s.log.Warn("aborting pending checkpoints failed", "error", err)
	}
}

// checkpointsOnTaskFailure aborts the pending checkpoints the failed attempt had not
// acknowledged (TaskFailure, not counted). Flink: failUnacknowledgedPendingCheckpointsFor.
func (s *DefaultScheduler) checkpointsOnTaskFailure(attempt jobgraph.ExecutionAttemptID, cause error) {
	if s.ck == nil {
		return
	}
	if _, err := s.ck.coord.FailUnacknowledgedPendingCheckpointsFor(s.cfg.JobMasterID, attempt, cause); err != nil && !errors.Is(err, checkpoint.ErrShutdown) {
		s.log.Warn("failing pending checkpoints of a failed task failed", "error", err)
	}
}

// checkpointsOnTerminal shuts the coordinator down; for a globally terminal job also the store
// and counter, without discarding anything: the job's checkpoints stay until the Dispatcher's
// global cleanup, which discards them (unless RetainOnCancellation keeps them for a job that did
// not finish) only after the job's dirty JobResult is written, so a crash in between never leaves
// a finished job without its result and without its checkpoints (Flink 1.15+:
// CheckpointResourcesCleanup). Shut down, the store refuses this JobMaster's late Adds; a
// CheckpointRecoveryFactory hands the checkpoints to whoever opens the job's store next.
// suspended leaves store and counter as they are, for the next JobMaster.
func (s *DefaultScheduler) checkpointsOnTerminal(st jobgraph.JobStatus) {
	ck := s.ck
	if ck == nil {
		return
	}
	ck.coord.Shutdown()
	if st == jobgraph.JobStatusSuspended {
		return
	}
	store, counter, log := ck.store, ck.counter, s.log
	var storeErr, counterErr error
	ck.exec.Execute(func() {
		storeErr = store.Shutdown(false)
		counterErr = counter.Shutdown(false)
	}, func() {
		if err := errors.Join(storeErr, counterErr); err != nil {
			log.Warn("shutting down the checkpoint store failed", "error", err)
		}
	})
}

// runFailJobs carries out the coordinator's FailJob calls as global failures; called by leave.
func (s *DefaultScheduler) runFailJobs() {
	for s.ck != nil && len(s.ck.failJobs) > 0 {
		cause := s.ck.failJobs[0]
		s.ck.failJobs = s.ck.failJobs[1:]
		s.HandleGlobalFailure(cause)
	}
}

// ---- CheckpointScheduler ----

// AcknowledgeCheckpoint implements CheckpointScheduler.
func (s *DefaultScheduler) AcknowledgeCheckpoint(ack checkpoint.AcknowledgeCheckpoint) error {
	if s.ck == nil {
		return ErrCheckpointingDisabled
	}
	s.enter()
	defer s.leave()
	return s.ck.coord.ReceiveAcknowledgeMessage(s.cfg.JobMasterID, ack)
}

// DeclineCheckpoint implements CheckpointScheduler.
func (s *DefaultScheduler) DeclineCheckpoint(d checkpoint.DeclineCheckpoint) error {
	if s.ck == nil {
		return ErrCheckpointingDisabled
	}
	s.enter()
	defer s.leave()
	return s.ck.coord.ReceiveDeclineMessage(s.cfg.JobMasterID, d)
}

// OnCheckpointTriggerFailed implements CheckpointScheduler.
func (s *DefaultScheduler) OnCheckpointTriggerFailed(attempt jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, err error) {
	if s.ck == nil {
		return
	}
	s.enter()
	defer s.leave()
	if cerr := s.ck.coord.HandleTriggerFailure(s.cfg.JobMasterID, id, attempt, err); cerr != nil {
		s.log.Debug("dropped a trigger failure", "checkpoint", id, "attempt", attempt.String(), "error", cerr)
	}
}

// CheckpointStatistics implements CheckpointScheduler.
func (s *DefaultScheduler) CheckpointStatistics() (checkpoint.CheckpointingStatistics, bool) {
	if s.ck == nil {
		return checkpoint.CheckpointingStatistics{}, false
	}
	return s.ck.coord.Statistics(), true
}

// CheckpointCoordinator is the job's coordinator, nil when the job does not checkpoint: for
// the JobMaster's savepoint operations and for tests, on the main loop only. Calls that may make
// it fail the job (triggers, messages) should be made inside the scheduler's methods; a FailJob
// it makes from a direct call is carried out at the next scheduler entry.
func (s *DefaultScheduler) CheckpointCoordinator() *checkpoint.CheckpointCoordinator {
	if s.ck == nil {
		return nil
	}
	return s.ck.coord
}

// WithCheckpointCoordinator runs fn with the job's coordinator as a scheduler entry: what fn
// causes (a FailJob of the coordinator, a restart) is carried out when it returns. For the
// JobMaster's checkpoint and savepoint triggers; on the main loop only. It returns fn's error, or
// ErrCheckpointingDisabled (fn not called) when the job does not checkpoint.
func (s *DefaultScheduler) WithCheckpointCoordinator(fn func(c *checkpoint.CheckpointCoordinator) error) error {
	if s.ck == nil {
		return ErrCheckpointingDisabled
	}
	s.enter()
	defer s.leave()
	return fn(s.ck.coord)
}
