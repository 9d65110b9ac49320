package checkpoint_test

import (
	"fmt"
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

// answeringOC answers every checkpoint inside the call with a 64-byte state.
type answeringOC struct {
	vertex jobgraph.JobVertexID
	state  []byte
}

func (o answeringOC) VertexID() jobgraph.JobVertexID { return o.vertex }
func (o answeringOC) CheckpointCoordinator(_ checkpoint.CheckpointID, result func([]byte, error)) {
	result(o.state, nil)
}
func (answeringOC) AfterSourceBarrierInjection(checkpoint.CheckpointID)     {}
func (answeringOC) AbortCurrentTriggering()                                 {}
func (answeringOC) NotifyCheckpointComplete(checkpoint.CheckpointID)        {}
func (answeringOC) NotifyCheckpointAborted(checkpoint.CheckpointID)         {}
func (answeringOC) ResetToCheckpoint(checkpoint.CheckpointID, []byte) error { return nil }
func (answeringOC) SubtaskReset(int, checkpoint.CheckpointID) error         { return nil }

// BenchmarkCheckpointWithCoordinators: each iteration is one whole checkpoint of 8 tasks (8
// vertices × 1 subtask) — trigger, every ack, store in memory, notifications — with 0 or 8
// operator coordinators answering inside their call: what the coordinator phase adds to a
// checkpoint.
func BenchmarkCheckpointWithCoordinators(b *testing.B) {
	for _, n := range []int{0, 8} {
		b.Run(fmt.Sprintf("coordinators=%d", n), func(b *testing.B) {
			eg := jobgraph.NewExecutionGraphID()
			var tasks []jobgraph.ExecutionAttemptID
			var ocs []checkpoint.OperatorCoordinatorCheckpointContext
			for i := range 8 {
				v := jobgraph.NewJobVertexID()
				tasks = append(tasks, jobgraph.ExecutionAttemptID{ExecutionGraphID: eg, ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: v}})
				if i < n {
					ocs = append(ocs, answeringOC{vertex: v, state: make([]byte, 64)})
				}
			}
			timers := manualtime.New(start)
			store, _ := checkpoint.NewStandaloneCompletedCheckpointStore(1)
			jm := jobgraph.NewJobMasterID()
			c, err := checkpoint.NewCheckpointCoordinator(checkpoint.Config{
				JobMasterID: jm, Timers: timers, Clock: timers.Now, Tasks: nopTasks{},
				Plan: func() (checkpoint.CheckpointPlan, error) {
					return checkpoint.CheckpointPlan{TasksToTrigger: tasks, TasksToWaitFor: tasks}, nil
				},
				Store: store, IDCounter: checkpoint.NewStandaloneCheckpointIDCounter(), FailJob: nopTasks{},
				Coordinators: ocs,
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := range b.N {
				id := checkpoint.CheckpointID(i + 1)
				if err := c.TriggerCheckpoint(jm, nil); err != nil {
					b.Fatal(err)
				}
				for _, a := range tasks {
					if err := c.ReceiveAcknowledgeMessage(jm, checkpoint.AcknowledgeCheckpoint{Attempt: a, CheckpointID: id, State: checkpoint.StateHandle{Size: 64}}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			if got, _ := store.Latest(); got.CheckpointID != checkpoint.CheckpointID(b.N) || len(got.CoordinatorStates) != n {
				b.Fatalf("latest checkpoint %d with %d coordinator states, want %d with %d", got.CheckpointID, len(got.CoordinatorStates), b.N, n)
			}
		})
	}
}
