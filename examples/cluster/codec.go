package main

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jobgraph/jobgraph/examples/wordcount/wc"
	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// chunkCodec is the netshuffle.Codec of the word count's records (wc.Chunk, or a *wc.Chunk when
// encoding), registered as chunkCodecName. A Chunk of n words is, in this order:
//
//	varint Producer, uvarint n,
//	n × uvarint len(Word),
//	the n Words' bytes, concatenated,
//	n × varint Count
//
// (binary.AppendVarint/AppendUvarint). Decode makes one []WordCount and one string of all the
// words' bytes, which the Words share: 2 allocations a Chunk, where JSON (the first format)
// parsed every field through reflection and allocated a string per word — 15–25% of a
// TaskExecutor's CPU in the word count over $GOROOT/src (docs/BENCHMARKS.md).
type chunkCodec struct{}

var _ netshuffle.Codec = chunkCodec{}

func (chunkCodec) Append(dst []byte, record any) ([]byte, error) {
	var ch *wc.Chunk
	switch r := record.(type) {
	case wc.Chunk:
		ch = &r
	case *wc.Chunk:
		if r == nil {
			return dst, fmt.Errorf("codec %s: a nil *wc.Chunk", chunkCodecName)
		}
		ch = r
	}
	if ch == nil {
		return dst, fmt.Errorf("codec %s encodes wc.Chunk records, not %T", chunkCodecName, record)
	}
	dst = binary.AppendVarint(dst, int64(ch.Producer))
	dst = binary.AppendUvarint(dst, uint64(len(ch.Words)))
	for i := range ch.Words {
		dst = binary.AppendUvarint(dst, uint64(len(ch.Words[i].Word)))
	}
	for i := range ch.Words {
		dst = append(dst, ch.Words[i].Word...)
	}
	for i := range ch.Words {
		dst = binary.AppendVarint(dst, int64(ch.Words[i].Count))
	}
	return dst, nil
}

// errMalformedChunk is what Decode returns for bytes that are no Chunk.
var errMalformedChunk = errors.New("malformed wc.Chunk")

func (chunkCodec) Decode(b []byte) (any, error) {
	malformed := func(what string) error {
		return fmt.Errorf("codec %s: %w: %s (%d bytes)", chunkCodecName, errMalformedChunk, what, len(b))
	}
	producer, k := binary.Varint(b)
	if k <= 0 || int64(int(producer)) != producer {
		return nil, malformed("bad producer")
	}
	rest := b[k:]
	n, k := binary.Uvarint(rest)
	// Every word takes at least two bytes (its length and its count), so a number of words
	// above half of what is left cannot be right: refused before anything is allocated for it.
	if k <= 0 || n > uint64(len(rest)-k)/2 {
		return nil, malformed("bad number of words")
	}
	rest = rest[k:]
	words := make([]wc.WordCount, n)
	// The lengths wait in the Counts until the words are cut from their bytes.
	var total uint64
	for i := range words {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)) {
			return nil, malformed("bad word length")
		}
		words[i].Count = int(l)
		total += l
		rest = rest[k:]
	}
	if total > uint64(len(rest)) {
		return nil, malformed("words longer than the record")
	}
	all := string(rest[:total])
	rest = rest[total:]
	for i := range words {
		l := words[i].Count
		words[i].Word, all = all[:l], all[l:]
	}
	for i := range words {
		c, k := binary.Varint(rest)
		if k <= 0 || int64(int(c)) != c {
			return nil, malformed("bad count")
		}
		words[i].Count = int(c)
		rest = rest[k:]
	}
	if len(rest) != 0 {
		return nil, malformed(fmt.Sprintf("%d bytes after the last count", len(rest)))
	}
	return wc.Chunk{Producer: int(producer), Words: words}, nil
}
