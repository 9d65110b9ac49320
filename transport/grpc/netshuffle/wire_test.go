package netshuffle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// The wire codec writes a Data frame that protobuf reads as the same Frame (its record_size
// before its records, which protobuf allows; the same size as protoc's), reads protoc's
// encoding of every kind of frame as protobuf does (a Data frame's records as part of a pooled
// buffer), and gives a pooled records buffer back to the pool once gRPC freed it.
func TestWireCodecIsProtobufsWire(t *testing.T) {
	pool := newBytePool(1 << 10)
	c := newWireCodec(pool)
	for _, tc := range []struct {
		count, size int
		records     []byte
	}{
		{3, 0, []byte{1, 'a', 1, 'b', 1, 'c'}},
		{2, 8, make([]byte, 16)},
		{200, 4, make([]byte, 800)}, // a length of two varint bytes
	} {
		want, err := proto.Marshal(&Frame{Kind: &Frame_Data{Data: &Data{Count: uint32(tc.count), Records: tc.records, RecordSize: uint32(tc.size)}}})
		require.NoError(t, err)
		recs := append([]byte(nil), tc.records...)
		got, err := c.Marshal(&outFrame{count: tc.count, size: tc.size, records: &recs})
		require.NoError(t, err)
		var back Frame
		require.NoError(t, proto.Unmarshal(got.Materialize(), &back))
		assert.True(t, proto.Equal(&Frame{Kind: &Frame_Data{Data: &Data{Count: uint32(tc.count), Records: tc.records, RecordSize: uint32(tc.size)}}}, &back))
		assert.Equal(t, len(want), got.Len(), "count %d, size %d", tc.count, tc.size)

		var in inFrame
		require.NoError(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(want)}, &in))
		assert.True(t, in.isData)
		assert.Equal(t, uint64(tc.count), in.count)
		assert.Equal(t, uint64(tc.size), in.size)
		assert.Equal(t, tc.records, in.records)
		require.NotNil(t, in.buf)
	}

	for _, f := range []*Frame{
		{Kind: &Frame_End{End: &End{}}},
		{Kind: &Frame_Barrier{Barrier: &Barrier{Id: 7, SnapshotType: "SAVEPOINT"}}},
		{},
	} {
		b, err := proto.Marshal(f)
		require.NoError(t, err)
		var in inFrame
		require.NoError(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &in))
		assert.False(t, in.isData)
		assert.True(t, proto.Equal(f, &in.frame), "%v", f)
	}
	var in inFrame
	assert.Error(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0x0a, 0x05, 0x01})}, &in), "a truncated frame is protobuf's error")

	// A pooled records buffer: gRPC's last Free gives it back.
	buf := pool.Get(1 << 10)
	size := cap(*buf)
	*buf = append((*buf)[:0], 1, 'x')
	out, err := c.Marshal(&outFrame{count: 1, records: buf, pooled: true})
	require.NoError(t, err)
	assert.Len(t, *buf, 2, "still gRPC's")
	out.Free()
	assert.Empty(t, *buf, "bytePool.Put took it back (and emptied it)")
	assert.Equal(t, size, cap(*buf))
}

// The int64 batch copies give CodecInt64's encoding (8 bytes little endian a record), on this
// host's fast path as on the portable one.
func TestInt64BatchEncoding(t *testing.T) {
	vs := []int64{0, 1, -1, 1 << 40, -(1 << 62), 0x0102030405060708}
	var want []byte
	for _, v := range vs {
		want, _ = int64Codec{}.Append(want, v)
	}
	for _, fast := range []bool{true, false} {
		saved := hostLittleEndian
		hostLittleEndian = hostLittleEndian && fast
		got := appendInt64s([]byte{9}, vs)
		back := make([]int64, len(vs))
		decodeInt64s(back, got[1:])
		hostLittleEndian = saved
		assert.Equal(t, append([]byte{9}, want...), got, "fast %v", fast)
		assert.Equal(t, vs, back, "fast %v", fast)
	}
}
