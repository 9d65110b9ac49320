package minicluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rpc"
)

// slotRequestLog is an rpc.Service that hands out every TaskExecutor's gateway wrapped so that
// each RequestSlot (only the ResourceManager calls it) is recorded as "<taskexecutor> at <virtual
// time since begin>". Past limit calls it refuses them without reaching the TaskExecutor, so a
// ResourceManager that requests without end falls back to its slot request retry delay and the
// test fails on the counts instead of hanging at one virtual instant.
type slotRequestLog struct {
	rpc.Service
	begin time.Time
	limit int

	mu   sync.Mutex
	seen []string
}

var errTooManySlotRequests = errors.New("test: too many RequestSlot calls")

func (s *slotRequestLog) Lookup(ctx context.Context, address string) (any, error) {
	ep, err := s.Service.Lookup(ctx, address)
	if gw, ok := ep.(rpc.TaskExecutorGateway); ok && err == nil && strings.HasPrefix(address, "taskexecutor-") {
		return &countingTaskExecutor{TaskExecutorGateway: gw, address: address, log: s}, nil
	}
	return ep, err
}

func (s *slotRequestLog) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

type countingTaskExecutor struct {
	rpc.TaskExecutorGateway
	address string
	log     *slotRequestLog
}

func (c *countingTaskExecutor) RequestSlot(ctx context.Context, slot rpc.SlotID, job jobgraph.JobID, allocation jobgraph.AllocationID, profile jobgraph.ResourceProfile, jobMasterAddress string, jobMaster jobgraph.JobMasterID, rm jobgraph.ResourceManagerID) error {
	c.log.mu.Lock()
	c.log.seen = append(c.log.seen, fmt.Sprintf("%s at %s", c.address, time.Since(c.log.begin)))
	over := len(c.log.seen) > c.log.limit
	c.log.mu.Unlock()
	if over {
		return errTooManySlotRequests
	}
	return c.TaskExecutorGateway.RequestSlot(ctx, slot, job, allocation, profile, jobMasterAddress, jobMaster, rm)
}

// Scenario (the livelock found under synctest): taskexecutor-0 runs the job's only task and is
// killed at 2.7 s; taskexecutor-1 is free. The ResourceManager last heard from taskexecutor-0 at
// 2.3 s (a heartbeat of its own) and loses it at 7.3 s (timeout 5 s); the JobMaster heartbeats
// it since it offered its slot at 520 ms and loses it only at 7.52 s (last answer at 2.52 s). In
// between, the ResourceManager asks taskexecutor-1 for a slot for the job, the JobMaster (still
// counting taskexecutor-0's slot) declines the offer, taskexecutor-1 frees the slot and tells
// the ResourceManager, which asks for it again. Matching at once every time made that a loop at
// one virtual instant (~67,000 rounds, the clock never moved); with
// slotmanager.requirement-check.delay the job, having just lost the slot it was sent, waits one
// delay between rounds: with 50 ms the ResourceManager asks at 7.3 s (at once: the job's last
// request was at 520 ms), 7.35 s, …, 7.5 s (5 declined offers). At 7.52 s the JobMaster loses
// taskexecutor-0, the task fails and the job no longer asks for a slot, so the release at
// 7.55 s requests nothing. The fixed-delay restart asks for a slot again at 8.52 s and gets it at
// once (nothing was requested for the job for a second): the task is deployed on taskexecutor-1
// at 8.52 s. Config.RequirementCheckDelay reaches the ResourceManager: with 200 ms the rounds are
// at 7.3 s and 7.5 s. (The ResourceManager's own heartbeats run at whole seconds; the timeout at
// 7.3 s keeps the first round off them, where taskexecutor-1's answer would race the offer. So
// heartbeat.rpc-failure-threshold is -1: with it the ResourceManager would lose taskexecutor-0
// at its second failed request, at 4 s, on a whole second.)
func TestTaskExecutorLossWithAFreeTaskExecutorRequestsSlotsOncePerRequirementCheckDelay(t *testing.T) {
	for _, tc := range []struct {
		name       string
		configured time.Duration
		rounds     []string
	}{
		{"default", 0, []string{"7.3s", "7.35s", "7.4s", "7.45s", "7.5s"}},
		{"configured", 200 * time.Millisecond, []string{"7.3s", "7.5s"}},
	} {
		t.Run(tc.name, func(t *testing.T) { taskExecutorLossWithAFreeTaskExecutor(t, tc.configured, tc.rounds) })
	}
}

