package slotpool

import (
	"errors"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
)

var (
	// ErrNoResourceAvailable is matched (errors.Is) by the error a slot request fails with when no
	// slot arrived within its timeout. Flink: NoResourceAvailableException.
	ErrNoResourceAvailable = errors.New("no resource available")
	// ErrRequestCanceled is matched by the error a pending request fails with when CancelRequest
	// ends it.
	ErrRequestCanceled = errors.New("slot request canceled")
	// ErrPoolClosed is returned by a closed pool, and matched by the error its pending requests and
	// payloads get from Close.
	ErrPoolClosed = errors.New("slot pool closed")
	// errPoolClosed is what a closed pool returns and releases its slots with: ErrPoolClosed
	// with the package's prefix, made once (it names nothing of one pool).
	errPoolClosed = fmt.Errorf("slotpool: %w", ErrPoolClosed)
	// ErrIdleSlot is matched by the cause given to OnReturnSlot for a slot returned because it
	// stayed free longer than slot.idle.timeout.
	ErrIdleSlot = errors.New("slot idle for longer than slot.idle.timeout")
	// ErrUnknownSlot: no slot with that AllocationID is in the pool.
	ErrUnknownSlot = errors.New("unknown slot")
	// ErrSlotNotFree: the slot is allocated, but the call needs a free one.
	ErrSlotNotFree = errors.New("slot is not free")
	// ErrSlotNotAllocated: the slot is free, but the call needs an allocated one.
	ErrSlotNotAllocated = errors.New("slot is not allocated")
	// ErrProfileMismatch: the slot's ResourceProfile does not match the profile asked for.
	ErrProfileMismatch = errors.New("slot does not match the required resource profile")
	// ErrPayloadAssigned: the slot already carries a payload.
	ErrPayloadAssigned = errors.New("slot already has a payload")
	// ErrDuplicateRequest: a pending or allocated request already has that SlotRequestID.
	ErrDuplicateRequest = errors.New("duplicate slot request ID")
	// ErrRequestPending is what SlotRequest.Result returns before the request is done.
	ErrRequestPending = errors.New("slot request still pending")
	// ErrInvalidArgument is matched by errors for malformed input: a negative, NaN or infinite
	// resource, a negative count or timeout, a zero ID.
	ErrInvalidArgument = errors.New("invalid argument")
)

// The sentinels that may travel in a gateway message (see jobgraph.RegisterErrorCode).
func init() {
	jobgraph.RegisterErrorCode("slotpool.no-resource-available", ErrNoResourceAvailable)
	jobgraph.RegisterErrorCode("slotpool.request-canceled", ErrRequestCanceled)
	jobgraph.RegisterErrorCode("slotpool.pool-closed", ErrPoolClosed)
	jobgraph.RegisterErrorCode("slotpool.idle-slot", ErrIdleSlot)
}

// NoResourceAvailableError is the error of a slot request that timed out. It matches
// ErrNoResourceAvailable.
type NoResourceAvailableError struct {
	RequestID SlotRequestID
	Profile   jobgraph.ResourceProfile
	// Timeout is the slot request timeout that passed.
	Timeout time.Duration
}

func (e *NoResourceAvailableError) Error() string {
	return fmt.Sprintf("slotpool: %v: could not allocate the required slots within the slot request timeout of %v (slot request %s for %v)",
		ErrNoResourceAvailable, e.Timeout, e.RequestID, e.Profile)
}

// Is reports whether target is ErrNoResourceAvailable.
func (e *NoResourceAvailableError) Is(target error) bool { return target == ErrNoResourceAvailable }

func invalid(format string, args ...any) error {
	return fmt.Errorf("slotpool: %w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// withCause wraps sentinel with a description and, if non-nil, cause.
func withCause(sentinel error, what string, cause error) error {
	if cause == nil {
		return fmt.Errorf("slotpool: %s: %w", what, sentinel)
	}
	return fmt.Errorf("slotpool: %s: %w: %w", what, sentinel, cause)
}
