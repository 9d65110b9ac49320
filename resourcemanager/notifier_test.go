package resourcemanager

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// The in-process ResourceManager takes a JobMaster's declarations and disconnect without the
// caller waiting (rpc.ResourceManagerNotifier): the calls return with the loop held, run there in
// order, fenced as DeclareRequiredResources and DisconnectJobMaster are (done hears a
// *rpc.FencingError for a stale JobMasterID, ErrJobNotRegistered for a job not registered), and
// once the ResourceManager is closed done hears ErrClosed at once.
func TestNotifierQueuesFencedDeclarationsAndDisconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		te := e.addTaskExecutor("te-1", cpu(1), cpu(1))
		job, token := e.addJob("jm-address")
		n, ok := e.gw.(rpc.ResourceManagerNotifier)
		require.True(t, ok)

		var got []error
		record := func(err error) { got = append(got, err) }
		held, gate := make(chan struct{}), make(chan struct{})
		e.rm.loop.Execute(func() { close(held); <-gate })
		<-held
		rmID := e.rm.ResourceManagerID()
		n.NotifyRequiredResources(rmID, jobgraph.NewJobMasterID(), rpc.ResourceRequirements{JobID: job, Requirements: []rpc.ResourceRequirement{req(unknown, 2)}}, record)
		n.NotifyRequiredResources(rmID, token, rpc.ResourceRequirements{JobID: jobgraph.NewJobID(), Requirements: []rpc.ResourceRequirement{req(unknown, 1)}}, record)
		n.NotifyRequiredResources(rmID, token, rpc.ResourceRequirements{JobID: job, Requirements: []rpc.ResourceRequirement{req(unknown, 1)}}, record)
		assert.Empty(t, got, "nothing ran while the loop is held")
		close(gate)
		synctest.Wait()
		require.Len(t, got, 3)
		assert.ErrorIs(t, got[0], rpc.ErrFencingTokenMismatch)
		assert.ErrorIs(t, got[1], ErrJobNotRegistered)
		assert.NoError(t, got[2])
		require.Len(t, te.Calls(), 1, "one slot requested: the stale declaration of two changed nothing")
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, e.rm.Requirements(job))

		got = nil
		n.NotifyJobMasterDisconnected(rmID, jobgraph.NewJobMasterID(), job, nil, record)
		n.NotifyJobMasterDisconnected(rmID, token, job, rpc.Failure(errors.New("finished")), record)
		synctest.Wait()
		require.Len(t, got, 2)
		assert.ErrorIs(t, got[0], rpc.ErrFencingTokenMismatch)
		assert.NoError(t, got[1])
		assert.Nil(t, e.rm.Requirements(job), "the job is forgotten")

		require.NoError(t, e.rm.Close())
		got = nil
		n.NotifyRequiredResources(rmID, token, rpc.ResourceRequirements{JobID: job}, record)
		n.NotifyJobMasterDisconnected(rmID, token, job, nil, record)
		require.Len(t, got, 2, "answered at once")
		assert.ErrorIs(t, got[0], ErrClosed)
		assert.ErrorIs(t, got[1], ErrClosed)
	})
}
