package netshuffle_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// Every built-in codec gives back what it was given, of the same type; a record of another
// type is refused naming both types, and bytes that are no encoding are refused.
func TestBuiltInCodecsRoundTrip(t *testing.T) {
	c := netshuffle.NewCodecs()
	assert.Equal(t, []string{"bytes", "int64", "json", "string"}, c.Names())
	for _, tc := range []struct {
		codec   string
		records []any
		bad     any
		badErr  string
	}{
		{netshuffle.CodecBytes, []any{[]byte{}, []byte{0, 1, 0xff}}, "s", "netshuffle: codec bytes encodes []byte records, not string"},
		{netshuffle.CodecString, []any{"", "word", "ünï\x00"}, 7, "netshuffle: codec string encodes string records, not int"},
		{netshuffle.CodecInt64, []any{int64(0), int64(-1), int64(1 << 62)}, 7, "netshuffle: codec int64 encodes int64 records, not int"},
		{netshuffle.CodecJSON, []any{"x", 1.5, map[string]any{"w": "go", "n": 3.0}, []any{true, nil}}, func() {}, "netshuffle: JSON codec: json: unsupported type: func()"},
	} {
		codec, ok := c.Lookup(tc.codec)
		require.True(t, ok, tc.codec)
		for _, r := range tc.records {
			b, err := codec.Append([]byte("prefix"), r)
			require.NoError(t, err)
			assert.Equal(t, "prefix", string(b[:6]), "Append appends")
			got, err := codec.Decode(b[6:])
			require.NoError(t, err)
			assert.Equal(t, r, got, "%s round trip", tc.codec)
		}
		_, err := codec.Append(nil, tc.bad)
		assert.EqualError(t, err, tc.badErr)
	}
	i64, _ := c.Lookup(netshuffle.CodecInt64)
	_, err := i64.Decode([]byte{1, 2, 3})
	assert.EqualError(t, err, "netshuffle: codec int64: a record of 3 bytes; want 8")
	js, _ := c.Lookup(netshuffle.CodecJSON)
	_, err = js.Decode([]byte(`{"a":1} x`))
	assert.ErrorContains(t, err, "netshuffle: JSON codec: invalid character 'x' after top-level value")

	// Decode of bytes does not keep the buffer.
	bc, _ := c.Lookup(netshuffle.CodecBytes)
	buf := []byte{1, 2}
	got, err := bc.Decode(buf)
	require.NoError(t, err)
	buf[0] = 9
	assert.Equal(t, []byte{1, 2}, got)
}

type wordCount struct {
	Word  string `json:"w"`
	Count int    `json:"n"`
}

// A host registers its own codec beside its task code, here JSONCodec of its record type, which
// decodes into that type; registering a name twice, or an empty one, is a programming error.
func TestRegisterOwnCodec(t *testing.T) {
	c := netshuffle.NewCodecs()
	c.Register("wordcount", netshuffle.JSONCodec[wordCount]())
	codec, ok := c.Lookup("wordcount")
	require.True(t, ok)
	b, err := codec.Append(nil, wordCount{"go", 3})
	require.NoError(t, err)
	assert.JSONEq(t, `{"w":"go","n":3}`, string(b))
	got, err := codec.Decode(b)
	require.NoError(t, err)
	assert.Equal(t, wordCount{"go", 3}, got)
	_, ok = c.Lookup("nope")
	assert.False(t, ok)
	assert.PanicsWithValue(t, `netshuffle: record codec "wordcount" registered twice`, func() { c.Register("wordcount", netshuffle.JSONCodec[int]()) })
	assert.PanicsWithValue(t, "netshuffle: Register needs a name and a Codec", func() { c.Register("", netshuffle.JSONCodec[int]()) })
	assert.PanicsWithValue(t, "netshuffle: Register needs a name and a Codec", func() { c.Register("x", nil) })
}
