package dispatcher_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// savepointJobMaster is a fakeJobMaster that takes savepoints: it records each request; a stop
// ends the job FINISHED before it answers.
type savepointJobMaster struct {
	*fakeJobMaster
	mu    sync.Mutex
	calls []string
}

var _ jobmaster.SavepointGateway = (*savepointJobMaster)(nil)

func (f *savepointJobMaster) record(c string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

func (f *savepointJobMaster) TriggerSavepoint(_ context.Context, dir string) (string, error) {
	f.record("TriggerSavepoint " + dir)
	return dir + "/savepoint-000000-000000000001", nil
}

func (f *savepointJobMaster) StopWithSavepoint(_ context.Context, dir string) (string, error) {
	f.record("StopWithSavepoint " + dir)
	f.end(jobgraph.JobStatusFinished)
	return dir + "/savepoint-000000-000000000002", nil
}

func (f *savepointJobMaster) TriggerCheckpoint(context.Context) (checkpoint.CheckpointID, error) {
	f.record("TriggerCheckpoint")
	return 7, nil
}

type savepointFactory struct {
	fakeFactory
	jms chan *savepointJobMaster
}

func (f *savepointFactory) Create(ctx context.Context, token jobgraph.JobMasterID) (jobmaster.JobMaster, error) {
	jm := &savepointJobMaster{fakeJobMaster: &fakeJobMaster{g: f.g, status: jobgraph.JobStatusRunning, done: make(chan struct{})}}
	f.jms <- jm
	return jm, nil
}

// The Dispatcher finds the job's runner, which finds its JobMaster, and returns what it answers;
// a job that is not running or not known gets a clear error.
func TestSavepointRequestsReachTheJobMaster(t *testing.T) {
	synctest.Test(t, testSavepointRequestsReachTheJobMaster)
}

func testSavepointRequestsReachTheJobMaster(t *testing.T) {
	services := embedded.New()
	defer services.Close()
	jms := make(chan *savepointJobMaster, 1)
	gate := make(chan struct{})
	d, err := dispatcher.New(dispatcher.Config{HA: services, JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
		return &gatedSavepointFactory{savepointFactory{fakeFactory: fakeFactory{g: g}, jms: jms}, gate}, nil
	})})
	require.NoError(t, err)
	ctx := context.Background()
	g := graph("savepoints")
	require.NoError(t, d.SubmitJob(ctx, g))

	_, err = d.TriggerSavepoint(ctx, g.JobID, "/sp")
	assert.ErrorIs(t, err, jobmaster.ErrJobNotRunning)
	assert.EqualError(t, err, "jobmaster: job "+g.JobID.String()+": savepoint: job is not RUNNING (it is INITIALIZING)")
	close(gate)
	jm := <-jms
	synctest.Wait() // the runner learnt of its JobMaster

	path, err := d.TriggerSavepoint(ctx, g.JobID, "/sp")
	require.NoError(t, err)
	assert.Equal(t, "/sp/savepoint-000000-000000000001", path)
	id, err := d.TriggerCheckpoint(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(7), id)
	path, err = d.StopWithSavepoint(ctx, g.JobID, "/other")
	require.NoError(t, err)
	assert.Equal(t, "/other/savepoint-000000-000000000002", path)
	res, err := d.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
	assert.Equal(t, []string{"TriggerSavepoint /sp", "TriggerCheckpoint", "StopWithSavepoint /other"}, jm.calls)

	_, err = d.StopWithSavepoint(ctx, g.JobID, "/sp")
	assert.ErrorIs(t, err, jobmaster.ErrJobNotRunning)
	assert.EqualError(t, err, "dispatcher: job "+g.JobID.String()+": stop-with-savepoint: job is not RUNNING (it ended FINISHED)")

	unknown := jobgraph.NewJobID()
	_, err = d.TriggerSavepoint(ctx, unknown, "/sp")
	assert.ErrorIs(t, err, dispatcher.ErrJobNotFound)
	_, err = d.TriggerCheckpoint(ctx, unknown)
	assert.ErrorIs(t, err, dispatcher.ErrJobNotFound)
	_, err = d.StopWithSavepoint(ctx, unknown, "/sp")
	assert.ErrorIs(t, err, dispatcher.ErrJobNotFound)

	require.NoError(t, d.Close())
	_, err = d.TriggerSavepoint(ctx, g.JobID, "/sp")
	assert.ErrorIs(t, err, dispatcher.ErrClosed)
}

type gatedSavepointFactory struct {
	savepointFactory
	gate chan struct{}
}

func (f *gatedSavepointFactory) Create(ctx context.Context, token jobgraph.JobMasterID) (jobmaster.JobMaster, error) {
	select {
	case <-f.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return f.savepointFactory.Create(ctx, token)
}

// A JobMaster or runner of a host that has no savepoint methods makes the request fail with
// errors.ErrUnsupported, naming its type.
func TestSavepointsOfAHostWithoutThemAreUnsupported(t *testing.T) {
	synctest.Test(t, testSavepointsOfAHostWithoutThemAreUnsupported)
}

func testSavepointsOfAHostWithoutThemAreUnsupported(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	g := graph("no savepoints")
	require.NoError(t, f.d.SubmitJob(ctx, g))
	<-f.jms
	synctest.Wait()
	_, err := f.d.TriggerSavepoint(ctx, g.JobID, "/sp")
	assert.ErrorIs(t, err, errors.ErrUnsupported)
	assert.ErrorContains(t, err, "its JobMaster (*dispatcher_test.fakeJobMaster) takes no savepoints or checkpoints")

	services := embedded.New()
	defer services.Close()
	d, err := dispatcher.New(dispatcher.Config{HA: services, JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
		return &fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}, nil
	}})
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.SubmitJob(ctx, g))
	_, err = d.TriggerCheckpoint(ctx, g.JobID)
	assert.ErrorIs(t, err, errors.ErrUnsupported)
	assert.ErrorContains(t, err, "its JobManagerRunner (*dispatcher_test.fakeRunner) takes no savepoints or checkpoints")
	require.NoError(t, d.CancelJob(ctx, g.JobID))
}
