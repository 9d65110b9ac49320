package netshuffle_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// exchange is one producer TaskExecutor's Environment and a ShuffleMaster that knows it.
type exchange struct {
	t      testing.TB
	job    jobgraph.JobID
	vertex jobgraph.JobVertexID
	master *netshuffle.ShuffleMaster
	book   *netshuffle.AddressBook
}

func newExchange(t testing.TB) *exchange {
	book := &netshuffle.AddressBook{}
	return &exchange{t: t, job: jobgraph.NewJobID(), vertex: jobgraph.NewJobVertexID(), book: book,
		master: &netshuffle.ShuffleMaster{Resolve: book.Resolve}}
}

// partition is partition i of a new data set, produced by subtask i of the exchange's vertex.
func (x *exchange) partition(ds jobgraph.IntermediateDataSetID, i int) rpc.ResultPartitionID {
	return rpc.ResultPartitionID{
		PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: ds, PartitionIndex: i},
		ProducerID:  jobgraph.ExecutionAttemptID{ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: x.vertex, Subtask: i}},
	}
}

// produce registers partition id (codec, subs subpartitions) on env as TaskExecutor te and
// returns its writer and descriptor.
func (x *exchange) produce(env *netshuffle.Environment, te jobgraph.ResourceID, id rpc.ResultPartitionID, typ jobgraph.ResultPartitionType, codec string, subs int) (taskexecutor.ShuffleWriter, rpc.ShuffleDescriptor) {
	x.t.Helper()
	x.book.Set(te, env.Addr())
	sd, err := x.master.RegisterPartitionWithProducer(x.job,
		scheduler.PartitionDescriptor{ResultPartitionID: id, DataSetID: id.PartitionID.IntermediateDataSetID, ResultType: typ,
			PartitionIndex: id.PartitionID.PartitionIndex, NumberOfSubpartitions: subs, RecordCodec: codec},
		scheduler.ProducerDescriptor{ExecutionAttemptID: id.ProducerID, ProducerLocation: te})
	require.NoError(x.t, err)
	ws, err := env.CreateResultPartitionWriters(taskexecutor.ShuffleIOOwnerContext{JobID: x.job, TaskExecutor: te, TaskName: "producer"},
		[]rpc.ResultPartitionDeploymentDescriptor{{ResultPartitionID: id, ResultType: typ, NumberOfSubpartitions: subs, ShuffleDescriptor: &sd}})
	require.NoError(x.t, err)
	return ws[0], sd
}

// read attaches a reader on env to subpartition sub of the partitions sds describe.
func (x *exchange) read(env *netshuffle.Environment, typ jobgraph.ResultPartitionType, sub int, sds ...rpc.ShuffleDescriptor) taskexecutor.ShuffleReader {
	x.t.Helper()
	ids := make([]rpc.ResultPartitionID, len(sds))
	for i, sd := range sds {
		ids[i] = sd.ResultPartitionID
	}
	rs, err := env.CreateInputGates(taskexecutor.ShuffleIOOwnerContext{JobID: x.job, TaskExecutor: "consumer-te", TaskName: "consumer"},
		[]rpc.InputGateDeploymentDescriptor{{DataSetID: ids[0].PartitionID.IntermediateDataSetID, ResultType: typ, Partitions: ids,
			ConsumedSubpartitionIndex: sub, ShuffleDescriptors: sds}})
	require.NoError(x.t, err)
	x.t.Cleanup(rs[0].Close)
	return rs[0]
}

