package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// MissingDeploymentError is the failure of a deployment that was lost (see ErrMissingDeployment,
// which it matches), where it was made; across a transport only its message and
// ErrMissingDeployment travel.
type MissingDeploymentError struct {
	Attempt      jobgraph.ExecutionAttemptID
	TaskExecutor jobgraph.ResourceID
}

func (e *MissingDeploymentError) Error() string {
	return fmt.Sprintf("execution %s is unexpectedly no longer running on TaskExecutor %s", e.Attempt, e.TaskExecutor)
}

func (e *MissingDeploymentError) Is(target error) bool { return target == ErrMissingDeployment }

// ErrMissingDeployment is matched (errors.Is) by the failure of an execution attempt that the
// JobMaster deployed to a TaskExecutor, that the TaskExecutor acknowledged, and that a later
// heartbeat of that TaskExecutor no longer reports (rpc.ExecutionDeploymentReport): a deployment
// that was lost. The attempt fails with it, as if the TaskExecutor had reported it FAILED, and the
// failover strategy restarts what it decides. The message names the attempt and the
// TaskExecutor (*MissingDeploymentError): "execution <attempt> is unexpectedly no longer running
// on TaskExecutor <id>".
// Flink: the FlinkException of JobMaster's ExecutionDeploymentReconciliationHandler.onMissingDeploymentsOf.
var ErrMissingDeployment = errors.New("execution is unexpectedly no longer running on its TaskExecutor")

// ErrTaskNotCanceled is matched by the error the JobMaster logs when a CancelTask call failed
// CancelTaskTries times in a row; the attempt then counts as CANCELED (see deployer.CancelTask).
// Flink: Execution.sendCancelRpcCall's "Task could not be canceled.".
var ErrTaskNotCanceled = errors.New("task could not be canceled")

// CancelTaskTries is how often the JobMaster calls CancelTask for one cancellation before it
// gives up: Flink's Execution.NUM_CANCEL_CALL_TRIES.
const CancelTaskTries = 3

func init() {
	jobgraph.RegisterErrorCode("jobmaster.missing-deployment", ErrMissingDeployment)
	jobgraph.RegisterErrorCode("jobmaster.task-not-canceled", ErrTaskNotCanceled)
}

// deploymentState is Flink's ExecutionDeploymentState.
type deploymentState uint8

const (
	// deploymentPending: SubmitTask was queued or sent and not yet acknowledged. A report
	// without the attempt says nothing: the TaskExecutor may not have it yet.
	deploymentPending deploymentState = iota
	// deploymentDeployed: the TaskExecutor acknowledged the SubmitTask.
	deploymentDeployed
)

type trackedDeployment struct {
	host  jobgraph.ResourceID
	state deploymentState
}

// deploymentTracker is what the JobMaster deployed where: every execution attempt from its
// SubmitTask until it is terminal, by TaskExecutor. Loop-owned. Flink:
// DefaultExecutionDeploymentTracker (fed by ExecutionDeploymentTrackerDeploymentListenerAdapter
// and the execution state listener that stops tracking terminal attempts).
type deploymentTracker struct {
	byAttempt map[jobgraph.ExecutionAttemptID]trackedDeployment
	byHost    map[jobgraph.ResourceID]map[jobgraph.ExecutionAttemptID]struct{}
}

func newDeploymentTracker() *deploymentTracker {
	return &deploymentTracker{
		byAttempt: map[jobgraph.ExecutionAttemptID]trackedDeployment{},
		byHost:    map[jobgraph.ResourceID]map[jobgraph.ExecutionAttemptID]struct{}{},
	}
}

// startPending tracks attempt as deployed to host, not yet acknowledged. Flink:
// startTrackingPendingDeploymentOf.
func (d *deploymentTracker) startPending(attempt jobgraph.ExecutionAttemptID, host jobgraph.ResourceID) {
	d.stop(attempt)
	d.byAttempt[attempt] = trackedDeployment{host: host, state: deploymentPending}
	on := d.byHost[host]
	if on == nil {
		on = map[jobgraph.ExecutionAttemptID]struct{}{}
		d.byHost[host] = on
	}
	on[attempt] = struct{}{}
}

// hostOf returns where attempt was deployed, while it is tracked.
func (d *deploymentTracker) hostOf(attempt jobgraph.ExecutionAttemptID) (jobgraph.ResourceID, bool) {
	t, ok := d.byAttempt[attempt]
	return t.host, ok
}

