package embedded_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/ha/hatest"
)

func newServices(*testing.T) ha.Services { return embedded.New() }

func TestConformance(t *testing.T) { hatest.TestServicesInBubble(t, newServices) }

// The suite also runs outside a bubble, as implementations with real I/O run it.
func TestConformanceRealTime(t *testing.T) { hatest.TestServices(t, newServices) }

// event is one leadership callback: a grant (with its session) or a revocation.
type event struct {
	granted bool
	session ha.SessionID
}

type contender struct{ events chan event }

func newContender() *contender                      { return &contender{events: make(chan event, 16)} }
func (c *contender) GrantLeadership(s ha.SessionID) { c.events <- event{true, s} }
func (c *contender) RevokeLeadership()              { c.events <- event{} }
func (c *contender) HandleError(err error)          { panic(err) }

// drain returns what was delivered so far; call it after synctest.Wait.
func drain[E any](ch chan E) []E {
	var out []E
	for {
		select {
		case e := <-ch:
			out = append(out, e)
		default:
			return out
		}
	}
}

type leader struct {
	address string
	session ha.SessionID
}

type listener struct{ leaders chan leader }

func newListener() *listener { return &listener{leaders: make(chan leader, 16)} }
func (l *listener) NotifyLeaderAddress(address string, s ha.SessionID) {
	l.leaders <- leader{address, s}
}
func (l *listener) HandleError(err error) { panic(err) }

func TestRevokeGrantsANewSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := embedded.New()
		defer s.Close()
		job := jobgraph.NewJobID()
		l := newListener()
		require.NoError(t, s.JobMasterLeaderRetrieval(job).Start(l))
		c := newContender()
		e := s.JobMasterElection(job)
		require.NoError(t, e.Start(c))
		synctest.Wait()
		grants := drain(c.events)
		require.Len(t, grants, 1)
		require.True(t, grants[0].granted)
		first := grants[0].session
		e.ConfirmLeadership(first, "jobmaster/1")
		synctest.Wait()
		assert.Equal(t, []leader{{"jobmaster/1", first}}, drain(l.leaders))

		e.Revoke()
		assert.False(t, e.HasLeadership(first), "the old session is over as soon as Revoke returns")
		synctest.Wait()
		events := drain(c.events)
		require.Len(t, events, 2)
		assert.Equal(t, event{}, events[0], "revoked first")
		require.True(t, events[1].granted, "then granted again")
		second := events[1].session
		assert.NotEqual(t, first, second)
		assert.NotEqual(t, ha.SessionID{}, second)
		assert.True(t, e.HasLeadership(second))
		assert.False(t, e.HasLeadership(first))
		assert.Equal(t, []leader{{"", ha.SessionID{}}}, drain(l.leaders), "no leader until the new session confirms")

		e.ConfirmLeadership(first, "jobmaster/stale")
		synctest.Wait()
		assert.Empty(t, drain(l.leaders), "a confirmation with the old session is ignored")

		e.ConfirmLeadership(second, "jobmaster/2")
		synctest.Wait()
		assert.Equal(t, []leader{{"jobmaster/2", second}}, drain(l.leaders))

		// A retrieval started now learns the new leader at once.
		late := newListener()
		require.NoError(t, s.JobMasterLeaderRetrieval(job).Start(late))
		synctest.Wait()
		assert.Equal(t, []leader{{"jobmaster/2", second}}, drain(late.leaders))
		assert.Empty(t, drain(c.events))
	})
}

func TestRevokeWithoutContenderDoesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := embedded.New()
		defer s.Close()
		job := jobgraph.NewJobID()
		l := newListener()
		require.NoError(t, s.JobMasterLeaderRetrieval(job).Start(l))
		e := s.JobMasterElection(job)
		e.Revoke()
		synctest.Wait()
		assert.Empty(t, drain(l.leaders))

		c := newContender()
		require.NoError(t, e.Start(c))
		synctest.Wait()
		events := drain(c.events)
		require.Len(t, events, 1)
		assert.True(t, events[0].granted)
		assert.True(t, e.HasLeadership(events[0].session))
	})
}

func TestElectionIsOnePerJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := embedded.New()
		defer s.Close()
		job := jobgraph.NewJobID()
		e := s.JobMasterElection(job)
		assert.Same(t, e, s.JobMasterElection(job))
		assert.NotSame(t, e, s.JobMasterElection(jobgraph.NewJobID()))

		// JobMasterLeaderElection hands out one handle per contender, all of the same election.
		h1, h2 := s.JobMasterLeaderElection(job), s.JobMasterLeaderElection(job)
		assert.NotSame(t, h1, h2)
		c1, c2 := newContender(), newContender()
		require.NoError(t, h1.Start(c1))
		require.NoError(t, h2.Start(c2))
		synctest.Wait()
		granted := drain(c1.events)
		require.Len(t, granted, 1)
		assert.Empty(t, drain(c2.events), "one election: the second contender waits")
		assert.True(t, e.HasLeadership(granted[0].session))
		require.NoError(t, h1.Close())
		require.NoError(t, h2.Close())
	})
}

// Two runners of one job in one process (the old leader session's still closing while the next
// one's starts): closing the old runner's election handle removes only its contender, and the new
// runner's is granted. One handle per job removed both, and the job then had no leader.
func TestClosingAJobMasterElectionHandleRemovesOnlyItsContender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := embedded.New()
		defer s.Close()
		job := jobgraph.NewJobID()
		old, next := newContender(), newContender()
		e1, e2 := s.JobMasterLeaderElection(job), s.JobMasterLeaderElection(job)
		require.NoError(t, e1.Start(old))
		require.NoError(t, e2.Start(next))
		assert.EqualError(t, e1.Start(newContender()), "ha/embedded: a second contender started on one election handle")
		synctest.Wait()
		first := drain(old.events)
		require.Len(t, first, 1)
		require.True(t, first[0].granted)

		require.NoError(t, e1.Close())
		synctest.Wait()
		assert.Equal(t, []event{{}}, drain(old.events), "the old runner is revoked")
		granted := drain(next.events)
		require.Len(t, granted, 1, "the new runner is granted")
		assert.True(t, granted[0].granted)
		assert.NotEqual(t, first[0].session, granted[0].session)
		assert.True(t, e2.HasLeadership(granted[0].session))
		assert.EqualError(t, e1.Start(old), "ha/embedded: Start on a closed election")
		require.NoError(t, e2.Close())
	})
}

func TestStartSameContenderTwiceFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := embedded.New()
		defer s.Close()
		e := s.JobMasterElection(jobgraph.NewJobID())
		c := newContender()
		require.NoError(t, e.Start(c))
		assert.EqualError(t, e.Start(c), "ha/embedded: contender started twice")
		synctest.Wait()
		assert.Len(t, drain(c.events), 1, "granted once")
		require.NoError(t, e.Close())
	})
}

func TestSecondContenderWaitsWhileTheFirstLeads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := embedded.New()
		defer s.Close()
		e := s.JobMasterElection(jobgraph.NewJobID())
		first, second := newContender(), newContender()
		require.NoError(t, e.Start(first))
		require.NoError(t, e.Start(second))
		synctest.Wait()
		require.Len(t, drain(first.events), 1)
		assert.Empty(t, drain(second.events))

		e.Revoke() // leadership goes back to the first contender with a new session
		synctest.Wait()
		events := drain(first.events)
		require.Len(t, events, 2)
		assert.Equal(t, event{}, events[0])
		assert.True(t, events[1].granted)
		assert.Empty(t, drain(second.events))

		require.NoError(t, e.Close())
		synctest.Wait()
		assert.Equal(t, []event{{}}, drain(first.events))
		assert.Empty(t, drain(second.events), "Close removes every contender")
		assert.False(t, e.HasLeadership(events[1].session))
	})
}

func TestCloseDeliversPendingCallbacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := embedded.New()
		c := newContender()
		require.NoError(t, s.JobMasterElection(jobgraph.NewJobID()).Start(c))
		require.NoError(t, s.Close())
		events := drain(c.events)
		require.Len(t, events, 2, "the grant posted before Close, then the revocation Close caused, both delivered")
		assert.True(t, events[0].granted)
		assert.Equal(t, event{}, events[1], "closing the client revokes its leader")
	})
}

func TestElectionsOfEndedJobsAreForgotten(t *testing.T) {
	s := embedded.New()
	defer s.Close()
	job := jobgraph.NewJobID()
	first := s.JobMasterElection(job)
	require.Same(t, first, s.JobMasterElection(job), "one election per job while in use")
	require.NoError(t, first.Close())
	assert.NotSame(t, first, s.JobMasterElection(job), "a closed, unused election is dropped")
}

func TestPutNilGraphIsAnError(t *testing.T) {
	s := embedded.New()
	defer s.Close()
	assert.Error(t, s.ExecutionPlanStore().Put(context.Background(), nil))
}

// The cluster elections are shared by every contender of the process (two MiniClusters over one
// Services, say): closing the leader's election handle removes only the leader, and the standby
// started on another handle is granted next; closing the standby's handle leaves the leader.
func TestClosingAClusterElectionHandleRemovesOnlyItsContender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := embedded.New()
		defer s.Close()
		for name, election := range map[string]func() ha.LeaderElection{
			"dispatcher":      s.DispatcherLeaderElection,
			"resourcemanager": s.ResourceManagerLeaderElection,
		} {
			first, second, third := newContender(), newContender(), newContender()
			e1, e2, e3 := election(), election(), election()
			require.NoError(t, e1.Start(first), name)
			require.NoError(t, e2.Start(second), name)
			require.NoError(t, e3.Start(third), name)
			require.Error(t, e1.Start(newContender()), "%s: one contender per handle", name)
			synctest.Wait()
			granted := drain(first.events)
			require.Len(t, granted, 1, name)
			assert.Empty(t, drain(second.events), name)

			require.NoError(t, e3.Close()) // a standby leaves: nothing changes for the others
			require.NoError(t, e1.Close())
			synctest.Wait()
			assert.Equal(t, []event{{}}, drain(first.events), "%s: the leader is revoked", name)
			next := drain(second.events)
			require.Len(t, next, 1, "%s: the standby is granted", name)
			assert.True(t, next[0].granted, name)
			assert.NotEqual(t, granted[0].session, next[0].session, name)
			assert.True(t, e2.HasLeadership(next[0].session), name)
			assert.Empty(t, drain(third.events), "%s: the closed standby hears nothing", name)
			require.Error(t, e1.Start(first), "%s: a closed handle takes no contender", name)
			require.NoError(t, e2.Close())
		}
	})
}

// newBackend is the shared suite's backend: New makes it with its first client, NewClient the
// others.
func newBackend(*testing.T) func(*testing.T) ha.Services {
	var first *embedded.Services
	return func(*testing.T) ha.Services {
		if first == nil {
			first = embedded.New()
			return first
		}
		return first.NewClient()
	}
}

func TestSharedConformance(t *testing.T) {
	hatest.TestSharedServicesInBubble(t, hatest.SharedOptions{OneLeaderPerClient: false}, newBackend)
}

func TestSharedConformanceRealTime(t *testing.T) {
	hatest.TestSharedServices(t, hatest.SharedOptions{OneLeaderPerClient: false}, newBackend)
}

