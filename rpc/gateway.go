// Package rpc is jobgraph's transport plug point: the gateways the endpoints call each other
// through, the plain-data messages they exchange, and a Service that resolves an address to a
// gateway. The in-process Service (NewLocalService) hands out the endpoints themselves; a host
// program can carry the same calls over any RPC by implementing Service and the gateways.
//
// Every gateway method takes a context; it returns ctx's error if the context ends first, and
// ErrFencingTokenMismatch (errors.Is) when a fenced call carries a stale token: a call of an
// earlier leadership session changes nothing. Methods are safe for concurrent use.
//
// Messages are plain data: failures travel as *jobgraph.ErrorInfo (see Failure), never as error
// values, so a host's transport can serialize every argument; on the far side ErrorInfo.Err
// matches the library's sentinel errors with errors.Is. Flink: org.apache.flink.runtime.rpc.RpcGateway
// and its subinterfaces.
package rpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// ErrFencingTokenMismatch is returned by fenced calls whose token is not the endpoint's current
// one (a JobMasterID of an earlier leadership session, say). Flink: FencingTokenException.
var ErrFencingTokenMismatch = errors.New("fencing token mismatch")

// ErrUnknownAddress is returned by Service.Lookup and Connect for an address nothing is
// registered under (and by a transport's calls to an endpoint unregistered since), in an error
// that is an UnreachableError (IsUnreachable): nobody answers there, so heartbeats count it toward
// heartbeat.rpc-failure-threshold, as Flink's do an RPC to a stopped endpoint, whose terminated
// actor makes it a RecipientUnreachableException. The sentinel alone, in an endpoint's answer or
// an ErrorInfo, is no such error.
var ErrUnknownAddress = errors.New("rpc: no endpoint at address")

// FencingError wraps ErrFencingTokenMismatch with the tokens involved.
type FencingError struct {
	Endpoint string
	Expected string
	Got      string
}

func (e *FencingError) Error() string {
	return fmt.Sprintf("%s: fencing token mismatch: expected %s, got %s", e.Endpoint, e.Expected, e.Got)
}

func (e *FencingError) Is(target error) bool { return target == ErrFencingTokenMismatch }

// DispatcherGateway is the Dispatcher's public face. Flink: DispatcherGateway.
type DispatcherGateway interface {
	// SubmitJob validates, persists and starts the job. Errors: *jobgraph.ValidationError,
	// a duplicate-submission error, or a persistence failure; nothing is kept on error.
	SubmitJob(ctx context.Context, g *jobgraph.JobGraph) error
	// CancelJob cancels a running job; a no-op for a CANCELED one; an error for another
	// terminated job, and a job-not-found error for an unknown JobID.
	CancelJob(ctx context.Context, id jobgraph.JobID) error
	// RequestJobStatus returns the job's current status, or a job-not-found error.
	RequestJobStatus(ctx context.Context, id jobgraph.JobID) (jobgraph.JobStatus, error)
	// RequestJobResult waits until the job ends (or ctx does) and returns its result.
	RequestJobResult(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error)
	// ListJobs lists running and archived jobs.
	ListJobs(ctx context.Context) ([]JobStatusMessage, error)
	// TriggerSavepoint takes a savepoint of the running job under targetDirectory ("" means
	// execution.checkpointing.savepoint-dir) and returns its path once it completed; the job keeps running.
	// Errors: a job-not-found error for an unknown JobID, a job-not-running error for a job
	// that is not RUNNING (or ended), why the savepoint failed (an expired one is a timeout:
	// Timeout() true), ctx's error (the savepoint carries on). Flink:
	// RestfulGateway.triggerSavepointAndGetLocation.
	TriggerSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (path string, err error)
	// StopWithSavepoint takes the job's synchronous savepoint and returns its path once the job
	// is FINISHED. If the savepoint fails the job keeps running and the error says why; other
	// errors as TriggerSavepoint's. Flink: RestfulGateway.stopWithSavepointAndGetLocation.
	StopWithSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (path string, err error)
	// TriggerCheckpoint takes a checkpoint of the running job now and returns its ID once it
	// completed; errors as TriggerSavepoint's. Flink: RestfulGateway.triggerCheckpoint.
	TriggerCheckpoint(ctx context.Context, id jobgraph.JobID) (checkpoint.CheckpointID, error)
}

