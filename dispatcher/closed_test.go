package dispatcher_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/rpc"
)

// After Close every Dispatcher method returns dispatcher.ErrClosed (and rpc.ErrClosed), for a job
// it ran and for one it never saw — every rpc.DispatcherGateway method, the client heartbeat and
// the blocklist's; nothing internal ("mainloop: closed") leaks. It is an rpc.UnreachableError:
// the Dispatcher is an RPC endpoint (a Runner registers it), and a closed one is gone for its
// callers, as it is over a transport that unregistered it (Flink: an RPC to a stopped endpoint
// fails with RecipientUnreachableException).
func TestEveryMethodAfterCloseReturnsErrClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		ctx := context.Background()
		g := graph("ran")
		require.NoError(t, f.d.SubmitJob(ctx, g))
		<-f.jms
		require.NoError(t, f.d.Close())
		require.NoError(t, f.d.Close(), "closing twice is harmless")

		for _, id := range []jobgraph.JobID{g.JobID, jobgraph.NewJobID()} {
			for _, m := range []struct {
				name string
				call func() error
			}{
				{"SubmitJob", func() error { return f.d.SubmitJob(ctx, graph("late")) }},
				{"CancelJob", func() error { return f.d.CancelJob(ctx, id) }},
				{"RequestJobStatus", func() error {
					_, err := f.d.RequestJobStatus(ctx, id)
					return err
				}},
				{"RequestJob", func() error {
					_, err := f.d.RequestJob(ctx, id)
					return err
				}},
				{"RequestJobResult", func() error {
					_, err := f.d.RequestJobResult(ctx, id)
					return err
				}},
				{"ListJobs", func() error {
					_, err := f.d.ListJobs(ctx)
					return err
				}},
				{"TriggerSavepoint", func() error {
					_, err := f.d.TriggerSavepoint(ctx, id, t.TempDir())
					return err
				}},
				{"StopWithSavepoint", func() error {
					_, err := f.d.StopWithSavepoint(ctx, id, t.TempDir())
					return err
				}},
				{"TriggerCheckpoint", func() error {
					_, err := f.d.TriggerCheckpoint(ctx, id)
					return err
				}},
				{"ReportJobClientHeartbeat", func() error { return f.d.ReportJobClientHeartbeat(ctx, id, time.Now().Add(time.Minute)) }},
				{"BlockTaskExecutor", func() error {
					_, err := f.d.BlockTaskExecutor(ctx, dispatcher.BlockRequest{TaskExecutor: "te-1"})
					return err
				}},
			} {
				err := m.call()
				assert.ErrorIs(t, err, dispatcher.ErrClosed, m.name)
				assert.ErrorIs(t, err, rpc.ErrClosed, m.name)
				assert.EqualError(t, err, "dispatcher: closed", m.name)
				assert.True(t, rpc.IsUnreachable(err), "a closed Dispatcher is gone: %s", m.name)
			}
		}
	})
}
