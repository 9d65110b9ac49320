package minicluster_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/file"
	"github.com/jobgraph/jobgraph/internal/durable"
	"github.com/jobgraph/jobgraph/minicluster"
)

// BenchmarkSubmitJob submits a 1-vertex, parallelism-1 no-op job and waits until it FINISHED,
// one job after another, on one MiniCluster with 1 TaskExecutor × 1 slot; jobs/s is the rate,
// goroutines/job how many goroutines the process started per job (each grows its stack anew),
// cpu-µs/job the CPU time of the whole process per job (getrusage), which a machine shared with
// other work changes less than the rate.
//
// ha=embedded runs the default HA services; ha=file runs ha/file over a temp directory, whose
// client leads before the first job (a contender on an election nobody else uses). fsync-raw is
// the disk's limit for ha=file: per op, in a directory of the same file system, the durable
// writes ha/file makes for one job with internal/durable alone — the plan (WriteFile), the
// JobMaster's leader file (WriteFile), the dirty result (CreateExclusive), the plan's removal,
// the rename to clean and the leader file's removal (each an fsync of the directory) — so
// jobs/s of ha=file over ops/s of fsync-raw is how close ha/file comes to what the disk allows.
//
// It runs the default configuration: slotmanager.requirement-check.delay (50 ms) holds back only
// a job that loses a slot it was just sent, so each job's slot is requested at once. (Flink
// delays every requirement check by it, which would cap one-after-another submission at 20
// jobs/s; see docs/ARCHITECTURE.md.)
func BenchmarkSubmitJob(b *testing.B) {
	b.Run("ha=embedded", func(b *testing.B) { benchmarkSubmitJob(b, minicluster.Config{Registry: registry()}) })
	b.Run("ha=file", func(b *testing.B) {
		services, err := file.New(file.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer services.Close()
		leadFileServices(b, services)
		benchmarkSubmitJob(b, minicluster.Config{Registry: registry(), HA: services})
	})
	b.Run("fsync-raw", benchmarkJobFsyncs)
}

func benchmarkSubmitJob(b *testing.B, cfg minicluster.Config) {
	mc, err := minicluster.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := mc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer mc.Close()
	created := goroutinesCreated()
	cpu0, cpuOK := processCPUSeconds()
	for b.Loop() {
		runNoop(b, ctx, mc)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(goroutinesCreated()-created)/float64(b.N), "goroutines/job")
	if cpu1, ok := processCPUSeconds(); ok && cpuOK {
		b.ReportMetric((cpu1-cpu0)*1e6/float64(b.N), "cpu-µs/job")
	}
}

// leadFileServices makes services lead (ha/file fences every write by the client's leadership)
// before the cluster writes: it starts a contender on the JobMaster election of a job that never
// runs, so it takes no component's place, and waits for its grant.
func leadFileServices(b *testing.B, services *file.Services) {
	granted := make(chan struct{})
	holder := &grantHolder{granted: granted}
	if err := services.JobMasterLeaderElection(jobgraph.NewJobID()).Start(holder); err != nil {
		b.Fatal(err)
	}
	select {
	case <-granted:
	case <-time.After(10 * time.Second):
		b.Fatal("the only ha/file client was not granted within 10 s")
	}
}

type grantHolder struct {
	once    sync.Once
	granted chan struct{}
}

func (g *grantHolder) GrantLeadership(ha.SessionID) { g.once.Do(func() { close(g.granted) }) }
func (g *grantHolder) RevokeLeadership()            {}
func (g *grantHolder) HandleError(error)            {}

// benchmarkJobFsyncs does, per op, the durable writes ha/file makes for one job (see
// BenchmarkSubmitJob), with internal/durable directly: the disk's limit for ha=file's jobs/s.
func benchmarkJobFsyncs(b *testing.B) {
	dir := b.TempDir()
	for _, d := range []string{"plans", "leader", "job-result-store"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	plan, err := json.Marshal(noopGraph())
	if err != nil {
		b.Fatal(err)
	}
	info := []byte(`{"address":"jobmaster-0123456789abcdef0123456789abcdef","session":"01234567-89ab-cdef-0123-456789abcdef"}`)
	result := []byte(`{"result":{"jobId":"0123456789abcdef0123456789abcdef","name":"noop","status":"FINISHED","netRuntime":1000000},"version":1}`)
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		id := jobgraph.NewJobID().String()
		planPath := filepath.Join(dir, "plans", id+".json")
		leaderPath := filepath.Join(dir, "leader", id+".json")
		dirtyPath := filepath.Join(dir, "job-result-store", id+"_DIRTY.json")
		must(durable.WriteFile(planPath, plan))
		must(durable.WriteFile(leaderPath, info))
		must(durable.CreateExclusive(dirtyPath, result))
		must(durable.Remove(planPath))
		must(durable.Rename(dirtyPath, filepath.Join(dir, "job-result-store", id+".json")))
		must(durable.Remove(leaderPath))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fsync-sets/s")
}

// goroutinesCreated is the number of goroutines the process has created so far.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func noopGraph() *jobgraph.JobGraph {
	g := jobgraph.New("noop", jobgraph.Batch)
	g.AddVertex("v", "noop", 1)
	return g
}

func runNoop(b *testing.B, ctx context.Context, mc *minicluster.MiniCluster) {
	res, err := mc.Run(ctx, noopGraph())
	if err != nil {
		b.Fatal(err)
	}
	if res.Status != jobgraph.JobStatusFinished {
		b.Fatalf("job ended %s: %v", res.Status, res.RootCause)
	}
}

// backlogJobs is the size of BenchmarkSubmitBacklog's flood, and serialJobs the number of jobs
// it runs one after another for the rate to compare with.
const (
	backlogJobs = 10_000
	serialJobs  = 2_000
)

// backlogTimeout is the slot.request.timeout of BenchmarkSubmitBacklog's cluster. The issue's
// scenario is 5 s: every job of the flood then finishes only if the backlog drains within about
// 5 s (≥ 2,000 jobs/s); the jobs at its end fail with no-resource-available otherwise, as they
// would in Flink. The default, Flink's 300 s, measures the rate whatever the machine's load.
var backlogTimeout = flag.Duration("backlog.slot-request-timeout", 300*time.Second, "slot.request.timeout of BenchmarkSubmitBacklog")

// BenchmarkSubmitBacklog measures a backlog: each iteration starts a MiniCluster of 1 TaskExecutor
// × 1 slot with slot.request.timeout -backlog.slot-request-timeout, runs serialJobs no-op jobs one after another (as
// BenchmarkSubmitJob does: serial-jobs/s), then submits backlogJobs no-op jobs at once, each from
// its own goroutine, and waits for every result (backlog-jobs/s, from the first submission to the
// last result). Every job must end FINISHED. ratio is backlog-jobs/s over serial-jobs/s; the
// target is ≥ 0.5 (issue 8: a backlog costs linear time).
func BenchmarkSubmitBacklog(b *testing.B) {
	ctx := context.Background()
	var serial, backlog time.Duration
	for b.Loop() {
		mc, err := minicluster.New(minicluster.Config{Registry: registry(), SlotRequestTimeout: *backlogTimeout})
		if err != nil {
			b.Fatal(err)
		}
		if err := mc.Start(ctx); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		for range serialJobs {
			runNoop(b, ctx, mc)
		}
		t1 := time.Now()
		serial += t1.Sub(t0)

		var wg sync.WaitGroup
		statuses := make([]jobgraph.JobStatus, backlogJobs)
		errs := make([]error, backlogJobs)
		for i := range backlogJobs {
			wg.Go(func() {
				res, err := mc.Run(ctx, noopGraph())
				if err != nil {
					errs[i] = err
					return
				}
				statuses[i] = res.Status
			})
		}
		wg.Wait()
		backlog += time.Since(t1)
		failed := 0
		for i := range backlogJobs {
			if errs[i] != nil || statuses[i] != jobgraph.JobStatusFinished {
				failed++
			}
		}
		if failed > 0 {
			first := 0
			for errs[first] == nil && statuses[first] == jobgraph.JobStatusFinished {
				first++
			}
			b.Fatalf("%d of %d jobs did not finish with slot.request.timeout %v; the first: %v %v", failed, backlogJobs, *backlogTimeout, statuses[first], errs[first])
		}
		if err := mc.Close(); err != nil {
			b.Fatal(err)
		}
	}
	serialRate := float64(b.N*serialJobs) / serial.Seconds()
	backlogRate := float64(b.N*backlogJobs) / backlog.Seconds()
	b.ReportMetric(serialRate, "serial-jobs/s")
	b.ReportMetric(backlogRate, "backlog-jobs/s")
	b.ReportMetric(backlogRate/serialRate, "ratio")
	b.ReportMetric(0, "ns/op")
}
