package taskexecutor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

func newTestWriter(t testing.TB, s *Shuffle, id rpc.ResultPartitionID, typ jobgraph.ResultPartitionType, subs int) *partitionWriter {
	t.Helper()
	w, err := s.newWriter(jobID(1), "te-1", rpc.ResultPartitionDeploymentDescriptor{ResultPartitionID: id, ResultType: typ, NumberOfSubpartitions: subs})
	require.NoError(t, err)
	return w
}

// newTestGate reads subpartition sub of each partition.
func newTestGate(t testing.TB, s *Shuffle, typ jobgraph.ResultPartitionType, sub int, ids ...rpc.ResultPartitionID) *inputGate {
	t.Helper()
	d := rpc.InputGateDeploymentDescriptor{ResultType: typ, Partitions: ids, ConsumedSubpartitionIndex: sub}
	g, err := s.newGate(jobID(1), d)
	require.NoError(t, err)
	return g
}

// drain reads g to its end.
func drain(t testing.TB, g InputGate) []any {
	t.Helper()
	var out []any
	for {
		r, err := g.Next(ctx)
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, r)
	}
}

func ints(from, to int) []any {
	out := make([]any, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func emitRange(t testing.TB, w *partitionWriter, sub, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		require.NoError(t, w.Emit(ctx, sub, i))
	}
}

// queuedRecords counts the records of subpartition sub of w's partition that were handed over
// and not read yet: parked in the partition, or in the queue of the gate reading it.
func queuedRecords(w *partitionWriter, sub int) int {
	s, p := w.s, w.p
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	if bs := p.data[sub]; bs != nil {
		for _, b := range bs.list {
			n += len(b)
		}
	}
	for _, l := range p.links {
		if sub >= len(l.g.subs) {
			continue
		}
		for _, g := range l.g.subs[sub].gates {
			g.mu.Lock()
			for _, e := range g.queue.items[g.queue.head:] {
				if e.src == p {
					n += len(e.batch)
				}
			}
			g.mu.Unlock()
		}
	}
	return n
}

func TestPipelinedPartitionBackPressure(t *testing.T) {
	for _, typ := range []jobgraph.ResultPartitionType{jobgraph.PipelinedBounded, jobgraph.Pipelined} {
		t.Run(typ.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewShuffle(ShuffleConfig{})
				pid := partID(1, 0, attemptID(1, 0, 0))
				g := newTestGate(t, s, typ, 0, pid) // attached, but does not read yet
				defer g.close()
				w := newTestWriter(t, s, pid, typ, 1)

				pctx, cancel := context.WithCancel(ctx)
				var emitted int // Emit calls that returned
				var emitErr error
				done := make(chan struct{})
				go func() {
					defer close(done)
					for i := 0; ; i++ {
						if emitErr = w.Emit(pctx, 0, i); emitErr != nil {
							return
						}
						emitted++
					}
				}()
				synctest.Wait()
				const capacity, batch = DefaultQueueCapacity, DefaultBatchSize
				// The queue holds exactly capacity full batches; the writer blocks handing over
				// the next full batch, in the Emit of its last record.
				assert.Equal(t, capacity*batch, queuedRecords(w, 0))
				assert.Equal(t, capacity*batch+batch-1, emitted)

				// Reading one record takes one batch off the queue: the writer hands over the
				// batch it held and blocks again one batch later.
				r, err := g.Next(ctx)
				require.NoError(t, err)
				assert.Equal(t, 0, r)
				synctest.Wait()
				assert.Equal(t, capacity*batch, queuedRecords(w, 0))
				assert.Equal(t, capacity*batch+2*batch-1, emitted)

				cancel()
				<-done
				assert.ErrorIs(t, emitErr, context.Canceled)

				// What was handed over arrives in order.
				for i := 1; i < (capacity+1)*batch; i++ {
					r, err := g.Next(ctx)
					require.NoError(t, err)
					require.Equal(t, i, r)
				}
			})
		})
	}
}

