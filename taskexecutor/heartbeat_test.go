package taskexecutor

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/heartbeat"
	"github.com/jobgraph/jobgraph/rpc"
)

// hbBeat is one heartbeat a fake JobMaster or ResourceManager received, with its virtual time.
type hbBeat struct {
	At     time.Duration
	From   jobgraph.ResourceID
	Report any // rpc.AllocatedSlotReport or rpc.SlotReport
}

// hbJobMaster is the fake JobMaster with heartbeats recorded; it refuses them once gone is set,
// and fails them as a transport does for a peer it cannot reach once unreachable is set.
type hbJobMaster struct {
	*fakeJobMaster
	start       time.Time
	hmu         sync.Mutex
	gone        bool
	unreachable bool
	beats       []hbBeat
	// hold, when set, keeps each heartbeat in flight (recorded, not answered) until it is closed.
	hold chan struct{}
}

func (f *hbJobMaster) HeartbeatFromTaskExecutor(_ context.Context, te jobgraph.ResourceID, report rpc.AllocatedSlotReport) error {
	f.hmu.Lock()
	if f.gone {
		f.hmu.Unlock()
		return errors.New("JobMaster gone")
	}
	if f.unreachable {
		f.hmu.Unlock()
		return unreachableErr{}
	}
	f.beats = append(f.beats, hbBeat{At: time.Since(f.start), From: te, Report: report})
	hold := f.hold
	f.hmu.Unlock()
	if hold != nil {
		<-hold
	}
	return nil
}

// unreachableErr is a transport's error for a peer it cannot reach (rpc.UnreachableError).
type unreachableErr struct{}

func (unreachableErr) Error() string     { return "JobMaster unreachable" }
func (unreachableErr) Unreachable() bool { return true }

func (f *hbJobMaster) take() []hbBeat {
	f.hmu.Lock()
	defer f.hmu.Unlock()
	out := f.beats
	f.beats = nil
	return out
}

// hbResourceManager is the fake ResourceManager with heartbeats recorded; once unreachable is
// set they fail as a transport's call to a peer it cannot reach.
type hbResourceManager struct {
	*fakeResourceManager
	start       time.Time
	hmu         sync.Mutex
	beats       []hbBeat
	unreachable bool
}

func (f *hbResourceManager) HeartbeatFromTaskExecutor(_ context.Context, rm jobgraph.ResourceManagerID, te jobgraph.ResourceID, report rpc.SlotReport) error {
	if rm != f.id {
		return &rpc.FencingError{Endpoint: "fake ResourceManager", Expected: f.id.String(), Got: rm.String()}
	}
	f.hmu.Lock()
	defer f.hmu.Unlock()
	if f.unreachable {
		return unreachableErr{}
	}
	f.beats = append(f.beats, hbBeat{At: time.Since(f.start), From: te, Report: report})
	return nil
}

func (f *hbResourceManager) numRegistrations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.registers)
}

// hbCluster is a cluster whose JobMasters (at "hb-jm-<n>", for job n) and ResourceManager (at
// "hb-rm") record heartbeats, with one TaskExecutor te-1 of two slots whose heartbeat.timeout is
// 5 s.
type hbCluster struct {
	*cluster
	start time.Time
	rm    *hbResourceManager
	jms   map[byte]*hbJobMaster
	te    *TaskExecutor
}

func newHBCluster(t *testing.T) *hbCluster {
	t.Helper()
	c := &hbCluster{cluster: newCluster(t), start: time.Now(), jms: map[byte]*hbJobMaster{}}
	c.rm = &hbResourceManager{fakeResourceManager: &fakeResourceManager{id: rmToken(9)}, start: c.start}
	require.NoError(t, c.svc.Register("hb-rm", c.rm))
	for n := byte(1); n <= 2; n++ {
		c.jms[n] = &hbJobMaster{fakeJobMaster: &fakeJobMaster{decline: map[jobgraph.AllocationID]bool{}}, start: c.start}
		require.NoError(t, c.svc.Register("hb-jm-"+string('0'+n), c.jms[n]))
	}
	te, err := New(Config{
		ResourceID: "te-1", NumSlots: 2, Registry: c.reg, RPC: c.svc, ResourceManagerAddress: "hb-rm",
		Shuffle: c.shuffle, Logger: discard, HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, te.Close()) })
	require.NoError(t, te.Start(ctx))
	c.te = te
	return c
}

