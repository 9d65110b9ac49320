package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/examples/wordcount/wc"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

// blockTaskCode names the task code of BenchmarkRemoteDeploy's job: it blocks until canceled.
const blockTaskCode = "bench-block-until-canceled"

// The test binary's TaskExecutor roles run the benchmark's task code beside the word count's.
func init() {
	registerTaskCode = func(reg *taskexecutor.Registry) {
		wc.Register(reg)
		reg.Register(blockTaskCode, func(ctx context.Context, _ taskexecutor.Environment) error {
			<-ctx.Done()
			return ctx.Err()
		})
	}
}

// teCPUProfile, when set (go test … -args -te-cpuprofile P), makes BenchmarkRemoteDeploy's
// TaskExecutor processes write their CPU profiles to P.taskexecutor-<i> (-cpuprofile); the
// JobManager's is the test binary's own -test.cpuprofile.
var teCPUProfile = flag.String("te-cpuprofile", "", "BenchmarkRemoteDeploy: write each TaskExecutor process's CPU profile to this file name suffixed with .taskexecutor-<i>")

// Issue 13's remote deploy: deployTaskExecutors TaskExecutor processes of deploySlots slots,
// and a job of 2 × deployParallelism tasks.
const (
	deployTaskExecutors = 20
	deployParallelism   = 1000
	deploySlots         = deployParallelism / deployTaskExecutors
	// deployHeartbeatTimeout is long: 20 processes on a loaded machine must not time out
	// while the benchmark runs.
	deployHeartbeatTimeout = 30 * time.Second
)

// deployJob is the remote deploy's job: source → sink, POINTWISE, PIPELINED (edge true) or
// not connected (edge false), both of parallelism p in the slot-sharing group "default" (so p
// slots, each holding a source and a sink subtask), every task blocking until canceled: 2p
// tasks. POINTWISE, not ALL_TO_ALL as in minicluster's BenchmarkJobToRunning: the network
// shuffle opens one gRPC stream per (partition, subpartition) a reader reads when its task
// starts, so ALL_TO_ALL at p=1000 would be 10⁶ streams; POINTWISE is p of them, one per sink.
// Without the edge no task has a partition or a reader: what is left is the control plane.
func deployJob(p int, edge bool) *jobgraph.JobGraph {
	g := jobgraph.New("remote-deploy", jobgraph.Streaming)
	src := g.AddVertex("source", blockTaskCode, p).WithSlotSharingGroup("default")
	sink := g.AddVertex("sink", blockTaskCode, p).WithSlotSharingGroup("default")
	if edge {
		g.Connect(src, sink, jobgraph.Pointwise, jobgraph.Pipelined)
	}
	return g
}

