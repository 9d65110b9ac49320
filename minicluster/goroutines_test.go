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

// One no-op job after another (BenchmarkSubmitJob's op) starts 8 goroutines per job: the
// runner's loop and its two sequenced leadership operations (the JobResultStore check, the
// confirmation), the ServiceProcess, the JobMaster's loop and outbox, its ResourceManager
// registration attempt, and the task. The Dispatcher's watch of the job, the ResourceManager's
// slot request and job-leader stop, and the TaskExecutor's slot offer and freed-slot notice run
// on goroutines those endpoints keep for reuse (internal/gopool): 13 per job before. A reused
// goroutine that was still finishing its previous call when the next came makes a new one, so
// the count over 20 jobs may exceed 8 × 20 by a few, never by 20.
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
		assert.Equal(t, uint64(8), (goroutinesCreated()-before)/jobs, "goroutines created per job")
	})
}
