package netshuffle

import (
	"encoding/binary"
	"slices"
	"unsafe"
)

// hostLittleEndian: CodecInt64's encoding (8 bytes, little endian) is how this host keeps an
// int64 in memory, so a batch of them is copied as bytes, a memmove, not value by value.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// appendInt64s appends vs to b in CodecInt64's encoding.
func appendInt64s(b []byte, vs []int64) []byte {
	if len(vs) == 0 {
		return b
	}
	if hostLittleEndian {
		return append(b, unsafe.Slice((*byte)(unsafe.Pointer(&vs[0])), 8*len(vs))...)
	}
	off := len(b)
	b = slices.Grow(b, 8*len(vs))[:off+8*len(vs)]
	out := b[off:]
	for i, v := range vs {
		binary.LittleEndian.PutUint64(out[8*i:], uint64(v))
	}
	return b
}

// decodeInt64s decodes len(dst) records of CodecInt64's encoding from b (8·len(dst) bytes).
func decodeInt64s(dst []int64, b []byte) {
	if len(dst) == 0 {
		return
	}
	if hostLittleEndian {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 8*len(dst)), b)
		return
	}
	for i := range dst {
		dst[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
}
