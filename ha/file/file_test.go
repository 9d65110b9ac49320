package file_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/checkpointtest"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/file"
	"github.com/jobgraph/jobgraph/ha/hatest"
)

// ---- recorders ----

type event struct {
	granted bool // false: revoked
	session ha.SessionID
}

type contender struct {
	events chan event
	errs   chan error
}

func newContender() *contender {
	return &contender{events: make(chan event, 16), errs: make(chan error, 16)}
}
func (c *contender) GrantLeadership(s ha.SessionID) { c.events <- event{true, s} }
func (c *contender) RevokeLeadership()              { c.events <- event{} }
func (c *contender) HandleError(err error)          { c.errs <- err }

type leader struct {
	address string
	session ha.SessionID
}

type listener struct {
	leaders chan leader
	errs    chan error
}

func newListener() *listener {
	return &listener{leaders: make(chan leader, 16), errs: make(chan error, 16)}
}
func (l *listener) NotifyLeaderAddress(a string, s ha.SessionID) { l.leaders <- leader{a, s} }
func (l *listener) HandleError(err error)                        { l.errs <- err }

func await[E any](t *testing.T, ch <-chan E, what string) E {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(hatest.Timeout):
		t.Fatalf("no %s within %v", what, hatest.Timeout)
		panic("unreachable")
	}
}

func awaitGrant(t *testing.T, c *contender) ha.SessionID {
	t.Helper()
	e := await(t, c.events, "GrantLeadership")
	require.True(t, e.granted, "got RevokeLeadership where GrantLeadership was due")
	require.NotEqual(t, ha.SessionID{}, e.session)
	return e.session
}

func awaitRevoke(t *testing.T, c *contender) {
	t.Helper()
	e := await(t, c.events, "RevokeLeadership")
	require.False(t, e.granted, "got GrantLeadership(%s) where RevokeLeadership was due", e.session)
}

