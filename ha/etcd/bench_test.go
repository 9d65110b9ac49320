package etcd

import (
	"context"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// BenchmarkSubmitJob is minicluster's BenchmarkSubmitJob with these Services as the cluster's HA
// (ha=etcd): a 1-vertex, parallelism-1 no-op job submitted and waited for until FINISHED, one
// after another, on one MiniCluster with 1 TaskExecutor × 1 slot, over one client of a real etcd
// server started in the process (127.0.0.1, data in a temp directory, so each commit is an fsync
// of its WAL). jobs/s is the rate; goroutines/job and cpu-µs/job (getrusage) count the whole
// process, the etcd server included. txns/job is how many KV transactions the client committed
// per job (each a Raft proposal), reads/job its Gets: whatever the cluster's Dispatcher,
// JobMaster runner and cleanup ask of the stores and elections.
//
// txn-raw is the limit of the same server for that work: per op, txns-per-job fenced
// transactions, one after another, each putting or deleting one key, so jobs/s of ha=etcd over
// ops/s of txn-raw is how close the Services come to what etcd allows for one job's writes;
// its cpu-µs/op is what those transactions alone cost the process (client and server).
//
// The client leads before the first job, as ha=file's does in minicluster: a contender on the
// JobMaster election of a job that never runs takes no component's place.
func BenchmarkSubmitJob(b *testing.B) {
	srv := startServer(b)
	var txns, reads atomic.Int64
	client := countingClient(b, srv, &txns, &reads)
	svc, err := New(Options{Client: client, Prefix: newPrefix()})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	h := newHolder()
	if err := svc.JobMasterLeaderElection(jobgraph.NewJobID()).Start(h); err != nil {
		b.Fatal(err)
	}
	h.awaitGrant(b)

	var txnsPerJob float64
	b.Run("ha=etcd", func(b *testing.B) {
		reg := taskexecutor.NewRegistry()
		reg.Register("noop", func(ctx context.Context, env taskexecutor.Environment) error { return nil })
		mc, err := minicluster.New(minicluster.Config{Registry: reg, HA: svc})
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
		txns0, reads0 := txns.Load(), reads.Load()
		for b.Loop() {
			g := jobgraph.New("noop", jobgraph.Batch)
			g.AddVertex("v", "noop", 1)
			res, err := mc.Run(ctx, g)
			if err != nil {
				b.Fatal(err)
			}
			if res.Status != jobgraph.JobStatusFinished {
				b.Fatalf("job ended %s: %v", res.Status, res.RootCause)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		b.ReportMetric(float64(goroutinesCreated()-created)/float64(b.N), "goroutines/job")
		if cpu1, ok := processCPUSeconds(); ok && cpuOK {
			b.ReportMetric((cpu1-cpu0)*1e6/float64(b.N), "cpu-µs/job")
		}
		txnsPerJob = float64(txns.Load()-txns0) / float64(b.N)
		b.ReportMetric(txnsPerJob, "txns/job")
		b.ReportMetric(float64(reads.Load()-reads0)/float64(b.N), "reads/job")
	})
	b.Run("txn-raw", func(b *testing.B) {
		n := int(txnsPerJob + 0.5)
		if n == 0 {
			b.Skip("run with ha=etcd to learn the transactions per job")
		}
		t, err := svc.currentTerm("txn-raw")
		if err != nil {
			b.Fatal(err)
		}
		key := svc.Prefix() + "/bench/raw"
		ctx := context.Background()
		cpu0, cpuOK := processCPUSeconds()
		for b.Loop() {
			for i := range n {
				op := clientv3.OpPut(key, `{"address":"jobmaster","session":"01234567-89ab-cdef-0123-456789abcdef"}`)
				if i%2 == 1 {
					op = clientv3.OpDelete(key)
				}
				resp, err := client.Txn(ctx).If(fenceOf(t)).Then(op).Commit()
				if err != nil || !resp.Succeeded {
					b.Fatalf("raw transaction: %v (succeeded %v)", err, resp != nil && resp.Succeeded)
				}
			}
		}
		b.ReportMetric(float64(n), "txns-per-job")
		if cpu1, ok := processCPUSeconds(); ok && cpuOK {
			b.ReportMetric((cpu1-cpu0)*1e6/float64(b.N), "cpu-µs/op")
		}
	})
}

// countingClient is a client of srv that counts the KV transactions and reads it sends.
func countingClient(b *testing.B, srv *server, txns, reads *atomic.Int64) *clientv3.Client {
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		switch {
		case strings.HasSuffix(method, ".KV/Txn"):
			txns.Add(1)
		case strings.HasSuffix(method, ".KV/Range"):
			reads.Add(1)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.endpoint}, Logger: zap.NewNop(), DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(count)}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
