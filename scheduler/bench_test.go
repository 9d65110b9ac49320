package scheduler

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/slotpool"
)

// countingDeployer counts deployments and partition IDs handed over, and keeps nothing.
type countingDeployer struct{ deployed, inputs int }

func (d *countingDeployer) Deploy(tdd rpc.TaskDeploymentDescriptor, _ slotpool.AllocatedSlot) {
	d.deployed++
	for _, g := range tdd.InputGates {
		d.inputs += len(g.Partitions)
	}
}
func (d *countingDeployer) CancelTask(jobgraph.ExecutionAttemptID, jobgraph.ResourceID)    {}
func (d *countingDeployer) ReleasePartitions(jobgraph.ResourceID, []rpc.ResultPartitionID) {}

// BenchmarkScheduleAllToAll mirrors Flink's scheduler benchmarks (flink-benchmarks,
// SchedulingAndDeployingBenchmark): source –ALL_TO_ALL→ sink in one slot sharing group, streaming
// (PIPELINED_BOUNDED: one region, one bulk); it measures New + StartScheduling + offering every
// slot until every task is deployed.
func BenchmarkScheduleAllToAll(b *testing.B) {
	for _, p := range []int{1000, 4000} {
		b.Run(fmt.Sprintf("streaming-%d", p), func(b *testing.B) {
			g := jobgraph.New("bench", jobgraph.Streaming)
			src := g.AddVertex("source", "noop", p).WithSlotSharingGroup("default")
			sink := g.AddVertex("sink", "noop", p).WithSlotSharingGroup("default")
			g.Connect(src, sink, jobgraph.AllToAll, jobgraph.PipelinedBounded)
			offers := make([]rpc.SlotOffer, p)
			for i := range offers {
				offers[i] = rpc.SlotOffer{AllocationID: jobgraph.NewAllocationID(), SlotIndex: i}
			}
			logger := slog.New(slog.DiscardHandler)
			b.ReportAllocs()
			for b.Loop() {
				pool, err := slotpool.New(slotpool.Config{Timers: newFakeTimers()})
				if err != nil {
					b.Fatal(err)
				}
				d := &countingDeployer{}
				s, err := New(g, FromSlotPool(pool), d, Config{Logger: logger})
				if err != nil {
					b.Fatal(err)
				}
				s.StartScheduling()
				if n := len(pool.OfferSlots("te", offers)); n != p {
					b.Fatalf("%d slots accepted", n)
				}
				if d.deployed != 2*p || d.inputs != p*p {
					b.Fatalf("deployed %d tasks with %d inputs", d.deployed, d.inputs)
				}
			}
		})
	}
}

// The strategies and the partition tracker must not do per-edge work: scheduling the sinks of a
// 10,000 × 10,000 ALL_TO_ALL BLOCKING edge, and releasing its partitions, stays linear.
func BenchmarkBatchAllToAllStrategy(b *testing.B) {
	const p = 10000
	g := jobgraph.New("bench", jobgraph.Batch)
	src := g.AddVertex("source", "noop", p)
	sink := g.AddVertex("sink", "noop", p)
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Blocking)
	b.ReportAllocs()
	for b.Loop() {
		eg, err := executiongraph.Build(g)
		if err != nil {
			b.Fatal(err)
		}
		ops := &countingOps{}
		s := NewPipelinedRegionSchedulingStrategy(ops, eg.Topology())
		t := newPartitionTracker(eg)
		s.StartScheduling()
		for i := range p {
			v := eg.JobVertices()[0].Vertex(i)
			finishVertexB(b, v)
			s.OnExecutionStateChange(v, jobgraph.ExecutionStateFinished)
			t.vertexFinished(v)
		}
		released := 0
		for i := range p {
			v := eg.JobVertices()[1].Vertex(i)
			finishVertexB(b, v)
			for _, batch := range t.vertexFinished(v) {
				released += len(batch.partitions)
			}
		}
		if ops.n != 2*p || released != p {
			b.Fatalf("scheduled %d, released %d", ops.n, released)
		}
	}
}

type countingOps struct{ n int }

func (o *countingOps) AllocateSlotsAndDeploy(vs []*executiongraph.ExecutionVertex) { o.n += len(vs) }

func finishVertexB(b *testing.B, v *executiongraph.ExecutionVertex) {
	e := v.CurrentExecution()
	for _, st := range []jobgraph.ExecutionState{jobgraph.ExecutionStateScheduled, jobgraph.ExecutionStateDeploying,
		jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFinished} {
		if err := e.TransitionState(st); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRestartAllTasks measures one global failover of a RUNNING streaming job, source
// –ALL_TO_ALL PIPELINED→ sink in one slot sharing group with every task deployed to a no-op
// Deployer (slots offered up front): HandleGlobalFailure cancels all 2p tasks, a CANCELED report
// comes for each, the restart (fixed-delay, 0 s) resets them all and deploys them again into the
// slots they gave back. Each op is that whole cycle; the tasks' RUNNING reports before the next
// failure are outside the timer. Flink has no benchmark for this; it is the restart half of
// SchedulingAndDeployingBenchmark.
func BenchmarkRestartAllTasks(b *testing.B) {
	for _, p := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("streaming-%d", p), func(b *testing.B) {
			g := jobgraph.New("bench", jobgraph.Streaming)
			src := g.AddVertex("source", "noop", p).WithSlotSharingGroup("default")
			sink := g.AddVertex("sink", "noop", p).WithSlotSharingGroup("default")
			g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Pipelined)
			g.RestartStrategy = jobgraph.FixedDelayRestart(1<<30, 0)
			timers := newFakeTimers()
			pool, err := slotpool.New(slotpool.Config{Timers: timers, Clock: timers.Now})
			if err != nil {
				b.Fatal(err)
			}
			d := &countingDeployer{}
			s, err := New(g, FromSlotPool(pool), d, Config{Logger: slog.New(slog.DiscardHandler), Timers: timers, Clock: timers.Now})
			if err != nil {
				b.Fatal(err)
			}
			s.StartScheduling()
			offers := make([]rpc.SlotOffer, p)
			for i := range offers {
				offers[i] = rpc.SlotOffer{AllocationID: jobgraph.NewAllocationID(), SlotIndex: i}
			}
			if n := len(pool.OfferSlots("te", offers)); n != p {
				b.Fatalf("%d slots accepted", n)
			}
			attempts := make([]jobgraph.ExecutionAttemptID, 0, 2*p)
			report := func(st jobgraph.ExecutionState) {
				for _, a := range attempts {
					if !s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: a, State: st}) {
						b.Fatalf("%s report for %v refused", st, a)
					}
				}
			}
			current := func() {
				attempts = attempts[:0]
				for v := range s.ExecutionGraph().Vertices() {
					attempts = append(attempts, v.CurrentExecution().AttemptID())
				}
			}
			current()
			report(jobgraph.ExecutionStateRunning)
			cause := errors.New("global failure")
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				deployed := d.deployed
				s.HandleGlobalFailure(cause)
				report(jobgraph.ExecutionStateCanceled)
				timers.Advance(0)
				if d.deployed-deployed != 2*p || s.JobStatus() != jobgraph.JobStatusRunning {
					b.Fatalf("redeployed %d tasks, job %s", d.deployed-deployed, s.JobStatus())
				}
				b.StopTimer()
				current()
				report(jobgraph.ExecutionStateRunning)
				b.StartTimer()
			}
			b.StopTimer()
			if s.ExecutionGraph().JobVertices()[0].Vertex(0).CurrentExecution().AttemptNumber() != b.N {
				b.Fatal("not every op restarted")
			}
		})
	}
}
