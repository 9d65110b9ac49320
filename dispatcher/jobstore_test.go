package dispatcher_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// evictions records the Dispatcher's eviction log lines, so a test sees that the expiry timer
// evicted a job without asking the Dispatcher (which would evict an expired job on its own).
type evictions struct {
	mu   sync.Mutex
	msgs []string
	jobs []jobgraph.JobID
}

func (e *evictions) Enabled(context.Context, slog.Level) bool { return true }
func (e *evictions) WithAttrs([]slog.Attr) slog.Handler       { return e }
func (e *evictions) WithGroup(string) slog.Handler            { return e }
func (e *evictions) Handle(_ context.Context, r slog.Record) error {
	var job jobgraph.JobID
	evicted := false
	r.Attrs(func(a slog.Attr) bool {
		if id, ok := a.Value.Any().(jobgraph.JobID); ok && a.Key == "job" {
			job = id
		}
		return true
	})
	switch r.Message {
	case "archived job expired: jobstore.expiration-time passed", "archived job evicted: jobstore.max-capacity reached":
		evicted = true
	}
	if evicted {
		e.mu.Lock()
		e.msgs = append(e.msgs, r.Message)
		e.jobs = append(e.jobs, job)
		e.mu.Unlock()
	}
	return nil
}

func (e *evictions) evicted() []jobgraph.JobID {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]jobgraph.JobID(nil), e.jobs...)
}

// slowCloseJobMaster is a fakeJobMaster whose Close waits for gate: a Dispatcher closing it
// keeps serving calls meanwhile.
type slowCloseJobMaster struct {
	*fakeJobMaster
	gate chan struct{}
}

func (s *slowCloseJobMaster) Close() *executiongraph.ArchivedExecutionGraph {
	<-s.gate
	return s.fakeJobMaster.Close()
}

type slowCloseFactory struct {
	*fakeFactory
	gate chan struct{}
}

func (f *slowCloseFactory) Create(ctx context.Context, token jobgraph.JobMasterID) (jobmaster.JobMaster, error) {
	svc, err := f.fakeFactory.Create(ctx, token)
	if err != nil {
		return nil, err
	}
	return &slowCloseJobMaster{fakeJobMaster: svc.(*fakeJobMaster), gate: f.gate}, nil
}

// storeFixture is a Dispatcher with the given job store bounds. A graph named "slow to close"
// gets a JobMaster whose Close waits for slowClose.
type storeFixture struct {
	fixture
	log       *evictions
	slowClose chan struct{}
}

func newStoreFixture(t *testing.T, expiration time.Duration, capacity int) *storeFixture {
	f := &storeFixture{log: &evictions{}, slowClose: make(chan struct{})}
	f.ha = embedded.New()
	f.jms = make(chan *fakeJobMaster, 16)
	d, err := dispatcher.New(dispatcher.Config{
		HA:                  f.ha,
		Logger:              slog.New(f.log),
		JobStoreExpiration:  expiration,
		JobStoreMaxCapacity: capacity,
		JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
			ff := &fakeFactory{g: g, created: &f.created, last: f.jms}
			if g.Name == "slow to close" {
				return &slowCloseFactory{fakeFactory: ff, gate: f.slowClose}, nil
			}
			return ff, nil
		}),
	})
	require.NoError(t, err)
	f.d = d
	t.Cleanup(func() {
		require.NoError(t, d.Close())
		require.NoError(t, f.ha.Close())
	})
	return f
}

// finish submits a job named name that ends with status after runFor, and returns its result.
// The job is archived at the instant finish returns.
func (f *storeFixture) finish(t *testing.T, name string, status jobgraph.JobStatus, runFor time.Duration) (*jobgraph.JobGraph, *jobgraph.JobResult) {
	t.Helper()
	ctx := context.Background()
	g := graph(name)
	require.NoError(t, f.d.SubmitJob(ctx, g))
	jm := <-f.jms
	time.Sleep(runFor)
	jm.end(status)
	res, err := f.d.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	require.Equal(t, status, res.Status)
	return g, res
}

// archived reports whether the Dispatcher still has the job's ArchivedExecutionGraph.
func archived(t *testing.T, d *dispatcher.StandaloneDispatcher, id jobgraph.JobID) bool {
	t.Helper()
	a, err := d.RequestJob(context.Background(), id)
	if err != nil {
		require.ErrorIs(t, err, dispatcher.ErrJobNotFound)
		assert.Contains(t, err.Error(), "is not in this Dispatcher's job store: it expired")
		return false
	}
	assert.Equal(t, id, a.JobID)
	return true
}

