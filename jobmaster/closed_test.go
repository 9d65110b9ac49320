package jobmaster_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// After Close every JobMaster method that returns an error returns jobmaster.ErrClosed (and
// rpc.ErrClosed) naming the job — with the session's token and with a stale one alike — and the
// closed JobMaster's job ended SUSPENDED with that cause.
func TestEveryMethodAfterCloseReturnsErrClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newHBEnv(t, jobmaster.Config{})
		te := e.addTE("te-1")
		arc := e.jm.Close()
		require.NotNil(t, arc)
		assert.Equal(t, jobgraph.JobStatusSuspended, arc.Status)
		require.NotNil(t, arc.FailureCause)
		assert.Equal(t, []string{"rpc.closed", "jobmaster.closed"}, arc.FailureCause.Codes)
		assert.ErrorIs(t, arc.FailureCause.Err(), jobmaster.ErrClosed)

		want := "jobmaster: job " + e.g.JobID.String() + ": jobmaster: closed"
		for _, token := range []jobgraph.JobMasterID{e.token, jobgraph.NewJobMasterID()} {
			_, updateErr := e.gw.UpdateTaskExecutionState(e.ctx, token, rpc.TaskExecutionState{State: jobgraph.ExecutionStateRunning})
			_, offerErr := e.gw.OfferSlots(e.ctx, token, te.id, []rpc.SlotOffer{{AllocationID: jobgraph.NewAllocationID()}})
			_, statusErr := e.jm.RequestJobStatus(e.ctx)
			_, jobErr := e.jm.RequestJob(e.ctx)
			for name, err := range map[string]error{
				"UpdateTaskExecutionState":     updateErr,
				"RegisterTaskExecutor":         e.gw.RegisterTaskExecutor(e.ctx, token, rpc.TaskExecutorRegistration{ResourceID: "te-2", Address: "nowhere"}),
				"OfferSlots":                   offerErr,
				"FailSlot":                     e.gw.FailSlot(e.ctx, token, te.id, jobgraph.NewAllocationID(), nil),
				"DisconnectTaskExecutor":       e.gw.DisconnectTaskExecutor(e.ctx, token, te.id, nil),
				"DisconnectResourceManager":    e.gw.DisconnectResourceManager(e.ctx, token, e.rm.id, nil),
				"HeartbeatFromTaskExecutor":    e.gw.HeartbeatFromTaskExecutor(e.ctx, te.id, rpc.AllocatedSlotReport{JobID: e.g.JobID}),
				"HeartbeatFromResourceManager": e.gw.HeartbeatFromResourceManager(e.ctx, "rm"),
				"Cancel":                       e.jm.Cancel(e.ctx),
				"RequestJobStatus":             statusErr,
				"RequestJob":                   jobErr,
			} {
				assert.ErrorIs(t, err, jobmaster.ErrClosed, name)
				assert.ErrorIs(t, err, rpc.ErrClosed, name)
				assert.EqualError(t, err, want, name)
			}
		}
		assert.Same(t, arc, e.jm.Close(), "closing twice returns the same archive")
	})
}

// After Close the runner's methods return jobmaster.ErrClosed naming the job, not the internal
// main loop's error.
func TestRunnerMethodsAfterCloseReturnErrClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, newFakeFactory())
		require.NoError(t, f.runner.Start())
		<-f.factory.created
		synctest.Wait()
		f.runner.Close()
		ctx := context.Background()
		_, statusErr := f.runner.RequestJobStatus(ctx)
		_, jobErr := f.runner.RequestJob(ctx)
		for name, err := range map[string]error{
			"Cancel":           f.runner.Cancel(ctx),
			"RequestJobStatus": statusErr,
			"RequestJob":       jobErr,
		} {
			assert.ErrorIs(t, err, jobmaster.ErrClosed, name)
			assert.ErrorIs(t, err, rpc.ErrClosed, name)
			assert.EqualError(t, err, "jobmaster: runner of job "+f.factory.JobID().String()+": jobmaster: closed", name)
		}
	})
}
