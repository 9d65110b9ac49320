package taskexecutor

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// newTestEnv returns a task environment whose input i reads subpartition 0 of the pipelined
// partitions inputs[i]. It is closed when the test ends.
func newTestEnv(t testing.TB, s *Shuffle, inputs ...[]rpc.ResultPartitionID) *environment {
	t.Helper()
	env := newEnvironment(notStopped, TaskInfo{TaskName: "D (1/1)"})
	t.Cleanup(env.closeInputs)
	for _, ids := range inputs {
		d := rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.PipelinedBounded, Partitions: ids, ConsumedSubpartitionIndex: 0}
		require.NoError(t, env.openInput(s, jobID(1), d))
	}
	return env
}

// pids returns one partition per producer vertex v, each produced by subtask 0 of v.
func pids(vs ...byte) []rpc.ResultPartitionID {
	out := make([]rpc.ResultPartitionID, len(vs))
	for i, v := range vs {
		out[i] = partID(v, 0, attemptID(v, 0, 0))
	}
	return out
}

// anyRecord is what one NextAny call returned.
type anyRecord struct {
	In  int
	Rec any
	Err error
}

func nextAny(env AnyInputReader, ctx context.Context) anyRecord {
	in, rec, err := env.NextAny(ctx)
	return anyRecord{in, rec, err}
}

// readAny calls NextAny n times; it fails the test on an error.
func readAny(t testing.TB, env AnyInputReader, n int) []anyRecord {
	t.Helper()
	out := make([]anyRecord, 0, n)
	for range n {
		r := nextAny(env, ctx)
		require.NoError(t, r.Err)
		out = append(out, r)
	}
	return out
}

// from lists the records of input in from rec, rec+1, …, rec+n-1.
func from(in, rec, n int) []anyRecord {
	out := make([]anyRecord, n)
	for i := range out {
		out[i] = anyRecord{In: in, Rec: rec + i}
	}
	return out
}

// startReader calls NextAny from a goroutine until it returns an error, sending every result
// to the returned channel (unbuffered), the error last.
func startReader(env AnyInputReader, ctx context.Context) <-chan anyRecord {
	got := make(chan anyRecord)
	go func() {
		for {
			r := nextAny(env, ctx)
			got <- r
			if r.Err != nil {
				close(got)
				return
			}
		}
	}()
	return got
}

// nothingYet fails the test if the reader returned something: it waits.
func nothingYet(t *testing.T, got <-chan anyRecord) {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-got:
		t.Fatalf("NextAny returned %+v; want it to wait", r)
	default:
	}
}

// Records come from whichever input has one, as they arrive; the end comes once both inputs
// ended, and then again.
func TestNextAnyInterleavesInputsByAvailability(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewShuffle(ShuffleConfig{})
		p := pids(1, 2)
		env := newTestEnv(t, s, p[:1], p[1:])
		w0 := newTestWriter(t, s, p[0], jobgraph.PipelinedBounded, 1)
		w1 := newTestWriter(t, s, p[1], jobgraph.PipelinedBounded, 1)
		got := startReader(env, ctx)
		nothingYet(t, got)

		// Each record is handed over at once (the reader is idle) and read from its input.
		for _, step := range []struct {
			w   *partitionWriter
			in  int
			rec string
		}{{w0, 0, "a1"}, {w1, 1, "b1"}, {w1, 1, "b2"}, {w0, 0, "a2"}, {w1, 1, "b3"}} {
			require.NoError(t, step.w.Emit(ctx, 0, step.rec))
			assert.Equal(t, anyRecord{In: step.in, Rec: step.rec}, <-got)
			nothingYet(t, got)
		}

		require.NoError(t, w0.finish(ctx))
		nothingYet(t, got) // input 1 is still open
		require.NoError(t, w1.Emit(ctx, 0, "b4"))
		assert.Equal(t, anyRecord{In: 1, Rec: "b4"}, <-got)
		nothingYet(t, got)
		require.NoError(t, w1.finish(ctx))
		assert.Equal(t, anyRecord{In: -1, Err: io.EOF}, <-got)
		_, open := <-got
		assert.False(t, open)

		assert.Equal(t, anyRecord{In: -1, Err: io.EOF}, nextAny(env, ctx), "EOF again after the end")
	})
}

