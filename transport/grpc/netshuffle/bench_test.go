package netshuffle_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// BenchmarkNetworkShuffleAllToAll: source → sink, parallelism 2, ALL_TO_ALL, PIPELINED_BOUNDED,
// b.N int64 records (8 bytes each, codec int64) in all, the sources in one TaskExecutor
// process's Environment and the sinks in another's, over loopback. In the same run it copies
// the same bytes over raw loopback TCP (one connection per source-sink pair, 32 KiB writes),
// once before the shuffle and once after it, and reports the mean of the two rates (tcp-MB/s;
// on a shared machine one copy of less than a second swings by 2×) and the shuffle's ratio to
// it (ratio), and moves the same records through the in-memory shuffle alone before (inmem-MB/s,
// record by record: what the task API's records cost without the network). It also reports
// the process's CPU time per record of the shuffle (cpu-ns/op) and of the TCP copies
// (tcp-cpu-ns/op, per 8 bytes), and their ratio (cpu-ratio: TCP's over the shuffle's), which
// the load of a shared machine moves less than the wall times. One op is one record.
//
//   - records=int64-batch: the sources write batches of 1,024 values through
//     taskexecutor.Int64Writer and the sinks read through taskexecutor.BufferedInt64Reader as
//     the task API's Int64Reader does: the fast path a task with int64 records uses;
//
//   - records=any: every record through Emit and Next as an `any`.
//
//     cd transport/grpc && go test -run '^$' -bench NetworkShuffleAllToAll -benchtime 10000000x -benchmem ./netshuffle/
func BenchmarkNetworkShuffleAllToAll(b *testing.B) {
	for _, mode := range []string{"int64-batch", "any"} {
		b.Run("records="+mode, func(b *testing.B) {
			const p = 2
			n := b.N
			cpu0 := cpuNow()
			tcpBefore := rawTCPCopy(b, p*p, int64(n)*8)
			tcpCPU := cpuNow() - cpu0
			inmem := inMemoryAllToAll(b, p, n)
			producerEnv, consumerEnv := newEnv(b, netshuffle.Config{}), newEnv(b, netshuffle.Config{})
			x := newExchange(b)
			ds := jobgraph.NewIntermediateDataSetID()
			writers := make([]taskexecutor.ShuffleWriter, p)
			sds := make([]rpc.ShuffleDescriptor, p)
			for i := range p {
				writers[i], sds[i] = x.produce(producerEnv, "te-src", x.partition(ds, i), jobgraph.PipelinedBounded, netshuffle.CodecInt64, p)
			}
			readers := make([]taskexecutor.ShuffleReader, p)
			for j := range p {
				readers[j] = x.read(consumerEnv, jobgraph.PipelinedBounded, j, sds...)
			}
			b.SetBytes(8)
			b.ReportAllocs()
			runtime.GC() // the in-memory run's garbage is not the shuffle's to collect
			b.ResetTimer()
			cpu0 = cpuNow()
			start := time.Now()
			if mode == "any" {
				allToAll(b, writers, readers, n)
			} else {
				allToAllInt64Batches(b, writers, readers, n)
			}
			elapsed := time.Since(start)
			shuffleCPU := cpuNow() - cpu0
			b.StopTimer()
			cpu0 = cpuNow()
			tcpAfter := rawTCPCopy(b, p*p, int64(n)*8)
			tcpCPU += cpuNow() - cpu0
			shuffleRate := float64(n) * 8 / elapsed.Seconds() / 1e6
			tcpRate := (float64(n)*8/tcpBefore.Seconds() + float64(n)*8/tcpAfter.Seconds()) / 2 / 1e6
			b.ReportMetric(tcpRate, "tcp-MB/s")
			b.ReportMetric(float64(n)*8/inmem.Seconds()/1e6, "inmem-MB/s")
			b.ReportMetric(shuffleRate/tcpRate, "ratio")
			if shuffleCPU > 0 {
				b.ReportMetric(float64(shuffleCPU.Nanoseconds())/float64(n), "cpu-ns/op")
				b.ReportMetric(float64(tcpCPU.Nanoseconds())/2/float64(n), "tcp-cpu-ns/op")
				b.ReportMetric(float64(tcpCPU)/2/float64(shuffleCPU), "cpu-ratio")
			}
		})
	}
}

