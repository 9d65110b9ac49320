package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/etcd"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// failoverJobs is the number of running jobs BenchmarkLeaderFailover moves to the new leader.
const failoverJobs = 100

// BenchmarkLeaderFailover is the root module's minicluster BenchmarkLeaderFailover (ha=file) on
// ha/etcd: a leader holding failoverJobs running jobs loses its leadership, and each op is the
// time from the loss until every job is RUNNING again under the new leader (issue 12's target:
// ≤ 1 s plus the election's own timeout). Two MiniClusters over one real etcd server (started
// here, on 127.0.0.1), each with its own ha/etcd client (a fresh key prefix per op), 4
// TaskExecutors × 25 slots and its own RPC service; every job is one streaming task of
// parallelism 1 that runs until canceled. The loss is the close of the leader's client, which
// resigns and revokes its lease (a graceful loss: the standby's campaign wins at once; a leader
// that dies instead is followed only once its lease expires, etcd.Options.SessionTTL later).
// Setup and teardown are outside the timer; jobs is the number of jobs.
//
// loss=lease-revoked revokes the leader's lease instead, through a client of its own, as the
// server does when the lease expires: the leader learns it from its watch of its election key
// (and campaigns again, behind the standby), so this is the loss of a leader that died, less
// the TTL the server waits first.
func BenchmarkLeaderFailover(b *testing.B) {
	srv, err := startEtcd()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.close()
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.endpoint}, Logger: zap.NewNop(), DialTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	run := func(b *testing.B, lose func(prefix string, leader ha.Services) error) {
		for i := range b.N {
			b.StopTimer()
			prefix := fmt.Sprintf("/bench/%d-%s", i, jobgraph.NewJobID())
			newHA := func() (ha.Services, error) {
				return etcd.New(etcd.Options{Endpoints: []string{srv.endpoint}, Prefix: prefix})
			}
			benchLeaderFailover(b, newHA, func(leader ha.Services) error { return lose(prefix, leader) })
		}
		b.ReportMetric(failoverJobs, "jobs")
	}
	b.Run("ha=etcd,loss=close", func(b *testing.B) {
		run(b, func(_ string, leader ha.Services) error { return leader.Close() })
	})
	b.Run("ha=etcd,loss=lease-revoked", func(b *testing.B) {
		run(b, func(prefix string, _ ha.Services) error {
			// The oldest campaign key is the leader's (concurrency.Election).
			resp, err := raw.Get(context.Background(), prefix+"/leader/election/", clientv3.WithFirstCreate()...)
			if err != nil {
				return err
			}
			if len(resp.Kvs) == 0 {
				return errors.New("no campaign key: nobody leads")
			}
			_, err = raw.Revoke(context.Background(), clientv3.LeaseID(resp.Kvs[0].Lease))
			return err
		})
	})
}

// benchLeaderFailover runs one op: it builds the leader's and the standby's clusters over two
// clients newHA returns, starts failoverJobs jobs on the leader, and times from lose (of the
// leader's client) until the standby runs every job. The timer must be stopped on entry; it is
// stopped again on return.
func benchLeaderFailover(b *testing.B, newHA func() (ha.Services, error), lose func(leader ha.Services) error) {
	ctx := context.Background()
	start := func(counter *runningCounter) (*minicluster.MiniCluster, ha.Services) {
		h, err := newHA()
		if err != nil {
			b.Fatal(err)
		}
		mc, err := minicluster.Start(ctx, minicluster.Config{TaskExecutors: 4, SlotsPerTaskExecutor: failoverJobs / 4,
			Registry: untilCanceledRegistry(), HA: h, JobStatusListener: counter.listen})
		if err != nil {
			b.Fatal(errors.Join(err, h.Close()))
		}
		return mc, h
	}
	leaderRunning, standbyRunning := newRunningCounter(failoverJobs), newRunningCounter(failoverJobs)
	leader, leaderHA := start(leaderRunning)
	defer leaderHA.Close()
	defer leader.Close()
	for i := range failoverJobs {
		if err := leader.SubmitJob(ctx, untilCanceledGraph(i)); err != nil { // waits for the leadership
			b.Fatal(err)
		}
	}
	standby, standbyHA := start(standbyRunning)
	defer standbyHA.Close()
	defer standby.Close()
	awaitAllRunning(b, leaderRunning, "the leader")

	b.StartTimer()
	if err := lose(leaderHA); err != nil {
		b.Fatal(err)
	}
	awaitAllRunning(b, standbyRunning, "the new leader")
	b.StopTimer()
}

// awaitAllRunning waits until every job is RUNNING on one cluster; a minute is a failure.
func awaitAllRunning(b *testing.B, c *runningCounter, who string) {
	select {
	case <-c.done:
	case <-time.After(time.Minute):
		c.mu.Lock()
		defer c.mu.Unlock()
		b.Fatalf("%d of %d jobs RUNNING on %s after a minute", len(c.running), c.want, who)
	}
}

// runningCounter counts the jobs that reached RUNNING on one cluster, and closes done once all did.
type runningCounter struct {
	mu      sync.Mutex
	running map[jobgraph.JobID]bool
	want    int
	done    chan struct{}
}

func newRunningCounter(want int) *runningCounter {
	return &runningCounter{running: map[jobgraph.JobID]bool{}, want: want, done: make(chan struct{})}
}

func (c *runningCounter) listen(job jobgraph.JobID, status jobgraph.JobStatus, _ time.Time) {
	if status != jobgraph.JobStatusRunning {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[job] {
		return
	}
	c.running[job] = true
	if len(c.running) == c.want {
		close(c.done)
	}
}

// untilCanceledRegistry runs "block": a task that runs until canceled.
func untilCanceledRegistry() *taskexecutor.Registry {
	reg := taskexecutor.NewRegistry()
	reg.Register("block", func(ctx context.Context, env taskexecutor.Environment) error {
		<-ctx.Done()
		return ctx.Err()
	})
	return reg
}

func untilCanceledGraph(i int) *jobgraph.JobGraph {
	g := jobgraph.New(fmt.Sprintf("block-%d", i), jobgraph.Streaming)
	g.AddVertex("v", "block", 1)
	return g
}
