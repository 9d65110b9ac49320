package minicluster_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/logtest"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

const injectedInvariant = "scheduler: broken invariant: injected by the test"

// brokenScheduler is the DefaultScheduler, meeting a broken invariant when the first task
// reports RUNNING: it panics on the JobMaster's main loop, as the scheduler's own "broken
// invariant" checks do.
type brokenScheduler struct{ scheduler.SchedulerNG }

func (s brokenScheduler) UpdateTaskExecutionState(st rpc.TaskExecutionState) bool {
	if st.State == jobgraph.ExecutionStateRunning {
		panic(injectedInvariant)
	}
	return s.SchedulerNG.UpdateTaskExecutionState(st)
}

func brokenSchedulerFactory(g *jobgraph.JobGraph, pool scheduler.SlotPool, d scheduler.Deployer, cfg scheduler.Config) (scheduler.SchedulerNG, error) {
	s, err := scheduler.DefaultSchedulerFactory(g, pool, d, cfg)
	if err != nil {
		return nil, err
	}
	return brokenScheduler{s}, nil
}

func waitRegistry() *taskexecutor.Registry {
	reg := taskexecutor.NewRegistry()
	reg.Register("wait", func(ctx context.Context, env taskexecutor.Environment) error {
		<-ctx.Done()
		return ctx.Err()
	})
	return reg
}

// requirePanic checks that err wraps the JobMaster's PanicError with the injected value.
func requirePanic(t *testing.T, err error, job jobgraph.JobID) {
	t.Helper()
	var pe *jobgraph.PanicError
	require.ErrorAs(t, err, &pe, "err: %v", err)
	assert.Equal(t, "jobmaster-"+job.String(), pe.Endpoint)
	assert.Equal(t, injectedInvariant, pe.Value)
	assert.Contains(t, string(pe.Stack), "brokenScheduler.UpdateTaskExecutionState")
}

// Issue 15's fatal errors, a broken invariant: the scheduler panics on the JobMaster's main loop
// while the job runs. Nothing swallows it and the process does not die: the default handler logs
// it at ERROR and closes the cluster; the RequestJobResult that was waiting for the job, Close
// and every later call return an error wrapping the *jobgraph.PanicError.
func TestBrokenInvariantInTheSchedulerClosesTheMiniCluster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, records := logtest.NewRecorder(slog.LevelError)
		mc, err := minicluster.New(minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 1, Registry: waitRegistry(),
			SchedulerFactory: brokenSchedulerFactory, Logger: log})
		require.NoError(t, err)
		ctx := context.Background()
		require.NoError(t, mc.Start(ctx))
		g := jobgraph.New("meets a broken invariant", jobgraph.Streaming)
		g.AddVertex("wait", "wait", 1)
		waited := make(chan error, 1)
		require.NoError(t, mc.SubmitJob(ctx, g))
		go func() {
			_, err := mc.RequestJobResult(ctx, g.JobID)
			waited <- err
		}()
		synctest.Wait()

		err = <-waited
		requirePanic(t, err, g.JobID)
		assert.Equal(t, "minicluster: fatal error: jobmaster: job "+g.JobID.String()+": jobmaster-"+g.JobID.String()+": panic: "+injectedInvariant, err.Error())
		err = mc.Close() // closed by the default handler already; Close reports why
		requirePanic(t, err, g.JobID)
		_, err = mc.RequestJobStatus(ctx, g.JobID)
		requirePanic(t, err, g.JobID)

		var fatal, panicked int
		for _, r := range records() {
			switch r.Msg {
			case "fatal error: the MiniCluster closes":
				fatal++
			case "a main loop of the JobMaster panicked":
				panicked++
			}
		}
		assert.Equal(t, 1, fatal, "one ERROR record for the fatal error")
		assert.Equal(t, 1, panicked, "one ERROR record with the panic's stack")
	})
}

// With a host's FatalErrorHandler the cluster does not close on its own: the handler hears the
// PanicError once; a RequestJobResult that was waiting returns it (although the dead JobMaster
// can no longer end its job); the job's status calls return the error, the cluster's
// TaskExecutor still runs, and Close releases everything and reports it.
func TestHostHandlerHearsTheSchedulersBrokenInvariant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var heard []error
		mc, err := minicluster.New(minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 1, Registry: waitRegistry(),
			SchedulerFactory: brokenSchedulerFactory,
			FatalErrorHandler: func(err error) {
				mu.Lock()
				defer mu.Unlock()
				heard = append(heard, err)
			}})
		require.NoError(t, err)
		ctx := context.Background()
		require.NoError(t, mc.Start(ctx))
		g := jobgraph.New("meets a broken invariant", jobgraph.Streaming)
		g.AddVertex("wait", "wait", 1)
		require.NoError(t, mc.SubmitJob(ctx, g))
		waited := make(chan error, 1)
		go func() {
			_, err := mc.RequestJobResult(ctx, g.JobID) // no deadline: only the fatal error ends it
			waited <- err
		}()
		synctest.Wait()

		requirePanic(t, <-waited, g.JobID)
		mu.Lock()
		require.Len(t, heard, 1)
		requirePanic(t, heard[0], g.JobID)
		mu.Unlock()
		assert.Len(t, mc.TaskExecutors(), 1, "the cluster did not close itself")
		_, err = mc.RequestJobStatus(ctx, g.JobID)
		requirePanic(t, err, g.JobID)
		err = mc.Close()
		requirePanic(t, err, g.JobID)
	})
}
