package dispatcher_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// closedAfterLookupRunner is a fakeRunner whose RequestJob and RequestJobStatus, once called,
// (and Cancel) end the job and wait until the Dispatcher closed the runner, then answer as a closed runner
// does: the interleaving in which a lookup gave the runner out just before its job ended.
type closedAfterLookupRunner struct {
	*fakeRunner
	closeOnce sync.Once
	closed    chan struct{}
}

func (r *closedAfterLookupRunner) Close() {
	r.fakeRunner.Close()
	r.closeOnce.Do(func() { close(r.closed) })
}

func (r *closedAfterLookupRunner) endAndWaitForClose() error {
	_ = r.fakeRunner.Cancel(context.Background()) // the job ends CANCELED
	<-r.closed
	return fmt.Errorf("jobmaster: runner of job %s: %w", r.g.JobID, jobmaster.ErrClosed)
}

func (r *closedAfterLookupRunner) RequestJob(context.Context) (*executiongraph.ArchivedExecutionGraph, error) {
	return nil, r.endAndWaitForClose()
}

func (r *closedAfterLookupRunner) RequestJobStatus(context.Context) (jobgraph.JobStatus, error) {
	return 0, r.endAndWaitForClose()
}

func (r *closedAfterLookupRunner) Cancel(context.Context) error { return r.endAndWaitForClose() }

// newClosedAfterLookupDispatcher returns a started Dispatcher whose every runner is a
// closedAfterLookupRunner; the test's Cleanup closes it and its HA services.
func newClosedAfterLookupDispatcher(t *testing.T) *dispatcher.StandaloneDispatcher {
	services := embedded.New()
	t.Cleanup(func() { _ = services.Close() })
	d, err := dispatcher.New(dispatcher.Config{HA: services,
		JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
			return &closedAfterLookupRunner{fakeRunner: &fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}, closed: make(chan struct{})}, nil
		}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// A job that ends between the Dispatcher's lookup and its runner's answer is answered from its
// outcome, not with the closed runner's error (cmd/jobgraph's end-to-end test once got
// "jobmaster: runner of job …: jobmaster: closed" from RequestJob right after the job was
// CANCELED).
func TestAJobThatEndsAfterTheLookupIsAnsweredFromItsOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		d := newClosedAfterLookupDispatcher(t)

		g := graph("ends during RequestJob")
		require.NoError(t, d.SubmitJob(ctx, g))
		a, err := d.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, a.Status)

		g2 := graph("ends during RequestJobStatus")
		require.NoError(t, d.SubmitJob(ctx, g2))
		status, err := d.RequestJobStatus(ctx, g2.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, status)

		// It ended CANCELED: canceling it is a no-op, as for any CANCELED job.
		g3 := graph("ends during CancelJob")
		require.NoError(t, d.SubmitJob(ctx, g3))
		require.NoError(t, d.CancelJob(ctx, g3.JobID))
	})
}

// A job that ends while ListJobs asks its runner for its status is listed with its outcome: the
// listing does not fail with the closed runner's error (an outside host listing jobs while they
// finished got "jobmaster: runner of job …: jobmaster: closed" from ListJobs).
func TestAJobThatEndsWhileListedIsListedWithItsOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		d := newClosedAfterLookupDispatcher(t)

		g := graph("ends during ListJobs")
		require.NoError(t, d.SubmitJob(ctx, g))
		synctest.Wait() // the runner is started: ListJobs asks it
		jobs, err := d.ListJobs(ctx)
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		assert.Equal(t, g.JobID, jobs[0].JobID)
		assert.Equal(t, "ends during ListJobs", jobs[0].Name)
		assert.Equal(t, jobgraph.JobStatusCanceled, jobs[0].Status)
	})
}

