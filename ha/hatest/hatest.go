// Package hatest is the conformance suite every ha.Services implementation must pass: the
// ExecutionPlanStore and JobResultStore contracts, the Dispatcher's, the ResourceManager's and
// each job's JobMaster leader election and retrieval, the CheckpointRecoveryFactory and
// CleanupJobData on one client (TestServices), and what several clients of one backend — several
// JobManager processes of one cluster — see of each other (TestSharedServices). Run it from the
// implementation's tests:
//
//	func TestConformance(t *testing.T) {
//		hatest.TestServices(t, func(t *testing.T) ha.Services { return myha.New(t.TempDir()) })
//	}
//
//	func TestConformanceShared(t *testing.T) {
//		hatest.TestSharedServices(t, hatest.SharedOptions{OneLeaderPerClient: true},
//			func(t *testing.T) func(t *testing.T) ha.Services {
//				dir := t.TempDir() // one backend per case
//				return func(t *testing.T) ha.Services { return myha.New(dir) } // one client per call
//			})
//	}
//
// Each case of TestServices gets fresh Services from newServices and closes them when it ends
// (newServices must not). Cases that write first make their client lead — they start a contender
// on its Dispatcher election and wait for the grant — so a backend that refuses the writes of a
// client that does not lead (see ha's "Leadership and fencing") passes them too. TestServices
// runs in real time and suits implementations that do real I/O; an implementation that does none
// can use TestServicesInBubble, which runs each case inside its own testing/synctest bubble, so
// nothing waits on the wall clock and the suite can also check that nothing more is delivered.
// No case sleeps: each waits for the callback it expects, for at most Timeout.
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

// TestServices runs the conformance suite on one client, one subtest per case, in real time.
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
	waiter
	s ha.Services
}

// oneClientCase is a case of TestServices; writes says it makes its client lead first.
type oneClientCase struct {
	name   string
	writes bool
	run    func(s *suite)
}

var storeCases = []oneClientCase{
	{"ExecutionPlanStore/PutGetKeepsADecodedCopy", true, planPutGetKeepsACopy},
	{"ExecutionPlanStore/PutReplaces", true, planPutReplaces},
	{"ExecutionPlanStore/GetMissingIsNotFound", true, planGetMissing},
	{"ExecutionPlanStore/RemoveAndSortedJobIDs", true, planRemoveAndJobIDs},
	{"ExecutionPlanStore/ConcurrentUse", true, planConcurrent},
	{"JobResultStore/CreateDirtyTwiceIsAlreadyExists", true, resultCreateDirtyTwice},
	{"JobResultStore/MarkCleanAndDirtyResults", true, resultMarkCleanAndDirtyResults},
	{"JobResultStore/MissingIsNotFound", true, resultMissing},
	{"JobResultStore/KeepsACopy", true, resultKeepsACopy},
	{"JobResultStore/ConcurrentUse", true, resultConcurrent},
	{"JobMasterElection/JobsAreIndependent", false, electionJobsIndependent},
	{"Elections/ComponentsAreIndependent", false, electionComponentsIndependent},
	{"CheckpointRecoveryFactory/NextCreateRecoversTheCheckpoints", true, checkpointsRecovered},
	{"CheckpointRecoveryFactory/CounterGoesOn", true, counterGoesOn},
	{"CheckpointRecoveryFactory/ShutdownWithoutDiscardKeeps", true, checkpointsShutdownKeeps},
	{"CheckpointRecoveryFactory/ShutdownWithDiscardStartsOver", true, checkpointsShutdownDiscards},
	{"CheckpointRecoveryFactory/JobsAreIndependent", true, checkpointsJobsIndependent},
	{"CleanupJobData/UnknownJobIsNil", true, cleanupUnknownJob},
	{"CleanupJobData/KeepsPlanResultAndCheckpoints", true, cleanupKeepsStores},
}

// oneClientCases are every case of TestServices: the store cases, then the election cases on
// each component.
func oneClientCases() []oneClientCase {
	cases := slices.Clone(storeCases)
	for _, comp := range components {
		for _, c := range electionCases {
			cases = append(cases, oneClientCase{comp.name + "/" + c.name, false,
				func(s *suite) { c.run(s, comp.make()) }})
		}
	}
	return cases
}

func run(t *testing.T, newServices func(t *testing.T) ha.Services, inBubble bool) {
	for _, c := range oneClientCases() {
		t.Run(c.name, func(t *testing.T) {
			body := func(t *testing.T) {
				s := newServices(t)
				require.NotNil(t, s, "newServices returned nil")
				t.Cleanup(func() { assert.NoError(t, s.Close(), "Services.Close") })
				su := &suite{waiter: waiter{t: t, inBubble: inBubble}, s: s}
				if c.writes {
					su.lead()
				}
				c.run(su)
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
