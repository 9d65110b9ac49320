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
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
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

// A job that ends between the Dispatcher's lookup and its runner's answer is answered from its
// outcome, not with the closed runner's error (cmd/jobgraph's end-to-end test once got
// "jobmaster: runner of job …: jobmaster: closed" from RequestJob right after the job was
// CANCELED).
func TestAJobThatEndsAfterTheLookupIsAnsweredFromItsOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		services := embedded.New()
		defer services.Close()
		d, err := dispatcher.New(dispatcher.Config{HA: services,
			JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
				return &closedAfterLookupRunner{fakeRunner: &fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}, closed: make(chan struct{})}, nil
			}})
		require.NoError(t, err)
		defer d.Close()

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
