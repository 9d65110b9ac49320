package hatest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/checkpointtest"
	"github.com/jobgraph/jobgraph/ha"
)

// ---- CheckpointRecoveryFactory and CleanupJobData ----

// sampleCheckpoint is checkpointtest's complete sample checkpoint id of job.
func sampleCheckpoint(job jobgraph.JobID, id checkpoint.CheckpointID) checkpoint.CompletedCheckpoint {
	cp := checkpointtest.Sample(id, checkpoint.Checkpoint)
	cp.JobID = job
	return cp
}

func samples(job jobgraph.JobID, ids ...checkpoint.CheckpointID) []checkpoint.CompletedCheckpoint {
	out := []checkpoint.CompletedCheckpoint{}
	for _, id := range ids {
		out = append(out, sampleCheckpoint(job, id))
	}
	return out
}

func openStore(t *testing.T, s ha.Services, job jobgraph.JobID, maxRetained int) checkpoint.CompletedCheckpointStore {
	t.Helper()
	f := s.CheckpointRecoveryFactory()
	require.NotNil(t, f, "CheckpointRecoveryFactory")
	store, err := f.CreateRecoveredCompletedCheckpointStore(job, maxRetained)
	require.NoError(t, err, "CreateRecoveredCompletedCheckpointStore")
	require.NotNil(t, store)
	return store
}

func openCounter(t *testing.T, s ha.Services, job jobgraph.JobID) checkpoint.CheckpointIDCounter {
	t.Helper()
	f := s.CheckpointRecoveryFactory()
	require.NotNil(t, f, "CheckpointRecoveryFactory")
	c, err := f.CreateCheckpointIDCounter(job)
	require.NoError(t, err, "CreateCheckpointIDCounter")
	require.NotNil(t, c)
	return c
}

// addAll adds the sample checkpoints ids to store, each with no error.
func addAll(t *testing.T, store checkpoint.CompletedCheckpointStore, job jobgraph.JobID, ids ...checkpoint.CheckpointID) {
	t.Helper()
	for _, id := range ids {
		_, err := store.Add(sampleCheckpoint(job, id))
		require.NoError(t, err, "Add checkpoint %d", id)
	}
}

// takeIDs hands out n IDs from c and requires them to be from, from+1, ...
func takeIDs(t *testing.T, c checkpoint.CheckpointIDCounter, from checkpoint.CheckpointID, n int) {
	t.Helper()
	for want := from; want < from+checkpoint.CheckpointID(n); want++ {
		id, err := c.GetAndIncrement()
		require.NoError(t, err)
		require.Equal(t, want, id)
	}
}

func nextID(t *testing.T, c checkpoint.CheckpointIDCounter) checkpoint.CheckpointID {
	t.Helper()
	next, err := c.Get()
	require.NoError(t, err)
	return next
}

func checkpointsRecovered(s *suite) {
	t := s.t
	job := jobgraph.NewJobID()
	first := openStore(t, s.s, job, 3)
	assert.Empty(t, first.All(), "a new job has no checkpoints")
	_, ok := first.Latest()
	assert.False(t, ok)
	addAll(t, first, job, 1, 2, 4, 7)
	assert.Equal(t, samples(job, 2, 4, 7), first.All())

	again := openStore(t, s.s, job, 3)
	assert.Equal(t, samples(job, 2, 4, 7), again.All(), "the next Create recovers the retained checkpoints, oldest first")
	latest, ok := again.Latest()
	require.True(t, ok)
	assert.Equal(t, sampleCheckpoint(job, 7), latest)
	assert.Equal(t, 3, again.MaxRetained())
	sub, err := again.Add(sampleCheckpoint(job, 8))
	require.NoError(t, err)
	assert.Equal(t, samples(job, 2), sub, "the recovered store goes on subsuming the oldest")
	assert.Equal(t, samples(job, 4, 7, 8), openStore(t, s.s, job, 3).All())
}

func counterGoesOn(s *suite) {
	t := s.t
	job := jobgraph.NewJobID()
	first := openCounter(t, s.s, job)
	assert.Equal(t, checkpoint.InitialCheckpointID, nextID(t, first), "a new job's counter")
	takeIDs(t, first, checkpoint.InitialCheckpointID, 3)

	again := openCounter(t, s.s, job)
	assert.Equal(t, checkpoint.InitialCheckpointID+3, nextID(t, again), "the next Create goes on from where the counter was")
	takeIDs(t, again, checkpoint.InitialCheckpointID+3, 1)
	require.NoError(t, again.SetCount(10))
	assert.Equal(t, checkpoint.CheckpointID(10), nextID(t, openCounter(t, s.s, job)), "SetCount is kept too")
}

// A JobMaster that loses leadership (or a job that is suspended) shuts its store and counter
// down without discard; the next Create must find both as they were.
func checkpointsShutdownKeeps(s *suite) {
	t := s.t
	job := jobgraph.NewJobID()
	store, counter := openStore(t, s.s, job, 2), openCounter(t, s.s, job)
	takeIDs(t, counter, checkpoint.InitialCheckpointID, 3)
	addAll(t, store, job, 1, 2, 3)
	require.NoError(t, store.Shutdown(false))
	require.NoError(t, counter.Shutdown(false))
	_, err := store.Add(sampleCheckpoint(job, 4))
	assert.ErrorIs(t, err, checkpoint.ErrShutdown, "the shut-down store refuses Add")

	next := openStore(t, s.s, job, 2)
	assert.Equal(t, samples(job, 2, 3), next.All(), "Shutdown(false) keeps the checkpoints for the next Create")
	nextCounter := openCounter(t, s.s, job)
	assert.Equal(t, checkpoint.CheckpointID(4), nextID(t, nextCounter), "Shutdown(false) keeps the counter")
	takeIDs(t, nextCounter, 4, 1)
	_, err = next.Add(sampleCheckpoint(job, 4))
	require.NoError(t, err, "the recovered store takes new checkpoints")
	assert.Equal(t, samples(job, 3, 4), next.All())
}

