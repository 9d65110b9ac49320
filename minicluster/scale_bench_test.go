package minicluster_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// scaleTaskExecutors is the number of TaskExecutors of the cluster BenchmarkJobToRunning and
// BenchmarkCancelJob start (issue 10): each has parallelism/50 slots, as many as the job needs.
const scaleTaskExecutors = 50

// scaleParallelisms are the sub-benchmarks streaming-<p>, smallest first so that the largest,
// the most memory-hungry, runs last. The figures are streaming-4000 and streaming-10000;
// 1,000 and 2,000 are the baseline rows.
var scaleParallelisms = []int{1000, 2000, 4000, 10000}

// scaleCluster is a MiniCluster of scaleTaskExecutors TaskExecutors able to run scaleJob(p):
// running counts the RUNNING reports of the current job's attempts and signals allRunning
// once all 2p tasks are RUNNING.
type scaleCluster struct {
	mc         *minicluster.MiniCluster
	p          int
	running    atomic.Int64
	allRunning chan struct{}
}

func startScaleCluster(b testing.TB, p int) *scaleCluster {
	sc := &scaleCluster{p: p, allRunning: make(chan struct{}, 1)}
	reg := taskexecutor.NewRegistry()
	reg.Register("block", func(ctx context.Context, env taskexecutor.Environment) error {
		<-ctx.Done()
		return ctx.Err()
	})
	mc, err := minicluster.New(minicluster.Config{
		TaskExecutors:        scaleTaskExecutors,
		SlotsPerTaskExecutor: (p + scaleTaskExecutors - 1) / scaleTaskExecutors,
		Registry:             reg,
		ExecutionStateListener: func(_ jobgraph.ExecutionAttemptID, st jobgraph.ExecutionState) {
			if st == jobgraph.ExecutionStateRunning && sc.running.Add(1) == int64(2*sc.p) {
				sc.allRunning <- struct{}{}
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := mc.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	sc.mc = mc
	b.Cleanup(func() {
		if err := mc.Close(); err != nil {
			b.Error(err)
		}
	})
	return sc
}

// scaleJob is issue 10's job: source → sink, ALL_TO_ALL, PIPELINED, both of parallelism p in the
// slot-sharing group "default", every task blocking until canceled.
func scaleJob(p int) *jobgraph.JobGraph {
	g := jobgraph.New("scale-bench", jobgraph.Streaming)
	src := g.AddVertex("source", "block", p).WithSlotSharingGroup("default")
	sink := g.AddVertex("sink", "block", p).WithSlotSharingGroup("default")
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Pipelined)
	return g
}

// submitUntilRunning submits a fresh scaleJob and returns once all its tasks are RUNNING.
func (sc *scaleCluster) submitUntilRunning(b testing.TB) *jobgraph.JobGraph {
	sc.running.Store(0)
	g := scaleJob(sc.p)
	if err := sc.mc.SubmitJob(context.Background(), g); err != nil {
		b.Fatal(err)
	}
	<-sc.allRunning
	return g
}

// cancel cancels the job and waits for its result, which must be CANCELED.
func (sc *scaleCluster) cancel(b testing.TB, g *jobgraph.JobGraph) {
	ctx := context.Background()
	if err := sc.mc.CancelJob(ctx, g.JobID); err != nil {
		b.Fatal(err)
	}
	res, err := sc.mc.RequestJobResult(ctx, g.JobID)
	if err != nil {
		b.Fatal(err)
	}
	if res.Status != jobgraph.JobStatusCanceled {
		b.Fatalf("job ended %s: %v", res.Status, res.RootCause)
	}
}

// heapSampler records the high-water mark of the heap in use (runtime.MemStats.HeapInuse: spans
// holding objects, /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes in
// runtime/metrics, which reads it without stopping the world) every millisecond from a goroutine
// of its own, between start and stop.
type heapSampler struct {
	samples []metrics.Sample
	peak    atomic.Uint64
	stopCh  chan struct{}
	done    chan struct{}
}

func (h *heapSampler) read() uint64 {
	metrics.Read(h.samples)
	return h.samples[0].Value.Uint64() + h.samples[1].Value.Uint64()
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{
		samples: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}},
		stopCh:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	h.peak.Store(h.read())
	go func() {
		defer close(h.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if v := h.read(); v > h.peak.Load() {
				h.peak.Store(v)
			}
			select {
			case <-h.stopCh:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

// stop ends the sampling and returns the peak in MiB, a last sample included.
func (h *heapSampler) stop() float64 {
	close(h.stopCh)
	<-h.done
	if v := h.read(); v > h.peak.Load() {
		h.peak.Store(v)
	}
	return float64(h.peak.Load()) / (1 << 20)
}

// cpuMeter adds up the CPU time the whole process spends between start and stop, where the OS
// tells it (processCPUSeconds): on a machine shared with other work it changes less than the
// wall time.
type cpuMeter struct {
	seconds, at float64
	unknown     bool
}

func (m *cpuMeter) start() {
	v, ok := processCPUSeconds()
	m.at, m.unknown = v, m.unknown || !ok
}

func (m *cpuMeter) stop() {
	v, ok := processCPUSeconds()
	m.seconds += v - m.at
	m.unknown = m.unknown || !ok
}

// report reports cpu-s/op unless the OS did not say.
func (m *cpuMeter) report(b *testing.B) {
	if !m.unknown {
		b.ReportMetric(m.seconds/float64(b.N), "cpu-s/op")
	}
}

// BenchmarkJobToRunning is issue 10's whole-cluster figure: on a MiniCluster of 50
// TaskExecutors, one op submits scaleJob(p) and waits until all 2p tasks are RUNNING (counted by
// the ExecutionStateListener). Canceling the job afterwards is outside the timer, and so is a
// runtime.GC before each op. peak-heap-MiB is the highest heap in use (HeapInuse, sampled every
// millisecond by heapSampler) during any op, cpu-s/op the process's CPU time per op; the target at 10,000 is ≤ 1 s and ≤ 256 MiB.
func BenchmarkJobToRunning(b *testing.B) {
	for _, p := range scaleParallelisms {
		b.Run(fmt.Sprintf("streaming-%d", p), func(b *testing.B) {
			sc := startScaleCluster(b, p)
			var peaks []float64
			var cpu cpuMeter
			for b.Loop() {
				b.StopTimer()
				runtime.GC()
				h := startHeapSampler()
				cpu.start()
				b.StartTimer()
				g := sc.submitUntilRunning(b)
				b.StopTimer()
				cpu.stop()
				peaks = append(peaks, h.stop())
				sc.cancel(b, g)
				b.StartTimer()
			}
			b.ReportMetric(slices.Max(peaks), "peak-heap-MiB")
			cpu.report(b)
		})
	}
}

// BenchmarkCancelJob is the same job from all tasks RUNNING until its JobResult says CANCELED:
// one op is CancelJob and RequestJobResult; submitting and waiting until RUNNING is outside the
// timer. It also reports peak-heap-MiB during the op. The target at 10,000 is ≤ 1 s.
func BenchmarkCancelJob(b *testing.B) {
	for _, p := range scaleParallelisms {
		b.Run(fmt.Sprintf("streaming-%d", p), func(b *testing.B) {
			sc := startScaleCluster(b, p)
			var peaks []float64
			var cpu cpuMeter
			for b.Loop() {
				b.StopTimer()
				g := sc.submitUntilRunning(b)
				runtime.GC()
				h := startHeapSampler()
				cpu.start()
				b.StartTimer()
				sc.cancel(b, g)
				b.StopTimer()
				cpu.stop()
				peaks = append(peaks, h.stop())
				b.StartTimer()
			}
			b.ReportMetric(slices.Max(peaks), "peak-heap-MiB")
			cpu.report(b)
		})
	}
}