func TestBlockingPartitionIsReadableOnlyAfterFinishedAndAgain(t *testing.T) {
	for _, typ := range []jobgraph.ResultPartitionType{jobgraph.Blocking, jobgraph.BlockingPersistent} {
		t.Run(typ.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewShuffle(ShuffleConfig{BatchSize: 8})
				pid := partID(1, 0, attemptID(1, 0, 0))
				w := newTestWriter(t, s, pid, typ, 2)
				emitRange(t, w, 0, 0, 100)
				emitRange(t, w, 1, 100, 150)
				require.NoError(t, w.Broadcast(ctx, "all"))

				early := newTestGate(t, s, typ, 1, pid)
				var got []any
				done := make(chan struct{})
				go func() { defer close(done); got = drain(t, early) }()
				synctest.Wait()
				select {
				case <-done:
					t.Fatal("read a blocking partition before its producer finished")
				default:
				}
				assert.Nil(t, got)

				require.NoError(t, w.finish(ctx))
				<-done
				early.close()
				assert.Equal(t, append(ints(100, 150), "all"), got)

				// Reading does not consume: read subpartition 0 twice, one reader after the other
				// and two at once.
				for range 2 {
					g := newTestGate(t, s, typ, 0, pid)
					assert.Equal(t, append(ints(0, 100), "all"), drain(t, g))
					g.close()
				}
				g1, g2 := newTestGate(t, s, typ, 0, pid), newTestGate(t, s, typ, 0, pid)
				for i := range 50 {
					r1, err := g1.Next(ctx)
					require.NoError(t, err)
					r2, err := g2.Next(ctx)
					require.NoError(t, err)
					require.Equal(t, i, r1)
					require.Equal(t, i, r2)
				}

				// Released: readers in the middle of it and new ones get an error naming it.
				s.ReleasePartitions(pid)
				_, err := drainErr(g1)
				assert.ErrorIs(t, err, ErrPartitionReleased)
				assert.EqualError(t, err, "result partition "+partitionName(pid)+": result partition released")
				g1.close()
				g2.close()
				late := newTestGate(t, s, typ, 0, pid)
				_, err = late.Next(ctx)
				assert.ErrorIs(t, err, ErrPartitionReleased)
				late.close()
				assert.Equal(t, 1, s.Len(), "remembered, so late readers fail rather than wait")
			})
		})
	}
}

// drainErr reads g until an error.
func drainErr(g InputGate) (int, error) {
	n := 0
	for {
		if _, err := g.Next(ctx); err != nil {
			return n, err
		}
		n++
	}
}

func TestHybridPartitionIsReadableWhileProducedAndAgain(t *testing.T) {
	for _, typ := range []jobgraph.ResultPartitionType{jobgraph.HybridFull, jobgraph.HybridSelective} {
		t.Run(typ.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewShuffle(ShuffleConfig{BatchSize: 4})
				pid := partID(1, 0, attemptID(1, 0, 0))
				w := newTestWriter(t, s, pid, typ, 1)
				emitRange(t, w, 0, 0, 8) // two full batches
				g := newTestGate(t, s, typ, 0, pid)
				for i := range 8 {
					r, err := g.Next(ctx)
					require.NoError(t, err)
					require.Equal(t, i, r)
				}
				emitRange(t, w, 0, 8, 10)
				require.NoError(t, w.finish(ctx))
				assert.Equal(t, ints(8, 10), drain(t, g))
				g.close()

				again := newTestGate(t, s, typ, 0, pid)
				assert.Equal(t, ints(0, 10), drain(t, again))
				again.close()
				assert.Equal(t, 1, s.Len(), "kept until released")
				s.ReleasePartitions(pid)
			})
		})
	}
}

