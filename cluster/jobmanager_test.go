package cluster_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/internal/logtest"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
)

// NewJobManager refuses bad values with a *cluster.ConfigError naming the field and Flink's
// option key, matching cluster.ErrInvalidConfig (and the refusing package's sentinel); nothing
// is registered on the Service.
func TestNewJobManagerRefusesBadConfiguration(t *testing.T) {
	svc := rpc.NewLocalService()
	defer svc.Close()
	for _, c := range []struct {
		name string
		cfg  cluster.JobManagerConfig
		want string
	}{
		{"slot request timeout", cluster.JobManagerConfig{SlotRequestTimeout: -time.Second}, "cluster: invalid configuration: SlotRequestTimeout (slot.request.timeout) is -1s, negative"},
		{"strategy", cluster.JobManagerConfig{SchedulingStrategy: "bogus"}, `cluster: invalid configuration: SchedulingStrategy (jobmanager.scheduler.scheduling-strategy) "bogus": unknown scheduling strategy; want "region" or "vertexwise"`},
		{"heartbeat", cluster.JobManagerConfig{HeartbeatInterval: time.Minute}, "cluster: invalid configuration: heartbeat: heartbeat.timeout 50s is shorter than heartbeat.interval 1m0s"},
		{"heartbeat.rpc-failure-threshold", cluster.JobManagerConfig{HeartbeatRPCFailureThreshold: -2}, "cluster: invalid configuration: HeartbeatRPCFailureThreshold (heartbeat.rpc-failure-threshold) is -2; want a positive number of failed heartbeat RPCs, or -1 to turn the detection off"},
		{"addresses", cluster.JobManagerConfig{ResourceManagerAddress: "jm", DispatcherAddress: "jm"}, `cluster: invalid configuration: ResourceManagerAddress and DispatcherAddress are both "jm"`},
		{"blocklist rule", cluster.JobManagerConfig{BlocklistMaxTaskFailuresPerInterval: 2}, "cluster: invalid configuration: BlocklistMaxTaskFailuresPerInterval (cluster.resource-blocklist.task-failure.max-failures-per-interval) needs ResourceBlocklistEnabled (cluster.resource-blocklist.enabled)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.RPC = svc
			jm, err := cluster.NewJobManager(c.cfg)
			require.ErrorIs(t, err, cluster.ErrInvalidConfig)
			var ce *cluster.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.EqualError(t, err, c.want)
			assert.Nil(t, jm)
			_, err = svc.Lookup(context.Background(), cluster.DefaultResourceManagerAddress)
			assert.ErrorIs(t, err, rpc.ErrUnknownAddress)
		})
	}
	_, err := cluster.NewJobManager(cluster.JobManagerConfig{SchedulingStrategy: "bogus"})
	assert.ErrorIs(t, err, scheduler.ErrUnknownStrategy)
}

// rmElectionHA hands the ResourceManager's contender to the test, which makes its election fail.
type rmElectionHA struct {
	*embedded.Services
	contender chan ha.LeaderContender
}

func (h rmElectionHA) ResourceManagerLeaderElection() ha.LeaderElection {
	return rmElection{h.Services.ResourceManagerLeaderElection(), h.contender}
}

type rmElection struct {
	ha.LeaderElection
	contender chan ha.LeaderContender
}

func (e rmElection) Start(c ha.LeaderContender) error {
	e.contender <- c
	return e.LeaderElection.Start(c)
}

// A fatal error (the ResourceManager's leader election fails) with no FatalErrorHandler is
// logged once at ERROR and closes the JobManager, as Flink's ClusterEntrypoint ends its process:
// Wait returns an error wrapping it, FatalError returns it, Close returns nil (closing worked).
func TestFatalErrorClosesTheJobManagerAndWaitReturnsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		h := rmElectionHA{services, make(chan ha.LeaderContender, 1)}
		log, records := logtest.NewRecorder(slog.LevelError)
		jm, err := cluster.RunJobManager(context.Background(), cluster.JobManagerConfig{HA: h, Logger: log})
		require.NoError(t, err)
		errLease := errors.New("lease lost")
		(<-h.contender).HandleError(errLease)
		<-jm.Done()
		err = jm.Wait()
		require.ErrorIs(t, err, errLease)
		assert.EqualError(t, err, "cluster: fatal error: resourcemanager: the ResourceManager's leader election failed: lease lost")
		assert.ErrorIs(t, jm.FatalError(), errLease)
		assert.NoError(t, jm.Close())
		assert.Len(t, logtest.WithMessage(records(), "fatal error: the JobManager closes"), 1)
		_, err = jm.SlotPoolStatus(context.Background(), jobgraph.NewJobID())
		assert.ErrorIs(t, err, cluster.ErrClosed)
	})
}
