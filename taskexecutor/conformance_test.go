package taskexecutor

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor/tetest"
)

// newConformingTaskExecutor starts an in-process TaskExecutor as the conformance suite asks.
func newConformingTaskExecutor(t *testing.T, env tetest.Env) rpc.TaskExecutorGateway {
	reg := NewRegistry()
	reg.Register(tetest.InvokableFinish, func(context.Context, Environment) error { return nil })
	reg.Register(tetest.InvokableBlock, func(ctx context.Context, _ Environment) error { <-ctx.Done(); return ctx.Err() })
	reg.Register(tetest.InvokableEvents, func(ctx context.Context, env Environment) error {
		env.SetOperatorEventHandler(func(event []byte) error {
			if string(event) == tetest.EventFail {
				return errors.New(tetest.HandlerRefused)
			}
			return env.SendEventToCoordinator(event)
		})
		for {
			if err := env.Yield(ctx); err != nil {
				return err
			}
		}
	})
	te, err := New(Config{ResourceID: env.ResourceID, Address: env.Address, NumSlots: env.NumSlots, Registry: reg,
		RPC: env.RPC, ResourceManagerAddress: env.ResourceManagerAddress, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, te.Start(t.Context()))
	t.Cleanup(func() { assert.NoError(t, te.Close()) })
	return te
}

// The in-process TaskExecutor passes the TaskExecutorGateway conformance suite, in a bubble and
// in real time.
func TestConformance(t *testing.T) { tetest.TestTaskExecutorInBubble(t, newConformingTaskExecutor) }

func TestConformanceRealTime(t *testing.T) { tetest.TestTaskExecutor(t, newConformingTaskExecutor) }
