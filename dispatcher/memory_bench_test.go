package dispatcher_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// finishedRunner is a JobManagerRunner whose job is FINISHED as soon as it starts, with the
// archived graph a real one-vertex job has.
type finishedRunner struct {
	g    *jobgraph.JobGraph
	a    *executiongraph.ArchivedExecutionGraph
	done chan struct{}
}

func (r *finishedRunner) Start() error             { close(r.done); return nil }
func (r *finishedRunner) JobID() jobgraph.JobID    { return r.g.JobID }
func (r *finishedRunner) Done() <-chan struct{}    { return r.done }
func (r *finishedRunner) Result() jobmaster.Result { <-r.done; return jobmaster.Result{Archived: r.a} }
func (r *finishedRunner) Cancel(context.Context) error {
	return nil
}
func (r *finishedRunner) RequestJobStatus(context.Context) (jobgraph.JobStatus, error) {
	return jobgraph.JobStatusFinished, nil
}
func (r *finishedRunner) RequestJob(context.Context) (*executiongraph.ArchivedExecutionGraph, error) {
	return r.a, nil
}
func (r *finishedRunner) Close() {}

// BenchmarkFinishedJobMemory reports what the Dispatcher and the embedded HA services keep per
// finished one-vertex job (B/job, heap after all jobs ended): with the defaults (archive kept
// for jobstore.expiration-time, unlimited capacity; every clean JobResultStore entry kept), and
// bounded (jobstore.max-capacity 100 and 100 clean results), where it tends to 0 as jobs grow.
func BenchmarkFinishedJobMemory(b *testing.B) {
	for _, bounded := range []bool{false, true} {
		b.Run(fmt.Sprintf("bounded=%v", bounded), func(b *testing.B) {
			const n = 5000
			var perJob float64
			for b.Loop() {
				opts, capacity := embedded.Options{}, 0
				if bounded {
					opts.MaxCleanResults, capacity = 100, 100
				}
				services, err := embedded.NewWithOptions(opts)
				if err != nil {
					b.Fatal(err)
				}
				d, err := dispatcher.New(dispatcher.Config{HA: services, Logger: slog.New(slog.DiscardHandler), JobStoreMaxCapacity: capacity,
					JobManagerRunnerFactory: func(g *jobgraph.JobGraph, _ ha.Services) (jobmaster.JobManagerRunner, error) {
						eg, err := executiongraph.Build(g)
						if err != nil {
							return nil, err
						}
						a := eg.Archive()
						a.Status = jobgraph.JobStatusFinished
						a.StatusTimestamps[jobgraph.JobStatusFinished] = time.Now()
						return &finishedRunner{g: g, a: a, done: make(chan struct{})}, nil
					}})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for range n {
					g := graph("trivial")
					if err := d.SubmitJob(ctx, g); err != nil {
						b.Fatal(err)
					}
					if _, err := d.RequestJobResult(ctx, g.JobID); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perJob = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
				if err := d.Close(); err != nil {
					b.Fatal(err)
				}
				services.Close()
			}
			b.ReportMetric(perJob, "B/job")
		})
	}
}
