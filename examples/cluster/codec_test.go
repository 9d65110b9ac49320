package main

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/examples/wordcount/wc"
)

// chunkSamples are Chunks the codec must carry exactly: none, one and ChunkSize words, words of
// other scripts and of 100,000 bytes, counts of 1 and of 2⁴⁰, a negative one (the codec carries
// any int), producers 0 and 2¹⁵−1.
func chunkSamples() []wc.Chunk {
	full := make([]wc.WordCount, wc.ChunkSize)
	for i := range full {
		full[i] = wc.WordCount{Word: fmt.Sprintf("w%05d_日本", i), Count: i + 1}
	}
	return []wc.Chunk{
		{Producer: 0, Words: []wc.WordCount{}},
		{Producer: 3, Words: []wc.WordCount{{Word: "func", Count: 1}}},
		{Producer: 1<<15 - 1, Words: full},
		{Producer: 7, Words: []wc.WordCount{{Word: "é", Count: 1 << 40}, {Word: strings.Repeat("x", 100_000), Count: 2}, {Word: "z", Count: -5}}},
	}
}

// Append then Decode gives back the Chunk, as a wc.Chunk, whether a wc.Chunk or a *wc.Chunk was
// encoded; Append extends dst and leaves what it held.
func TestChunkCodecRoundTrip(t *testing.T) {
	for _, ch := range chunkSamples() {
		b, err := chunkCodec{}.Append([]byte("prefix"), ch)
		require.NoError(t, err)
		require.Equal(t, "prefix", string(b[:6]))
		byPointer, err := chunkCodec{}.Append(nil, &ch)
		require.NoError(t, err)
		assert.Equal(t, b[6:], byPointer)
		got, err := chunkCodec{}.Decode(b[6:])
		require.NoError(t, err)
		assert.Equal(t, ch, got)
	}
}

// The layout the codec documents: producer, number of words, lengths, bytes, counts.
func TestChunkCodecLayout(t *testing.T) {
	b, err := chunkCodec{}.Append(nil, wc.Chunk{Producer: 2, Words: []wc.WordCount{{Word: "ab", Count: 3}, {Word: "c", Count: 300}}})
	require.NoError(t, err)
	want := binary.AppendVarint(nil, 2)
	want = binary.AppendUvarint(want, 2)
	want = binary.AppendUvarint(want, 2)
	want = binary.AppendUvarint(want, 1)
	want = append(want, "abc"...)
	want = binary.AppendVarint(want, 3)
	want = binary.AppendVarint(want, 300)
	assert.Equal(t, want, b)
}

// A record that is no Chunk is an error naming the codec and the record's type.
func TestChunkCodecRefusesOtherRecords(t *testing.T) {
	_, err := chunkCodec{}.Append(nil, "func")
	assert.EqualError(t, err, "codec wordcount.chunk encodes wc.Chunk records, not string")
	_, err = chunkCodec{}.Append(nil, (*wc.Chunk)(nil))
	assert.EqualError(t, err, "codec wordcount.chunk: a nil *wc.Chunk")
}

// Every strict prefix of an encoding, the encoding with a byte after it, and a number of words
// too large for the bytes (refused before anything is allocated for it) are malformed.
func TestChunkCodecRefusesMalformedBytes(t *testing.T) {
	b, err := chunkCodec{}.Append(nil, wc.Chunk{Producer: 7, Words: []wc.WordCount{{Word: "é", Count: 1 << 40}, {Word: "xyz", Count: 2}, {Word: "z", Count: -5}}})
	require.NoError(t, err)
	for n := range len(b) {
		_, err := chunkCodec{}.Decode(b[:n])
		require.ErrorIs(t, err, errMalformedChunk, "prefix of %d of %d bytes", n, len(b))
	}
	_, err = chunkCodec{}.Decode(append(b[:len(b):len(b)], 0))
	assert.ErrorIs(t, err, errMalformedChunk)
	assert.ErrorContains(t, err, "1 bytes after the last count")

	huge := binary.AppendUvarint(binary.AppendVarint(nil, 0), 1<<60)
	_, err = chunkCodec{}.Decode(append(huge, 1, 2, 3))
	assert.ErrorIs(t, err, errMalformedChunk)
	assert.ErrorContains(t, err, "bad number of words")
}

// Decode never panics, and what it accepts encodes to bytes it decodes to the same Chunk.
func FuzzChunkCodecDecode(f *testing.F) {
	for _, ch := range chunkSamples()[:2] {
		b, err := chunkCodec{}.Append(nil, ch)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 2, 1, 1, 'a', 'b', 2, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := chunkCodec{}.Decode(b)
		if err != nil {
			require.ErrorIs(t, err, errMalformedChunk)
			return
		}
		again, err := chunkCodec{}.Append(nil, got)
		require.NoError(t, err)
		back, err := chunkCodec{}.Decode(again)
		require.NoError(t, err)
		require.Equal(t, got, back)
	})
}
