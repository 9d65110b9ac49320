package minicluster_test

// The blocklist (issue 15; Flink's BlocklistHandler, FLIP-224): TaskExecutors blocked through
// the Dispatcher's API, or by the task-failure rule, get no new slot requests until their block
// ends, at its end instant exactly.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/resourcemanager"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// locations returns "<vertex>_<subtask>#<attempt> <state> on <TaskExecutor>" for every subtask
// of the job, sorted.
func locations(t *testing.T, mc *minicluster.MiniCluster, id jobgraph.JobID) []string {
	t.Helper()
	archived, err := mc.RequestJob(context.Background(), id)
	require.NoError(t, err)
	var out []string
	for _, jv := range archived.JobVertices {
		for i, st := range jv.Subtasks {
			out = append(out, fmt.Sprintf("%s_%d#%d %s on %s", jv.Name, i, st.AttemptNumber, st.State, st.Location))
		}
	}
	slices.Sort(out)
	return out
}

// Scenario (MARK_BLOCKED): two TaskExecutors of two slots; taskexecutor-0 is blocked for 60 s at
// 0 s. Job 1 (two subtasks) gets both its slots from taskexecutor-1. Job 2, submitted at 30 s,
// finds taskexecutor-1 full and taskexecutor-0 blocked and waits; at 60 s exactly the block ends
// and taskexecutor-0 gets job 2's slot requests.
func TestBlocklistBlockedTaskExecutorGetsNoSlotRequestsUntilTheBlockEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		release := make(chan struct{})
		tasks := &taskLog{begin: begin}
		reg := registry()
		reg.Register("run", runsUntil(release, tasks))
		requests := &slotRequestLog{Service: rpc.NewLocalService(), begin: begin, limit: 100}
		mc := start(t, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 2, Registry: reg, RPC: requests,
			ResourceBlocklistEnabled: true})

		node, err := mc.BlockTaskExecutor(ctx, dispatcher.BlockRequest{TaskExecutor: "taskexecutor-0", Duration: time.Minute, Cause: "maintenance"})
		require.NoError(t, err)
		assert.Equal(t, rpc.BlockedNode{NodeID: "taskexecutor-0", Cause: "maintenance", EndTimestamp: begin.Add(time.Minute), Action: rpc.BlockActionMarkBlocked}, node)
		blocked, err := mc.BlockedTaskExecutors(ctx)
		require.NoError(t, err)
		assert.Equal(t, []rpc.BlockedNode{node}, blocked)

		job := func(name string) *jobgraph.JobGraph {
			g := jobgraph.New(name, jobgraph.Streaming)
			g.AddVertex(name, "run", 2)
			return g
		}
		g1 := job("one")
		require.NoError(t, mc.SubmitJob(ctx, g1))
		synctest.Wait()
		assert.Equal(t, []string{"one_0#0 RUNNING on taskexecutor-1", "one_1#0 RUNNING on taskexecutor-1"}, locations(t, mc, g1.JobID))

		at(begin, 30*time.Second)
		g2 := job("two")
		require.NoError(t, mc.SubmitJob(ctx, g2))
		at(begin, time.Minute-time.Nanosecond)
		assert.Equal(t, []string{"two_0#0 SCHEDULED on ", "two_1#0 SCHEDULED on "}, locations(t, mc, g2.JobID), "waiting for slots")
		assert.Equal(t, []string{"taskexecutor-1 at 0s", "taskexecutor-1 at 0s"}, requests.get(), "none to the blocked TaskExecutor")
		at(begin, time.Minute)
		assert.Equal(t, []string{"taskexecutor-1 at 0s", "taskexecutor-1 at 0s", "taskexecutor-0 at 1m0s", "taskexecutor-0 at 1m0s"}, requests.get())
		assert.Equal(t, []string{"two_0#0 RUNNING on taskexecutor-0", "two_1#0 RUNNING on taskexecutor-0"}, locations(t, mc, g2.JobID))
		blocked, err = mc.BlockedTaskExecutors(ctx)
		require.NoError(t, err)
		assert.Empty(t, blocked, "the block ended")

		close(release)
		for _, g := range []*jobgraph.JobGraph{g1, g2} {
			res, err := mc.RequestJobResult(ctx, g.JobID)
			require.NoError(t, err)
			assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
			assert.Empty(t, res.ExceptionHistory, "MARK_BLOCKED left the running tasks alone")
		}
		allSlotsFree(t, mc)
	})
}

