package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph/rpc"
)

// unreachable is an rpc.UnreachableError answering is.
type unreachable struct{ is bool }

func (unreachable) Error() string       { return "recipient gone" }
func (u unreachable) Unreachable() bool { return u.is }

// slow is unreachable and a timeout.
type slow struct{}

func (slow) Error() string     { return "gone or slow" }
func (slow) Unreachable() bool { return true }
func (slow) Timeout() bool     { return true }

func TestIsUnreachable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", errors.New("refused"), false},
		{"unreachable", unreachable{true}, true},
		{"wrapped", fmt.Errorf("heartbeat request to TaskExecutor te-1: %w", unreachable{true}), true},
		{"joined", errors.Join(errors.New("first"), unreachable{true}), true},
		{"says false", fmt.Errorf("call: %w", unreachable{false}), false},
		{"the first in the tree decides", fmt.Errorf("%w: %w", unreachable{false}, unreachable{true}), false},
		{"deadline", fmt.Errorf("call: %w: %w", unreachable{true}, context.DeadlineExceeded), false},
		{"a timeout", fmt.Errorf("call: %w", slow{}), false},
		{"canceled", fmt.Errorf("call: %w: %w", unreachable{true}, context.Canceled), true},
		{"a lost peer's cause is not itself unreachable", &rpc.HeartbeatTargetUnreachableError{Target: "TaskExecutor te-1", Failures: 2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, rpc.IsUnreachable(tc.err)) })
	}
}

// rpc.Unreachable marks an error unreachable and keeps its text and its tree.
func TestUnreachableMarksAnError(t *testing.T) {
	assert.NoError(t, rpc.Unreachable(nil))
	sentinel := errors.New("killed")
	err := rpc.Unreachable(fmt.Errorf("TaskExecutor te-1: %w", sentinel))
	assert.EqualError(t, err, "TaskExecutor te-1: killed")
	assert.ErrorIs(t, err, sentinel)
	assert.True(t, rpc.IsUnreachable(err))
	assert.True(t, rpc.IsUnreachable(fmt.Errorf("heartbeat: %w", err)))
	assert.False(t, rpc.IsUnreachable(rpc.Unreachable(context.DeadlineExceeded)), "a timeout never counts")
}

func TestHeartbeatTargetUnreachableError(t *testing.T) {
	err := fmt.Errorf("slot lost: %w", &rpc.HeartbeatTargetUnreachableError{Target: "TaskExecutor te-1", Failures: 2, LastFailure: "TaskExecutor te-1: taskexecutor: killed"})
	assert.EqualError(t, err, "slot lost: TaskExecutor te-1 is no longer reachable: 2 consecutive heartbeat RPCs failed, the last with: TaskExecutor te-1: taskexecutor: killed")
	assert.ErrorIs(t, err, rpc.ErrHeartbeatTargetUnreachable)
	assert.NotErrorIs(t, err, rpc.ErrHeartbeatTimeout)
	// Across a boundary the sentinel and the text travel.
	got := rpc.Failure(err).Err()
	assert.ErrorIs(t, got, rpc.ErrHeartbeatTargetUnreachable)
	assert.Equal(t, err.Error(), got.Error())
}
