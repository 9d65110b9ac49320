package jobmaster_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// benchTE is a TaskExecutor that accepts every deployment and hands each checkpoint trigger to
// triggers (the checkpoint's ID, once per checkpoint).
type benchTE struct {
	mu       sync.Mutex
	submits  []rpc.TaskDeploymentDescriptor
	deployed chan struct{} // gets a value per SubmitTasks call
	triggers chan checkpoint.CheckpointID
	lastID   checkpoint.CheckpointID
}

func (f *benchTE) RequestSlot(context.Context, rpc.SlotID, jobgraph.JobID, jobgraph.AllocationID, jobgraph.ResourceProfile, string, jobgraph.JobMasterID, jobgraph.ResourceManagerID) error {
	return errors.New("not used")
}
func (f *benchTE) SubmitTask(context.Context, jobgraph.JobMasterID, rpc.TaskDeploymentDescriptor) error {
	return errors.New("not used")
}
func (f *benchTE) SubmitTasks(_ context.Context, _ jobgraph.JobMasterID, tdds []rpc.TaskDeploymentDescriptor) ([]error, error) {
	f.mu.Lock()
	f.submits = append(f.submits, tdds...)
	f.mu.Unlock()
	f.deployed <- struct{}{}
	return nil, nil
}
func (f *benchTE) CancelTask(context.Context, jobgraph.ExecutionAttemptID) error { return nil }
func (f *benchTE) FreeSlot(context.Context, jobgraph.AllocationID, *jobgraph.ErrorInfo) error {
	return nil
}
func (f *benchTE) ReleasePartitions(context.Context, jobgraph.JobID, []rpc.ResultPartitionID) error {
	return nil
}
func (f *benchTE) DisconnectJobMaster(context.Context, jobgraph.JobMasterID, jobgraph.JobID, *jobgraph.ErrorInfo) error {
	return nil
}
func (f *benchTE) HeartbeatFromJobMaster(context.Context, jobgraph.ResourceID) error { return nil }
func (f *benchTE) HeartbeatFromResourceManager(context.Context, jobgraph.ResourceID) error {
	return nil
}
func (f *benchTE) TriggerCheckpoint(_ context.Context, _ jobgraph.JobMasterID, _ jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, _ time.Time, _ checkpoint.CheckpointProperties) error {
	f.mu.Lock()
	first := id != f.lastID
	f.lastID = id
	f.mu.Unlock()
	if first {
		f.triggers <- id
	}
	return nil
}
func (f *benchTE) ConfirmCheckpoint(context.Context, jobgraph.JobMasterID, jobgraph.ExecutionAttemptID, checkpoint.CheckpointID, time.Time) error {
	return nil
}
func (f *benchTE) AbortCheckpoint(context.Context, jobgraph.JobMasterID, jobgraph.ExecutionAttemptID, checkpoint.CheckpointID, time.Time) error {
	return nil
}