func TestGateMergesPartitionsAndEndsWhenAllEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewShuffle(ShuffleConfig{BatchSize: 16, QueueCapacity: 2})
		const producers, each = 3, 1000
		var pids []rpc.ResultPartitionID
		for p := range producers {
			pids = append(pids, partID(1, p, attemptID(1, p, 0)))
		}
		g := newTestGate(t, s, jobgraph.PipelinedBounded, 1, pids...) // readers first
		defer g.close()
		var wg sync.WaitGroup
		for p, pid := range pids {
			wg.Go(func() {
				w := newTestWriter(t, s, pid, jobgraph.PipelinedBounded, 2)
				for i := range each {
					if err := w.Emit(ctx, 1, [2]int{p, i}); err != nil {
						t.Error(err)
						return
					}
				}
				if err := w.finish(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		got := drain(t, g)
		wg.Wait()
		require.Len(t, got, producers*each)
		next := make([]int, producers)
		for _, r := range got {
			pi := r.([2]int)
			require.Equal(t, next[pi[0]], pi[1], "records of one partition arrive in order")
			next[pi[0]]++
		}
		_, err := g.Next(ctx)
		assert.Equal(t, io.EOF, err, "EOF again after the end")
	})
}

func TestEmptyGateEndsAtOnce(t *testing.T) {
	s := NewShuffle(ShuffleConfig{})
	g := newTestGate(t, s, jobgraph.Blocking, 0)
	_, err := g.Next(ctx)
	assert.Equal(t, io.EOF, err)
}

// An idle reader gets a record without waiting for a full batch or the producer's end.
func TestIdleReaderGetsPartialBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewShuffle(ShuffleConfig{})
		pid := partID(1, 0, attemptID(1, 0, 0))
		w := newTestWriter(t, s, pid, jobgraph.PipelinedBounded, 1)
		g := newTestGate(t, s, jobgraph.PipelinedBounded, 0, pid)
		defer g.close()
		got := make(chan any)
		go func() {
			for {
				r, err := g.Next(ctx)
				if err != nil {
					close(got)
					return
				}
				got <- r
			}
		}()
		synctest.Wait() // the reader waits
		require.NoError(t, w.Emit(ctx, 0, "first"))
		assert.Equal(t, "first", <-got)
		synctest.Wait()
		require.NoError(t, w.Emit(ctx, 0, "second"))
		assert.Equal(t, "second", <-got)
		require.NoError(t, w.finish(ctx))
		_, open := <-got
		assert.False(t, open)
	})
}

// A task that waits for input first hands over what it has written.
func TestGateFlushesTheTasksOutputsBeforeWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewShuffle(ShuffleConfig{})
		in := partID(1, 0, attemptID(1, 0, 0))
		out := partID(2, 0, attemptID(2, 0, 0))
		g := newTestGate(t, s, jobgraph.PipelinedBounded, 0, in)
		defer g.close()
		w := newTestWriter(t, s, out, jobgraph.PipelinedBounded, 1)
		g.beforeWait = w.flushIdle
		require.NoError(t, w.Emit(ctx, 0, "held"))
		assert.Equal(t, 0, queuedRecords(w, 0))

		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _, _ = g.Next(wctx) }()
		synctest.Wait()
		assert.Equal(t, 1, queuedRecords(w, 0))
		cancel()
		<-done
		w.fail(errors.New("test over"))
	})
}

func TestProducerFailureFailsReaders(t *testing.T) {
	for _, typ := range []jobgraph.ResultPartitionType{jobgraph.PipelinedBounded, jobgraph.Blocking, jobgraph.HybridFull} {
		t.Run(typ.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewShuffle(ShuffleConfig{BatchSize: 2})
				pid := partID(1, 3, attemptID(1, 3, 0))
				w := newTestWriter(t, s, pid, typ, 1)
				g := newTestGate(t, s, typ, 0, pid)
				defer g.close()
				var err error
				done := make(chan struct{})
				go func() { defer close(done); _, err = drainErr(g) }()
				emitRange(t, w, 0, 0, 3)
				synctest.Wait()
				cause := errors.New("out of memory")
				w.fail(cause)
				<-done
				assert.ErrorIs(t, err, ErrProducerFailed)
				assert.ErrorIs(t, err, cause)
				assert.EqualError(t, err, "result partition "+partitionName(pid)+": producer failed: out of memory")
				var pe *PartitionError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, pid, pe.Partition)
				_, again := g.Next(ctx)
				assert.Same(t, err, again, "the error sticks")
			})
		})
	}
}

func TestAbandonedPipelinedReaderDoesNotBlockTheProducer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewShuffle(ShuffleConfig{BatchSize: 4, QueueCapacity: 1})
		pid := partID(1, 0, attemptID(1, 0, 0))
		w := newTestWriter(t, s, pid, jobgraph.PipelinedBounded, 2)
		g0 := newTestGate(t, s, jobgraph.PipelinedBounded, 0, pid)
		g1 := newTestGate(t, s, jobgraph.PipelinedBounded, 1, pid)
		emitRange(t, w, 0, 0, 4)
		r, err := g0.Next(ctx) // reads one record, then goes away
		require.NoError(t, err)
		assert.Equal(t, 0, r)
		g0.close()
		emitRange(t, w, 0, 4, 1000) // would block on a full queue if anyone were still reading
		emitRange(t, w, 1, 0, 3)
		require.NoError(t, w.finish(ctx))
		assert.Equal(t, ints(0, 3), drain(t, g1))
		g1.close()
		assert.Equal(t, 0, s.Len(), "both subpartitions done: the partition is dropped")
	})
}

