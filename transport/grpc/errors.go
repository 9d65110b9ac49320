package grpctransport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/slotpool"
	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/jobgraph/jobgraph/transport/grpc/internal/pb"
)

func init() {
	jobgraph.RegisterErrorCode("grpctransport.message-too-large", ErrMessageTooLarge)
}

// How an endpoint's error crosses: the serving side sends a gRPC status whose detail is an
// ErrorDetail holding
//
//   - the error as jobgraph.ErrorInfo (rpc.Failure: its text and the codes of every registered
//     sentinel it matches — the one mapping of sentinels to codes the library has, see
//     jobgraph.RegisterErrorCode), so errors.Is on the caller's side matches the same
//     sentinels (rpc.ErrFencingTokenMismatch, rpc.ErrClosed, dispatcher.ErrJobNotFound, …);
//   - the typed errors of its chain that this package knows (typedErrors below) with their
//     fields as JSON, so errors.As finds *rpc.FencingError, *jobgraph.ValidationError, … there;
//   - whether it matched context.Canceled or context.DeadlineExceeded (not registered codes),
//     and whether it is a timeout (an error with a Timeout() bool method answering true, as
//     an expired savepoint's is);
//   - whether it is the error of a recipient that could not be reached (rpc.IsUnreachable: a
//     killed TaskExecutor's), as the typed error "rpc.UnreachableError", so the caller's
//     rpc.IsUnreachable answers the same.
//
// A call that gets no answer because the peer cannot be reached — gRPC's codes.Unavailable
// without an ErrorDetail: nothing listens at the address, the connection broke, the peer is
// shutting down — fails with an error that is an rpc.UnreachableError, so heartbeat senders count
// it toward heartbeat.rpc-failure-threshold. A call that ran out of time is a timeout, never
// unreachable.
//
// The status code is only a summary for other gRPC tooling (FailedPrecondition for a fencing
// mismatch, NotFound for an unknown address, Unavailable for a closed endpoint or one whose
// recipient is gone (rpc.IsUnreachable), Canceled and
// DeadlineExceeded, InvalidArgument for an invalid job graph, Unknown otherwise); the caller
// rebuilds the error from the detail alone.

// typedError is one error type that crosses with its fields: find takes it from a chain,
// make rebuilds it from the JSON of what find returned.
type typedError struct {
	kind string
	find func(err error) (any, bool)
	make func(data []byte) (error, error)
}

// plain is a typedError for an error type whose fields are plain data (JSON round-trips them).
func plain[T any, PT interface {
	*T
	error
}](kind string) typedError {
	return typedError{
		kind: kind,
		find: func(err error) (any, bool) {
			var e PT
			if errors.As(err, &e) && e != nil {
				return e, true
			}
			return nil, false
		},
		make: func(data []byte) (error, error) {
			e := PT(new(T))
			if err := json.Unmarshal(data, e); err != nil {
				return nil, err
			}
			return e, nil
		},
	}
}

// checkpointErrorJSON is a *checkpoint.CheckpointError on the wire: its cause as ErrorInfo.
type checkpointErrorJSON struct {
	Reason       checkpoint.CheckpointFailureReason `json:"reason"`
	CheckpointID checkpoint.CheckpointID            `json:"checkpointId"`
	Cause        *jobgraph.ErrorInfo                `json:"cause,omitempty"`
}

// partitionErrorJSON is a *taskexecutor.PartitionError on the wire.
type partitionErrorJSON struct {
	Partition rpc.ResultPartitionID `json:"partition"`
	Reason    *jobgraph.ErrorInfo   `json:"reason,omitempty"`
	Cause     *jobgraph.ErrorInfo   `json:"cause,omitempty"`
}

// RegisterErrorType makes errors of type *T cross a call with their fields: when an endpoint's
// error chain holds a *T (errors.As), it travels as JSON (encoding/json of *T) under kind, and on
// the calling side errors.As finds a *T decoded from it. Both sides must register the same kind
// for the same type, which they do by running the same registering code (a package's init, as
// for jobgraph.RegisterErrorCode). T's fields must survive encoding/json (no error or interface
// fields: an error field would arrive nil). The library's own types are registered already:
// *rpc.FencingError, *rpc.HeartbeatTimeoutError, *rpc.HeartbeatTargetUnreachableError,
// *jobgraph.ValidationError, *jobgraph.AccumulatorTypeError, *slotpool.NoResourceAvailableError,
// *jobmaster.MissingDeploymentError, *taskexecutor.UnknownInvokableError,
// *taskexecutor.TaskCancellationTimeoutError, *dispatcher.DuplicateJobSubmissionError, and
// (their error fields crossing as text and sentinels) *checkpoint.CheckpointError and
// *taskexecutor.PartitionError. It panics on an empty kind or one registered already: a
// programming error, found when the program starts. Safe for concurrent use.
func RegisterErrorType[T any, PT interface {
	*T
	error
}](kind string) {
	if kind == "" {
		panic("grpctransport.RegisterErrorType: empty kind")
	}
	typedErrorsMu.Lock()
	defer typedErrorsMu.Unlock()
	for _, te := range typedErrors {
		if te.kind == kind {
			panic(fmt.Sprintf("grpctransport.RegisterErrorType(%q): the kind is registered already", kind))
		}
	}
	typedErrors = append(typedErrors, plain[T, PT](kind))
}

