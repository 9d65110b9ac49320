// Package hatest is the conformance suite every ha.Services implementation must pass: the
// ExecutionPlanStore and JobResultStore contracts, and JobMaster leader election and retrieval.
// Run it from the implementation's tests:
//
//	func TestConformance(t *testing.T) {
//		hatest.TestServices(t, func(t *testing.T) ha.Services { return myha.New(t.TempDir()) })
//	}
//
// Each case gets fresh Services from newServices and closes them when it ends (newServices must
// not). TestServices runs in real time and suits implementations that do real I/O; an
// implementation that does none can use TestServicesInBubble, which runs each case inside its own
// testing/synctest bubble, so nothing waits on the wall clock and the suite can also check that
// nothing more is delivered. No case sleeps: each waits for the callback it expects, for at most
// Timeout.
package hatest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
)

// Timeout bounds every wait for a leadership or retrieval callback (virtual time in a bubble).
const Timeout = 10 * time.Second

// TestServices runs the conformance suite, one subtest per case, in real time.
func TestServices(t *testing.T, newServices func(t *testing.T) ha.Services) {
	run(t, newServices, false)
}

// TestServicesInBubble runs the conformance suite with each case inside a testing/synctest
// bubble. Only for implementations whose goroutines all end when their Services are closed and
// that do no real I/O (network, files watched by the OS).
func TestServicesInBubble(t *testing.T, newServices func(t *testing.T) ha.Services) {
	run(t, newServices, true)
}

// suite is what one case sees.
type suite struct {
	t        *testing.T
	s        ha.Services
	inBubble bool
}

var cases = []struct {
	name string
	run  func(s *suite)
}{
	{"ExecutionPlanStore/PutGetKeepsADecodedCopy", planPutGetKeepsACopy},
	{"ExecutionPlanStore/PutReplaces", planPutReplaces},
	{"ExecutionPlanStore/GetMissingIsNotFound", planGetMissing},
	{"ExecutionPlanStore/RemoveAndSortedJobIDs", planRemoveAndJobIDs},
	{"ExecutionPlanStore/ConcurrentUse", planConcurrent},
	{"JobResultStore/CreateDirtyTwiceIsAlreadyExists", resultCreateDirtyTwice},
	{"JobResultStore/MarkCleanAndDirtyResults", resultMarkCleanAndDirtyResults},
	{"JobResultStore/MissingIsNotFound", resultMissing},
	{"JobResultStore/KeepsACopy", resultKeepsACopy},
	{"JobResultStore/ConcurrentUse", resultConcurrent},
	{"LeaderElection/GrantConfirmRetrieve", electionGrantConfirmRetrieve},
	{"LeaderElection/RetrievalStartedAfterConfirm", electionRetrievalAfterConfirm},
	{"LeaderElection/CloseRevokes", electionCloseRevokes},
	{"LeaderElection/StaleSessionAfterNewLeader", electionStaleSession},
	{"LeaderElection/JobsAreIndependent", electionJobsIndependent},
	{"LeaderRetrieval/StopEndsNotifications", retrievalStop},
}

func run(t *testing.T, newServices func(t *testing.T) ha.Services, inBubble bool) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := func(t *testing.T) {
				s := newServices(t)
				require.NotNil(t, s, "newServices returned nil")
				t.Cleanup(func() { assert.NoError(t, s.Close(), "Services.Close") })
				c.run(&suite{t: t, s: s, inBubble: inBubble})
			}
			if inBubble {
				synctest.Test(t, body)
			} else {
				body(t)
			}
		})
	}
}

// ---- ExecutionPlanStore ----

// sampleGraph is a small but complete graph: two vertices, an edge, config bytes, resources and
// job-level settings, so a store that drops a field fails the equality checks.
func sampleGraph(name string) *jobgraph.JobGraph {
	g := jobgraph.New(name, jobgraph.Batch)
	src := g.AddVertex("source", "read-files", 2)
	src.Config = []byte(`{"path":"/data"}`)
	src.Resources = jobgraph.ResourceProfile{CPUCores: 0.5, TaskHeapMemory: 64 * jobgraph.MiB}
	src.SlotSharingGroup = "default"
	sink := g.AddVertex("sink", "write-files", 3)
	sink.MaxParallelism = 256
	sink.SlotSharingGroup = "default"
	e := g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Blocking)
	e.ShipStrategy = "HASH"
	g.Checkpointing = jobgraph.CheckpointingSettings{Interval: 30 * time.Second, MaxConcurrentCheckpoints: 2}
	return g
}

