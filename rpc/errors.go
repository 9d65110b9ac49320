package rpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
)

// ErrClosed is matched (errors.Is) by the closed error of every endpoint — dispatcher.ErrClosed,
// jobmaster.ErrClosed, resourcemanager.ErrClosed, taskexecutor.ErrClosed, minicluster.ErrClosed —
// which its public methods return once it is closed, and by ErrServiceClosed. Each endpoint's
// main loop returns its closed error (internal/mainloop.NewWithClosedError): that is where a
// closed endpoint is mapped to its public error, so nothing internal leaks. The RPC endpoints
// (Dispatcher, JobMaster, ResourceManager, TaskExecutor) return theirs as an UnreachableError
// (see there); the sentinels themselves are none.
var ErrClosed = errors.New("closed")

// ErrServiceClosed is returned (errors.Is) by a closed Service's Register and Lookup.
var ErrServiceClosed = fmt.Errorf("rpc service %w", ErrClosed)

// ErrNoOperatorCoordinator is matched (errors.Is) by the error of an operator event sent to the
// coordinator of a vertex that has none (jobgraph.JobVertex.OperatorCoordinator is empty): from
// taskexecutor.Environment.SendEventToCoordinator and JobMasterGateway.SendOperatorEventToCoordinator.
var ErrNoOperatorCoordinator = errors.New("the vertex has no operator coordinator")

// ErrTaskNotRunning is matched (errors.Is) by the error of an operator event for an execution
// attempt that is not running where it was sent: JobMasterGateway.SendOperatorEventToCoordinator
// for an attempt that is not its subtask's current one (an outdated or unknown attempt, or one
// that ended), TaskExecutorGateway.SendOperatorEventToTask for an attempt the TaskExecutor does
// not run, or whose task ended before it handled the event. Such an event is dropped; nothing
// else fails because of it. Flink: TaskNotRunningException.
var ErrTaskNotRunning = errors.New("execution attempt not running")

// ErrHeartbeatTimeout is matched (errors.Is) by every *HeartbeatTimeoutError, in this process
// and, through the ErrorInfo a gateway message carries, in another.
var ErrHeartbeatTimeout = errors.New("heartbeat timed out")

// HeartbeatTimeoutError is the cause endpoints give when a peer's heartbeat timed out (a
// TaskExecutor's slots failed by its JobMaster, a job's tasks failed by its TaskExecutor, a
// JobMaster disconnected by the ResourceManager). errors.Is(err, ErrHeartbeatTimeout); errors.As
// finds it in the process that timed out (across a boundary only the sentinel and the text travel).
// Options heartbeat.interval and heartbeat.timeout. Flink: TimeoutException("Heartbeat of
// TaskManager with id … timed out.").
type HeartbeatTimeoutError struct {
	// Target names the silent peer, e.g. "TaskExecutor taskexecutor-1".
	Target string
	// Timeout is the heartbeat.timeout that passed without a heartbeat.
	Timeout time.Duration
}

func (e *HeartbeatTimeoutError) Error() string {
	return fmt.Sprintf("heartbeat of %s timed out after %v", e.Target, e.Timeout)
}

// Is reports whether target is ErrHeartbeatTimeout.
func (e *HeartbeatTimeoutError) Is(target error) bool { return target == ErrHeartbeatTimeout }

// ErrHeartbeatTargetUnreachable is matched (errors.Is) by every *HeartbeatTargetUnreachableError,
// in this process and, through the ErrorInfo a gateway message carries, in another.
var ErrHeartbeatTargetUnreachable = errors.New("heartbeat target unreachable")

// HeartbeatTargetUnreachableError is the cause endpoints give when a peer was dropped because
// heartbeat.rpc-failure-threshold consecutive heartbeat RPCs to it failed as unreachable (see
// UnreachableError) before its heartbeat.timeout ran out: a killed TaskExecutor's slots failed
// by its JobMaster, say. It is handled as a heartbeat timeout is, and does not match
// ErrHeartbeatTimeout. errors.Is(err, ErrHeartbeatTargetUnreachable); errors.As finds it in the
// process that dropped the peer (and over transport/grpc, which carries its fields). Flink:
// HeartbeatListener.notifyTargetUnreachable ("TaskManager with id … is no longer reachable.").
type HeartbeatTargetUnreachableError struct {
	// Target names the peer, e.g. "TaskExecutor taskexecutor-1".
	Target string `json:"target"`
	// Failures is how many heartbeat RPCs in a row failed (the threshold).
	Failures int `json:"failures"`
	// LastFailure is the text of the last of them.
	LastFailure string `json:"lastFailure,omitempty"`
}

