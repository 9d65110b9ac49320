package dispatcher_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeJobMaster is a JobMaster whose job ends when the test says so.
type fakeJobMaster struct {
	g      *jobgraph.JobGraph
	mu     sync.Mutex
	status jobgraph.JobStatus
	done   chan struct{}
	result jobmaster.Result
}

func (f *fakeJobMaster) Address() string               { return "fake/" + f.g.JobID.String() }
func (f *fakeJobMaster) Gateway() rpc.JobMasterGateway { return nil }
func (f *fakeJobMaster) Done() <-chan struct{}         { return f.done }
func (f *fakeJobMaster) Result() jobmaster.Result      { <-f.done; return f.result }

func (f *fakeJobMaster) archive(status jobgraph.JobStatus) *executiongraph.ArchivedExecutionGraph {
	return executiongraph.NewSparseArchivedExecutionGraph(f.g.JobID, f.g.Name, f.g.Type, status, nil, time.Now(), time.Now())
}

// end finishes the job with status (once).
func (f *fakeJobMaster) end(status jobgraph.JobStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.status.IsTerminal() {
		return
	}
	f.status = status
	f.result = jobmaster.Result{Archived: f.archive(status)}
	close(f.done)
}

func (f *fakeJobMaster) Cancel(ctx context.Context) error {
	f.mu.Lock()
	f.status = jobgraph.JobStatusCancelling
	f.mu.Unlock()
	f.end(jobgraph.JobStatusCanceled)
	return nil
}

func (f *fakeJobMaster) RequestJobStatus(ctx context.Context) (jobgraph.JobStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, nil
}

func (f *fakeJobMaster) RequestJob(ctx context.Context) (*executiongraph.ArchivedExecutionGraph, error) {
	s, _ := f.RequestJobStatus(ctx)
	return f.archive(s), nil
}

func (f *fakeJobMaster) Close() *executiongraph.ArchivedExecutionGraph {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.status.IsTerminal() {
		f.status = jobgraph.JobStatusSuspended
	}
	return f.archive(f.status)
}

// fakeFactory counts JobMasters and can hold Create until released.
type fakeFactory struct {
	g       *jobgraph.JobGraph
	created *atomic.Int32
	gate    chan struct{} // nil: Create returns at once
	last    chan *fakeJobMaster
}

func (f *fakeFactory) JobID() jobgraph.JobID     { return f.g.JobID }
func (f *fakeFactory) JobName() string           { return f.g.Name }
func (f *fakeFactory) JobType() jobgraph.JobType { return f.g.Type }
func (f *fakeFactory) Create(ctx context.Context, token jobgraph.JobMasterID) (jobmaster.JobMaster, error) {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.created.Add(1)
	jm := &fakeJobMaster{g: f.g, status: jobgraph.JobStatusRunning, done: make(chan struct{})}
	f.last <- jm
	return jm, nil
}

type fixture struct {
	d       *dispatcher.StandaloneDispatcher
	ha      *embedded.Services
	created atomic.Int32
	gate    chan struct{}
	jms     chan *fakeJobMaster
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{ha: embedded.New(), jms: make(chan *fakeJobMaster, 16)}
	d, err := dispatcher.New(dispatcher.Config{HA: f.ha, JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
		return &fakeFactory{g: g, created: &f.created, gate: f.gate, last: f.jms}, nil
	})})
	require.NoError(t, err)
	f.d = d
	t.Cleanup(func() {
		require.NoError(t, d.Close())
		require.NoError(t, f.ha.Close())
	})
	return f
}

func graph(name string) *jobgraph.JobGraph {
	g := jobgraph.New(name, jobgraph.Batch)
	g.AddVertex("v", "noop", 1)
	return g
}

func TestSubmitRunningJobIDIsDuplicateAndLeavesTheJobAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		g := graph("original")
		require.NoError(t, f.d.SubmitJob(ctx, g))
		jm := <-f.jms
		synctest.Wait() // the runner has the JobMaster: RUNNING

		again := graph("impostor")
		again.JobID = g.JobID
		err := f.d.SubmitJob(ctx, again)
		var dup *dispatcher.DuplicateJobSubmissionError
		require.ErrorAs(t, err, &dup)
		assert.ErrorIs(t, err, dispatcher.ErrDuplicateJobSubmission)
		assert.False(t, dup.GloballyTerminated)
		assert.Equal(t, g.JobID, dup.JobID)

		stored, err := f.ha.ExecutionPlanStore().Get(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, "original", stored.Name)
		status, err := f.d.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, status)
		assert.Equal(t, int32(1), f.created.Load())

		jm.end(jobgraph.JobStatusFinished)
		res, err := f.d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		assert.Equal(t, "original", res.Name)
	})
}