// Scenario (MARK_BLOCKED_AND_EVACUATE_TASKS): a –PIPELINED→ b (one region, one shared slot) runs
// on taskexecutor-0; at 5 s taskexecutor-0 is blocked with evacuation. Its slot is released, both
// tasks fail with jobmaster.ErrTaskExecutorBlocked in one restart (fixed-delay 1 s), and the
// region runs again at 6 s on taskexecutor-1.
func TestBlocklistEvacuationRestartsTheTasksElsewhereWithOneRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		release := make(chan struct{})
		tasks := &taskLog{begin: begin}
		reg := registry()
		reg.Register("run", runsUntil(release, tasks))
		requests := &slotRequestLog{Service: rpc.NewLocalService(), begin: begin, limit: 100}
		mc := start(t, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 2, Registry: reg, RPC: requests,
			ResourceBlocklistEnabled: true, BlocklistAction: rpc.BlockActionMarkBlockedAndEvacuateTasks})

		g := jobgraph.New("evacuate", jobgraph.Streaming)
		a := g.AddVertex("a", "run", 1)
		b := g.AddVertex("b", "run", 1)
		g.Connect(a, b, jobgraph.Pointwise, jobgraph.Pipelined)
		g.RestartStrategy = jobgraph.FixedDelayRestart(3, time.Second)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		assert.Equal(t, []string{"a_0#0 RUNNING on taskexecutor-0", "b_0#0 RUNNING on taskexecutor-0"}, locations(t, mc, g.JobID))

		at(begin, 5*time.Second)
		node, err := mc.BlockTaskExecutor(ctx, dispatcher.BlockRequest{TaskExecutor: "taskexecutor-0", Duration: time.Minute})
		require.NoError(t, err)
		assert.Equal(t, rpc.BlockActionMarkBlockedAndEvacuateTasks, node.Action, "the configured cluster.resource-blocklist.action")
		synctest.Wait()
		assert.Equal(t, []string{"a_0#0 canceled at 5s", "b_0#0 canceled at 5s"}, sortedCopy(tasks.get()), "evacuated at once")
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID))
		at(begin, 6*time.Second)
		assert.Equal(t, []string{"a_0#1 RUNNING on taskexecutor-1", "b_0#1 RUNNING on taskexecutor-1"}, locations(t, mc, g.JobID))
		assert.Equal(t, []string{"taskexecutor-0 at 0s", "taskexecutor-1 at 6s"}, requests.get())

		close(release)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		require.Len(t, res.ExceptionHistory, 1, "one restart")
		e := res.ExceptionHistory[0]
		lost := func(task string) string {
			return `^task ` + task + ` \(1/1\) \(attempt 0\) lost its slot [0-9a-f]{32} on taskexecutor-0: TaskExecutor is blocked: taskexecutor-0 \(blocked through the Dispatcher\)$`
		}
		assert.Regexp(t, lost("a"), e.Message)
		assert.Equal(t, 5*time.Second, e.Timestamp.Sub(begin))
		require.Len(t, e.Concurrent, 1, "the other task of the region")
		assert.Regexp(t, lost("b"), e.Concurrent[0].Message)
		allSlotsFree(t, mc)
	})
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// Scenario (the task-failure rule, ours: cluster.resource-blocklist.task-failure.*): with 2
// failures per 1 min and an item timeout of 30 s, v fails on attempts 0 and 1 (1 s after each
// start) on taskexecutor-0; the second failure, at 3 s, blocks taskexecutor-0 until 33 s, so
// attempt 2 gets its slot from taskexecutor-1 at 4 s, and the block ends at 33 s exactly.
func TestBlocklistTaskFailureRuleBlocksTheTaskExecutor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		release := make(chan struct{})
		tasks := &taskLog{begin: begin}
		reg := registry()
		reg.Register("flaky", func(ctx context.Context, env taskexecutor.Environment) error {
			if env.Info().AttemptNumber >= 2 {
				return runsUntil(release, tasks)(ctx, env)
			}
			select {
			case <-time.After(time.Second):
				return errBoom
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		requests := &slotRequestLog{Service: rpc.NewLocalService(), begin: begin, limit: 100}
		mc := start(t, minicluster.Config{TaskExecutors: 2, Registry: reg, RPC: requests,
			ResourceBlocklistEnabled: true, BlocklistItemTimeout: 30 * time.Second, BlocklistMaxTaskFailuresPerInterval: 2})

		g := jobgraph.New("flaky", jobgraph.Streaming)
		g.AddVertex("v", "flaky", 1)
		g.RestartStrategy = jobgraph.FixedDelayRestart(5, time.Second)
		require.NoError(t, mc.SubmitJob(ctx, g))

		at(begin, 3*time.Second-time.Nanosecond)
		blocked, err := mc.BlockedTaskExecutors(ctx)
		require.NoError(t, err)
		assert.Empty(t, blocked, "one failure so far")
		at(begin, 3*time.Second)
		blocked, err = mc.BlockedTaskExecutors(ctx)
		require.NoError(t, err)
		require.Len(t, blocked, 1)
		assert.Equal(t, rpc.BlockedNode{NodeID: "taskexecutor-0", EndTimestamp: begin.Add(33 * time.Second), Action: rpc.BlockActionMarkBlocked,
			Cause: fmt.Sprintf("2 task failures of job %s within 1m0s (cluster.resource-blocklist.task-failure.max-failures-per-interval)", g.JobID)}, blocked[0])
		at(begin, 4*time.Second)
		assert.Equal(t, []string{"v_0#2 RUNNING on taskexecutor-1"}, locations(t, mc, g.JobID))
		at(begin, 33*time.Second-time.Nanosecond)
		blocked, err = mc.BlockedTaskExecutors(ctx)
		require.NoError(t, err)
		assert.Len(t, blocked, 1)
		at(begin, 33*time.Second)
		blocked, err = mc.BlockedTaskExecutors(ctx)
		require.NoError(t, err)
		assert.Empty(t, blocked)
		assert.Equal(t, []string{"taskexecutor-0 at 0s", "taskexecutor-1 at 4s"}, requests.get(), "attempts 0 and 1 shared one slot")

		close(release)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		assert.Len(t, res.ExceptionHistory, 2)
		_ = jobmaster.ErrTaskExecutorBlocked
	})
}