func clone(t *testing.T, g *jobgraph.JobGraph) *jobgraph.JobGraph {
	t.Helper()
	c, err := g.Clone()
	require.NoError(t, err)
	return c
}

func sortedIDs(ids ...jobgraph.JobID) []jobgraph.JobID {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b jobgraph.JobID) int { return slices.Compare(a[:], b[:]) })
	return out
}

func planPutGetKeepsACopy(s *suite) {
	t, ctx, store := s.t, s.t.Context(), s.s.ExecutionPlanStore()
	g := sampleGraph("copied")
	want := clone(t, g)
	require.NoError(t, store.Put(ctx, g))

	// Changing the graph after Put does not change what was stored.
	g.Name = "changed after put"
	g.Vertices[0].Parallelism = 7
	g.Vertices[0].Config[2] = 'X'
	g.Vertices[1].Inputs[0].DistributionPattern = jobgraph.Pointwise
	g.AddVertex("extra", "noop", 1)

	got, err := store.Get(ctx, want.JobID)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.NotSame(t, g, got)

	// Changing what Get returned does not change what is stored either.
	got.Name = "changed after get"
	got.Vertices[1].Parallelism = 9
	got.Vertices[0].Config[0] = 'Y'
	again, err := store.Get(ctx, want.JobID)
	require.NoError(t, err)
	assert.Equal(t, want, again)
}

func planPutReplaces(s *suite) {
	t, ctx, store := s.t, s.t.Context(), s.s.ExecutionPlanStore()
	g := sampleGraph("first version")
	require.NoError(t, store.Put(ctx, g))
	second := sampleGraph("second version")
	second.JobID = g.JobID
	require.NoError(t, store.Put(ctx, second))

	got, err := store.Get(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, clone(t, second), got)
	ids, err := store.JobIDs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []jobgraph.JobID{g.JobID}, ids)
}

func planGetMissing(s *suite) {
	t, ctx, store := s.t, s.t.Context(), s.s.ExecutionPlanStore()
	missing := jobgraph.NewJobID()
	got, err := store.Get(ctx, missing)
	require.ErrorIs(t, err, ha.ErrNotFound)
	assert.Nil(t, got)

	ids, err := store.JobIDs(ctx)
	require.NoError(t, err)
	assert.Empty(t, ids, "a new store holds no plans")
	assert.NoError(t, store.Remove(ctx, missing), "removing a missing plan is not an error")
}

func planRemoveAndJobIDs(s *suite) {
	t, ctx, store := s.t, s.t.Context(), s.s.ExecutionPlanStore()
	var all []jobgraph.JobID
	for i := range 6 {
		g := sampleGraph(fmt.Sprintf("job-%d", i))
		all = append(all, g.JobID)
		require.NoError(t, store.Put(ctx, g))
	}
	ids, err := store.JobIDs(ctx)
	require.NoError(t, err)
	assert.Equal(t, sortedIDs(all...), ids, "JobIDs lists every stored job in ascending order")

	require.NoError(t, store.Remove(ctx, all[1]))
	require.NoError(t, store.Remove(ctx, all[4]))
	require.NoError(t, store.Remove(ctx, all[4]), "removing twice is not an error")
	ids, err = store.JobIDs(ctx)
	require.NoError(t, err)
	assert.Equal(t, sortedIDs(all[0], all[2], all[3], all[5]), ids)

	_, err = store.Get(ctx, all[1])
	require.ErrorIs(t, err, ha.ErrNotFound)
	got, err := store.Get(ctx, all[2])
	require.NoError(t, err)
	assert.Equal(t, "job-2", got.Name)
}