// Inputs take turns batch by batch, starting with input 0 and then with the input after the
// one read last: an input with more data delays the others by at most one batch.
func TestNextAnyIsFairBetweenInputs(t *testing.T) {
	s := NewShuffle(ShuffleConfig{BatchSize: 4})
	p := pids(1, 2, 3)
	env := newTestEnv(t, s, p[:1], p[1:2], p[2:])
	w0 := newTestWriter(t, s, p[0], jobgraph.PipelinedBounded, 1)
	w1 := newTestWriter(t, s, p[1], jobgraph.PipelinedBounded, 1)
	w2 := newTestWriter(t, s, p[2], jobgraph.PipelinedBounded, 1)
	emitRange(t, w0, 0, 0, 16)    // 4 batches
	emitRange(t, w1, 0, 100, 108) // 2 batches
	emitRange(t, w2, 0, 200, 204) // 1 batch

	var want []anyRecord
	for _, b := range [][2]int{{0, 0}, {1, 100}, {2, 200}, {0, 4}, {1, 104}, {0, 8}, {0, 12}} {
		want = append(want, from(b[0], b[1], 4)...)
	}
	assert.Equal(t, want, readAny(t, env, len(want)))

	// Nothing more is there: with ctx ended, NextAny says so rather than wait.
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	assert.Equal(t, anyRecord{In: -1, Err: context.Canceled}, nextAny(env, canceled))

	// A partial batch only comes at the producer's end (or when the reader waits).
	require.NoError(t, w1.Emit(ctx, 0, 108))
	emitRange(t, w2, 0, 204, 208)
	for _, w := range []*partitionWriter{w0, w1, w2} {
		require.NoError(t, w.finish(ctx))
	}
	// Input 0 was read last, so input 1 comes first.
	want = append(from(1, 108, 1), from(2, 204, 4)...)
	assert.Equal(t, want, readAny(t, env, len(want)))
	assert.Equal(t, anyRecord{In: -1, Err: io.EOF}, nextAny(env, ctx))
}

// An input that always has data does not starve the other: while a producer keeps input 0's
// queue full, a batch written to input 1 is read after at most one batch of input 0.
func TestNextAnyDoesNotStarveAnInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const batch = 4
		s := NewShuffle(ShuffleConfig{BatchSize: batch, QueueCapacity: 2})
		p := pids(1, 2)
		env := newTestEnv(t, s, p[:1], p[1:])
		w0 := newTestWriter(t, s, p[0], jobgraph.PipelinedBounded, 1)
		w1 := newTestWriter(t, s, p[1], jobgraph.PipelinedBounded, 1)
		pctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; w0.Emit(pctx, 0, i) == nil; i++ {
			}
		}()
		synctest.Wait() // input 0's queue is full
		for round := range 5 {
			emitRange(t, w1, 0, 100*round, 100*round+batch) // one full batch
			read0 := 0
			for read0 <= 10*batch { // bounded: a starving reader fails rather than hangs
				r := nextAny(env, ctx)
				require.NoError(t, r.Err)
				if r.In == 1 {
					assert.Equal(t, 100*round, r.Rec)
					break
				}
				read0++
			}
			assert.LessOrEqual(t, read0, batch, "round %d", round)
			assert.Equal(t, from(1, 100*round+1, batch-1), readAny(t, env, batch-1))
		}
		stop()
		<-done
	})
}

// A failed or released partition stops NextAny with an error naming the input and the
// partition, whether NextAny waits or finds it failed; the error sticks.
func TestNextAnyNamesTheInputThatFailed(t *testing.T) {
	for _, c := range []struct {
		name   string
		breakP func(s *Shuffle, w *partitionWriter)
		is     error
		msg    string
	}{
		{"producer failed", func(s *Shuffle, w *partitionWriter) { w.fail(errors.New("out of memory")) }, ErrProducerFailed, "producer failed: out of memory"},
		{"released", func(s *Shuffle, w *partitionWriter) { s.ReleasePartitions(w.p.id) }, ErrPartitionReleased, "result partition released"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewShuffle(ShuffleConfig{BatchSize: 2})
				p := pids(1, 2, 3)
				env := newTestEnv(t, s, p[:1], p[1:]) // input 1 reads two partitions
				w0 := newTestWriter(t, s, p[0], jobgraph.PipelinedBounded, 1)
				w1 := newTestWriter(t, s, p[1], jobgraph.PipelinedBounded, 1)
				w2 := newTestWriter(t, s, p[2], jobgraph.PipelinedBounded, 1)
				defer w0.fail(errors.New("test over"))
				defer w1.fail(errors.New("test over"))
				emitRange(t, w1, 0, 10, 12)
				assert.Equal(t, from(1, 10, 2), readAny(t, env, 2))

				got := startReader(env, ctx)
				nothingYet(t, got)
				c.breakP(s, w2)
				r := <-got
				assert.Equal(t, 1, r.In)
				assert.Nil(t, r.Rec)
				assert.ErrorIs(t, r.Err, c.is)
				assert.EqualError(t, r.Err, "input 1: result partition "+partitionName(p[2])+": "+c.msg)
				var pe *PartitionError
				require.ErrorAs(t, r.Err, &pe)
				assert.Equal(t, p[2], pe.Partition)

				// It sticks, though input 0 now has data.
				emitRange(t, w0, 0, 0, 2)
				again := nextAny(env, ctx)
				assert.Equal(t, 1, again.In)
				assert.Same(t, r.Err, again.Err)
			})
		})
	}
}