// Without cluster.resource-blocklist.enabled, and for a bad request, BlockTaskExecutor blocks nothing.
func TestBlocklistRequestErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		off := start(t, minicluster.Config{})
		_, err := off.BlockTaskExecutor(ctx, dispatcher.BlockRequest{TaskExecutor: "taskexecutor-0"})
		require.ErrorIs(t, err, dispatcher.ErrBlocklistDisabled)

		on := start(t, minicluster.Config{ResourceBlocklistEnabled: true})
		for _, req := range []dispatcher.BlockRequest{
			{},
			{TaskExecutor: "taskexecutor-0", Duration: -time.Second},
			{TaskExecutor: "taskexecutor-0", Action: "EVICT"},
		} {
			_, err := on.BlockTaskExecutor(ctx, req)
			require.ErrorIs(t, err, dispatcher.ErrInvalidBlockRequest, "%+v", req)
		}
		blocked, err := on.BlockedTaskExecutors(ctx)
		require.NoError(t, err)
		assert.Empty(t, blocked)
		node, err := on.BlockTaskExecutor(ctx, dispatcher.BlockRequest{TaskExecutor: "taskexecutor-0"})
		require.NoError(t, err)
		assert.Equal(t, time.Hour, time.Until(node.EndTimestamp), "cluster.resource-blocklist.item.timeout's default")
	})
}