func TestReaderMayAttachBeforeTheProducer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewShuffle(ShuffleConfig{})
		pid := partID(1, 0, attemptID(1, 0, 0))
		g := newTestGate(t, s, jobgraph.PipelinedBounded, 1, pid)
		var got []any
		done := make(chan struct{})
		go func() { defer close(done); got = drain(t, g) }()
		synctest.Wait()
		assert.Equal(t, 1, s.Len())

		w := newTestWriter(t, s, pid, jobgraph.PipelinedBounded, 2)
		emitRange(t, w, 1, 0, 1000)
		require.NoError(t, w.finish(ctx))
		<-done
		g.close()
		assert.Equal(t, ints(0, 1000), got)
		assert.Equal(t, 1, s.Len(), "subpartition 0 is not read yet")
	})
}

func TestReaderLeavingBeforeTheProducerCameLeavesNothing(t *testing.T) {
	s := NewShuffle(ShuffleConfig{})
	g := newTestGate(t, s, jobgraph.Blocking, 0, partID(1, 0, attemptID(1, 0, 0)), partID(1, 1, attemptID(1, 1, 0)))
	assert.Equal(t, 2, s.Len())
	g.close()
	assert.Equal(t, 0, s.Len())
}

func TestSubpartitionIndexesAreChecked(t *testing.T) {
	s := NewShuffle(ShuffleConfig{})
	pid := partID(1, 0, attemptID(1, 0, 0))
	w := newTestWriter(t, s, pid, jobgraph.Blocking, 2)
	_, err := s.newGate(jobID(1), rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.Blocking, Partitions: []rpc.ResultPartitionID{pid}, ConsumedSubpartitionIndex: 2})
	assert.EqualError(t, err, "result partition "+partitionName(pid)+" has 2 subpartitions; cannot read subpartition 2")
	assert.EqualError(t, w.Emit(ctx, 2, 1), "result partition "+partitionName(pid)+": subpartition 2 out of range [0, 2)")
	assert.EqualError(t, w.Emit(ctx, -1, 1), "result partition "+partitionName(pid)+": subpartition -1 out of range [0, 2)")

	_, err = s.newGate(jobID(1), rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.Blocking, Partitions: []rpc.ResultPartitionID{pid}, ConsumedSubpartitionIndex: -1})
	assert.EqualError(t, err, "result partition "+partitionName(pid)+" has 2 subpartitions; cannot read subpartition -1")

	// A reader asked for subpartition 3 before the producer said there are 2: both fail.
	pid2 := partID(1, 1, attemptID(1, 1, 0))
	g := newTestGate(t, s, jobgraph.Blocking, 3, pid2)
	defer g.close()
	_, err = s.newWriter(jobID(1), "te-1", rpc.ResultPartitionDeploymentDescriptor{ResultPartitionID: pid2, ResultType: jobgraph.Blocking, NumberOfSubpartitions: 2})
	assert.EqualError(t, err, "result partition "+partitionName(pid2)+": producer failed: it has 2 subpartitions, but a reader asked for subpartition 3")
	_, err = g.Next(ctx)
	assert.ErrorIs(t, err, ErrProducerFailed)

	_, err = s.newWriter(jobID(1), "te-2", rpc.ResultPartitionDeploymentDescriptor{ResultPartitionID: pid, ResultType: jobgraph.Blocking, NumberOfSubpartitions: 2})
	assert.EqualError(t, err, "result partition "+partitionName(pid)+" is already produced on TaskExecutor te-1")
	_, err = s.newWriter(jobID(1), "te-2", rpc.ResultPartitionDeploymentDescriptor{ResultPartitionID: partID(9, 0, attemptID(9, 0, 0)), ResultType: jobgraph.Blocking})
	assert.EqualError(t, err, "result partition "+partitionName(partID(9, 0, attemptID(9, 0, 0)))+": 0 subpartitions; want at least 1")
}

