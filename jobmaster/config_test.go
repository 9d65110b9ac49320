package jobmaster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
)

// Config.Validate (and so NewFactory) refuses what would fail every job, naming the option key.
func TestConfigValidate(t *testing.T) {
	svc := rpc.NewLocalService()
	ok := jobmaster.Config{RPC: svc, ResourceManagerAddress: "rm"}
	require.NoError(t, ok.Validate())
	retrieved := jobmaster.Config{RPC: svc, ResourceManagerRetrieval: func() ha.LeaderRetrieval { return nil }}
	require.NoError(t, retrieved.Validate(), "a leader retrieval instead of the address")
	with := func(f func(*jobmaster.Config)) jobmaster.Config { c := ok; f(&c); return c }
	for _, tc := range []struct {
		name string
		cfg  jobmaster.Config
		want string
	}{
		{"no RPC", with(func(c *jobmaster.Config) { c.RPC = nil }), "jobmaster: invalid configuration: Config.RPC is required"},
		{"no ResourceManager", with(func(c *jobmaster.Config) { c.ResourceManagerAddress = "" }), "jobmaster: invalid configuration: Config.ResourceManagerAddress (or Config.ResourceManagerRetrieval) is required"},
		{"ResourceManager address and retrieval", with(func(c *jobmaster.Config) {
			c.ResourceManagerRetrieval = func() ha.LeaderRetrieval { return nil }
		}), "jobmaster: invalid configuration: set Config.ResourceManagerAddress or Config.ResourceManagerRetrieval, not both"},
		{"negative slot.request.timeout", with(func(c *jobmaster.Config) { c.SlotRequestTimeout = -time.Second }),
			"jobmaster: invalid configuration: SlotRequestTimeout (slot.request.timeout) is -1s, negative"},
		{"negative slot.idle.timeout", with(func(c *jobmaster.Config) { c.IdleSlotTimeout = -time.Second }),
			"jobmaster: invalid configuration: IdleSlotTimeout (slot.idle.timeout) is -1s, negative"},
		{"negative pekko.ask.timeout", with(func(c *jobmaster.Config) { c.RPCTimeout = -time.Second }),
			"jobmaster: invalid configuration: RPCTimeout (pekko.ask.timeout) is -1s, negative"},
		{"negative web.exception-history-size", with(func(c *jobmaster.Config) { c.ExceptionHistorySize = -1 }),
			"jobmaster: invalid configuration: ExceptionHistorySize (web.exception-history-size) is -1, negative"},
		{"bogus strategy", with(func(c *jobmaster.Config) { c.SchedulingStrategy = "bogus" }),
			`jobmaster: invalid configuration: SchedulingStrategy (jobmanager.scheduler.scheduling-strategy) "bogus": unknown scheduling strategy; want "region" or "vertexwise"`},
		{"heartbeat.timeout below heartbeat.interval", with(func(c *jobmaster.Config) { c.HeartbeatInterval, c.HeartbeatTimeout = time.Minute, time.Second }),
			"jobmaster: invalid configuration: heartbeat: heartbeat.timeout 1s is shorter than heartbeat.interval 1m0s"},
		{"heartbeat.rpc-failure-threshold below -1", with(func(c *jobmaster.Config) { c.HeartbeatRPCFailureThreshold = -2 }),
			"jobmaster: invalid configuration: heartbeat: heartbeat.rpc-failure-threshold -2: want a positive number of failed heartbeat RPCs, or -1 to turn the detection off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			require.ErrorIs(t, err, jobmaster.ErrInvalidConfig)
			assert.EqualError(t, err, tc.want)
			g := jobgraph.New("j", jobgraph.Batch)
			g.AddVertex("v", "noop", 1)
			f, ferr := jobmaster.NewFactory(g, tc.cfg)
			assert.Nil(t, f)
			assert.Equal(t, err, ferr, "NewFactory gives Validate's error")
		})
	}
	assert.ErrorIs(t, with(func(c *jobmaster.Config) { c.SchedulingStrategy = "bogus" }).Validate(), scheduler.ErrUnknownStrategy)
}