// typedErrorsMu guards typedErrors, which RegisterErrorType extends.
var typedErrorsMu sync.RWMutex

// registeredErrorTypes returns the typed errors registered now.
func registeredErrorTypes() []typedError {
	typedErrorsMu.RLock()
	defer typedErrorsMu.RUnlock()
	return typedErrors
}

// typedErrors are the error types that cross with their fields: the library's, then those
// registered with RegisterErrorType. A cause held in an error field crosses as ErrorInfo (text
// and sentinels, not its own type).
var typedErrors = []typedError{
	plain[rpc.FencingError]("rpc.FencingError"),
	plain[rpc.HeartbeatTimeoutError]("rpc.HeartbeatTimeoutError"),
	plain[rpc.HeartbeatTargetUnreachableError]("rpc.HeartbeatTargetUnreachableError"),
	{
		// Not a type but a behaviour: the caller's error is unreachable when the endpoint's was.
		kind: "rpc.UnreachableError",
		find: func(err error) (any, bool) { return struct{}{}, rpc.IsUnreachable(err) },
		make: func([]byte) (error, error) {
			return rpc.Unreachable(errors.New("grpctransport: the endpoint's recipient is unreachable")), nil
		},
	},
	plain[jobgraph.ValidationError]("jobgraph.ValidationError"),
	plain[jobgraph.AccumulatorTypeError]("jobgraph.AccumulatorTypeError"),
	plain[slotpool.NoResourceAvailableError]("slotpool.NoResourceAvailableError"),
	plain[jobmaster.MissingDeploymentError]("jobmaster.MissingDeploymentError"),
	plain[taskexecutor.UnknownInvokableError]("taskexecutor.UnknownInvokableError"),
	plain[taskexecutor.TaskCancellationTimeoutError]("taskexecutor.TaskCancellationTimeoutError"),
	plain[dispatcher.DuplicateJobSubmissionError]("dispatcher.DuplicateJobSubmissionError"),
	{
		kind: "checkpoint.CheckpointError",
		find: func(err error) (any, bool) {
			var e *checkpoint.CheckpointError
			if !errors.As(err, &e) || e == nil {
				return nil, false
			}
			return checkpointErrorJSON{Reason: e.Reason, CheckpointID: e.CheckpointID, Cause: rpc.Failure(e.Cause)}, true
		},
		make: func(data []byte) (error, error) {
			var w checkpointErrorJSON
			if err := json.Unmarshal(data, &w); err != nil {
				return nil, err
			}
			return &checkpoint.CheckpointError{Reason: w.Reason, CheckpointID: w.CheckpointID, Cause: w.Cause.Err()}, nil
		},
	},
	{
		kind: "taskexecutor.PartitionError",
		find: func(err error) (any, bool) {
			var e *taskexecutor.PartitionError
			if !errors.As(err, &e) || e == nil {
				return nil, false
			}
			return partitionErrorJSON{Partition: e.Partition, Reason: rpc.Failure(e.Reason), Cause: rpc.Failure(e.Cause)}, true
		},
		make: func(data []byte) (error, error) {
			var w partitionErrorJSON
			if err := json.Unmarshal(data, &w); err != nil {
				return nil, err
			}
			return &taskexecutor.PartitionError{Partition: w.Partition, Reason: w.Reason.Err(), Cause: w.Cause.Err()}, nil
		},
	},
}

// errorDetail encodes err (not nil) for the wire.
func errorDetail(err error) *pb.ErrorDetail {
	d := &pb.ErrorDetail{Info: toPBErrorInfo(rpc.Failure(err))}
	for _, te := range registeredErrorTypes() {
		v, ok := te.find(err)
		if !ok {
			continue
		}
		data, jerr := json.Marshal(v)
		if jerr != nil {
			continue // the text and the sentinels still cross
		}
		d.Typed = append(d.Typed, &pb.TypedError{Kind: te.kind, Json: data})
	}
	switch {
	case errors.Is(err, context.Canceled):
		d.ContextError = 1
	case errors.Is(err, context.DeadlineExceeded):
		d.ContextError = 2
	}
	var t interface{ Timeout() bool }
	d.Timeout = errors.As(err, &t) && t.Timeout()
	return d
}

// timeoutError stands for an error whose Timeout() answered true where it was made.
type timeoutError struct{ msg string }

func (e timeoutError) Error() string { return e.msg }
func (timeoutError) Timeout() bool   { return true }

