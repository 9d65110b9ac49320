package jobmaster_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// fatalRecorder is a FatalErrorHandler that keeps what it hears.
type fatalRecorder struct {
	mu    sync.Mutex
	heard []error
}

func (f *fatalRecorder) handle(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.heard = append(f.heard, err)
}

func (f *fatalRecorder) take() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.heard
	f.heard = nil
	return out
}

// newFatalJobMaster starts a JobMaster of a 2-subtask batch job whose ResourceManager is found
// through a retrieval the test drives, with a FatalErrorHandler that records.
func newFatalJobMaster(t *testing.T) (jobmaster.JobMaster, *handRetrieval, *fatalRecorder, jobgraph.JobID) {
	t.Helper()
	rec := &fatalRecorder{}
	retrieval := &handRetrieval{}
	g := jobgraph.New("one", jobgraph.Batch)
	g.AddVertex("v", "noop", 2)
	f, err := jobmaster.NewFactory(g, jobmaster.Config{RPC: rpc.NewLocalService(), Logger: slog.New(slog.DiscardHandler),
		ResourceManagerRetrieval: func() ha.LeaderRetrieval { return retrieval }, FatalErrorHandler: rec.handle})
	require.NoError(t, err)
	jm, err := f.Create(context.Background(), jobgraph.NewJobMasterID())
	require.NoError(t, err)
	return jm, retrieval, rec, g.JobID
}

// A panic on the JobMaster's main loop (a broken invariant of its scheduler, its slot pool) is
// the JobMaster's fatal error: the handler hears it once, as an error wrapping the PanicError
// that names the loop; every call of the JobMaster returns its closed error wrapping the same
// PanicError; Close still returns and releases every goroutine (goleak).
func TestPanicOnTheJobMastersLoopIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		jm, _, rec, job := newFatalJobMaster(t)
		synctest.Wait()
		jobmaster.PanicOnLoop(jm, "slot pool: broken invariant: slot given back twice")
		synctest.Wait()

		heard := rec.take()
		require.Len(t, heard, 1)
		var pe *jobgraph.PanicError
		require.ErrorAs(t, heard[0], &pe)
		assert.Equal(t, "jobmaster-"+job.String(), pe.Endpoint)
		assert.Equal(t, "slot pool: broken invariant: slot given back twice", pe.Value)
		assert.Equal(t, "jobmaster: job "+job.String()+": jobmaster-"+job.String()+": panic: slot pool: broken invariant: slot given back twice", heard[0].Error())

		_, err := jm.RequestJobStatus(context.Background())
		require.ErrorIs(t, err, jobmaster.ErrClosed)
		var pe2 *jobgraph.PanicError
		require.ErrorAs(t, err, &pe2)
		assert.Same(t, pe, pe2)
		jm.Close()
		assert.Empty(t, rec.take(), "heard once")
	})
}

// A task state queued behind a closure that panics is never applied, but its done still hears,
// once, the JobMaster's closed error wrapping the PanicError (rpc.TaskExecutionStateNotifier:
// done is called once); before internal/mainloop called the dones a panic dropped, it never
// heard anything.
func TestNotifyQueuedBehindAPanicHearsTheClosedError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		jm, _, _, _ := newFatalJobMaster(t)
		synctest.Wait()
		n := jm.Gateway().(rpc.TaskExecutionStateNotifier)
		release := jobmaster.HoldLoop(jm)
		jobmaster.PanicOnLoop(jm, "scheduler: broken invariant")
		var got []error
		n.NotifyTaskExecutionState(jobgraph.NewJobMasterID(), rpc.TaskExecutionState{State: jobgraph.ExecutionStateRunning},
			func(err error) { got = append(got, err) })
		release()
		synctest.Wait()
		require.Len(t, got, 1, "done is called once")
		assert.ErrorIs(t, got[0], jobmaster.ErrClosed)
		assert.True(t, rpc.IsUnreachable(got[0]), "the closed error, as every call gets it")
		var pe *jobgraph.PanicError
		require.ErrorAs(t, got[0], &pe)
		assert.Equal(t, "scheduler: broken invariant", pe.Value)
		_, callErr := jm.Gateway().UpdateTaskExecutionState(context.Background(), jobgraph.NewJobMasterID(), rpc.TaskExecutionState{})
		assert.Equal(t, callErr, got[0], "what UpdateTaskExecutionState answers")
		jm.Close()
	})
}

// The outbox (the loop the JobMaster's outgoing calls run on) is the JobMaster's too.
func TestPanicOnTheJobMastersOutboxIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		jm, _, rec, job := newFatalJobMaster(t)
		synctest.Wait()
		jobmaster.PanicOnOutbox(jm, errors.New("outbox: broken invariant"))
		synctest.Wait()
		heard := rec.take()
		require.Len(t, heard, 1)
		var pe *jobgraph.PanicError
		require.ErrorAs(t, heard[0], &pe)
		assert.Equal(t, "jobmaster-outbox-"+job.String(), pe.Endpoint)
		assert.EqualError(t, pe.Unwrap(), "outbox: broken invariant")
		jm.Close()
	})
}

// The ResourceManager leader retrieval's error is fatal for the JobMaster (Flink:
// ResourceManagerLeaderListener.handleError): it could no longer learn of a new leader.
func TestResourceManagerRetrievalErrorIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		jm, retrieval, rec, job := newFatalJobMaster(t)
		synctest.Wait()
		broken := errors.New("etcd: watch canceled: lease expired")
		retrieval.mu.Lock()
		l := retrieval.listener
		retrieval.mu.Unlock()
		l.HandleError(broken)
		heard := rec.take()
		require.Len(t, heard, 1)
		require.ErrorIs(t, heard[0], broken)
		assert.Equal(t, "jobmaster: job "+job.String()+": the ResourceManager's leader retrieval failed: etcd: watch canceled: lease expired", heard[0].Error())
		jm.Close()
	})
}

// A panic on the LeadershipRunner's own loop fails the runner: its Result is completed at once
// with ErrRunnerFailed wrapping the PanicError and the job SUSPENDED (the Dispatcher makes that
// fatal and cleans up locally only); its calls return its closed error wrapping the PanicError;
// Close still closes the JobMaster it ran.
func TestPanicOnTheRunnersLoopFailsTheRunnerAndCloseStillReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, newFakeFactory())
		require.NoError(t, f.runner.Start())
		jm := <-f.factory.created
		synctest.Wait()

		jobmaster.PanicOnRunnerLoop(f.runner, "runner: broken invariant")
		synctest.Wait()
		require.True(t, isDone(f.runner), "the result is complete")
		res := f.runner.Result()
		assert.Equal(t, jobgraph.JobStatusSuspended, res.Archived.Status)
		require.ErrorIs(t, res.Err, jobmaster.ErrRunnerFailed)
		var pe *jobgraph.PanicError
		require.ErrorAs(t, res.Err, &pe)
		job := f.factory.JobID().String()
		assert.Equal(t, "runner-"+job, pe.Endpoint)
		assert.Equal(t, "job manager runner failed: job "+job+": runner-"+job+": panic: runner: broken invariant", res.Err.Error())
		_, err := f.runner.RequestJobStatus(context.Background())
		var pe2 *jobgraph.PanicError
		require.ErrorAs(t, err, &pe2)
		assert.Same(t, pe, pe2)
		assert.Equal(t, 0, jm.state().closed)

		f.runner.Close()
		assert.Equal(t, 1, jm.state().closed, "Close closed the JobMaster the dead runner ran")
	})
}
