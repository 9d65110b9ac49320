package dispatcher_test

import (
	"context"
	"fmt"
	"sync"
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

// events is the order of what the runners of one test did.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, fmt.Sprintf(format, args...))
}

func (e *events) snapshot() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.log...)
}

// slowClosingRunner ends with the status given to end (SUSPENDED: as a host's runner may on its
// own) and its Close blocks until release is closed, as a runner whose shutdown takes time.
type slowClosingRunner struct {
	n       int
	g       *jobgraph.JobGraph
	ev      *events
	done    chan struct{}
	release chan struct{}

	mu     sync.Mutex
	status jobgraph.JobStatus
}

var _ jobmaster.JobManagerRunner = (*slowClosingRunner)(nil)

func (r *slowClosingRunner) Start() error {
	r.ev.add("runner %d Start (%s)", r.n, r.g.Name)
	r.mu.Lock()
	r.status = jobgraph.JobStatusRunning
	r.mu.Unlock()
	return nil
}
func (r *slowClosingRunner) end(status jobgraph.JobStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status.IsTerminal() {
		return
	}
	r.status = status
	close(r.done)
}
func (r *slowClosingRunner) JobID() jobgraph.JobID { return r.g.JobID }
func (r *slowClosingRunner) Done() <-chan struct{} { return r.done }
func (r *slowClosingRunner) Result() jobmaster.Result {
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return jobmaster.Result{Archived: executiongraph.NewSparseArchivedExecutionGraph(r.g.JobID, r.g.Name, r.g.Type, r.status, nil, time.Now(), time.Now())}
}
func (r *slowClosingRunner) Cancel(context.Context) error {
	r.end(jobgraph.JobStatusCanceled)
	return nil
}
func (r *slowClosingRunner) RequestJobStatus(context.Context) (jobgraph.JobStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, nil
}
func (r *slowClosingRunner) RequestJob(context.Context) (*executiongraph.ArchivedExecutionGraph, error) {
	st, _ := r.RequestJobStatus(context.Background())
	return executiongraph.NewSparseArchivedExecutionGraph(r.g.JobID, r.g.Name, r.g.Type, st, nil, time.Now(), time.Now()), nil
}
func (r *slowClosingRunner) Close() {
	r.ev.add("runner %d Close begins", r.n)
	<-r.release
	r.end(jobgraph.JobStatusSuspended)
	r.ev.add("runner %d Close ends", r.n)
}

// slowClosingFixture is a Dispatcher whose every runner is a slowClosingRunner; the first
// runner's Close blocks until the test releases it, the others' do not.
type slowClosingFixture struct {
	d       *dispatcher.StandaloneDispatcher
	ha      *embedded.Services
	ev      *events
	runners chan *slowClosingRunner
}

func newSlowClosingFixture(t *testing.T) *slowClosingFixture {
	f := &slowClosingFixture{ha: embedded.New(), ev: &events{}, runners: make(chan *slowClosingRunner, 4)}
	n := 0
	d, err := dispatcher.New(dispatcher.Config{HA: f.ha, JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
		n++
		f.ev.add("runner %d created (%s)", n, g.Name)
		r := &slowClosingRunner{n: n, g: g, ev: f.ev, done: make(chan struct{}), release: make(chan struct{})}
		if n > 1 {
			close(r.release)
		}
		f.runners <- r
		return r, nil
	}})
	require.NoError(t, err)
	f.d = d
	return f
}

// A submission of a JobID whose previous runner ended SUSPENDED and is still closing waits,
// off the Dispatcher's loop, until that runner's Close returned, and only then builds and starts
// the new runner: never two runners of one JobID at once. Meanwhile the loop answers: the
// JobID is INITIALIZING (the new submission), listed once, and a third submission is a duplicate
// (not globally terminated). Flink: Dispatcher.waitForTerminatingJob.
func TestSubmissionWaitsForTheTerminatingRunnerOfItsJobID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newSlowClosingFixture(t)
		ctx := context.Background()
		first := graph("first")
		require.NoError(t, f.d.SubmitJob(ctx, first))
		r1 := <-f.runners
		firstResult := make(chan *jobgraph.JobResult, 1)
		go func() {
			res, err := f.d.RequestJobResult(ctx, first.JobID)
			assert.NoError(t, err)
			firstResult <- res
		}()
		synctest.Wait()

		r1.end(jobgraph.JobStatusSuspended) // its shutdown now begins, and is held
		synctest.Wait()
		assert.Equal(t, []string{"runner 1 created (first)", "runner 1 Start (first)", "runner 1 Close begins"}, f.ev.snapshot())
		st, err := f.d.RequestJobStatus(ctx, first.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusSuspended, st, "the terminating job answers its outcome")

		second := graph("second")
		second.JobID = first.JobID
		submitted := make(chan error, 1)
		go func() { submitted <- f.d.SubmitJob(ctx, second) }()
		synctest.Wait()
		select {
		case err := <-submitted:
			t.Fatalf("the submission returned (%v) while the previous runner still closes", err)
		default:
		}
		assert.Equal(t, []string{"runner 1 created (first)", "runner 1 Start (first)", "runner 1 Close begins"}, f.ev.snapshot(),
			"no second runner while the first closes")
		// The loop answers meanwhile (each call within one virtual second).
		answered, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		st, err = f.d.RequestJobStatus(answered, first.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusInitializing, st, "the waiting submission")
		list, err := f.d.ListJobs(answered)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, "second", list[0].Name)
		assert.Equal(t, jobgraph.JobStatusInitializing, list[0].Status)
		third := graph("third")
		third.JobID = first.JobID
		var dup *dispatcher.DuplicateJobSubmissionError
		require.ErrorAs(t, f.d.SubmitJob(answered, third), &dup)
		assert.False(t, dup.GloballyTerminated)
		_, err = f.ha.ExecutionPlanStore().Get(ctx, first.JobID)
		require.NoError(t, err)

		close(r1.release)
		synctest.Wait()
		require.NoError(t, <-submitted)
		assert.Equal(t, []string{
			"runner 1 created (first)", "runner 1 Start (first)", "runner 1 Close begins",
			"runner 1 Close ends", "runner 2 created (second)", "runner 2 Start (second)",
		}, f.ev.snapshot())
		assert.Equal(t, jobgraph.JobStatusSuspended, (<-firstResult).Status)
		stored, err := f.ha.ExecutionPlanStore().Get(ctx, first.JobID)
		require.NoError(t, err)
		assert.Equal(t, "second", stored.Name)
		st, err = f.d.RequestJobStatus(ctx, first.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, st, "the new job, not the archived SUSPENDED one")
		list, err = f.d.ListJobs(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1, "the JobID is listed once, for the running job")
		assert.Equal(t, jobgraph.JobStatusRunning, list[0].Status)

		r2 := <-f.runners
		require.NoError(t, f.d.CancelJob(ctx, first.JobID))
		res, err := f.d.RequestJobResult(ctx, first.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		assert.Equal(t, "second", res.Name)
		_ = r2
		require.NoError(t, f.d.Close())
		require.NoError(t, f.ha.Close())
	})
}

