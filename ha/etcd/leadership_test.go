package etcd

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/checkpointtest"
	"github.com/jobgraph/jobgraph/ha"
)

// closing opens Services over srv under prefix, closed when the test ends.
func closing(t *testing.T, srv *server, prefix string) *Services {
	svc := srv.open(t, prefix)
	t.Cleanup(func() { assert.NoError(t, svc.Close()) })
	return svc
}

// listener records what a retrieval tells it.
type listener struct{ leaders chan published }

func newListener() *listener { return &listener{leaders: make(chan published, 64)} }

func (l *listener) NotifyLeaderAddress(address string, session ha.SessionID) {
	l.leaders <- published{address, session}
}
func (l *listener) HandleError(err error) {}

// await returns the next notification.
func (l *listener) await(t *testing.T) published {
	t.Helper()
	select {
	case p := <-l.leaders:
		return p
	case <-time.After(wait):
		require.FailNow(t, "no leader notification")
	}
	panic("unreachable")
}

// awaitCampaigners waits until n clients' election keys exist under prefix (each campaigning or
// leading), watching the election prefix from the revision it read: a client's Start returns
// before its campaign's key is put, so which of two clients wins next is decided only once both
// keys are there (the older key wins).
func awaitCampaigners(t *testing.T, srv *server, prefix string, n int64) {
	t.Helper()
	c := srv.client(t)
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	election := prefix + "/leader/election/"
	for {
		resp, err := c.Get(ctx, election, clientv3.WithPrefix(), clientv3.WithCountOnly())
		require.NoError(t, err, "%d campaigners under %s", n, election)
		if resp.Count >= n {
			return
		}
		wch := c.Watch(ctx, election, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		select {
		case <-wch:
		case <-ctx.Done():
			require.FailNow(t, "campaigners", "%d of %d under %s within %v", resp.Count, n, election, wait)
		}
	}
}

func leaseOf(svc *Services) (clientv3.LeaseID, ha.SessionID) {
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if svc.term == nil {
		return 0, ha.SessionID{}
	}
	return svc.term.lease, svc.term.session
}

// TestOneSessionForEveryComponent: one client's Dispatcher, ResourceManager and two JobMaster
// contenders are all granted the client's one session, and another client's retrievals report
// each confirmed address with it.
func TestOneSessionForEveryComponent(t *testing.T) {
	srv := startServer(t)
	prefix := newPrefix()
	a, b := closing(t, srv, prefix), closing(t, srv, prefix)
	job1, job2 := jobgraph.NewJobID(), jobgraph.NewJobID()

	elections := []ha.LeaderElection{a.DispatcherLeaderElection(), a.ResourceManagerLeaderElection(),
		a.JobMasterLeaderElection(job1), a.JobMasterLeaderElection(job2)}
	retrievals := []ha.LeaderRetrieval{b.DispatcherLeaderRetrieval(), b.ResourceManagerLeaderRetrieval(),
		b.JobMasterLeaderRetrieval(job1), b.JobMasterLeaderRetrieval(job2)}
	addresses := []string{"dispatcher@a", "resourcemanager@a", "jobmaster-1@a", "jobmaster-2@a"}
	holders := make([]*holder, len(elections))
	listeners := make([]*listener, len(elections))
	for i := range elections {
		listeners[i] = newListener()
		require.NoError(t, retrievals[i].Start(listeners[i]))
		holders[i] = newHolder()
		require.NoError(t, elections[i].Start(holders[i]))
	}
	session := holders[0].awaitGrant(t)
	for i, h := range holders[1:] {
		assert.Equal(t, session, h.awaitGrant(t), "contender %d has the client's session", i+1)
	}
	_, termSession := leaseOf(a)
	assert.Equal(t, termSession, session)
	for i, e := range elections {
		assert.True(t, e.HasLeadership(session))
		e.ConfirmLeadership(session, addresses[i])
	}
	for i, l := range listeners {
		assert.Equal(t, published{addresses[i], session}, l.await(t), "retrieval %d on the other client", i)
	}

	// Closing the client revokes every contender; the retrievals report no leader.
	require.NoError(t, a.Close())
	for i, h := range holders {
		h.awaitRevoke(t)
		assert.False(t, elections[i].HasLeadership(session))
	}
	for _, l := range listeners {
		assert.Equal(t, published{}, l.await(t))
	}
	for _, r := range retrievals {
		require.NoError(t, r.Stop())
	}
}

// TestSecondClientLeadsWhenTheFirstLeaves: of two clients' Dispatcher contenders the first
// leads; the second's writes are refused until the first client's last contender leaves, then
// it is granted with a new session and its retrieval reports its own address.
func TestSecondClientLeadsWhenTheFirstLeaves(t *testing.T) {
	srv := startServer(t)
	prefix := newPrefix()
	a, b := closing(t, srv, prefix), closing(t, srv, prefix)
	ea := a.DispatcherLeaderElection()
	ha1 := newHolder()
	require.NoError(t, ea.Start(ha1))
	sa := ha1.awaitGrant(t)
	ea.ConfirmLeadership(sa, "dispatcher@a")

	l := newListener()
	rb := b.DispatcherLeaderRetrieval()
	require.NoError(t, rb.Start(l))
	assert.Equal(t, published{"dispatcher@a", sa}, l.await(t))

	eb := b.DispatcherLeaderElection()
	hb := newHolder()
	require.NoError(t, eb.Start(hb))
	g := jobgraph.New("refused", jobgraph.Batch)
	g.AddVertex("v", "noop", 1)
	// b has a contender but does not lead: its write is refused and leaves nothing behind.
	require.ErrorIs(t, b.ExecutionPlanStore().Put(t.Context(), g), ha.ErrNotLeader)
	_, err := a.ExecutionPlanStore().Get(t.Context(), g.JobID)
	require.ErrorIs(t, err, ha.ErrNotFound)

	require.NoError(t, ea.Close()) // a's last contender: a resigns
	ha1.awaitRevoke(t)
	assert.Equal(t, published{}, l.await(t), "no leader between a's resignation and b's confirmation")
	sb := hb.awaitGrant(t)
	assert.NotEqual(t, sa, sb)
	eb.ConfirmLeadership(sb, "dispatcher@b")
	assert.Equal(t, published{"dispatcher@b", sb}, l.await(t))
	require.NoError(t, b.ExecutionPlanStore().Put(t.Context(), g))
	require.ErrorIs(t, a.ExecutionPlanStore().Put(t.Context(), g), ha.ErrNotLeader)

	// a's next contender waits behind b; it leads with a third session once b closes.
	ha2 := newHolder()
	ea2 := a.DispatcherLeaderElection()
	require.NoError(t, ea2.Start(ha2))
	require.NoError(t, b.Close())
	hb.awaitRevoke(t)
	s3 := ha2.awaitGrant(t)
	assert.NotEqual(t, sa, s3)
	assert.NotEqual(t, sb, s3)
	got, err := a.ExecutionPlanStore().Get(t.Context(), g.JobID)
	require.NoError(t, err)
	assert.Equal(t, "refused", got.Name)
	require.NoError(t, ea2.Close())
	require.NoError(t, rb.Stop())
}

// TestLeaseRevokedFailsOver: the leader's lease is revoked (what its expiry does): its
// contenders are revoked, each of its writes fails with ha.ErrNotLeader, and the other client is
// granted and recovers the plans, results, checkpoints and counter the first one wrote; the first
// campaigns again with a new session and leads once the second leaves.
func TestLeaseRevokedFailsOver(t *testing.T) {
	srv := startServer(t)
	prefix := newPrefix()
	a, b := closing(t, srv, prefix), closing(t, srv, prefix)
	ctx := t.Context()
	job := jobgraph.NewJobID()

	da, ja := newHolder(), newHolder()
	require.NoError(t, a.DispatcherLeaderElection().Start(da))
	sa := da.awaitGrant(t)
	require.NoError(t, a.JobMasterLeaderElection(job).Start(ja))
	assert.Equal(t, sa, ja.awaitGrant(t))

	g := jobgraph.New("survivor", jobgraph.Streaming)
	g.JobID = job
	g.AddVertex("v", "noop", 2)
	require.NoError(t, a.ExecutionPlanStore().Put(ctx, g))
	done := jobgraph.JobResult{JobID: jobgraph.NewJobID(), Name: "done", Status: jobgraph.JobStatusFinished}
	require.NoError(t, a.JobResultStore().CreateDirty(ctx, done))
	store, err := a.CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(job, 2)
	require.NoError(t, err)
	counter, err := a.CheckpointRecoveryFactory().CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	for range 3 {
		id, err := counter.GetAndIncrement()
		require.NoError(t, err)
		_, err = store.Add(checkpointtest.Sample(id, checkpoint.Checkpoint))
		require.NoError(t, err)
	}

	db := newHolder()
	require.NoError(t, b.DispatcherLeaderElection().Start(db))
	lease, _ := leaseOf(a)
	require.NotZero(t, lease)
	_, err = srv.client(t).Revoke(ctx, lease)
	require.NoError(t, err)

	da.awaitRevoke(t)
	ja.awaitRevoke(t)
	sb := db.awaitGrant(t)
	assert.NotEqual(t, sa, sb)

	// Every write of a is refused now.
	other := jobgraph.New("late", jobgraph.Batch)
	other.AddVertex("v", "noop", 1)
	assert.ErrorIs(t, a.ExecutionPlanStore().Put(ctx, other), ha.ErrNotLeader, "plan Put")
	assert.ErrorIs(t, a.ExecutionPlanStore().Remove(ctx, job), ha.ErrNotLeader, "plan Remove")
	assert.ErrorIs(t, a.JobResultStore().CreateDirty(ctx, jobgraph.JobResult{JobID: jobgraph.NewJobID()}), ha.ErrNotLeader, "CreateDirty")
	assert.ErrorIs(t, a.JobResultStore().MarkClean(ctx, done.JobID), ha.ErrNotLeader, "MarkClean")
	_, err = store.Add(checkpointtest.Sample(4, checkpoint.Checkpoint))
	assert.ErrorIs(t, err, ha.ErrNotLeader, "checkpoint Add")
	_, err = counter.GetAndIncrement()
	assert.ErrorIs(t, err, ha.ErrNotLeader, "counter GetAndIncrement")
	assert.ErrorIs(t, counter.SetCount(10), ha.ErrNotLeader, "counter SetCount")
	assert.ErrorIs(t, store.Shutdown(true), ha.ErrNotLeader, "checkpoint Shutdown(discard)")
	assert.ErrorIs(t, counter.Shutdown(true), ha.ErrNotLeader, "counter Shutdown(discard)")

	// a's leader information went with its lease; b's JobMaster information of the job is
	// beyond a's reach: a's CleanupJobData is refused and b's stays.
	assert.NoError(t, a.CleanupJobData(ctx, job), "nothing of a's is left to remove")
	jb := newHolder()
	eb := b.JobMasterLeaderElection(job)
	require.NoError(t, eb.Start(jb))
	require.Equal(t, sb, jb.awaitGrant(t))
	l := newListener()
	rb := b.JobMasterLeaderRetrieval(job)
	require.NoError(t, rb.Start(l))
	eb.ConfirmLeadership(sb, "jobmaster@b")
	assert.Equal(t, published{"jobmaster@b", sb}, l.await(t))
	assert.ErrorIs(t, a.CleanupJobData(ctx, job), ha.ErrNotLeader, "CleanupJobData")
	info, err := srv.client(t).Get(ctx, prefix+"/leader/info/jobmaster/"+job.String(), clientv3.WithCountOnly())
	require.NoError(t, err)
	assert.Equal(t, int64(1), info.Count, "the refused CleanupJobData deleted nothing")
	require.NoError(t, rb.Stop())
	require.NoError(t, eb.Close())
	jb.awaitRevoke(t)

	// b recovers everything a wrote, and nothing a tried after its lease was gone.
	ids, err := b.ExecutionPlanStore().JobIDs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []jobgraph.JobID{job}, ids)
	got, err := b.ExecutionPlanStore().Get(ctx, job)
	require.NoError(t, err)
	assert.Equal(t, "survivor", got.Name)
	dirty, err := b.JobResultStore().DirtyResults(ctx)
	require.NoError(t, err)
	assert.Equal(t, []jobgraph.JobResult{done}, dirty)
	storeB, err := b.CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(job, 2)
	require.NoError(t, err)
	assert.Equal(t, []checkpoint.CompletedCheckpoint{checkpointtest.Sample(2, checkpoint.Checkpoint), checkpointtest.Sample(3, checkpoint.Checkpoint)}, storeB.All())
	counterB, err := b.CheckpointRecoveryFactory().CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	next, err := counterB.GetAndIncrement()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(4), next)
	require.NoError(t, b.JobResultStore().MarkClean(ctx, done.JobID))
	require.NoError(t, storeB.Shutdown(false))
	require.NoError(t, counterB.Shutdown(false))

	// a campaigns again with a new lease and session, and leads once b is gone.
	require.NoError(t, b.Close())
	db.awaitRevoke(t)
	s3 := da.awaitGrant(t)
	assert.Equal(t, s3, ja.awaitGrant(t))
	assert.NotEqual(t, sa, s3)
	assert.NotEqual(t, sb, s3)
	newLease, _ := leaseOf(a)
	assert.NotEqual(t, lease, newLease)
	require.NoError(t, a.ExecutionPlanStore().Remove(ctx, job))
}

