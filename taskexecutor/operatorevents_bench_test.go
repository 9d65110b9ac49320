package taskexecutor

import (
	"context"
	"testing"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// BenchmarkOperatorEventToTask is one coordinator → task event on the in-process TaskExecutor:
// SendOperatorEventToTask through the TaskExecutor's loop into the task's mailbox, the task's
// handler run inside its Yield, and the answer back to the caller.
func BenchmarkOperatorEventToTask(b *testing.B) {
	svc := rpc.NewLocalService()
	if err := svc.Register(jmAddr, &fakeJobMaster{}); err != nil {
		b.Fatal(err)
	}
	if err := svc.Register(rmAddr, &fakeResourceManager{id: rmToken(9)}); err != nil {
		b.Fatal(err)
	}
	reg := NewRegistry()
	handled := 0
	reg.Register("events", func(ctx context.Context, env Environment) error {
		env.SetOperatorEventHandler(func([]byte) error { handled++; return nil })
		for {
			if err := env.Yield(ctx); err != nil {
				return err
			}
		}
	})
	te, err := New(Config{ResourceID: "te-1", NumSlots: 1, Registry: reg, RPC: svc, ResourceManagerAddress: rmAddr, Logger: discard})
	if err != nil {
		b.Fatal(err)
	}
	defer te.Close()
	if err := te.Start(ctx); err != nil {
		b.Fatal(err)
	}
	if err := te.RequestSlot(ctx, rpc.SlotID{ResourceID: "te-1"}, jobID(1), allocID(1), jobgraph.ResourceProfile{}, jmAddr, jmToken(1), rmToken(9)); err != nil {
		b.Fatal(err)
	}
	d := tdd(1, 0, "events", allocID(1))
	d.HasOperatorCoordinator = true
	if err := te.SubmitTask(ctx, jmToken(1), d); err != nil {
		b.Fatal(err)
	}
	event := []byte(`{"type":"AddSplits","splits":[{"id":"split-17"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := te.SendOperatorEventToTask(ctx, jmToken(1), d.ExecutionAttemptID, event); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := te.CancelTask(ctx, d.ExecutionAttemptID); err != nil {
		b.Fatal(err)
	}
	if handled < b.N {
		b.Fatalf("handled %d of %d events", handled, b.N)
	}
}