// allocate gives slot n to job under allocation a, offered to the job's fake JobMaster.
func (c *hbCluster) allocate(job byte, n int, a jobgraph.AllocationID) {
	c.t.Helper()
	require.NoError(c.t, c.te.RequestSlot(ctx, rpc.SlotID{ResourceID: "te-1", SlotNumber: n}, jobID(job), a,
		jobgraph.ResourceProfile{CPUCores: 0.5}, "hb-jm-"+string('0'+job), jmToken(job), rmToken(9)))
	synctest.Wait()
}

func sleep(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func TestTaskExecutorAnswersAJobMasterHeartbeatToEveryJobItHoldsSlotsFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newHBCluster(t)
		c.allocate(1, 0, allocID(1))
		c.allocate(2, 1, allocID(2))

		require.NoError(t, c.te.HeartbeatFromJobMaster(ctx, "jobmaster-1"))
		synctest.Wait()
		none := &rpc.ExecutionDeploymentReport{Executions: []jobgraph.ExecutionAttemptID{}} // slots, no task
		assert.Equal(t, []hbBeat{{0, "te-1", rpc.AllocatedSlotReport{JobID: jobID(1), Slots: []jobgraph.AllocationID{allocID(1)}, ExecutionDeploymentReport: none}}}, c.jms[1].take())
		assert.Equal(t, []hbBeat{{0, "te-1", rpc.AllocatedSlotReport{JobID: jobID(2), Slots: []jobgraph.AllocationID{allocID(2)}, ExecutionDeploymentReport: none}}}, c.jms[2].take())

		// Once the job's last slot is freed, its JobMaster gets no heartbeats.
		require.NoError(t, c.te.FreeSlot(ctx, allocID(2), nil))
		synctest.Wait()
		require.NoError(t, c.te.HeartbeatFromJobMaster(ctx, "jobmaster-2"))
		synctest.Wait()
		assert.Len(t, c.jms[1].take(), 1)
		assert.Empty(t, c.jms[2].take())
	})
}

func TestSilentJobMasterIsDisconnectedAfterExactlyTheHeartbeatTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newHBCluster(t)
		c.reg.Register("wait", func(ctx context.Context, _ Environment) error { <-ctx.Done(); return ctx.Err() })
		c.allocate(1, 0, allocID(1))
		c.allocate(2, 1, allocID(2))
		d := tdd(1, 0, "wait", allocID(1))
		require.NoError(t, c.te.SubmitTask(ctx, jmToken(1), d))
		synctest.Wait()

		// Both JobMasters request heartbeats every second and take them until job 1's goes away
		// after 2 s; its last heartbeat was at 2 s, so at 7 s job 1 is disconnected.
		for range 6 {
			sleep(time.Second)
			if time.Since(c.start) == 3*time.Second {
				c.jms[1].hmu.Lock()
				c.jms[1].gone = true
				c.jms[1].hmu.Unlock()
			}
			require.NoError(t, c.te.HeartbeatFromJobMaster(ctx, "jobmaster-2"))
			synctest.Wait()
		}
		sleep(time.Second - time.Nanosecond)
		assert.Equal(t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning}, c.jms[1].statesOf(d.ExecutionAttemptID))
		r, err := c.te.SlotReport(ctx)
		require.NoError(t, err)
		assert.Equal(t, jobID(1), r.Slots[0].JobID)

		sleep(time.Nanosecond) // 7 s
		last := c.jms[1].lastState(t, d.ExecutionAttemptID)
		assert.Equal(t, jobgraph.ExecutionStateFailed, last.State.State)
		assert.ErrorIs(t, last.State.Failure.Err(), heartbeat.ErrTimeout)
		assert.Equal(t, "JobMaster of job "+jobID(1).String()+" disconnected from TaskExecutor te-1: heartbeat of the JobMaster of job "+jobID(1).String()+" timed out after 5s", last.State.Failure.Message)
		r, err = c.te.SlotReport(ctx)
		require.NoError(t, err)
		assert.True(t, r.Slots[0].JobID.IsZero(), "job 1's slot is free")
		assert.Equal(t, jobID(2), r.Slots[1].JobID, "job 2's JobMaster still answers")
		assert.Equal(t, []notifyCall{{"te-1", rpc.SlotID{ResourceID: "te-1", SlotNumber: 0}, allocID(1)}}, c.rm.notifications())

		// The last heartbeat job 2's JobMaster took was at 6 s: at 11 s its job is gone too.
		sleep(4*time.Second - time.Nanosecond)
		r, _ = c.te.SlotReport(ctx)
		assert.Equal(t, jobID(2), r.Slots[1].JobID)
		sleep(time.Nanosecond)
		r, _ = c.te.SlotReport(ctx)
		assert.True(t, r.Slots[1].JobID.IsZero())
	})
}

