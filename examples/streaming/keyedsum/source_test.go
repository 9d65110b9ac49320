package keyedsum

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

func buildJob(t *testing.T, opts JobOptions) *jobgraph.JobGraph {
	t.Helper()
	if opts.OutDir == "" {
		opts.OutDir = t.TempDir()
	}
	g, err := BuildJob(opts)
	require.NoError(t, err)
	return g
}

func splitsState(ps ...SplitPosition) keygroup.OperatorState[[]byte] {
	elems := make([][]byte, len(ps))
	for i, p := range ps {
		elems[i] = EncodeSplit(p)
	}
	return keygroup.OperatorState[[]byte]{SplitsState: {Mode: keygroup.SplitDistribute, Elements: elems}}
}

func int64s(records []any) []int64 {
	out := make([]int64, len(records))
	for i, r := range records {
		out[i] = r.(int64)
	}
	return out
}

// Subtask 1 of 2 with 8 splits reads splits 1, 3, 5, 7 (1, 9, 17…; 3, 11…; …), taking turns:
// the odd integers in order. Keys i mod 5 at max parallelism 128 and 2 sum subtasks: key 4 (key
// group 7) goes to subtask 0, keys 0, 1, 2, 3 (key groups 94, 86, 127, 113) to subtask 1, as
// Flink's KeyGroupStreamPartitioner routes them. The snapshot before the 7th record holds the
// position of every split: the records 1 … 11 are emitted, 13 is being emitted.
func TestSourceEmitsItsSplitsInTurnAndSnapshotsTheirPositions(t *testing.T) {
	g := buildJob(t, JobOptions{Records: 40, Keys: 5, Parallelism: 2, CheckpointInterval: 1})
	e := newFakeEnv(taskInfo(g, g.VertexByName(SourceVertex), 1, 2, 0, true))
	w := newFakeWriter(e, 2)
	w.triggers = map[int]checkpoint.CheckpointID{6: 1}
	require.NoError(t, RunSource(t.Context(), e))
	assert.Equal(t, []int64{9, 19, 29, 39}, int64s(w.records(0)))
	assert.Equal(t, []int64{1, 3, 5, 7, 11, 13, 15, 17, 21, 23, 25, 27, 31, 33, 35, 37}, int64s(w.records(1)))
	assert.Equal(t, barrier{id: 1}, w.subs[1][5], "the barrier goes out before the 7th record, 13")
	assert.Equal(t, checkpoint.StateHandle{
		OperatorState: splitsState(SplitPosition{1, 17}, SplitPosition{3, 19}, SplitPosition{5, 13}, SplitPosition{7, 15}),
		Size:          8, // four elements of two one-byte varints
	}, e.snapshots[1])
}

// Restored at parallelism 3 from both subtasks of parallelism 2, the 8 split positions (old
// subtask 0's splits 0, 2, 4, 6, then old subtask 1's 1, 3, 5, 7) are dealt out in contiguous
// shares of 3, 3 and 2; each new subtask goes on where its splits were, so the records emitted
// before the snapshot and after the restore are 1..N, each once.
func TestSourceRestoresRedistributedSplits(t *testing.T) {
	g := buildJob(t, JobOptions{Records: 100, Keys: 3, Parallelism: 2, CheckpointInterval: 1})
	src := g.VertexByName(SourceVertex)
	seen := map[int64]int{}
	var old []keygroup.OperatorState[[]byte]
	for k := range 2 {
		e := newFakeEnv(taskInfo(g, src, k, 2, 0, true))
		w := newFakeWriter(e, 1)
		w.triggers = map[int]checkpoint.CheckpointID{10 + k: 1}
		require.NoError(t, RunSource(t.Context(), e))
		for _, r := range w.subs[0] {
			if b, ok := r.(barrier); ok {
				require.Equal(t, barrier{id: 1}, b)
				break
			}
			seen[r.(int64)]++
		}
		old = append(old, e.snapshots[1].OperatorState)
	}
	shares, err := keygroup.RepartitionOperatorState(old, 3)
	require.NoError(t, err)
	var splits [][]int
	for k := range 3 {
		st := checkpoint.StateHandle{OperatorState: shares[k]}
		e := newFakeEnv(taskInfo(g, src, k, 3, 0, true))
		e.restoreID, e.restore = 1, &st
		w := newFakeWriter(e, 1)
		require.NoError(t, RunSource(t.Context(), e))
		for _, i := range int64s(w.records(0)) {
			seen[i]++
		}
		var js []int
		for _, p := range e.handler.(*sourceState).splits {
			js = append(js, p.Split)
		}
		splits = append(splits, js)
	}
	assert.Equal(t, [][]int{{0, 2, 4}, {1, 3, 6}, {5, 7}}, splits, "each subtask's splits, sorted")
	require.Len(t, seen, 100)
	for i := int64(1); i <= 100; i++ {
		assert.Equal(t, 1, seen[i], "record %d", i)
	}
}