func listed(t *testing.T, d *dispatcher.StandaloneDispatcher) []jobgraph.JobID {
	t.Helper()
	jobs, err := d.ListJobs(context.Background())
	require.NoError(t, err)
	ids := []jobgraph.JobID{}
	for _, j := range jobs {
		ids = append(ids, j.JobID)
	}
	return ids
}

func TestFinishedJobIsArchivedForExactlyTheDefaultHour(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newStoreFixture(t, 0, 0)
		ctx := context.Background()
		g, res := f.finish(t, "hourly", jobgraph.JobStatusFinished, 3*time.Second)
		archivedAt := time.Now()
		assert.Equal(t, 3*time.Second, res.NetRuntime)

		time.Sleep(dispatcher.DefaultJobStoreExpiration - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, f.log.evicted())
		assert.True(t, archived(t, f.d, g.JobID), "archived at expiration − 1 ns")
		assert.Equal(t, []jobgraph.JobID{g.JobID}, listed(t, f.d))

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, time.Hour, time.Since(archivedAt))
		assert.Equal(t, []jobgraph.JobID{g.JobID}, f.log.evicted(), "the expiry timer evicted it, unasked")
		assert.False(t, archived(t, f.d, g.JobID), "gone at expiration")
		assert.Equal(t, []jobgraph.JobID{}, listed(t, f.d), "ListJobs lists only archived jobs")

		// The JobResultStore answers for it.
		status, err := f.d.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, status)
		again, err := f.d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, *res, *again)
		assert.Equal(t, jobgraph.JobResult{JobID: g.JobID, Name: "hourly", Status: jobgraph.JobStatusFinished, NetRuntime: 3 * time.Second}, *again)
		err = f.d.CancelJob(ctx, g.JobID)
		require.ErrorIs(t, err, dispatcher.ErrJobAlreadyTerminated)
		assert.Contains(t, err.Error(), "FINISHED")

		// Resubmission stays a globally terminated duplicate, and nothing runs.
		err = f.d.SubmitJob(ctx, g)
		var dup *dispatcher.DuplicateJobSubmissionError
		require.ErrorAs(t, err, &dup)
		assert.Equal(t, dispatcher.DuplicateJobSubmissionError{JobID: g.JobID, GloballyTerminated: true}, *dup)
		assert.Equal(t, int32(1), f.created.Load())
		ids, err := f.ha.ExecutionPlanStore().JobIDs(ctx)
		require.NoError(t, err)
		assert.Empty(t, ids)
	})
}

func TestConfiguredExpirationAndAnswersAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const expiration = 10 * time.Minute
		f := newStoreFixture(t, expiration, 0)
		ctx := context.Background()

		failed, failedRes := f.finish(t, "failed", jobgraph.JobStatusFailed, time.Second)
		canceledAt := time.Now().Add(time.Minute)
		canceled := graph("canceled")
		require.NoError(t, f.d.SubmitJob(ctx, canceled))
		<-f.jms
		time.Sleep(time.Minute)
		require.NoError(t, f.d.CancelJob(ctx, canceled.JobID))
		canceledRes, err := f.d.RequestJobResult(ctx, canceled.JobID)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusCanceled, canceledRes.Status)
		require.Equal(t, canceledAt, time.Now())

		// failed was archived 1 min before canceled: each expires exactly `expiration` after
		// its own archiving.
		time.Sleep(expiration - time.Minute - time.Nanosecond)
		synctest.Wait()
		assert.True(t, archived(t, f.d, failed.JobID))
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.False(t, archived(t, f.d, failed.JobID))
		assert.True(t, archived(t, f.d, canceled.JobID))
		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		assert.True(t, archived(t, f.d, canceled.JobID))
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, expiration, time.Since(canceledAt))
		assert.Equal(t, []jobgraph.JobID{failed.JobID, canceled.JobID}, f.log.evicted())
		assert.False(t, archived(t, f.d, canceled.JobID))

		for _, c := range []struct {
			g   *jobgraph.JobGraph
			res *jobgraph.JobResult
		}{{failed, failedRes}, {canceled, canceledRes}} {
			status, err := f.d.RequestJobStatus(ctx, c.g.JobID)
			require.NoError(t, err)
			assert.Equal(t, c.res.Status, status)
			res, err := f.d.RequestJobResult(ctx, c.g.JobID)
			require.NoError(t, err)
			assert.Equal(t, *c.res, *res)
			var dup *dispatcher.DuplicateJobSubmissionError
			require.ErrorAs(t, f.d.SubmitJob(ctx, c.g), &dup)
			assert.True(t, dup.GloballyTerminated)
		}
		err = f.d.CancelJob(ctx, failed.JobID)
		require.ErrorIs(t, err, dispatcher.ErrJobAlreadyTerminated)
		assert.Contains(t, err.Error(), "FAILED")
		assert.NoError(t, f.d.CancelJob(ctx, canceled.JobID), "canceling a CANCELED job stays a no-op")
		assert.Equal(t, int32(2), f.created.Load())

		// A JobID never seen is still not found.
		unknown := jobgraph.NewJobID()
		_, err = f.d.RequestJob(ctx, unknown)
		require.ErrorIs(t, err, dispatcher.ErrJobNotFound)
		assert.NotContains(t, err.Error(), "expired")
		_, err = f.d.RequestJobStatus(ctx, unknown)
		assert.ErrorIs(t, err, dispatcher.ErrJobNotFound)
		_, err = f.d.RequestJobResult(ctx, unknown)
		assert.ErrorIs(t, err, dispatcher.ErrJobNotFound)
		assert.ErrorIs(t, f.d.CancelJob(ctx, unknown), dispatcher.ErrJobNotFound)
	})
}