// complete marks a tracked attempt's SubmitTask acknowledged; an attempt no longer tracked (it
// became terminal meanwhile) stays untracked. Flink: completeDeploymentOf.
func (d *deploymentTracker) complete(attempt jobgraph.ExecutionAttemptID) {
	if t, ok := d.byAttempt[attempt]; ok {
		t.state = deploymentDeployed
		d.byAttempt[attempt] = t
	}
}

// stop forgets attempt. Flink: stopTrackingDeploymentOf.
func (d *deploymentTracker) stop(attempt jobgraph.ExecutionAttemptID) {
	t, ok := d.byAttempt[attempt]
	if !ok {
		return
	}
	delete(d.byAttempt, attempt)
	if on := d.byHost[t.host]; on != nil {
		delete(on, attempt)
		if len(on) == 0 {
			delete(d.byHost, t.host)
		}
	}
}

// stopHost forgets every attempt deployed to host (the TaskExecutor is gone: its slots and
// the attempts in them fail).
func (d *deploymentTracker) stopHost(host jobgraph.ResourceID) {
	for attempt := range d.byHost[host] {
		delete(d.byAttempt, attempt)
	}
	delete(d.byHost, host)
}

// reconcile compares the attempts a TaskExecutor reports with those tracked on it: unknown are
// reported and not tracked; missing are tracked as deployed (acknowledged) and not reported.
// Pending attempts are never missing. Flink: DefaultExecutionDeploymentReconciler.
func (d *deploymentTracker) reconcile(host jobgraph.ResourceID, reported []jobgraph.ExecutionAttemptID) (unknown, missing []jobgraph.ExecutionAttemptID) {
	on := d.byHost[host]
	seen := make(map[jobgraph.ExecutionAttemptID]struct{}, len(reported))
	for _, a := range reported {
		seen[a] = struct{}{}
		if _, ok := on[a]; !ok {
			unknown = append(unknown, a)
		}
	}
	for a := range on {
		if _, ok := seen[a]; !ok && d.byAttempt[a].state == deploymentDeployed {
			missing = append(missing, a)
		}
	}
	return unknown, missing
}

// reconcileDeployments acts on a TaskExecutor's ExecutionDeploymentReport: an attempt it holds
// that the JobMaster does not track (a cancel that was lost, an attempt of an earlier session)
// is canceled there; an attempt the JobMaster deployed there, acknowledged, and not reported is
// failed with ErrMissingDeployment, through the scheduler as a FAILED report, so the failover
// strategy restarts it. Flink: JobMaster's TaskManagerHeartbeatListener.reportPayload with its
// ExecutionDeploymentReconciliationHandler. On the loop.
func (jm *DefaultJobMaster) reconcileDeployments(id jobgraph.ResourceID, report rpc.AllocatedSlotReport) {
	if report.JobID != jm.job || report.ExecutionDeploymentReport == nil || jm.sched == nil {
		return
	}
	unknown, missing := jm.deployments.reconcile(id, report.ExecutionDeploymentReport.Executions)
	// In a fixed order, so that the same events fail the same attempt first.
	byName := func(a, b jobgraph.ExecutionAttemptID) int { return strings.Compare(a.String(), b.String()) }
	slices.SortFunc(unknown, byName)
	slices.SortFunc(missing, byName)
	if te, ok := jm.taskExecutors[id]; ok && len(unknown) > 0 {
		jm.log.Debug("canceling left-over executions on a TaskExecutor", "taskExecutor", id, "executions", len(unknown))
		for _, attempt := range unknown {
			jm.send(func(ctx context.Context) error { return te.CancelTask(ctx, attempt) },
				func(err error) {
					jm.log.Debug("canceling a left-over execution failed", "taskExecutor", id, "execution", attempt, "err", err)
				})
		}
	}
	for _, attempt := range missing {
		jm.deployments.stop(attempt)
		err := &MissingDeploymentError{Attempt: attempt, TaskExecutor: id}
		jm.log.Warn("failing a deployment the TaskExecutor no longer reports", "taskExecutor", id, "execution", attempt)
		jm.sched.UpdateTaskExecutionState(rpc.TaskExecutionState{
			ExecutionAttemptID: attempt,
			State:              jobgraph.ExecutionStateFailed,
			Failure:            rpc.Failure(err),
		})
	}
}
