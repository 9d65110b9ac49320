package metrics_test

import (
	"testing"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/metrics"
)

// BenchmarkTaskGroupLifecycle is what every task attempt costs the registry: a task group with
// the TaskExecutor's five metrics (numRecordsIn/Out, their per-second meters,
// backPressuredTimeMsPerSecond), closed again, in a registry that holds the groups of 1,000
// other running tasks of the job and the job's own 18 gauges.
func BenchmarkTaskGroupLifecycle(b *testing.B) {
	r := metrics.NewRegistry()
	defer r.Close()
	id, vertex := jobgraph.NewJobID(), jobgraph.NewJobVertexID()
	names := make([]string, 18)
	for i := range names {
		names[i] = "gauge" + string(rune('a'+i))
	}
	job := r.JobGroup(id, "job")
	job.Gauges(names, func(i int) int64 { return int64(i) })
	defer job.Close()
	task := func(subtask, attempt int) *metrics.Group {
		g := r.TaskGroup(metrics.Scope{JobID: id, JobName: "job", TaskID: vertex, TaskName: "map", SubtaskIndex: subtask, AttemptNumber: attempt})
		in, out := new(metrics.Counter), new(metrics.Counter)
		g.RegisterCounter("numRecordsIn", in)
		g.RegisterCounter("numRecordsOut", out)
		g.Meter("numRecordsInPerSecond", in)
		g.Meter("numRecordsOutPerSecond", out)
		g.TimerGauge("backPressuredTimeMsPerSecond")
		return g
	}
	for s := range 1000 {
		defer task(s, 0).Close()
	}
	b.ReportAllocs()
	attempt := 0
	for b.Loop() {
		attempt++
		task(1000, attempt).Close()
	}
}
