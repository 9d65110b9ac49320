package taskexecutor

import (
	"errors"
	"io"
	"testing"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/metrics"
)

// BenchmarkTaskRecordsMetrics moves b.N records from a source task's Output(0).Emit to a sink
// task's Input(0).Next through the in-memory shuffle (POINTWISE, pipelined), as a task's code
// does, and reports ns per record:
//   - metrics=registry: both tasks' numRecordsIn/numRecordsOut registered in a metrics.Registry
//     with their PerSecond meters (updated every 5 s by the registry) and the source's
//     backPressuredTimeMsPerSecond measuring its writer's waits for room, as a TaskExecutor with
//     Config.Metrics runs them;
//   - metrics=none: a TaskExecutor without Config.Metrics (the counters count, registered
//     nowhere; no back-pressure timer);
//   - raw-shuffle: the same records through the writer and the gate directly, without the task
//     API (no mailbox check, no counting): the floor both others stand on.
func BenchmarkTaskRecordsMetrics(b *testing.B) {
	for _, mode := range []string{"metrics=registry", "metrics=none", "raw-shuffle"} {
		b.Run(mode, func(b *testing.B) {
			s := NewShuffle(ShuffleConfig{})
			id := partID(1, 0, attemptID(1, 0, 0))
			sink := newTestEnv(b, s, pids(1))
			w := newTestWriter(b, s, id, jobgraph.PipelinedBounded, 1)
			defer w.fail(errors.New("benchmark over"))
			src := newEnvironment(notStopped, TaskInfo{TaskName: "src (1/1)"})
			src.writers = append(src.writers, w)
			if mode == "metrics=registry" {
				reg := metrics.NewRegistry()
				defer reg.Close()
				job := jobgraph.NewJobID()
				sg := reg.TaskGroup(metrics.Scope{JobID: job, TaskName: "src"})
				kg := reg.TaskGroup(metrics.Scope{JobID: job, TaskName: "sink"})
				defer sg.Close()
				defer kg.Close()
				for _, x := range []struct {
					g   *metrics.Group
					env *environment
				}{{sg, src}, {kg, sink}} {
					x.env.recordsIn, x.env.recordsOut = x.g.Counter("numRecordsIn"), x.g.Counter("numRecordsOut")
					x.g.Meter("numRecordsInPerSecond", x.env.recordsIn)
					x.g.Meter("numRecordsOutPerSecond", x.env.recordsOut)
					x.env.backPressure = x.g.TimerGauge("backPressuredTimeMsPerSecond")
				}
				w.backPressure = src.backPressure
			}
			var rec any = 123456
			out, in := src.Output(0), sink.Input(0)
			if mode == "raw-shuffle" {
				out, in = w, sink.gates[0]
			}
			b.ReportAllocs()
			b.ResetTimer()
			done := make(chan error, 1)
			go func() {
				for range b.N {
					if err := out.Emit(ctx, 0, rec); err != nil {
						done <- err
						return
					}
				}
				done <- w.finish(ctx)
			}()
			n := 0
			for {
				_, err := in.Next(ctx)
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.StopTimer()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			if n != b.N {
				b.Fatalf("read %d records, want %d", n, b.N)
			}
			if mode != "raw-shuffle" {
				if got := src.recordsOut.Count(); got != int64(b.N) {
					b.Fatalf("numRecordsOut %d, want %d", got, b.N)
				}
				if got := sink.recordsIn.Count(); got != int64(b.N) {
					b.Fatalf("numRecordsIn %d, want %d", got, b.N)
				}
			}
		})
	}
}
