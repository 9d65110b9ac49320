package dispatcher_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// A submission makes one trip to the Dispatcher's loop that it waits for: the reservation of
// the JobID. Its closing check reads a flag and its bookkeeping (the runner, the watch) is
// posted without waiting, so SubmitJob returns, with the runner started, while the loop is
// held from the runner's creation on; the bookkeeping runs once the loop goes on, before any
// later call: the job's status comes from the runner.
func TestSubmitJobWaitsForTheLoopOnlyForTheReservation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		var d *dispatcher.StandaloneDispatcher
		var runner *fakeRunner
		var release func()
		d, err := dispatcher.New(dispatcher.Config{HA: services, JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
			release = dispatcher.HoldLoop(d) // after the reservation, before the closing check
			runner = &fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}
			return runner, nil
		}})
		require.NoError(t, err)
		defer d.Close()
		ctx := context.Background()
		g := graph("held loop")
		submitted := make(chan error, 1)
		go func() { submitted <- d.SubmitJob(ctx, g) }()
		synctest.Wait()
		returned := len(submitted) == 1
		started := runner.snapshot()
		release()
		require.NoError(t, <-submitted)
		assert.True(t, returned, "SubmitJob waited for the Dispatcher's loop after the reservation")
		assert.Equal(t, []string{"Start"}, started, "the runner started while the loop was held")
		st, err := d.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, st, "answered by the runner the submission recorded")
		assert.Equal(t, []string{"Start", "RequestJobStatus"}, runner.snapshot())
		require.NoError(t, d.CancelJob(ctx, g.JobID))
		res, err := d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	})
}

// The watch of a job whose runner ended closes the runner (the local cleanup) without waiting
// for the Dispatcher's loop: it posts the job's outcome there and goes on. The outcome is in
// place for every call made after the loop went on.
func TestWatchClosesTheEndedRunnerWithoutWaitingForTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		var runner *fakeRunner
		d, err := dispatcher.New(dispatcher.Config{HA: services, JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
			runner = &fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}
			return runner, nil
		}})
		require.NoError(t, err)
		defer d.Close()
		ctx := context.Background()
		g := graph("watch")
		require.NoError(t, d.SubmitJob(ctx, g))
		synctest.Wait()
		release := dispatcher.HoldLoop(d)
		require.NoError(t, runner.Cancel(ctx)) // the runner ends CANCELED on its own
		synctest.Wait()
		assert.Equal(t, []string{"Start", "Cancel", "Close"}, runner.snapshot(), "closed while the loop is held")
		release()
		st, err := d.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, st, "answered from the outcome, not the closed runner")
		res, err := d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		assert.Equal(t, []string{"Start", "Cancel", "Close"}, runner.snapshot())
	})
}