// Closing one client removes its contenders and listeners only: its leader is revoked, the other
// client's waiting contender is granted, and the other client's listener hears the change, the
// closed client's listener nothing.
func TestClientCloseRemovesOnlyItsContendersAndListeners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := embedded.New()
		b := a.NewClient()
		defer b.Close()
		job := jobgraph.NewJobID()
		la, lb := newListener(), newListener()
		require.NoError(t, a.JobMasterLeaderRetrieval(job).Start(la))
		require.NoError(t, b.JobMasterLeaderRetrieval(job).Start(lb))
		ca, cb := newContender(), newContender()
		require.NoError(t, a.JobMasterLeaderElection(job).Start(ca))
		require.NoError(t, b.JobMasterLeaderElection(job).Start(cb))
		synctest.Wait()
		first := drain(ca.events)
		require.Len(t, first, 1)
		assert.Empty(t, drain(cb.events), "b's contender waits")
		a.JobMasterLeaderElection(job).ConfirmLeadership(first[0].session, "jobmaster/a")
		synctest.Wait()
		assert.Equal(t, []leader{{"jobmaster/a", first[0].session}}, drain(la.leaders))
		assert.Equal(t, []leader{{"jobmaster/a", first[0].session}}, drain(lb.leaders))

		require.NoError(t, a.Close())
		synctest.Wait()
		assert.Equal(t, []event{{}}, drain(ca.events), "a's leader is revoked")
		next := drain(cb.events)
		require.Len(t, next, 1)
		assert.True(t, next[0].granted)
		assert.NotEqual(t, first[0].session, next[0].session)
		assert.Equal(t, []leader{{"", ha.SessionID{}}}, drain(lb.leaders), "b hears that a's leader is gone")
		b.JobMasterLeaderElection(job).ConfirmLeadership(next[0].session, "jobmaster/b")
		synctest.Wait()
		assert.Equal(t, []leader{{"jobmaster/b", next[0].session}}, drain(lb.leaders))
		assert.Empty(t, drain(la.leaders), "the closed client's listener hears nothing more")
		assert.Empty(t, drain(ca.events))
	})
}

// Each client has its own JobMaster election handle of a job; closing one handle removes only
// the contenders started through it.
func TestJobMasterElectionHandlesArePerClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := embedded.New()
		defer a.Close()
		b := a.NewClient()
		defer b.Close()
		job := jobgraph.NewJobID()
		ea, eb := a.JobMasterElection(job), b.JobMasterElection(job)
		assert.NotSame(t, ea, eb)
		assert.Same(t, eb, b.JobMasterElection(job))
		ca, cb := newContender(), newContender()
		require.NoError(t, eb.Start(cb))
		require.NoError(t, ea.Start(ca))
		assert.EqualError(t, ea.Start(cb), "ha/embedded: contender started twice", "one election across clients")
		synctest.Wait()
		granted := drain(cb.events)
		require.Len(t, granted, 1)
		assert.True(t, ea.HasLeadership(granted[0].session), "one election, one current session")

		require.NoError(t, ea.Close()) // a's waiting contender leaves; b's leader stays
		synctest.Wait()
		assert.Empty(t, drain(ca.events))
		assert.Empty(t, drain(cb.events))
		assert.True(t, eb.HasLeadership(granted[0].session))

		eb.Revoke() // the test hook works on the shared election: b's contender again
		synctest.Wait()
		events := drain(cb.events)
		require.Len(t, events, 2)
		assert.Equal(t, event{}, events[0])
		assert.True(t, events[1].granted)
		require.NoError(t, eb.Close())
	})
}

// The callback goroutine runs while any client is open: the first client's Close does not stop
// the second's callbacks, the last Close ends it, and a client made after that starts it again.
func TestCallbacksRunWhileAnyClientIsOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := embedded.New()
		b := a.NewClient()
		require.NoError(t, a.Close())
		require.NoError(t, a.Close(), "closing twice is harmless")
		c := newContender()
		assert.EqualError(t, a.DispatcherLeaderElection().Start(c), "ha/embedded: Start on a closed Services")
		assert.EqualError(t, a.DispatcherLeaderRetrieval().Start(newListener()), "ha/embedded: LeaderRetrieval.Start on a closed Services")
		require.NoError(t, b.DispatcherLeaderElection().Start(c))
		synctest.Wait()
		require.Len(t, drain(c.events), 1, "b's contender is granted after a closed")
		require.NoError(t, b.Close())
		assert.Equal(t, []event{{}}, drain(c.events), "b's Close revoked it")

		d := b.NewClient() // every client closed: the backend's data stays, callbacks start again
		defer d.Close()
		again := newContender()
		require.NoError(t, d.ResourceManagerLeaderElection().Start(again))
		synctest.Wait()
		events := drain(again.events)
		require.Len(t, events, 1)
		assert.True(t, events[0].granted)
	})
}

