package taskexecutor

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

// A task that returned reports its final state without waiting for the TaskExecutor's loop: it
// queues its unregistration there and reports. Whatever the JobMaster then sends (FreeSlot)
// comes after the unregistration, so the slot is free at once.
func TestFinalStateIsReportedWithoutWaitingForTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		finish := make(chan struct{})
		c.reg.Register("wait", func(context.Context, Environment) error { <-finish; return nil })
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 0, "wait", allocID(1))))
		synctest.Wait()

		held, gate := make(chan struct{}), make(chan struct{})
		te.loop.Execute(func() { close(held); <-gate })
		<-held
		close(finish)
		synctest.Wait()
		states := c.jm.statesOf(attemptID(1, 0, 0))
		freed := make(chan error, 1)
		go func() { freed <- te.FreeSlot(ctx, allocID(1), nil) }() // as the JobMaster does next
		synctest.Wait()
		close(gate)
		require.NoError(t, <-freed)
		synctest.Wait()
		assert.Equal(t, []jobgraph.ExecutionState{
			jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFinished,
		}, states, "FINISHED reported while the loop was held")
		r, err := te.SlotReport(ctx)
		require.NoError(t, err)
		assert.True(t, r.Slots[0].AllocationID.IsZero(), "the slot is free: the task had left it before FreeSlot ran")
		require.Len(t, c.rm.notifications(), 1, "the ResourceManager heard of the free slot")
	})
}
