package minicluster_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
)

// One no-op job after another (BenchmarkSubmitJob's op) starts 1 goroutine per job: the task's.
// Every other goroutine of a job runs on goroutines its owner keeps for reuse (internal/gopool):
// the JobManager's for the job's runner (its loop, and its session's leadership operation, which
// runs the ServiceProcess) and JobMaster (its loop and outbox, its ResourceManager registration attempt),
// the Dispatcher's for its watch of the job, the ResourceManager's for the job-leader stop (its
// slot request takes none since rpc.TaskExecutorNotifier), the TaskExecutor's for the slot offer
// and the freed-slot notice — 13 per job
// before internal/gopool, 8 before the JobManager's pool. A reused goroutine that was still
// finishing its previous function when the next came makes a new one, so the count over 20 jobs
// may exceed 20 by a few, never by 20.
func TestSubmitJobGoroutinesPerJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mc, err := minicluster.New(minicluster.Config{Registry: registry()})
		require.NoError(t, err)
		require.NoError(t, mc.Start(ctx))
		defer mc.Close()
		run := func() {
			res, err := mc.Run(ctx, noopGraph())
			require.NoError(t, err)
			require.Equal(t, jobgraph.JobStatusFinished, res.Status)
			synctest.Wait() // every goroutine of the job has ended or is idle
		}
		for range 3 { // the endpoints' reusable goroutines exist after the first jobs
			run()
		}
		const jobs = 20
		before := goroutinesCreated()
		for range jobs {
			run()
		}
		assert.Equal(t, uint64(1), (goroutinesCreated()-before)/jobs, "goroutines created per job")
	})
}