// allToAllInt64Batches is allToAll through the int64 batch path: each writer emits runs of
// 1,024 values (one buffer filled once, as the TCP copy sends one buffer) to one subpartition
// after the other; each reader takes the batch at hand in bulk and waits in Next for the next
// one, as taskexecutor's Int64Reader does.
func allToAllInt64Batches(b *testing.B, writers []taskexecutor.ShuffleWriter, readers []taskexecutor.ShuffleReader, n int) {
	const run = 1024
	p := len(writers)
	ctx := context.Background()
	var wg sync.WaitGroup
	counts := make([]int, len(readers))
	for i, w := range writers {
		iw, ok := w.(taskexecutor.Int64Writer)
		require.True(b, ok, "the network shuffle's writer implements taskexecutor.Int64Writer")
		wg.Go(func() {
			each := n / p
			if i == 0 {
				each += n % p
			}
			vals := make([]int64, run) // written once, as the TCP copy's buffer is
			for j := range vals {
				vals[j] = int64(j)
			}
			for k := 0; k < each; k += run {
				m := min(run, each-k)
				if err := iw.EmitInt64s(ctx, (k/run)%p, vals[:m]); err != nil {
					b.Error(err)
					return
				}
			}
			if err := w.Finish(ctx); err != nil {
				b.Error(err)
			}
		})
	}
	for j, r := range readers {
		br, ok := r.(taskexecutor.BufferedInt64Reader)
		require.True(b, ok, "the network shuffle's reader implements taskexecutor.BufferedInt64Reader")
		wg.Go(func() {
			buf := make([]int64, run)
			for {
				if k := br.BufferedInt64s(buf); k > 0 {
					counts[j] += k
					continue
				}
				rec, err := r.Next(ctx)
				if err != nil {
					if err != io.EOF {
						b.Error(err)
					}
					return
				}
				if _, ok := rec.(int64); !ok {
					b.Errorf("a record of type %T", rec)
					return
				}
				counts[j]++
			}
		})
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	require.Equal(b, n, total, "records delivered")
}

// inMemoryAllToAll moves n records through p × p in-memory partitions and returns how long it took.
func inMemoryAllToAll(b *testing.B, p, n int) time.Duration {
	s := taskexecutor.NewShuffle(taskexecutor.ShuffleConfig{})
	x := newExchange(b)
	ds := jobgraph.NewIntermediateDataSetID()
	owner := taskexecutor.ShuffleIOOwnerContext{JobID: x.job, TaskExecutor: "te"}
	ids := make([]rpc.ResultPartitionID, p)
	writers := make([]taskexecutor.ShuffleWriter, p)
	for i := range p {
		ids[i] = x.partition(ds, i)
		ws, err := s.CreateResultPartitionWriters(owner, []rpc.ResultPartitionDeploymentDescriptor{{ResultPartitionID: ids[i], ResultType: jobgraph.PipelinedBounded, NumberOfSubpartitions: p}})
		require.NoError(b, err)
		writers[i] = ws[0]
	}
	readers := make([]taskexecutor.ShuffleReader, p)
	for j := range p {
		rs, err := s.CreateInputGates(owner, []rpc.InputGateDeploymentDescriptor{{DataSetID: ds, ResultType: jobgraph.PipelinedBounded, Partitions: ids, ConsumedSubpartitionIndex: j}})
		require.NoError(b, err)
		readers[j] = rs[0]
		defer rs[0].Close()
	}
	start := time.Now()
	allToAll(b, writers, readers, n)
	return time.Since(start)
}

// allToAll writes n records round robin from the writers to every subpartition and reads them
// to the end from the readers.
func allToAll(b *testing.B, writers []taskexecutor.ShuffleWriter, readers []taskexecutor.ShuffleReader, n int) {
	p := len(writers)
	ctx := context.Background()
	var wg sync.WaitGroup
	counts := make([]int, len(readers))
	for i, w := range writers {
		wg.Go(func() {
			each := n / p
			if i == 0 {
				each += n % p
			}
			for k := range each {
				if err := w.Emit(ctx, k%p, int64(k)); err != nil {
					b.Error(err)
					return
				}
			}
			if err := w.Finish(ctx); err != nil {
				b.Error(err)
			}
		})
	}
	for j, r := range readers {
		wg.Go(func() {
			for {
				if _, err := r.Next(ctx); err != nil {
					if err != io.EOF {
						b.Error(err)
					}
					return
				}
				counts[j]++
			}
		})
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	require.Equal(b, n, total, "records delivered")
}

// rawTCPCopy copies total bytes over conns loopback TCP connections at once (total/conns each,
// in 32 KiB writes) and returns how long that took.
func rawTCPCopy(b *testing.B, conns int, total int64) time.Duration {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	defer lis.Close()
	var wg sync.WaitGroup
	start := time.Now()
	for range conns {
		wg.Go(func() {
			c, err := lis.Accept()
			if err != nil {
				b.Error(err)
				return
			}
			defer c.Close()
			if _, err := io.Copy(io.Discard, c); err != nil {
				b.Error(err)
			}
		})
	}
	for i := range conns {
		wg.Go(func() {
			c, err := net.Dial("tcp", lis.Addr().String())
			if err != nil {
				b.Error(err)
				return
			}
			defer c.Close()
			buf := make([]byte, 32<<10)
			for k := range len(buf) / 8 {
				binary.LittleEndian.PutUint64(buf[8*k:], uint64(k+i))
			}
			left := total / int64(conns)
			for left > 0 {
				m := min(left, int64(len(buf)))
				if _, err := c.Write(buf[:m]); err != nil {
					b.Error(err)
					return
				}
				left -= m
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// cpuNow is processCPU, 0 where it cannot be read (the CPU metrics are then left out).
func cpuNow() time.Duration {
	d, _ := processCPU()
	return d
}
