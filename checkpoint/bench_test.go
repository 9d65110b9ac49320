package checkpoint_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/internal/manualtime"
)

type nopTasks struct{}

func (nopTasks) TriggerCheckpoint(jobgraph.ExecutionAttemptID, checkpoint.CheckpointID, time.Time, checkpoint.CheckpointProperties) {
}
func (nopTasks) NotifyCheckpointComplete(jobgraph.ExecutionAttemptID, checkpoint.CheckpointID, time.Time) {
}
func (nopTasks) NotifyCheckpointAborted(jobgraph.ExecutionAttemptID, checkpoint.CheckpointID, time.Time) {
}
func (nopTasks) FailJob(error)                                              {}
func (nopTasks) FailJobDueToTaskFailure(error, jobgraph.ExecutionAttemptID) {}

// BenchmarkCheckpointAck: one coordinator, 10,000 tasks (100 vertices × 100 subtasks); each
// iteration is one acknowledgement, straight into the coordinator: the core alone
// (jobmaster.BenchmarkCheckpointAck goes through the JobMaster's loop); the 10,000th completes
// the checkpoint (stored in memory, notify-complete to all) and the next is triggered. Reports
// acks/s.
func BenchmarkCheckpointAck(b *testing.B) {
	const vertices, subtasks = 100, 100
	eg := jobgraph.NewExecutionGraphID()
	var tasks []jobgraph.ExecutionAttemptID
	for range vertices {
		v := jobgraph.NewJobVertexID()
		for s := range subtasks {
			tasks = append(tasks, jobgraph.ExecutionAttemptID{ExecutionGraphID: eg, ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: v, Subtask: s}})
		}
	}
	timers := manualtime.New(start)
	store, _ := checkpoint.NewStandaloneCompletedCheckpointStore(1)
	jm := jobgraph.NewJobMasterID()
	c, err := checkpoint.NewCheckpointCoordinator(checkpoint.Config{
		JobMasterID: jm, Timers: timers, Clock: timers.Now, Tasks: nopTasks{},
		Plan: func() (checkpoint.CheckpointPlan, error) {
			return checkpoint.CheckpointPlan{TasksToTrigger: tasks[:subtasks], TasksToWaitFor: tasks}, nil
		},
		Store: store, IDCounter: checkpoint.NewStandaloneCheckpointIDCounter(), FailJob: nopTasks{},
	})
	if err != nil {
		b.Fatal(err)
	}
	id, i := checkpoint.CheckpointID(0), len(tasks)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		if i == len(tasks) {
			id++
			if err := c.TriggerCheckpoint(jm, nil); err != nil {
				b.Fatal(err)
			}
			i = 0
		}
		if err := c.ReceiveAcknowledgeMessage(jm, checkpoint.AcknowledgeCheckpoint{Attempt: tasks[i], CheckpointID: id, State: checkpoint.StateHandle{Size: 64}}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/ack")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "acks/s")
	if got, _ := store.Latest(); b.N >= len(tasks) && got.CheckpointID == 0 {
		b.Fatal("no checkpoint completed")
	}
}

// cpuTime is the process's user+system CPU time: on a loaded machine it tells what an ack costs,
// where wall time tells how much of a core the benchmark got.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
