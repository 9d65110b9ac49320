// Package checkpointtest is the conformance suite for the checkpoint package's storage
// interfaces: every CompletedCheckpointStore and CheckpointIDCounter implementation must pass it.
// Run it from the implementation's tests:
//
//	func TestConformance(t *testing.T) {
//		checkpointtest.TestCompletedCheckpointStore(t, func(t *testing.T, maxRetained int) checkpoint.CompletedCheckpointStore {
//			s, err := mystore.Open(t.TempDir(), maxRetained)
//			require.NoError(t, err)
//			return s
//		})
//		checkpointtest.TestCheckpointIDCounter(t, func(t *testing.T) checkpoint.CheckpointIDCounter { ... })
//	}
//
// Each case gets a fresh store or counter and shuts it down when it ends (the factory must not).
// The Test* functions run in real time and suit implementations that do real I/O; the *InBubble
// variants run each case inside its own testing/synctest bubble, for implementations that do
// none. No case sleeps or waits on a timer.
package checkpointtest

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// NewStore returns a fresh, empty store retaining maxRetained snapshots (0: the default).
type NewStore func(t *testing.T, maxRetained int) checkpoint.CompletedCheckpointStore

// NewCounter returns a fresh counter.
type NewCounter func(t *testing.T) checkpoint.CheckpointIDCounter

// TestCompletedCheckpointStore runs the store cases in real time.
func TestCompletedCheckpointStore(t *testing.T, newStore NewStore) { runStore(t, newStore, false) }

// TestCompletedCheckpointStoreInBubble runs the store cases, each in a synctest bubble.
func TestCompletedCheckpointStoreInBubble(t *testing.T, newStore NewStore) {
	runStore(t, newStore, true)
}

// TestCheckpointIDCounter runs the counter cases in real time.
func TestCheckpointIDCounter(t *testing.T, newCounter NewCounter) { runCounter(t, newCounter, false) }

// TestCheckpointIDCounterInBubble runs the counter cases, each in a synctest bubble.
func TestCheckpointIDCounterInBubble(t *testing.T, newCounter NewCounter) {
	runCounter(t, newCounter, true)
}

func inBubble(t *testing.T, bubble bool, body func(t *testing.T)) {
	if bubble {
		synctest.Test(t, body)
	} else {
		body(t)
	}
}

var storeCases = []struct {
	name string
	run  func(t *testing.T, newStore NewStore)
}{
	{"MaxOneKeepsTheLastOfFour", storeMaxOneKeepsLast},
	{"RetainsTheNewestN", storeRetainsN},
	{"DefaultRetainsOne", storeDefaultRetainsOne},
	{"EmptyHasNoLatest", storeEmpty},
	{"RejectsAnIDNotNewer", storeRejectsOlder},
	{"KeepsACopy", storeKeepsACopy},
	{"SavepointIsLatestAndKeepsItsPointer", storeSavepoint},
	{"AddAfterShutdownFails", storeShutdown},
	{"ConcurrentReadsDuringAdds", storeConcurrent},
}

func runStore(t *testing.T, newStore NewStore, bubble bool) {
	for _, c := range storeCases {
		t.Run(c.name, func(t *testing.T) { inBubble(t, bubble, func(t *testing.T) { c.run(t, newStore) }) })
	}
}

func open(t *testing.T, newStore NewStore, maxRetained int) checkpoint.CompletedCheckpointStore {
	t.Helper()
	s := newStore(t, maxRetained)
	require.NotNil(t, s, "newStore returned nil")
	t.Cleanup(func() { assert.NoError(t, s.Shutdown(false), "Shutdown") })
	return s
}