func TestMaxCapacityKeepsTheNewestArchivedJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newStoreFixture(t, 0, 2)
		ctx := context.Background()
		start := time.Now()
		first, firstRes := f.finish(t, "first", jobgraph.JobStatusFinished, time.Second)
		second, _ := f.finish(t, "second", jobgraph.JobStatusFinished, time.Second)
		assert.Empty(t, f.log.evicted())
		third, _ := f.finish(t, "third", jobgraph.JobStatusFinished, time.Second)
		assert.Equal(t, []jobgraph.JobID{first.JobID}, f.log.evicted())

		assert.False(t, archived(t, f.d, first.JobID))
		assert.True(t, archived(t, f.d, second.JobID))
		assert.True(t, archived(t, f.d, third.JobID))
		assert.ElementsMatch(t, []jobgraph.JobID{second.JobID, third.JobID}, listed(t, f.d))

		res, err := f.d.RequestJobResult(ctx, first.JobID)
		require.NoError(t, err)
		assert.Equal(t, *firstRes, *res)
		var dup *dispatcher.DuplicateJobSubmissionError
		require.ErrorAs(t, f.d.SubmitJob(ctx, first), &dup)
		assert.True(t, dup.GloballyTerminated)

		// The expiry timer armed for first finds it gone and moves on to second, archived at
		// start+2s, which expires at start+2s+1h exactly; third at start+3s+1h.
		time.Sleep(time.Until(start.Add(2*time.Second + time.Hour - time.Nanosecond)))
		synctest.Wait()
		assert.True(t, archived(t, f.d, second.JobID))
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, []jobgraph.JobID{first.JobID, second.JobID}, f.log.evicted())
		time.Sleep(time.Second - time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, []jobgraph.JobID{third.JobID}, listed(t, f.d))
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, []jobgraph.JobID{first.JobID, second.JobID, third.JobID}, f.log.evicted())
		assert.Equal(t, []jobgraph.JobID{}, listed(t, f.d))
	})
}

func TestNegativeExpirationNeverExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newStoreFixture(t, -1, 0)
		g, _ := f.finish(t, "kept", jobgraph.JobStatusFinished, 0)
		time.Sleep(10_000 * time.Hour)
		synctest.Wait()
		assert.True(t, archived(t, f.d, g.JobID))
		assert.Empty(t, f.log.evicted())
	})
}

