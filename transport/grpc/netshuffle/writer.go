package netshuffle

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// chunk is a run of encoded records of one subpartition, in the wire's format of Data.records:
// what a writer hands to the in-memory shuffle (as one record) and the data server sends as one
// Data frame, or as part of one. Flink: the network buffer a RecordWriter serializes records
// into.
type chunk struct {
	data  []byte
	buf   *[]byte // the pool's buffer data was taken from (pooled), nil for none
	count int
	size  int // fixed record size (FixedSizeCodec); 0: each record is a uvarint length and its bytes
	// pooled: data goes back to the Environment's pool once sent (a pipelined partition's
	// chunk is read once); a retained partition's chunks are kept and may be sent again.
	pooled bool
}

// getChunk returns an empty chunk, its buffer from the pool when pooled.
func (e *Environment) getChunk(size int, pooled bool) *chunk {
	if pooled {
		buf := e.pool.Get(e.chunkCap)
		return &chunk{data: (*buf)[:0], buf: buf, size: size, pooled: true}
	}
	// A retained partition keeps its chunks: one grows as it fills (most subpartitions of a
	// large exchange carry little).
	return &chunk{data: make([]byte, 0, min(e.chunkCap, 4<<10)), size: size}
}

// putChunk gives a pooled chunk's buffer back once nothing refers to its data any more.
func (e *Environment) putChunk(c *chunk) {
	if c == nil || !c.pooled || c.buf == nil {
		return
	}
	*c.buf = c.data[:0] // the pool keeps it only if it did not grow
	e.pool.Put(c.buf)
	c.buf, c.data = nil, nil
}

// records hands c's data over to gRPC as a frame's records (see outFrame): a pooled buffer
// goes back to the pool once written (c is done with it).
func (c *chunk) records() *outFrame {
	f := &outFrame{count: c.count, size: c.size, pooled: c.pooled && c.buf != nil}
	if f.pooled {
		*c.buf = c.data
		f.records = c.buf
		c.buf, c.data = nil, nil
	} else {
		data := c.data // a retained partition's chunk: kept as it is, read again
		f.records = &data
	}
	return f
}

// writer is the ShuffleWriter of a partition produced in this process: it encodes each record
// with the data set's codec straight into the chunk of its subpartition, and hands a chunk to
// the in-memory shuffle (whose semantics the partition keeps: back-pressure, blocking and
// hybrid partitions, failure, release) once it holds Config.BufferSize bytes, or earlier when
// the data server waits for data (the in-memory reader's hunger), when the task waits for input
// (FlushIdle), before a barrier and at the end. It implements taskexecutor.Int64Writer: a data
// set with the int64 codec takes batches of int64s without boxing them. Used only from the
// writing task's goroutine. Flink: RecordWriter with its BufferBuilders.
type writer struct {
	taskexecutor.ShuffleWriter // the in-memory shuffle's
	ho                         taskexecutor.HandOverWriter
	env                        *Environment
	id                         rpc.ResultPartitionID
	stop                       *taskexecutor.TaskStop // nil: none
	codec                      Codec
	size                       int  // the codec's fixed record size, 0 for none
	int64s                     bool // the built-in int64 codec
	pooled                     bool // pipelined: chunks are read once, then reused
	limit                      int  // hand a chunk over once it holds this many bytes
	n                          int
	subs                       []*chunk // the chunk being filled, by subpartition
	scratch                    []byte
	err                        error // a record the codec refused failed the partition
}

var _ taskexecutor.Int64Writer = (*writer)(nil)

func (e *Environment) newWriter(inner taskexecutor.ShuffleWriter, owner taskexecutor.ShuffleIOOwnerContext, d rpc.ResultPartitionDeploymentDescriptor, codec Codec) (*writer, error) {
	ho, ok := inner.(taskexecutor.HandOverWriter)
	if !ok {
		return nil, fmt.Errorf("netshuffle: the in-memory shuffle's writer %T cannot hand over chunks", inner)
	}
	w := &writer{ShuffleWriter: inner, ho: ho, env: e, id: d.ResultPartitionID, stop: owner.Stop, codec: codec,
		pooled: !d.ResultType.IsBlocking() && !d.ResultType.IsHybrid(), limit: e.recordBytes(), n: inner.NumSubpartitions()}
	if f, ok := codec.(FixedSizeCodec); ok && f.RecordSize() > 0 {
		w.size = f.RecordSize()
	}
	_, w.int64s = codec.(int64Codec)
	return w, nil
}

// check is what every write checks first: the partition failed here, the task stopped, s out
// of range.
func (w *writer) check(s int) error {
	if w.err != nil {
		return w.err
	}
	if w.stop != nil {
		if err := w.stop.Err(); err != nil {
			return err
		}
	}
	if uint(s) >= uint(w.n) {
		return fmt.Errorf("result partition %s@%s: subpartition %d out of range [0, %d)", w.id.PartitionID, w.id.ProducerID, s, w.n)
	}
	return nil
}

func (w *writer) chunkFor(s int) *chunk {
	if w.subs == nil {
		w.subs = make([]*chunk, w.n)
	}
	c := w.subs[s]
	if c == nil {
		c = w.env.getChunk(w.size, w.pooled)
		w.subs[s] = c
	}
	return c
}

