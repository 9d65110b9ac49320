package netshuffle_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// readInt64s reads r to its end as taskexecutor's Int64Reader does (the frame at hand in bulk,
// Next for the next one) and returns the records, barriers as they came (each resumed at once,
// as a task with one input takes its checkpoint).
func readInt64s(ctx context.Context, r taskexecutor.ShuffleReader) ([]any, error) {
	br := r.(taskexecutor.BufferedInt64Reader)
	buf := make([]int64, 100)
	var out []any
	for {
		if n := br.BufferedInt64s(buf); n > 0 {
			for _, v := range buf[:n] {
				out = append(out, v)
			}
			continue
		}
		rec, err := r.Next(ctx)
		if err != nil {
			return out, err
		}
		if b, ok := rec.(*taskexecutor.CheckpointBarrier); ok {
			r.ResumeAlignment(b.ID)
		}
		out = append(out, rec)
	}
}

// Batches written with EmitInt64s and single records written with Emit cross in order, with a
// barrier in its place among them, and are read in bulk with BufferedInt64s or one by one with
// Next, in frames of up to BufferSize bytes.
func TestInt64BatchesCrossInOrder(t *testing.T) {
	producerEnv, consumerEnv := newEnv(t, netshuffle.Config{BufferSize: 1 << 10}), newEnv(t, netshuffle.Config{})
	x := newExchange(t)
	id := x.partition(jobgraph.NewIntermediateDataSetID(), 0)
	w, sd := x.produce(producerEnv, "te-1", id, jobgraph.PipelinedBounded, netshuffle.CodecInt64, 1)
	r := x.read(consumerEnv, jobgraph.PipelinedBounded, 0, sd)
	iw, ok := w.(taskexecutor.Int64Writer)
	require.True(t, ok, "the writer implements taskexecutor.Int64Writer")

	var want []any
	batch := make([]int64, 0, 5000)
	for i := range int64(5000) {
		batch = append(batch, i)
		want = append(want, i)
	}
	b := &taskexecutor.CheckpointBarrier{ID: 1, Properties: checkpoint.CheckpointProperties{Type: checkpoint.Checkpoint}}
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			if err := iw.EmitInt64s(t.Context(), 0, batch); err != nil {
				return err
			}
			if err := w.Emit(t.Context(), 0, int64(5000)); err != nil {
				return err
			}
			if err := w.BroadcastBarrier(t.Context(), b); err != nil {
				return err
			}
			if err := iw.EmitInt64s(t.Context(), 0, []int64{5001, 5002}); err != nil {
				return err
			}
			return w.Finish(t.Context())
		}()
	}()
	want = append(want, int64(5000), nil, int64(5001), int64(5002))
	got, err := readInt64s(t.Context(), r)
	require.Equal(t, io.EOF, err)
	require.NoError(t, <-done)
	require.Len(t, got, len(want))
	gotBarrier, isBarrier := got[5001].(*taskexecutor.CheckpointBarrier)
	if assert.True(t, isBarrier, "the barrier after record 5000, got %T", got[5001]) {
		assert.Equal(t, checkpoint.CheckpointID(1), gotBarrier.ID)
	}
	got[5001] = nil
	assert.Equal(t, want, got)
}

// With a codec other than int64, EmitInt64s emits each value through it (JSON: the reader gets
// float64s) and BufferedInt64s gives nothing: such frames are read with Next.
func TestInt64BatchesThroughAnotherCodec(t *testing.T) {
	producerEnv, consumerEnv := newEnv(t, netshuffle.Config{}), newEnv(t, netshuffle.Config{})
	x := newExchange(t)
	id := x.partition(jobgraph.NewIntermediateDataSetID(), 0)
	w, sd := x.produce(producerEnv, "te-1", id, jobgraph.Blocking, netshuffle.CodecJSON, 1)
	require.NoError(t, w.(taskexecutor.Int64Writer).EmitInt64s(t.Context(), 0, []int64{7, 8}))
	require.NoError(t, w.Finish(t.Context()))
	got, err := readInt64s(t.Context(), x.read(consumerEnv, jobgraph.Blocking, 0, sd))
	require.Equal(t, io.EOF, err)
	assert.Equal(t, []any{7.0, 8.0}, got)
}

// A job whose tasks use the task API's batch path (taskexecutor.Int64Writer and Int64Reader)
// over the network shuffle between two TaskExecutors: every record arrives once (the sum and
// the count of what the sinks read).
func TestJobWithInt64BatchesThroughTheNetworkShuffle(t *testing.T) {
	const n = 100000
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
		out, ok := env.Output(0).(taskexecutor.Int64Writer)
		if !ok {
			return errors.New("the output is no Int64Writer")
		}
		subs := env.Output(0).NumSubpartitions()
		batch := make([]int64, 0, 1000)
		for i := int64(1); i <= n; i++ {
			batch = append(batch, i)
			if len(batch) == cap(batch) || i == n {
				if err := out.EmitInt64s(ctx, int(i/1000)%subs, batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		return nil
	})
	reg.Register("sum", func(ctx context.Context, env taskexecutor.Environment) error {
		in, ok := env.Input(0).(taskexecutor.Int64Reader)
		if !ok {
			return errors.New("the input is no Int64Reader")
		}
		sum, err := env.AccumulatorRegistry().IntCounter("sum")
		if err != nil {
			return err
		}
		count, err := env.AccumulatorRegistry().IntCounter("count")
		if err != nil {
			return err
		}
		buf := make([]int64, 512)
		for {
			k, err := in.NextInt64s(ctx, buf)
			switch {
			case errors.Is(err, io.EOF):
				return nil
			case err != nil:
				return err
			}
			for _, v := range buf[:k] {
				sum.Add(int(v))
			}
			count.Add(k)
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

	g := jobgraph.New("int64 batches over the network", jobgraph.Batch)
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
	count, err := jobgraph.AccumulatorValue[int](res.Accumulators, "count")
	require.NoError(t, err)
	assert.Equal(t, 2*n, count)

	cancel()
	assert.NoError(t, jm.Wait())
	for _, te := range runners {
		assert.NoError(t, te.Wait())
	}
}