func TestSubmitJobIDInJobResultStoreIsGloballyTerminatedDuplicate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		g := graph("done elsewhere")
		require.NoError(t, f.ha.JobResultStore().CreateDirty(ctx, jobgraph.JobResult{JobID: g.JobID, Status: jobgraph.JobStatusFinished}))

		err := f.d.SubmitJob(ctx, g)
		var dup *dispatcher.DuplicateJobSubmissionError
		require.ErrorAs(t, err, &dup)
		assert.True(t, dup.GloballyTerminated)
		ids, err := f.ha.ExecutionPlanStore().JobIDs(ctx)
		require.NoError(t, err)
		assert.Empty(t, ids)
		assert.Equal(t, int32(0), f.created.Load())

		// A job that finished on this Dispatcher is a globally terminated duplicate too.
		g2 := graph("finished here")
		require.NoError(t, f.d.SubmitJob(ctx, g2))
		(<-f.jms).end(jobgraph.JobStatusFinished)
		_, err = f.d.RequestJobResult(ctx, g2.JobID)
		require.NoError(t, err)
		err = f.d.SubmitJob(ctx, g2)
		require.ErrorAs(t, err, &dup)
		assert.True(t, dup.GloballyTerminated)
	})
}

func TestConcurrentSubmissionsOfOneJobID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		g := graph("racy")
		errs := make([]error, 5)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = f.d.SubmitJob(context.Background(), g) })
		}
		wg.Wait()
		synctest.Wait()
		dups := 0
		for _, err := range errs {
			if err != nil {
				require.ErrorIs(t, err, dispatcher.ErrDuplicateJobSubmission)
				var dup *dispatcher.DuplicateJobSubmissionError
				require.ErrorAs(t, err, &dup)
				assert.False(t, dup.GloballyTerminated)
				dups++
			}
		}
		assert.Equal(t, 4, dups)
		assert.Equal(t, int32(1), f.created.Load())
	})
}

func TestInvalidGraphIsRejectedAndNothingPersisted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		g := graph("bad")
		g.Vertices[0].Parallelism = 0
		err := f.d.SubmitJob(context.Background(), g)
		var verr *jobgraph.ValidationError
		require.ErrorAs(t, err, &verr)
		assert.Equal(t, jobgraph.RuleParallelism, verr.Rule)
		assert.Equal(t, g.Vertices[0].ID, verr.Vertex)
		ids, err := f.ha.ExecutionPlanStore().JobIDs(context.Background())
		require.NoError(t, err)
		assert.Empty(t, ids)
		_, err = f.d.RequestJobStatus(context.Background(), g.JobID)
		assert.ErrorIs(t, err, dispatcher.ErrJobNotFound)
	})
}

func TestCancelDuringInitialization(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		f.gate = make(chan struct{})
		ctx := context.Background()
		g := graph("slow start")
		require.NoError(t, f.d.SubmitJob(ctx, g))
		synctest.Wait()
		status, err := f.d.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusInitializing, status)

		require.NoError(t, f.d.CancelJob(ctx, g.JobID))
		status, err = f.d.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCancelling, status)

		close(f.gate) // the JobMaster comes up and is canceled at once
		res, err := f.d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	})
}

func TestCancelTerminatedAndUnknownJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()

		finished := graph("finished")
		require.NoError(t, f.d.SubmitJob(ctx, finished))
		(<-f.jms).end(jobgraph.JobStatusFinished)
		_, err := f.d.RequestJobResult(ctx, finished.JobID)
		require.NoError(t, err)
		err = f.d.CancelJob(ctx, finished.JobID)
		require.ErrorIs(t, err, dispatcher.ErrJobAlreadyTerminated)
		assert.Contains(t, err.Error(), "FINISHED")

		canceled := graph("canceled")
		require.NoError(t, f.d.SubmitJob(ctx, canceled))
		<-f.jms
		require.NoError(t, f.d.CancelJob(ctx, canceled.JobID))
		res, err := f.d.RequestJobResult(ctx, canceled.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		assert.NoError(t, f.d.CancelJob(ctx, canceled.JobID), "canceling a CANCELED job is a no-op")

		unknown := jobgraph.NewJobID()
		_, err = f.d.RequestJobStatus(ctx, unknown)
		assert.ErrorIs(t, err, dispatcher.ErrJobNotFound)
		_, err = f.d.RequestJobResult(ctx, unknown)
		assert.ErrorIs(t, err, dispatcher.ErrJobNotFound)
		assert.ErrorIs(t, f.d.CancelJob(ctx, unknown), dispatcher.ErrJobNotFound)
	})
}

func TestGloballyTerminatedJobIsCleanedUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		g := graph("cleanup")
		require.NoError(t, f.d.SubmitJob(ctx, g))
		_, err := f.ha.ExecutionPlanStore().Get(ctx, g.JobID)
		require.NoError(t, err, "persisted before it runs")
		(<-f.jms).end(jobgraph.JobStatusFinished)
		_, err = f.d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		entry, err := f.ha.JobResultStore().Get(ctx, g.JobID)
		require.NoError(t, err)
		assert.True(t, entry.Clean)
		assert.Equal(t, jobgraph.JobStatusFinished, entry.Result.Status)
		_, err = f.ha.ExecutionPlanStore().Get(ctx, g.JobID)
		assert.True(t, errors.Is(err, ha.ErrNotFound))
	})
}

func TestCloseSuspendsRunningJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		haServices := embedded.New()
		jms := make(chan *fakeJobMaster, 1)
		var created atomic.Int32
		d, err := dispatcher.New(dispatcher.Config{HA: haServices, JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
			return &fakeFactory{g: g, created: &created, last: jms}, nil
		})})
		require.NoError(t, err)
		ctx := context.Background()
		g := graph("long running")
		require.NoError(t, d.SubmitJob(ctx, g))
		<-jms
		type answer struct {
			res *jobgraph.JobResult
			err error
		}
		pending := make(chan answer, 1)
		go func() {
			res, err := d.RequestJobResult(ctx, g.JobID)
			pending <- answer{res, err}
		}()
		synctest.Wait()
		require.NoError(t, d.Close())
		a := <-pending
		require.NoError(t, a.err)
		assert.Equal(t, jobgraph.JobStatusSuspended, a.res.Status)
		// Suspended jobs keep their plan for recovery and get no JobResultStore entry.
		_, err = haServices.ExecutionPlanStore().Get(ctx, g.JobID)
		assert.NoError(t, err)
		_, err = haServices.JobResultStore().Get(ctx, g.JobID)
		assert.ErrorIs(t, err, ha.ErrNotFound)
		require.ErrorIs(t, d.SubmitJob(ctx, graph("late")), dispatcher.ErrClosed)
		require.NoError(t, haServices.Close())
	})
}

func TestListJobsAndRequestJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		done := graph("done")
		require.NoError(t, f.d.SubmitJob(ctx, done))
		(<-f.jms).end(jobgraph.JobStatusFinished)
		_, err := f.d.RequestJobResult(ctx, done.JobID)
		require.NoError(t, err)
		running := graph("running")
		submitted := time.Now()
		require.NoError(t, f.d.SubmitJob(ctx, running))
		jm := <-f.jms
		// The fake hands its JobMaster over inside Create, before the runner has it: the job
		// is INITIALIZING until the process reports the JobMaster to the runner's loop. Wait
		// for that (it was the ~1 in 300 flake: ListJobs ran first and saw INITIALIZING).
		synctest.Wait()

		jobs, err := f.d.ListJobs(ctx)
		require.NoError(t, err)
		require.Len(t, jobs, 2)
		assert.Equal(t, running.JobID, jobs[0].JobID, "running jobs first")
		assert.Equal(t, "running", jobs[0].Name)
		assert.Equal(t, jobgraph.JobStatusRunning, jobs[0].Status)
		assert.Equal(t, done.JobID, jobs[1].JobID)
		assert.Equal(t, jobgraph.JobStatusFinished, jobs[1].Status)

		time.Sleep(time.Second)
		live, err := f.d.RequestJob(ctx, running.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, live.Status)
		assert.Equal(t, submitted, live.StatusTimestamp(jobgraph.JobStatusInitializing),
			"a running job's graph is INITIALIZING from its submission, as its archive will be")
		archived, err := f.d.RequestJob(ctx, done.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, archived.Status)
		_, err = f.d.RequestJob(ctx, jobgraph.NewJobID())
		assert.ErrorIs(t, err, dispatcher.ErrJobNotFound)

		jm.end(jobgraph.JobStatusFinished)
	})
}

func TestRequestJobResultEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		g := graph("slow")
		require.NoError(t, f.d.SubmitJob(context.Background(), g))
		jm := <-f.jms
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		_, err := f.d.RequestJobResult(ctx, g.JobID)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Minute, time.Since(start), "it waited exactly until the deadline")
		jm.end(jobgraph.JobStatusFinished)
	})
}