func taskExecutorLossWithAFreeTaskExecutor(t *testing.T, configured time.Duration, rounds []string) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		requests := &slotRequestLog{Service: rpc.NewLocalService(), begin: begin, limit: 100}
		deploys := newDeployLog(begin)
		started := make(chan jobgraph.ExecutionAttemptID, 2)
		t.Cleanup(func() { _ = requests.Close() }) // after the cluster's Close, which start registers
		mc := start(t, minicluster.Config{
			TaskExecutors:     2,
			Registry:          blockingRegistry(started),
			RPC:               requests,
			HeartbeatInterval: time.Second,
			HeartbeatTimeout:  5 * time.Second,
			// Only heartbeat.timeout loses a TaskExecutor (see above).
			HeartbeatRPCFailureThreshold: -1,
			RequirementCheckDelay:        configured,
			ExecutionStateListener:       deploys.listen,
		})

		g := jobgraph.New("one-task", jobgraph.Streaming)
		g.AddVertex("v", "block", 1)
		g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
		deploys.name(g)
		at(begin, 520*time.Millisecond)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		require.Len(t, started, 1)
		<-started
		assert.Equal(t, []string{"taskexecutor-0 at 520ms"}, requests.get(), "the job's first slot is requested at once")
		assert.Equal(t, []string{"v_0#0 at 520ms"}, deploys.since(0))

		// taskexecutor-0 sends a heartbeat of its own at 2.3 s, with what it holds.
		at(begin, 2300*time.Millisecond)
		var held rpc.SlotReport
		for _, sl := range mc.ResourceManager().Slots() {
			if sl.SlotID.ResourceID == "taskexecutor-0" {
				held.Slots = append(held.Slots, rpc.SlotStatus{SlotID: sl.SlotID, ResourceProfile: sl.Profile, JobID: sl.Job, AllocationID: sl.Allocation})
			}
		}
		require.Len(t, held.Slots, 1)
		require.NoError(t, mc.ResourceManager().HeartbeatFromTaskExecutor(ctx, mc.ResourceManager().ResourceManagerID(), "taskexecutor-0", held))
		at(begin, 2700*time.Millisecond)
		mc.TaskExecutors()[0].Kill()

		at(begin, 8520*time.Millisecond-time.Nanosecond)
		want := []string{"taskexecutor-0 at 520ms"}
		for _, r := range rounds {
			want = append(want, "taskexecutor-1 at "+r)
		}
		assert.Equal(t, want, requests.get(), "one round per requirement-check delay between the two heartbeat timeouts, none after")
		assert.Empty(t, started, "no offer was accepted before the JobMaster lost taskexecutor-0")
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID))

		at(begin, 8520*time.Millisecond)
		require.Len(t, started, 1)
		assert.Equal(t, 1, (<-started).AttemptNumber)
		assert.Equal(t, append(want, "taskexecutor-1 at 8.52s"), requests.get())
		assert.Equal(t, []string{"v_0#0 at 520ms", "v_0#1 at 8.52s"}, deploys.since(0))
		archived, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, archived.Status)
		assert.Equal(t, jobgraph.ResourceID("taskexecutor-1"), archived.JobVertices[0].Subtasks[0].Location)
		require.Len(t, archived.ExceptionHistory, 1)
		assert.Contains(t, archived.ExceptionHistory[0].Message, "heartbeat of TaskExecutor taskexecutor-0 timed out after 5s")
		assert.Equal(t, 7520*time.Millisecond, archived.ExceptionHistory[0].Timestamp.Sub(begin))

		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	})
}

// The ResourceManager follows each job's leader through the cluster's HA services: when
// leadership of a running job moves to a new session, the new session's JobMaster registers
// (before its leadership is confirmed) and gets its slots, and the old session's JobMaster can no
// longer register.
func TestJobLeaderChangeRegistersTheNewJobMasterAndRefusesTheOld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		deploys := newDeployLog(begin)
		started := make(chan jobgraph.ExecutionAttemptID, 4)
		mc := start(t, minicluster.Config{
			TaskExecutors:          1,
			SlotsPerTaskExecutor:   2,
			Registry:               blockingRegistry(started),
			ExecutionStateListener: deploys.listen,
		})
		g := jobgraph.New("leader-change", jobgraph.Streaming)
		g.AddVertex("v", "block", 1)
		deploys.name(g)
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		require.Len(t, started, 1)
		<-started
		old, ok := mc.ResourceManager().JobMaster(g.JobID)
		require.True(t, ok)

		election := mc.HA().(*embedded.Services).JobMasterElection(g.JobID)
		election.Revoke()
		at(begin, time.Second)
		require.Len(t, started, 1, "the new session's JobMaster deployed the job again")
		<-started
		current, ok := mc.ResourceManager().JobMaster(g.JobID)
		require.True(t, ok)
		assert.NotEqual(t, old.ID, current.ID, "the new session's JobMaster is registered")
		assert.Equal(t, jobgraph.JobStatusRunning, jobStatus(t, mc, g.JobID))

		rmGateway, err := rpc.Connect[rpc.ResourceManagerGateway](ctx, mc.RPC(), minicluster.ResourceManagerAddress)
		require.NoError(t, err)
		_, err = rmGateway.RegisterJobMaster(ctx, old.ID, old.ResourceID, old.Address, g.JobID)
		require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch, "the old session cannot take the job back")
		again, _ := mc.ResourceManager().JobMaster(g.JobID)
		assert.Equal(t, current, again)

		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	})
}
