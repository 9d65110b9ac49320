package taskexecutor

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// executionsIn returns the ExecutionDeploymentReport's attempts of each heartbeat taken.
func executionsIn(t *testing.T, beats []hbBeat) [][]jobgraph.ExecutionAttemptID {
	t.Helper()
	var out [][]jobgraph.ExecutionAttemptID
	for _, b := range beats {
		r, ok := b.Report.(rpc.AllocatedSlotReport)
		require.True(t, ok)
		require.NotNil(t, r.ExecutionDeploymentReport, "the in-process TaskExecutor always reports its executions")
		out = append(out, r.ExecutionDeploymentReport.Executions)
	}
	return out
}

// A task that has returned stays in its job's ExecutionDeploymentReport until its final state
// has been delivered: a heartbeat taken while the FINISHED report is still on its way lists it
// (without that, the JobMaster, which still counts the task as running, would fail it as a lost
// deployment); the first heartbeat after the report was answered does not.
func TestDeploymentReportKeepsATaskUntilItsFinalStateIsDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newHBCluster(t)
		release := make(chan struct{})
		c.reg.Register("until-released", func(ctx context.Context, _ Environment) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		finishing, delivered := make(chan struct{}), make(chan struct{})
		c.jms[1].stateHook = func(st rpc.TaskExecutionState) {
			if st.State == jobgraph.ExecutionStateFinished {
				close(finishing)
				<-delivered
			}
		}
		c.allocate(1, 0, allocID(1))
		d := tdd(1, 0, "until-released", allocID(1))
		require.NoError(t, c.te.SubmitTask(ctx, jmToken(1), d))
		synctest.Wait()
		beat := func() {
			require.NoError(t, c.te.HeartbeatFromJobMaster(ctx, "jobmaster-1"))
			synctest.Wait()
		}
		beat()
		assert.Equal(t, [][]jobgraph.ExecutionAttemptID{{d.ExecutionAttemptID}}, executionsIn(t, c.jms[1].take()), "running")

		close(release)
		<-finishing
		synctest.Wait()
		beat()
		assert.Equal(t, [][]jobgraph.ExecutionAttemptID{{d.ExecutionAttemptID}}, executionsIn(t, c.jms[1].take()),
			"returned, its FINISHED not yet delivered: still reported")

		close(delivered)
		synctest.Wait()
		beat()
		assert.Equal(t, [][]jobgraph.ExecutionAttemptID{{}}, executionsIn(t, c.jms[1].take()), "FINISHED delivered: no longer reported")
	})
}

// SubmitTask answers only once the heartbeat to the job's JobMaster that was in flight when the
// task started has been delivered: that heartbeat's report was taken before the task was there,
// and must not reach the JobMaster after it counts the task as deployed. SubmitTasks the same.
func TestSubmitTaskAnswersAfterTheHeartbeatInFlight(t *testing.T) {
	for _, batch := range []bool{false, true} {
		name := map[bool]string{false: "SubmitTask", true: "SubmitTasks"}[batch]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newHBCluster(t)
				c.reg.Register("block", func(ctx context.Context, _ Environment) error { <-ctx.Done(); return ctx.Err() })
				c.allocate(1, 0, allocID(1))
				hold := make(chan struct{})
				c.jms[1].hmu.Lock()
				c.jms[1].hold = hold
				c.jms[1].hmu.Unlock()
				require.NoError(t, c.te.HeartbeatFromJobMaster(ctx, "jobmaster-1"))
				synctest.Wait()
				assert.Equal(t, [][]jobgraph.ExecutionAttemptID{{}}, executionsIn(t, c.jms[1].take()), "in flight, taken before the task")

				d := tdd(1, 0, "block", allocID(1))
				answered := make(chan error, 1)
				go func() {
					if batch {
						errs, err := c.te.SubmitTasks(ctx, jmToken(1), []rpc.TaskDeploymentDescriptor{d})
						assert.Nil(t, errs)
						answered <- err
						return
					}
					answered <- c.te.SubmitTask(ctx, jmToken(1), d)
				}()
				synctest.Wait()
				select {
				case err := <-answered:
					t.Fatalf("%s answered (%v) while the heartbeat taken before the task was in flight", name, err)
				default:
				}
				close(hold)
				synctest.Wait()
				select {
				case err := <-answered:
					require.NoError(t, err)
				default:
					t.Fatalf("%s did not answer once the heartbeat was delivered", name)
				}
			})
		})
	}
}
