package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// DefaultBlocklistItemTimeout is cluster.resource-blocklist.item.timeout's default, FLIP-224's 1 h.
const DefaultBlocklistItemTimeout = time.Hour

var (
	// ErrBlocklistDisabled is returned by BlockTaskExecutor when the Dispatcher has no
	// Config.Blocklist (cluster.resource-blocklist.enabled is false, Flink's default).
	ErrBlocklistDisabled = errors.New("dispatcher: the resource blocklist is disabled (cluster.resource-blocklist.enabled)")
	// ErrInvalidBlockRequest is matched by BlockTaskExecutor's error for a request without a
	// TaskExecutor, with a negative duration or an unknown action; the message names the field.
	ErrInvalidBlockRequest = errors.New("dispatcher: invalid block request")
)

func init() {
	jobgraph.RegisterErrorCode("dispatcher.blocklist-disabled", ErrBlocklistDisabled)
	jobgraph.RegisterErrorCode("dispatcher.invalid-block-request", ErrInvalidBlockRequest)
}

// BlocklistOperations is what blocks TaskExecutors cluster-wide: the ResourceManager
// (*resourcemanager.ResourceManager implements it), which requests no slot of a blocked
// TaskExecutor and tells every JobMaster. Flink: org.apache.flink.runtime.blocklist.BlocklistOperations.
type BlocklistOperations interface {
	AddNewBlockedNodes(ctx context.Context, nodes []rpc.BlockedNode) error
}

// BlockRequest asks to block one TaskExecutor. FLIP-224's REST request (node, duration, action),
// with its cause.
type BlockRequest struct {
	// TaskExecutor is the ResourceID of the TaskExecutor to block. Required.
	TaskExecutor jobgraph.ResourceID
	// Duration is how long it stays blocked, from now; 0 means Config.BlocklistItemTimeout
	// (cluster.resource-blocklist.item.timeout, 1 h).
	Duration time.Duration
	// Cause says why, for the logs and the blocklist's entry.
	Cause string
	// Action is what happens to the tasks running there; "" means Config.BlocklistAction
	// (cluster.resource-blocklist.action, MARK_BLOCKED).
	Action rpc.BlockAction
}

// BlockTaskExecutor blocks a TaskExecutor for req.Duration from now: it gets no new slot
// requests for any job, each job's free slots there are given back, and its running tasks keep
// running (rpc.BlockActionMarkBlocked) or fail over elsewhere
// (rpc.BlockActionMarkBlockedAndEvacuateTasks); the block ends at its end instant exactly, and a
// later block of the same TaskExecutor extends it. It returns the entry once the ResourceManager
// accepted it. Errors: ErrBlocklistDisabled, ErrInvalidBlockRequest, ErrClosed, the
// ResourceManager's (resourcemanager.ErrInvalidBlockedNode, not leading), ctx's. Called from any
// goroutine; the ResourceManager is called on the caller's, never on the Dispatcher's loop.
// Flink: FLIP-224's REST blocklist API, which Flink's code did not build (its blocklist is fed by
// speculative execution only).
func (d *StandaloneDispatcher) BlockTaskExecutor(ctx context.Context, req BlockRequest) (rpc.BlockedNode, error) {
	if err := d.loop.Call(ctx, func() error { return nil }); err != nil {
		return rpc.BlockedNode{}, err // closed
	}
	ops := d.cfg.Blocklist
	if ops == nil {
		return rpc.BlockedNode{}, ErrBlocklistDisabled
	}
	node, err := blockedNode(req, d.cfg.BlocklistItemTimeout, d.cfg.BlocklistAction, time.Now())
	if err != nil {
		return rpc.BlockedNode{}, err
	}
	if err := ops.AddNewBlockedNodes(ctx, []rpc.BlockedNode{node}); err != nil {
		return rpc.BlockedNode{}, fmt.Errorf("dispatcher: blocking TaskExecutor %s: %w", req.TaskExecutor, err)
	}
	return node, nil
}

// blockedNode is req's entry, checked, with the defaults filled in.
func blockedNode(req BlockRequest, timeout time.Duration, action rpc.BlockAction, now time.Time) (rpc.BlockedNode, error) {
	switch {
	case req.TaskExecutor == "":
		return rpc.BlockedNode{}, fmt.Errorf("%w: no TaskExecutor named", ErrInvalidBlockRequest)
	case req.Duration < 0:
		return rpc.BlockedNode{}, fmt.Errorf("%w: TaskExecutor %s: duration %v is negative", ErrInvalidBlockRequest, req.TaskExecutor, req.Duration)
	case !req.Action.Valid():
		return rpc.BlockedNode{}, fmt.Errorf("%w: TaskExecutor %s: unknown action %q; want %q or %q", ErrInvalidBlockRequest, req.TaskExecutor, req.Action,
			rpc.BlockActionMarkBlocked, rpc.BlockActionMarkBlockedAndEvacuateTasks)
	}
	if req.Duration == 0 {
		req.Duration = timeout
		if req.Duration == 0 {
			req.Duration = DefaultBlocklistItemTimeout
		}
	}
	if req.Action == "" {
		req.Action = action
		if req.Action == "" {
			req.Action = rpc.BlockActionMarkBlocked
		}
	}
	cause := req.Cause
	if cause == "" {
		cause = "blocked through the Dispatcher"
	}
	return rpc.BlockedNode{NodeID: req.TaskExecutor, Cause: cause, EndTimestamp: now.Add(req.Duration), Action: req.Action}, nil
}

// BlockTaskExecutor is the leading session's StandaloneDispatcher.BlockTaskExecutor; ErrNotLeader
// without leadership.
func (r *Runner) BlockTaskExecutor(ctx context.Context, req BlockRequest) (rpc.BlockedNode, error) {
	d, err := r.leader(ctx, false)
	if err != nil {
		return rpc.BlockedNode{}, err
	}
	n, err := d.BlockTaskExecutor(ctx, req)
	return n, r.deposed(err)
}
