package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph/examples/wordcount/wc"
)

// defaultInput lists the default input, $(go env GOROOT)/src, once per benchmark.
func defaultInput(b *testing.B) []wc.InputFile {
	dir, err := wc.DefaultInputDir()
	if err != nil {
		b.Fatal(err)
	}
	files, err := wc.ListInputFiles(dir)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, f := range files {
		n += f.Size
	}
	b.SetBytes(n)
	return files
}

// BenchmarkWordCount runs the whole job — a fresh MiniCluster, submit, schedule, shuffle, finish —
// over the default input with parallelism 2 on 2 TaskExecutors × 1 slot.
func BenchmarkWordCount(b *testing.B) {
	files := defaultInput(b)
	o := options{parallelism: 2, taskExecutors: 2, slots: 1}
	for b.Loop() {
		res, _, err := runJob(context.Background(), files, o, nil)
		if err != nil {
			b.Fatal(err)
		}
		t, err := wc.ReadTotals(res.Accumulators, o.top)
		if !res.Success() || err != nil || t.Distinct == 0 {
			b.Fatalf("job ended %s (%v) with %d distinct words (%v)", res.Status, res.RootCause, t.Distinct, err)
		}
	}
}

// BenchmarkWordCountSequential is the plain loop the job is compared with: read every file,
// tokenize, count into one map.
func BenchmarkWordCountSequential(b *testing.B) {
	files := defaultInput(b)
	for b.Loop() {
		counts, err := wc.SequentialCount(files)
		if err != nil {
			b.Fatal(err)
		}
		if len(counts) == 0 {
			b.Fatal("no words")
		}
	}
}

// BenchmarkTwoCores calibrates the machine for BenchmarkWordCount's ratio: per op it times a fixed
// loop of arithmetic (no memory traffic) on one goroutine, then the same loop on two goroutines
// at once, and reports one-over-two, the share of a second core the machine gave at that moment
// (1.0: two full cores; 0.5: none). With two cores, BenchmarkWordCount / BenchmarkWordCountSequential
// cannot go below about 0.5 over this figure, whatever the job does.
func BenchmarkTwoCores(b *testing.B) {
	var one, two time.Duration
	for b.Loop() {
		t := time.Now()
		sums := [3]uint64{spin(spinRounds)}
		one += time.Since(t)
		t = time.Now()
		var wg sync.WaitGroup
		for i := 1; i <= 2; i++ {
			wg.Go(func() { sums[i] = spin(spinRounds) })
		}
		wg.Wait()
		two += time.Since(t)
		if sums[0] != sums[1] || sums[1] != sums[2] {
			b.Fatalf("the loop gave %d, %d and %d", sums[0], sums[1], sums[2])
		}
	}
	b.ReportMetric(float64(one)/float64(two), "two-core-efficiency")
}

// spinRounds is BenchmarkTwoCores's loop length: about 0.1–0.3 s on the 2-core machine of
// docs/BENCHMARKS.md.
const spinRounds = 100_000_000

// spin runs n rounds of a 64-bit LCG with a shift, on registers only, and returns the result
// (so that the compiler keeps the loop).
func spin(n int) uint64 {
	x := uint64(1)
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
		x ^= x >> 17
	}
	return x
}
