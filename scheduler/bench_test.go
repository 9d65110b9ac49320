package scheduler

import (
	"encoding/json"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/slotpool"
)

// The benchmarks in this file mirror Flink's scheduler benchmarks (flink-benchmarks
// org.apache.flink.scheduler.benchmark, built on flink-runtime's
// org.apache.flink.runtime.scheduler.benchmark.SchedulerBenchmarkUtils and JobConfiguration):
// source → sink, ALL_TO_ALL, both of parallelism p, in one slot-sharing group; STREAMING is a
// streaming job with PIPELINED results (one pipelined region of 2p vertices), BATCH a batch job
// with BLOCKING results (2p regions of one vertex). Each benchmark runs the sub-benchmarks of the
// modes it applies to, named "<mode>-<p>". What one op measures is written at each benchmark;
// set-up outside the op is shared through benchEnv.

// benchCase is one of Flink's JobConfigurations at one parallelism.
type benchCase struct {
	name      string
	p         int
	streaming bool
}

var benchCases = []benchCase{
	{"streaming-4000", 4000, true},
	{"streaming-10000", 10000, true},
	{"batch-4000", 4000, false},
	{"batch-10000", 10000, false},
}

// benchModes selects the cases of the modes a benchmark applies to.
type benchModes int

const (
	bothModes benchModes = iota
	streamingOnly
	batchOnly
)

// runBenchCases runs fn as one sub-benchmark per case of modes, with a fresh benchEnv each.
func runBenchCases(b *testing.B, modes benchModes, fn func(b *testing.B, env *benchEnv)) {
	for _, bc := range benchCases {
		if (modes == streamingOnly && !bc.streaming) || (modes == batchOnly && bc.streaming) {
			continue
		}
		b.Run(bc.name, func(b *testing.B) {
			env := newBenchEnv(b, bc)
			b.ReportAllocs()
			fn(b, env)
			runtime.KeepAlive(env) // so that a MiB-retained measurement does not see env freed
		})
	}
}

// benchEnv is the set-up every benchmark shares: the JobGraph of its case, its slot offers (one
// per subtask index: a source and a sink share a slot), fake slots for deploying without a pool,
// and a scheduler factory.
type benchEnv struct {
	benchCase
	g      *jobgraph.JobGraph
	source *jobgraph.JobVertex
	sink   *jobgraph.JobVertex
	offers []rpc.SlotOffer
	slots  []slotpool.AllocatedSlot // by subtask index, for deploy without a pool

	// Set by newScheduler.
	timers   *fakeTimers
	pool     *slotpool.Pool
	deployer *countingDeployer
	s        *DefaultScheduler
}

func newBenchEnv(b testing.TB, bc benchCase) *benchEnv {
	b.Helper()
	jobType, rt := jobgraph.Batch, jobgraph.Blocking
	if bc.streaming {
		jobType, rt = jobgraph.Streaming, jobgraph.Pipelined
	}
	g := jobgraph.New("benchmark", jobType)
	source := g.AddVertex("source", "noop", bc.p)
	sink := g.AddVertex("sink", "noop", bc.p)
	g.Connect(source, sink, jobgraph.AllToAll, rt)
	// Flink's HandleGlobalFailureAndRestartAllTasksBenchmark restarts with a fixed delay.
	g.RestartStrategy = jobgraph.FixedDelayRestart(1<<30, 0)
	env := &benchEnv{benchCase: bc, g: g, source: source, sink: sink,
		offers: make([]rpc.SlotOffer, bc.p), slots: make([]slotpool.AllocatedSlot, bc.p)}
	for i := range env.offers {
		env.offers[i] = rpc.SlotOffer{AllocationID: jobgraph.NewAllocationID(), SlotIndex: i}
		env.slots[i] = slotpool.AllocatedSlot{AllocationID: jobgraph.NewAllocationID(), TaskExecutor: "te", SlotIndex: i}
	}
	return env
}

