package main

import (
	"context"
	"testing"

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
