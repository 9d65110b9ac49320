package file_test

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/ha/file"
)

// TestOwnProbeNeverMakesTheStandbyMissTheLock: a standby's retrievals probe the latch with a
// shared flock while it does not lead; its own try of the lock falling inside that probe must
// wait for it, not lose the whole poll interval to it. The leader closes; the standby's
// watcher probes (held open here by a hook) exactly when its campaign's poll comes: once the
// probe ends the standby takes the lock at that same instant, without a failed try. Before the
// client serialized the two, the try failed and the standby led one poll later — the
// hascenarios takeover bound on ha/file was exceeded by it under load (345 ms for 300 ms).
func TestOwnProbeNeverMakesTheStandbyMissTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "ha")
		leader, err := file.New(file.Options{Dir: dir, PollInterval: testPoll})
		require.NoError(t, err)
		cl := newContender()
		require.NoError(t, leader.DispatcherLeaderElection().Start(cl))
		awaitGrant(t, cl)

		standby := open(t, dir)
		var armed atomic.Bool
		probing, release := make(chan struct{}), make(chan struct{})
		standby.SetDuringProbe(func() {
			if armed.CompareAndSwap(true, false) {
				probing <- struct{}{}
				<-release
			}
		})
		var failed atomic.Int32
		standby.SetAfterAttempt(func(got bool) {
			if !got {
				failed.Add(1)
			}
		})
		cs := newContender()
		require.NoError(t, standby.DispatcherLeaderElection().Start(cs)) // tries at once, then every poll
		r := standby.DispatcherLeaderRetrieval()
		require.NoError(t, r.Start(newListener())) // its watcher polls at the campaign's phase
		t.Cleanup(func() { assert.NoError(t, r.Stop()) })
		synctest.Wait()
		require.Equal(t, int32(1), failed.Load(), "the standby's first try, while the leader holds the lock")

		time.Sleep(testPoll / 2) // between two polls
		require.NoError(t, leader.Close())
		armed.Store(true)
		r2 := standby.ResourceManagerLeaderRetrieval()
		require.NoError(t, r2.Start(newListener())) // a new retrieval makes the watcher poll now
		t.Cleanup(func() { assert.NoError(t, r2.Stop()) })
		<-probing                // the probe holds its shared lock: nobody leads
		time.Sleep(testPoll / 2) // the campaign's next poll comes during the probe
		synctest.Wait()
		select {
		case e := <-cs.events:
			t.Fatalf("granted %+v while the probe holds its shared lock", e)
		default:
		}
		close(release)
		synctest.Wait()
		select {
		case e := <-cs.events:
			assert.True(t, e.granted, "the standby leads at the poll that fell into its own probe")
		default:
			t.Fatalf("the standby's try at its poll lost to its own probe (failed tries: %d); it would lead one poll later", failed.Load())
		}
		assert.Equal(t, int32(1), failed.Load(), "no failed try once the leader closed")
	})
}
