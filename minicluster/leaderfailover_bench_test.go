package minicluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/file"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// failoverJobs is the number of running jobs BenchmarkLeaderFailover moves to the new leader.
const failoverJobs = 100

// BenchmarkLeaderFailover: a leader holding failoverJobs running jobs loses its leadership; each
// op is the time from the loss until every job is RUNNING again under the new leader (issue 12's
// speed target: ≤ 1 s plus the election's own timeout). Two MiniClusters (the JobManager
// processes) over one ha/file directory in one process, each with its own client, 4 TaskExecutors
// × 25 slots and its own RPC service; every job is one streaming task of parallelism 1 that runs
// until canceled. The first cluster leads and runs the jobs; the loss is the close of its HA
// client (the flock released: the same as its process exiting), which revokes its contenders and
// suspends its jobs; the standby's client takes the lock at its next try (ha/file's poll interval,
// file.DefaultPollInterval = 100 ms: the election's timeout here), recovers the plans and runs
// them. Setup and teardown (two clusters, the submissions) are outside the timer; jobs is the
// number of jobs, poll-ms the poll interval.
func BenchmarkLeaderFailover(b *testing.B) {
	b.Run("ha=file", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			dir := b.TempDir()
			newHA := func() (ha.Services, error) { return file.New(file.Options{Dir: dir}) }
			benchLeaderFailover(b, newHA)
		}
		b.ReportMetric(failoverJobs, "jobs")
		b.ReportMetric(float64(file.DefaultPollInterval.Milliseconds()), "poll-ms")
	})
}

// benchLeaderFailover runs one op: it builds the leader's and the standby's clusters over two
// clients newHA returns, starts failoverJobs jobs on the leader, and times from closing the
// leader's client until the standby runs every job. The timer must be stopped on entry; it is
// stopped again on return.
func benchLeaderFailover(b *testing.B, newHA func() (ha.Services, error)) {
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
	if err := leaderHA.Close(); err != nil {
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

// runningCounter counts, per cluster, the jobs that reached RUNNING, and signals once all did.
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
