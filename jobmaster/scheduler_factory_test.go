package jobmaster_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
)

// fakeScheduler is a host's own SchedulerNG: it records the calls the JobMaster makes and ends
// the job through the OnTerminal it was given when canceled.
type fakeScheduler struct {
	g      *jobgraph.JobGraph
	cfg    scheduler.Config
	status jobgraph.JobStatus
	calls  []string
}

var _ scheduler.SchedulerNG = (*fakeScheduler)(nil)

func (s *fakeScheduler) archive() *executiongraph.ArchivedExecutionGraph {
	return executiongraph.NewSparseArchivedExecutionGraph(s.g.JobID, s.g.Name, s.g.Type, s.status, nil, time.Time{}, time.Time{})
}
func (s *fakeScheduler) StartScheduling() {
	s.calls = append(s.calls, "StartScheduling")
	s.status = jobgraph.JobStatusRunning
}
func (s *fakeScheduler) UpdateTaskExecutionState(rpc.TaskExecutionState) bool {
	s.calls = append(s.calls, "UpdateTaskExecutionState")
	return false
}
func (s *fakeScheduler) OnDeployFailed(jobgraph.ExecutionAttemptID, error) {}
func (s *fakeScheduler) HandleGlobalFailure(error)                         {}
func (s *fakeScheduler) PartitionsLost(jobgraph.ResourceID)                {}
func (s *fakeScheduler) Cancel() {
	s.calls = append(s.calls, "Cancel")
	s.status = jobgraph.JobStatusCanceled
	s.cfg.OnTerminal(s.archive(), nil)
}
func (s *fakeScheduler) Suspend(error) {
	s.calls = append(s.calls, "Suspend")
	s.status = jobgraph.JobStatusSuspended
}
func (s *fakeScheduler) JobStatus() jobgraph.JobStatus                      { return s.status }
func (s *fakeScheduler) Archive() *executiongraph.ArchivedExecutionGraph    { return s.archive() }
func (s *fakeScheduler) ExceptionHistory() []jobgraph.ExceptionHistoryEntry { return nil }

// A host substitutes its own SchedulerNG through Config.SchedulerFactory: the JobMaster builds it
// with the job and its own slot pool, starts it, answers status from it, routes task reports and
// cancellation to it, and ends the job when it calls OnTerminal.
func TestJobMasterUsesSubstitutedScheduler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var built *fakeScheduler
		var pools int
		e := newHBEnv(t, jobmaster.Config{SchedulerFactory: func(g *jobgraph.JobGraph, pool scheduler.SlotPool, d scheduler.Deployer, cfg scheduler.Config) (scheduler.SchedulerNG, error) {
			if pool != nil && d != nil && cfg.Timers != nil && cfg.OnTerminal != nil {
				pools++
			}
			built = &fakeScheduler{g: g, cfg: cfg, status: jobgraph.JobStatusCreated}
			return built, nil
		}})
		require.NotNil(t, built)
		assert.Equal(t, e.g.JobID, built.g.JobID)
		assert.Equal(t, 1, pools, "the factory gets a slot pool, a Deployer, Timers and OnTerminal")
		assert.Equal(t, jobgraph.JobStatusRunning, e.status())

		applied, err := e.gw.UpdateTaskExecutionState(e.ctx, e.token, rpc.TaskExecutionState{ExecutionAttemptID: jobgraph.ExecutionAttemptID{}, State: jobgraph.ExecutionStateRunning})
		require.NoError(t, err)
		assert.False(t, applied, "the fake's answer")
		require.NoError(t, e.jm.Cancel(e.ctx))
		<-e.jm.Done()
		assert.Equal(t, jobgraph.JobStatusCanceled, e.jm.Result().Archived.Status)
		assert.Equal(t, []string{"StartScheduling", "UpdateTaskExecutionState", "Cancel"}, built.calls)
	})
}

// A factory that fails fails the JobMaster's creation with its error.
func TestJobMasterSchedulerFactoryError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := rpc.NewLocalService()
		require.NoError(t, svc.Register("rm", &hbRM{}))
		g := jobgraph.New("j", jobgraph.Batch)
		g.AddVertex("v", "noop", 1)
		boom := assert.AnError
		f, err := jobmaster.NewFactory(g, jobmaster.Config{RPC: svc, ResourceManagerAddress: "rm",
			SchedulerFactory: func(*jobgraph.JobGraph, scheduler.SlotPool, scheduler.Deployer, scheduler.Config) (scheduler.SchedulerNG, error) {
				return nil, boom
			}})
		require.NoError(t, err)
		_, err = f.Create(t.Context(), jobgraph.NewJobMasterID())
		require.ErrorIs(t, err, boom)
	})
}