// newScheduler creates a DefaultScheduler for the case's graph with a fresh pool, deployer and
// manual timers, and keeps them in env.
func (env *benchEnv) newScheduler(b testing.TB) *DefaultScheduler {
	b.Helper()
	env.timers = newFakeTimers()
	pool, err := slotpool.New(slotpool.Config{Timers: env.timers, Clock: env.timers.Now})
	if err != nil {
		b.Fatal(err)
	}
	env.pool = pool
	env.deployer = &countingDeployer{}
	s, err := New(env.g, FromSlotPool(pool), env.deployer, env.config())
	if err != nil {
		b.Fatal(err)
	}
	env.s = s
	return s
}

func (env *benchEnv) config() Config {
	return Config{Logger: slog.New(slog.DiscardHandler), Timers: env.timers, Clock: env.timers.Now}
}

// offerAll offers every slot to the pool; all must be accepted.
func (env *benchEnv) offerAll(b testing.TB) {
	b.Helper()
	if n := len(env.pool.OfferSlots("te", env.offers)); n != env.p {
		b.Fatalf("%d of %d slots accepted", n, env.p)
	}
}

// vertices are the ExecutionVertices of jv in env.s's graph.
func (env *benchEnv) vertices(jv *jobgraph.JobVertex) []*executiongraph.ExecutionVertex {
	ejv := env.s.ExecutionGraph().JobVertex(jv.ID)
	out := make([]*executiongraph.ExecutionVertex, 0, ejv.Parallelism())
	for v := range ejv.Vertices() {
		out = append(out, v)
	}
	return out
}

// report sends st for the current attempt of every vertex; each must be applied.
func (env *benchEnv) report(b testing.TB, vs []*executiongraph.ExecutionVertex, st jobgraph.ExecutionState) {
	b.Helper()
	for _, v := range vs {
		a := v.CurrentExecution().AttemptID()
		if !env.s.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: a, State: st}) {
			b.Fatalf("%s report for %v refused", st, a)
		}
	}
}

// deployAll deploys the current (SCHEDULED) execution of every vertex into the fake slot of its
// subtask index, as Flink's DeployingTasksBenchmarkBase deploys executions it assigned slots to.
func (env *benchEnv) deployAll(vs []*executiongraph.ExecutionVertex) {
	for _, v := range vs {
		env.s.deploy(v.CurrentExecution(), env.slots[v.SubtaskIndex()])
	}
}

// countingDeployer counts calls and keeps the last sink descriptor, nothing else.
type countingDeployer struct {
	deployed, canceled, released int
	sinkTDD                      rpc.TaskDeploymentDescriptor
}

func (d *countingDeployer) Deploy(tdd rpc.TaskDeploymentDescriptor, _ slotpool.AllocatedSlot) {
	d.deployed++
	if len(tdd.InputGates) > 0 {
		d.sinkTDD = tdd
	}
}
func (d *countingDeployer) CancelTask(jobgraph.ExecutionAttemptID, jobgraph.ResourceID) { d.canceled++ }
func (d *countingDeployer) ReleasePartitions(_ jobgraph.ResourceID, ps []rpc.ResultPartitionID) {
	d.released += len(ps)
}

type countingOps struct{ n int }

func (o *countingOps) AllocateSlotsAndDeploy(vs []*executiongraph.ExecutionVertex) { o.n += len(vs) }

// retainedMiB is the live heap that what build returns keeps: HeapAlloc after a GC with it
// alive, minus HeapAlloc after a GC before.
func retainedMiB(b *testing.B, build func() any) float64 {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
}

// BenchmarkCreateScheduler mirrors CreateSchedulerBenchmark: one op is New — the ExecutionGraph
// with its groups and regions, the pipelined-region strategy, the region failover strategy, the
// restart strategy, the slot allocator, the partition tracker. MiB-retained is what one
// scheduler keeps.
func BenchmarkCreateScheduler(b *testing.B) {
	runBenchCases(b, bothModes, func(b *testing.B, env *benchEnv) {
		env.newScheduler(b)
		d, cfg, pool := env.deployer, env.config(), FromSlotPool(env.pool)
		for b.Loop() {
			if _, err := New(env.g, pool, d, cfg); err != nil {
				b.Fatal(err)
			}
		}
		// A pool holds on to the scheduler it serves: measure with a pool of its own.
		fresh, err := slotpool.New(slotpool.Config{Timers: env.timers, Clock: env.timers.Now})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(retainedMiB(b, func() any {
			s, err := New(env.g, FromSlotPool(fresh), d, cfg)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}), "MiB-retained")
	})
}

