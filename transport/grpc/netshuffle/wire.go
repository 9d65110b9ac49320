package netshuffle

import (
	"sync"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// bytePool is the Environment's buffer pool: the chunks its writers fill, the Data frames its
// readers receive, and gRPC's own buffers for the Environment's connections (its transport
// reads each HTTP/2 frame into one). Unlike gRPC's default pool it does not clear a buffer it
// hands out again: every user overwrites what it reads (a chunk is appended to from empty, a
// received frame and gRPC's reads fill exactly the length they asked for). Buffers of a size
// it does not keep are allocated and dropped. Safe for concurrent use.
type bytePool struct {
	sizes []int // ascending
	pools []sync.Pool
}

var _ mem.BufferPool = (*bytePool)(nil)

func newBytePool(chunkCap int) *bytePool {
	sizes := []int{256, 4 << 10, 16 << 10}
	if chunkCap > sizes[len(sizes)-1] {
		sizes = append(sizes, chunkCap)
	}
	return &bytePool{sizes: sizes, pools: make([]sync.Pool, len(sizes))}
}

// Get implements mem.BufferPool: a buffer of length n.
func (p *bytePool) Get(n int) *[]byte {
	for i, size := range p.sizes {
		if n <= size {
			if b, ok := p.pools[i].Get().(*[]byte); ok {
				*b = (*b)[:n]
				return b
			}
			b := make([]byte, n, size)
			return &b
		}
	}
	b := make([]byte, n)
	return &b
}

// Put implements mem.BufferPool: a buffer of one of the pool's sizes is kept.
func (p *bytePool) Put(b *[]byte) {
	c := cap(*b)
	for i, size := range p.sizes {
		if c == size {
			*b = (*b)[:0]
			p.pools[i].Put(b)
			return
		}
	}
}

// wireCodec is the gRPC codec of the Environment's streams, on both sides: the protobuf wire
// of netshuffle.proto, with Data frames written and read without protobuf's copies. An
// outFrame goes out as its header and its records buffer as they are (a pooled buffer goes
// back to the pool once gRPC wrote it); an inFrame takes a received Data frame in one copy into
// a pooled buffer, its records a part of it. Every other message is protobuf's, through gRPC's
// proto codec. Its name is "proto": on the wire nothing differs from protoc's code.
type wireCodec struct {
	pool  *bytePool
	proto encoding.CodecV2
}

var _ encoding.CodecV2 = wireCodec{}

func newWireCodec(pool *bytePool) wireCodec {
	return wireCodec{pool: pool, proto: encoding.GetCodecV2(grpcproto.Name)}
}

func (wireCodec) Name() string { return grpcproto.Name }

func (c wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	if f, ok := v.(*outFrame); ok {
		return f.marshal(c.pool), nil
	}
	return c.proto.Marshal(v)
}

func (c wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if f, ok := v.(*inFrame); ok {
		return f.unmarshal(data, c.pool)
	}
	return c.proto.Unmarshal(data, v)
}

// outFrame is a Data frame to send: Frame{data: Data{count, records, record_size}} on the
// wire.
type outFrame struct {
	count, size int
	records     *[]byte
	// pooled: records is the pool's; gRPC gives it back once written. Otherwise records is
	// never changed after it was sent (a retained partition's chunk).
	pooled bool
}

func (f *outFrame) marshal(pool *bytePool) mem.BufferSlice {
	recs := *f.records
	inner := protowire.SizeTag(2) + protowire.SizeBytes(len(recs))
	if f.count != 0 {
		inner += protowire.SizeTag(1) + protowire.SizeVarint(uint64(f.count))
	}
	if f.size != 0 {
		inner += protowire.SizeTag(3) + protowire.SizeVarint(uint64(f.size))
	}
	hdr := make([]byte, 0, 32)
	hdr = protowire.AppendTag(hdr, 1, protowire.BytesType)
	hdr = protowire.AppendVarint(hdr, uint64(inner))
	if f.count != 0 {
		hdr = protowire.AppendTag(hdr, 1, protowire.VarintType)
		hdr = protowire.AppendVarint(hdr, uint64(f.count))
	}
	if f.size != 0 {
		hdr = protowire.AppendTag(hdr, 3, protowire.VarintType)
		hdr = protowire.AppendVarint(hdr, uint64(f.size))
	}
	hdr = protowire.AppendTag(hdr, 2, protowire.BytesType)
	hdr = protowire.AppendVarint(hdr, uint64(len(recs)))
	body := mem.Buffer(mem.SliceBuffer(recs))
	if f.pooled {
		body = mem.NewBuffer(f.records, pool)
	}
	return mem.BufferSlice{mem.SliceBuffer(hdr), body}
}

// inFrame is a received Frame: a Data frame's parts (isData; records within buf, the pool's),
// or any other frame in frame.
type inFrame struct {
	isData      bool
	count, size uint64
	records     []byte
	buf         *[]byte
	frame       Frame
}

func (f *inFrame) unmarshal(data mem.BufferSlice, pool *bytePool) error {
	buf := pool.Get(data.Len())
	data.CopyTo(*buf)
	b := *buf
	if num, typ, n := protowire.ConsumeTag(b); n > 0 && num == 1 && typ == protowire.BytesType {
		if inner, m := protowire.ConsumeBytes(b[n:]); m > 0 && n+m == len(b) && f.parseData(inner) {
			f.buf = buf
			return nil
		}
	}
	// Not a plain Data frame: protobuf's (errors included).
	err := proto.Unmarshal(b, &f.frame)
	pool.Put(buf)
	return err
}

// parseData reads a Data message's fields; false if it is not one protobuf would read the same
// way (then proto.Unmarshal does).
func (f *inFrame) parseData(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			f.count, n = protowire.ConsumeVarint(b)
		case num == 2 && typ == protowire.BytesType:
			f.records, n = protowire.ConsumeBytes(b)
		case num == 3 && typ == protowire.VarintType:
			f.size, n = protowire.ConsumeVarint(b)
		case num == 1 || num == 2 || num == 3:
			return false
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	if f.count > 1<<32-1 || f.size > 1<<32-1 {
		return false
	}
	f.isData = true
	return true
}
