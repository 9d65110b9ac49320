package jobmaster_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// After Close every JobMaster method that returns an error — every rpc.JobMasterGateway method,
// the blocklist listener's, the savepoint gateway's and the JobMaster's own — returns
// jobmaster.ErrClosed (and rpc.ErrClosed) naming the job, with the session's token and with a
// stale one alike, and so does the done of a refused NotifyTaskExecutionState. It is an
// rpc.UnreachableError: a closed JobMaster is gone for its callers, as it is over a transport that
// unregistered it (Flink: an RPC to a stopped endpoint fails with RecipientUnreachableException),
// so heartbeats count it toward heartbeat.rpc-failure-threshold. The closed JobMaster's job ended
// SUSPENDED with that cause, which is not unreachable.
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
		assert.False(t, rpc.IsUnreachable(arc.FailureCause.Err()), "the job's cause is no call's answer")

		want := "jobmaster: job " + e.g.JobID.String() + ": jobmaster: closed"
		jm := e.jm.(*jobmaster.DefaultJobMaster)
		var attempt jobgraph.ExecutionAttemptID
		for _, token := range []jobgraph.JobMasterID{e.token, jobgraph.NewJobMasterID()} {
			methods := []struct {
				name string
				call func() error
			}{
				{"UpdateTaskExecutionState", func() error {
					_, err := e.gw.UpdateTaskExecutionState(e.ctx, token, rpc.TaskExecutionState{State: jobgraph.ExecutionStateRunning})
					return err
				}},
				{"NotifyTaskExecutionState", func() error {
					heard := make(chan error, 2)
					jm.NotifyTaskExecutionState(token, rpc.TaskExecutionState{State: jobgraph.ExecutionStateRunning}, func(err error) { heard <- err })
					synctest.Wait()
					require.Len(t, heard, 1, "done called once")
					return <-heard
				}},
				{"RegisterTaskExecutor", func() error {
					return e.gw.RegisterTaskExecutor(e.ctx, token, rpc.TaskExecutorRegistration{ResourceID: "te-2", Address: "nowhere"})
				}},
				{"OfferSlots", func() error {
					_, err := e.gw.OfferSlots(e.ctx, token, te.id, []rpc.SlotOffer{{AllocationID: jobgraph.NewAllocationID()}})
					return err
				}},
				{"FailSlot", func() error { return e.gw.FailSlot(e.ctx, token, te.id, jobgraph.NewAllocationID(), nil) }},
				{"DisconnectTaskExecutor", func() error { return e.gw.DisconnectTaskExecutor(e.ctx, token, te.id, nil) }},
				{"DisconnectResourceManager", func() error { return e.gw.DisconnectResourceManager(e.ctx, token, e.rm.id, nil) }},
				{"HeartbeatFromTaskExecutor", func() error {
					return e.gw.HeartbeatFromTaskExecutor(e.ctx, te.id, rpc.AllocatedSlotReport{JobID: e.g.JobID})
				}},
				{"HeartbeatFromResourceManager", func() error { return e.gw.HeartbeatFromResourceManager(e.ctx, "rm") }},
				{"AcknowledgeCheckpoint", func() error {
					return e.gw.AcknowledgeCheckpoint(e.ctx, token, e.g.JobID, checkpoint.AcknowledgeCheckpoint{Attempt: attempt, CheckpointID: 1})
				}},
				{"DeclineCheckpoint", func() error {
					return e.gw.DeclineCheckpoint(e.ctx, token, e.g.JobID, checkpoint.DeclineCheckpoint{Attempt: attempt, CheckpointID: 1})
				}},
				{"SendOperatorEventToCoordinator", func() error {
					return e.gw.SendOperatorEventToCoordinator(e.ctx, token, attempt, []byte("event"))
				}},
				{"NotifyNewBlockedNodes", func() error { return jm.NotifyNewBlockedNodes(e.ctx, token, nil) }},
				{"TriggerSavepoint", func() error {
					_, err := jm.TriggerSavepoint(e.ctx, t.TempDir())
					return err
				}},
				{"StopWithSavepoint", func() error {
					_, err := jm.StopWithSavepoint(e.ctx, t.TempDir())
					return err
				}},
				{"TriggerCheckpoint", func() error {
					_, err := jm.TriggerCheckpoint(e.ctx)
					return err
				}},
				{"Cancel", func() error { return e.jm.Cancel(e.ctx) }},
				{"RequestJobStatus", func() error {
					_, err := e.jm.RequestJobStatus(e.ctx)
					return err
				}},
				{"RequestJob", func() error {
					_, err := e.jm.RequestJob(e.ctx)
					return err
				}},
			}
			for _, m := range methods {
				err := m.call()
				assert.ErrorIs(t, err, jobmaster.ErrClosed, m.name)
				assert.ErrorIs(t, err, rpc.ErrClosed, m.name)
				assert.EqualError(t, err, want, m.name)
				assert.True(t, rpc.IsUnreachable(err), "a closed JobMaster is gone: %s", m.name)
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
			assert.False(t, rpc.IsUnreachable(err), "the runner is no RPC endpoint: %s", name)
		}
	})
}