// A producer that failed before the reader looked: the error comes when NextAny gets to that
// input, after the batch it hands out.
func TestNextAnyFindsAFailedInputInTurn(t *testing.T) {
	s := NewShuffle(ShuffleConfig{BatchSize: 2})
	p := pids(1, 2)
	env := newTestEnv(t, s, p[:1], p[1:])
	w0 := newTestWriter(t, s, p[0], jobgraph.PipelinedBounded, 1)
	w1 := newTestWriter(t, s, p[1], jobgraph.PipelinedBounded, 1)
	defer w0.fail(errors.New("test over"))
	emitRange(t, w0, 0, 0, 4)
	w1.fail(errors.New("disk full"))
	assert.Equal(t, from(0, 0, 2), readAny(t, env, 2))
	r := nextAny(env, ctx)
	assert.Equal(t, 1, r.In)
	assert.EqualError(t, r.Err, "input 1: result partition "+partitionName(p[1])+": producer failed: disk full")
}

func TestNextAnyReturnsWhenCtxEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewShuffle(ShuffleConfig{BatchSize: 2})
		p := pids(1, 2)
		env := newTestEnv(t, s, p[:1], p[1:])
		w0 := newTestWriter(t, s, p[0], jobgraph.PipelinedBounded, 1)
		defer w0.fail(errors.New("test over"))

		rctx, cancel := context.WithCancel(ctx)
		got := startReader(env, rctx)
		nothingYet(t, got)
		for _, g := range env.gates {
			assert.True(t, g.(*inputGate).hungry.Load(), "a waiting NextAny asks every open input's writers for partial batches")
		}
		cancel()
		assert.Equal(t, anyRecord{In: -1, Err: context.Canceled}, <-got)
		for _, g := range env.gates {
			assert.False(t, g.(*inputGate).hungry.Load())
		}

		// With ctx ended, NextAny takes no new batch; the next call with a live ctx does.
		emitRange(t, w0, 0, 0, 2)
		assert.Equal(t, anyRecord{In: -1, Err: context.Canceled}, nextAny(env, rctx))
		assert.Equal(t, from(0, 0, 2), readAny(t, env, 2))
	})
}

// With nothing to read, NextAny hands over the task's own partial output batches and blocks
// durably (no polling, no timer); data on any input wakes it.
func TestNextAnyWaitsForAnyInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewShuffle(ShuffleConfig{})
		p := pids(1, 2)
		env := newTestEnv(t, s, p[:1], p[1:])
		w0 := newTestWriter(t, s, p[0], jobgraph.PipelinedBounded, 1)
		w1 := newTestWriter(t, s, p[1], jobgraph.PipelinedBounded, 1)
		out := newTestWriter(t, s, partID(9, 0, attemptID(9, 0, 0)), jobgraph.PipelinedBounded, 1)
		defer out.fail(errors.New("test over"))
		env.writers = append(env.writers, out)
		require.NoError(t, out.Emit(ctx, 0, "held"))
		assert.Equal(t, 0, queuedRecords(out, 0))

		got := startReader(env, ctx)
		nothingYet(t, got) // synctest.Wait returned: the reader is durably blocked
		assert.Equal(t, 1, queuedRecords(out, 0), "flushed before waiting")

		require.NoError(t, w1.Emit(ctx, 0, "b"))
		assert.Equal(t, anyRecord{In: 1, Rec: "b"}, <-got)
		nothingYet(t, got)
		require.NoError(t, w0.Emit(ctx, 0, "a"))
		assert.Equal(t, anyRecord{In: 0, Rec: "a"}, <-got)
		nothingYet(t, got)
		require.NoError(t, w0.finish(ctx))
		require.NoError(t, w1.finish(ctx))
		assert.Equal(t, anyRecord{In: -1, Err: io.EOF}, <-got)
	})
}