// BenchmarkSchedulingAndDeploying mirrors SchedulingAndDeployingBenchmark: one op is
// StartScheduling on a new scheduler and the slots arriving (OfferSlots, p slots of one
// TaskExecutor) until every task of what StartScheduling scheduled reached the no-op Deployer:
// streaming, the one region of 2p tasks; batch, the p source regions. Creating the scheduler is
// outside the op.
func BenchmarkSchedulingAndDeploying(b *testing.B) {
	runBenchCases(b, bothModes, func(b *testing.B, env *benchEnv) {
		want := env.p
		if env.streaming {
			want = 2 * env.p
		}
		for range b.N {
			b.StopTimer()
			s := env.newScheduler(b)
			b.StartTimer()
			s.StartScheduling()
			env.offerAll(b)
			if env.deployer.deployed != want {
				b.Fatalf("deployed %d tasks, want %d", env.deployer.deployed, want)
			}
		}
	})
}

// BenchmarkInitSchedulingStrategy mirrors InitSchedulingStrategyBenchmark: one op builds the
// pipelined-region scheduling strategy of a built graph.
func BenchmarkInitSchedulingStrategy(b *testing.B) {
	runBenchCases(b, bothModes, func(b *testing.B, env *benchEnv) {
		eg, err := executiongraph.Build(env.g)
		if err != nil {
			b.Fatal(err)
		}
		topo := eg.Topology()
		ops := &countingOps{}
		for b.Loop() {
			NewPipelinedRegionSchedulingStrategy(ops, topo)
		}
	})
}

// BenchmarkSchedulingDownstreamTasks mirrors SchedulingDownstreamTasksInBatchJobBenchmark: every
// source FINISHED, one op is the strategy's OnExecutionStateChange(source 0, FINISHED), which
// schedules all p sink regions. A new strategy for each op is built outside it (a strategy
// schedules a region once).
func BenchmarkSchedulingDownstreamTasks(b *testing.B) {
	runBenchCases(b, batchOnly, func(b *testing.B, env *benchEnv) {
		eg, err := executiongraph.Build(env.g)
		if err != nil {
			b.Fatal(err)
		}
		sources := eg.JobVertex(env.source.ID)
		for v := range sources.Vertices() {
			driveTo(b, v, jobgraph.ExecutionStateFinished)
		}
		first := sources.Vertex(0)
		for range b.N {
			b.StopTimer()
			ops := &countingOps{}
			s := NewPipelinedRegionSchedulingStrategy(ops, eg.Topology())
			b.StartTimer()
			s.OnExecutionStateChange(first, jobgraph.ExecutionStateFinished)
			if ops.n != env.p {
				b.Fatalf("scheduled %d sinks, want %d", ops.n, env.p)
			}
		}
	})
}

// BenchmarkDeployingTasksInStreamingJob mirrors DeployingTasksInStreamingJobBenchmark: every
// execution SCHEDULED with its slot known, one op deploys all 2p tasks of the one region (build
// each descriptor, DEPLOYING, hand it to the no-op Deployer). TDD-bytes is the JSON encoding of
// one sink's descriptor (Flink's were 270 KiB each at 10,000).
func BenchmarkDeployingTasksInStreamingJob(b *testing.B) {
	runBenchCases(b, streamingOnly, func(b *testing.B, env *benchEnv) {
		for range b.N {
			b.StopTimer()
			s := env.newScheduler(b)
			s.StartScheduling()
			vs := append(env.vertices(env.source), env.vertices(env.sink)...)
			b.StartTimer()
			env.deployAll(vs)
			if env.deployer.deployed != 2*env.p {
				b.Fatalf("deployed %d tasks", env.deployer.deployed)
			}
		}
		b.StopTimer()
		b.ReportMetric(tddBytes(b, env.deployer.sinkTDD, env.p), "TDD-bytes")
	})
}

