package scheduler

import (
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// failureDecision is what the failure handler decides about one failure.
// Flink: org.apache.flink.runtime.executiongraph.failover.FailureHandlingResult.
type failureDecision struct {
	// cause is the failure as handled (the task's error, wrapped with its name and location).
	cause error
	// newAttempt reports whether the failure started a new restart attempt (a new exception
	// history entry) or merged into the attempt already pending (a concurrent exception of the
	// latest entry). Flink: FailureHandlingResult.isRootCause.
	newAttempt bool
	// restart asks to restart vertices after delay; otherwise the job fails with jobCause.
	restart  bool
	vertices []*executiongraph.ExecutionVertex // topological order
	delay    time.Duration
	// jobCause is the root cause the job fails with when it cannot restart: cause itself under
	// restart strategy "none", else cause wrapped with the restart strategy that gave up.
	jobCause error
	// global marks a failure of the job as a whole (every vertex restarts).
	global bool
}

// failureHandler decides what a task or global failure means for the job: which vertices to
// restart (the failover strategy) and after what backoff (the restart backoff time strategy), or
// that the job fails. Flink: org.apache.flink.runtime.executiongraph.failover.ExecutionFailureHandler.
type failureHandler struct {
	restart  RestartBackoffTimeStrategy
	failover FailoverStrategy
	// mayRestart is false for restart strategy "none": its failures fail the job unwrapped.
	mayRestart bool
	graph      *executiongraph.ExecutionGraph
	all        []*executiongraph.ExecutionVertex // every vertex, for global failures; built once
}

// taskFailure is called after failed's current execution went FAILED with cause.
// Flink: ExecutionFailureHandler.getFailureHandlingResult.
func (h *failureHandler) taskFailure(failed *executiongraph.ExecutionVertex, cause error) failureDecision {
	return h.decide(cause, func() []*executiongraph.ExecutionVertex { return h.failover.TasksToRestart(failed, cause) })
}

// globalFailure is called for a failure of the job as a whole: every vertex restarts.
// Flink: ExecutionFailureHandler.getGlobalFailureHandlingResult.
func (h *failureHandler) globalFailure(cause error) failureDecision {
	d := h.decide(cause, func() []*executiongraph.ExecutionVertex {
		if h.all == nil {
			h.all = make([]*executiongraph.ExecutionVertex, 0, h.graph.NumVertices())
			for v := range h.graph.Vertices() {
				h.all = append(h.all, v)
			}
		}
		return h.all
	})
	d.global = true
	return d
}

// decide records the failure with the restart strategy and asks the failover strategy for the
// vertices only when the job may restart, as Flink's handleFailure does.
func (h *failureHandler) decide(cause error, vertices func() []*executiongraph.ExecutionVertex) failureDecision {
	d := failureDecision{cause: cause, newAttempt: h.restart.NotifyFailure(cause)}
	if !h.restart.CanRestart() {
		d.jobCause = cause
		if h.mayRestart {
			d.jobCause = fmt.Errorf("recovery is suppressed by %v: %w", h.restart, cause)
		}
		return d
	}
	delay, err := h.restart.BackoffTime()
	if err != nil {
		panic("scheduler: broken invariant: no backoff after a failure: " + err.Error())
	}
	d.restart, d.delay, d.vertices = true, delay, vertices()
	return d
}

// pendingRestart is one restartTasksWithDelay: vertices that wait, with the versions they had
// when the failure was handled, until the backoff elapsed and every execution canceled for it is
// terminal. Flink: the delayed restartTasks of DefaultScheduler.restartTasksWithDelay with the
// ExecutionVertexVersions it recorded.
type pendingRestart struct {
	vertices []*executiongraph.ExecutionVertex
	versions []uint64
	// running counts the vertices this restart owns (s.owner) whose current execution is not
	// terminal yet: the restart waits for them (Flink: cancelFuture).
	running   int
	delayDone bool
	queued    bool // in s.ready
	done      bool // carried out or dropped
	cancel    func() bool
	// entry is the sequence number of the exception history entry of the failure that caused
	// the restart; failures of its canceled executions are grouped under it.
	entry int64
	// global: a global failover (every coordinator is reset, not only subtasks).
	global bool
}

// restartTasksWithDelay marks d.vertices as waiting for a restart with new versions (the job goes
// RESTARTING when the first vertex starts waiting), cancels their current executions and
// schedules the restart after d.delay. Flink: DefaultScheduler.restartTasksWithDelay with
// addVerticesToRestartPending and cancelTasksAsync.
func (s *DefaultScheduler) restartTasksWithDelay(d failureDecision, entry int64) {
	if len(d.vertices) == 0 {
		return
	}
	// Pending checkpoints cannot complete once tasks restart. Before the job leaves RUNNING, so
	// that they fail as a failover's (not counted), not as the periodic scheduler's suspension.
	s.abortCheckpointsForFailover(d.global)
	r := &pendingRestart{vertices: d.vertices, versions: make([]uint64, len(d.vertices)), entry: entry, global: d.global}
	for k, v := range d.vertices {
		i := v.Index()
		s.versions[i]++
		r.versions[k] = s.versions[i]
		running := !v.State().IsTerminal()
		if old := s.owner[i]; old != nil {
			// A newer failover supersedes the older one for this vertex.
			if running {
				s.restartWaitsLess(old)
			}
		} else {
			s.waiting++
		}
		s.owner[i] = r
		if running {
			r.running++
		}
	}
	s.restarts = append(s.restarts, r)
	if s.graph.State() == jobgraph.JobStatusRunning {
		s.transitionJob(jobgraph.JobStatusRestarting)
	}
	s.log.Info("restarting tasks after a backoff", "tasks", len(d.vertices), "backoff", d.delay)
	for _, v := range d.vertices {
		s.cancelExecution(v.CurrentExecution())
	}
	r.cancel = s.timers.Schedule(d.delay, func() {
		s.enter()
		defer s.leave()
		s.restartDelayElapsed(r)
	})
}

// restartWaitsLess counts one execution of r's as terminal (or no longer r's), and queues r if
// that was the last one and the backoff elapsed.
func (s *DefaultScheduler) restartWaitsLess(r *pendingRestart) {
	if r.running--; r.running == 0 && r.delayDone {
		s.queueRestart(r)
	}
}

func (s *DefaultScheduler) restartDelayElapsed(r *pendingRestart) {
	if r.done {
		return
	}
	r.cancel = nil
	r.delayDone = true
	if r.running == 0 {
		s.queueRestart(r)
	}
}

// queueRestart has r carried out when the outermost scheduler call returns (see leave), so that a
// restart never runs in the middle of another state change.
func (s *DefaultScheduler) queueRestart(r *pendingRestart) {
	if r.queued || r.done {
		return
	}
	r.queued = true
	s.ready = append(s.ready, r)
}

// restartTasks carries out r for the vertices whose version it recorded is still current (a
// newer failover may have taken the others): they stop waiting (the job goes back to RUNNING
// when no vertex waits), are reset for a new execution (releasing the partitions of finished
// ones), and the strategy schedules them again. Flink: DefaultScheduler.restartTasks.
func (s *DefaultScheduler) restartTasks(r *pendingRestart) {
	if r.done {
		return
	}
	r.done = true
	for i, p := range s.restarts {
		if p == r {
			s.restarts = append(s.restarts[:i], s.restarts[i+1:]...)
			break
		}
	}
	if !s.schedulingAllowed() {
		return
	}
	vertices := make([]*executiongraph.ExecutionVertex, 0, len(r.vertices))
	for k, v := range r.vertices {
		if s.versions[v.Index()] == r.versions[k] {
			vertices = append(vertices, v)
		}
	}
	if len(vertices) == 0 {
		return
	}
	for _, v := range vertices {
		s.owner[v.Index()] = nil
	}
	s.waiting -= len(vertices)
	if s.waiting == 0 && s.graph.State() == jobgraph.JobStatusRestarting {
		s.transitionJob(jobgraph.JobStatusRunning)
	}
	var released batcher
	for _, v := range vertices {
		if v.State() == jobgraph.ExecutionStateFinished {
			s.partitions.vertexReset(v, &released)
		}
		if _, err := v.ResetForNewExecution(); err != nil {
			panic("scheduler: broken invariant: " + err.Error())
		}
		s.nonTerminal++
	}
	s.releasePartitions(released.out)
	s.tdds.invalidate()
	var restored *checkpoint.CompletedCheckpoint
	if s.ck != nil {
		var err error
		if restored, err = s.restoreForRestart(vertices); err != nil {
			s.failJob(fmt.Errorf("restoring the restarted tasks' state: %w", err))
			return
		}
	}
	// The operator coordinators after the tasks' state, before the tasks are scheduled; a
	// coordinator that cannot be reset fails the job over globally (Flink: restartTasks'
	// handleGlobalFailure of restoreState's exception).
	if err := s.restoreCoordinatorsForRestart(vertices, r.global, restored); err != nil {
		s.HandleGlobalFailure(err)
		return
	}
	if ad, ok := s.failures.restart.(AttemptDone); ok {
		ad.RestartDone()
	}
	s.log.Info("restarting tasks", "tasks", len(vertices))
	s.strategy.RestartTasks(vertices)
}

// dropRestarts forgets every pending restart (the job is failing, canceled or suspended).
// Flink: incrementVersionsOfAllVertices, which makes every pending restart find its vertices
// modified.
func (s *DefaultScheduler) dropRestarts() {
	for _, r := range s.restarts {
		r.done = true
		if r.cancel != nil {
			r.cancel()
			r.cancel = nil
		}
	}
	s.restarts, s.ready = nil, nil
	clear(s.owner)
	s.waiting = 0
}

// enter and leave bracket every entry into the scheduler (public methods, slot pool callbacks,
// timers). Restarts that became ready meanwhile run when the outermost call leaves.
func (s *DefaultScheduler) enter() { s.depth++ }

func (s *DefaultScheduler) leave() {
	if s.depth == 1 {
		s.runFailJobs()
		for len(s.ready) > 0 {
			r := s.ready[0]
			s.ready = s.ready[1:]
			s.restartTasks(r)
		}
		s.ready = nil
	}
	s.depth--
}
