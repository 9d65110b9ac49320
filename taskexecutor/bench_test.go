package taskexecutor

import (
	"context"
	"testing"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// signalingJobMaster answers like fakeJobMaster but only signals, recording nothing.
type signalingJobMaster struct {
	fakeJobMaster
	offered  chan struct{}
	finished chan struct{}
}

func (f *signalingJobMaster) OfferSlots(ctx context.Context, token jobgraph.JobMasterID, te jobgraph.ResourceID, offers []rpc.SlotOffer) ([]rpc.SlotOffer, error) {
	defer func() { f.offered <- struct{}{} }()
	return offers, nil
}

func (f *signalingJobMaster) UpdateTaskExecutionState(ctx context.Context, token jobgraph.JobMasterID, s rpc.TaskExecutionState) (bool, error) {
	if s.State.IsTerminal() {
		f.finished <- struct{}{}
	}
	return true, nil
}

// BenchmarkTrivialTaskLifecycle measures one trivial job's work on a TaskExecutor, one job
// after the other: slot request and offer, deployment, three state reports, slot freed.
func BenchmarkTrivialTaskLifecycle(b *testing.B) {
	svc := rpc.NewLocalService()
	jm := &signalingJobMaster{offered: make(chan struct{}, 1), finished: make(chan struct{}, 1)}
	rm := &fakeResourceManager{id: rmToken(9)}
	if err := svc.Register(jmAddr, jm); err != nil {
		b.Fatal(err)
	}
	if err := svc.Register(rmAddr, rm); err != nil {
		b.Fatal(err)
	}
	reg := NewRegistry()
	reg.Register("noop", func(context.Context, Environment) error { return nil })
	te, err := New(Config{ResourceID: "te-1", NumSlots: 1, Registry: reg, RPC: svc, ResourceManagerAddress: rmAddr, Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	defer te.Close()
	if err := te.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		var a jobgraph.AllocationID
		a[0], a[1], a[2] = byte(i), byte(i>>8), byte(i>>16)
		a[15] = 1
		if err := te.RequestSlot(ctx, rpc.SlotID{ResourceID: "te-1"}, jobID(1), a, jobgraph.ResourceProfile{}, jmAddr, jmToken(1), rmToken(9)); err != nil {
			b.Fatal(err)
		}
		<-jm.offered
		d := tdd(1, 0, "noop", a)
		d.ExecutionAttemptID.AttemptNumber = i
		if err := te.SubmitTask(ctx, jmToken(1), d); err != nil {
			b.Fatal(err)
		}
		<-jm.finished
		if err := te.FreeSlot(ctx, a, nil); err != nil {
			b.Fatal(err)
		}
	}
}
