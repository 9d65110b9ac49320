package netshuffle

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Codec turns the records of one data set into bytes and back, for the trip from a producer's
// TaskExecutor to a consumer's. A data set names its codec (jobgraph.IntermediateDataSet.RecordCodec);
// producer and consumer look the name up in their own Codecs, which the host fills beside its
// task code. Flink: the TypeSerializer of the data set's type. An implementation must be safe
// for concurrent use (one Codec serves every stream of the process).
type Codec interface {
	// Append appends the encoding of record to dst and returns the extended slice; an error
	// (a record of a type the codec does not encode) fails the partition: its producer's next
	// Emit and its readers get it, wrapped in ErrProducerFailed.
	Append(dst []byte, record any) ([]byte, error)
	// Decode returns the record whose encoding is exactly b. It must not keep b (the buffer is
	// reused). An error closes the stream that carried b, as a malformed frame.
	Decode(b []byte) (any, error)
}

// FixedSizeCodec is a Codec whose every record is exactly RecordSize bytes: its Data frames
// carry no per-record lengths (Data.record_size), and Append must append exactly that many
// bytes (else the record fails its partition as an encoding error).
type FixedSizeCodec interface {
	Codec
	RecordSize() int
}

// Names of the built-in codecs, which every Codecs from NewCodecs holds.
const (
	// CodecBytes carries []byte records as they are (Decode copies).
	CodecBytes = "bytes"
	// CodecString carries string records.
	CodecString = "string"
	// CodecInt64 carries int64 records as 8 bytes, little endian (a FixedSizeCodec). Tasks
	// can write and read its records in batches without boxing them
	// (taskexecutor.Int64Writer, taskexecutor.Int64Reader).
	CodecInt64 = "int64"
	// CodecJSON carries any record encoding/json encodes; Decode gives what json.Unmarshal
	// into an `any` gives (numbers as float64, objects as map[string]any). For a record type
	// of your own, register JSONCodec[T] under a name of your own instead.
	CodecJSON = "json"
)

// DefaultCodec is the codec of a data set that names none (Config.DefaultCodec).
const DefaultCodec = CodecJSON

// Codecs maps codec names (jobgraph.IntermediateDataSet.RecordCodec) to Codecs, as
// taskexecutor.Registry maps task-code names to Invokables: every TaskExecutor process of a
// cluster is given the same names. Safe for concurrent use.
type Codecs struct {
	mu     sync.RWMutex
	codecs map[string]Codec
}

// NewCodecs returns a registry holding the built-ins (CodecBytes, CodecString, CodecInt64,
// CodecJSON).
func NewCodecs() *Codecs {
	c := &Codecs{codecs: make(map[string]Codec)}
	c.Register(CodecBytes, bytesCodec{})
	c.Register(CodecString, stringCodec{})
	c.Register(CodecInt64, int64Codec{})
	c.Register(CodecJSON, JSONCodec[any]())
	return c
}

// Register adds codec under name. It panics on an empty name, a nil codec or a name registered
// twice: these are programming errors of the host, found at start-up (as taskexecutor.Registry).
func (c *Codecs) Register(name string, codec Codec) {
	if name == "" || codec == nil {
		panic("netshuffle: Register needs a name and a Codec")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.codecs[name]; dup {
		panic(fmt.Sprintf("netshuffle: record codec %q registered twice", name))
	}
	c.codecs[name] = codec
}

// Lookup returns the codec registered under name.
func (c *Codecs) Lookup(name string) (Codec, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	codec, ok := c.codecs[name]
	return codec, ok
}

// Names lists the registered names, sorted.
func (c *Codecs) Names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	names := make([]string, 0, len(c.codecs))
	for n := range c.codecs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// lookup is Lookup with the error a shuffle reports for a name not registered.
func (c *Codecs) lookup(name string) (Codec, error) {
	codec, ok := c.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("netshuffle: record codec %q is not registered (registered: %v)", name, c.Names())
	}
	return codec, nil
}

type bytesCodec struct{}

func (bytesCodec) Append(dst []byte, record any) ([]byte, error) {
	b, ok := record.([]byte)
	if !ok {
		return dst, typeError(CodecBytes, "[]byte", record)
	}
	return append(dst, b...), nil
}

func (bytesCodec) Decode(b []byte) (any, error) { return append([]byte{}, b...), nil }

type stringCodec struct{}

func (stringCodec) Append(dst []byte, record any) ([]byte, error) {
	s, ok := record.(string)
	if !ok {
		return dst, typeError(CodecString, "string", record)
	}
	return append(dst, s...), nil
}

func (stringCodec) Decode(b []byte) (any, error) { return string(b), nil }

type int64Codec struct{}

func (int64Codec) Append(dst []byte, record any) ([]byte, error) {
	v, ok := record.(int64)
	if !ok {
		return dst, typeError(CodecInt64, "int64", record)
	}
	return binary.LittleEndian.AppendUint64(dst, uint64(v)), nil
}

// RecordSize implements FixedSizeCodec.
func (int64Codec) RecordSize() int { return 8 }

func (int64Codec) Decode(b []byte) (any, error) {
	if len(b) != 8 {
		return nil, fmt.Errorf("netshuffle: codec %s: a record of %d bytes; want 8", CodecInt64, len(b))
	}
	return int64(binary.LittleEndian.Uint64(b)), nil
}

// JSONCodec returns a codec that encodes records with encoding/json and decodes them into a T
// (any T encoding/json handles): register it under a name of your own for a record type of your
// own, e.g. codecs.Register("wordcount", netshuffle.JSONCodec[WordCount]()). Decode refuses
// trailing data and gives a T (not a *T).
func JSONCodec[T any]() Codec { return jsonCodec[T]{} }

type jsonCodec[T any] struct{}

func (jsonCodec[T]) Append(dst []byte, record any) ([]byte, error) {
	b, err := json.Marshal(record)
	if err != nil {
		return dst, fmt.Errorf("netshuffle: JSON codec: %w", err)
	}
	return append(dst, b...), nil
}

func (jsonCodec[T]) Decode(b []byte) (any, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("netshuffle: JSON codec: %w", err)
	}
	return v, nil
}

func typeError(codec, want string, record any) error {
	return fmt.Errorf("netshuffle: codec %s encodes %s records, not %T", codec, want, record)
}
