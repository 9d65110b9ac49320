package minicluster_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rpc"
)

// The ResourceManager loses its leadership while a job runs and is granted it again under a new
// session (embedded's Revoke): it gets a new ResourceManagerID; every TaskExecutor registers with
// it again and reports its slots, so it knows the job's two slots as allocated; the JobMaster
// registers again (same JobMasterID) and declares the same requirements; the job keeps running,
// none of its tasks restarted, and a job submitted afterwards gets the free slot. A RequestSlot
// under the old ResourceManagerID is refused by the TaskExecutor.
func TestResourceManagerLeaderChangeKeepsJobsRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		services := embedded.New()
		t.Cleanup(func() { require.NoError(t, services.Close()) })
		started := make(chan jobgraph.ExecutionAttemptID, 8)
		mc := start(t, minicluster.Config{HA: services, TaskExecutors: 3, SlotsPerTaskExecutor: 1, Registry: blockingRegistry(started)})
		rm := mc.ResourceManager()
		synctest.Wait()
		id1 := rm.ResourceManagerID()
		require.False(t, id1.IsZero())
		for _, te := range mc.TaskExecutors() {
			got, err := te.WaitRegistered(ctx)
			require.NoError(t, err)
			assert.Equal(t, id1, got)
		}

		g := jobgraph.New("blocking", jobgraph.Streaming)
		g.AddVertex("v", "block", 2)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		require.Len(t, started, 2)
		<-started
		<-started
		assert.Equal(t, 2, rm.NumAllocatedSlots())
		jm1, ok := rm.JobMaster(g.JobID)
		require.True(t, ok)
		requirements := rm.Requirements(g.JobID)
		require.NotEmpty(t, requirements)

		services.ResourceManagerElection().Revoke()
		synctest.Wait()
		id2 := rm.ResourceManagerID()
		require.False(t, id2.IsZero())
		assert.NotEqual(t, id1, id2, "a new leader session, a new ResourceManagerID")
		for _, te := range mc.TaskExecutors() {
			got, err := te.WaitRegistered(ctx)
			require.NoError(t, err)
			assert.Equal(t, id2, got, "TaskExecutor %s registered with the new leader", te.ResourceID())
		}
		assert.Equal(t, 3, rm.NumRegisteredTaskExecutors())
		assert.Equal(t, 3, rm.NumRegisteredSlots())
		assert.Equal(t, 2, rm.NumAllocatedSlots(), "the slot reports told the new leader the job's slots")
		assert.Equal(t, 1, rm.NumFreeSlots())
		held := 0
		for _, s := range rm.Slots() {
			if s.Job == g.JobID {
				held++
			}
		}
		assert.Equal(t, 2, held)
		jm2, ok := rm.JobMaster(g.JobID)
		require.True(t, ok, "the JobMaster registered with the new leader")
		assert.Equal(t, jm1.ID, jm2.ID)
		assert.Equal(t, requirements, rm.Requirements(g.JobID), "and declared its requirements again")
		assert.Nil(t, rm.MissingResources(g.JobID))
		assert.Empty(t, started, "no task was restarted")
		status, err := mc.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, status)

		// A slot request of the old session is refused by the TaskExecutor with the free slot.
		var free rpc.SlotID
		for _, s := range rm.Slots() {
			if s.Job.IsZero() {
				free = s.SlotID
			}
		}
		var te rpc.TaskExecutorGateway
		for _, x := range mc.TaskExecutors() {
			if x.ResourceID() == free.ResourceID {
				te = x
			}
		}
		require.NotNil(t, te)
		err = te.RequestSlot(ctx, free, jobgraph.NewJobID(), jobgraph.NewAllocationID(), jobgraph.ResourceProfile{}, "jm", jobgraph.NewJobMasterID(), id1)
		require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
		var fe *rpc.FencingError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, id2.String(), fe.Expected)
		assert.Equal(t, id1.String(), fe.Got)

		// A job submitted under the new leader is served with the free slot.
		g2 := jobgraph.New("after", jobgraph.Streaming)
		g2.AddVertex("v", "block", 1)
		require.NoError(t, mc.SubmitJob(ctx, g2))
		synctest.Wait()
		assert.Len(t, started, 1)
		status, err = mc.RequestJobStatus(ctx, g2.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, status)
		assert.Equal(t, 3, rm.NumAllocatedSlots())
		status, err = mc.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, status, "the first job still runs")
	})
}