// The ResourceManager refuses a bad entry, adding none of the call's, and a JobMaster's
// notification of another leader session.
func TestBlocklistResourceManagerRefusesBadEntriesAndStaleNotifications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mc := start(t, minicluster.Config{ResourceBlocklistEnabled: true})
		rm := mc.ResourceManager()
		later := time.Now().Add(time.Minute)
		good := rpc.BlockedNode{NodeID: "taskexecutor-0", EndTimestamp: later}
		for _, bad := range []rpc.BlockedNode{
			{EndTimestamp: later},
			{NodeID: "taskexecutor-1", EndTimestamp: later, Action: "EVICT"},
			{NodeID: "taskexecutor-1", EndTimestamp: time.Now()},
		} {
			err := rm.AddNewBlockedNodes(ctx, []rpc.BlockedNode{good, bad})
			require.ErrorIs(t, err, resourcemanager.ErrInvalidBlockedNode, "%+v", bad)
		}
		err := rm.NotifyNewBlockedNodes(ctx, jobgraph.ResourceManagerID{1}, []rpc.BlockedNode{good})
		require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
		blocked, err := mc.BlockedTaskExecutors(ctx)
		require.NoError(t, err)
		assert.Empty(t, blocked, "nothing was added")
		require.NoError(t, rm.NotifyNewBlockedNodes(ctx, rm.ResourceManagerID(), []rpc.BlockedNode{good}))
		blocked, err = mc.BlockedTaskExecutors(ctx)
		require.NoError(t, err)
		assert.Equal(t, []rpc.BlockedNode{{NodeID: "taskexecutor-0", EndTimestamp: later, Action: rpc.BlockActionMarkBlocked}}, blocked)
	})
}

// Scenario (MARK_BLOCKED, a slot in use): v runs on taskexecutor-0, which is blocked at 5 s; v
// keeps running there until it fails at 12 s. Its slot, given back then, leaves the job's pool
// instead of becoming free (Flink's BlocklistDeclarativeSlotPool), so the restart at 13 s runs
// on taskexecutor-1. (Not at 10 s: a ResourceManager heartbeat's slot report taken at that
// instant, just before the slot was freed, may restore it to the job there for one interval —
// the stale-report window ARCHITECTURE.md describes — and the restart would wait until 20 s.)
func TestBlocklistSlotInUseOnABlockedTaskExecutorIsNotReused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		release := make(chan struct{})
		tasks := &taskLog{begin: begin}
		reg := registry()
		reg.Register("fail-at-12s", func(ctx context.Context, env taskexecutor.Environment) error {
			if env.Info().AttemptNumber > 0 {
				return runsUntil(release, tasks)(ctx, env)
			}
			select {
			case <-time.After(12 * time.Second):
				tasks.add(env, "failed")
				return errBoom
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		mc := start(t, minicluster.Config{TaskExecutors: 2, Registry: reg, ResourceBlocklistEnabled: true})
		g := jobgraph.New("in-use", jobgraph.Streaming)
		g.AddVertex("v", "fail-at-12s", 1)
		g.RestartStrategy = jobgraph.FixedDelayRestart(3, time.Second)
		require.NoError(t, mc.SubmitJob(ctx, g))
		at(begin, 5*time.Second)
		_, err := mc.BlockTaskExecutor(ctx, dispatcher.BlockRequest{TaskExecutor: "taskexecutor-0", Duration: time.Minute})
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, []string{"v_0#0 RUNNING on taskexecutor-0"}, locations(t, mc, g.JobID), "MARK_BLOCKED: it keeps running")
		at(begin, 13*time.Second)
		assert.Equal(t, []string{"v_0#0 failed at 12s"}, tasks.get())
		assert.Equal(t, []string{"v_0#1 RUNNING on taskexecutor-1"}, locations(t, mc, g.JobID))
		close(release)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		allSlotsFree(t, mc)
	})
}