// TestRetrievalIgnoresInformationOfAnotherSession: leader information whose session is not the
// current election leader's (a stale or foreign write) is never reported.
func TestRetrievalIgnoresInformationOfAnotherSession(t *testing.T) {
	srv := startServer(t)
	prefix := newPrefix()
	a := closing(t, srv, prefix)
	raw := srv.client(t)
	stale, _ := json.Marshal(leaderInfo{Address: "dispatcher@dead", Session: ha.NewSessionID().String()})
	_, err := raw.Put(t.Context(), prefix+"/leader/info/dispatcher", string(stale))
	require.NoError(t, err)

	l := newListener()
	r := a.DispatcherLeaderRetrieval()
	require.NoError(t, r.Start(l))
	h := newHolder()
	e := a.DispatcherLeaderElection()
	require.NoError(t, e.Start(h))
	s := h.awaitGrant(t)
	e.ConfirmLeadership(s, "dispatcher@a")
	assert.Equal(t, published{"dispatcher@a", s}, l.await(t), "the first notification is the leader's own")

	resp, err := raw.Get(t.Context(), prefix+"/leader/info/dispatcher")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	lease, _ := leaseOf(a)
	assert.Equal(t, int64(lease), resp.Kvs[0].Lease, "leader information lives on the term's lease")
	require.NoError(t, e.Close())
	h.awaitRevoke(t)
	assert.Equal(t, published{}, l.await(t))
	require.NoError(t, r.Stop())
}