func open(t *testing.T, dir string) *file.Services {
	t.Helper()
	s, err := file.New(file.Options{Dir: dir, PollInterval: testPoll})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

// awaitAttempts returns a channel that gets a value after each failed try of the lock by s.
func failedAttempts(s *file.Services) chan struct{} {
	ch := make(chan struct{}, 1024)
	s.SetAfterAttempt(func(got bool) {
		if !got {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	})
	return ch
}

// ---- options ----

func TestNewRejectsBadOptions(t *testing.T) {
	_, err := file.New(file.Options{})
	assert.EqualError(t, err, "ha/file: Options.Dir is empty")
	_, err = file.New(file.Options{Dir: t.TempDir(), PollInterval: -time.Second})
	assert.EqualError(t, err, "ha/file: Options.PollInterval is -1s, negative (0 means 100ms)")
}

// ---- the latch record ----

func TestLatchRecordRejectsATornWrite(t *testing.T) {
	old, current := ha.NewSessionID(), ha.NewSessionID()
	rec := file.LatchRecord(current)
	require.Len(t, rec, 46)
	got, ok := file.ParseLatch(rec)
	require.True(t, ok)
	assert.Equal(t, current, got)

	got, ok = file.ParseLatch(nil)
	assert.True(t, ok, "an empty latch: nobody ever led")
	assert.Equal(t, ha.SessionID{}, got)

	// A reader racing the in-place write sees the new record's first bytes over the old one's.
	torn := append(append([]byte{}, rec[:20]...), file.LatchRecord(old)[20:]...)
	_, ok = file.ParseLatch(torn)
	assert.False(t, ok, "a torn record is rejected by its checksum")
	_, ok = file.ParseLatch(rec[:30])
	assert.False(t, ok, "a short record is rejected")
}

// ---- two clients in one process ----

// Two clients over one directory in one process exclude each other: flock locks belong to the
// open file description, and each client opens the latch itself.
func TestTwoClientsInOneProcessExcludeEachOther(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	ca := newContender()
	require.NoError(t, a.DispatcherLeaderElection().Start(ca))
	sa := awaitGrant(t, ca)

	bAttempts := failedAttempts(b)
	cb := newContender()
	eb := b.JobMasterLeaderElection(jobgraph.NewJobID())
	require.NoError(t, eb.Start(cb))
	for range 3 { // b tried the lock three times while a holds it
		await(t, bAttempts, "a failed try of the lock by the second client")
	}
	_, leading := b.Session()
	assert.False(t, leading, "the second client does not lead while the first holds the lock")
	select {
	case e := <-cb.events:
		t.Fatalf("the second client's contender got %+v while the first client leads", e)
	default:
	}
	got, leading := a.Session()
	assert.True(t, leading)
	assert.Equal(t, sa, got)

	// The first client closes: the second is granted with a new session.
	require.NoError(t, a.Close())
	awaitRevoke(t, ca)
	sb := awaitGrant(t, cb)
	assert.NotEqual(t, sa, sb, "the next leader draws a new session")
	assert.True(t, eb.HasLeadership(sb))
}

// What a client that does not lead writes is refused with ha.ErrNotLeader and changes nothing;
// it reads what the leader wrote.
func TestStandbyWritesAreRefusedAndItReadsTheLeaders(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	leaderSvc, _ := leadingServices(t, dir)
	t.Cleanup(func() { assert.NoError(t, leaderSvc.Close()) })
	standby := open(t, dir)
	attempts := failedAttempts(standby)
	require.NoError(t, standby.DispatcherLeaderElection().Start(newContender()))
	await(t, attempts, "a failed try of the lock by the standby")

	g := jobgraph.New("written by the leader", jobgraph.Batch)
	g.AddVertex("v", "noop", 1)
	require.NoError(t, leaderSvc.ExecutionPlanStore().Put(ctx, g))
	done := jobgraph.JobResult{JobID: jobgraph.NewJobID(), Name: "done", Status: jobgraph.JobStatusFinished}
	require.NoError(t, leaderSvc.JobResultStore().CreateDirty(ctx, done))
	leaderStore, err := leaderSvc.CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(g.JobID, 1)
	require.NoError(t, err)
	_, err = leaderStore.Add(checkpointtest.Sample(1, checkpoint.Checkpoint))
	require.NoError(t, err)

	other := jobgraph.New("written by the standby", jobgraph.Batch)
	other.AddVertex("v", "noop", 1)
	plans, results := standby.ExecutionPlanStore(), standby.JobResultStore()
	assert.ErrorIs(t, plans.Put(ctx, other), ha.ErrNotLeader)
	assert.ErrorIs(t, plans.Remove(ctx, g.JobID), ha.ErrNotLeader)
	assert.ErrorIs(t, results.CreateDirty(ctx, jobgraph.JobResult{JobID: other.JobID, Status: jobgraph.JobStatusFailed}), ha.ErrNotLeader)
	assert.ErrorIs(t, results.MarkClean(ctx, done.JobID), ha.ErrNotLeader)
	assert.ErrorIs(t, standby.CleanupJobData(ctx, g.JobID), ha.ErrNotLeader)
	store, err := standby.CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(g.JobID, 1)
	require.NoError(t, err, "opening a store reads; it is not fenced")
	_, err = store.Add(checkpointtest.Sample(2, checkpoint.Checkpoint))
	assert.ErrorIs(t, err, ha.ErrNotLeader)
	assert.ErrorIs(t, store.Shutdown(true), ha.ErrNotLeader)
	counter, err := standby.CheckpointRecoveryFactory().CreateCheckpointIDCounter(g.JobID)
	require.NoError(t, err)
	_, err = counter.GetAndIncrement()
	assert.ErrorIs(t, err, ha.ErrNotLeader)
	assert.ErrorIs(t, counter.SetCount(10), ha.ErrNotLeader)
	assert.ErrorIs(t, counter.Shutdown(true), ha.ErrNotLeader)

	// Nothing changed, and the standby reads the leader's data.
	for name, s := range map[string]*file.Services{"leader": leaderSvc, "standby": standby} {
		ids, err := s.ExecutionPlanStore().JobIDs(ctx)
		require.NoError(t, err)
		assert.Equal(t, []jobgraph.JobID{g.JobID}, ids, name)
		got, err := s.ExecutionPlanStore().Get(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, "written by the leader", got.Name, name)
		dirty, err := s.JobResultStore().DirtyResults(ctx)
		require.NoError(t, err)
		assert.Equal(t, []jobgraph.JobResult{done}, dirty, name)
		_, err = s.JobResultStore().Get(ctx, other.JobID)
		assert.ErrorIs(t, err, ha.ErrNotFound, name)
		reopened, err := s.CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(g.JobID, 1)
		require.NoError(t, err)
		latest, ok := reopened.Latest()
		require.True(t, ok, name)
		assert.Equal(t, checkpointtest.Sample(1, checkpoint.Checkpoint), latest, name)
		c, err := s.CheckpointRecoveryFactory().CreateCheckpointIDCounter(g.JobID)
		require.NoError(t, err)
		next, err := c.Get()
		require.NoError(t, err)
		assert.Equal(t, checkpoint.CheckpointID(1), next, name)
	}
}

// A standby's retrieval reports the leader's confirmed address and session, no leader once the
// leader closed, and the next leader once it confirmed; never the closed leader again.
func TestRetrievalFollowsTheLeaderAcrossClients(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	l := newListener()
	r := b.ResourceManagerLeaderRetrieval()
	require.NoError(t, r.Start(l))
	t.Cleanup(func() { assert.NoError(t, r.Stop()) })

	ca := newContender()
	ea := a.ResourceManagerLeaderElection()
	require.NoError(t, ea.Start(ca))
	sa := awaitGrant(t, ca)
	ea.ConfirmLeadership(sa, "rm/a")
	assert.Equal(t, leader{"rm/a", sa}, await(t, l.leaders, "the first leader"))

	cb := newContender()
	eb := b.ResourceManagerLeaderElection()
	require.NoError(t, eb.Start(cb))
	require.NoError(t, a.Close())
	awaitRevoke(t, ca)
	sb := awaitGrant(t, cb)
	assert.Equal(t, leader{"", ha.SessionID{}}, await(t, l.leaders, "no leader"))
	eb.ConfirmLeadership(sa, "rm/stale") // not b's session: ignored
	eb.ConfirmLeadership(sb, "rm/b")
	assert.Equal(t, leader{"rm/b", sb}, await(t, l.leaders, "the next leader"))
	assert.Empty(t, l.errs)
	assert.Empty(t, ca.errs)
	assert.Empty(t, cb.errs)
	require.NoError(t, eb.Close())
}

// ---- recovery from the directory ----

func TestANewClientRecoversEverything(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first, _ := leadingServices(t, dir)
	g1, g2 := jobgraph.New("one", jobgraph.Streaming), jobgraph.New("two", jobgraph.Batch)
	g1.AddVertex("a", "noop", 2)
	g2.AddVertex("b", "noop", 3)
	for _, g := range []*jobgraph.JobGraph{g1, g2} {
		require.NoError(t, first.ExecutionPlanStore().Put(ctx, g))
	}
	dirty := jobgraph.JobResult{JobID: jobgraph.NewJobID(), Name: "dirty", Status: jobgraph.JobStatusFailed,
		Failure: &jobgraph.ErrorInfo{Message: "boom", Timestamp: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	clean := jobgraph.JobResult{JobID: jobgraph.NewJobID(), Name: "clean", Status: jobgraph.JobStatusFinished}
	require.NoError(t, first.JobResultStore().CreateDirty(ctx, dirty))
	require.NoError(t, first.JobResultStore().CreateDirty(ctx, clean))
	require.NoError(t, first.JobResultStore().MarkClean(ctx, clean.JobID))
	store, err := first.CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(g1.JobID, 2)
	require.NoError(t, err)
	counter, err := first.CheckpointRecoveryFactory().CreateCheckpointIDCounter(g1.JobID)
	require.NoError(t, err)
	for range 3 {
		id, err := counter.GetAndIncrement()
		require.NoError(t, err)
		_, err = store.Add(checkpointtest.Sample(id, checkpoint.Checkpoint))
		require.NoError(t, err)
	}
	require.NoError(t, store.Shutdown(false))
	require.NoError(t, counter.Shutdown(false))
	require.NoError(t, first.Close())

	// The files, under Flink's names.
	for _, name := range []string{
		"plans/" + g1.JobID.String() + ".json",
		"job-result-store/" + dirty.JobID.String() + "_DIRTY.json",
		"job-result-store/" + clean.JobID.String() + ".json",
		"checkpoints/" + g1.JobID.String() + "/checkpoint-id-counter",
		"leader/latch",
	} {
		assert.FileExists(t, filepath.Join(dir, name))
	}
	assert.NoFileExists(t, filepath.Join(dir, "job-result-store", clean.JobID.String()+"_DIRTY.json"))

	second, _ := leadingServices(t, dir)
	t.Cleanup(func() { assert.NoError(t, second.Close()) })
	ids, err := second.ExecutionPlanStore().JobIDs(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []jobgraph.JobID{g1.JobID, g2.JobID}, ids)
	got, err := second.ExecutionPlanStore().Get(ctx, g2.JobID)
	require.NoError(t, err)
	assert.Equal(t, clone(t, g2), got)
	dirties, err := second.JobResultStore().DirtyResults(ctx)
	require.NoError(t, err)
	assert.Equal(t, []jobgraph.JobResult{dirty}, dirties)
	entry, err := second.JobResultStore().Get(ctx, clean.JobID)
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: clean, Clean: true}, entry)
	recovered, err := second.CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(g1.JobID, 2)
	require.NoError(t, err)
	assert.Equal(t, []checkpoint.CompletedCheckpoint{checkpointtest.Sample(2, checkpoint.Checkpoint), checkpointtest.Sample(3, checkpoint.Checkpoint)}, recovered.All())
	c2, err := second.CheckpointRecoveryFactory().CreateCheckpointIDCounter(g1.JobID)
	require.NoError(t, err)
	next, err := c2.GetAndIncrement()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(4), next, "the counter goes on")
}

func clone(t *testing.T, g *jobgraph.JobGraph) *jobgraph.JobGraph {
	t.Helper()
	c, err := g.Clone()
	require.NoError(t, err)
	return c
}

// A temp file a crash left half-written (the write's first step) is never read as an entry, and
// New leaves it alone (it could be another process's write in progress).
func TestHalfWrittenTempFilesAreIgnored(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	job := jobgraph.NewJobID()
	half := map[string]string{
		"plans/." + job.String() + ".json.tmp-123456":                                              `{"jobId":"` + job.String() + `","name":"ha`,
		"job-result-store/." + job.String() + "_DIRTY.json.tmp-99":                                 `{"result":{"jobId":"`,
		"job-result-store/." + job.String() + ".json.tmp-98":                                       `{"res`,
		"checkpoints/" + job.String() + "/checkpoints/.checkpoint-00000000000000000007.json.tmp-1": `{"jobId":`,
		"leader/.resource_manager.json.tmp-5":                                                      `{"address":"jm`,
	}
	for name, content := range half {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}

	s, session := leadingServices(t, dir)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	ids, err := s.ExecutionPlanStore().JobIDs(ctx)
	require.NoError(t, err)
	assert.Empty(t, ids)
	_, err = s.ExecutionPlanStore().Get(ctx, job)
	assert.ErrorIs(t, err, ha.ErrNotFound)
	dirty, err := s.JobResultStore().DirtyResults(ctx)
	require.NoError(t, err)
	assert.Empty(t, dirty)
	_, err = s.JobResultStore().Get(ctx, job)
	assert.ErrorIs(t, err, ha.ErrNotFound)
	store, err := s.CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(job, 1)
	require.NoError(t, err)
	assert.Empty(t, store.All())
	l := newListener()
	r := s.ResourceManagerLeaderRetrieval()
	require.NoError(t, r.Start(l))
	e := s.ResourceManagerLeaderElection()
	c := newContender()
	require.NoError(t, e.Start(c))
	assert.Equal(t, session, awaitGrant(t, c))
	e.ConfirmLeadership(session, "resourcemanager/1")
	assert.Equal(t, leader{"resourcemanager/1", session}, await(t, l.leaders, "the leader"))
	require.NoError(t, r.Stop())
	require.NoError(t, e.Close())
	assert.Empty(t, l.errs)

	// Writes of the same entries work, and the temp files are still there.
	g := jobgraph.New("after the crash", jobgraph.Batch)
	g.JobID = job
	g.AddVertex("v", "noop", 1)
	require.NoError(t, s.ExecutionPlanStore().Put(ctx, g))
	require.NoError(t, s.JobResultStore().CreateDirty(ctx, jobgraph.JobResult{JobID: job, Status: jobgraph.JobStatusFinished}))
	for name := range half {
		assert.FileExists(t, filepath.Join(dir, name))
	}
}

// ---- the checkpoint suites, through the CheckpointRecoveryFactory of a leading client ----

func TestCheckpointConformance(t *testing.T) {
	s, _ := leadingServices(t, t.TempDir())
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	f := s.CheckpointRecoveryFactory()
	checkpointtest.TestCompletedCheckpointStore(t, func(t *testing.T, maxRetained int) checkpoint.CompletedCheckpointStore {
		store, err := f.CreateRecoveredCompletedCheckpointStore(jobgraph.NewJobID(), maxRetained)
		require.NoError(t, err)
		return store
	})
	checkpointtest.TestCheckpointIDCounter(t, func(t *testing.T) checkpoint.CheckpointIDCounter {
		c, err := f.CreateCheckpointIDCounter(jobgraph.NewJobID())
		require.NoError(t, err)
		return c
	})
}

// ---- leadership within one client ----

// The client leads every component with one session; closing its last election gives the
// leadership up, and the next contender is granted with a new session.
func TestOneSessionForEveryComponentAndResignWithTheLast(t *testing.T) {
	s := open(t, t.TempDir())
	cd, cr, cj := newContender(), newContender(), newContender()
	ed, er, ej := s.DispatcherLeaderElection(), s.ResourceManagerLeaderElection(), s.JobMasterLeaderElection(jobgraph.NewJobID())
	require.NoError(t, ed.Start(cd))
	session := awaitGrant(t, cd)
	require.NoError(t, er.Start(cr))
	require.NoError(t, ej.Start(cj))
	assert.Equal(t, session, awaitGrant(t, cr), "the ResourceManager is granted the client's session")
	assert.Equal(t, session, awaitGrant(t, cj), "a JobMaster is granted the client's session")

	require.NoError(t, ed.Close())
	require.NoError(t, er.Close())
	awaitRevoke(t, cd)
	awaitRevoke(t, cr)
	got, leading := s.Session()
	assert.True(t, leading, "a contender is left: the client still leads")
	assert.Equal(t, session, got)

	require.NoError(t, ej.Close())
	awaitRevoke(t, cj)
	_, leading = s.Session()
	assert.False(t, leading, "the last contender left: the client gave its leadership up")
	assert.ErrorIs(t, s.ExecutionPlanStore().Remove(context.Background(), jobgraph.NewJobID()), ha.ErrNotLeader)

	next := newContender()
	assert.EqualError(t, ed.Start(next), "ha/file: dispatcher election: Start on a closed election handle")
	again := s.DispatcherLeaderElection()
	require.NoError(t, again.Start(next))
	nextSession := awaitGrant(t, next)
	assert.NotEqual(t, session, nextSession, "leading again means a new session")
	require.NoError(t, again.Close())
}

// Two runners of one job in one client (the previous leader session's still closing while the
// next one's starts): each has its own election handle; closing the previous one's removes only
// its contender, and the next one is granted.
func TestClosingAJobMasterElectionHandleRemovesOnlyItsContender(t *testing.T) {
	s := open(t, t.TempDir())
	job := jobgraph.NewJobID()
	keep := newContender() // the Dispatcher: the client goes on leading
	ed := s.DispatcherLeaderElection()
	require.NoError(t, ed.Start(keep))
	session := awaitGrant(t, keep)

	old, next := newContender(), newContender()
	e1, e2 := s.JobMasterLeaderElection(job), s.JobMasterLeaderElection(job)
	require.NoError(t, e1.Start(old))
	require.NoError(t, e2.Start(next))
	assert.EqualError(t, e1.Start(newContender()), "ha/file: "+job.String()+" election: a second contender started on one election handle")
	assert.Equal(t, session, awaitGrant(t, old), "the first handle's contender leads")
	assert.True(t, e1.HasLeadership(session))
	assert.False(t, e2.HasLeadership(session), "the second handle's contender waits")

	require.NoError(t, e1.Close())
	awaitRevoke(t, old)
	assert.Equal(t, session, awaitGrant(t, next), "the next runner is granted, with the client's one session")
	assert.True(t, e2.HasLeadership(session))
	assert.False(t, e1.HasLeadership(session), "the closed handle's contender does not lead")
	require.NoError(t, e1.Close(), "closing twice is harmless")
	require.NoError(t, e2.Close())
	awaitRevoke(t, next)
	require.NoError(t, ed.Close())
	awaitRevoke(t, keep)
	assert.Empty(t, old.events)
	assert.Empty(t, next.events)
}

// A leader dies leaving its leader file; a standby's retrieval says no leader. Another process
// then takes the lock but has not written its session yet (the latch still names the dead
// leader's): the dead leader's address is not reported again. Once the latch names the new
// session and its leader file is there, that leader is reported.
func TestRetrievalNeverReportsAnEndedSessionAgain(t *testing.T) {
	dir := t.TempDir()
	dead := ha.NewSessionID()
	writeFile := func(name string, data []byte) {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	leaderFile := func(address string, s ha.SessionID) []byte {
		return []byte(`{"address":"` + address + `","session":"` + s.String() + `"}`)
	}
	writeFile("leader/latch", file.LatchRecord(dead)) // what the dead leader left
	writeFile("leader/dispatcher.json", leaderFile("dispatcher/dead", dead))

	s := open(t, dir)
	polls := make(chan struct{}, 1024)
	s.SetAfterPoll(func() { polls <- struct{}{} })
	l := newListener()
	r := s.DispatcherLeaderRetrieval()
	require.NoError(t, r.Start(l))
	t.Cleanup(func() { assert.NoError(t, r.Stop()) })
	await(t, polls, "a poll")
	assert.Empty(t, l.leaders, "nobody holds the lock: no leader, and nothing was reported yet")

	// Another process's client has the lock and has not written its session yet.
	other, err := os.OpenFile(filepath.Join(dir, "leader", "latch"), os.O_RDWR, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	require.NoError(t, syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	for range 3 {
		await(t, polls, "a poll while the new holder has not written its session")
	}
	select {
	case got := <-l.leaders:
		t.Fatalf("reported %+v: the dead leader's session is over", got)
	default:
	}

	next := ha.NewSessionID()
	_, err = other.WriteAt(file.LatchRecord(next), 0)
	require.NoError(t, err)
	writeFile("leader/dispatcher.json", leaderFile("dispatcher/next", next))
	assert.Equal(t, leader{"dispatcher/next", next}, await(t, l.leaders, "the new leader"))
	assert.Empty(t, l.errs)
}
