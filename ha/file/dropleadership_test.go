package file_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/file"
)

// recorder is a contender that records its grants and revocations (zero session: revoked).
type recorder struct{ events chan ha.SessionID }

func newRecorder() *recorder                       { return &recorder{events: make(chan ha.SessionID, 16)} }
func (r *recorder) GrantLeadership(s ha.SessionID) { r.events <- s }
func (r *recorder) RevokeLeadership()              { r.events <- ha.SessionID{} }
func (r *recorder) HandleError(error)              {}

func drainEvents(ch chan ha.SessionID) []ha.SessionID {
	var out []ha.SessionID
	for {
		select {
		case s := <-ch:
			out = append(out, s)
		default:
			return out
		}
	}
}

// TestDropLeadershipRevokesAllAndLeadsAgainWithANewSession: a client leading its Dispatcher and
// a job's JobMaster drops its leadership: both are revoked at once, its writes are refused, the
// plan it wrote stays; one poll interval later (nobody else contends) it leads again with a new
// session, granted to both, and writes again. Dropping it while not leading changes nothing.
func TestDropLeadershipRevokesAllAndLeadsAgainWithANewSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s, err := file.New(file.Options{Dir: t.TempDir()})
		require.NoError(t, err)
		defer s.Close()
		job := jobgraph.NewJobID()
		d, j := newRecorder(), newRecorder()
		require.NoError(t, s.DispatcherLeaderElection().Start(d))
		require.NoError(t, s.JobMasterLeaderElection(job).Start(j))
		synctest.Wait()
		first, leading := s.Session()
		require.True(t, leading)
		assert.Equal(t, []ha.SessionID{first}, drainEvents(d.events))
		assert.Equal(t, []ha.SessionID{first}, drainEvents(j.events))
		g := jobgraph.New("kept", jobgraph.Batch)
		g.JobID = job
		g.AddVertex("v", "noop", 1)
		require.NoError(t, s.ExecutionPlanStore().Put(ctx, g))

		dropped := time.Now()
		require.NoError(t, s.DropLeadership())
		_, leading = s.Session()
		assert.False(t, leading)
		assert.ErrorIs(t, s.ExecutionPlanStore().Remove(ctx, job), ha.ErrNotLeader)
		synctest.Wait()
		assert.Equal(t, []ha.SessionID{{}}, drainEvents(d.events), "revoked")
		assert.Equal(t, []ha.SessionID{{}}, drainEvents(j.events), "revoked")
		assert.NoError(t, s.DropLeadership(), "not leading: nothing to drop")
		ids, err := s.ExecutionPlanStore().JobIDs(ctx)
		require.NoError(t, err)
		assert.Equal(t, []jobgraph.JobID{job}, ids, "nothing durable removed")

		time.Sleep(file.DefaultPollInterval - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, drainEvents(d.events), "no grant before the next poll")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		second, leading := s.Session()
		require.True(t, leading, "the client took the lock again at its next poll")
		assert.Equal(t, file.DefaultPollInterval, time.Since(dropped))
		assert.NotEqual(t, first, second, "a new session")
		assert.Equal(t, []ha.SessionID{second}, drainEvents(d.events))
		assert.Equal(t, []ha.SessionID{second}, drainEvents(j.events))
		require.NoError(t, s.ExecutionPlanStore().Remove(ctx, job), "writes pass again")
	})
}

// TestDropLeadershipLetsAStandbyTakeOver: after the leader drops its leadership, a standby
// polling on the same directory takes the lock; the first client stays a standby and is refused.
func TestDropLeadershipLetsAStandbyTakeOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		a, err := file.New(file.Options{Dir: dir})
		require.NoError(t, err)
		defer a.Close()
		ra := newRecorder()
		require.NoError(t, a.DispatcherLeaderElection().Start(ra))
		synctest.Wait()
		sa, _ := a.Session()
		assert.Equal(t, []ha.SessionID{sa}, drainEvents(ra.events))
		b, err := file.New(file.Options{Dir: dir, PollInterval: file.DefaultPollInterval / 2})
		require.NoError(t, err)
		defer b.Close()
		rb := newRecorder()
		require.NoError(t, b.DispatcherLeaderElection().Start(rb))
		synctest.Wait()
		assert.Empty(t, drainEvents(rb.events), "a leads")

		require.NoError(t, a.DropLeadership())
		time.Sleep(file.DefaultPollInterval / 2) // b's next poll comes before a's
		synctest.Wait()
		sb, leading := b.Session()
		require.True(t, leading)
		assert.Equal(t, []ha.SessionID{sb}, drainEvents(rb.events))
		assert.Equal(t, []ha.SessionID{{}}, drainEvents(ra.events))
		assert.NotEqual(t, sa, sb)
		time.Sleep(time.Second)
		synctest.Wait()
		_, leading = a.Session()
		assert.False(t, leading, "b holds the lock")
		assert.Empty(t, drainEvents(ra.events))
	})
}
