package dispatcher_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// The options are checked as Flink's ClientUtils does: an interval not below the timeout, or a
// negative one, is ErrInvalidConfig naming both options, and nothing is submitted.
func TestSubmitAttachedRefusesBadHeartbeatOptions(t *testing.T) {
	d, services, built := overrideFixture(t, nil)
	ctx := context.Background()
	g := graph("attached")
	_, err := dispatcher.SubmitAttached(ctx, d, g, dispatcher.JobClientOptions{ShutdownOnAttachedExit: true, HeartbeatInterval: 3 * time.Minute})
	require.ErrorIs(t, err, dispatcher.ErrInvalidConfig)
	assert.Equal(t, "dispatcher: invalid configuration: the client heartbeat interval (client.heartbeat.interval) 3m0s must be less than the timeout (client.heartbeat.timeout) 3m0s", err.Error())
	_, err = dispatcher.SubmitAttached(ctx, d, g, dispatcher.JobClientOptions{HeartbeatTimeout: -time.Second})
	require.ErrorIs(t, err, dispatcher.ErrInvalidConfig)
	assert.Empty(t, *built)
	ids, err := services.ExecutionPlanStore().JobIDs(ctx)
	require.NoError(t, err)
	assert.Empty(t, ids)
}

// A heartbeat for a JobID with no running job is an error wrapping ErrJobNotFound; the
// persisted plan carries the timeout (so a recovered job is watched again); a negative timeout
// is an invalid graph; a negative check interval is ErrInvalidConfig.
func TestJobClientHeartbeatErrors(t *testing.T) {
	d, services, _ := overrideFixture(t, nil)
	ctx := context.Background()
	err := d.ReportJobClientHeartbeat(ctx, jobgraph.NewJobID(), time.Now())
	require.ErrorIs(t, err, dispatcher.ErrJobNotFound)

	g := graph("attached")
	c, err := dispatcher.SubmitAttached(ctx, d, g, dispatcher.JobClientOptions{ShutdownOnAttachedExit: true})
	require.NoError(t, err)
	defer c.Close()
	stored, err := services.ExecutionPlanStore().Get(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, dispatcher.DefaultClientHeartbeatTimeout, stored.InitialClientHeartbeatTimeout)
	require.NoError(t, d.ReportJobClientHeartbeat(ctx, g.JobID, time.Now().Add(time.Minute)))

	bad := graph("negative")
	bad.InitialClientHeartbeatTimeout = -time.Second
	require.ErrorIs(t, d.SubmitJob(ctx, bad), jobgraph.ErrInvalidJobGraph)

	_, err = dispatcher.New(dispatcher.Config{HA: services, ClientAlivenessCheckInterval: -time.Second,
		JobManagerRunnerFactory: func(*jobgraph.JobGraph, ha.Services) (jobmaster.JobManagerRunner, error) { return nil, nil }})
	require.ErrorIs(t, err, dispatcher.ErrInvalidConfig)
}

// A recovered job with a client heartbeat timeout is watched from its recovery: with no client
// heartbeating to the new leader it is canceled at the first check at or after recovery + the
// timeout (here: recovered at t0, timeout 180 s, checks every 60 s: canceled at t0+180 s).
func TestRecoveredJobWithoutClientHeartbeatsIsCanceledAfterTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		g := graph("recovered attached")
		g.InitialClientHeartbeatTimeout = dispatcher.DefaultClientHeartbeatTimeout
		require.NoError(t, services.ExecutionPlanStore().Put(context.Background(), g))
		var runner *fakeRunner
		t0 := time.Now()
		d, err := dispatcher.New(dispatcher.Config{HA: services, RecoveredJobs: []*jobgraph.JobGraph{g},
			JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
				runner = &fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}
				return runner, nil
			}})
		require.NoError(t, err)
		defer d.Close()
		time.Sleep(179 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"Start"}, runner.snapshot())
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"Start", "Cancel", "Close"}, runner.snapshot(), "canceled at t0+180 s, then closed (the local cleanup)")
		res, err := d.RequestJobResult(context.Background(), g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		assert.Equal(t, 180*time.Second, time.Since(t0))
	})
}
