package netshuffle_test

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// rogueServer is a data server that breaks the protocol on purpose, by partition index: 0 sends
// a Data frame of oversize bytes, 1 a frame whose record count does not match its bytes, 2 a
// frame of no known kind; any other index is served properly: three string records and End.
type rogueServer struct {
	netshuffle.UnimplementedPartitionServiceServer
	oversize int
}

func (s *rogueServer) Read(stream netshuffle.PartitionService_ReadServer) error {
	req, err := stream.Recv()
	if err != nil {
		return err
	}
	var id rpc.ResultPartitionID
	if err := json.Unmarshal(req.GetOpen().GetPartition(), &id); err != nil {
		return err
	}
	if err := stream.Send(&netshuffle.Frame{Kind: &netshuffle.Frame_Opened{Opened: &netshuffle.Opened{}}}); err != nil {
		return err
	}
	data := func(count uint32, records []byte) *netshuffle.Frame {
		return &netshuffle.Frame{Kind: &netshuffle.Frame_Data{Data: &netshuffle.Data{Count: count, Records: records}}}
	}
	switch id.PartitionID.PartitionIndex {
	case 0:
		big := binary.AppendUvarint(nil, uint64(s.oversize))
		err = stream.Send(data(1, append(big, make([]byte, s.oversize)...)))
	case 1:
		err = stream.Send(data(5, []byte{1, 'a', 1}))
	case 2:
		err = stream.Send(&netshuffle.Frame{})
	default:
		var recs []byte
		for _, w := range []string{"x", "y", "z"} {
			recs = append(binary.AppendUvarint(recs, uint64(len(w))), w...)
		}
		if err = stream.Send(data(3, recs)); err == nil {
			err = stream.Send(&netshuffle.Frame{Kind: &netshuffle.Frame_End{End: &netshuffle.End{}}})
		}
	}
	if err != nil {
		return err
	}
	<-stream.Context().Done() // hold the stream open: the consumer must close it itself
	return nil
}

// A frame twice the consumer's size limit, a malformed frame and one of no known kind each
// fail the reader of that stream with a *StreamError naming it (ErrFrameTooLarge,
// ErrMalformedFrame), while a stream on the same connection, opened after them, delivers all
// its records.
func TestBadFramesCloseOnlyTheirStream(t *testing.T) {
	const limit = 64 << 10
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.MaxSendMsgSize(4 * limit))
	netshuffle.RegisterPartitionServiceServer(srv, &rogueServer{oversize: 2 * limit})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	consumerEnv := newEnv(t, netshuffle.Config{MaxFrameSize: limit, DefaultCodec: netshuffle.CodecString})
	x := newExchange(t)
	x.book.Set("rogue", lis.Addr().String())
	ds := jobgraph.NewIntermediateDataSetID()
	desc := func(i int) rpc.ShuffleDescriptor {
		data, err := json.Marshal(map[string]any{"address": lis.Addr().String(), "codec": "string", "subpartitions": 1})
		require.NoError(t, err)
		return rpc.ShuffleDescriptor{ResultPartitionID: x.partition(ds, i), ProducerLocation: "rogue", Data: data}
	}
	for i, want := range []struct {
		sentinel error
		text     string
	}{
		{netshuffle.ErrFrameTooLarge, "netshuffle: frame too large: grpc: received message larger than max"},
		{netshuffle.ErrMalformedFrame, "netshuffle: malformed frame: 5 records in 3 bytes"},
		{netshuffle.ErrMalformedFrame, "netshuffle: malformed frame: a frame of no known kind"},
	} {
		r := x.read(consumerEnv, jobgraph.PipelinedBounded, 0, desc(i))
		got, err := readAll(t.Context(), r)
		assert.Empty(t, got, "partition %d", i)
		assert.ErrorIs(t, err, want.sentinel, "partition %d", i)
		assert.ErrorContains(t, err, want.text, "partition %d", i)
		var se *netshuffle.StreamError
		if assert.ErrorAs(t, err, &se, "partition %d", i) {
			assert.Equal(t, x.partition(ds, i), se.Partition)
			assert.Equal(t, lis.Addr().String(), se.Address)
		}
	}
	got, err := readAll(t.Context(), x.read(consumerEnv, jobgraph.PipelinedBounded, 0, desc(3)))
	assert.Equal(t, io.EOF, err)
	assert.Equal(t, []any{"x", "y", "z"}, got, "the well-formed stream on the same connection")
	assert.Equal(t, 1, consumerEnv.NumConns())
}

// A record larger than the consumer's frame limit never leaves the producer: its partition
// fails with ErrFrameTooLarge (the producer's next Emit says so, its task fails and the job
// fails over), the reader gets ErrProducerFailed matching ErrFrameTooLarge, and another
// partition between the same two processes goes on.
func TestRecordOverTheFrameLimitFailsItsPartitionOnly(t *testing.T) {
	const limit = 64 << 10
	producerEnv := newEnv(t, netshuffle.Config{})
	consumerEnv := newEnv(t, netshuffle.Config{MaxFrameSize: limit})
	x := newExchange(t)
	bigID, okID := x.partition(jobgraph.NewIntermediateDataSetID(), 0), x.partition(jobgraph.NewIntermediateDataSetID(), 0)
	bigW, bigSD := x.produce(producerEnv, "te-1", bigID, jobgraph.PipelinedBounded, netshuffle.CodecBytes, 1)
	okW, okSD := x.produce(producerEnv, "te-1", okID, jobgraph.PipelinedBounded, netshuffle.CodecBytes, 1)
	bigR := x.read(consumerEnv, jobgraph.PipelinedBounded, 0, bigSD)
	okR := x.read(consumerEnv, jobgraph.PipelinedBounded, 0, okSD)

	require.NoError(t, bigW.Emit(t.Context(), 0, make([]byte, 2*limit)))
	bigW.FlushIdle()
	_, err := readAll(t.Context(), bigR)
	assert.ErrorIs(t, err, taskexecutor.ErrProducerFailed)
	assert.ErrorIs(t, err, netshuffle.ErrFrameTooLarge, "the cause's code crosses with it")
	assert.ErrorContains(t, err, "an encoded record of 131072 bytes does not fit in the consumer's frame limit of 65536 bytes")
	assert.ErrorIs(t, bigW.Finish(t.Context()), taskexecutor.ErrProducerFailed, "the producer learns of it")

	for i := range 1000 {
		require.NoError(t, okW.Emit(t.Context(), 0, []byte{byte(i)}))
	}
	require.NoError(t, okW.Finish(t.Context()))
	got, err := readAll(t.Context(), okR)
	assert.Equal(t, io.EOF, err)
	assert.Len(t, got, 1000)
}
