package main

import (
	"context"
	"os"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph"
)

// BenchmarkStreamingCheckpointOverhead runs the job of 10 million records at parallelism 2 (2
// TaskExecutors × 1 slot, a fresh MiniCluster each run) with checkpoints every 100 ms and without
// checkpoints, one after the other in every iteration (the order alternating), and reports the
// records per second of each and their ratio (target ≥ 0.85, issue 11). Without checkpoints the
// sink writes its lines as they come; with them it commits each checkpoint's lines when the
// checkpoint completes.
//
// The machine is shared, so it also reports the records per CPU second of the process (user +
// system, getrusage) of each mode and their ratio, which other load disturbs less.
func BenchmarkStreamingCheckpointOverhead(b *testing.B) {
	const records = 10_000_000
	var elapsed, cpu [2]time.Duration // [0] without, [1] with checkpoints
	var completed int64
	runs := 0
	for b.Loop() {
		for k := range 2 {
			mode := (k + runs) % 2
			dir := b.TempDir()
			o := options{records: records, keys: 100, splits: 8, parallelism: 2, maxParallelism: 128, out: dir, taskExecutors: 2, slots: 1}
			if mode == 1 {
				o.checkpointInterval = 100 * time.Millisecond
			}
			cpu0 := cpuTime(b)
			var r outcome
			var err error
			// Labelled, so a CPU profile tells the modes apart (pprof -tagfocus mode=checkpoints):
			// the cluster's goroutines inherit the label.
			pprof.Do(context.Background(), pprof.Labels("mode", [2]string{"plain", "checkpoints"}[mode]), func(ctx context.Context) {
				r, err = runJob(ctx, o, nil)
			})
			if err != nil {
				b.Fatal(err)
			}
			cpu[mode] += cpuTime(b) - cpu0
			if r.result.Status != jobgraph.JobStatusFinished {
				b.Fatalf("job ended %s: %v", r.result.Status, r.result.RootCause)
			}
			elapsed[mode] += r.elapsed
			if mode == 1 && r.archived.CheckpointStatistics != nil {
				completed += r.archived.CheckpointStatistics.Counts.Completed
			}
			if err := os.RemoveAll(dir); err != nil {
				b.Fatal(err)
			}
		}
		runs++
	}
	plain := float64(records*runs) / elapsed[0].Seconds()
	checkpointed := float64(records*runs) / elapsed[1].Seconds()
	b.ReportMetric(plain, "records/s-plain")
	b.ReportMetric(checkpointed, "records/s-checkpointed")
	b.ReportMetric(checkpointed/plain, "ratio")
	b.ReportMetric(cpu[0].Seconds()/cpu[1].Seconds(), "ratio-cpu")
	b.ReportMetric(float64(completed)/float64(runs), "checkpoints/run")
}
