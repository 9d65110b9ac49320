package minicluster_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rpc"
)

// After Close every MiniCluster method that returns an error returns minicluster.ErrClosed (and
// rpc.ErrClosed), for a job it ran and for one it never saw.
func TestEveryMethodAfterCloseReturnsErrClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := start(t, minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 1})
		ctx := context.Background()
		g := jobgraph.New("ran", jobgraph.Batch)
		g.AddVertex("v", "noop", 1)
		res, err := mc.Run(ctx, g)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusFinished, res.Status)
		require.NoError(t, mc.Close())
		_, err = mc.RPC().Lookup(ctx, minicluster.ResourceManagerAddress)
		assert.ErrorIs(t, err, rpc.ErrServiceClosed, "the cluster closes the Service it made")

		late := jobgraph.New("late", jobgraph.Batch)
		late.AddVertex("v", "noop", 1)
		for _, id := range []jobgraph.JobID{g.JobID, jobgraph.NewJobID()} {
			_, resultErr := mc.RequestJobResult(ctx, id)
			_, jobErr := mc.RequestJob(ctx, id)
			_, statusErr := mc.RequestJobStatus(ctx, id)
			_, runErr := mc.Run(ctx, late)
			_, addErr := mc.AddTaskExecutor(ctx)
			_, poolErr := mc.SlotPoolStatus(ctx, id)
			_, savepointErr := mc.TriggerSavepoint(ctx, id, t.TempDir())
			_, stopErr := mc.StopWithSavepoint(ctx, id, t.TempDir())
			_, checkpointErr := mc.TriggerCheckpoint(ctx, id)
			for name, err := range map[string]error{
				"AddTaskExecutor":    addErr,
				"KillTaskExecutor":   mc.KillTaskExecutor("taskexecutor-0"),
				"RemoveTaskExecutor": mc.RemoveTaskExecutor(ctx, "taskexecutor-0"),
				"SlotPoolStatus":     poolErr,
				"Start":              mc.Start(ctx),
				"SubmitJob":          mc.SubmitJob(ctx, late),
				"RequestJobResult":   resultErr,
				"RequestJob":         jobErr,
				"CancelJob":          mc.CancelJob(ctx, id),
				"RequestJobStatus":   statusErr,
				"Run":                runErr,
				"TriggerSavepoint":   savepointErr,
				"StopWithSavepoint":  stopErr,
				"TriggerCheckpoint":  checkpointErr,
			} {
				assert.ErrorIs(t, err, minicluster.ErrClosed, name)
				assert.ErrorIs(t, err, rpc.ErrClosed, name)
				assert.EqualError(t, err, "minicluster: closed", name)
			}
		}
	})
}
