package resourcemanager

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
	"github.com/jobgraph/jobgraph/rpc"
)

// The slot manager's broken invariant — a slot request for a TaskExecutor that is not
// registered — panics on the ResourceManager's main loop. That is fatal: FatalErrorHandler hears
// it once, as an error wrapping the PanicError; every call afterwards returns ErrClosed wrapping
// the same PanicError; Close still returns and leaves no goroutine (goleak). The process lives.
func TestSlotManagerBrokenInvariantIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var heard []error
		rm, err := New(Config{Address: "rm", RPC: rpc.NewLocalService(), Logger: slog.New(slog.DiscardHandler),
			FatalErrorHandler: func(err error) {
				mu.Lock()
				defer mu.Unlock()
				heard = append(heard, err)
			}})
		require.NoError(t, err)
		require.NoError(t, rm.Start(t.Context()))
		ghost := rpc.SlotID{ResourceID: "te-gone", SlotNumber: 3}
		rm.loop.Execute(func() { rm.requestSlot(SlotRequest{Slot: ghost, Job: jobgraph.NewJobID()}) })
		synctest.Wait()

		mu.Lock()
		require.Len(t, heard, 1)
		fatal := heard[0]
		mu.Unlock()
		var pe *jobgraph.PanicError
		require.ErrorAs(t, fatal, &pe)
		assert.Equal(t, "resourcemanager rm", pe.Endpoint)
		want := "resourcemanager: slot manager requested slot " + fmt.Sprint(ghost) + " of unregistered TaskExecutor"
		assert.Equal(t, want, pe.Value)
		assert.Equal(t, "resourcemanager: resourcemanager rm: panic: "+want, fatal.Error())

		_, err = rm.RegisterTaskExecutor(context.Background(), rpc.TaskExecutorRegistration{ResourceID: "te-1", Address: "te-1"})
		require.ErrorIs(t, err, ErrClosed)
		var pe2 *jobgraph.PanicError
		require.ErrorAs(t, err, &pe2)
		assert.Same(t, pe, pe2)
		require.NoError(t, rm.Close())
	})
}

// brokenJobRetrievals are embedded HA services whose JobMaster leader retrievals fail as soon as
// they start.
type brokenJobRetrievals struct {
	*embedded.Services
	err error
}

func (b brokenJobRetrievals) JobMasterLeaderRetrieval(jobgraph.JobID) ha.LeaderRetrieval {
	return failingRetrieval{b.err}
}

type failingRetrieval struct{ err error }

func (f failingRetrieval) Start(l ha.LeaderRetrievalListener) error {
	go l.HandleError(f.err) // as a watch that breaks right after it started
	return nil
}
func (failingRetrieval) Stop() error { return nil }

// A job's JobMaster leader retrieval failing is fatal for the ResourceManager (Flink:
// JobLeaderIdActionsImpl.handleError calls onFatalError): it could no longer tell the job's
// sessions apart.
func TestJobLeaderRetrievalErrorIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		broken := errors.New("etcd: watch canceled")
		var mu sync.Mutex
		var heard []error
		e := newEnv(t, func(c *Config) {
			c.HA = brokenJobRetrievals{services, broken}
			c.FatalErrorHandler = func(err error) {
				mu.Lock()
				defer mu.Unlock()
				heard = append(heard, err)
			}
		})
		job := jobgraph.NewJobID()
		_, err := e.gw.RegisterJobMaster(e.ctx, jobgraph.NewJobMasterID(), "jm-1", "jm-1", job)
		require.NoError(t, err) // the retrieval started; its error comes afterwards
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, heard, 1)
		require.ErrorIs(t, heard[0], broken)
		assert.Equal(t, "resourcemanager: the leader retrieval of job "+job.String()+" failed: etcd: watch canceled", heard[0].Error())
	})
}
