package dispatcher_test

import (
	"context"
	"errors"
	"sync/atomic"
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
	"github.com/jobgraph/jobgraph/rpc"
)

// New refuses a Config that would fail every job, naming the field and Flink's option key.
func TestNewChecksConfig(t *testing.T) {
	services := embedded.New()
	defer services.Close()
	runners := func(*jobgraph.JobGraph, ha.Services) (jobmaster.JobManagerRunner, error) { return nil, nil }
	for _, tc := range []struct {
		name string
		cfg  dispatcher.Config
		want string
	}{
		{"no HA", dispatcher.Config{JobManagerRunnerFactory: runners},
			"dispatcher: invalid configuration: Config.HA is required"},
		{"no runner factory", dispatcher.Config{HA: services},
			"dispatcher: invalid configuration: Config.JobManagerRunnerFactory is required"},
		{"negative jobstore.max-capacity", dispatcher.Config{HA: services, JobManagerRunnerFactory: runners, JobStoreMaxCapacity: -1},
			"dispatcher: invalid configuration: JobStoreMaxCapacity (jobstore.max-capacity) is -1, negative (0 means unlimited)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := dispatcher.New(tc.cfg)
			assert.Nil(t, d)
			require.ErrorIs(t, err, dispatcher.ErrInvalidConfig)
			assert.EqualError(t, err, tc.want)
		})
	}
}

// SubmitJob(ctx, nil) is an invalid job graph, not a panic, and leaves the Dispatcher as it was.
func TestSubmitNilJobGraph(t *testing.T) {
	f := newFixture(t)
	err := f.d.SubmitJob(context.Background(), nil)
	require.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph)
	assert.EqualError(t, err, "dispatcher: SubmitJob: invalid job graph: the job graph is nil")
	jobs, err := f.d.ListJobs(context.Background())
	require.NoError(t, err)
	assert.Empty(t, jobs)
}

// A submission rejected for bad input — an invalid graph under the JobID of a running job, a
// duplicate, or one whose runner cannot be built — never touches the job already running under
// that JobID: its stored graph, its status, its JobMaster.
func TestRejectedSubmissionLeavesRunningJobAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		jms := make(chan *fakeJobMaster, 4)
		boom := errors.New("no runner for this one")
		var created int
		d, err := dispatcher.New(dispatcher.Config{HA: services, JobManagerRunnerFactory: func(g *jobgraph.JobGraph, s ha.Services) (jobmaster.JobManagerRunner, error) {
			if g.Name == "unbuildable" {
				return nil, boom
			}
			created++
			return dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
				return &fakeFactory{g: g, created: new(atomic.Int32), last: jms}, nil
			})(g, s)
		}})
		require.NoError(t, err)
		ctx := context.Background()
		g := graph("original")
		require.NoError(t, d.SubmitJob(ctx, g))
		jm := <-jms
		synctest.Wait()

		invalid := jobgraph.New("invalid", jobgraph.Batch) // no vertices
		invalid.JobID = g.JobID
		err = d.SubmitJob(ctx, invalid)
		var ve *jobgraph.ValidationError
		require.ErrorAs(t, err, &ve)

		dup := graph("duplicate")
		dup.JobID = g.JobID
		require.ErrorIs(t, d.SubmitJob(ctx, dup), dispatcher.ErrDuplicateJobSubmission)

		other := graph("unbuildable")
		err = d.SubmitJob(ctx, other)
		require.ErrorIs(t, err, boom)
		_, err = services.ExecutionPlanStore().Get(ctx, other.JobID)
		require.ErrorIs(t, err, ha.ErrNotFound, "nothing kept of the rejected job")

		stored, err := services.ExecutionPlanStore().Get(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, "original", stored.Name)
		st, err := d.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, st)
		assert.Equal(t, 1, created, "one runner, the original's")
		jobs, err := d.ListJobs(ctx)
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		assert.Equal(t, "original", jobs[0].Name)

		jm.end(jobgraph.JobStatusFinished)
		res, err := d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		require.NoError(t, d.Close())
		require.NoError(t, services.Close())
	})
}

// A finished job is listed with the instant it was submitted as its StartTime (its INITIALIZING
// timestamp), not the zero time's -62135596800000, and its archived graph records that instant
// as INITIALIZING.
func TestListJobsStartTimeOfFinishedJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		submitted := time.Now()
		g := graph("finished")
		require.NoError(t, f.d.SubmitJob(ctx, g))
		jm := <-f.jms
		time.Sleep(time.Minute)
		jm.end(jobgraph.JobStatusFinished)
		_, err := f.d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		jobs, err := f.d.ListJobs(ctx)
		require.NoError(t, err)
		assert.Equal(t, []rpc.JobStatusMessage{{JobID: g.JobID, Name: "finished", Status: jobgraph.JobStatusFinished, StartTime: submitted.UnixMilli()}}, jobs)
		a, err := f.d.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		assert.True(t, a.StatusTimestamp(jobgraph.JobStatusInitializing).Equal(submitted))
	})
}
