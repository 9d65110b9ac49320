package resourcemanager

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/rpc"
)

// contender is a JobMaster runner's stand-in in a job's election: it records the sessions it is
// granted.
type contender struct{ sessions chan ha.SessionID }

func (c *contender) GrantLeadership(s ha.SessionID) { c.sessions <- s }
func (c *contender) RevokeLeadership()              {}
func (c *contender) HandleError(error)              {}

// With Config.HA the ResourceManager refuses JobMasters of stale sessions, as Flink's
// ResourceManager.registerJobMaster does with its JobLeaderIdService: session 1 leads and is
// confirmed; a JobMaster of a session that never led cannot replace it. Leadership moves to
// session 2: its JobMaster registers before it is confirmed (ours always do), and from then on
// session 1's JobMaster cannot register again — before the fix the latest registration won, so
// a stale JobMaster re-registering took the job from its leader (and the leader's declarations
// failed as fenced).
func TestRegisterJobMasterRefusesStaleSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		e := newEnv(t, func(c *Config) { c.HA = services })
		te := e.addTaskExecutor("te-1", cpu(1), cpu(1))
		job := jobgraph.NewJobID()
		election := services.JobMasterElection(job)
		c := &contender{sessions: make(chan ha.SessionID, 2)}
		require.NoError(t, election.Start(c))
		synctest.Wait()
		s1 := <-c.sessions
		token1 := jobgraph.JobMasterID(s1)

		register := func(token jobgraph.JobMasterID, name string) error {
			return second(e.gw.RegisterJobMaster(e.ctx, token, jobgraph.ResourceID(name), name, job))
		}
		fenced := func(err error, expected, got jobgraph.JobMasterID) {
			t.Helper()
			require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
			var fe *rpc.FencingError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, expected.String(), fe.Expected)
			assert.Equal(t, got.String(), fe.Got)
		}

		// Session 1 registers before its leadership is confirmed, as every JobMaster does.
		require.NoError(t, register(token1, "jm-1"))
		election.ConfirmLeadership(s1, "jm-1")
		synctest.Wait()
		require.NoError(t, e.declare(job, token1, req(unknown, 1)))
		synctest.Wait()
		require.Len(t, te.Calls(), 1)

		// A session that never led cannot replace the confirmed, registered leader.
		never := jobgraph.NewJobMasterID()
		fenced(register(never, "jm-x"), token1, never)
		jm, ok := jobMasterOf(e, job)
		require.True(t, ok)
		assert.Equal(t, token1, jm.ID, "the leader stays registered")
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, e.rm.Requirements(job), "and keeps its requirements")
		require.NoError(t, register(token1, "jm-1"), "the leader registering again is fine")

		// Leadership moves to session 2; its JobMaster registers before it is confirmed.
		election.Revoke()
		synctest.Wait()
		s2 := <-c.sessions
		token2 := jobgraph.JobMasterID(s2)
		require.NoError(t, register(token2, "jm-2"))
		jm, _ = jobMasterOf(e, job)
		assert.Equal(t, token2, jm.ID)

		// Session 1 lost leadership: it cannot come back, confirmed leader or not.
		fenced(register(token1, "jm-1"), jobgraph.JobMasterID{}, token1)
		election.ConfirmLeadership(s2, "jm-2")
		synctest.Wait()
		fenced(register(token1, "jm-1"), token2, token1)
		fenced(register(never, "jm-x"), token2, never)
		jm, _ = jobMasterOf(e, job)
		assert.Equal(t, token2, jm.ID, "session 2 stays registered")
		require.NoError(t, e.declare(job, token2, req(unknown, 2)))
		assert.ErrorIs(t, e.declare(job, token1, req(unknown, 1)), rpc.ErrFencingTokenMismatch)
		synctest.Wait()
		calls := te.Calls()
		require.Len(t, calls, 2)
		assert.Equal(t, token2, calls[1].JobMasterID)

		// Once the leader disconnects, the job is no longer followed (its retrieval stops).
		require.NoError(t, e.gw.DisconnectJobMaster(e.ctx, e.rm.ResourceManagerID(), token2, job, rpc.Failure(errors.New("done"))))
		synctest.Wait()
		_, ok = jobMasterOf(e, job)
		assert.False(t, ok)
		assert.Empty(t, jobsFollowed(e), "the job's leader retrieval stopped")
	})
}