var (
	jobID  = jobgraph.NewJobID()
	vertex = jobgraph.NewJobVertexID()
	base   = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

// Sample is a complete checkpoint with two subtask states, so a store that drops a field fails.
func Sample(id checkpoint.CheckpointID, t checkpoint.SnapshotType) checkpoint.CompletedCheckpoint {
	cp := checkpoint.CompletedCheckpoint{
		JobID: jobID, CheckpointID: id, Properties: checkpoint.CheckpointPropertiesFor(t),
		TriggerTimestamp:    base.Add(time.Duration(id) * time.Second),
		CompletionTimestamp: base.Add(time.Duration(id)*time.Second + 250*time.Millisecond),
		TaskStates: []checkpoint.SubtaskState{
			{JobVertexID: vertex, Subtask: 0, State: checkpoint.StateHandle{Data: []byte("state-0"), Size: 7}},
			{JobVertexID: vertex, Subtask: 1, State: checkpoint.StateHandle{Data: []byte("state-1"), Size: 8}},
		},
		StateSize: 15,
	}
	if t != checkpoint.Checkpoint {
		cp.ExternalPointer = "/savepoints/savepoint-" + id.String()
	}
	return cp
}

func ids(cps []checkpoint.CompletedCheckpoint) []checkpoint.CheckpointID {
	out := []checkpoint.CheckpointID{}
	for _, cp := range cps {
		out = append(out, cp.CheckpointID)
	}
	return out
}

func storeMaxOneKeepsLast(t *testing.T, newStore NewStore) {
	s := open(t, newStore, 1)
	assert.Equal(t, 1, s.MaxRetained())
	var discarded []checkpoint.CheckpointID
	for id := checkpoint.CheckpointID(1); id <= 4; id++ {
		sub, err := s.Add(Sample(id, checkpoint.Checkpoint))
		require.NoError(t, err)
		discarded = append(discarded, ids(sub)...)
	}
	assert.Equal(t, []checkpoint.CheckpointID{1, 2, 3}, discarded, "the other 3 are discarded, oldest first")
	assert.Equal(t, []checkpoint.CheckpointID{4}, ids(s.All()))
	latest, ok := s.Latest()
	require.True(t, ok)
	assert.Equal(t, Sample(4, checkpoint.Checkpoint), latest)
}

func storeRetainsN(t *testing.T, newStore NewStore) {
	s := open(t, newStore, 3)
	for _, id := range []checkpoint.CheckpointID{2, 5, 6, 9, 12} {
		_, err := s.Add(Sample(id, checkpoint.Checkpoint))
		require.NoError(t, err)
	}
	assert.Equal(t, []checkpoint.CheckpointID{6, 9, 12}, ids(s.All()))
}

func storeDefaultRetainsOne(t *testing.T, newStore NewStore) {
	s := open(t, newStore, 0)
	assert.Equal(t, checkpoint.DefaultNumRetained, s.MaxRetained())
	for id := checkpoint.CheckpointID(1); id <= 2; id++ {
		_, err := s.Add(Sample(id, checkpoint.Checkpoint))
		require.NoError(t, err)
	}
	assert.Equal(t, []checkpoint.CheckpointID{2}, ids(s.All()))
}

func storeEmpty(t *testing.T, newStore NewStore) {
	s := open(t, newStore, 1)
	_, ok := s.Latest()
	assert.False(t, ok)
	assert.Empty(t, s.All())
}

func storeRejectsOlder(t *testing.T, newStore NewStore) {
	s := open(t, newStore, 2)
	_, err := s.Add(Sample(5, checkpoint.Checkpoint))
	require.NoError(t, err)
	for _, id := range []checkpoint.CheckpointID{5, 4, 0, -1} {
		_, err = s.Add(Sample(id, checkpoint.Checkpoint))
		assert.ErrorIs(t, err, checkpoint.ErrInvalidCheckpoint, "id %d", id)
	}
	assert.Equal(t, []checkpoint.CheckpointID{5}, ids(s.All()), "a refused Add changes nothing")
}

func storeKeepsACopy(t *testing.T, newStore NewStore) {
	s := open(t, newStore, 1)
	cp := Sample(1, checkpoint.Checkpoint)
	_, err := s.Add(cp)
	require.NoError(t, err)
	cp.TaskStates[0].State.Data[0] = 'X'
	got, _ := s.Latest()
	got.TaskStates[1].State.Data[0] = 'Y'
	again, _ := s.Latest()
	assert.Equal(t, Sample(1, checkpoint.Checkpoint), again)
}

func storeSavepoint(t *testing.T, newStore NewStore) {
	s := open(t, newStore, 1)
	_, err := s.Add(Sample(10, checkpoint.Checkpoint))
	require.NoError(t, err)
	sub, err := s.Add(Sample(11, checkpoint.Savepoint))
	require.NoError(t, err)
	assert.Equal(t, []checkpoint.CheckpointID{10}, ids(sub))
	latest, ok := s.Latest()
	require.True(t, ok)
	assert.Equal(t, Sample(11, checkpoint.Savepoint), latest, "checkpoint 10, then savepoint 11: recovery uses 11")
	sub, err = s.Add(Sample(12, checkpoint.Checkpoint))
	require.NoError(t, err)
	require.Len(t, sub, 1)
	assert.False(t, sub[0].Properties.DiscardOnSubsumed(), "a savepoint leaving the list keeps its state")
}

func storeShutdown(t *testing.T, newStore NewStore) {
	s := newStore(t, 1)
	_, err := s.Add(Sample(1, checkpoint.Checkpoint))
	require.NoError(t, err)
	require.NoError(t, s.Shutdown(true))
	_, err = s.Add(Sample(2, checkpoint.Checkpoint))
	assert.ErrorIs(t, err, checkpoint.ErrShutdown)
}

func storeConcurrent(t *testing.T, newStore NewStore) {
	s := open(t, newStore, 2)
	var wg sync.WaitGroup
	wg.Go(func() {
		for id := checkpoint.CheckpointID(1); id <= 20; id++ {
			_, err := s.Add(Sample(id, checkpoint.Checkpoint))
			assert.NoError(t, err)
		}
	})
	for range 4 {
		wg.Go(func() {
			for range 20 {
				all := s.All()
				assert.LessOrEqual(t, len(all), 2)
				for i := 1; i < len(all); i++ {
					assert.Less(t, all[i-1].CheckpointID, all[i].CheckpointID)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, []checkpoint.CheckpointID{19, 20}, ids(s.All()))
}

var counterCases = []struct {
	name string
	run  func(t *testing.T, c checkpoint.CheckpointIDCounter)
}{
	{"StartsAtOneAndIncrements", counterIncrements},
	{"SetCountNeverGoesBack", counterSetCount},
	{"ConcurrentIDsAreUnique", counterConcurrent},
	{"AfterShutdownFails", counterShutdown},
}

func runCounter(t *testing.T, newCounter NewCounter, bubble bool) {
	for _, c := range counterCases {
		t.Run(c.name, func(t *testing.T) {
			inBubble(t, bubble, func(t *testing.T) {
				ctr := newCounter(t)
				require.NotNil(t, ctr, "newCounter returned nil")
				t.Cleanup(func() { assert.NoError(t, ctr.Shutdown(false)) })
				c.run(t, ctr)
			})
		})
	}
}

func counterIncrements(t *testing.T, c checkpoint.CheckpointIDCounter) {
	next, err := c.Get()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.InitialCheckpointID, next)
	for want := checkpoint.CheckpointID(1); want <= 3; want++ {
		id, err := c.GetAndIncrement()
		require.NoError(t, err)
		assert.Equal(t, want, id)
	}
	next, err = c.Get()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(4), next)
}

func counterSetCount(t *testing.T, c checkpoint.CheckpointIDCounter) {
	require.NoError(t, c.SetCount(42))
	id, err := c.GetAndIncrement()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(42), id)
	assert.ErrorIs(t, c.SetCount(42), checkpoint.ErrIDCounterDecrease, "42 was handed out")
	next, err := c.Get()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(43), next, "a refused SetCount changes nothing")
	require.NoError(t, c.SetCount(43), "setting the current value is allowed")
}

func counterConcurrent(t *testing.T, c checkpoint.CheckpointIDCounter) {
	var mu sync.Mutex
	seen := map[checkpoint.CheckpointID]bool{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				id, err := c.GetAndIncrement()
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				assert.False(t, seen[id], "id %d handed out twice", id)
				seen[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Len(t, seen, 100)
	for id := checkpoint.CheckpointID(1); id <= 100; id++ {
		assert.True(t, seen[id], "id %d missing", id)
	}
}

func counterShutdown(t *testing.T, c checkpoint.CheckpointIDCounter) {
	require.NoError(t, c.Shutdown(false))
	_, err := c.GetAndIncrement()
	assert.ErrorIs(t, err, checkpoint.ErrShutdown)
}