// heartbeat.rpc-failure-threshold on the receiving side (Flink's HeartbeatManagerImpl counts the
// failures of its answers too): job 1's JobMaster keeps asking every second, but from 2 s on the
// answers cannot reach it; at the second failed answer, 3 s, 3 s before its heartbeat.timeout,
// job 1 is disconnected with the unreachable cause. An answer that failed otherwise ("JobMaster
// gone", an error it answered with) does not count: job 2's JobMaster is found silent only at
// its timeout.
func TestUnreachableJobMasterIsDisconnectedAtTheSecondFailedAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newHBCluster(t)
		c.reg.Register("wait", func(ctx context.Context, _ Environment) error { <-ctx.Done(); return ctx.Err() })
		c.allocate(1, 0, allocID(1))
		c.allocate(2, 1, allocID(2))
		d := tdd(1, 0, "wait", allocID(1))
		require.NoError(t, c.te.SubmitTask(ctx, jmToken(1), d))
		synctest.Wait()

		for range 2 {
			sleep(time.Second)
			if time.Since(c.start) == 2*time.Second {
				c.jms[1].hmu.Lock()
				c.jms[1].unreachable = true
				c.jms[1].hmu.Unlock()
				c.jms[2].hmu.Lock()
				c.jms[2].gone = true
				c.jms[2].hmu.Unlock()
			}
			require.NoError(t, c.te.HeartbeatFromJobMaster(ctx, "jobmaster-1"))
			synctest.Wait()
		}
		sleep(time.Second - time.Nanosecond)
		r, err := c.te.SlotReport(ctx)
		require.NoError(t, err)
		assert.Equal(t, jobID(1), r.Slots[0].JobID, "one failed answer")
		sleep(time.Nanosecond) // 3 s
		require.NoError(t, c.te.HeartbeatFromJobMaster(ctx, "jobmaster-1"))
		synctest.Wait()
		last := c.jms[1].lastState(t, d.ExecutionAttemptID)
		assert.Equal(t, jobgraph.ExecutionStateFailed, last.State.State)
		assert.ErrorIs(t, last.State.Failure.Err(), heartbeat.ErrUnreachable)
		assert.Equal(t, "JobMaster of job "+jobID(1).String()+" disconnected from TaskExecutor te-1: the JobMaster of job "+jobID(1).String()+
			" is no longer reachable: 2 consecutive heartbeat RPCs failed, the last with: JobMaster unreachable", last.State.Failure.Message)
		r, err = c.te.SlotReport(ctx)
		require.NoError(t, err)
		assert.True(t, r.Slots[0].JobID.IsZero(), "job 1's slot is free")
		assert.Equal(t, jobID(2), r.Slots[1].JobID, "job 2's refused answers do not count")

		// Job 2's JobMaster last took a heartbeat at 1 s: it is lost at 6 s, by the timeout.
		sleep(3*time.Second - time.Nanosecond)
		r, _ = c.te.SlotReport(ctx)
		assert.Equal(t, jobID(2), r.Slots[1].JobID)
		sleep(time.Nanosecond)
		r, _ = c.te.SlotReport(ctx)
		assert.True(t, r.Slots[1].JobID.IsZero())
	})
}

