package cluster_test

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/ha/file"
	"github.com/jobgraph/jobgraph/internal/logtest"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Two JobManagers over one ha/file directory, each its own client as two JobManager processes
// would be, and two TaskExecutors following the ResourceManager through a third client: the
// TaskExecutors register with the first JobManager's ResourceManager; once that JobManager
// closes, the second one's client takes the lock (within the poll interval) and the TaskExecutors
// register with its ResourceManager, each exactly once with each leader, in that order; the new
// leader then runs the word count on them to FINISHED with its exact counts.
func TestLeadershipMovingToASecondJobManagerMakesTheTaskExecutorsRegisterAnew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		client := func() *file.Services {
			s, err := file.New(file.Options{Dir: dir, PollInterval: 100 * time.Millisecond})
			require.NoError(t, err)
			return s
		}
		first, second, teClient := client(), client(), client()
		defer func() {
			for _, s := range []*file.Services{first, second, teClient} {
				assert.NoError(t, s.Close())
			}
		}()
		svc := rpc.NewLocalService()
		defer svc.Close()
		ctx := context.Background()

		jm1, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: first,
			ResourceManagerAddress: "resourcemanager-1", DispatcherAddress: "dispatcher-1"})
		require.NoError(t, err)
		defer jm1.Close()
		require.NoError(t, jm1.AwaitLeadership(ctx))
		jm2, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: second,
			ResourceManagerAddress: "resourcemanager-2", DispatcherAddress: "dispatcher-2"})
		require.NoError(t, err)
		defer jm2.Close()

		// Every client polls on its own phase, from when it started polling: the JobManagers'
		// campaigns at 0, 100ms, 200ms…, the TaskExecutors' retrievals (started here) at 50ms,
		// 150ms…. On one phase, a retrieval's probe (a shared lock of the latch) and a standby's
		// try of the exclusive lock could meet in one virtual instant, where either may run first
		// and the standby loses that poll, over and over; real processes' phases drift apart.
		time.Sleep(50 * time.Millisecond)
		shuffle := taskexecutor.NewShuffle(taskexecutor.ShuffleConfig{})
		logs := map[string]func() []logtest.TimedRecord{}
		var tes []*cluster.TaskExecutorRunner
		for _, id := range []string{"te-a", "te-b"} {
			log, records := logtest.NewTimedRecorder(slog.LevelInfo)
			logs[id] = records
			te, err := cluster.RunTaskExecutor(ctx, taskExecutor(id, svc, shuffle, teClient, log))
			require.NoError(t, err)
			defer te.Close()
			tes = append(tes, te)
		}
		rm1 := jm1.ResourceManager().ResourceManagerID()
		for _, te := range tes {
			id, err := te.TaskExecutor().WaitRegistered(ctx)
			require.NoError(t, err)
			require.Equal(t, rm1, id)
		}
		assert.True(t, jm2.ResourceManager().ResourceManagerID().IsZero(), "the standby's ResourceManager has no session")

		time.Sleep(70 * time.Millisecond) // to 120ms: between two of the retrievals' polls
		require.NoError(t, jm1.Close())
		closedAt := time.Now()
		require.NoError(t, jm2.AwaitLeadership(ctx))
		assert.Equal(t, 80*time.Millisecond, time.Since(closedAt), "the second client took the lock at its next poll (200ms)")
		// AwaitLeadership waits for the Dispatcher's grant only: the ResourceManager, a contender
		// of its own, applies the same instant's grant on its own loop, which under load ran after
		// the read below (1 run in ~100). Let that instant settle.
		synctest.Wait()
		rm2 := jm2.ResourceManager().ResourceManagerID()
		require.False(t, rm2.IsZero())
		require.NotEqual(t, rm1, rm2)
		time.Sleep(time.Second) // virtual time, past the retrievals' next polls
		synctest.Wait()
		for _, te := range tes {
			id, err := te.TaskExecutor().WaitRegistered(ctx)
			require.NoError(t, err)
			require.Equal(t, rm2, id)
		}
		for id, records := range logs {
			assert.Equal(t, []string{
				// registered at 50ms, 70ms before the first JobManager closed
				"-70ms new ResourceManager leader address=resourcemanager-1 resourceManagerID=" + rm1.String(),
				"-70ms registered with the ResourceManager address=resourcemanager-1 resourceManagerID=" + rm1.String(),
				// 150ms: no one holds the lock; 250ms: the second leader's file, written at 200ms
				"30ms new ResourceManager leader address= resourceManagerID=" + jobgraph.ResourceManagerID{}.String(),
				"130ms new ResourceManager leader address=resourcemanager-2 resourceManagerID=" + rm2.String(),
				"130ms registered with the ResourceManager address=resourcemanager-2 resourceManagerID=" + rm2.String(),
			}, registrationLog(records(), closedAt), "the log of %s", id)
		}

		g := wordCount()
		d := jm2.LeaderDispatcher()
		require.NoError(t, d.SubmitJob(ctx, g))
		res, err := d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		assert.Equal(t, wantCounts, counts(t, res))
	})
}
