package netshuffle_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// A job through the whole stack: a JobManager whose JobMasters use netshuffle's ShuffleMaster
// and two TaskExecutors with one Environment each (as two processes would have), the records of
// a data set named "int64" crossing between them over loopback. The source (parallelism 2)
// emits 1..n each, round robin to the sink's subtasks; each sink subtask adds what it reads.
func TestJobThroughTheNetworkShuffle(t *testing.T) {
	const n = 20000
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	svc := rpc.NewLocalService()
	defer svc.Close()
	services := embedded.New()
	defer services.Close()

	book := &netshuffle.AddressBook{}
	jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: services, Logger: quietLogger(),
		ShuffleMaster: &netshuffle.ShuffleMaster{Resolve: book.Resolve}})
	require.NoError(t, err)
	reg := taskexecutor.NewRegistry()
	reg.Register("numbers", func(ctx context.Context, env taskexecutor.Environment) error {
		out := env.Output(0)
		for i := range int64(n) {
			if err := out.Emit(ctx, int(i)%out.NumSubpartitions(), i+1); err != nil {
				return err
			}
		}
		return nil
	})
	reg.Register("sum", func(ctx context.Context, env taskexecutor.Environment) error {
		in := env.Input(0)
		sum, err := env.AccumulatorRegistry().IntCounter("sum")
		if err != nil {
			return err
		}
		for {
			rec, err := in.Next(ctx)
			switch {
			case errors.Is(err, io.EOF):
				return nil
			case err != nil:
				return err
			}
			sum.Add(int(rec.(int64)))
		}
	})
	var runners []*cluster.TaskExecutorRunner
	for _, id := range []jobgraph.ResourceID{"te-1", "te-2"} {
		env := newEnv(t, netshuffle.Config{})
		book.Set(id, env.Addr())
		te, err := cluster.RunTaskExecutor(ctx, cluster.TaskExecutorConfig{HA: services,
			TaskExecutor: taskexecutor.Config{ResourceID: id, NumSlots: 1, Registry: reg, RPC: svc, Shuffle: env, Logger: quietLogger()}})
		require.NoError(t, err)
		runners = append(runners, te)
	}

	g := jobgraph.New("sum over the network", jobgraph.Batch)
	src, sink := g.AddVertex("numbers", "numbers", 2), g.AddVertex("sum", "sum", 2)
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Pipelined)
	src.Results[0].RecordCodec = netshuffle.CodecInt64
	d := jm.LeaderDispatcher()
	require.NoError(t, d.SubmitJob(ctx, g))
	res, err := d.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.Failure)
	sum, err := jobgraph.AccumulatorValue[int](res.Accumulators, "sum")
	require.NoError(t, err)
	assert.Equal(t, 2*n*(n+1)/2, sum, "every record of both sources, once")

	cancel()
	assert.NoError(t, jm.Wait())
	for _, te := range runners {
		assert.NoError(t, te.Wait())
	}
}

// A half-configured network shuffle — netshuffle Environments on the TaskExecutors, but no
// ShuffleMaster on the JobManager — is refused at deployment with ErrNoShuffleMaster naming the
// option, instead of every reader waiting forever for a producer it cannot find: the job fails
// over until its restart strategy (2 fixed-delay attempts) gives up and ends FAILED with that
// error.
func TestNetworkShuffleWithoutItsShuffleMasterFailsTheJobClearly(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	svc := rpc.NewLocalService()
	defer svc.Close()
	services := embedded.New()
	defer services.Close()
	jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: services, Logger: quietLogger()})
	require.NoError(t, err)
	reg := taskexecutor.NewRegistry()
	reg.Register("numbers", func(ctx context.Context, env taskexecutor.Environment) error {
		return env.Output(0).Emit(ctx, 0, int64(1))
	})
	reg.Register("sum", func(ctx context.Context, env taskexecutor.Environment) error {
		_, err := env.Input(0).Next(ctx)
		return err
	})
	var runners []*cluster.TaskExecutorRunner
	for _, id := range []jobgraph.ResourceID{"te-1", "te-2"} {
		te, err := cluster.RunTaskExecutor(ctx, cluster.TaskExecutorConfig{HA: services,
			TaskExecutor: taskexecutor.Config{ResourceID: id, NumSlots: 1, Registry: reg, RPC: svc, Shuffle: newEnv(t, netshuffle.Config{}), Logger: quietLogger()}})
		require.NoError(t, err)
		runners = append(runners, te)
	}
	g := jobgraph.New("no shuffle master", jobgraph.Batch)
	src, sink := g.AddVertex("numbers", "numbers", 1), g.AddVertex("sum", "sum", 1)
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Pipelined)
	src.Results[0].RecordCodec = netshuffle.CodecInt64
	g.RestartStrategy = jobgraph.FixedDelayRestart(2, time.Millisecond)
	d := jm.LeaderDispatcher()
	require.NoError(t, d.SubmitJob(ctx, g))
	wait, stop := context.WithTimeout(ctx, 60*time.Second) // a bound for the old hang, not a timer assertion
	defer stop()
	res, err := d.RequestJobResult(wait, g.JobID)
	require.NoError(t, err, "the job ends instead of hanging")
	assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
	require.NotNil(t, res.Failure)
	assert.Contains(t, res.Failure.Message, "netshuffle: no network-shuffle ShuffleMaster on the JobManager: ")
	assert.Contains(t, res.Failure.Message, "set cluster.JobManagerConfig.ShuffleMaster or jobmaster.Config.ShuffleMaster to a *netshuffle.ShuffleMaster")
	require.ErrorIs(t, res.Failure.Err(), netshuffle.ErrNoShuffleMaster, "the registered code crosses with the failure")

	cancel()
	assert.NoError(t, jm.Wait())
	for _, te := range runners {
		assert.NoError(t, te.Wait())
	}
}