func readAll(ctx context.Context, r taskexecutor.ShuffleReader) ([]any, error) {
	var out []any
	for {
		rec, err := r.Next(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

// Two exchanges between the same two TaskExecutor processes share one HTTP/2 connection. The
// consumer of the first stops reading: its producer blocks once the credit and the in-memory
// queue are full, with at most the bound of records accepted, while the second exchange moves
// 20 times that many records to its end. The slow stream then holds more bytes in flight than
// gRPC's default 64 KiB stream and connection windows, so gRPC's own flow control would stall
// it there, and a connection window returned only as readers read would stall the fast one
// too. Then the first consumer reads, and its producer finishes with every record delivered in
// order.
func TestSlowConsumerBlocksOnlyItsProducer(t *testing.T) {
	producerEnv, consumerEnv := newEnv(t, netshuffle.Config{}), newEnv(t, netshuffle.Config{})
	x := newExchange(t)
	slowID, fastID := x.partition(jobgraph.NewIntermediateDataSetID(), 0), x.partition(jobgraph.NewIntermediateDataSetID(), 0)
	slowW, slowSD := x.produce(producerEnv, "te-1", slowID, jobgraph.PipelinedBounded, netshuffle.CodecInt64, 1)
	fastW, fastSD := x.produce(producerEnv, "te-1", fastID, jobgraph.PipelinedBounded, netshuffle.CodecInt64, 1)
	slowR := x.read(consumerEnv, jobgraph.PipelinedBounded, 0, slowSD)
	fastR := x.read(consumerEnv, jobgraph.PipelinedBounded, 0, fastSD)
	assert.Equal(t, 1, consumerEnv.NumConns(), "both streams on one connection")

	// What the slow exchange can accept unread, in chunks of Int64sPerFrame records (the int64
	// codec's records are 8 bytes, with no length): the writer's chunk, the in-memory gate's
	// queue and one at the data server, then the frames of the credit and the one the reader's
	// frame gave back.
	bound := (1 + netshuffle.DefaultLocalQueueCapacity + 1 + netshuffle.DefaultBuffersPerChannel + 1) * netshuffle.Int64sPerFrame
	require.Greater(t, netshuffle.DefaultBuffersPerChannel*netshuffle.DefaultBufferSize, 64<<10-1, "the slow stream's credit covers at least gRPC's default window")
	slowTotal := 4 * bound // more than the bound: the producer can only block
	var slowEmitted atomic.Int64
	slowDone := make(chan error, 1)
	go func() {
		for i := range slowTotal {
			if err := slowW.Emit(t.Context(), 0, int64(i)); err != nil {
				slowDone <- err
				return
			}
			slowEmitted.Add(1)
		}
		slowDone <- slowW.Finish(t.Context())
	}()

	fastTotal := 20 * bound
	fastDone := make(chan error, 1)
	go func() {
		for i := range fastTotal {
			if err := fastW.Emit(t.Context(), 0, int64(i)); err != nil {
				fastDone <- err
				return
			}
		}
		fastDone <- fastW.Finish(t.Context())
	}()
	got, err := readAll(t.Context(), fastR)
	require.Equal(t, io.EOF, err)
	require.Len(t, got, fastTotal, "the fast exchange's records, all of them")
	for i, r := range got {
		if r != int64(i) {
			require.Equal(t, int64(i), r, "record %d", i)
		}
	}
	require.NoError(t, <-fastDone)
	// The slow producer accepted at most the bound meanwhile and has not finished.
	assert.LessOrEqual(t, int(slowEmitted.Load()), bound, "records the slow exchange accepted while its consumer did not read")
	select {
	case err := <-slowDone:
		t.Fatalf("the slow producer ended (%v) although its consumer never read", err)
	default:
	}

	// The slow consumer reads: its producer goes on and every record arrives in order.
	got, err = readAll(t.Context(), slowR)
	require.Equal(t, io.EOF, err)
	require.NoError(t, <-slowDone)
	require.Len(t, got, slowTotal)
	for i, r := range got {
		if r != int64(i) {
			require.Equal(t, int64(i), r, "record %d", i)
		}
	}
}

// Records of every built-in codec and of a host's own cross between two processes' Environments
// as they were emitted.
func TestCodecsAcrossTheNetwork(t *testing.T) {
	codecs := netshuffle.NewCodecs()
	codecs.Register("wordcount", netshuffle.JSONCodec[wordCount]())
	producerEnv, consumerEnv := newEnv(t, netshuffle.Config{Codecs: codecs}), newEnv(t, netshuffle.Config{Codecs: codecs})
	x := newExchange(t)
	for _, tc := range []struct {
		codec   string
		records []any
	}{
		{netshuffle.CodecBytes, []any{[]byte("a"), []byte{}, []byte{0, 0xff}}},
		{netshuffle.CodecString, []any{"to", "be", ""}},
		{netshuffle.CodecInt64, []any{int64(-5), int64(0), int64(1) << 40}},
		{netshuffle.CodecJSON, []any{"x", 2.5, map[string]any{"k": []any{1.0}}}},
		{"", []any{"the default codec is json", 1.0}},
		{"wordcount", []any{wordCount{"go", 1}, wordCount{"rust", 2}}},
	} {
		id := x.partition(jobgraph.NewIntermediateDataSetID(), 0)
		w, sd := x.produce(producerEnv, "te-1", id, jobgraph.Blocking, tc.codec, 1)
		for _, r := range tc.records {
			require.NoError(t, w.Emit(t.Context(), 0, r))
		}
		require.NoError(t, w.Finish(t.Context()))
		got, err := readAll(t.Context(), x.read(consumerEnv, jobgraph.Blocking, 0, sd))
		require.Equal(t, io.EOF, err, tc.codec)
		assert.Equal(t, tc.records, got, "codec %q", tc.codec)
	}
}

// A record its data set's codec cannot encode fails the partition: the reader gets
// ErrProducerFailed naming the record's type, and so does the producer's next Emit. A codec
// the producer's process does not know is refused when the writer is created.
func TestRecordTheCodecCannotEncodeFailsThePartition(t *testing.T) {
	producerEnv, consumerEnv := newEnv(t, netshuffle.Config{}), newEnv(t, netshuffle.Config{})
	x := newExchange(t)
	id := x.partition(jobgraph.NewIntermediateDataSetID(), 0)
	w, sd := x.produce(producerEnv, "te-1", id, jobgraph.PipelinedBounded, netshuffle.CodecInt64, 1)
	r := x.read(consumerEnv, jobgraph.PipelinedBounded, 0, sd)
	require.NoError(t, w.Emit(t.Context(), 0, int64(1)))
	require.NoError(t, w.Emit(t.Context(), 0, "not an int64"))
	w.FlushIdle()
	got, err := readAll(t.Context(), r)
	assert.ErrorIs(t, err, taskexecutor.ErrProducerFailed)
	assert.ErrorContains(t, err, "netshuffle: codec int64 encodes int64 records, not string")
	assert.LessOrEqual(t, len(got), 1)
	emitErr := w.Emit(t.Context(), 0, int64(2))
	for i := 0; emitErr == nil && i < 1<<20; i++ { // the failure reaches the writer at its next batch
		emitErr = w.Emit(t.Context(), 0, int64(i))
	}
	assert.ErrorIs(t, emitErr, taskexecutor.ErrProducerFailed)

	id2 := x.partition(jobgraph.NewIntermediateDataSetID(), 0)
	x.book.Set("te-1", producerEnv.Addr())
	sd2, err := x.master.RegisterPartitionWithProducer(x.job, scheduler.PartitionDescriptor{ResultPartitionID: id2,
		DataSetID: id2.PartitionID.IntermediateDataSetID, ResultType: jobgraph.Blocking, NumberOfSubpartitions: 1, RecordCodec: "avro"},
		scheduler.ProducerDescriptor{ExecutionAttemptID: id2.ProducerID, ProducerLocation: "te-1"})
	require.NoError(t, err)
	_, err = producerEnv.CreateResultPartitionWriters(taskexecutor.ShuffleIOOwnerContext{JobID: x.job, TaskExecutor: "te-1"},
		[]rpc.ResultPartitionDeploymentDescriptor{{ResultPartitionID: id2, ResultType: jobgraph.Blocking, NumberOfSubpartitions: 1, ShuffleDescriptor: &sd2}})
	assert.EqualError(t, err, `output 0: netshuffle: record codec "avro" is not registered (registered: [bytes int64 json string])`)
}

// The ShuffleMaster describes a partition with its producer's data address, codec and number
// of subpartitions; a producer whose address it cannot resolve fails the registration.
func TestShuffleMasterDescriptor(t *testing.T) {
	x := newExchange(t)
	x.book.Set("te-1", "10.0.0.7:6121")
	id := x.partition(jobgraph.NewIntermediateDataSetID(), 3)
	sd, err := x.master.RegisterPartitionWithProducer(x.job, scheduler.PartitionDescriptor{ResultPartitionID: id, NumberOfSubpartitions: 4, RecordCodec: "int64"},
		scheduler.ProducerDescriptor{ExecutionAttemptID: id.ProducerID, ProducerLocation: "te-1"})
	require.NoError(t, err)
	assert.Equal(t, id, sd.ResultPartitionID)
	assert.Equal(t, jobgraph.ResourceID("te-1"), sd.ProducerLocation)
	assert.JSONEq(t, `{"address":"10.0.0.7:6121","codec":"int64","subpartitions":4}`, string(sd.Data))
	_, err = x.master.RegisterPartitionWithProducer(x.job, scheduler.PartitionDescriptor{ResultPartitionID: id, NumberOfSubpartitions: 1},
		scheduler.ProducerDescriptor{ExecutionAttemptID: id.ProducerID, ProducerLocation: "te-9"})
	assert.EqualError(t, err, "netshuffle: no data address for TaskExecutor te-9: TaskExecutor te-9 has no data address in the address book")
}

// What an Environment remembers of the partitions produced in its process goes with them:
// ReleasePartitionsLocally, ReleaseJobPartitions and ReleaseAllOf each forget theirs.
func TestReleasedPartitionsAreForgotten(t *testing.T) {
	env := newEnv(t, netshuffle.Config{})
	x := newExchange(t)
	ids := make([]rpc.ResultPartitionID, 3)
	for i, te := range []jobgraph.ResourceID{"te-1", "te-2", "te-3"} {
		ids[i] = x.partition(jobgraph.NewIntermediateDataSetID(), 0)
		w, _ := x.produce(env, te, ids[i], jobgraph.Blocking, netshuffle.CodecString, 1)
		require.NoError(t, w.Finish(t.Context()))
	}
	require.Equal(t, 3, env.NumProduced())
	env.ReleasePartitionsLocally(ids[0])
	assert.Equal(t, 2, env.NumProduced(), "after ReleasePartitionsLocally")
	env.ReleaseJobPartitions(x.job, "te-2")
	assert.Equal(t, 1, env.NumProduced(), "after ReleaseJobPartitions")
	assert.Equal(t, []rpc.ResultPartitionID{ids[2]}, env.ReleaseAllOf("te-3"))
	assert.Zero(t, env.NumProduced(), "after ReleaseAllOf")
}