// tddBytes is the size of tdd's JSON encoding; tdd must be a sink's, reading p partitions.
func tddBytes(b *testing.B, tdd rpc.TaskDeploymentDescriptor, p int) float64 {
	b.Helper()
	if len(tdd.InputGates) != 1 || len(tdd.InputGates[0].Partitions) != p {
		b.Fatalf("no sink descriptor reading %d partitions: %+v", p, tdd.InputGates)
	}
	enc, err := json.Marshal(tdd)
	if err != nil {
		b.Fatal(err)
	}
	if !strings.Contains(string(enc), tdd.TaskName) {
		b.Fatalf("encoding lacks the task name: %s", enc)
	}
	return float64(len(enc))
}

// BenchmarkDeployingDownstreamTasks mirrors DeployingDownstreamTasksInBatchJobBenchmark: the
// sources deployed and FINISHED (the strategy then scheduled every sink), one op deploys all p
// sinks into their slots.
func BenchmarkDeployingDownstreamTasks(b *testing.B) {
	runBenchCases(b, batchOnly, func(b *testing.B, env *benchEnv) {
		for range b.N {
			b.StopTimer()
			s := env.newScheduler(b)
			s.StartScheduling()
			sources, sinks := env.vertices(env.source), env.vertices(env.sink)
			env.deployAll(sources)
			env.report(b, sources, jobgraph.ExecutionStateFinished)
			for _, v := range sinks {
				if st := v.CurrentExecution().State(); st != jobgraph.ExecutionStateScheduled {
					b.Fatalf("sink %s is %s, want SCHEDULED", v.Name(), st)
				}
			}
			deployed := env.deployer.deployed
			b.StartTimer()
			env.deployAll(sinks)
			if env.deployer.deployed-deployed != env.p {
				b.Fatalf("deployed %d sinks", env.deployer.deployed-deployed)
			}
		}
		b.StopTimer()
		b.ReportMetric(tddBytes(b, env.deployer.sinkTDD, env.p), "TDD-bytes")
	})
}

// finishedPartitions is a ResultPartitionAvailabilityChecker that says a partition is available
// once its producer FINISHED, as a partition tracker does.
type finishedPartitions struct{ topo executiongraph.Topology }

func (c finishedPartitions) IsAvailable(id jobgraph.IntermediateResultPartitionID) bool {
	p := c.topo.Partition(id)
	return p != nil && p.IsFinished()
}

// IsPartitionAvailable answers as the scheduler's own tracking does: without looking p up.
func (c finishedPartitions) IsPartitionAvailable(p *executiongraph.IntermediateResultPartition) bool {
	return p.IsFinished()
}

// BenchmarkRegionToRestart mirrors RegionToRestartInStreamingJobBenchmark and
// RegionToRestartInBatchJobBenchmark: one op is the region failover strategy's TasksToRestart
// for a failure of source subtask 0: streaming, the one region of 2p vertices; batch (sources
// FINISHED, their partitions available), the source's region and the p sink regions downstream.
func BenchmarkRegionToRestart(b *testing.B) {
	runBenchCases(b, bothModes, func(b *testing.B, env *benchEnv) {
		eg, err := executiongraph.Build(env.g)
		if err != nil {
			b.Fatal(err)
		}
		sources := eg.JobVertex(env.source.ID)
		want := 2 * env.p
		if !env.streaming {
			want = 1 + env.p
			for v := range sources.Vertices() {
				driveTo(b, v, jobgraph.ExecutionStateFinished)
			}
		}
		topo := eg.Topology()
		strategy := NewRestartPipelinedRegionFailoverStrategy(topo, finishedPartitions{topo})
		failed := sources.Vertex(0)
		cause := errors.New("for test")
		for b.Loop() {
			if n := len(strategy.TasksToRestart(failed, cause)); n != want {
				b.Fatalf("%d vertices to restart, want %d", n, want)
			}
		}
	})
}

