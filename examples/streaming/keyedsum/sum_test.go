package keyedsum

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

func updates(records []any) []Update {
	out := make([]Update, len(records))
	for i, r := range records {
		out[i] = r.(Update)
	}
	return out
}

// Sum subtask 1 of 2 at max parallelism 128 owns key groups [64, 127]: keys 0, 1, 2, 3 and 5
// (groups 94, 86, 127, 113, 126). It emits each key's running total; the snapshot after the
// third record holds keys 1, 2, 3 in their key groups.
func TestSumEmitsRunningTotalsAndSnapshotsByKeyGroup(t *testing.T) {
	g := buildJob(t, JobOptions{Records: 100, Keys: 7, Parallelism: 2, CheckpointInterval: 1})
	e := newFakeEnv(taskInfo(g, g.VertexByName(SumVertex), 1, 2, 0, true))
	e.gate = &fakeGate{env: e, items: []any{int64(1), int64(2), int64(3), barrier{id: 4}, int64(7), Idle{}, int64(8), int64(14)}}
	w := newFakeWriter(e, 1)
	require.NoError(t, RunSum(t.Context(), e))
	assert.Equal(t, []Update{{1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {0, 7, 7}, {1, 9, 8}, {0, 21, 14}}, updates(w.records(0)))
	assert.Equal(t, barrier{id: 4}, w.subs[0][3])
	assert.Equal(t, checkpoint.StateHandle{
		KeyedState: &keygroup.KeyGroupsState[[]byte]{Range: keygroup.KeyGroupRange{Start: 64, End: 127},
			Groups: map[int][]byte{86: EncodeSums(map[int64]int64{1: 1}), 127: EncodeSums(map[int64]int64{2: 2}), 113: EncodeSums(map[int64]int64{3: 3})}},
		Size: 6,
	}, e.snapshots[4])
	assert.Nil(t, e.accs.Get(AccRestoredSums), "a fresh start restores nothing")
}

// A key of another subtask's key groups means the shuffle routed wrongly: the task fails.
func TestSumRefusesAKeyItDoesNotOwn(t *testing.T) {
	g := buildJob(t, JobOptions{Records: 100, Keys: 7, Parallelism: 2})
	e := newFakeEnv(taskInfo(g, g.VertexByName(SumVertex), 1, 2, 0, false))
	e.gate = &fakeGate{env: e, items: []any{int64(1), int64(4)}}
	newFakeWriter(e, 1)
	assert.EqualError(t, RunSum(t.Context(), e), "keyedsum: sum (2/2): key 4 (key group 7) arrived at the subtask owning [64, 127]")
}

// Restored, the subtask goes on from the sums of its key groups and reports them.
func TestSumContinuesFromItsRestoredKeyGroups(t *testing.T) {
	g := buildJob(t, JobOptions{Records: 100, Keys: 7, Parallelism: 2, CheckpointInterval: 1})
	st := checkpoint.StateHandle{KeyedState: &keygroup.KeyGroupsState[[]byte]{Range: keygroup.KeyGroupRange{Start: 64, End: 127},
		Groups: map[int][]byte{86: EncodeSums(map[int64]int64{1: 10}), 126: EncodeSums(map[int64]int64{5: 50})}}}
	e := newFakeEnv(taskInfo(g, g.VertexByName(SumVertex), 1, 2, 1, true))
	e.restoreID, e.restore = 9, &st
	e.gate = &fakeGate{env: e, items: []any{int64(8), int64(12), int64(2)}}
	w := newFakeWriter(e, 1)
	require.NoError(t, RunSum(t.Context(), e))
	assert.Equal(t, []Update{{1, 18, 8}, {5, 62, 12}, {2, 2, 2}}, updates(w.records(0)))
	restored, err := jobgraph.AccumulatorValue[[]RestoredSums](e.accs.Snapshot(), AccRestoredSums)
	require.NoError(t, err)
	assert.Equal(t, []RestoredSums{{Subtask: 1, Parallelism: 2, KeyGroups: keygroup.KeyGroupRange{Start: 64, End: 127}, FromState: true, CheckpointID: 9,
		Sums: map[int64]int64{1: 10, 5: 50}}}, restored)
}

func TestSumRefusesStateOfOtherKeyGroups(t *testing.T) {
	g := buildJob(t, JobOptions{Records: 100, Keys: 7, Parallelism: 2, CheckpointInterval: 1})
	for _, tc := range []struct {
		state *keygroup.KeyGroupsState[[]byte]
		want  string
	}{
		{&keygroup.KeyGroupsState[[]byte]{Range: keygroup.KeyGroupRange{Start: 0, End: 63}},
			"keyedsum: sum (2/2): restored keyed state covers key groups [0, 63], the subtask owns [64, 127]"},
		{&keygroup.KeyGroupsState[[]byte]{Range: keygroup.KeyGroupRange{Start: 64, End: 127}, Groups: map[int][]byte{87: EncodeSums(map[int64]int64{1: 1})}},
			"keyedsum: sum (2/2): restored key 1 under key group 87, its group is 86"},
		{&keygroup.KeyGroupsState[[]byte]{Range: keygroup.KeyGroupRange{Start: 64, End: 127}, Groups: map[int][]byte{86: {0x02}}},
			"keyedsum: sum (2/2): key group 86: keyedsum: keyed state: bad sum of key 1"},
	} {
		st := checkpoint.StateHandle{KeyedState: tc.state}
		e := newFakeEnv(taskInfo(g, g.VertexByName(SumVertex), 1, 2, 1, true))
		e.restoreID, e.restore = 3, &st
		e.gate = &fakeGate{env: e}
		newFakeWriter(e, 1)
		assert.EqualError(t, RunSum(t.Context(), e), tc.want)
	}
}