// Without Config.HA the latest registration wins, as before (nothing to check it against).
func TestRegisterJobMasterWithoutHALetsTheLatestWin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		job := jobgraph.NewJobID()
		t1, t2 := jobgraph.NewJobMasterID(), jobgraph.NewJobMasterID()
		require.NoError(t, second(e.gw.RegisterJobMaster(e.ctx, t2, "jm-2", "jm-2", job)))
		require.NoError(t, second(e.gw.RegisterJobMaster(e.ctx, t1, "jm-1", "jm-1", job)))
		jm, ok := jobMasterOf(e, job)
		require.True(t, ok)
		assert.Equal(t, t1, jm.ID)
	})
}

// jobsFollowed lists the jobs whose leader the ResourceManager follows.
func jobsFollowed(e *env) []jobgraph.JobID {
	e.rm.leaders.mu.Lock()
	defer e.rm.leaders.mu.Unlock()
	var out []jobgraph.JobID
	for job := range e.rm.leaders.jobs {
		out = append(out, job)
	}
	return out
}

// When the job's leader retrieval reports that the registered JobMaster's session lost
// leadership, the ResourceManager disconnects it at once, as Flink's jobLeaderLostLeadership
// does: its requirements go, its heartbeats stop, it is told with ErrJobLeaderLostLeadership, and
// it cannot register again; the new session's JobMaster then registers. Without this the old
// JobMaster kept its requirements (slots requested for a dead session) until its heartbeat
// timed out.
func TestJobMasterWhoseSessionLostLeadershipIsDisconnected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		services := embedded.New()
		defer services.Close()
		e := newEnv(t, func(c *Config) { c.HA = services })
		job := jobgraph.NewJobID()
		election := services.JobMasterElection(job)
		c := &contender{sessions: make(chan ha.SessionID, 2)}
		require.NoError(t, election.Start(c))
		synctest.Wait()
		s1 := <-c.sessions
		token1 := jobgraph.JobMasterID(s1)

		jm1 := &hbJobMaster{id: "jm-1", rm: e.gw, start: start}
		require.NoError(t, e.svc.Register("jm-1", jm1))
		require.NoError(t, second(e.gw.RegisterJobMaster(e.ctx, token1, "jm-1", "jm-1", job)))
		election.ConfirmLeadership(s1, "jm-1")
		synctest.Wait()
		require.NoError(t, e.declare(job, token1, req(unknown, 1)))

		// Leadership moves; the old JobMaster is disconnected at that instant.
		election.Revoke()
		synctest.Wait()
		s2 := <-c.sessions
		_, ok := jobMasterOf(e, job)
		assert.False(t, ok, "the old session's JobMaster is no longer registered")
		assert.Nil(t, e.rm.Requirements(job))
		_, disconnects := jm1.state()
		require.Len(t, disconnects, 1)
		d := disconnects[0]
		assert.Equal(t, time.Duration(0), d.At)
		assert.Equal(t, token1, d.Token)
		assert.Equal(t, e.rm.ResourceManagerID(), d.RM)
		assert.ErrorIs(t, d.Cause, ErrJobLeaderLostLeadership)
		assert.EqualError(t, d.Cause, "resourcemanager: job leader lost leadership: JobMaster jm-1 of job "+job.String()+" (session "+token1.String()+")")
		assert.ErrorIs(t, second(e.gw.RegisterJobMaster(e.ctx, token1, "jm-1", "jm-1", job)), rpc.ErrFencingTokenMismatch, "and cannot come back")
		assert.Empty(t, monitoredJobMasters(e), "not monitored, not even after the refused registration")

		// The new session registers and is left alone when its own confirmation arrives.
		token2 := jobgraph.JobMasterID(s2)
		require.NoError(t, second(e.gw.RegisterJobMaster(e.ctx, token2, "jm-2", "jm-2", job)))
		election.ConfirmLeadership(s2, "jm-2")
		synctest.Wait()
		jm, ok := jobMasterOf(e, job)
		require.True(t, ok)
		assert.Equal(t, token2, jm.ID)
		_, disconnects = jm1.state()
		assert.Len(t, disconnects, 1)
	})
}

// monitoredJobMasters lists the JobMasters whose heartbeats the ResourceManager follows.
func monitoredJobMasters(e *env) []string {
	return observe(e.rm, func(*SlotManager) []string {
		var out []string
		for id := range e.rm.jobMasters {
			out = append(out, string(id))
		}
		return out
	})
}