// Close ends a submission waiting for a terminating runner with ErrClosed; no runner is built
// for it and its plan is not stored.
func TestCloseEndsASubmissionWaitingForATerminatingRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newSlowClosingFixture(t)
		ctx := context.Background()
		first := graph("first")
		require.NoError(t, f.d.SubmitJob(ctx, first))
		r1 := <-f.runners
		r1.end(jobgraph.JobStatusSuspended)
		synctest.Wait()
		second := graph("second")
		second.JobID = first.JobID
		submitted := make(chan error, 1)
		go func() { submitted <- f.d.SubmitJob(ctx, second) }()
		synctest.Wait()
		closed := make(chan error, 1)
		go func() { closed <- f.d.Close() }()
		synctest.Wait()
		err := <-submitted
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		assert.Contains(t, err.Error(), "waiting for the previous JobManagerRunner of the JobID to terminate")
		close(r1.release) // Close waits for the old runner's shutdown
		require.NoError(t, <-closed)
		assert.Equal(t, []string{"runner 1 created (first)", "runner 1 Start (first)", "runner 1 Close begins", "runner 1 Close ends"}, f.ev.snapshot())
		stored, err := f.ha.ExecutionPlanStore().Get(ctx, first.JobID)
		require.NoError(t, err)
		assert.Equal(t, "first", stored.Name, "the suspended job's plan stays for recovery; the second was never stored")
		require.NoError(t, f.ha.Close())
	})
}

// A resubmission while a globally terminated job is being recorded and cleaned up is a
// duplicate, refused on the loop without a store call: not globally terminated before its dirty
// JobResult is written (Flink: its runner is still registered), globally terminated once it is
// (Flink: JobResultStore.hasJobResultEntry finds it), while the global cleanup still runs.
func TestResubmissionDuringCleanupIsGloballyTerminatedOnceTheDirtyResultIsWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &blockingHA{Services: embedded.New(), calls: make(chan *heldCall)}
		var runner *fakeRunner
		d, err := dispatcher.New(dispatcher.Config{HA: h, JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
			runner = &fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}
			return runner, nil
		}})
		require.NoError(t, err)
		ctx := context.Background()
		g := graph("ends")
		submitted := make(chan error, 1)
		go func() { submitted <- d.SubmitJob(ctx, g) }()
		h.release(t, "JobResultStore.Get")
		h.release(t, "ExecutionPlanStore.Put")
		require.NoError(t, <-submitted)

		require.NoError(t, runner.Cancel(ctx)) // CANCELED: globally terminal
		dirty := h.next(t)
		require.Equal(t, "JobResultStore.CreateDirty", dirty.name)
		again := graph("again")
		again.JobID = g.JobID
		var dup *dispatcher.DuplicateJobSubmissionError
		require.ErrorAs(t, d.SubmitJob(ctx, again), &dup)
		assert.False(t, dup.GloballyTerminated, "before the dirty entry exists")

		close(dirty.release)
		remove := h.next(t)
		require.Equal(t, "ExecutionPlanStore.Remove", remove.name)
		require.ErrorAs(t, d.SubmitJob(ctx, again), &dup)
		assert.True(t, dup.GloballyTerminated, "the dirty entry exists; the cleanup runs")
		synctest.Wait()
		select {
		case c := <-h.calls:
			t.Fatalf("the duplicate made a store call: %s", c.name)
		default:
		}

		close(remove.release)
		h.release(t, "JobResultStore.MarkClean")
		res, err := d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		require.NoError(t, d.Close())
		require.NoError(t, h.Services.Close())
	})
}
