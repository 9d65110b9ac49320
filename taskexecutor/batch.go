package taskexecutor

import (
	"context"
	"errors"
	"fmt"
)

// The batch fast path for int64 records. The record API (Emit, Next) takes and gives every
// record as an `any`, so an int64 is boxed — an allocation — on each side, and each record is
// one interface call. A task whose records are int64 can move them in batches instead, through
// behavioural interfaces the outputs and inputs the TaskExecutor gives it implement (a type
// assertion, as scheduler/restart_api.go's error interfaces):
//
//	out, fast := env.Output(0).(taskexecutor.Int64Writer)
//	in, fast := env.Input(0).(taskexecutor.Int64Reader)
//
// The task's outputs and inputs always implement them, whatever the ShuffleEnvironment: a
// shuffle that implements the shuffle-side interfaces (Int64Writer on its ShuffleWriter,
// BufferedInt64Reader on its ShuffleReader; the network shuffle of transport/grpc/netshuffle
// does, for a data set with its "int64" codec) moves each batch whole, with no boxing;
// otherwise the task's output emits each value and its input takes one at a time (the in-memory
// shuffle keeps `any` batches, so its records stay boxed). Records written through the batch
// path and through Emit, read through the batch path and through Next, mix in order on one
// output or input. Flink has no such API (its records are objects its serializers write into
// network buffers); this one is ours.

// ErrNotInt64 is what Int64Reader.NextInt64s reports (errors.Is) for a record that is not an
// int64.
var ErrNotInt64 = errors.New("taskexecutor: the record is not an int64")

// Int64Writer emits int64 records in batches. The ResultPartitionWriter Environment.Output gives
// implements it; a ShuffleWriter may implement it too (then the task's output hands each batch
// over whole).
type Int64Writer interface {
	// EmitInt64s appends values to subpartition s, 0 ≤ s < NumSubpartitions(), in order, as
	// one Emit(ctx, s, v) for each would (back-pressure, the task's stop, ctx, errors; each
	// value counts in numRecordsOut), but at once. values is not kept after it returns. On an
	// error some of values may have been emitted.
	EmitInt64s(ctx context.Context, s int, values []int64) error
}

// Int64Reader reads int64 records in batches. The InputGate Environment.Input gives implements
// it.
type Int64Reader interface {
	// NextInt64s fills dst with the next records, 1 ≤ n ≤ len(dst), and returns n: it waits,
	// as Next does, only while no record is there, then takes what is at hand (the rest of the
	// batch it holds, at most len(dst)), so n < len(dst) does not mean the input ended. It
	// returns 0 and what Next would return instead (io.EOF once every partition ended, a
	// partition's error, ctx's or the task's stop), or 0 and nil for an empty dst. A record
	// that is not an int64 is taken and reported: the call returns the int64s before it, and
	// the next call (or this one, when none was before it) returns an error wrapping
	// ErrNotInt64 naming its type; reading then goes on after it. Each record counts in
	// numRecordsIn. Barriers and the task's checkpoint mail are handled as in Next.
	NextInt64s(ctx context.Context, dst []int64) (int, error)
}

// BufferedInt64Reader is what a ShuffleReader implements to hand out int64 records in bulk
// (the in-memory shuffle's and the network shuffle's readers do).
type BufferedInt64Reader interface {
	// BufferedInt64s copies the int64 records at the front of the batch at hand into dst, at
	// most len(dst), without taking another batch, and returns how many. It stops before a
	// record it cannot give as an int64 (Buffered then gives that one), and returns 0 when no
	// batch is at hand.
	BufferedInt64s(dst []int64) int
}

// HandOverWriter is implemented by the in-memory shuffle's writers, for a shuffle that keeps its
// produced partitions in it but gathers records of its own making (the network shuffle's
// encoded frames, each one record). Used only from the writing task's goroutine.
type HandOverWriter interface {
	// HandOver appends record (unless nil) to subpartition s and hands over everything s
	// gathered as one batch, whatever its size: for a pipelined partition it waits for room
	// (block) as Emit does, until ctx ends or the task stops, or gives up at once (!block:
	// false, record is not taken, and what s gathered before stays for the next hand-over).
	// It returns the partition's error once the partition failed or was released.
	HandOver(ctx context.Context, s int, record any, block bool) (bool, error)
	// ReaderWaiting reports whether the reader of pipelined or hybrid subpartition s waits for
	// data, as Emit checks before it hands over a partial batch: true once per wait of the
	// reader (it clears the reader's signal), false for a blocking partition.
	ReaderWaiting(s int) bool
}