// toStatus turns an endpoint's error (not nil) into the status its caller gets.
func toStatus(err error) error {
	code := codes.Unknown
	switch {
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, rpc.ErrFencingTokenMismatch):
		code = codes.FailedPrecondition
	case errors.Is(err, rpc.ErrUnknownAddress):
		code = codes.NotFound
	case errors.Is(err, rpc.ErrClosed), rpc.IsUnreachable(err):
		code = codes.Unavailable
	case errors.Is(err, jobgraph.ErrInvalidJobGraph):
		code = codes.InvalidArgument
	}
	st, derr := status.New(code, err.Error()).WithDetails(errorDetail(err))
	if derr != nil {
		return status.Error(code, err.Error())
	}
	return st.Err()
}

// remoteError is an endpoint's error rebuilt on the caller's side: its text is the endpoint's
// error's, errors.Is matches the sentinels it matched (through the ErrorInfo), errors.As finds
// the typed errors that crossed, and the context errors it matched.
type remoteError struct {
	msg   string
	chain []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.chain }

// fromDetail rebuilds an endpoint's error.
func fromDetail(d *pb.ErrorDetail) error {
	info := fromPBErrorInfo(d.GetInfo())
	base := info.Err()
	if base == nil {
		base = errors.New("grpctransport: an error without text")
	}
	e := &remoteError{msg: base.Error(), chain: []error{base}}
	for _, t := range d.GetTyped() {
		for _, te := range registeredErrorTypes() {
			if te.kind != t.GetKind() {
				continue
			}
			if typed, err := te.make(t.GetJson()); err == nil {
				e.chain = append(e.chain, typed)
			}
		}
	}
	if d.GetTimeout() {
		e.chain = append(e.chain, timeoutError{e.msg})
	}
	switch d.GetContextError() {
	case 1:
		e.chain = append(e.chain, context.Canceled)
	case 2:
		e.chain = append(e.chain, context.DeadlineExceeded)
	}
	return e
}

// detailOf returns the ErrorDetail of a status error, if it has one.
func detailOf(st *status.Status) *pb.ErrorDetail {
	for _, d := range st.Details() {
		if ed, ok := d.(*pb.ErrorDetail); ok {
			return ed
		}
	}
	return nil
}

// callError turns the error of a call to method at address into what the gateway method
// returns: the endpoint's error, rebuilt, when the endpoint answered with one; else ctx's error
// when ctx ended; rpc.ErrServiceClosed when this Service was closed; ErrMessageTooLarge for a
// message over a size limit; an rpc.UnreachableError for codes.Unavailable without an answer
// (nothing listens at the address, the connection broke or its TLS handshake failed: the peer
// cannot be reached); otherwise the transport's error, wrapped with the method and address.
func (s *Service) callError(ctx context.Context, method, address string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("grpctransport: %s at %q: %w", method, address, err)
	}
	if d := detailOf(st); d != nil {
		return fromDetail(d)
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("grpctransport: %s at %q: %w", method, address, cerr)
	}
	if s.isClosed() {
		return fmt.Errorf("grpctransport: %s at %q: %w", method, address, rpc.ErrServiceClosed)
	}
	switch st.Code() {
	case codes.ResourceExhausted:
		return fmt.Errorf("grpctransport: %s at %q: %w: %s", method, address, ErrMessageTooLarge, st.Message())
	case codes.Canceled:
		return fmt.Errorf("grpctransport: %s at %q: %w: %s", method, address, context.Canceled, st.Message())
	case codes.DeadlineExceeded:
		return fmt.Errorf("grpctransport: %s at %q: %w: %s", method, address, context.DeadlineExceeded, st.Message())
	case codes.Unavailable:
		return rpc.Unreachable(fmt.Errorf("grpctransport: %s at %q: %w", method, address, err))
	}
	return fmt.Errorf("grpctransport: %s at %q: %w", method, address, err)
}

// ---- ErrorInfo ----

func toPBErrorInfo(e *jobgraph.ErrorInfo) *pb.ErrorInfo {
	if e == nil {
		return nil
	}
	out := &pb.ErrorInfo{Message: e.Message, Codes: e.Codes, TimestampUnixNanos: unixNanos(e.Timestamp)}
	if p := e.UnavailablePartition; p != nil {
		out.UnavailablePartition = toPBPartitionID(*p)
	}
	return out
}

func fromPBErrorInfo(e *pb.ErrorInfo) *jobgraph.ErrorInfo {
	if e == nil {
		return nil
	}
	out := &jobgraph.ErrorInfo{Message: e.GetMessage(), Timestamp: fromUnixNanos(e.GetTimestampUnixNanos())}
	if len(e.GetCodes()) > 0 {
		out.Codes = e.GetCodes()
	}
	if p := e.GetUnavailablePartition(); p != nil {
		var d dec
		id := d.partitionID(p)
		if d.err == nil {
			out.UnavailablePartition = &id
		}
	}
	return out
}

func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