func planConcurrent(s *suite) {
	t, ctx, store := s.t, s.t.Context(), s.s.ExecutionPlanStore()
	const n = 16
	graphs := make([]*jobgraph.JobGraph, n)
	for i := range graphs {
		graphs[i] = sampleGraph(fmt.Sprintf("concurrent-%d", i))
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, g := range graphs {
		wg.Go(func() {
			if errs[i] = store.Put(ctx, g); errs[i] != nil {
				return
			}
			_, errs[i] = store.JobIDs(ctx)
			if errs[i] == nil {
				_, errs[i] = store.Get(ctx, g.JobID)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	ids, err := store.JobIDs(ctx)
	require.NoError(t, err)
	var want []jobgraph.JobID
	for _, g := range graphs {
		want = append(want, g.JobID)
	}
	assert.Equal(t, sortedIDs(want...), ids)
}

// ---- JobResultStore ----

var at = time.Date(2024, time.March, 5, 10, 30, 0, 0, time.UTC)

func sampleResults() (finished, failed, canceled jobgraph.JobResult) {
	finished = jobgraph.JobResult{JobID: jobgraph.NewJobID(), Name: "finished", Status: jobgraph.JobStatusFinished, NetRuntime: 1500 * time.Millisecond}
	failed = jobgraph.JobResult{
		JobID: jobgraph.NewJobID(), Name: "failed", Status: jobgraph.JobStatusFailed, NetRuntime: 42 * time.Second,
		Failure: &jobgraph.ErrorInfo{Message: "task failed: disk full", Timestamp: at},
		ExceptionHistory: []jobgraph.ExceptionHistoryEntry{{
			Message: "task failed: disk full", Timestamp: at, TaskName: "sink (2/3)", Subtask: 1, Location: "taskexecutor-1",
			Concurrent: []jobgraph.ExceptionHistoryEntry{{Message: "lost connection", Timestamp: at.Add(time.Second), TaskName: "sink (3/3)", Subtask: 2}},
		}},
	}
	canceled = jobgraph.JobResult{JobID: jobgraph.NewJobID(), Name: "canceled", Status: jobgraph.JobStatusCanceled, NetRuntime: time.Minute}
	return finished, failed, canceled
}

func resultCreateDirtyTwice(s *suite) {
	t, ctx, store := s.t, s.t.Context(), s.s.JobResultStore()
	finished, _, _ := sampleResults()
	require.NoError(t, store.CreateDirty(ctx, finished))

	again := finished
	again.Status = jobgraph.JobStatusFailed
	require.ErrorIs(t, store.CreateDirty(ctx, again), ha.ErrAlreadyExists)

	entry, err := store.Get(ctx, finished.JobID)
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: finished, Clean: false}, entry, "the first result stays")

	require.NoError(t, store.MarkClean(ctx, finished.JobID))
	require.ErrorIs(t, store.CreateDirty(ctx, again), ha.ErrAlreadyExists, "a clean entry blocks the job too")
}

func resultMarkCleanAndDirtyResults(s *suite) {
	t, ctx, store := s.t, s.t.Context(), s.s.JobResultStore()
	dirty, err := store.DirtyResults(ctx)
	require.NoError(t, err)
	assert.Empty(t, dirty)

	finished, failed, canceled := sampleResults()
	for _, r := range []jobgraph.JobResult{finished, failed, canceled} {
		require.NoError(t, store.CreateDirty(ctx, r))
	}
	dirty, err = store.DirtyResults(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []jobgraph.JobResult{finished, failed, canceled}, dirty)

	require.NoError(t, store.MarkClean(ctx, failed.JobID))
	entry, err := store.Get(ctx, failed.JobID)
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: failed, Clean: true}, entry)
	entry, err = store.Get(ctx, finished.JobID)
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: finished, Clean: false}, entry)

	dirty, err = store.DirtyResults(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []jobgraph.JobResult{finished, canceled}, dirty)

	require.NoError(t, store.MarkClean(ctx, finished.JobID))
	require.NoError(t, store.MarkClean(ctx, canceled.JobID))
	dirty, err = store.DirtyResults(ctx)
	require.NoError(t, err)
	assert.Empty(t, dirty)
	entry, err = store.Get(ctx, canceled.JobID)
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: canceled, Clean: true}, entry, "clean entries are kept")
}

func resultMissing(s *suite) {
	t, ctx, store := s.t, s.t.Context(), s.s.JobResultStore()
	missing := jobgraph.NewJobID()
	entry, err := store.Get(ctx, missing)
	require.ErrorIs(t, err, ha.ErrNotFound)
	assert.Equal(t, ha.JobResultEntry{}, entry)
	require.ErrorIs(t, store.MarkClean(ctx, missing), ha.ErrNotFound)
	dirty, err := store.DirtyResults(ctx)
	require.NoError(t, err)
	assert.Empty(t, dirty, "MarkClean of a missing job creates nothing")
}