var (
	_ Int64Writer         = (*taskOutput)(nil)
	_ Int64Reader         = (*taskInput)(nil)
	_ BufferedInt64Reader = (*inputGate)(nil)
	_ HandOverWriter      = (*partitionWriter)(nil)
	_ Int64Writer         = errorWriter{}
	_ Int64Reader         = errorGate{}
)

func (o *taskOutput) EmitInt64s(ctx context.Context, s int, values []int64) error {
	if o.e.attention() {
		if err := o.e.checkpointWork(ctx); err != nil {
			return err
		}
	}
	if w, ok := o.w.(Int64Writer); ok {
		if err := w.EmitInt64s(ctx, s, values); err != nil {
			return err
		}
		o.e.recordsOut.Add(int64(len(values)))
		return nil
	}
	for i, v := range values {
		if err := o.w.Emit(ctx, s, v); err != nil {
			o.e.recordsOut.Add(int64(i))
			return err
		}
	}
	o.e.recordsOut.Add(int64(len(values)))
	return nil
}

func (in *taskInput) NextInt64s(ctx context.Context, dst []int64) (int, error) {
	if err := in.notInt64; err != nil {
		in.notInt64 = nil
		return 0, err
	}
	if len(dst) == 0 {
		return 0, nil
	}
	e := in.e
	if err := e.stop.Err(); err != nil {
		return 0, err
	}
	if e.attention() {
		if err := e.checkpointWork(ctx); err != nil {
			return 0, err
		}
	}
	g := e.gates[in.i]
	n := in.buffered(g, dst)
	if n == 0 && in.notInt64 == nil {
		r, err := e.nextOf(ctx, in.i)
		if err != nil {
			return 0, err
		}
		v, ok := r.(int64)
		if !ok {
			e.recordsIn.Inc()
			return 0, notInt64(r)
		}
		dst[0] = v
		n = 1 + in.buffered(g, dst[1:])
	}
	if n == 0 {
		err := in.notInt64
		in.notInt64 = nil
		return 0, err
	}
	e.recordsIn.Add(int64(n))
	return n, nil
}

// buffered fills dst from the batch at hand of g; a record that is not an int64 ends it and is
// noted in in.notInt64 (counted in numRecordsIn).
func (in *taskInput) buffered(g ShuffleReader, dst []int64) int {
	br, bulk := g.(BufferedInt64Reader)
	n := 0
	for n < len(dst) {
		if bulk {
			if k := br.BufferedInt64s(dst[n:]); k > 0 {
				n += k
				continue
			}
		}
		r, ok := g.Buffered()
		if !ok {
			break
		}
		v, isInt := r.(int64)
		if !isInt {
			in.e.recordsIn.Inc()
			in.notInt64 = notInt64(r)
			break
		}
		dst[n] = v
		n++
	}
	return n
}

func notInt64(r any) error {
	return fmt.Errorf("%w: a record of type %T", ErrNotInt64, r)
}

// BufferedInt64s implements BufferedInt64Reader.
func (g *inputGate) BufferedInt64s(dst []int64) int {
	n := 0
	for n < len(dst) && g.pos < len(g.cur) {
		v, ok := g.cur[g.pos].(int64)
		if !ok {
			break
		}
		dst[n] = v
		n++
		g.pos++
	}
	return n
}

// HandOver implements HandOverWriter.
func (w *partitionWriter) HandOver(ctx context.Context, s int, record any, block bool) (bool, error) {
	if err := w.stop.Err(); err != nil {
		return false, err
	}
	if uint(s) >= uint(w.n) {
		return false, fmt.Errorf("result partition %s: subpartition %d out of range [0, %d)", partitionName(w.p.id), s, w.n)
	}
	o := w.out(s)
	if record != nil {
		if o.buf == nil {
			o.buf = w.newBuf()
		}
		o.buf = append(o.buf, record)
	}
	if len(o.buf) == 0 {
		return true, nil
	}
	if err := w.flush(ctx, o, block); err != nil {
		return false, err
	}
	if len(o.buf) > 0 { // no room, and !block
		if record != nil {
			o.buf[len(o.buf)-1] = nil
			o.buf = o.buf[:len(o.buf)-1]
		}
		return false, nil
	}
	return true, nil
}

// ReaderWaiting implements HandOverWriter.
func (w *partitionWriter) ReaderWaiting(s int) bool {
	if !w.eager || uint(s) >= uint(w.n) {
		return false
	}
	h := w.target(w.out(s))
	return h != nil && h.hungry.Load() && h.hungry.CompareAndSwap(true, false)
}

func (w errorWriter) EmitInt64s(context.Context, int, []int64) error { return w.err }

func (g errorGate) NextInt64s(context.Context, []int64) (int, error) { return 0, g.err }
