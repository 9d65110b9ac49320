package grpctransport_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

// A whole MiniCluster on the gRPC Service: every call between the Dispatcher, the JobMasters,
// the ResourceManager and the TaskExecutors (registration, slot requests and offers, deployment,
// task states, heartbeats) crosses loopback gRPC, and jobs run to FINISHED; a task's failure
// comes back as the job's root cause, still matching its sentinel.
func TestMiniClusterOverGRPC(t *testing.T) {
	svc := newService(t, grpctransport.Options{})
	reg := taskexecutor.NewRegistry()
	reg.Register("emit", func(ctx context.Context, env taskexecutor.Environment) error {
		for range 3 {
			if err := env.Output(0).Broadcast(ctx, env.Info().SubtaskIndex); err != nil {
				return err
			}
		}
		return nil
	})
	reg.Register("sum", func(ctx context.Context, env taskexecutor.Environment) error {
		n := 0
		for {
			_, err := env.Input(0).Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			n++
		}
		if n != 6 {
			return errors.New("sum: wrong record count")
		}
		return nil
	})
	reg.Register("fail", func(context.Context, taskexecutor.Environment) error { return rpc.ErrHeartbeatTimeout })
	mc, err := minicluster.New(minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 2, Registry: reg, RPC: svc})
	require.NoError(t, err)
	require.NoError(t, mc.Start(context.Background()))
	t.Cleanup(func() {
		require.NoError(t, mc.Close())
		require.NoError(t, svc.Close())
	})

	for _, rt := range []jobgraph.ResultPartitionType{jobgraph.Blocking, jobgraph.PipelinedBounded} {
		g := jobgraph.New("emit-sum-"+rt.String(), jobgraph.Batch)
		p := g.AddVertex("emit", "emit", 2)
		c := g.AddVertex("sum", "sum", 2)
		g.Connect(p, c, jobgraph.AllToAll, rt)
		res, err := mc.Run(t.Context(), g)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.Failure)
	}

	g := jobgraph.New("fails", jobgraph.Batch)
	g.AddVertex("fail", "fail", 1)
	res, err := mc.Run(t.Context(), g)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
	require.NotNil(t, res.Failure)
	assert.ErrorIs(t, res.Failure.Err(), rpc.ErrHeartbeatTimeout)

	// The Dispatcher is reached over gRPC too, at the cluster's address of it.
	d, err := rpc.Connect[rpc.DispatcherGateway](t.Context(), svc, minicluster.DispatcherAddress)
	require.NoError(t, err)
	jobs, err := d.ListJobs(t.Context())
	require.NoError(t, err)
	assert.Len(t, jobs, 3)
}
