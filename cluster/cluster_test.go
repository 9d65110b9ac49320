package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/internal/logtest"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// A JobManager and two TaskExecutors, each started by its role's one call on one rpc.Service and
// one HA backend, run the word count to FINISHED with its exact counts, one subtask of each
// vertex on each TaskExecutor; when their context ends, all three close and Wait says nil.
func TestJobManagerAndTwoTaskExecutorsRunAJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := rpc.NewLocalService()
		defer svc.Close()
		services := embedded.New()
		defer services.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: services})
		require.NoError(t, err)
		shuffle := taskexecutor.NewShuffle(taskexecutor.ShuffleConfig{})
		var tes []*cluster.TaskExecutorRunner
		for _, id := range []string{"te-a", "te-b"} {
			te, err := cluster.RunTaskExecutor(ctx, taskExecutor(id, svc, shuffle, services, nil))
			require.NoError(t, err)
			tes = append(tes, te)
		}
		for _, te := range tes {
			id, err := te.TaskExecutor().WaitRegistered(ctx)
			require.NoError(t, err)
			assert.Equal(t, jm.ResourceManager().ResourceManagerID(), id)
		}
		require.NoError(t, jm.AwaitLeadership(ctx))

		d := jm.LeaderDispatcher()
		g := wordCount()
		require.NoError(t, d.SubmitJob(ctx, g))
		res, err := d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		assert.Equal(t, wantCounts, counts(t, res))
		archive, err := d.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		for _, v := range archive.JobVertices {
			var where []jobgraph.ResourceID
			for _, s := range v.Subtasks {
				where = append(where, s.Location)
			}
			slices.Sort(where)
			assert.Equal(t, []jobgraph.ResourceID{"te-a", "te-b"}, where, "the subtasks of %s", v.Name)
		}

		cancel()
		require.NoError(t, jm.Wait())
		for _, te := range tes {
			require.NoError(t, te.Wait())
		}
		_, err = svc.Lookup(context.Background(), cluster.DefaultResourceManagerAddress)
		assert.ErrorIs(t, err, rpc.ErrUnknownAddress, "the closed ResourceManager left the Service")
	})
}

// registrationLog returns a TaskExecutor's log of its ResourceManager leaders and registrations:
// "<instant since begin> <message> address=… resourceManagerID=…", in order.
func registrationLog(records []logtest.TimedRecord, begin time.Time) []string {
	var out []string
	for _, r := range records {
		if r.Msg != "new ResourceManager leader" && r.Msg != "registered with the ResourceManager" {
			continue
		}
		line := fmt.Sprintf("%v %s", r.Time.Sub(begin), r.Msg)
		for _, a := range r.Attrs {
			if strings.HasPrefix(a, "address=") || strings.HasPrefix(a, "resourceManagerID=") {
				line += " " + a
			}
		}
		out = append(out, line)
	}
	return out
}

// A TaskExecutor started before any JobManager does not register (a virtual minute passes) and
// registers once a JobManager's ResourceManager leads (at once: the leader's address is its first
// news), exactly once, with that ResourceManager.
func TestTaskExecutorStartedBeforeTheJobManagerRegistersOnceItAppears(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := rpc.NewLocalService()
		defer svc.Close()
		services := embedded.New()
		defer services.Close()
		ctx := context.Background()
		begin := time.Now()
		log, records := logtest.NewTimedRecorder(slog.LevelInfo)
		te, err := cluster.RunTaskExecutor(ctx, taskExecutor("te", svc, nil, services, log))
		require.NoError(t, err)
		defer te.Close()

		early, cancel := context.WithTimeout(ctx, time.Minute)
		_, err = te.TaskExecutor().WaitRegistered(early)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "no ResourceManager to register with yet")

		jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: services})
		require.NoError(t, err)
		defer jm.Close()
		id, err := te.TaskExecutor().WaitRegistered(ctx)
		require.NoError(t, err)
		assert.Equal(t, jm.ResourceManager().ResourceManagerID(), id)
		synctest.Wait()
		assert.Equal(t, []string{
			"1m0s new ResourceManager leader address=resourcemanager resourceManagerID=" + id.String(),
			"1m0s registered with the ResourceManager address=resourcemanager resourceManagerID=" + id.String(),
		}, registrationLog(records(), begin))
	})
}