// The global cleanup of a terminated job shuts its store and counter down with discard: the job
// starts over.
func checkpointsShutdownDiscards(s *suite) {
	t := s.t
	job := jobgraph.NewJobID()
	store, counter := openStore(t, s.s, job, 2), openCounter(t, s.s, job)
	takeIDs(t, counter, checkpoint.InitialCheckpointID, 2)
	addAll(t, store, job, 1, 2)
	require.NoError(t, store.Shutdown(true))
	require.NoError(t, counter.Shutdown(true))

	next := openStore(t, s.s, job, 2)
	assert.Empty(t, next.All(), "Shutdown(true) discards the checkpoints")
	_, ok := next.Latest()
	assert.False(t, ok)
	nextCounter := openCounter(t, s.s, job)
	assert.Equal(t, checkpoint.InitialCheckpointID, nextID(t, nextCounter), "Shutdown(true) discards the counter")
	takeIDs(t, nextCounter, checkpoint.InitialCheckpointID, 1)
	addAll(t, next, job, 1)
	assert.Equal(t, samples(job, 1), openStore(t, s.s, job, 2).All())
}

func checkpointsJobsIndependent(s *suite) {
	t := s.t
	a, b := jobgraph.NewJobID(), jobgraph.NewJobID()
	sa, sb := openStore(t, s.s, a, 2), openStore(t, s.s, b, 2)
	ca, cb := openCounter(t, s.s, a), openCounter(t, s.s, b)
	addAll(t, sa, a, 1, 2)
	addAll(t, sb, b, 5)
	takeIDs(t, ca, checkpoint.InitialCheckpointID, 2)

	assert.Equal(t, samples(a, 1, 2), openStore(t, s.s, a, 2).All())
	assert.Equal(t, samples(b, 5), openStore(t, s.s, b, 2).All())
	assert.Equal(t, checkpoint.InitialCheckpointID, nextID(t, cb), "job B's counter did not move")

	require.NoError(t, sa.Shutdown(true))
	require.NoError(t, ca.Shutdown(true))
	assert.Empty(t, openStore(t, s.s, a, 2).All())
	assert.Equal(t, samples(b, 5), openStore(t, s.s, b, 2).All(), "discarding job A's checkpoints keeps job B's")
	assert.Equal(t, checkpoint.InitialCheckpointID, nextID(t, openCounter(t, s.s, a)))
	takeIDs(t, cb, checkpoint.InitialCheckpointID, 1)
	assert.Equal(t, checkpoint.InitialCheckpointID+1, nextID(t, openCounter(t, s.s, b)))
}

func cleanupUnknownJob(s *suite) {
	assert.NoError(s.t, s.s.CleanupJobData(s.t.Context(), jobgraph.NewJobID()), "CleanupJobData of a job the backend never saw")
}

// CleanupJobData removes the job's HA data apart from its plan, result and checkpoints (each has
// its own cleanup step), and a new JobMaster election of the job works after it.
func cleanupKeepsStores(s *suite) {
	t, ctx := s.t, s.t.Context()
	g := sampleGraph("cleaned")
	job := g.JobID
	require.NoError(t, s.s.ExecutionPlanStore().Put(ctx, g))
	result := jobgraph.JobResult{JobID: job, Name: "cleaned", Status: jobgraph.JobStatusFinished}
	require.NoError(t, s.s.JobResultStore().CreateDirty(ctx, result))
	addAll(t, openStore(t, s.s, job, 1), job, 3)
	takeIDs(t, openCounter(t, s.s, job), checkpoint.InitialCheckpointID, 3)

	e := s.s.JobMasterLeaderElection(job)
	c := newContender()
	require.NoError(t, e.Start(c))
	session := s.awaitGrant(c)
	e.ConfirmLeadership(session, "jobmaster/1")
	require.NoError(t, e.Close())
	s.awaitRevoke(c)

	require.NoError(t, s.s.CleanupJobData(ctx, job))
	require.NoError(t, s.s.CleanupJobData(ctx, job), "a second CleanupJobData (a retried cleanup)")
	got, err := s.s.ExecutionPlanStore().Get(ctx, job)
	require.NoError(t, err, "CleanupJobData keeps the plan")
	assert.Equal(t, clone(t, g), got)
	entry, err := s.s.JobResultStore().Get(ctx, job)
	require.NoError(t, err, "CleanupJobData keeps the result")
	assert.Equal(t, ha.JobResultEntry{Result: result}, entry)
	assert.Equal(t, samples(job, 3), openStore(t, s.s, job, 1).All(), "CleanupJobData keeps the checkpoints")
	assert.Equal(t, checkpoint.CheckpointID(4), nextID(t, openCounter(t, s.s, job)), "CleanupJobData keeps the counter")

	l := newListener()
	r := s.s.JobMasterLeaderRetrieval(job)
	require.NoError(t, r.Start(l))
	t.Cleanup(func() { assert.NoError(t, r.Stop()) })
	again := newContender()
	e2 := s.s.JobMasterLeaderElection(job)
	require.NoError(t, e2.Start(again))
	t.Cleanup(func() { assert.NoError(t, e2.Close()) })
	next := s.awaitGrant(again)
	e2.ConfirmLeadership(next, "jobmaster/2")
	assert.Equal(t, leader{"jobmaster/2", next}, s.awaitLeader(l), "the old leader's address is gone")
	quiet(s.waiter, c.events, "callback to the closed contender")
}