// procCPUSeconds is the user and system CPU time process pid has used so far, from
// /proc/<pid>/stat (clock ticks of 1/100 s, Linux's USER_HZ); false where there is no /proc.
func procCPUSeconds(pid int) (float64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces: count from after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseUint(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return float64(utime+stime) / 100, true
}

// deployCluster is the remote deploy's cluster: a JobManager in this process, on its own gRPC
// Service on 127.0.0.1, and deployTaskExecutors TaskExecutor processes (this test binary with
// -role taskexecutor) registered with its ResourceManager over gRPC; a Dispatcher client over
// gRPC from another Service. The JobManager's ExecutionStateListener counts the current job's
// DEPLOYING and RUNNING states, notes when the first and the last task was DEPLOYING (as
// nanoseconds since the job's submission at start), and signals allRunning once all its tasks
// are RUNNING.
type deployCluster struct {
	jm         *jobManager
	tes        []*process
	client     *grpctransport.Service
	dispatcher rpc.DispatcherGateway
	tasks      int64
	allRunning chan struct{}

	start                       time.Time
	deploying, running          atomic.Int64
	firstDeploying, allDeployed atomic.Int64
}

// reset readies the counters for the next job, submitted now.
func (dc *deployCluster) reset() {
	dc.deploying.Store(0)
	dc.running.Store(0)
	dc.firstDeploying.Store(0)
	dc.allDeployed.Store(0)
	dc.start = time.Now()
}

func (dc *deployCluster) executionStateChanged(_ jobgraph.ExecutionAttemptID, st jobgraph.ExecutionState) {
	switch st {
	case jobgraph.ExecutionStateDeploying:
		n := dc.deploying.Add(1)
		if n == 1 {
			dc.firstDeploying.Store(int64(time.Since(dc.start)))
		}
		if n == dc.tasks {
			dc.allDeployed.Store(int64(time.Since(dc.start)))
		}
	case jobgraph.ExecutionStateRunning:
		if dc.running.Add(1) == dc.tasks {
			dc.allRunning <- struct{}{}
		}
	}
}

func startDeployCluster(b *testing.B, tasks int) *deployCluster {
	b.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dc := &deployCluster{tasks: int64(tasks), allRunning: make(chan struct{}, 1)}
	jm, err := startJobManager(ctx, "", deployHeartbeatTimeout, log, func(cfg *cluster.JobManagerConfig) {
		cfg.ExecutionStateListener = dc.executionStateChanged
	})
	if err != nil {
		b.Fatal(err)
	}
	dc.jm = jm
	b.Cleanup(func() { dc.close(b) })
	if err := jm.jm.AwaitLeadership(ctx); err != nil {
		b.Fatal(err)
	}
	// The TaskExecutor processes start side by side; each is registered once startRole returns.
	tes := make([]*process, deployTaskExecutors)
	errs := make([]error, deployTaskExecutors)
	var wg sync.WaitGroup
	for i := range tes {
		wg.Go(func() {
			args := []string{"-role", "taskexecutor", "-resourcemanager", jm.jm.ResourceManagerAddress(),
				"-slots", strconv.Itoa(deploySlots), "-heartbeat-timeout", deployHeartbeatTimeout.String()}
			if *teCPUProfile != "" {
				args = append(args, "-cpuprofile", fmt.Sprintf("%s.taskexecutor-%d", *teCPUProfile, i))
			}
			tes[i], errs[i] = startRole(ctx, os.Stderr, []string{"TASKEXECUTOR"}, args...)
		})
	}
	wg.Wait()
	for i, te := range tes {
		if te != nil {
			dc.tes = append(dc.tes, te)
		}
		if errs[i] != nil {
			b.Fatal(errs[i])
		}
	}
	if dc.client, err = grpctransport.New(grpctransport.Options{Logger: log}); err != nil {
		b.Fatal(err)
	}
	if dc.dispatcher, err = rpc.Connect[rpc.DispatcherGateway](ctx, dc.client, jm.jm.DispatcherAddress()); err != nil {
		b.Fatal(err)
	}
	return dc
}

// close stops the TaskExecutor processes, then the client and the JobManager.
func (dc *deployCluster) close(b *testing.B) {
	for _, te := range dc.tes {
		te.stop()
	}
	var errs []error
	if dc.client != nil {
		errs = append(errs, dc.client.Close())
	}
	errs = append(errs, dc.jm.close())
	if err := errors.Join(errs...); err != nil {
		b.Error(err)
	}
}

// cpuSeconds is the CPU time this process (the JobManager, the client) and the TaskExecutor
// processes have used so far; false when /proc or getrusage does not say.
func (dc *deployCluster) cpuSeconds() (jm, tes float64, ok bool) {
	jm, ok = cpuSeconds()
	for _, te := range dc.tes {
		v, known := procCPUSeconds(te.cmd.Process.Pid)
		tes, ok = tes+v, ok && known
	}
	return jm, tes, ok
}

// BenchmarkRemoteDeploy is issue 13's "Remote deploy: 2,000 tasks onto 20 TaskExecutor
// processes, submit → all RUNNING (target ≤ 1 s)". Outside the timer and once: a JobManager in
// this process on its own gRPC Service, and 20 TaskExecutor processes of 50 slots each (this
// test binary re-executed with -role taskexecutor, the word count's command's role, with the
// network shuffle), all on 127.0.0.1 and registered. One op submits deployJob(1000) — 2,000
// tasks, source → sink POINTWISE PIPELINED (sub-benchmark pointwise, the figure) or
// the two vertices unconnected (no-edge: no shuffle at all), in one slot-sharing group, every
// task blocking until canceled — to the Dispatcher over gRPC and waits until all 2,000 are RUNNING (counted
// by the JobManager's ExecutionStateListener: no polling), then (timed separately) cancels it
// and waits for its JobResult, which must say CANCELED. ns/op is both; metrics:
// to-running-s/op (submit → all RUNNING, the figure) in three phases — slots-s/op
// (submit → the first task DEPLOYING: the job's start, slot requests and offers),
// deploying-s/op (→ the last task DEPLOYING) and reports-s/op (→ the last task's RUNNING
// report, two reports a task: INITIALIZING and RUNNING) —, cancel-s/op (CancelJob → the
// JobResult), jm-cpu-s/op and te-cpu-s/op the CPU time of the JobManager's process and of
// the 20 TaskExecutor processes together during both (/proc/<pid>/stat, read again once all
// are RUNNING: running-cpu-s/op and cancel-cpu-s/op split their sum by phase; that read of 21
// files is inside the timer), load the 1-minute
// load average at the end. B/op and allocs/op count this process only. A runtime.GC before
// each op is outside the timer.
//
//	go test -run '^$' -bench RemoteDeploy -benchtime 3x -benchmem ./examples/cluster/
func BenchmarkRemoteDeploy(b *testing.B) {
	dc := startDeployCluster(b, 2*deployParallelism)
	for _, shape := range []struct {
		name string
		edge bool
	}{{"pointwise", true}, {"no-edge", false}} {
		b.Run(shape.name, func(b *testing.B) { benchmarkRemoteDeploy(b, dc, shape.edge) })
	}
}

func benchmarkRemoteDeploy(b *testing.B, dc *deployCluster, edge bool) {
	ctx := context.Background()
	var toRunning, toCanceled, jmCPU, teCPU, runningCPU, slots, deploying float64
	cpuKnown := true
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		g := deployJob(deployParallelism, edge)
		jm0, te0, ok0 := dc.cpuSeconds()
		b.StartTimer()
		dc.reset()
		t0 := dc.start
		if err := dc.dispatcher.SubmitJob(ctx, g); err != nil {
			b.Fatal(err)
		}
		<-dc.allRunning
		t1 := time.Now()
		jmR, teR, okR := dc.cpuSeconds()
		if err := dc.dispatcher.CancelJob(ctx, g.JobID); err != nil {
			b.Fatal(err)
		}
		res, err := dc.dispatcher.RequestJobResult(ctx, g.JobID)
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		b.StopTimer()
		jm1, te1, ok1 := dc.cpuSeconds()
		if res.Status != jobgraph.JobStatusCanceled {
			b.Fatalf("job ended %s: %v", res.Status, res.Failure)
		}
		slots += time.Duration(dc.firstDeploying.Load()).Seconds()
		deploying += time.Duration(dc.allDeployed.Load() - dc.firstDeploying.Load()).Seconds()
		toRunning += t1.Sub(t0).Seconds()
		toCanceled += t2.Sub(t1).Seconds()
		jmCPU += jm1 - jm0
		teCPU += te1 - te0
		runningCPU += jmR - jm0 + teR - te0
		cpuKnown = cpuKnown && ok0 && ok1 && okR
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(toRunning/n, "to-running-s/op")
	b.ReportMetric(slots/n, "slots-s/op")
	b.ReportMetric(deploying/n, "deploying-s/op")
	b.ReportMetric((toRunning-slots-deploying)/n, "reports-s/op")
	b.ReportMetric(toCanceled/n, "cancel-s/op")
	if cpuKnown {
		b.ReportMetric(jmCPU/n, "jm-cpu-s/op")
		b.ReportMetric(teCPU/n, "te-cpu-s/op")
		b.ReportMetric(runningCPU/n, "running-cpu-s/op")
		b.ReportMetric((jmCPU+teCPU-runningCPU)/n, "cancel-cpu-s/op")
	}
	if l, ok := loadAverage(); ok {
		b.ReportMetric(l, "load")
	}
}