func TestPipelinedSubpartitionIsReadOnce(t *testing.T) {
	s := NewShuffle(ShuffleConfig{})
	pid := partID(1, 0, attemptID(1, 0, 0))
	g := newTestGate(t, s, jobgraph.PipelinedBounded, 0, pid)
	defer g.close()
	_, err := s.newGate(jobID(1), rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.PipelinedBounded, Partitions: []rpc.ResultPartitionID{pid}, ConsumedSubpartitionIndex: 0})
	assert.EqualError(t, err, "subpartition 0 of pipelined result partition "+partitionName(pid)+" is already being read or was read")
}

func TestReleasePartitionWhileProducingFailsTheWriter(t *testing.T) {
	s := NewShuffle(ShuffleConfig{BatchSize: 2})
	pid := partID(1, 0, attemptID(1, 0, 0))
	w := newTestWriter(t, s, pid, jobgraph.Blocking, 1)
	s.ReleasePartitions(pid, partID(7, 7, attemptID(7, 7, 7)))
	require.NoError(t, w.Emit(ctx, 0, 1))
	err := w.Emit(ctx, 0, 2) // a full batch: handed over, refused
	assert.ErrorIs(t, err, ErrPartitionReleased)
	assert.ErrorIs(t, w.finish(ctx), ErrPartitionReleased)
}

func TestReleaseAllOfDropsATaskExecutorsPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewShuffle(ShuffleConfig{})
		a := partID(1, 0, attemptID(1, 0, 0))
		b := partID(1, 1, attemptID(1, 1, 0))
		other := partID(2, 0, attemptID(2, 0, 0))
		for _, id := range []rpc.ResultPartitionID{a, b} {
			w := newTestWriter(t, s, id, jobgraph.Blocking, 1)
			require.NoError(t, w.finish(ctx))
		}
		wo, err := s.newWriter(jobID(1), "te-2", rpc.ResultPartitionDeploymentDescriptor{ResultPartitionID: other, ResultType: jobgraph.Blocking, NumberOfSubpartitions: 1})
		require.NoError(t, err)
		require.NoError(t, wo.finish(ctx))
		g := newTestGate(t, s, jobgraph.Blocking, 0, b)
		defer g.close()

		assert.Equal(t, []rpc.ResultPartitionID{a, b}, s.ReleaseAllOf("te-1"))
		_, err = g.Next(ctx)
		assert.ErrorIs(t, err, ErrPartitionLost)
		assert.EqualError(t, err, "result partition "+partitionName(b)+": result partition lost: TaskExecutor te-1 is gone")
		assert.Equal(t, 1, s.Len())
		assert.Empty(t, s.ReleaseAllOf("te-1"))
		assert.Empty(t, s.ReleaseAllOf(""))
	})
}

func TestReleaseJobKeepsFinishedPersistentPartitions(t *testing.T) {
	s := NewShuffle(ShuffleConfig{})
	blocking := partID(1, 0, attemptID(1, 0, 0))
	persistent := partID(2, 0, attemptID(2, 0, 0))
	wb := newTestWriter(t, s, blocking, jobgraph.Blocking, 1)
	require.NoError(t, wb.finish(ctx))
	wp := newTestWriter(t, s, persistent, jobgraph.BlockingPersistent, 1)
	emitRange(t, wp, 0, 0, 3)
	require.NoError(t, wp.finish(ctx))
	s.releaseJob(jobID(2), "te-1") // another job: nothing
	assert.Equal(t, 2, s.Len())
	s.releaseJob(jobID(1), "te-1")
	assert.Equal(t, 1, s.Len())
	g := newTestGate(t, s, jobgraph.BlockingPersistent, 0, persistent)
	assert.Equal(t, ints(0, 3), drain(t, g))
	g.close()
}