// BenchmarkRestartAllTasks mirrors HandleGlobalFailureAndRestartAllTasksBenchmark: the job
// RUNNING with what StartScheduling deployed RUNNING (streaming: all 2p tasks; batch: the p
// sources), one op is HandleGlobalFailure (cancel every task), a CANCELED report for each
// deployed task, the restart (fixed-delay, 0 s) resetting every vertex and deploying again what
// StartScheduling deploys, into the slots given back. The RUNNING reports before the next op
// are outside it. cpu-ms/op is the process's CPU time (getrusage, GC included) in the timed part
// of each op: on a machine shared with other work it moves far less than the wall time.
func BenchmarkRestartAllTasks(b *testing.B) {
	runBenchCases(b, bothModes, func(b *testing.B, env *benchEnv) {
		s := env.newScheduler(b)
		s.StartScheduling()
		env.offerAll(b)
		running := env.vertices(env.source)
		if env.streaming {
			running = append(running, env.vertices(env.sink)...)
		}
		env.report(b, running, jobgraph.ExecutionStateRunning)
		cause := errors.New("global failure")
		d := env.deployer
		var cpu float64
		cpu0, cpuOK := processCPUSeconds()
		b.ResetTimer()
		for range b.N {
			deployed := d.deployed
			s.HandleGlobalFailure(cause)
			env.report(b, running, jobgraph.ExecutionStateCanceled)
			env.timers.Advance(0)
			if d.deployed-deployed != len(running) || s.JobStatus() != jobgraph.JobStatusRunning {
				b.Fatalf("redeployed %d tasks, want %d; job %s", d.deployed-deployed, len(running), s.JobStatus())
			}
			b.StopTimer()
			cpu1, _ := processCPUSeconds()
			cpu += cpu1 - cpu0
			env.report(b, running, jobgraph.ExecutionStateRunning)
			cpu0, _ = processCPUSeconds()
			b.StartTimer()
		}
		b.StopTimer()
		if cpuOK {
			b.ReportMetric(cpu*1e3/float64(b.N), "cpu-ms/op")
		}
		if n := running[0].CurrentExecution().AttemptNumber(); n != b.N {
			b.Fatalf("attempt %d after %d restarts", n, b.N)
		}
	})
}

// BenchmarkPartitionRelease mirrors PartitionReleaseInBatchJobBenchmark: the sources FINISHED,
// the sinks RUNNING, one op moves every sink to FINISHED and gives each to the partition tracker
// (Flink: RegionPartitionGroupReleaseStrategy.vertexFinished); the last sink makes all p source
// partitions releasable. A new graph for each op is built outside it.
func BenchmarkPartitionRelease(b *testing.B) {
	runBenchCases(b, batchOnly, func(b *testing.B, env *benchEnv) {
		for range b.N {
			b.StopTimer()
			eg, err := executiongraph.Build(env.g)
			if err != nil {
				b.Fatal(err)
			}
			t := newPartitionTracker(eg)
			for v := range eg.JobVertex(env.source.ID).Vertices() {
				driveTo(b, v, jobgraph.ExecutionStateFinished)
				t.vertexFinished(v)
			}
			sinks := eg.JobVertex(env.sink.ID)
			for v := range sinks.Vertices() {
				driveTo(b, v, jobgraph.ExecutionStateRunning)
			}
			b.StartTimer()
			released := 0
			for v := range sinks.Vertices() {
				if err := v.CurrentExecution().TransitionState(jobgraph.ExecutionStateFinished); err != nil {
					b.Fatal(err)
				}
				for _, batch := range t.vertexFinished(v) {
					released += len(batch.partitions)
				}
			}
			if released != env.p {
				b.Fatalf("released %d partitions, want %d", released, env.p)
			}
		}
	})
}