// A retrieval may be started again after Stop.
func TestRetrievalRestartsAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := embedded.New()
		defer s.Close()
		r := s.DispatcherLeaderRetrieval()
		l := newListener()
		require.NoError(t, r.Start(l))
		assert.EqualError(t, r.Start(l), "ha/embedded: LeaderRetrieval started twice")
		require.NoError(t, r.Stop())
		require.NoError(t, r.Start(l))
		c := newContender()
		e := s.DispatcherLeaderElection()
		require.NoError(t, e.Start(c))
		synctest.Wait()
		granted := drain(c.events)
		require.Len(t, granted, 1)
		e.ConfirmLeadership(granted[0].session, "dispatcher/1")
		synctest.Wait()
		assert.Equal(t, []leader{{"dispatcher/1", granted[0].session}}, drain(l.leaders))
		require.NoError(t, r.Stop())
		require.NoError(t, e.Close())
	})
}

// TestRevokeAllRevokesEveryElectionTheClientLeads: client a leads the Dispatcher and job x's
// JobMaster, client b the ResourceManager and job y's JobMaster; a.RevokeAll revokes a's two
// leaders and grants them again with new sessions (revocation first), and b's leaders hear
// nothing.
func TestRevokeAllRevokesEveryElectionTheClientLeads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := embedded.New()
		defer a.Close()
		b := a.NewClient()
		defer b.Close()
		x, y := jobgraph.NewJobID(), jobgraph.NewJobID()
		ad, ax, brm, by := newContender(), newContender(), newContender(), newContender()
		require.NoError(t, a.DispatcherLeaderElection().Start(ad))
		require.NoError(t, a.JobMasterLeaderElection(x).Start(ax))
		require.NoError(t, b.ResourceManagerLeaderElection().Start(brm))
		require.NoError(t, b.JobMasterLeaderElection(y).Start(by))
		synctest.Wait()
		first := map[*contender]ha.SessionID{}
		for _, c := range []*contender{ad, ax, brm, by} {
			ev := drain(c.events)
			require.Len(t, ev, 1)
			require.True(t, ev[0].granted)
			first[c] = ev[0].session
		}

		a.RevokeAll()
		synctest.Wait()
		again := map[*contender]ha.SessionID{}
		for _, c := range []*contender{ad, ax} {
			ev := drain(c.events)
			require.Len(t, ev, 2)
			assert.Equal(t, event{}, ev[0], "revoked first")
			assert.True(t, ev[1].granted, "then granted again")
			assert.NotEqual(t, first[c], ev[1].session, "with a new session")
			again[c] = ev[1].session
		}
		assert.True(t, a.DispatcherElection().HasLeadership(again[ad]))
		assert.True(t, a.JobMasterElection(x).HasLeadership(again[ax]))
		assert.Empty(t, drain(brm.events), "b's ResourceManager keeps its leadership")
		assert.Empty(t, drain(by.events), "b's JobMaster keeps its leadership")
		assert.True(t, b.ResourceManagerElection().HasLeadership(first[brm]))
		assert.True(t, b.JobMasterElection(y).HasLeadership(first[by]))

		b.Close()
		b.RevokeAll() // a closed client leads nothing
		synctest.Wait()
		assert.Empty(t, drain(ad.events))
		assert.Empty(t, drain(ax.events))
	})
}