func TestNextAnyWithoutInputsEndsAtOnce(t *testing.T) {
	env := newTestEnv(t, NewShuffle(ShuffleConfig{}))
	assert.Equal(t, anyRecord{In: -1, Err: io.EOF}, nextAny(env, ctx))
	empty := newTestEnv(t, NewShuffle(ShuffleConfig{}), nil, nil) // two inputs of no partitions
	assert.Equal(t, anyRecord{In: -1, Err: io.EOF}, nextAny(empty, ctx))
}

// Mixing NextAny and Input(i).Next hands out every record once, each input in order.
func TestNextAnyMixesWithNext(t *testing.T) {
	s := NewShuffle(ShuffleConfig{BatchSize: 4})
	p := pids(1, 2)
	env := newTestEnv(t, s, p[:1], p[1:])
	w0 := newTestWriter(t, s, p[0], jobgraph.PipelinedBounded, 1)
	w1 := newTestWriter(t, s, p[1], jobgraph.PipelinedBounded, 1)
	emitRange(t, w0, 0, 0, 8)
	emitRange(t, w1, 0, 100, 104)
	require.NoError(t, w0.finish(ctx))
	require.NoError(t, w1.finish(ctx))

	next := func(i int) any {
		r, err := env.Input(i).Next(ctx)
		require.NoError(t, err)
		return r
	}
	assert.Equal(t, anyRecord{In: 0, Rec: 0}, nextAny(env, ctx))
	assert.Equal(t, 1, next(0))
	assert.Equal(t, anyRecord{In: 0, Rec: 2}, nextAny(env, ctx), "the rest of input 0's batch")
	assert.Equal(t, 3, next(0))
	assert.Equal(t, anyRecord{In: 1, Rec: 100}, nextAny(env, ctx), "input 1's turn")
	assert.Equal(t, 4, next(0))
	assert.Equal(t, 101, next(1))
	assert.Equal(t, from(1, 102, 2), readAny(t, env, 2))
	assert.Equal(t, from(0, 5, 3), readAny(t, env, 3))
	assert.Equal(t, anyRecord{In: -1, Err: io.EOF}, nextAny(env, ctx))
	_, err := env.Input(1).Next(ctx)
	assert.Equal(t, io.EOF, err)
}

// The TaskExecutor's environment offers NextAny.
func TestEnvironmentIsAnAnyInputReader(t *testing.T) {
	var env Environment = newEnvironment(notStopped, TaskInfo{})
	_, ok := env.(AnyInputReader)
	assert.True(t, ok)
}

// In steady state NextAny allocates nothing per record: batches are recycled as with Next.
func TestNextAnyDoesNotAllocatePerRecord(t *testing.T) {
	s := NewShuffle(ShuffleConfig{})
	p := pids(1, 2)
	env := newTestEnv(t, s, p[:1], p[1:])
	ws := []*partitionWriter{
		newTestWriter(t, s, p[0], jobgraph.PipelinedBounded, 1),
		newTestWriter(t, s, p[1], jobgraph.PipelinedBounded, 1),
	}
	var rec any = 123456 // boxed once
	round := func() {
		for _, w := range ws {
			for range 4 * DefaultBatchSize {
				if err := w.Emit(ctx, 0, rec); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 8 * DefaultBatchSize {
			if _, _, err := env.NextAny(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	round() // warm up: the first batches are allocated
	assert.Zero(t, testing.AllocsPerRun(20, round))
	for _, w := range ws {
		w.fail(errors.New("test over"))
	}
}

// BenchmarkNextAny moves b.N records from two writer goroutines to one reader of both inputs.
func BenchmarkNextAny(b *testing.B) {
	s := NewShuffle(ShuffleConfig{})
	p := pids(1, 2)
	env := newTestEnv(b, s, p[:1], p[1:])
	var rec any = 123456
	b.ReportAllocs()
	b.ResetTimer()
	for i, id := range p {
		w := newTestWriter(b, s, id, jobgraph.PipelinedBounded, 1)
		n := b.N / 2
		if i == 0 {
			n += b.N % 2
		}
		go func() {
			for range n {
				if err := w.Emit(ctx, 0, rec); err != nil {
					panic(err)
				}
			}
			if err := w.finish(ctx); err != nil {
				panic(err)
			}
		}()
	}
	n := 0
	for {
		_, _, err := env.NextAny(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	if n != b.N {
		b.Fatalf("read %d records, want %d", n, b.N)
	}
}