// A TaskExecutor given the ResourceManager's fixed address (no HA services shared with the
// JobManager) before the JobManager runs retries every cluster.registration.error-delay (10 s),
// registers at the first attempt after the JobManager appeared (70 s for a JobManager started at
// 65 s), and its slots then serve a job: the ResourceManager's requests pass the fence of the ID
// the registration answered.
func TestTaskExecutorAtAFixedAddressRegistersOnceTheJobManagerAppears(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := rpc.NewLocalService()
		defer svc.Close()
		ctx := context.Background()
		begin := time.Now()
		shuffle := taskexecutor.NewShuffle(taskexecutor.ShuffleConfig{})
		var tes []*cluster.TaskExecutorRunner
		for _, id := range []string{"te-a", "te-b"} {
			cfg := taskExecutor(id, svc, shuffle, nil, nil)
			cfg.ResourceManagerAddress = cluster.DefaultResourceManagerAddress
			te, err := cluster.RunTaskExecutor(ctx, cfg)
			require.NoError(t, err)
			defer te.Close()
			tes = append(tes, te)
		}
		time.Sleep(65 * time.Second)
		jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc}) // its own ha/embedded
		require.NoError(t, err)
		defer jm.Close()
		for _, te := range tes {
			id, err := te.TaskExecutor().WaitRegistered(ctx)
			require.NoError(t, err)
			assert.Equal(t, jm.ResourceManager().ResourceManagerID(), id)
		}
		assert.Equal(t, 70*time.Second, time.Since(begin))

		require.NoError(t, jm.AwaitLeadership(ctx))
		g := wordCount()
		require.NoError(t, jm.LeaderDispatcher().SubmitJob(ctx, g))
		res, err := jm.LeaderDispatcher().RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		assert.Equal(t, wantCounts, counts(t, res))
	})
}

// RunTaskExecutor refuses a configuration that does not say how to find the ResourceManager, or
// says it twice, with a *cluster.ConfigError naming the fields; nothing is registered.
func TestRunTaskExecutorRefusesAnUnclearResourceManager(t *testing.T) {
	svc := rpc.NewLocalService()
	defer svc.Close()
	services := embedded.New()
	defer services.Close()
	for _, c := range []struct {
		name string
		cfg  cluster.TaskExecutorConfig
		want string
	}{
		{"neither", cluster.TaskExecutorConfig{TaskExecutor: taskexecutor.Config{RPC: svc, ResourceID: "te"}},
			"cluster: invalid configuration: neither HA nor ResourceManagerAddress (jobmanager.rpc.address) is set: the TaskExecutor could not find the ResourceManager"},
		{"both", cluster.TaskExecutorConfig{TaskExecutor: taskexecutor.Config{RPC: svc, ResourceID: "te"}, HA: services, ResourceManagerAddress: "rm"},
			"cluster: invalid configuration: set HA or ResourceManagerAddress (jobmanager.rpc.address), not both"},
		{"inner address", cluster.TaskExecutorConfig{TaskExecutor: taskexecutor.Config{RPC: svc, ResourceID: "te", ResourceManagerAddress: "rm"}, HA: services},
			"cluster: invalid configuration: TaskExecutor.ResourceManagerAddress and TaskExecutor.ResourceManagerRetrieval must be empty: set TaskExecutorConfig.HA or TaskExecutorConfig.ResourceManagerAddress"},
	} {
		t.Run(c.name, func(t *testing.T) {
			te, err := cluster.RunTaskExecutor(context.Background(), c.cfg)
			require.ErrorIs(t, err, cluster.ErrInvalidConfig)
			assert.EqualError(t, err, c.want)
			assert.Nil(t, te)
			_, err = svc.Lookup(context.Background(), "te")
			assert.ErrorIs(t, err, rpc.ErrUnknownAddress)
		})
	}
}
