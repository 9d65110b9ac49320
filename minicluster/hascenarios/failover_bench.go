package hascenarios

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// FailoverJobs is the number of running jobs LeaderFailover moves to the new leader (issue 12's
// BenchmarkLeaderFailover: a leader holding 100 running jobs).
const FailoverJobs = 100

// LeaderFailover runs one op of a BenchmarkLeaderFailover on any HA backend, so ha/file's (root
// module) and ha/etcd's (examples/hafailover) measure the same thing. It builds two
// MiniClusters, the leader's and the standby's, each on its own client from newHA (one JobManager
// process each), with 4 TaskExecutors × 25 slots; starts FailoverJobs jobs on the leader (each
// one streaming task of parallelism 1 that runs until canceled) and waits until all run; then
// times from lose(the leader's client) until the standby runs every job. The timer must be
// stopped on entry; it is stopped again on return. A job not RUNNING a minute after it was due
// fails b. Call it from the benchmark's goroutine.
func LeaderFailover(b *testing.B, newHA func() (ha.Services, error), lose func(leader ha.Services) error) {
	ctx := context.Background()
	start := func(counter *runningCounter) (*minicluster.MiniCluster, ha.Services) {
		h, err := newHA()
		if err != nil {
			b.Fatal(err)
		}
		mc, err := minicluster.Start(ctx, minicluster.Config{TaskExecutors: 4, SlotsPerTaskExecutor: FailoverJobs / 4,
			Registry: untilCanceledRegistry(), HA: h, JobStatusListener: counter.listen})
		if err != nil {
			b.Fatal(errors.Join(err, h.Close()))
		}
		return mc, h
	}
	leaderRunning, standbyRunning := newRunningCounter(FailoverJobs), newRunningCounter(FailoverJobs)
	leader, leaderHA := start(leaderRunning)
	defer leaderHA.Close()
	defer leader.Close()
	for i := range FailoverJobs {
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
