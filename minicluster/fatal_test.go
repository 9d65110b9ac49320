package minicluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/internal/logtest"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// errCorrupt is what a broken JobResultStore answers every CreateDirty with.
var errCorrupt = fmt.Errorf("job-result-store: the entry file is corrupt: %w", ha.ErrUnrecoverable)

// corruptResults is the embedded HA services with a JobResultStore that cannot write a dirty
// entry, for good.
type corruptResults struct{ *embedded.Services }

func (h corruptResults) JobResultStore() ha.JobResultStore {
	return corruptStore{h.Services.JobResultStore()}
}

type corruptStore struct{ ha.JobResultStore }

func (corruptStore) CreateDirty(context.Context, jobgraph.JobResult) error { return errCorrupt }

// Issue 15's fatal errors: a job finishes, and its dirty JobResult cannot be written (an
// ha.ErrUnrecoverable store error: retrying cannot help, and neither running the job again nor
// cleaning it up is safe). Nothing swallows it: the default handler logs it at ERROR and closes
// the cluster; a RequestJobResult that was waiting for the job, mc.Close and every later call
// return an error wrapping it; the job's plan stays in the ExecutionPlanStore (nothing of it
// cleaned).
func TestUnrecoverableJobResultStoreErrorClosesTheMiniClusterAndIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		release := make(chan struct{})
		reg := taskexecutor.NewRegistry()
		reg.Register("wait", func(ctx context.Context, env taskexecutor.Environment) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		log, records := logtest.NewRecorder(slog.LevelError)
		mc, err := minicluster.New(minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 1, Registry: reg,
			HA: corruptResults{services}, Logger: log})
		require.NoError(t, err)
		ctx := context.Background()
		require.NoError(t, mc.Start(ctx))
		g := jobgraph.New("finishes", jobgraph.Batch)
		g.AddVertex("wait", "wait", 1)
		require.NoError(t, mc.SubmitJob(ctx, g))
		waited := make(chan error, 1)
		go func() {
			_, err := mc.RequestJobResult(ctx, g.JobID)
			waited <- err
		}()
		synctest.Wait()

		close(release) // FINISHED; the dirty write fails unrecoverably
		synctest.Wait()
		err = <-waited
		require.ErrorIs(t, err, ha.ErrUnrecoverable, "the waiting RequestJobResult")
		assert.Equal(t, "minicluster: fatal error: dispatcher: job "+g.JobID.String()+" reached FINISHED but its result could not be written to the JobResultStore: dispatcher: job "+
			g.JobID.String()+": JobResultStore.CreateDirty failed unrecoverably: "+errCorrupt.Error(), err.Error())
		err = mc.Close() // the cluster closed itself already; Close reports why
		require.ErrorIs(t, err, ha.ErrUnrecoverable)
		_, err = mc.RequestJobStatus(ctx, g.JobID)
		require.ErrorIs(t, err, ha.ErrUnrecoverable)

		var fatal []logtest.Record
		for _, r := range records() {
			if r.Msg == "fatal error: the MiniCluster closes" {
				fatal = append(fatal, r)
			}
		}
		require.Len(t, fatal, 1, "one ERROR record for the fatal error")
		_, err = services.ExecutionPlanStore().Get(ctx, g.JobID)
		require.NoError(t, err, "nothing of the job was cleaned up")
	})
}

// A host's FatalErrorHandler hears the error, once, instead of the default; the cluster does
// not close on its own, and calls still report the error.
func TestHostFatalErrorHandlerHearsTheUnrecoverableStoreError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		var mu sync.Mutex
		var heard []error
		mc, err := minicluster.New(minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 1, Registry: registry(), HA: corruptResults{services},
			FatalErrorHandler: func(err error) {
				mu.Lock()
				defer mu.Unlock()
				heard = append(heard, err)
			}})
		require.NoError(t, err)
		require.NoError(t, mc.Start(context.Background()))
		g := jobgraph.New("finishes", jobgraph.Batch)
		g.AddVertex("noop", "noop", 1)
		_, err = mc.Run(context.Background(), g)
		require.ErrorIs(t, err, ha.ErrUnrecoverable)
		synctest.Wait()
		mu.Lock()
		require.Len(t, heard, 1)
		assert.True(t, errors.Is(heard[0], errCorrupt))
		mu.Unlock()
		assert.Len(t, mc.TaskExecutors(), 1, "the cluster did not close itself")
		require.ErrorIs(t, mc.Close(), ha.ErrUnrecoverable)
	})
}