// closedAfterLookupSavepointRunner is a closedAfterLookupRunner that takes savepoints: each of
// its jobmaster.SavepointGateway calls ends the job, waits until the Dispatcher closed the runner
// and answers closed, as the runner or its JobMaster does when the job ended after the
// Dispatcher's lookup (closed makes the error: the runner's own, or its JobMaster's, which is
// unreachable as every closed RPC endpoint's is).
type closedAfterLookupSavepointRunner struct {
	*closedAfterLookupRunner
	closedErr func(job jobgraph.JobID) error
}

var _ jobmaster.SavepointGateway = (*closedAfterLookupSavepointRunner)(nil)

func (r *closedAfterLookupSavepointRunner) endAndWaitForClose() error {
	_ = r.closedAfterLookupRunner.endAndWaitForClose()
	return r.closedErr(r.g.JobID)
}

func (r *closedAfterLookupSavepointRunner) TriggerSavepoint(context.Context, string) (string, error) {
	return "", r.endAndWaitForClose()
}

func (r *closedAfterLookupSavepointRunner) StopWithSavepoint(context.Context, string) (string, error) {
	return "", r.endAndWaitForClose()
}

func (r *closedAfterLookupSavepointRunner) TriggerCheckpoint(context.Context) (checkpoint.CheckpointID, error) {
	return 0, r.endAndWaitForClose()
}

// A savepoint, stop-with-savepoint or checkpoint of a job that ends between the Dispatcher's
// lookup and its runner's answer is answered as one of a job that had ended before the lookup:
// jobmaster.ErrJobNotRunning naming how it ended, not the closed runner's or JobMaster's error
// (which, being a closed endpoint's, is unreachable: a caller over a transport would take the
// Dispatcher for gone). Flink answers the operation on a job no longer running with
// FlinkJobNotFoundException (its Dispatcher no longer has the runner) or the JobMaster's
// "not running" failure.
func TestASavepointOfAJobThatEndsAfterTheLookupSaysItIsNotRunning(t *testing.T) {
	for name, closedErr := range map[string]func(jobgraph.JobID) error{
		"runner closed": func(job jobgraph.JobID) error {
			return fmt.Errorf("jobmaster: runner of job %s: %w", job, jobmaster.ErrClosed)
		},
		"JobMaster closed": func(job jobgraph.JobID) error {
			return rpc.Unreachable(fmt.Errorf("jobmaster: job %s: %w", job, jobmaster.ErrClosed))
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				services := embedded.New()
				defer services.Close()
				d, err := dispatcher.New(dispatcher.Config{HA: services,
					JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
						return &closedAfterLookupSavepointRunner{
							closedAfterLookupRunner: &closedAfterLookupRunner{fakeRunner: &fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}, closed: make(chan struct{})},
							closedErr:               closedErr,
						}, nil
					}})
				require.NoError(t, err)
				defer d.Close()

				for _, op := range []struct {
					what string
					call func(jobgraph.JobID) error
				}{
					{"savepoint", func(id jobgraph.JobID) error {
						_, err := d.TriggerSavepoint(ctx, id, t.TempDir())
						return err
					}},
					{"stop-with-savepoint", func(id jobgraph.JobID) error {
						_, err := d.StopWithSavepoint(ctx, id, t.TempDir())
						return err
					}},
					{"checkpoint", func(id jobgraph.JobID) error {
						_, err := d.TriggerCheckpoint(ctx, id)
						return err
					}},
				} {
					g := graph("ends during " + op.what)
					require.NoError(t, d.SubmitJob(ctx, g))
					err := op.call(g.JobID)
					assert.ErrorIs(t, err, jobmaster.ErrJobNotRunning, op.what)
					assert.NotErrorIs(t, err, rpc.ErrClosed, op.what)
					assert.False(t, rpc.IsUnreachable(err), "the Dispatcher answered: %s", op.what)
					assert.EqualError(t, err, "dispatcher: job "+g.JobID.String()+": "+op.what+": job is not RUNNING (it ended CANCELED)", op.what)
				}
			})
		})
	}
}