// In steady state, moving a record through a pipelined partition allocates nothing: batches are
// recycled between reader and writer.
func TestPipelinedShuffleDoesNotAllocatePerRecord(t *testing.T) {
	s := NewShuffle(ShuffleConfig{})
	pid := partID(1, 0, attemptID(1, 0, 0))
	w := newTestWriter(t, s, pid, jobgraph.PipelinedBounded, 1)
	g := newTestGate(t, s, jobgraph.PipelinedBounded, 0, pid)
	defer g.close()
	var rec any = 123456 // boxed once
	round := func() {
		for range 4 * DefaultBatchSize {
			if err := w.Emit(ctx, 0, rec); err != nil {
				t.Fatal(err)
			}
		}
		for range 4 * DefaultBatchSize {
			if _, err := g.Next(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	round() // warm up: the first batches are allocated
	allocs := testing.AllocsPerRun(20, round)
	assert.Zero(t, allocs)
	w.fail(errors.New("test over"))
}

// allToAll sets up the writers and gates of a pipelined ALL_TO_ALL exchange of p producers and
// p consumers, the gates first (the reader-before-writer case), every gate descriptor sharing one
// partition list as the scheduler's do.
func allToAll(t testing.TB, s *Shuffle, p int) ([]*partitionWriter, []*inputGate) {
	ids := make([]rpc.ResultPartitionID, p)
	for i := range ids {
		ids[i] = partID(1, i, attemptID(1, i, 0))
	}
	gates := make([]*inputGate, p)
	for c := range gates {
		g, err := s.newGate(jobID(1), rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.Pipelined, Partitions: ids, ConsumedSubpartitionIndex: c})
		require.NoError(t, err)
		gates[c] = g
	}
	writers := make([]*partitionWriter, p)
	for i, id := range ids {
		writers[i] = newTestWriter(t, s, id, jobgraph.Pipelined, p)
	}
	return writers, gates
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// perTaskBudget bounds what one task of an ALL_TO_ALL exchange may cost the shuffle while no
// record flows, whatever the parallelism: a partition or a gate, and its share of the group.
const perTaskBudget = 2048 // bytes

// An ALL_TO_ALL exchange of 2,000 × 2,000 without records creates no per-pair object and costs a
// bounded number of bytes per task; it still ends (every gate sees every producer's end) and
// leaves nothing behind. Before the redesign it created 4 million subpartitions with a channel
// each (hundreds of bytes per pair: about 200 KiB per task here).
func TestAllToAllExchangeCostIsLinearInTheTasks(t *testing.T) {
	const p = 2000
	s := NewShuffle(ShuffleConfig{})
	before := heapInUse()
	writers, gates := allToAll(t, s, p)
	grown := int64(heapInUse()) - int64(before)
	t.Logf("heap grew by %d bytes for %d tasks: %d per task", grown, 2*p, grown/(2*p))
	assert.Zero(t, s.pairObjects.Load(), "per-pair objects while no record flows")
	assert.Less(t, grown, int64(2*p*perTaskBudget), "heap grew by %d bytes: %d per task", grown, grown/(2*p))
	assert.Equal(t, p, s.Len())
	assert.Len(t, s.groups, 1, "the gates share one group")

	for _, w := range writers {
		require.NoError(t, w.finish(ctx))
	}
	for _, g := range gates {
		_, err := g.Next(ctx)
		require.Equal(t, io.EOF, err)
	}
	assert.Zero(t, s.pairObjects.Load())
	assert.Equal(t, 0, s.Len(), "every subpartition read to its end: the partitions are dropped")
	for _, g := range gates {
		g.close()
	}
	assert.Empty(t, s.groups)
	assert.Empty(t, s.byHash)
	runtime.KeepAlive(writers)
}

// Only pairs that carry data get per-pair state: one record from producer 0 to consumer 7 makes
// one writer slot and nothing else.
func TestOnlyPairsWithDataCostPerPairState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewShuffle(ShuffleConfig{})
		writers, gates := allToAll(t, s, 64)
		require.NoError(t, writers[0].Emit(ctx, 7, "x"))
		for _, w := range writers {
			require.NoError(t, w.finish(ctx))
		}
		assert.Equal(t, int64(1), s.pairObjects.Load())
		for c, g := range gates {
			got := drain(t, g)
			if c == 7 {
				assert.Equal(t, []any{"x"}, got)
			} else {
				assert.Empty(t, got)
			}
			g.close()
		}
		assert.Equal(t, 0, s.Len())
	})
}

// BenchmarkShuffleSetUp sets up the writers and gates of a pipelined ALL_TO_ALL exchange of p × p
// tasks, finishes the producers and reads every gate to its end; it reports the bytes allocated
// per task.
func BenchmarkShuffleSetUp(b *testing.B) {
	for _, p := range []int{1000, 4000} {
		b.Run(fmt.Sprintf("p=%d", p), func(b *testing.B) {
			b.ReportAllocs()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for range b.N {
				s := NewShuffle(ShuffleConfig{})
				writers, gates := allToAll(b, s, p)
				for _, w := range writers {
					if err := w.finish(ctx); err != nil {
						b.Fatal(err)
					}
				}
				for _, g := range gates {
					if _, err := g.Next(ctx); err != io.EOF {
						b.Fatal(err)
					}
					g.close()
				}
			}
			runtime.ReadMemStats(&m1)
			b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(b.N*2*p), "B/task")
		})
	}
}

