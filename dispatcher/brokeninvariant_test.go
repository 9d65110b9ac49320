package dispatcher_test

import (
	"context"
	"errors"
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

type heardErrors struct {
	mu    sync.Mutex
	heard []error
}

func (h *heardErrors) handle(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.heard = append(h.heard, err)
}

func (h *heardErrors) take() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.heard
	h.heard = nil
	return out
}

// A panic on the Dispatcher's main loop is its fatal error: the handler hears it once, wrapping
// the PanicError; a RequestJobResult that was waiting and every call afterwards return ErrClosed
// wrapping it; Close still closes the runner of the job that was running (the dead loop's state
// is Close's then) and returns.
func TestPanicOnTheDispatchersLoopIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		h := &heardErrors{}
		var running closingRunner
		d, err := dispatcher.New(dispatcher.Config{HA: services, FatalErrorHandler: h.handle,
			JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
				running = closingRunner{&fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}}
				return running, nil
			}})
		require.NoError(t, err)
		g := graph("running")
		require.NoError(t, d.SubmitJob(context.Background(), g))
		waited := make(chan error, 1)
		go func() {
			_, err := d.RequestJobResult(context.Background(), g.JobID)
			waited <- err
		}()
		synctest.Wait()
		dispatcher.PanicOnLoop(d, "dispatcher: broken invariant: job in two maps")
		synctest.Wait()
		werr := <-waited // released with the error, not left waiting
		require.ErrorIs(t, werr, dispatcher.ErrClosed)
		var wpe *jobgraph.PanicError
		require.ErrorAs(t, werr, &wpe)

		heard := h.take()
		require.Len(t, heard, 1)
		var pe *jobgraph.PanicError
		require.ErrorAs(t, heard[0], &pe)
		assert.Equal(t, "dispatcher", pe.Endpoint)
		assert.Equal(t, "dispatcher: dispatcher: panic: dispatcher: broken invariant: job in two maps", heard[0].Error())
		err = d.SubmitJob(context.Background(), graph("after"))
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		var pe2 *jobgraph.PanicError
		require.ErrorAs(t, err, &pe2)
		assert.Same(t, pe, pe2)
		assert.Same(t, pe, wpe)
		require.NoError(t, d.Close())
		assert.Equal(t, []string{"Start", "Close", "Cancel", "Close", "Cancel"}, running.snapshot(), "Close still closed the running job's runner (and the watcher then closed it again, as always)")
		assert.Empty(t, h.take())
	})
}

// A panic on the Runner's main loop goes to RunnerConfig.FatalErrorHandler and FatalError.
func TestPanicOnTheDispatcherRunnersLoopIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		h := &heardErrors{}
		r, err := dispatcher.NewRunner(dispatcher.RunnerConfig{FatalErrorHandler: h.handle,
			Dispatcher: dispatcher.Config{HA: services,
				JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
					return &fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}, nil
				}}})
		require.NoError(t, err)
		require.NoError(t, r.Start())
		synctest.Wait()
		dispatcher.PanicOnRunnerLoop(r, "runner: broken invariant")
		synctest.Wait()

		heard := h.take()
		require.Len(t, heard, 1)
		var pe *jobgraph.PanicError
		require.ErrorAs(t, heard[0], &pe)
		assert.Equal(t, "dispatcher-runner", pe.Endpoint)
		assert.Same(t, heard[0], r.FatalError())
		_ = r.Close()
	})
}

// failingJobMasters is a JobMasterServiceFactory whose every Create fails: the JobMaster cannot
// be initialized.
type failingJobMasters struct {
	g   *jobgraph.JobGraph
	err error
}

func (f failingJobMasters) Create(context.Context, jobgraph.JobMasterID) (jobmaster.JobMaster, error) {
	return nil, f.err
}
func (f failingJobMasters) JobID() jobgraph.JobID     { return f.g.JobID }
func (f failingJobMasters) JobName() string           { return f.g.Name }
func (f failingJobMasters) JobType() jobgraph.JobType { return f.g.Type }

