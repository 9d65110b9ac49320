package jobmaster_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// heldResults is a JobResultStore whose Get waits until the test answers it (or ctx ends).
type heldResults struct {
	ha.JobResultStore
	gets chan chan struct{}
}

func (h *heldResults) Get(ctx context.Context, id jobgraph.JobID) (ha.JobResultEntry, error) {
	release := make(chan struct{})
	select {
	case h.gets <- release:
	case <-ctx.Done():
		return ha.JobResultEntry{}, ctx.Err()
	}
	select {
	case <-release:
		return h.JobResultStore.Get(ctx, id)
	case <-ctx.Done():
		return ha.JobResultEntry{}, ctx.Err()
	}
}

// The runner reads the JobResultStore on a grant off its loop: while the read is pending the
// runner answers status at once, and the answer of a session that was revoked meanwhile is
// dropped — only the current session gets a JobMaster.
func TestGrantReadsTheJobResultStoreOffTheLoopAndDropsAStaleAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		factory := newFakeFactory()
		results := &heldResults{JobResultStore: services.JobResultStore(), gets: make(chan chan struct{})}
		election := services.JobMasterElection(factory.JobID())
		runner := jobmaster.NewLeadershipRunner(factory, election, results)
		require.NoError(t, runner.Start())
		first := <-results.gets // the first session's read, pending

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		st, err := runner.RequestJobStatus(ctx)
		require.NoError(t, err, "status while the JobResultStore read is pending")
		assert.Equal(t, jobgraph.JobStatusInitializing, st)

		election.Revoke() // a new session while the first one's read is pending
		synctest.Wait()
		close(first) // the first session's answer comes back late: dropped
		second := <-results.gets
		synctest.Wait()
		tokens, _ := factory.calls()
		assert.Empty(t, tokens, "no JobMaster for the revoked session")
		close(second)
		jm := <-factory.created
		synctest.Wait()
		tokens, _ = factory.calls()
		require.Len(t, tokens, 1)
		assert.True(t, election.HasLeadership(ha.SessionID(tokens[0])), "the JobMaster is the current session's")
		assert.Equal(t, jm.token, tokens[0])
		st, err = runner.RequestJobStatus(context.Background())
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, st)

		runner.Close()
		assert.Equal(t, jobgraph.JobStatusSuspended, runner.Result().Archived.Status)
		require.NoError(t, services.Close())
	})
}

// An election error while the grant's JobResultStore read is pending ends the runner, and the
// read's answer, coming later, creates no JobMaster and confirms nothing.
func TestElectionErrorDuringTheJobResultStoreReadCreatesNoJobMaster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		factory := newFakeFactory()
		results := &heldResults{JobResultStore: services.JobResultStore(), gets: make(chan chan struct{})}
		leaders := &leaders{}
		retrieval := services.JobMasterLeaderRetrieval(factory.JobID())
		require.NoError(t, retrieval.Start(leaders))
		runner := jobmaster.NewLeadershipRunner(factory, services.JobMasterLeaderElection(factory.JobID()), results)
		require.NoError(t, runner.Start())
		read := <-results.gets
		runner.HandleError(errors.New("lost the HA store"))
		<-runner.Done()
		close(read)
		synctest.Wait()
		tokens, _ := factory.calls()
		assert.Empty(t, tokens, "no JobMaster after the runner ended")
		assert.Empty(t, leaders.take(), "no leader confirmed")
		assert.ErrorIs(t, runner.Result().Err, jobmaster.ErrRunnerFailed)
		runner.Close()
		require.NoError(t, retrieval.Stop())
		require.NoError(t, services.Close())
	})
}

// A session revoked while its operation still waits in the chain (behind the previous session's
// slow close) creates no JobMaster when its turn comes and confirms nothing; only the newest
// session gets one.
func TestSessionRevokedWhileQueuedDoesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, m := newManualFixture(t)
		s1 := m.grant()
		first := <-f.factory.created
		synctest.Wait()
		gate := make(chan struct{})
		first.mu.Lock()
		first.closeGate = gate
		first.mu.Unlock()
		m.revoke() // the first session's close waits for gate
		m.grant()  // the second session's operation waits behind it
		m.revoke() // and ends before its turn
		s3 := m.grant()
		synctest.Wait()
		close(gate)
		third := <-f.factory.created
		synctest.Wait()
		tokens, canceled := f.factory.calls()
		assert.Equal(t, []jobgraph.JobMasterID{jobgraph.JobMasterID(s1), jobgraph.JobMasterID(s3)}, tokens, "JobMasters created, by session")
		assert.Equal(t, 0, canceled)
		assert.Equal(t, jobgraph.JobMasterID(s3), third.token)
		assert.Equal(t, []leader{{"jobmaster/1", s1}, {"jobmaster/2", s3}}, m.confirmations())
		assert.Equal(t, jobgraph.JobStatusRunning, status(t, f.runner))
	})
}