// TestCleanupJobDataDeletesTheJobMasterLeaderInformation: CleanupJobData deletes the job's
// leader information key, and only that job's.
func TestCleanupJobDataDeletesTheJobMasterLeaderInformation(t *testing.T) {
	srv := startServer(t)
	prefix := newPrefix()
	a := closing(t, srv, prefix)
	job, kept := jobgraph.NewJobID(), jobgraph.NewJobID()
	l := newListener()
	r := a.JobMasterLeaderRetrieval(kept)
	require.NoError(t, r.Start(l))
	for _, j := range []jobgraph.JobID{job, kept} {
		h := newHolder()
		e := a.JobMasterLeaderElection(j)
		require.NoError(t, e.Start(h))
		e.ConfirmLeadership(h.awaitGrant(t), "jobmaster@"+j.String())
	}
	_, s := leaseOf(a)
	assert.Equal(t, published{"jobmaster@" + kept.String(), s}, l.await(t))
	raw := srv.client(t)
	require.NoError(t, a.CleanupJobData(t.Context(), job))
	resp, err := raw.Get(t.Context(), prefix+"/leader/info/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	require.NoError(t, err)
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	assert.Equal(t, []string{prefix + "/leader/info/jobmaster/" + kept.String()}, keys)
	require.NoError(t, a.CleanupJobData(t.Context(), job), "removing nothing is not an error")
	require.NoError(t, r.Stop())
}

// TestCheckpointKeys: the store writes each retained checkpoint's metadata at its zero-padded
// key, deletes the subsumed ones' in the same step, and Shutdown(true) deletes every key of the
// job and the counter's.
func TestCheckpointKeys(t *testing.T) {
	srv := startServer(t)
	prefix := newPrefix()
	a := closing(t, srv, prefix)
	lead(t, a)
	job := jobgraph.NewJobID()
	store, err := a.CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(job, 2)
	require.NoError(t, err)
	counter, err := a.CheckpointRecoveryFactory().CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	for range 3 {
		id, err := counter.GetAndIncrement()
		require.NoError(t, err)
		_, err = store.Add(checkpointtest.Sample(id, checkpoint.Checkpoint))
		require.NoError(t, err)
	}
	raw := srv.client(t)
	keys := func() map[string]string {
		resp, err := raw.Get(t.Context(), prefix+"/check", clientv3.WithPrefix())
		require.NoError(t, err)
		out := map[string]string{}
		for _, kv := range resp.Kvs {
			out[string(kv.Key)] = string(kv.Value)
		}
		return out
	}
	got := keys()
	cp := prefix + "/checkpoints/" + job.String() + "/"
	assert.ElementsMatch(t, []string{cp + "00000000000000000002", cp + "00000000000000000003", prefix + "/checkpoint-counter/" + job.String()}, mapKeys(got))
	assert.Equal(t, "4", got[prefix+"/checkpoint-counter/"+job.String()])
	var stored checkpoint.CompletedCheckpoint
	require.NoError(t, json.Unmarshal([]byte(got[cp+"00000000000000000003"]), &stored))
	assert.Equal(t, checkpointtest.Sample(3, checkpoint.Checkpoint), stored)

	require.NoError(t, store.Shutdown(true))
	require.NoError(t, counter.Shutdown(true))
	assert.Empty(t, keys())
}

func mapKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestOptionsErrors: bad options are refused with an error naming them.
func TestOptionsErrors(t *testing.T) {
	for name, c := range map[string]struct {
		o    Options
		want string
	}{
		"neither":        {Options{}, "exactly one of Options.Endpoints and Options.Client"},
		"both":           {Options{Endpoints: []string{"x"}, Client: &clientv3.Client{}}, "exactly one"},
		"prefix slash":   {Options{Endpoints: []string{"x"}, Prefix: "/a/"}, `Options.Prefix "/a/"`},
		"prefix no root": {Options{Endpoints: []string{"x"}, Prefix: "a"}, `Options.Prefix "a"`},
		"ttl fraction":   {Options{Endpoints: []string{"x"}, SessionTTL: 1500 * time.Millisecond}, "Options.SessionTTL 1.5s"},
		"ttl small":      {Options{Endpoints: []string{"x"}, SessionTTL: time.Millisecond}, "Options.SessionTTL 1ms"},
		"timeout":        {Options{Endpoints: []string{"x"}, RequestTimeout: -time.Second}, "Options.RequestTimeout -1s"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := New(c.o)
			assert.Nil(t, s)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// TestClientsRacingOneElection: two clients start their Dispatcher contenders at once; exactly
// one is granted, the other's write is refused, and the other leads once the first closes.
func TestClientsRacingOneElection(t *testing.T) {
	srv := startServer(t)
	prefix := newPrefix()
	svcs := []*Services{closing(t, srv, prefix), closing(t, srv, prefix)}
	grants := make(chan int, 2)
	holders := []*holder{newHolder(), newHolder()}
	for i, svc := range svcs {
		go func() {
			if svc.DispatcherLeaderElection().Start(holders[i]) == nil {
				grants <- i
			}
		}()
	}
	<-grants
	<-grants
	var first int
	var session ha.SessionID
	select {
	case session = <-holders[0].events:
		first = 0
	case session = <-holders[1].events:
		first = 1
	case <-time.After(wait):
		require.FailNow(t, "neither client was granted")
	}
	require.NotEqual(t, ha.SessionID{}, session)
	second := 1 - first
	_, s := leaseOf(svcs[second])
	assert.Equal(t, ha.SessionID{}, s, "the other client does not lead")
	err := svcs[second].JobResultStore().CreateDirty(t.Context(), jobgraph.JobResult{JobID: jobgraph.NewJobID(), Status: jobgraph.JobStatusFinished})
	require.ErrorIs(t, err, ha.ErrNotLeader)

	require.NoError(t, svcs[first].Close())
	holders[first].awaitRevoke(t)
	assert.NotEqual(t, session, holders[second].awaitGrant(t))
}

// TestContendersOfOneComponentQueue: a second contender on a component of a leading client
// waits; when the first leaves, it is granted the client's same session (the client still
// leads: another contender holds it), and its confirmation is what retrieval reports.
func TestContendersOfOneComponentQueue(t *testing.T) {
	srv := startServer(t)
	a := closing(t, srv, newPrefix())
	job := jobgraph.NewJobID()
	_, session := lead(t, a)
	l := newListener()
	r := a.JobMasterLeaderRetrieval(job)
	require.NoError(t, r.Start(l))

	first, second := newHolder(), newHolder()
	e1, e2 := a.JobMasterLeaderElection(job), a.JobMasterLeaderElection(job)
	require.NoError(t, e1.Start(first))
	require.NoError(t, e2.Start(second))
	assert.Equal(t, session, first.awaitGrant(t))
	assert.False(t, e2.HasLeadership(session), "the second contender waits")
	e2.ConfirmLeadership(session, "jobmaster/ignored")
	e1.ConfirmLeadership(session, "jobmaster/1")
	assert.Equal(t, published{"jobmaster/1", session}, l.await(t))

	require.NoError(t, e1.Close())
	first.awaitRevoke(t)
	assert.Equal(t, session, second.awaitGrant(t))
	assert.True(t, e2.HasLeadership(session))
	assert.False(t, e1.HasLeadership(session))
	e2.ConfirmLeadership(session, "jobmaster/2")
	// The first's information is deleted and the second's written, possibly in one transaction.
	for p := l.await(t); p != (published{"jobmaster/2", session}); p = l.await(t) {
		assert.Equal(t, published{}, p)
	}
	require.NoError(t, e2.Close())
	second.awaitRevoke(t)
	require.NoError(t, r.Stop())
}

// TestConfirmThenCloseLeavesNoInformation: a contender that confirms and leaves at once leaves
// no leader information behind, whether its put was written before the delete or dropped.
func TestConfirmThenCloseLeavesNoInformation(t *testing.T) {
	srv := startServer(t)
	prefix := newPrefix()
	a := closing(t, srv, prefix)
	_, session := lead(t, a)
	gone, kept := jobgraph.NewJobID(), jobgraph.NewJobID()
	e := a.JobMasterLeaderElection(gone)
	h := newHolder()
	require.NoError(t, e.Start(h))
	require.Equal(t, session, h.awaitGrant(t))
	e.ConfirmLeadership(session, "jobmaster/gone")
	require.NoError(t, e.Close())
	h.awaitRevoke(t)

	// The writer takes every pending write at once: once the next one is visible, the earlier
	// ones were made (or dropped) too.
	l := newListener()
	r := a.JobMasterLeaderRetrieval(kept)
	require.NoError(t, r.Start(l))
	e2 := a.JobMasterLeaderElection(kept)
	h2 := newHolder()
	require.NoError(t, e2.Start(h2))
	require.Equal(t, session, h2.awaitGrant(t))
	e2.ConfirmLeadership(session, "jobmaster/kept")
	assert.Equal(t, published{"jobmaster/kept", session}, l.await(t))
	resp, err := srv.client(t).Get(t.Context(), prefix+"/leader/info/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	require.NoError(t, err)
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	assert.Equal(t, []string{prefix + "/leader/info/jobmaster/" + kept.String()}, keys)

	// Information that was written is deleted when its contender leaves (the client still leads).
	require.NoError(t, e2.Close())
	h2.awaitRevoke(t)
	assert.Equal(t, published{}, l.await(t))
	require.NoError(t, r.Stop())
}

// recorder is a contender that appends its name to a shared log on each callback (callbacks run
// one at a time, so the log is their order).
type recorder struct {
	name string
	log  chan string
}

func (r *recorder) GrantLeadership(ha.SessionID) { r.log <- "grant " + r.name }
func (r *recorder) RevokeLeadership()            { r.log <- "revoke " + r.name }
func (r *recorder) HandleError(error)            {}

// TestTermGrantsInStartOrder: when a client's term starts, its contenders are granted in the
// order they were started, and revoked in it when the term ends.
func TestTermGrantsInStartOrder(t *testing.T) {
	srv := startServer(t)
	prefix := newPrefix()
	b := closing(t, srv, prefix)
	lead(t, b)
	a := closing(t, srv, prefix)
	log := make(chan string, 16)
	names := []string{"dispatcher", "resourcemanager", "jobmaster-2", "jobmaster-1"}
	elections := []ha.LeaderElection{a.DispatcherLeaderElection(), a.ResourceManagerLeaderElection(),
		a.JobMasterLeaderElection(jobgraph.NewJobID()), a.JobMasterLeaderElection(jobgraph.NewJobID())}
	for i, e := range elections {
		require.NoError(t, e.Start(&recorder{names[i], log}))
	}
	require.NoError(t, b.Close()) // a's term starts
	next := func() string {
		select {
		case s := <-log:
			return s
		case <-time.After(wait):
			require.FailNow(t, "no callback")
		}
		return ""
	}
	for _, n := range names {
		assert.Equal(t, "grant "+n, next())
	}
	require.NoError(t, a.Close())
	for _, n := range names {
		assert.Equal(t, "revoke "+n, next())
	}
}

// TestDropLeadershipRevokesAllAndCampaignsAgain: the leading client drops its leadership: its
// Dispatcher and JobMaster contenders are revoked, its writes refused, its lease is gone on the
// server (the election key and leader information with it) while its plan stays, and the
// standby client wins; once the standby leaves, the first campaigns again and is granted with a
// new session and a new lease.
func TestDropLeadershipRevokesAllAndCampaignsAgain(t *testing.T) {
	srv := startServer(t)
	prefix := newPrefix()
	a, b := closing(t, srv, prefix), closing(t, srv, prefix)
	ctx := t.Context()
	job := jobgraph.NewJobID()
	da, ja := newHolder(), newHolder()
	require.NoError(t, a.DispatcherLeaderElection().Start(da))
	sa := da.awaitGrant(t)
	ea := a.JobMasterLeaderElection(job)
	require.NoError(t, ea.Start(ja))
	require.Equal(t, sa, ja.awaitGrant(t))
	ea.ConfirmLeadership(sa, "jobmaster@a")
	g := jobgraph.New("kept", jobgraph.Batch)
	g.JobID = job
	g.AddVertex("v", "noop", 1)
	require.NoError(t, a.ExecutionPlanStore().Put(ctx, g))
	db := newHolder()
	require.NoError(t, b.DispatcherLeaderElection().Start(db))
	lease, _ := leaseOf(a)
	require.NotZero(t, lease)
	// b's key must be in the election before a drops: otherwise a's new campaign may put its
	// key first and win again (b's grant never came under load).
	awaitCampaigners(t, srv, prefix, 2)

	require.NoError(t, a.DropLeadership(ctx))
	assert.ErrorIs(t, a.ExecutionPlanStore().Remove(ctx, job), ha.ErrNotLeader, "refused at once")
	da.awaitRevoke(t)
	ja.awaitRevoke(t)
	sb := db.awaitGrant(t)
	assert.NotEqual(t, sa, sb)
	ttl, err := srv.client(t).TimeToLive(ctx, lease)
	require.NoError(t, err)
	assert.Equal(t, int64(-1), ttl.TTL, "the lease is revoked on the server")
	info, err := srv.client(t).Get(ctx, prefix+"/leader/info/jobmaster/"+job.String(), clientv3.WithCountOnly())
	require.NoError(t, err)
	assert.Zero(t, info.Count, "a's leader information went with its lease")
	ids, err := b.ExecutionPlanStore().JobIDs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []jobgraph.JobID{job}, ids, "the plan stays")
	assert.NoError(t, a.DropLeadership(ctx), "not leading: nothing to drop")

	require.NoError(t, b.Close())
	db.awaitRevoke(t)
	s2 := da.awaitGrant(t)
	assert.Equal(t, s2, ja.awaitGrant(t))
	assert.NotEqual(t, sa, s2)
	assert.NotEqual(t, sb, s2)
	newLease, _ := leaseOf(a)
	assert.NotEqual(t, lease, newLease)
	require.NoError(t, a.ExecutionPlanStore().Remove(ctx, job), "a writes again")
}
