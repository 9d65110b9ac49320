package jobmaster

import (
	"context"
	"errors"
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// coordinatorHandler runs the operator coordinators of one JobMaster: one coordination.Holder per
// vertex that names a coordinator (jobgraph.JobVertex.OperatorCoordinator), created from
// Config.OperatorCoordinators when the JobMaster builds its scheduler, started just before
// scheduling starts, closed when the JobMaster closes. It feeds the holders the attempts'
// readiness and failures from the scheduler's execution state changes, hands them the events
// the RPC entry point delivers, and is the operatorCoordinatorHandler of that entry point.
// Loop-owned. Flink: DefaultOperatorCoordinatorHandler.
type coordinatorHandler struct {
	jm       *DefaultJobMaster
	byVertex map[jobgraph.JobVertexID]*coordination.Holder
	ordered  []*coordination.Holder // in the JobGraph's vertex order: started and closed so
}

var _ operatorCoordinatorHandler = (*coordinatorHandler)(nil)

// newCoordinatorHandler creates the holders of g's coordinated vertices, each with its vertex's
// OperatorCoordinatorConfig and parallelism (executiongraph.Build gives every ExecutionJobVertex
// exactly its JobVertex's Parallelism; setUp checks the built graph against it). It fails, with
// the holders created so far closed, for a vertex naming a coordinator Config.OperatorCoordinators
// does not have (nil included) or whose Provider fails: the error names the job, the vertex (name
// and ID) and the coordinator, and wraps the Registry's (coordination.ErrUnknownCoordinator for an
// unknown name). On the loop.
func newCoordinatorHandler(jm *DefaultJobMaster, g *jobgraph.JobGraph) (*coordinatorHandler, error) {
	c := &coordinatorHandler{jm: jm, byVertex: make(map[jobgraph.JobVertexID]*coordination.Holder)}
	for _, v := range g.Vertices {
		if v.OperatorCoordinator == "" {
			continue
		}
		h, err := coordination.NewHolder(coordination.HolderConfig{
			JobID:       g.JobID,
			VertexID:    v.ID,
			Name:        v.OperatorCoordinator,
			Registry:    jm.cfg.OperatorCoordinators,
			Config:      v.OperatorCoordinatorConfig,
			Parallelism: v.Parallelism,
			Execute:     jm.loop.Execute,
			Send:        jm.sendOperatorEventToTask,
			FailJob:     jm.coordinatorFailedJob,
			FailAttempt: jm.failAttemptForLostEvent,
		})
		if err != nil {
			c.close()
			return nil, fmt.Errorf("jobmaster: job %s: operator coordinator %q of vertex %q (%s): %w", g.JobID, v.OperatorCoordinator, v.Name, v.ID, err)
		}
		c.byVertex[v.ID] = h
		c.ordered = append(c.ordered, h)
	}
	return c, nil
}

// contexts are the holders as the scheduler and its CheckpointCoordinator see them
// (scheduler.Config.OperatorCoordinators).
func (c *coordinatorHandler) contexts() []checkpoint.OperatorCoordinatorCheckpointContext {
	out := make([]checkpoint.OperatorCoordinatorCheckpointContext, len(c.ordered))
	for i, h := range c.ordered {
		out[i] = h
	}
	return out
}

// checkParallelism compares each holder's parallelism with the built graph's vertex.
func (c *coordinatorHandler) checkParallelism(g *executiongraph.ExecutionGraph, jg *jobgraph.JobGraph) error {
	for _, v := range jg.Vertices {
		if c.byVertex[v.ID] == nil {
			continue
		}
		if ejv := g.JobVertex(v.ID); ejv == nil || ejv.Parallelism() != v.Parallelism {
			return fmt.Errorf("jobmaster: job %s: vertex %s's ExecutionGraph parallelism differs from its JobVertex's %d, which its operator coordinator was given", jg.JobID, v.ID, v.Parallelism)
		}
	}
	return nil
}

// start starts every coordinator, in vertex order, after the initial restore (the scheduler's
// New calls ResetToCheckpoint) and before scheduling starts. A coordinator whose Start fails fails
// the job (its Holder posts the global failure). Flink: startAllOperatorCoordinators, the first
// thing SchedulerBase.startScheduling does. On the loop.
func (c *coordinatorHandler) start() {
	for _, h := range c.ordered {
		if err := h.Start(); err != nil {
			c.jm.log.Warn("starting an operator coordinator failed; failing the job", "err", err)
		}
	}
}

// close closes every coordinator, once (a Holder's later Close does nothing). On the loop.
// Flink: disposeAllOperatorCoordinators.
func (c *coordinatorHandler) close() {
	for _, h := range c.ordered {
		if err := h.Close(); err != nil {
			c.jm.log.Warn("closing an operator coordinator failed", "err", err)
		}
	}
}

// deliverOperatorEvent implements operatorCoordinatorHandler: the event goes to its vertex's
// Holder, which drops it unless attempt is its subtask's current ready attempt (then the error
// wraps rpc.ErrTaskNotRunning as well as coordination.ErrNotCurrentAttempt).
func (c *coordinatorHandler) deliverOperatorEvent(vertex jobgraph.JobVertexID, _ int, attempt jobgraph.ExecutionAttemptID, event []byte) error {
	h := c.byVertex[vertex]
	if h == nil {
		return fmt.Errorf("job %s: operator event from execution %s of vertex %s: %w", c.jm.job, attempt, vertex, rpc.ErrNoOperatorCoordinator)
	}
	err := h.HandleEventFromOperator(attempt, event)
	if errors.Is(err, coordination.ErrNotCurrentAttempt) {
		return fmt.Errorf("job %s: %w: %w", c.jm.job, rpc.ErrTaskNotRunning, err)
	}
	return err
}

// executionStateChanged tells an attempt's coordinator that it can receive events (INITIALIZING
// or RUNNING: Flink's initializing-or-running future of the Execution) or that it failed (FAILED,
// with its failure) or was canceled (CANCELED, no reason; Flink's notifyCoordinatorOfCancellation).
// Called synchronously from the scheduler's ExecutionStateListener, so an event the attempt sends
// right after its INITIALIZING report finds its gateway. On the loop.
func (c *coordinatorHandler) executionStateChanged(attempt jobgraph.ExecutionAttemptID, st jobgraph.ExecutionState) {
	h := c.byVertex[attempt.ExecutionVertexID.JobVertexID]
	if h == nil {
		return
	}
	var err error
	switch st {
	case jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning:
		err = h.ExecutionAttemptReady(attempt)
	case jobgraph.ExecutionStateFailed:
		err = h.ExecutionAttemptFailed(attempt, c.jm.failureOf(attempt))
	case jobgraph.ExecutionStateCanceled:
		err = h.ExecutionAttemptFailed(attempt, nil)
	}
	if err != nil {
		c.jm.log.Warn("an operator coordinator refused an execution state change", "execution", attempt, "state", st, "err", err)
	}
}

// executionGraphOf is a SchedulerNG that shows its ExecutionGraph (DefaultScheduler does).
type executionGraphOf interface {
	ExecutionGraph() *executiongraph.ExecutionGraph
}

// failureOf is attempt's failure cause, if the scheduler shows its graph; else nil. On the loop.
func (jm *DefaultJobMaster) failureOf(attempt jobgraph.ExecutionAttemptID) error {
	s, ok := jm.sched.(executionGraphOf)
	if !ok {
		return nil
	}
	if e := s.ExecutionGraph().Execution(attempt); e != nil {
		return e.FailureCause()
	}
	return nil
}

// coordinatorFailedJob is a Holder's FailJob: a global failure of the job, posted, as the Holder
// may call it from inside the scheduler's listener. Dropped once the JobMaster closed or its job
// ended. Flink: the GlobalFailureHandler of the coordinator's context.
func (jm *DefaultJobMaster) coordinatorFailedJob(cause error) {
	jm.loop.Execute(func() {
		if jm.closed || jm.terminal || jm.sched == nil {
			return
		}
		jm.log.Warn("an operator coordinator fails the job", "cause", cause)
		jm.sched.HandleGlobalFailure(cause)
	})
}

// failAttemptForLostEvent is a Holder's FailAttempt: an event to attempt was lost while it is its
// subtask's current attempt, so it fails (the failover strategy restarts it and the coordinator
// hears SubtaskReset) and its task is canceled on its TaskExecutor. Posted, under FailJob's rule.
// Flink: SubtaskGatewayImpl's event-loss failover (Execution.fail).
func (jm *DefaultJobMaster) failAttemptForLostEvent(attempt jobgraph.ExecutionAttemptID, cause error) {
	jm.loop.Execute(func() {
		if jm.closed || jm.terminal || jm.sched == nil {
			return
		}
		host, deployed := jm.deployments.hostOf(attempt)
		if !jm.sched.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: attempt, State: jobgraph.ExecutionStateFailed, Failure: rpc.Failure(cause)}) {
			return // not current any more
		}
		jm.log.Warn("an operator event to a task was lost; failing the task", "execution", attempt, "cause", cause)
		if te, ok := jm.taskExecutors[host]; ok && deployed {
			jm.send(func(ctx context.Context) error { return te.CancelTask(ctx, attempt) }, func(err error) {
				jm.log.Debug("canceling a task an operator event was lost to failed", "execution", attempt, "err", err)
			})
		}
	})
}
