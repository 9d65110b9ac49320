package resourcemanager

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
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
