package minicluster_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// BenchmarkCancelRunningJob cancels a RUNNING streaming job — source → sink, ALL_TO_ALL,
// PIPELINED, both of parallelism p (1,000 and 4,000) in one slot-sharing group, every task
// blocking until its context is canceled — and waits for its JobResult, which must say CANCELED.
// Submitting the job and waiting until all 2p tasks are RUNNING is outside the timer. The
// cluster has 4 TaskExecutors of p/4 slots each. Besides ns/op it reports cpu-s/op, the CPU time
// the whole process spent from CancelJob to the result (where the OS tells it), which a machine
// shared with other work changes less than the wall time.
func BenchmarkCancelRunningJob(b *testing.B) {
	for _, p := range []int{1000, 4000} {
		b.Run(fmt.Sprintf("p=%d", p), func(b *testing.B) { benchmarkCancelRunningJob(b, p) })
	}
}

func benchmarkCancelRunningJob(b *testing.B, p int) {
	const taskExecutors = 4
	var running atomic.Int64
	allRunning := make(chan struct{}, 1)
	reg := taskexecutor.NewRegistry()
	reg.Register("block", func(ctx context.Context, env taskexecutor.Environment) error {
		<-ctx.Done()
		return ctx.Err()
	})
	mc, err := minicluster.New(minicluster.Config{
		TaskExecutors:        taskExecutors,
		SlotsPerTaskExecutor: p / taskExecutors,
		Registry:             reg,
		ExecutionStateListener: func(_ jobgraph.ExecutionAttemptID, st jobgraph.ExecutionState) {
			if st == jobgraph.ExecutionStateRunning && running.Add(1) == int64(2*p) {
				allRunning <- struct{}{}
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := mc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer mc.Close()
	b.ReportAllocs()
	var cpu float64
	cpuKnown := true
	for b.Loop() {
		b.StopTimer()
		running.Store(0)
		g := jobgraph.New("cancel-bench", jobgraph.Streaming)
		src := g.AddVertex("source", "block", p).WithSlotSharingGroup("default")
		sink := g.AddVertex("sink", "block", p).WithSlotSharingGroup("default")
		g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Pipelined)
		if err := mc.SubmitJob(ctx, g); err != nil {
			b.Fatal(err)
		}
		<-allRunning
		cpu0, ok0 := processCPUSeconds()
		b.StartTimer()

		if err := mc.CancelJob(ctx, g.JobID); err != nil {
			b.Fatal(err)
		}
		res, err := mc.RequestJobResult(ctx, g.JobID)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu1, ok1 := processCPUSeconds()
		cpu += cpu1 - cpu0
		cpuKnown = cpuKnown && ok0 && ok1
		if res.Status != jobgraph.JobStatusCanceled {
			b.Fatalf("job ended %s: %v", res.Status, res.RootCause)
		}
		b.StartTimer()
	}
	if cpuKnown {
		b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
	}
}