// JobMasterGateway is how TaskExecutors and the ResourceManager reach a JobMaster. Calls fenced by
// JobMasterID fail with ErrFencingTokenMismatch for a stale token. Flink: JobMasterGateway.
type JobMasterGateway interface {
	// UpdateTaskExecutionState reports an execution's new state; it returns false when the
	// JobMaster does not know the attempt (an old or unknown one), true when it was applied.
	UpdateTaskExecutionState(ctx context.Context, token jobgraph.JobMasterID, state TaskExecutionState) (bool, error)
	// RegisterTaskExecutor connects a TaskExecutor to this job before it offers slots.
	RegisterTaskExecutor(ctx context.Context, token jobgraph.JobMasterID, registration TaskExecutorRegistration) error
	// OfferSlots offers slots of a registered TaskExecutor; it returns those accepted.
	OfferSlots(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, offers []SlotOffer) ([]SlotOffer, error)
	// FailSlot tells the JobMaster that a slot it holds is gone (its tasks fail).
	FailSlot(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, allocation jobgraph.AllocationID, cause *jobgraph.ErrorInfo) error
	// DisconnectTaskExecutor drops a TaskExecutor: its slots fail, and so do its tasks.
	DisconnectTaskExecutor(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error
	// DisconnectResourceManager tells the JobMaster its ResourceManager went away. Fenced twice:
	// by token, and by rm, the ResourceManagerID the JobMaster registered with (RegisterJobMaster's
	// answer); a disconnect from an earlier ResourceManager fails with ErrFencingTokenMismatch.
	DisconnectResourceManager(ctx context.Context, token jobgraph.JobMasterID, rm jobgraph.ResourceManagerID, cause *jobgraph.ErrorInfo) error
	// HeartbeatFromTaskExecutor and HeartbeatFromResourceManager carry heartbeats to the JobMaster.
	HeartbeatFromTaskExecutor(ctx context.Context, taskExecutor jobgraph.ResourceID, report AllocatedSlotReport) error
	HeartbeatFromResourceManager(ctx context.Context, rm jobgraph.ResourceID) error
	// AcknowledgeCheckpoint delivers a task's acknowledgement of a checkpoint, with its state,
	// fenced by token. The JobMaster hands it to its CheckpointCoordinator on its loop; an ack
	// of an outdated attempt, an unknown checkpoint or a duplicate changes nothing and is not an
	// error of the call (Flink logs and drops it). Errors: ErrFencingTokenMismatch, ctx's error,
	// ErrClosed once the JobMaster is closed. Flink: CheckpointCoordinatorGateway.acknowledgeCheckpoint.
	AcknowledgeCheckpoint(ctx context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, ack checkpoint.AcknowledgeCheckpoint) error
	// DeclineCheckpoint delivers a task's refusal to take a checkpoint; the same rules as
	// AcknowledgeCheckpoint. Flink: CheckpointCoordinatorGateway.declineCheckpoint.
	DeclineCheckpoint(ctx context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, decline checkpoint.DeclineCheckpoint) error
	// SendOperatorEventToCoordinator delivers event, which attempt of a task sent to its
	// vertex's operator coordinator (taskexecutor.Environment.SendEventToCoordinator), fenced
	// by token. The JobMaster hands it to the coordinator on its loop, in the order the calls
	// arrive, only if attempt is its subtask's current attempt and has not ended; it returns
	// once the coordinator took it (HandleEventFromOperator returned; a coordinator's error
	// fails the job globally, not the call). Errors: ErrFencingTokenMismatch (another session),
	// an error wrapping ErrTaskNotRunning for an event of an outdated, unknown or ended attempt
	// (dropped: the sender's task goes on), an error wrapping ErrNoOperatorCoordinator when the
	// attempt's vertex has no coordinator, ctx's error, ErrClosed once the JobMaster is closed.
	// event is the caller's: the JobMaster neither keeps nor changes it after the call returned.
	// A TaskExecutor sends the events of one attempt one call after another, so they arrive in
	// order. Flink: JobMasterOperatorEventGateway.sendOperatorEventToCoordinator.
	SendOperatorEventToCoordinator(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, event []byte) error
}

// TaskExecutionStateNotifier is what a JobMasterGateway implements when it can take a task's
// state without its caller waiting for the answer; the in-process jobmaster.DefaultJobMaster
// does, and a TaskExecutor reports its tasks' states through it when its JobMaster's gateway has
// it (over the in-process LocalService the gateway is the JobMaster itself), through
// UpdateTaskExecutionState otherwise (a transport's proxy). NotifyTaskExecutionState queues the
// state as UpdateTaskExecutionState would deliver it — fenced by token, applied in the order of
// the calls, before every call the gateway takes after it returned — and returns at once: a
// state counts as delivered once it returned (see ExecutionDeploymentReport). done, if not nil,
// is called once with the error UpdateTaskExecutionState would have returned (nil, a
// *FencingError, the JobMaster's closed error), on the JobMaster's main loop, or on the
// caller's goroutine before the call returns when the JobMaster no longer takes any; it must
// not block. The conformance suite jobmaster/jmtest checks an implementation (TestJobMaster).
// Flink: JobMasterGateway.updateTaskExecutionState returns a future, which the TaskExecutor's
// reporting does not wait for.
type TaskExecutionStateNotifier interface {
	NotifyTaskExecutionState(token jobgraph.JobMasterID, state TaskExecutionState, done func(err error))
}

// ResourceManagerGateway is how TaskExecutors and JobMasters reach the ResourceManager. Both
// registrations answer the ResourceManager's fencing token, its ResourceManagerID (under leader
// election: the leader session); every other call carries it as rm, the token the caller's
// registration was answered with, and one whose rm is not the ResourceManager's current
// ResourceManagerID (a call of a registration with an earlier leader session) fails with
// ErrFencingTokenMismatch and changes nothing. Flink: ResourceManagerGateway, a
// FencedRpcGateway<ResourceManagerId> whose calls carry the token implicitly.
type ResourceManagerGateway interface {
	// RegisterTaskExecutor registers a TaskExecutor and its slots; it returns the
	// ResourceManager's fencing token.
	RegisterTaskExecutor(ctx context.Context, registration TaskExecutorRegistration) (jobgraph.ResourceManagerID, error)
	// SendSlotReport replaces what the ResourceManager knows of a TaskExecutor's slots.
	SendSlotReport(ctx context.Context, rm jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, report SlotReport) error
	// NotifySlotAvailable tells the ResourceManager that a slot was freed.
	NotifySlotAvailable(ctx context.Context, rm jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, slot SlotID, allocation jobgraph.AllocationID) error
	// DisconnectTaskExecutor drops a TaskExecutor and its slots.
	DisconnectTaskExecutor(ctx context.Context, rm jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error
	// RegisterJobMaster connects a job's JobMaster (at address, fenced by token) and returns the
	// ResourceManager's fencing token, which the JobMaster checks DisconnectResourceManager
	// against. Flink: JobMasterRegistrationSuccess carries the ResourceManagerId.
	RegisterJobMaster(ctx context.Context, token jobgraph.JobMasterID, jobMaster jobgraph.ResourceID, address string, job jobgraph.JobID) (jobgraph.ResourceManagerID, error)
	// DeclareRequiredResources replaces the job's declared requirements.
	DeclareRequiredResources(ctx context.Context, rm jobgraph.ResourceManagerID, token jobgraph.JobMasterID, requirements ResourceRequirements) error
	// DisconnectJobMaster drops the job's JobMaster; its requirements are cleared. Fenced by the
	// JobMasterID the job's JobMaster registered with: the disconnect of an earlier session fails
	// with ErrFencingTokenMismatch and leaves the current one registered.
	DisconnectJobMaster(ctx context.Context, rm jobgraph.ResourceManagerID, token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo) error
	// HeartbeatFromTaskExecutor and HeartbeatFromJobMaster carry heartbeats.
	HeartbeatFromTaskExecutor(ctx context.Context, rm jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, report SlotReport) error
	HeartbeatFromJobMaster(ctx context.Context, rm jobgraph.ResourceManagerID, jobMaster jobgraph.ResourceID) error
}

// ResourceManagerNotifier is what a ResourceManagerGateway implements when it can take a
// JobMaster's declarations and its disconnect without the caller waiting for the answer; the
// in-process resourcemanager.ResourceManager does, and a JobMaster sends both through it when its
// ResourceManager's gateway has it (over the in-process LocalService the gateway is the
// ResourceManager itself), through DeclareRequiredResources and DisconnectJobMaster otherwise.
// Each queues the call as its gateway method would make it — fenced, in the order of the calls,
// before every call the gateway takes after it returned — and returns at once; done, if not
// nil, is called once with the error the gateway method would have returned, on the
// ResourceManager's main loop, or on the caller's goroutine before the call returns when the
// ResourceManager no longer takes any; it must not block. The conformance suite
// resourcemanager/rmtest checks an implementation (TestResourceManager). Flink: a JobMaster's
// declareRequiredResources and disconnectJobManager return futures it does not wait for.
type ResourceManagerNotifier interface {
	NotifyRequiredResources(rm jobgraph.ResourceManagerID, token jobgraph.JobMasterID, requirements ResourceRequirements, done func(err error))
	NotifyJobMasterDisconnected(rm jobgraph.ResourceManagerID, token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo, done func(err error))
}

// TaskExecutorGateway is how the ResourceManager and JobMasters reach a TaskExecutor. An
// implementation should pass the conformance suite taskexecutor/tetest (TestTaskExecutor).
// Flink: TaskExecutorGateway.
type TaskExecutorGateway interface {
	// RequestSlot allocates slot for job under allocation and offers it to the JobMaster at
	// jobMasterAddress, whose current fencing token is jobMaster. Fails if the slot is allocated
	// to another allocation. Fenced by rm: once the TaskExecutor is registered, a request carrying
	// another ResourceManagerID than the one its registration returned fails with
	// ErrFencingTokenMismatch and allocates nothing. (Flink's TaskExecutor learns the JobMaster's
	// token through its JobLeaderService; here the ResourceManager, which knows it from
	// RegisterJobMaster, passes it.)
	RequestSlot(ctx context.Context, slot SlotID, job jobgraph.JobID, allocation jobgraph.AllocationID, profile jobgraph.ResourceProfile, jobMasterAddress string, jobMaster jobgraph.JobMasterID, rm jobgraph.ResourceManagerID) error
	// SubmitTask starts an execution in the slot named by the descriptor. Fenced by the
	// JobMasterID the slot was offered to: a stale one fails with ErrFencingTokenMismatch.
	SubmitTask(ctx context.Context, token jobgraph.JobMasterID, tdd TaskDeploymentDescriptor) error
	// SubmitTasks submits several descriptors in one call, in order, each as SubmitTask would:
	// what a JobMaster deploys to one TaskExecutor in one go. errs is nil when every one
	// started, else errs[i] is what SubmitTask(tdds[i]) would have returned (nil for those that
	// started); err is a failure of the whole call (the TaskExecutor closed, ctx ended, the
	// transport failed), after which the caller cannot tell which started. Flink sends one
	// submitTask RPC per task; batching them is ours.
	SubmitTasks(ctx context.Context, token jobgraph.JobMasterID, tdds []TaskDeploymentDescriptor) (errs []error, err error)
	// CancelTask cancels a running execution; CANCELED is reported once it has returned.
	CancelTask(ctx context.Context, attempt jobgraph.ExecutionAttemptID) error
	// FreeSlot frees an allocated slot (canceling what runs in it) and tells the ResourceManager
	// once it is free; an unknown allocation is not an error (the slot is free already).
	FreeSlot(ctx context.Context, allocation jobgraph.AllocationID, cause *jobgraph.ErrorInfo) error
	// ReleasePartitions drops the job's partitions named.
	ReleasePartitions(ctx context.Context, job jobgraph.JobID, partitions []ResultPartitionID) error
	// DisconnectJobMaster drops the job's JobMaster: its slots are freed, its tasks fail. Fenced
	// by the JobMasterID the job's slots were requested for: the disconnect of an earlier session
	// fails with ErrFencingTokenMismatch and leaves the current one's slots and tasks alone.
	DisconnectJobMaster(ctx context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo) error
	// HeartbeatFromJobMaster and HeartbeatFromResourceManager carry heartbeats.
	HeartbeatFromJobMaster(ctx context.Context, jobMaster jobgraph.ResourceID) error
	HeartbeatFromResourceManager(ctx context.Context, rm jobgraph.ResourceID) error
	// TriggerCheckpoint starts checkpoint id at a source task (a task the checkpoint's plan
	// triggers; the others get barriers through their inputs), fenced by token, the job's current
	// JobMasterID. It returns once the trigger is queued for the task; the outcome comes back as
	// JobMasterGateway.AcknowledgeCheckpoint or DeclineCheckpoint. An attempt the TaskExecutor
	// does not run answers with a DeclineCheckpoint (CheckpointDeclinedTaskNotReady), not an
	// error. Errors: ErrFencingTokenMismatch (another JobMaster session), ctx's error, ErrClosed.
	// Flink: TaskExecutorGateway.triggerCheckpoint.
	TriggerCheckpoint(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, timestamp time.Time, props checkpoint.CheckpointProperties) error
	// ConfirmCheckpoint tells a task that checkpoint id completed (its side effects may be
	// committed: the two-phase-commit sink's notify-checkpoint-complete). Unknown attempts are
	// ignored. Errors as TriggerCheckpoint. Flink: TaskExecutorGateway.confirmCheckpoint.
	ConfirmCheckpoint(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, timestamp time.Time) error
	// AbortCheckpoint tells a task that checkpoint id was aborted. Unknown attempts are ignored.
	// Errors as TriggerCheckpoint. Flink: TaskExecutorGateway.abortCheckpoint.
	AbortCheckpoint(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, timestamp time.Time) error
	// SendOperatorEventToTask delivers event, from the vertex's operator coordinator, to the
	// running task of attempt, fenced by token, the JobMasterID the attempt's slot was offered
	// to. It returns once the task handled it: nil when its OperatorEventHandler returned nil,
	// else that handler's error (which also fails the task). The task runs its handler on its
	// own goroutine, inside its next read, write or Yield (or while a read or Yield waits), in
	// the order the calls reached the TaskExecutor and in order with the TriggerCheckpoint,
	// ConfirmCheckpoint and AbortCheckpoint calls to the attempt: a caller that makes its calls
	// to one TaskExecutor one after another (as the JobMaster does) has them run in that order.
	// An event that reaches a task before it set its handler is kept, in order, until it does.
	// Errors: ErrFencingTokenMismatch (another session) with nothing delivered; an error
	// wrapping ErrTaskNotRunning when the attempt does not run there, or when its task ended
	// before it handled the event; the handler's error; ctx's error (the event may still be
	// handled); ErrClosed once the TaskExecutor is closed. event is the caller's: the
	// TaskExecutor copies it. Flink: TaskExecutorOperatorEventGateway.sendOperatorEventToTask,
	// whose answer comes once the event is handed to the operator; ours waits for the handler
	// too, so a nil answer means the task took it.
	SendOperatorEventToTask(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, event []byte) error
}

// TaskExecutorNotifier is what a TaskExecutorGateway implements when it can take the calls
// whose answer its callers only hand back to their own loop without the caller waiting for it;
// the in-process taskexecutor.TaskExecutor does, and the ResourceManager (RequestSlot) and the
// JobMaster (FreeSlot, DisconnectJobMaster) use it when the gateway they resolved has it (over
// the in-process LocalService it is the TaskExecutor itself), the gateway methods otherwise.
// Each queues the call as its gateway method would make it — refused at once as that one
// refuses it (a killed TaskExecutor's unreachable error), fenced on the TaskExecutor's loop, in
// the order of the calls, before every call the gateway takes after it returned — and returns
// at once, never waiting, so a main loop may call it; done, if not nil, is called once with the
// error the gateway method would have returned, on the TaskExecutor's main loop, or on the
// caller's goroutine before the call returns when the TaskExecutor takes none; it must not
// block. The conformance suite taskexecutor/tetest checks an implementation (its
// TaskExecutorNotifier/… cases). Flink: requestSlot, freeSlot and disconnectJobManager return
// futures.
type TaskExecutorNotifier interface {
	NotifyRequestSlot(slot SlotID, job jobgraph.JobID, allocation jobgraph.AllocationID, profile jobgraph.ResourceProfile, jobMasterAddress string, jobMaster jobgraph.JobMasterID, rm jobgraph.ResourceManagerID, done func(err error))
	NotifyFreeSlot(allocation jobgraph.AllocationID, cause *jobgraph.ErrorInfo, done func(err error))
	NotifyDisconnectJobMaster(token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo, done func(err error))
}

// ResourceManagerDisconnector is what a TaskExecutorGateway implements when its TaskExecutor can
// be told that the ResourceManager dropped it; the in-process taskexecutor.TaskExecutor does, and
// so does transport/grpc's client proxy, whose server forwards the call to a TaskExecutor that
// implements it. The ResourceManager calls it, best-effort, once it has unregistered a
// TaskExecutor whose heartbeat timed out (cause: the *HeartbeatTimeoutError, as an ErrorInfo
// whose Err matches ErrHeartbeatTimeout) or whose heartbeat requests found it unreachable
// heartbeat.rpc-failure-threshold times in a row (the *HeartbeatTargetUnreachableError,
// matching ErrHeartbeatTargetUnreachable): off its main loop, on a goroutine of its own,
// bounded by its request timeout (none over the LocalService); an error is only logged, at
// debug. It does not call it when it loses leadership
// or stops (neither does Flink's clearStateInternal): the TaskExecutors learn that from their
// leader retrieval. A gateway without it is not told, and its TaskExecutor finds out by its own
// heartbeat timeout for the ResourceManager (no heartbeat request for heartbeat.timeout), then
// registers again: up to heartbeat.timeout after the ResourceManager dropped it (its timeout
// counts from the last request it got, which may be just before the drop).
//
// DisconnectResourceManager is fenced by rm, the ResourceManagerID of the ResourceManager that
// dropped the TaskExecutor: when it is the one the TaskExecutor's current registration was
// answered with, the TaskExecutor registers with that ResourceManager again at once (with its
// full slot report, so the slots it holds are known again) and returns nil; otherwise (an
// earlier ResourceManager's disconnect, or none registered: a registration under way) it changes
// nothing and fails with ErrFencingTokenMismatch (a *FencingError). cause says why; it may be
// nil. Errors also:
// ctx's (the disconnect may have been taken all the same: the TaskExecutor may register again),
// the TaskExecutor's closed or killed error (unreachable). Safe on any goroutine; it
// returns once the TaskExecutor has taken the disconnect, not when the registration completed.
// The conformance suite taskexecutor/tetest checks an implementation (its
// ResourceManagerDisconnector/… case). Flink: TaskExecutorGateway.disconnectResourceManager,
// which ResourceManager.closeTaskManagerConnection calls and whose TaskExecutor reconnects
// (reconnectToResourceManager) whenever it runs. Where we differ: Flink's call carries no
// ResourceManagerID and its TaskExecutor reconnects on any disconnect; ours ignores a stale
// ResourceManager's, as every other ResourceManager-fenced call here does.
type ResourceManagerDisconnector interface {
	DisconnectResourceManager(ctx context.Context, rm jobgraph.ResourceManagerID, cause *jobgraph.ErrorInfo) error
}
