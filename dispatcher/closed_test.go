package dispatcher_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/rpc"
)

// After Close every Dispatcher method returns dispatcher.ErrClosed (and rpc.ErrClosed), for a job
// it ran and for one it never saw; nothing internal ("mainloop: closed") leaks.
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
			_, statusErr := f.d.RequestJobStatus(ctx, id)
			_, jobErr := f.d.RequestJob(ctx, id)
			_, resultErr := f.d.RequestJobResult(ctx, id)
			_, listErr := f.d.ListJobs(ctx)
			for name, err := range map[string]error{
				"SubmitJob":        f.d.SubmitJob(ctx, graph("late")),
				"CancelJob":        f.d.CancelJob(ctx, id),
				"RequestJobStatus": statusErr,
				"RequestJob":       jobErr,
				"RequestJobResult": resultErr,
				"ListJobs":         listErr,
			} {
				assert.ErrorIs(t, err, dispatcher.ErrClosed, name)
				assert.ErrorIs(t, err, rpc.ErrClosed, name)
				assert.EqualError(t, err, "dispatcher: closed", name)
			}
		}
	})
}