// A recovered job whose JobMaster fails to initialize is fatal (Flink:
// Dispatcher.handleJobManagerRunnerResult for ExecutionType.RECOVERY), and it is cleaned up
// locally only: no JobResult is written and its plan stays in the ExecutionPlanStore, so the
// next leader recovers it again. A submitted job failing the same way is an ordinary FAILED job.
func TestRecoveredJobWhoseJobMasterFailsToInitializeIsFatalAndStaysRecoverable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		services := embedded.New()
		defer services.Close()
		recovered, submitted := streaming("recovered"), streaming("submitted")
		require.NoError(t, services.ExecutionPlanStore().Put(ctx, recovered))
		coordinatorGone := errors.New("operator coordinator \"enumerator\" could not restore its state")
		h := &heardErrors{}
		d, err := dispatcher.New(dispatcher.Config{HA: services, FatalErrorHandler: h.handle,
			RecoveredJobs: []*jobgraph.JobGraph{recovered},
			JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
				return failingJobMasters{g, coordinatorGone}, nil
			})})
		require.NoError(t, err)
		defer d.Close()
		synctest.Wait()

		heard := h.take()
		require.Len(t, heard, 1)
		require.ErrorIs(t, heard[0], jobmaster.ErrJobInitialization)
		require.ErrorIs(t, heard[0], coordinatorGone)
		assert.Equal(t, "dispatcher: recovered job "+recovered.JobID.String()+": its JobMaster failed to initialize; the job is cleaned up locally only and stays in the ExecutionPlanStore for the next leader: "+
			"job initialization failed: job "+recovered.JobID.String()+": "+coordinatorGone.Error(), heard[0].Error())
		_, err = services.ExecutionPlanStore().Get(ctx, recovered.JobID)
		require.NoError(t, err, "the plan stays for the next leader")
		_, err = services.JobResultStore().Get(ctx, recovered.JobID)
		require.ErrorIs(t, err, ha.ErrNotFound, "no JobResult: the job is not over")

		require.NoError(t, d.SubmitJob(ctx, submitted))
		res, err := d.RequestJobResult(ctx, submitted.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
		require.ErrorIs(t, res.RootCause, jobmaster.ErrJobInitialization)
		synctest.Wait()
		assert.Empty(t, h.take(), "a submitted job's failed initialization is no fatal error")
		_, err = services.ExecutionPlanStore().Get(ctx, submitted.JobID)
		require.ErrorIs(t, err, ha.ErrNotFound, "the submitted job was cleaned up globally")
	})
}

// failedRunner is a JobManagerRunner that fails at once for a reason of its own (its election,
// say): SUSPENDED with ErrRunnerFailed.
type failedRunner struct {
	*fakeRunner
	err error
}

func (r failedRunner) Start() error {
	r.record("Start")
	close(r.done)
	return nil
}

func (r failedRunner) Result() jobmaster.Result {
	<-r.done
	return jobmaster.Result{Archived: executiongraph.NewSparseArchivedExecutionGraph(r.g.JobID, r.g.Name, r.g.Type, jobgraph.JobStatusSuspended, r.err, time.Unix(1, 0), time.Unix(1, 0)), Err: r.err}
}

// A runner that fails (jobmaster.ErrRunnerFailed) is fatal, and the job is cleaned up locally
// only: no JobResult, the plan stays for the next leader (Flink: jobManagerRunnerFailed).
func TestFailedRunnerIsFatalAndTheJobStaysRecoverable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		services := embedded.New()
		defer services.Close()
		h := &heardErrors{}
		cause := fmt.Errorf("%w: job x: reading the JobResultStore: connection refused", jobmaster.ErrRunnerFailed)
		d, err := dispatcher.New(dispatcher.Config{HA: services, FatalErrorHandler: h.handle,
			JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
				return failedRunner{&fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}, cause}, nil
			}})
		require.NoError(t, err)
		defer d.Close()
		g := graph("runner fails")
		require.NoError(t, d.SubmitJob(ctx, g))
		res, err := d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusSuspended, res.Status)

		heard := h.take()
		require.Len(t, heard, 1)
		require.ErrorIs(t, heard[0], jobmaster.ErrRunnerFailed)
		assert.Equal(t, "dispatcher: job "+g.JobID.String()+": its JobManagerRunner failed; the job is cleaned up locally only and stays in the ExecutionPlanStore for the next leader: "+cause.Error(), heard[0].Error())
		_, err = services.ExecutionPlanStore().Get(ctx, g.JobID)
		require.NoError(t, err, "the plan stays for the next leader")
		_, err = services.JobResultStore().Get(ctx, g.JobID)
		require.ErrorIs(t, err, ha.ErrNotFound)
	})
}