// processCPU is the process's user+system CPU time, which a loaded machine does not inflate the
// way it does wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCheckpointAck sends acknowledgements through a JobMaster's gateway, and so through
// its main loop, to one CheckpointCoordinator whose checkpoints wait for 10,000 tasks (one source
// vertex of parallelism 10,000, all RUNNING on one TaskExecutor): each op is one ack; every
// 10,000th completes a checkpoint (stored in memory, confirmed to the 10,000 tasks through the
// outbox), and the next one is triggered 1 ms later (periodic; that wait is not timed). The acks
// of a checkpoint come from 4 goroutines, as from several TaskExecutors. acks/s is b.N over the
// timed part, which ends when a call queued behind the round's acks returns (so it covers their
// processing on the loop, the completion included); cpu-ns/ack the process's CPU time over it (the outbox sending the next triggers
// and the confirmations included) per ack.
func BenchmarkCheckpointAck(b *testing.B) {
	const tasks, senders = 10_000, 4
	g := jobgraph.New("acks", jobgraph.Streaming)
	g.AddVertex("src", "noop", tasks)
	g.Checkpointing = jobgraph.CheckpointingSettings{Interval: time.Millisecond}
	svc := rpc.NewLocalService()
	rm := &hbRM{id: jobgraph.NewResourceManagerID()}
	if err := svc.Register("rm", rm); err != nil {
		b.Fatal(err)
	}
	te := &benchTE{deployed: make(chan struct{}, 16), triggers: make(chan checkpoint.CheckpointID, 16)}
	if err := svc.Register("te", te); err != nil {
		b.Fatal(err)
	}
	f, err := jobmaster.NewFactory(g, jobmaster.Config{RPC: svc, ResourceManagerAddress: "rm", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	token := jobgraph.NewJobMasterID()
	jm, err := f.Create(ctx, token)
	if err != nil {
		b.Fatal(err)
	}
	defer jm.Close()
	gw := jm.Gateway()
	if err := gw.RegisterTaskExecutor(ctx, token, rpc.TaskExecutorRegistration{ResourceID: "te", Address: "te"}); err != nil {
		b.Fatal(err)
	}
	offers := make([]rpc.SlotOffer, tasks)
	for i := range offers {
		offers[i] = rpc.SlotOffer{AllocationID: jobgraph.NewAllocationID(), SlotIndex: i}
	}
	if accepted, err := gw.OfferSlots(ctx, token, "te", offers); err != nil || len(accepted) != tasks {
		b.Fatalf("accepted %d slots: %v", len(accepted), err)
	}
	for {
		<-te.deployed
		te.mu.Lock()
		n := len(te.submits)
		te.mu.Unlock()
		if n == tasks {
			break
		}
	}
	attempts := make([]jobgraph.ExecutionAttemptID, tasks)
	for i, tdd := range te.submits {
		attempts[i] = tdd.ExecutionAttemptID
		if _, err := gw.UpdateTaskExecutionState(ctx, token, rpc.TaskExecutionState{ExecutionAttemptID: tdd.ExecutionAttemptID, State: jobgraph.ExecutionStateRunning}); err != nil {
			b.Fatal(err)
		}
	}

	// Periodic triggers before every task was RUNNING failed (not all tasks running): the check
	// below counts from here.
	before, err := jm.RequestJob(ctx)
	if err != nil {
		b.Fatal(err)
	}
	failedBefore := before.CheckpointStatistics.Counts.Failed
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	var timed, cpu time.Duration
	for done := 0; done < b.N; {
		id := <-te.triggers
		n := min(tasks, b.N-done)
		start, cpu0 := time.Now(), processCPU()
		b.StartTimer()
		var wg sync.WaitGroup
		for s := range senders {
			wg.Go(func() {
				for i := s; i < n; i += senders {
					ack := checkpoint.AcknowledgeCheckpoint{Attempt: attempts[i], CheckpointID: id, State: checkpoint.StateHandle{Size: 1}}
					if err := gw.AcknowledgeCheckpoint(ctx, token, g.JobID, ack); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		// The acks are queued on the loop; a call behind them returns once they were applied,
		// so the timed part covers their processing (and the completion).
		if _, err := jm.RequestJobStatus(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		timed += time.Since(start)
		cpu += processCPU() - cpu0
		done += n
	}
	b.ReportMetric(float64(b.N)/timed.Seconds(), "acks/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/ack")
	// Every full round of acks completed its checkpoint (the last one may still be being stored:
	// its trigger, which comes after, says it was).
	if b.N >= tasks {
		<-te.triggers
		st, err := jm.RequestJob(ctx)
		if err != nil {
			b.Fatal(err)
		}
		c := st.CheckpointStatistics.Counts
		if c.Completed < int64(b.N/tasks) || c.Failed != failedBefore {
			b.Fatalf("checkpoint counts %+v, want %d completed and %d failed (before the acks)", c, b.N/tasks, failedBefore)
		}
	}
}
