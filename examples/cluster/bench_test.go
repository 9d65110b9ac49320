package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph/examples/wordcount/wc"
)

// benchInput is the word count's input of the benchmarks: $(go env GOROOT)/src, as the issue
// names it (Go 1.26.8: 7,711 .go files, 90.4 MB). It reports its size in MB as "input-MB".
func benchInput(b *testing.B) (string, []wc.InputFile) {
	b.Helper()
	dir, err := wc.DefaultInputDir()
	if err != nil {
		b.Fatal(err)
	}
	files, err := wc.ListInputFiles(dir)
	if err != nil {
		b.Fatal(err)
	}
	return dir, files
}

// inputMB is the size of files in MB (10⁶ bytes).
func inputMB(files []wc.InputFile) float64 {
	var n int64
	for _, f := range files {
		n += f.Size
	}
	return float64(n) / 1e6
}

// loadAverage is the 1-minute load average (/proc/loadavg); false where there is none.
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}

// cpuMeter adds up the CPU time (cpuSeconds: this process and its waited-for children) spent
// between start and stop.
type cpuMeter struct {
	seconds, at float64
	unknown     bool
}

func (m *cpuMeter) start() {
	v, ok := cpuSeconds()
	m.at, m.unknown = v, m.unknown || !ok
}

func (m *cpuMeter) stop() {
	v, ok := cpuSeconds()
	m.seconds += v - m.at
	m.unknown = m.unknown || !ok
}

// BenchmarkWordCountClusterVsMiniCluster is issue 13's "examples/cluster's word count vs the
// in-process MiniCluster's, same input, same run" (target: ratio ≤ 1.5). Each op counts the
// words of $(go env GOROOT)/src twice, one after the other:
//
//   - the cluster: as this command runs without -role (its launcher's startProcesses and
//     countWords with the flags' defaults but -parallelism): one JobManager and three
//     TaskExecutor processes × 2 slots (this test binary re-executed with -role, see TestMain),
//     the job submitted to the Dispatcher over gRPC, its records through the network shuffle,
//     the totals read from the JobResult; then the processes are stopped (stdin closed, waited
//     for);
//   - the MiniCluster: examples/wordcount's job as that command runs it (wc.RunOnMiniCluster,
//     its defaults: 2 TaskExecutors × ⌈p/2⌉ slots) in this process.
//
// Both at the same parallelism p of source and count (sub-benchmarks p=2, examples/wordcount's
// default on 2 cores, and p=4, this command's). It fails unless both report the same totals
// (files, bytes, words, distinct words, top 20). Metrics per op, in seconds:
// cluster-s (start of the first process until the last one exited), cluster-job-s (submit
// until the JobResult, the processes already running), minicluster-s (the MiniCluster's start
// until it closed); ratio is cluster-s / minicluster-s, job-ratio cluster-job-s /
// minicluster-s. cluster-cpu-s and minicluster-cpu-s are the CPU time of each part: the
// cluster's is this process's and the role processes' together (getrusage of the children,
// counted once they were waited for), cpu-ratio their quotient. load is the 1-minute load
// average at the end. B/op and allocs/op count this process only (the launcher's client and the
// MiniCluster), not the role processes.
//
//	go test -run '^$' -bench WordCountClusterVsMiniCluster -benchtime 3x -benchmem ./examples/cluster/
func BenchmarkWordCountClusterVsMiniCluster(b *testing.B) {
	dir, files := benchInput(b)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()
	for _, p := range []int{2, 4} {
		b.Run(fmt.Sprintf("p=%d", p), func(b *testing.B) {
			o, err := parseFlags([]string{"-input", dir, "-parallelism", strconv.Itoa(p)}, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			mini := wc.MiniClusterOptions{TaskExecutors: 2, SlotsPerTaskExecutor: (p + 1) / 2,
				Job: wc.JobOptions{Parallelism: p, Top: o.top, SkipResult: true}}
			var clusterS, jobS, miniS float64
			var clusterCPU, miniCPU cpuMeter
			for b.Loop() {
				runtime.GC()
				clusterCPU.start()
				t0 := time.Now()
				procs, err := startProcesses(ctx, o, os.Stderr)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				got, err := countWords(ctx, procs, files, o, io.Discard, log)
				t2 := time.Now()
				procs.stop()
				t3 := time.Now()
				clusterCPU.stop()
				if err != nil {
					b.Fatal(err)
				}

				runtime.GC()
				miniCPU.start()
				t4 := time.Now()
				res, _, err := wc.RunOnMiniCluster(ctx, files, mini)
				t5 := time.Now()
				miniCPU.stop()
				if err != nil {
					b.Fatal(err)
				}
				if !res.Success() {
					b.Fatalf("MiniCluster: job ended %s: %v", res.Status, res.RootCause)
				}
				want, err := wc.ReadTotals(res.Accumulators, o.top)
				if err != nil {
					b.Fatal(err)
				}
				if got.Files != want.Files || got.Bytes != want.Bytes || got.Words != want.Words || got.Distinct != want.Distinct ||
					fmt.Sprint(got.Top) != fmt.Sprint(want.Top) || want.Files != len(files) {
					b.Fatalf("cluster counted %d files, %d bytes, %d words, %d distinct, top %v; MiniCluster %d, %d, %d, %d, %v (%d files listed)",
						got.Files, got.Bytes, got.Words, got.Distinct, got.Top, want.Files, want.Bytes, want.Words, want.Distinct, want.Top, len(files))
				}
				clusterS += t3.Sub(t0).Seconds()
				jobS += t2.Sub(t1).Seconds()
				miniS += t5.Sub(t4).Seconds()
			}
			n := float64(b.N)
			b.ReportMetric(clusterS/n, "cluster-s/op")
			b.ReportMetric(jobS/n, "cluster-job-s/op")
			b.ReportMetric(miniS/n, "minicluster-s/op")
			b.ReportMetric(clusterS/miniS, "ratio")
			b.ReportMetric(jobS/miniS, "job-ratio")
			if !clusterCPU.unknown && !miniCPU.unknown {
				b.ReportMetric(clusterCPU.seconds/n, "cluster-cpu-s/op")
				b.ReportMetric(miniCPU.seconds/n, "minicluster-cpu-s/op")
				b.ReportMetric(clusterCPU.seconds/miniCPU.seconds, "cpu-ratio")
			}
			if l, ok := loadAverage(); ok {
				b.ReportMetric(l, "load")
			}
			b.ReportMetric(inputMB(files), "input-MB")
		})
	}
}
