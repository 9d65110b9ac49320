package taskexecutor

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/rpc"
)

// A disconnect from the ResourceManager the TaskExecutor is registered with (its heartbeat timed
// out there) makes it register again at that instant, with its slots as they are, not
// heartbeat.timeout later when its own heartbeat of the ResourceManager would time out; one
// carrying another ResourceManagerID changes nothing and is refused as stale. Flink:
// TaskExecutor.disconnectResourceManager → reconnectToResourceManager.
func TestDisconnectFromTheResourceManagerRegistersAgainAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newHBCluster(t)
		c.allocate(1, 0, allocID(1))
		require.Equal(t, 1, c.rm.numRegistrations())
		sleep(3 * time.Second)
		require.NoError(t, c.te.HeartbeatFromResourceManager(ctx, "rm")) // its timeout: 8 s
		synctest.Wait()

		// At 3 s: a stale disconnect changes nothing.
		err := c.te.DisconnectResourceManager(ctx, rmToken(8), rpc.Failure(errors.New("an earlier ResourceManager")))
		requireFencingError(t, err, rmToken(9).String(), rmToken(8).String())
		synctest.Wait()
		assert.Equal(t, 1, c.rm.numRegistrations())

		// At 4 s the current one's: registered again at 4 s.
		sleep(time.Second)
		require.NoError(t, c.te.DisconnectResourceManager(ctx, rmToken(9), rpc.Failure(errors.New("heartbeat of TaskExecutor te-1 timed out after 5s"))))
		synctest.Wait()
		require.Equal(t, 2, c.rm.numRegistrations(), "registered again at the instant of the disconnect")
		c.rm.mu.Lock()
		again := c.rm.registers[1].SlotReport
		c.rm.mu.Unlock()
		assert.Equal(t, rpc.SlotReport{Slots: []rpc.SlotStatus{
			{SlotID: rpc.SlotID{ResourceID: "te-1", SlotNumber: 0}, ResourceProfile: DefaultSlotProfile, AllocationID: allocID(1), JobID: jobID(1)},
			{SlotID: rpc.SlotID{ResourceID: "te-1", SlotNumber: 1}, ResourceProfile: DefaultSlotProfile},
		}}, again, "with its slots as they are")
		id, err := c.te.WaitRegistered(ctx)
		require.NoError(t, err)
		assert.Equal(t, rmToken(9), id)

		// The ResourceManager is monitored anew from 4 s: the earlier monitoring's timeout (8 s)
		// does not fire; the new one does, at 9 s, with no heartbeat request since.
		sleep(5*time.Second - time.Nanosecond)
		assert.Equal(t, 2, c.rm.numRegistrations())
		sleep(time.Nanosecond)
		assert.Equal(t, 3, c.rm.numRegistrations())
	})
}

// With a leader retrieval, the disconnect of the current leader registers with it again at
// once, through the retrying registration; one of another ResourceManagerID (an earlier
// leader's) is refused and changes nothing.
func TestDisconnectFromTheResourceManagerLeaderRegistersAgainAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newCluster(t)
		rmB := &leaderRM{fakeResourceManager: &fakeResourceManager{id: rmToken(2)}}
		require.NoError(t, c.svc.Register("rm-b", rmB))
		retrieval := &handRetrieval{}
		te, err := New(Config{ResourceID: "te-1", NumSlots: 2, Registry: c.reg, RPC: c.svc,
			ResourceManagerRetrieval: retrieval, Shuffle: c.shuffle, Logger: discard,
			HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second})
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, te.Close()) })
		require.NoError(t, te.Start(ctx))
		retrieval.announce("rm-b", ha.SessionID(rmToken(2)))
		_, err = te.WaitRegistered(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, rmB.numRegistrations())

		time.Sleep(time.Second)
		require.ErrorIs(t, te.DisconnectResourceManager(ctx, rmToken(1), nil), rpc.ErrFencingTokenMismatch)
		synctest.Wait()
		assert.Equal(t, 1, rmB.numRegistrations())

		require.NoError(t, te.DisconnectResourceManager(ctx, rmToken(2), rpc.Failure(errors.New("dropped"))))
		synctest.Wait()
		assert.Equal(t, 2, rmB.numRegistrations(), "registered again at the instant of the disconnect")
		id, err := te.WaitRegistered(ctx)
		require.NoError(t, err)
		assert.Equal(t, rmToken(2), id)
	})
}