func TestTaskExecutorAnswersTheResourceManagerAndRegistersAgainWhenItFallsSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newHBCluster(t)
		c.allocate(1, 0, allocID(1))
		// Job 1's JobMaster requests a heartbeat every second throughout (so the job stays);
		// the ResourceManager requests them at 1, 2 and 3 s only.
		jobMasterRequests := func(n int) {
			for range n {
				sleep(time.Second)
				require.NoError(t, c.te.HeartbeatFromJobMaster(ctx, "jobmaster-1"))
				if time.Since(c.start) <= 3*time.Second {
					require.NoError(t, c.te.HeartbeatFromResourceManager(ctx, "rm"))
				}
			}
			synctest.Wait()
		}
		jobMasterRequests(3)
		c.rm.hmu.Lock()
		beats := slices.Clone(c.rm.beats)
		c.rm.hmu.Unlock()
		require.Len(t, beats, 3)
		want := rpc.SlotReport{Slots: []rpc.SlotStatus{
			{SlotID: rpc.SlotID{ResourceID: "te-1", SlotNumber: 0}, ResourceProfile: DefaultSlotProfile, AllocationID: allocID(1), JobID: jobID(1)},
			{SlotID: rpc.SlotID{ResourceID: "te-1", SlotNumber: 1}, ResourceProfile: DefaultSlotProfile},
		}}
		for i, b := range beats {
			assert.Equal(t, hbBeat{time.Duration(i+1) * time.Second, "te-1", want}, b)
		}
		assert.Equal(t, 1, c.rm.numRegistrations())

		// No request since 3 s: at 8 s the TaskExecutor registers again, with its slots as they
		// are, and again every 5 s while the ResourceManager stays silent.
		jobMasterRequests(4)
		sleep(time.Second - time.Nanosecond)
		assert.Equal(t, 1, c.rm.numRegistrations())
		sleep(time.Nanosecond)
		assert.Equal(t, 2, c.rm.numRegistrations())
		c.rm.mu.Lock()
		assert.Equal(t, want, c.rm.registers[1].SlotReport)
		c.rm.mu.Unlock()
		jobMasterRequests(5)
		assert.Equal(t, 3, c.rm.numRegistrations())
		// Requests again: no more registrations.
		for range 20 {
			require.NoError(t, c.te.HeartbeatFromResourceManager(ctx, "rm"))
			sleep(time.Second)
		}
		assert.Equal(t, 3, c.rm.numRegistrations())
	})
}

// The ResourceManager asks every second; from 2 s on the TaskExecutor's answers cannot reach it
// (heartbeat.rpc-failure-threshold on the receiving side): at the second failed answer, 3 s, the
// TaskExecutor registers again, as at a timeout — which never comes here, since the requests
// keep coming: only the failed answers tell.
func TestUnreachableResourceManagerIsRegisteredWithAgainAtTheSecondFailedAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newHBCluster(t)
		for range 3 {
			sleep(time.Second)
			if time.Since(c.start) == 2*time.Second {
				c.rm.hmu.Lock()
				c.rm.unreachable = true
				c.rm.hmu.Unlock()
			}
			assert.Equal(t, 1, c.rm.numRegistrations(), "at %v", time.Since(c.start))
			require.NoError(t, c.te.HeartbeatFromResourceManager(ctx, "rm"))
			synctest.Wait()
		}
		assert.Equal(t, 2, c.rm.numRegistrations(), "registered again at 3 s")
		// Its answers reach the ResourceManager again: no more registrations.
		c.rm.hmu.Lock()
		c.rm.unreachable = false
		c.rm.hmu.Unlock()
		for range 20 {
			sleep(time.Second)
			require.NoError(t, c.te.HeartbeatFromResourceManager(ctx, "rm"))
		}
		synctest.Wait()
		assert.Equal(t, 2, c.rm.numRegistrations())
	})
}

func TestKilledTaskExecutorAnswersNoHeartbeatAndNeverTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newHBCluster(t)
		c.reg.Register("wait", func(ctx context.Context, _ Environment) error { <-ctx.Done(); return ctx.Err() })
		c.allocate(1, 0, allocID(1))
		d := tdd(1, 0, "wait", allocID(1))
		require.NoError(t, c.te.SubmitTask(ctx, jmToken(1), d))
		synctest.Wait()
		reported := c.jms[1].numStates()

		c.te.Kill()
		assert.ErrorIs(t, c.te.HeartbeatFromJobMaster(ctx, "jobmaster-1"), ErrKilled)
		assert.ErrorIs(t, c.te.HeartbeatFromResourceManager(ctx, "rm"), ErrKilled)
		sleep(time.Hour)
		assert.Empty(t, c.jms[1].take())
		assert.Equal(t, reported, c.jms[1].numStates(), "no timeout fails the task of a killed TaskExecutor")
		assert.Equal(t, 1, c.rm.numRegistrations(), "a killed TaskExecutor does not register again")
	})
}

func TestNewChecksTheHeartbeatTimeout(t *testing.T) {
	_, err := New(Config{RPC: rpc.NewLocalService(), HeartbeatTimeout: time.Second})
	assert.EqualError(t, err, "taskexecutor: heartbeat: heartbeat.timeout 1s is shorter than heartbeat.interval 10s")
	_, err = New(Config{RPC: rpc.NewLocalService(), HeartbeatRPCFailureThreshold: -2})
	assert.EqualError(t, err, "taskexecutor: heartbeat: heartbeat.rpc-failure-threshold -2: want a positive number of failed heartbeat RPCs, or -1 to turn the detection off")
}