// BenchmarkPipelinedShuffle moves b.N records source → sink at parallelism 2, ALL_TO_ALL
// (each source writes its records round robin to both sinks) through the shuffle, and the same
// batches of the same records through plain Go channels (one buffered channel per sink, as deep
// as a gate's queue; the sink looks at every record, as the shuffle's sink does through Next), in
// the same run. It reports both rates and their ratio.
func BenchmarkPipelinedShuffle(b *testing.B) {
	const p = 2
	var rec any = 123456
	perSource := b.N / p
	total := perSource * p

	s := NewShuffle(ShuffleConfig{})
	writers, gates := allToAll(b, s, p)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range writers {
		wg.Go(func() {
			for i := range perSource {
				if err := w.Emit(ctx, i%p, rec); err != nil {
					panic(err)
				}
			}
			if err := w.finish(ctx); err != nil {
				panic(err)
			}
		})
	}
	counts := make([]int, p)
	for c, g := range gates {
		wg.Go(func() {
			for {
				r, err := g.Next(ctx)
				if err == io.EOF {
					return
				}
				if err != nil {
					panic(err)
				}
				if r != nil {
					counts[c]++
				}
			}
		})
	}
	wg.Wait()
	shuffle := time.Since(start)
	b.StopTimer()
	if counts[0]+counts[1] != total {
		b.Fatalf("read %v records, want %d", counts, total)
	}

	// The same through channels: batches of DefaultBatchSize, recycled through a free list.
	chans := make([]chan []any, p)
	for c := range chans {
		chans[c] = make(chan []any, DefaultQueueCapacity)
	}
	free := make(chan []any, 4*p*DefaultQueueCapacity)
	start = time.Now()
	var sources sync.WaitGroup
	for range p {
		sources.Go(func() {
			bufs := make([][]any, p)
			for i := range perSource {
				c := i % p
				if bufs[c] == nil {
					select {
					case bufs[c] = <-free:
					default:
						bufs[c] = make([]any, 0, DefaultBatchSize)
					}
				}
				bufs[c] = append(bufs[c], rec)
				if len(bufs[c]) == DefaultBatchSize {
					chans[c] <- bufs[c]
					bufs[c] = nil
				}
			}
			for c, buf := range bufs {
				if len(buf) > 0 {
					chans[c] <- buf
				}
			}
		})
	}
	for c := range chans {
		wg.Go(func() {
			n := 0
			for batch := range chans[c] {
				for _, r := range batch {
					if r != nil {
						n++
					}
				}
				clear(batch)
				select {
				case free <- batch[:0]:
				default:
				}
			}
			counts[c] = n
		})
	}
	sources.Wait()
	for _, ch := range chans {
		close(ch)
	}
	wg.Wait()
	channel := time.Since(start)
	if counts[0]+counts[1] != total {
		b.Fatalf("channels carried %v records, want %d", counts, total)
	}
	shuffleRate := float64(total) / shuffle.Seconds()
	chanRate := float64(total) / channel.Seconds()
	b.ReportMetric(shuffleRate, "records/s")
	b.ReportMetric(chanRate, "chan-records/s")
	b.ReportMetric(shuffleRate/chanRate, "ratio-to-chan")
}

// A reader's PartitionError names its partition as unavailable, also once it crossed to the
// JobMaster as an ErrorInfo: region failover then restarts the partition's producer (a lost
// producer process's blocking partition is produced again).
func TestPartitionErrorNamesTheUnavailablePartition(t *testing.T) {
	id := rpc.ResultPartitionID{PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: jobgraph.NewIntermediateDataSetID(), PartitionIndex: 3}}
	for _, reason := range []error{ErrPartitionLost, ErrPartitionReleased, ErrProducerFailed} {
		err := fmt.Errorf("input 0: %w", &PartitionError{Partition: id, Reason: reason})
		info := jobgraph.NewErrorInfo(err, time.Time{})
		if assert.NotNil(t, info.UnavailablePartition, "%v", reason) {
			assert.Equal(t, id.PartitionID, *info.UnavailablePartition, "%v", reason)
		}
		assert.ErrorIs(t, info.Err(), reason)
	}
}
