package dispatcher_test

import (
	"context"
	"errors"
	"sync"
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
)

var errDiskFull = errors.New("disk full")

type dirtyFailsHA struct {
	*embedded.Services
	err error
}

func (h dirtyFailsHA) JobResultStore() ha.JobResultStore {
	return dirtyFails{h.Services.JobResultStore(), h.err}
}

type dirtyFails struct {
	ha.JobResultStore
	err error
}

func (s dirtyFails) CreateDirty(context.Context, jobgraph.JobResult) error { return s.err }

// The dirty JobResult write is retried under the cleanup strategy; when its attempts are used up
// (here 2 retries: tries at 0 s, 1 s and 3 s) the error goes to Config.FatalErrorHandler, once,
// at 3 s, before the job is archived, and nothing of the job is cleaned (its plan stays). A
// retryable error before that is no fatal error. Flink: a failed createDirtyResult is fatal.
func TestDirtyResultWriteThatRunsOutOfRetriesIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		var mu sync.Mutex
		var heard []error
		var heardAt []time.Duration
		t0 := time.Now()
		var runner *fakeRunner
		d, err := dispatcher.New(dispatcher.Config{HA: dirtyFailsHA{services, errDiskFull}, CleanupExponentialDelayAttempts: 2,
			FatalErrorHandler: func(err error) {
				mu.Lock()
				defer mu.Unlock()
				heard, heardAt = append(heard, err), append(heardAt, time.Since(t0))
			},
			JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
				runner = &fakeRunner{g: g, done: make(chan struct{}), status: jobgraph.JobStatusCreated}
				return runner, nil
			}})
		require.NoError(t, err)
		defer d.Close()
		ctx := context.Background()
		g := graph("unrecorded")
		require.NoError(t, d.SubmitJob(ctx, g))
		require.NoError(t, runner.Cancel(ctx))
		time.Sleep(2999 * time.Millisecond)
		synctest.Wait()
		mu.Lock()
		assert.Empty(t, heard, "still retrying")
		mu.Unlock()
		res, err := d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		mu.Lock()
		require.Len(t, heard, 1)
		assert.Equal(t, []time.Duration{3 * time.Second}, heardAt)
		require.ErrorIs(t, heard[0], errDiskFull)
		assert.Equal(t, "dispatcher: job "+g.JobID.String()+" reached CANCELED but its result could not be written to the JobResultStore: dispatcher: job "+g.JobID.String()+
			": JobResultStore.CreateDirty failed; no retry left (cleanup-strategy.exponential-delay.attempts 2): disk full", heard[0].Error())
		mu.Unlock()
		_, err = services.ExecutionPlanStore().Get(ctx, g.JobID)
		require.NoError(t, err, "nothing cleaned")
	})
}