// Emit encodes record into subpartition s's chunk. A record the codec refuses fails the
// partition (its readers get ErrProducerFailed naming why; this Emit returns nil, the next one
// the partition's error), as the Codec documents.
func (w *writer) Emit(ctx context.Context, s int, record any) error {
	if err := w.check(s); err != nil {
		return err
	}
	c := w.chunkFor(s)
	if err := w.encode(c, record); err != nil {
		w.failEncoding(s, err)
		return nil
	}
	return w.maybeHandOver(ctx, s, c)
}

func (w *writer) encode(c *chunk, record any) error {
	if w.size > 0 {
		off := len(c.data)
		data, err := w.codec.Append(c.data, record)
		if err != nil {
			return err
		}
		if len(data)-off != w.size {
			return fmt.Errorf("netshuffle: a fixed-size codec appended %d bytes; its records are %d", len(data)-off, w.size)
		}
		c.data = data
	} else {
		var err error
		if w.scratch, err = w.codec.Append(w.scratch[:0], record); err != nil {
			return err
		}
		c.data = binary.AppendUvarint(c.data, uint64(len(w.scratch)))
		c.data = append(c.data, w.scratch...)
	}
	c.count++
	return nil
}

// maybeHandOver hands c over once it is full, or when the data server waits for this
// subpartition's data.
func (w *writer) maybeHandOver(ctx context.Context, s int, c *chunk) error {
	if len(c.data) >= w.limit || w.ho.ReaderWaiting(s) {
		return w.handOver(ctx, s, true)
	}
	return nil
}

func (w *writer) failEncoding(s int, err error) {
	cause := fmt.Errorf("netshuffle: record for subpartition %d of %v: %w", s, w.id, err)
	w.ShuffleWriter.Fail(cause)
	w.err = &taskexecutor.PartitionError{Partition: w.id, Reason: taskexecutor.ErrProducerFailed, Cause: cause}
	w.dropChunks()
}

// handOver gives subpartition s's chunk to the in-memory shuffle, waiting for room (block) or
// not; a chunk it cannot hand over at once stays here, to be filled further. So the in-memory
// shuffle's batches hold one chunk each.
func (w *writer) handOver(ctx context.Context, s int, block bool) error {
	c := w.subs[s]
	if c == nil || c.count == 0 {
		return nil
	}
	done, err := w.ho.HandOver(ctx, s, c, block)
	if done || err != nil {
		w.subs[s] = nil
	}
	return err
}

// handOverAll hands over every partial chunk, waiting for room.
func (w *writer) handOverAll(ctx context.Context) error {
	for s := range w.subs {
		if err := w.handOver(ctx, s, true); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) dropChunks() {
	for s, c := range w.subs {
		w.env.putChunk(c)
		w.subs[s] = nil
	}
}

func (w *writer) Broadcast(ctx context.Context, record any) error {
	for s := range w.n {
		if err := w.Emit(ctx, s, record); err != nil {
			return err
		}
	}
	return nil
}

// EmitInt64s implements taskexecutor.Int64Writer: with the int64 codec the values are copied
// into the chunk as they are (8 bytes each, little endian), else each is emitted.
func (w *writer) EmitInt64s(ctx context.Context, s int, values []int64) error {
	if err := w.check(s); err != nil {
		return err
	}
	if !w.int64s {
		for _, v := range values {
			if err := w.Emit(ctx, s, v); err != nil {
				return err
			}
		}
		return nil
	}
	for len(values) > 0 {
		c := w.chunkFor(s)
		k := min(max((w.limit-len(c.data))/8, 1), len(values))
		c.data = appendInt64s(c.data, values[:k])
		c.count += k
		values = values[k:]
		if len(c.data) >= w.limit {
			if err := w.handOver(ctx, s, true); err != nil {
				return err
			}
		}
	}
	if w.subs != nil && w.subs[s] != nil && w.ho.ReaderWaiting(s) {
		return w.handOver(ctx, s, true)
	}
	return nil
}

// FlushIdle hands over every partial chunk that can go without waiting (a chunk that cannot
// stays, in order, in the in-memory shuffle's batch), then the in-memory writer's.
func (w *writer) FlushIdle() {
	if w.err == nil {
		for s := range w.subs {
			_ = w.handOver(context.Background(), s, false) // a failed partition fails the next write
		}
	}
	w.ShuffleWriter.FlushIdle()
}

// Finish hands over what is left, then finishes the partition.
func (w *writer) Finish(ctx context.Context) error {
	if w.err == nil {
		if err := w.handOverAll(ctx); err != nil {
			return err
		}
	}
	return w.ShuffleWriter.Finish(ctx)
}

// BroadcastBarrier hands over every partial chunk, then the barrier, which so comes after every
// record emitted before it.
func (w *writer) BroadcastBarrier(ctx context.Context, b *taskexecutor.CheckpointBarrier) error {
	if w.err != nil {
		return w.err
	}
	if err := w.handOverAll(ctx); err != nil {
		return err
	}
	return w.ShuffleWriter.BroadcastBarrier(ctx, b)
}

func (w *writer) Fail(cause error) {
	w.dropChunks()
	w.ShuffleWriter.Fail(cause)
}