func (e *HeartbeatTargetUnreachableError) Error() string {
	if e.Failures == 1 { // heartbeat.rpc-failure-threshold 1
		msg := e.Target + " is no longer reachable: its heartbeat RPC failed"
		if e.LastFailure != "" {
			msg += " with: " + e.LastFailure
		}
		return msg
	}
	msg := fmt.Sprintf("%s is no longer reachable: %d consecutive heartbeat RPCs failed", e.Target, e.Failures)
	if e.LastFailure != "" {
		msg += ", the last with: " + e.LastFailure
	}
	return msg
}

// Is reports whether target is ErrHeartbeatTargetUnreachable.
func (e *HeartbeatTargetUnreachableError) Is(target error) bool {
	return target == ErrHeartbeatTargetUnreachable
}

// UnreachableError is implemented by the error of a call whose recipient could not be reached at
// all — it is gone: a killed TaskExecutor, a process that no longer listens — as opposed to one
// that answered with an error, or did not answer in time. errors.As finds it in a call's error
// and Unreachable reports true. Heartbeat senders count such failures toward
// heartbeat.rpc-failure-threshold (IsUnreachable). Every closed RPC endpoint answers with one:
// a killed or closed TaskExecutor, and a closed (or dead: its main loop panicked) JobMaster,
// ResourceManager or Dispatcher, whose errors still match their package's ErrClosed (and
// ErrClosed here), as a call to an endpoint that is no longer registered fails with
// ErrUnknownAddress in one; in-process and over transport/grpc alike, a closed endpoint is gone.
// So do a Service for an address nothing is registered under (ErrUnknownAddress) and
// transport/grpc (a peer that answers with codes.Unavailable, or not at all because the
// connection cannot be made); all are made with Unreachable, and a host's transport should make
// its own so.
// Flink: RecipientUnreachableException (an RPC to a stopped RpcEndpoint, whose actor is gone).
type UnreachableError interface {
	error
	Unreachable() bool
}

// Unreachable returns err marked as the error of a call whose recipient could not be reached: an
// UnreachableError whose Unreachable reports true, with err's text, wrapping err (errors.Is and
// errors.As see through it). An endpoint or a transport marks its own errors with it (a killed
// TaskExecutor's, a gRPC peer that does not answer). Nil for nil.
func Unreachable(err error) error {
	if err == nil {
		return nil
	}
	return &unreachableError{err}
}

type unreachableError struct{ err error }

func (e *unreachableError) Error() string   { return e.err.Error() }
func (e *unreachableError) Unwrap() error   { return e.err }
func (*unreachableError) Unreachable() bool { return true }

// IsUnreachable reports whether err is the error of a call whose recipient could not be reached:
// the first UnreachableError in its tree (errors.As) reports Unreachable true, and err is not a
// timeout — neither context.DeadlineExceeded nor an error with a Timeout() bool method answering
// true — since a recipient that is slow to answer is not gone. False for nil.
func IsUnreachable(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if t, ok := errors.AsType[interface {
		error
		Timeout() bool
	}](err); ok && t.Timeout() {
		return false
	}
	u, ok := errors.AsType[UnreachableError](err)
	return ok && u.Unreachable()
}

func init() {
	jobgraph.RegisterErrorCode("rpc.fencing-token-mismatch", ErrFencingTokenMismatch)
	jobgraph.RegisterErrorCode("rpc.unknown-address", ErrUnknownAddress)
	jobgraph.RegisterErrorCode("rpc.closed", ErrClosed)
	jobgraph.RegisterErrorCode("rpc.service-closed", ErrServiceClosed)
	jobgraph.RegisterErrorCode("heartbeat.timeout", ErrHeartbeatTimeout)
	jobgraph.RegisterErrorCode("heartbeat.target-unreachable", ErrHeartbeatTargetUnreachable)
	jobgraph.RegisterErrorCode("rpc.no-operator-coordinator", ErrNoOperatorCoordinator)
	jobgraph.RegisterErrorCode("rpc.task-not-running", ErrTaskNotRunning)
}

// Failure converts err into the plain data gateway messages carry: its text and the codes of the
// registered sentinels it matches (jobgraph.NewErrorInfo with a zero timestamp); nil for nil.
// The receiver gets the error back with ErrorInfo.Err.
func Failure(err error) *jobgraph.ErrorInfo { return jobgraph.NewErrorInfo(err, time.Time{}) }
