package etcd

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// TestMiniClusterRunsAJobOverEtcd: a MiniCluster whose HA client comes to lead runs a job to
// FINISHED; afterwards another client reads its result marked clean, and no plan is left.
func TestMiniClusterRunsAJobOverEtcd(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	prefix := newPrefix()
	s := srv.open(t, prefix)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	// No contender of the test's holds the Dispatcher election: the cluster's Dispatcher is its
	// contender, and Run waits until the client leads.
	reg := taskexecutor.NewRegistry()
	reg.Register("noop", func(context.Context, taskexecutor.Environment) error { return nil })
	mc, err := minicluster.New(minicluster.Config{Registry: reg, HA: s})
	require.NoError(t, err)
	require.NoError(t, mc.Start(ctx))
	g := jobgraph.New("over ha/etcd", jobgraph.Batch)
	g.AddVertex("v", "noop", 1)
	res, err := mc.Run(ctx, g)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
	require.NoError(t, mc.Close())
	require.NoError(t, s.Close())

	other := closing(t, srv, prefix)
	entry, err := other.JobResultStore().Get(ctx, g.JobID)
	require.NoError(t, err)
	assert.True(t, entry.Clean, "the Dispatcher's cleanup marked the result clean")
	assert.Equal(t, jobgraph.JobStatusFinished, entry.Result.Status)
	ids, err := other.ExecutionPlanStore().JobIDs(ctx)
	require.NoError(t, err)
	assert.Empty(t, ids, "the plan was removed in the job's cleanup")
	resp, err := srv.client(t).Get(ctx, prefix+"/leader/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	assert.Zero(t, resp.Count, "no election key nor leader information outlives the closed client")
}
