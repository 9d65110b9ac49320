package resourcemanager

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// RequestTaskManagerInfo lists the registered TaskExecutors sorted by ResourceID with their
// slots (total, free, the job of each other one), resources (the sum of the slots when the
// registration named no total; the free slots' sum) and the time of their registration or last
// heartbeat, whichever is later.
func TestRequestTaskManagerInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		registered := time.Now()
		e.addTaskExecutor("te-2", cpu(1), cpu(2))
		e.addTaskExecutor("te-1", cpu(1))
		job, token := e.addJob("jm-address")
		require.NoError(t, e.declare(job, token, req(cpu(2), 1)))
		synctest.Wait()

		time.Sleep(time.Second)
		require.NoError(t, e.gw.HeartbeatFromTaskExecutor(e.ctx, e.rm.ResourceManagerID(), "te-1", report("te-1", cpu(1))))
		infos, err := e.rm.RequestTaskManagerInfo(e.ctx)
		require.NoError(t, err)
		assert.Equal(t, []rpc.TaskManagerInfo{
			{ResourceID: "te-1", Address: "te/te-1", LastHeartbeat: registered.Add(time.Second), SlotsNumber: 1, FreeSlots: 1,
				TotalResource: cpu(1), FreeResource: cpu(1)},
			{ResourceID: "te-2", Address: "te/te-2", LastHeartbeat: registered, SlotsNumber: 2, FreeSlots: 1,
				TotalResource: cpu(3), FreeResource: cpu(1),
				AllocatedSlots: []rpc.AllocatedSlotInfo{{JobID: job, Resource: cpu(2)}}},
		}, infos)

		require.NoError(t, e.gw.DisconnectTaskExecutor(e.ctx, e.rm.ResourceManagerID(), "te-2", jobgraph.NewErrorInfo(assert.AnError, time.Now())))
		infos, err = e.rm.RequestTaskManagerInfo(e.ctx)
		require.NoError(t, err)
		require.Len(t, infos, 1)
		assert.Equal(t, jobgraph.ResourceID("te-1"), infos[0].ResourceID)

		require.NoError(t, e.rm.Close())
		_, err = e.rm.RequestTaskManagerInfo(e.ctx)
		assert.ErrorIs(t, err, ErrClosed)
	})
}