// Jobs the closing Dispatcher suspends are archived outside the bounds: they neither count
// towards the capacity nor expire (the JobResultStore has nothing to answer for them with).
func TestSuspendedJobsAreNotBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newStoreFixture(t, 0, 1)
		ctx := context.Background()
		finished, finishedRes := f.finish(t, "finished", jobgraph.JobStatusFinished, 0)

		suspended := graph("suspended")
		require.NoError(t, f.d.SubmitJob(ctx, suspended))
		<-f.jms
		slow := graph("slow to close")
		require.NoError(t, f.d.SubmitJob(ctx, slow))
		<-f.jms
		type answer struct {
			res *jobgraph.JobResult
			err error
		}
		pending := make(chan answer, 1)
		go func() {
			res, err := f.d.RequestJobResult(ctx, suspended.JobID)
			pending <- answer{res, err}
		}()
		synctest.Wait()

		closed := make(chan error, 1)
		go func() { closed <- f.d.Close() }()
		a := <-pending // suspended is archived; slow's JobMaster is still closing
		require.NoError(t, a.err)
		assert.Equal(t, jobgraph.JobStatusSuspended, a.res.Status)
		synctest.Wait()
		assert.Empty(t, f.log.evicted(), "a SUSPENDED job does not count towards the capacity")
		assert.True(t, archived(t, f.d, finished.JobID))
		assert.True(t, archived(t, f.d, suspended.JobID))

		time.Sleep(2 * time.Hour)
		synctest.Wait()
		assert.Equal(t, []jobgraph.JobID{finished.JobID}, f.log.evicted(), "the FINISHED job still expires")
		assert.False(t, archived(t, f.d, finished.JobID))
		res, err := f.d.RequestJobResult(ctx, finished.JobID)
		require.NoError(t, err)
		assert.Equal(t, *finishedRes, *res)
		assert.True(t, archived(t, f.d, suspended.JobID), "a SUSPENDED job does not expire")
		status, err := f.d.RequestJobStatus(ctx, suspended.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusSuspended, status)
		res, err = f.d.RequestJobResult(ctx, suspended.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusSuspended, res.Status)

		close(f.slowClose)
		require.NoError(t, <-closed)
	})
}

// With the archive and the embedded JobResultStore both bounded, what a finished job leaves is
// bounded too: a job evicted from both is not found, and its JobID can be submitted again.
func TestBoundedArchiveAndResultStoreForgetOldJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services, err := embedded.NewWithOptions(embedded.Options{MaxCleanResults: 1})
		require.NoError(t, err)
		jms := make(chan *fakeJobMaster, 4)
		var created atomic.Int32
		d, err := dispatcher.New(dispatcher.Config{HA: services, JobStoreMaxCapacity: 1,
			JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
				return &fakeFactory{g: g, created: &created, last: jms}, nil
			})})
		require.NoError(t, err)
		ctx := context.Background()
		run := func(g *jobgraph.JobGraph) {
			require.NoError(t, d.SubmitJob(ctx, g))
			(<-jms).end(jobgraph.JobStatusFinished)
			res, err := d.RequestJobResult(ctx, g.JobID)
			require.NoError(t, err)
			require.Equal(t, jobgraph.JobStatusFinished, res.Status)
		}
		first, second := graph("first"), graph("second")
		run(first)
		run(second) // evicts first from the archive and from the JobResultStore

		_, err = d.RequestJobStatus(ctx, first.JobID)
		require.ErrorIs(t, err, dispatcher.ErrJobNotFound)
		_, err = services.JobResultStore().Get(ctx, first.JobID)
		require.ErrorIs(t, err, ha.ErrNotFound)
		st, err := d.RequestJobStatus(ctx, second.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, st)

		again := graph("first again")
		again.JobID = first.JobID
		run(again)
		assert.Equal(t, int32(3), created.Load())
		require.NoError(t, d.Close())
		require.NoError(t, services.Close())
	})
}

// A job whose result the JobResultStore holds from an earlier Dispatcher (this one never ran it,
// so its job store never had the graph) is job-not-found for RequestJob, with a message that
// names both ways a graph leaves the job store, not only the expiry; its status is still
// answered from the JobResultStore.
func TestRequestJobOfAJobAnEarlierDispatcherRanSaysSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newStoreFixture(t, time.Hour, 0)
		ctx := context.Background()
		id := jobgraph.NewJobID()
		store := f.ha.JobResultStore()
		require.NoError(t, store.CreateDirty(ctx, jobgraph.JobResult{JobID: id, Name: "earlier", Status: jobgraph.JobStatusFinished}))
		require.NoError(t, store.MarkClean(ctx, id))
		_, err := f.d.RequestJob(ctx, id)
		require.ErrorIs(t, err, dispatcher.ErrJobNotFound)
		assert.Equal(t, "job not found: job "+id.String()+" ended with status FINISHED, and its archived execution graph is not in this Dispatcher's job store: it expired (jobstore.expiration-time, jobstore.max-capacity), or the job ended under an earlier Dispatcher, whose job store was its own", err.Error())
		status, err := f.d.RequestJobStatus(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, status)
	})
}