func resultKeepsACopy(s *suite) {
	t, ctx, store := s.t, s.t.Context(), s.s.JobResultStore()
	_, failed, _ := sampleResults()
	_, want, _ := sampleResults()
	want.JobID = failed.JobID
	require.NoError(t, store.CreateDirty(ctx, failed))

	failed.Failure.Message = "changed after CreateDirty"
	failed.ExceptionHistory[0].Concurrent[0].Message = "changed after CreateDirty"
	entry, err := store.Get(ctx, want.JobID)
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: want}, entry)

	entry.Result.Failure.Message = "changed after Get"
	entry.Result.ExceptionHistory[0].Message = "changed after Get"
	dirty, err := store.DirtyResults(ctx)
	require.NoError(t, err)
	require.Len(t, dirty, 1)
	assert.Equal(t, want, dirty[0])
	dirty[0].ExceptionHistory[0].Subtask = 99
	again, err := store.Get(ctx, want.JobID)
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: want}, again)
}

func resultConcurrent(s *suite) {
	t, ctx, store := s.t, s.t.Context(), s.s.JobResultStore()
	const n = 16
	results := make([]jobgraph.JobResult, n)
	for i := range results {
		results[i] = jobgraph.JobResult{JobID: jobgraph.NewJobID(), Name: fmt.Sprintf("job-%d", i), Status: jobgraph.JobStatusFinished}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, r := range results {
		wg.Go(func() {
			if errs[i] = store.CreateDirty(ctx, r); errs[i] != nil {
				return
			}
			if i%2 == 0 {
				errs[i] = store.MarkClean(ctx, r.JobID)
			}
			if errs[i] == nil {
				_, errs[i] = store.DirtyResults(ctx)
			}
		})
	}
	// Every goroutine but one loses the race for the same job.
	shared := jobgraph.JobResult{JobID: jobgraph.NewJobID(), Status: jobgraph.JobStatusCanceled}
	sharedErrs := make([]error, 4)
	for i := range sharedErrs {
		wg.Go(func() { sharedErrs[i] = store.CreateDirty(ctx, shared) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	won := 0
	for _, err := range sharedErrs {
		if err == nil {
			won++
		} else {
			require.ErrorIs(t, err, ha.ErrAlreadyExists)
		}
	}
	assert.Equal(t, 1, won)

	dirty, err := store.DirtyResults(ctx)
	require.NoError(t, err)
	want := []jobgraph.JobResult{shared}
	for i := 1; i < n; i += 2 {
		want = append(want, results[i])
	}
	assert.ElementsMatch(t, want, dirty)
}

// ---- leader election and retrieval ----

type contenderEvent struct {
	granted bool // false: revoked
	session ha.SessionID
}

// contender records what its election tells it.
type contender struct {
	events chan contenderEvent
	errs   chan error
}

func newContender() *contender {
	return &contender{events: make(chan contenderEvent, 64), errs: make(chan error, 64)}
}

func (c *contender) GrantLeadership(session ha.SessionID) {
	c.events <- contenderEvent{granted: true, session: session}
}
func (c *contender) RevokeLeadership()     { c.events <- contenderEvent{} }
func (c *contender) HandleError(err error) { c.errs <- err }

// leader is one NotifyLeaderAddress call.
type leader struct {
	address string
	session ha.SessionID
}

// listener records what its retrieval tells it.
type listener struct {
	leaders chan leader
	errs    chan error
}

func newListener() *listener {
	return &listener{leaders: make(chan leader, 64), errs: make(chan error, 64)}
}

func (l *listener) NotifyLeaderAddress(address string, session ha.SessionID) {
	l.leaders <- leader{address, session}
}
func (l *listener) HandleError(err error) { l.errs <- err }

func await[E any](t *testing.T, ch <-chan E, what string) E {
	t.Helper()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case e := <-ch:
		return e
	case <-timer.C:
		require.FailNowf(t, "timed out", "no %s within %v", what, Timeout)
		panic("unreachable")
	}
}

// awaitGrant waits for the contender's next callback, which must be a grant, and returns its
// session.
func (s *suite) awaitGrant(c *contender) ha.SessionID {
	s.t.Helper()
	e := await(s.t, c.events, "GrantLeadership")
	require.True(s.t, e.granted, "got RevokeLeadership where GrantLeadership was due")
	require.NotEqual(s.t, ha.SessionID{}, e.session, "granted the zero session")
	return e.session
}

// awaitRevoke waits for the contender's next callback, which must be a revocation.
func (s *suite) awaitRevoke(c *contender) {
	s.t.Helper()
	e := await(s.t, c.events, "RevokeLeadership")
	require.False(s.t, e.granted, "got GrantLeadership(%s) where RevokeLeadership was due", e.session)
}

// awaitLeader returns the next notification naming a leader, skipping "no leader" ones (an
// implementation may say so when a retrieval starts).
func (s *suite) awaitLeader(l *listener) leader {
	s.t.Helper()
	for {
		got := await(s.t, l.leaders, "NotifyLeaderAddress with a leader")
		if got.address != "" {
			return got
		}
	}
}

// awaitNoLeader waits for the next notification, which must say there is no leader.
func (s *suite) awaitNoLeader(l *listener) {
	s.t.Helper()
	got := await(s.t, l.leaders, "NotifyLeaderAddress without a leader")
	require.Equal(s.t, "", got.address, "expected no leader, got %q (session %s)", got.address, got.session)
}

// quiet checks, in a bubble, that nothing more arrives once everything has settled. Outside a
// bubble an absence cannot be shown without waiting, so it checks nothing.
func quiet[E any](s *suite, ch <-chan E, what string) {
	s.t.Helper()
	if !s.inBubble {
		return
	}
	synctest.Wait()
	select {
	case e := <-ch:
		s.t.Errorf("unexpected %s: %+v", what, e)
	default:
	}
}

func (s *suite) startElection(job jobgraph.JobID, c *contender) ha.LeaderElection {
	s.t.Helper()
	e := s.s.JobMasterLeaderElection(job)
	require.NotNil(s.t, e)
	require.NoError(s.t, e.Start(c))
	s.t.Cleanup(func() { assert.NoError(s.t, e.Close(), "LeaderElection.Close") })
	return e
}

func (s *suite) startRetrieval(job jobgraph.JobID, l *listener) ha.LeaderRetrieval {
	s.t.Helper()
	r := s.s.JobMasterLeaderRetrieval(job)
	require.NotNil(s.t, r)
	require.NoError(s.t, r.Start(l))
	s.t.Cleanup(func() { assert.NoError(s.t, r.Stop(), "LeaderRetrieval.Stop") })
	return r
}

func (s *suite) noErrors(c *contender, l *listener) {
	s.t.Helper()
	quiet(s, c.errs, "LeaderContender.HandleError")
	quiet(s, l.errs, "LeaderRetrievalListener.HandleError")
}

func electionGrantConfirmRetrieve(s *suite) {
	t := s.t
	job := jobgraph.NewJobID()
	l := newListener()
	s.startRetrieval(job, l)
	c := newContender()
	e := s.startElection(job, c)

	session := s.awaitGrant(c)
	assert.True(t, e.HasLeadership(session), "HasLeadership of the granted session")
	assert.False(t, e.HasLeadership(ha.NewSessionID()), "HasLeadership of another session")
	assert.False(t, e.HasLeadership(ha.SessionID{}), "HasLeadership of the zero session")

	e.ConfirmLeadership(session, "jobmaster/1")
	assert.Equal(t, leader{"jobmaster/1", session}, s.awaitLeader(l))
	assert.True(t, e.HasLeadership(session), "still the leader after confirming")
	quiet(s, c.events, "leadership callback")
	s.noErrors(c, l)
}

func electionRetrievalAfterConfirm(s *suite) {
	t := s.t
	job := jobgraph.NewJobID()
	c := newContender()
	e := s.startElection(job, c)
	session := s.awaitGrant(c)
	e.ConfirmLeadership(session, "jobmaster/1")

	l := newListener()
	s.startRetrieval(job, l)
	assert.Equal(t, leader{"jobmaster/1", session}, s.awaitLeader(l), "a retrieval started later learns the confirmed leader")
	s.noErrors(c, l)
}

func electionCloseRevokes(s *suite) {
	t := s.t
	job := jobgraph.NewJobID()
	l := newListener()
	s.startRetrieval(job, l)
	c := newContender()
	e := s.s.JobMasterLeaderElection(job)
	require.NoError(t, e.Start(c))
	session := s.awaitGrant(c)
	e.ConfirmLeadership(session, "jobmaster/1")
	assert.Equal(t, leader{"jobmaster/1", session}, s.awaitLeader(l))

	require.NoError(t, e.Close())
	assert.False(t, e.HasLeadership(session), "HasLeadership after Close")
	s.awaitRevoke(c)
	s.awaitNoLeader(l)
	e.ConfirmLeadership(session, "jobmaster/stale") // ignored: the session is over
	quiet(s, c.events, "leadership callback after Close")
	quiet(s, l.leaders, "leader notification after Close")
	s.noErrors(c, l)
}

func electionStaleSession(s *suite) {
	t := s.t
	job := jobgraph.NewJobID()
	l := newListener()
	s.startRetrieval(job, l)

	// The first runner of the job leads, then leaves (a JobMaster failover in one process).
	first := newContender()
	e1 := s.s.JobMasterLeaderElection(job)
	require.NoError(t, e1.Start(first))
	old := s.awaitGrant(first)
	e1.ConfirmLeadership(old, "jobmaster/1")
	assert.Equal(t, leader{"jobmaster/1", old}, s.awaitLeader(l))
	require.NoError(t, e1.Close())
	s.awaitRevoke(first)
	s.awaitNoLeader(l)

	// The next runner of the same job gets a new session; the old one is stale everywhere.
	second := newContender()
	e2 := s.startElection(job, second)
	current := s.awaitGrant(second)
	assert.NotEqual(t, old, current, "a new leader gets a new session")
	assert.True(t, e2.HasLeadership(current))
	assert.False(t, e2.HasLeadership(old), "HasLeadership of the stale session")
	assert.False(t, e1.HasLeadership(old), "HasLeadership of the stale session on the closed election")

	e2.ConfirmLeadership(old, "jobmaster/stale")
	e2.ConfirmLeadership(current, "jobmaster/2")
	assert.Equal(t, leader{"jobmaster/2", current}, s.awaitLeader(l), "a confirmation with a stale session is never published")
	quiet(s, first.events, "callback to the contender that left")
	quiet(s, second.events, "leadership callback")
	s.noErrors(first, l)
	s.noErrors(second, l)
}

func electionJobsIndependent(s *suite) {
	t := s.t
	jobA, jobB := jobgraph.NewJobID(), jobgraph.NewJobID()
	la, lb := newListener(), newListener()
	s.startRetrieval(jobA, la)
	s.startRetrieval(jobB, lb)
	ca, cb := newContender(), newContender()
	ea := s.s.JobMasterLeaderElection(jobA)
	require.NoError(t, ea.Start(ca))
	eb := s.startElection(jobB, cb)
	sa, sb := s.awaitGrant(ca), s.awaitGrant(cb)
	assert.NotEqual(t, sa, sb, "each job's election has its own session")
	assert.False(t, eb.HasLeadership(sa), "job B's election does not know job A's session")
	assert.False(t, ea.HasLeadership(sb), "job A's election does not know job B's session")

	eb.ConfirmLeadership(sb, "jobmaster/b")
	ea.ConfirmLeadership(sa, "jobmaster/a")
	assert.Equal(t, leader{"jobmaster/a", sa}, s.awaitLeader(la))
	assert.Equal(t, leader{"jobmaster/b", sb}, s.awaitLeader(lb))

	require.NoError(t, ea.Close())
	s.awaitRevoke(ca)
	s.awaitNoLeader(la)
	assert.True(t, eb.HasLeadership(sb), "closing job A's election leaves job B's leader")
	quiet(s, cb.events, "callback to job B's leader")
	quiet(s, lb.leaders, "notification about job B")
	s.noErrors(ca, la)
	s.noErrors(cb, lb)
}

func retrievalStop(s *suite) {
	t := s.t
	job := jobgraph.NewJobID()
	stopped, staying := newListener(), newListener()
	r := s.s.JobMasterLeaderRetrieval(job)
	require.NoError(t, r.Start(stopped))
	s.startRetrieval(job, staying)
	c := newContender()
	e := s.startElection(job, c)
	session := s.awaitGrant(c)
	e.ConfirmLeadership(session, "jobmaster/1")
	assert.Equal(t, leader{"jobmaster/1", session}, s.awaitLeader(stopped))
	assert.Equal(t, leader{"jobmaster/1", session}, s.awaitLeader(staying))

	require.NoError(t, r.Stop())
	require.NoError(t, e.Close())
	s.awaitRevoke(c)
	s.awaitNoLeader(staying)
	quiet(s, stopped.leaders, "notification after Stop")
	s.noErrors(c, staying)
}