func TestSourceRefusesAPositionNotOfItsSplit(t *testing.T) {
	g := buildJob(t, JobOptions{Records: 100, Keys: 3, Parallelism: 1, CheckpointInterval: 1})
	for _, tc := range []struct {
		pos  SplitPosition
		want string
	}{
		{SplitPosition{2, 11}, "keyedsum: source (1/1): restored position 11 of split 2 is not one of the split's integers (splits 8)"},
		{SplitPosition{8, 16}, "keyedsum: source (1/1): restored position 16 of split 8 is not one of the split's integers (splits 8)"},
		{SplitPosition{0, 0}, "keyedsum: source (1/1): restored position 0 of split 0 is not one of the split's integers (splits 8)"},
	} {
		st := checkpoint.StateHandle{OperatorState: splitsState(tc.pos)}
		e := newFakeEnv(taskInfo(g, g.VertexByName(SourceVertex), 0, 1, 0, true))
		e.restoreID, e.restore = 1, &st
		newFakeWriter(e, 1)
		assert.EqualError(t, RunSource(t.Context(), e), tc.want)
	}
	st := checkpoint.StateHandle{OperatorState: keygroup.OperatorState[[]byte]{SplitsState: {Mode: keygroup.SplitDistribute, Elements: [][]byte{{0x80}}}}}
	e := newFakeEnv(taskInfo(g, g.VertexByName(SourceVertex), 0, 1, 0, true))
	e.restoreID, e.restore = 1, &st
	newFakeWriter(e, 1)
	assert.EqualError(t, RunSource(t.Context(), e), "keyedsum: source (1/1): keyedsum: split state 80: bad split index")
}

// With PauseAfter 30 the source emits exactly 1..30, reports itself paused, and then emits Idle
// records (one per PauseTick of the bubble's clock) until the stop-with-savepoint's savepoint,
// taken at the first of them, covers the 30 records; ErrStopped ends it normally.
func TestSourcePausesAndStopsWithASavepoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := buildJob(t, JobOptions{Records: 100, Keys: 3, Splits: 4, Parallelism: 1, CheckpointInterval: 1, PauseAfter: 30})
		defer ForgetPauses(g.JobID)
		e := newFakeEnv(taskInfo(g, g.VertexByName(SourceVertex), 0, 1, 0, true))
		w := newFakeWriter(e, 1)
		w.stopOnIdle = 7
		paused := make(chan int)
		go func() {
			attempt, err := WaitSourcesPaused(t.Context(), g.JobID, 1)
			assert.NoError(t, err)
			paused <- attempt
		}()
		start := time.Now()
		require.NoError(t, RunSource(t.Context(), e))
		assert.Equal(t, DefaultPauseTick, time.Since(start), "the savepoint came with the first tick")
		assert.Equal(t, 0, <-paused)
		var want []int64
		for i := int64(1); i <= 30; i++ {
			want = append(want, i)
		}
		assert.Equal(t, []int64{4, 1, 2, 3, 8, 5, 6, 7}, int64s(w.records(0))[:8])
		assert.ElementsMatch(t, want, int64s(w.records(0)))
		assert.Equal(t, barrier{id: 7, stop: true}, w.subs[0][len(w.subs[0])-1])
		assert.Equal(t, splitsState(SplitPosition{0, 32}, SplitPosition{1, 33}, SplitPosition{2, 34}, SplitPosition{3, 31}), e.snapshots[7].OperatorState)
	})
}

// A planned failure strikes its attempt only, after exactly the planned number of records.
func TestSourceFailsWhereThePlanSays(t *testing.T) {
	g := buildJob(t, JobOptions{Records: 20, Keys: 3, Parallelism: 1, Failures: []Failure{{Vertex: SourceVertex, Subtask: 0, Attempt: 1, AfterRecords: 5}}})
	for attempt, want := range map[int]int{0: 20, 1: 5, 2: 20} {
		e := newFakeEnv(taskInfo(g, g.VertexByName(SourceVertex), 0, 1, attempt, false))
		w := newFakeWriter(e, 1)
		err := RunSource(context.Background(), e)
		if attempt == 1 {
			assert.ErrorIs(t, err, ErrInjectedFailure)
			assert.EqualError(t, err, "keyedsum: source (1/1) attempt 1 after 5 records: injected failure")
		} else {
			assert.NoError(t, err)
		}
		assert.Len(t, w.records(0), want, "attempt %d", attempt)
	}
}

// Config.Rate holds the sources to their share: 1,000 records/s at parallelism 1 emit 100
// records in 100 ms of the bubble's clock.
func TestSourceKeepsToTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := buildJob(t, JobOptions{Records: 100, Keys: 3, Parallelism: 1, Rate: 1000})
		e := newFakeEnv(taskInfo(g, g.VertexByName(SourceVertex), 0, 1, 0, false))
		w := newFakeWriter(e, 1)
		start := time.Now()
		require.NoError(t, RunSource(t.Context(), e))
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
		assert.Len(t, w.records(0), 100)
	})
}
