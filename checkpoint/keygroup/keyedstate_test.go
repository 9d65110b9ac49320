package keygroup_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

const scenarioMax = 128

func hashKey(k int64) int32 { return keygroup.HashInt64(k) }

// runningSums is the keyed running sum of the scenario at parallelism p: records 1..n,
// key = i mod 1000, routed to subtask AssignKeyToParallelOperator, each subtask summing i per key.
// It returns each subtask's state and every key's total.
func runningSums(t *testing.T, p, n int) ([]map[int64]int64, map[int64]int64) {
	t.Helper()
	perSubtask := make([]map[int64]int64, p)
	for i := range perSubtask {
		perSubtask[i] = map[int64]int64{}
	}
	totals := map[int64]int64{}
	for i := int64(1); i <= int64(n); i++ {
		k := i % 1000
		sub := keygroup.AssignKeyToParallelOperator(hashKey(k), scenarioMax, p)
		perSubtask[sub][k] += i
		totals[k] += i
	}
	require.Len(t, totals, 1000)
	return perSubtask, totals
}

func snapshot(t *testing.T, perSubtask []map[int64]int64) []keygroup.KeyGroupsState[map[int64]int64] {
	t.Helper()
	var states []keygroup.KeyGroupsState[map[int64]int64]
	for i, entries := range perSubtask {
		r, err := keygroup.ComputeKeyGroupRangeForOperatorIndex(scenarioMax, len(perSubtask), i)
		require.NoError(t, err)
		s, err := keygroup.SplitByKeyGroup(entries, hashKey, scenarioMax, r)
		require.NoError(t, err)
		states = append(states, s)
	}
	return states
}

// The scenario: max parallelism 128, a keyed running sum over keys 0..999 at parallelism
// 4, redistributed to 2 and to 8. Subtask i of the new job owns key groups
// [⌈i·128/p⌉, ⌈(i+1)·128/p⌉), holds exactly the keys whose key group is in that range, and every
// key's sum is the one it had.
func TestRescaleKeyedRunningSum(t *testing.T) {
	perSubtask, totals := runningSums(t, 4, 10_000)
	old := snapshot(t, perSubtask)
	for i, s := range old {
		assert.Equal(t, rng(32*i, 32*i+31), s.Range, "old subtask %d", i)
	}

	for _, tc := range []struct {
		p    int
		want []keygroup.KeyGroupRange
	}{
		{2, []keygroup.KeyGroupRange{rng(0, 63), rng(64, 127)}},
		{8, []keygroup.KeyGroupRange{rng(0, 15), rng(16, 31), rng(32, 47), rng(48, 63), rng(64, 79), rng(80, 95), rng(96, 111), rng(112, 127)}},
	} {
		restored, err := keygroup.RedistributeKeyGroups(old, scenarioMax, tc.p)
		require.NoError(t, err)
		require.Len(t, restored, tc.p)
		seen := map[int64]int{}
		for i, s := range restored {
			assert.Equal(t, tc.want[i], s.Range, "p=%d subtask %d range", tc.p, i)
			one, err := keygroup.ReassignKeyGroups(old, scenarioMax, tc.p, i)
			require.NoError(t, err)
			assert.Equal(t, s, one, "ReassignKeyGroups agrees with RedistributeKeyGroups for subtask %d", i)

			// Exactly the keys whose key group is in the range, with the same sums.
			want := map[int64]int64{}
			for k, sum := range totals {
				if tc.want[i].Contains(keygroup.AssignToKeyGroup(hashKey(k), scenarioMax)) {
					want[k] = sum
				}
			}
			got := map[int64]int64{}
			for kg, entries := range s.Groups {
				require.True(t, s.Range.Contains(kg), "p=%d subtask %d holds key group %d", tc.p, i, kg)
				for k, sum := range entries {
					require.Equal(t, kg, keygroup.AssignToKeyGroup(hashKey(k), scenarioMax), "key %d filed under the wrong group", k)
					got[k] = sum
					seen[k]++
				}
			}
			assert.Equal(t, want, got, "p=%d subtask %d", tc.p, i)
			assert.NotEmpty(t, got, "p=%d subtask %d got no key; the scenario would prove little", tc.p, i)
		}
		assert.Len(t, seen, 1000, "p=%d: every key restored", tc.p)
		for k, n := range seen {
			require.Equal(t, 1, n, "p=%d: key %d restored to %d subtasks", tc.p, k, n)
		}
	}

	// Scaling 4 → 8 → 2 gives the same state as 4 → 2 directly.
	at8, err := keygroup.RedistributeKeyGroups(old, scenarioMax, 8)
	require.NoError(t, err)
	via8, err := keygroup.RedistributeKeyGroups(at8, scenarioMax, 2)
	require.NoError(t, err)
	direct, err := keygroup.RedistributeKeyGroups(old, scenarioMax, 2)
	require.NoError(t, err)
	assert.Equal(t, direct, via8)
}

// The known keys of the scenario land where the Java program put them: key 0 is in key group 94,
// owned by subtask 2 at p=4, 1 at p=2, 5 at p=8.
func TestRescaleKeyedRunningSumKnownKey(t *testing.T) {
	perSubtask, totals := runningSums(t, 4, 10_000)
	assert.Equal(t, totals[0], perSubtask[2][0])
	assert.Equal(t, int64(55_000), totals[0]) // 1000 + 2000 + … + 10000
	old := snapshot(t, perSubtask)
	at2, err := keygroup.RedistributeKeyGroups(old, scenarioMax, 2)
	require.NoError(t, err)
	assert.Equal(t, totals[0], at2[1].Groups[94][0])
	at8, err := keygroup.RedistributeKeyGroups(old, scenarioMax, 8)
	require.NoError(t, err)
	assert.Equal(t, totals[0], at8[5].Groups[94][0])
}

// Parallelism unchanged: each subtask keeps exactly its own state, as Flink's
// reAssignSubKeyedStates does, even state Flink would not have placed there.
func TestReassignKeepsStateWhenParallelismUnchanged(t *testing.T) {
	old := []keygroup.KeyGroupsState[[]byte]{
		{Range: rng(0, 63), Groups: map[int][]byte{5: []byte("a"), 63: []byte("b")}},
		{Range: rng(64, 127), Groups: map[int][]byte{64: []byte("c")}},
	}
	got, err := keygroup.RedistributeKeyGroups(old, 128, 2)
	require.NoError(t, err)
	assert.Equal(t, old, got)
	one, err := keygroup.ReassignKeyGroups(old, 128, 2, 1)
	require.NoError(t, err)
	assert.Equal(t, old[1], one)

	// Changed parallelism: a new subtask gets exactly its groups, others dropped.
	three, err := keygroup.RedistributeKeyGroups(old, 128, 3)
	require.NoError(t, err)
	assert.Equal(t, []keygroup.KeyGroupsState[[]byte]{
		{Range: rng(0, 42), Groups: map[int][]byte{5: []byte("a")}},
		{Range: rng(43, 85), Groups: map[int][]byte{63: []byte("b"), 64: []byte("c")}},
		{Range: rng(86, 127)},
	}, three)
}

func TestKeyedStateErrors(t *testing.T) {
	good := []keygroup.KeyGroupsState[int]{{Range: rng(0, 63)}, {Range: rng(64, 127)}}
	for _, tc := range []struct {
		name     string
		old      []keygroup.KeyGroupsState[int]
		max, p   int
		subtask  int
		contains string
	}{
		{"no old subtask", nil, 128, 2, 0, "old state of 0 subtasks"},
		{"new parallelism above max", good, 128, 129, 0, "parallelism 129 is above the max parallelism 128"},
		{"subtask out of range", good, 128, 4, 4, "operator index 4 is outside [0, 4)"},
		{"old range outside max", []keygroup.KeyGroupsState[int]{{Range: rng(0, 200)}}, 128, 2, 0, "old subtask 0: keygroup: key group range [0, 200] is not within [0, 128)"},
		{"group outside its range", []keygroup.KeyGroupsState[int]{{Range: rng(0, 63), Groups: map[int]int{70: 1}}, {Range: rng(64, 127)}}, 128, 4, 0, "old subtask 0: keygroup: state holds key group 70 outside its range [0, 63]"},
		{"group in two old states", []keygroup.KeyGroupsState[int]{{Range: rng(0, 127), Groups: map[int]int{9: 1}}, {Range: rng(0, 127), Groups: map[int]int{9: 2}}}, 128, 4, 0, "key group 9 is in the state of both old subtask 0 and old subtask 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := keygroup.ReassignKeyGroups(tc.old, tc.max, tc.p, tc.subtask)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.contains)
			if tc.subtask < tc.p {
				got, err := keygroup.RedistributeKeyGroups(tc.old, tc.max, tc.p)
				assert.ErrorContains(t, err, tc.contains)
				assert.Nil(t, got)
			}
		})
	}
}

func TestSplitByKeyGroup(t *testing.T) {
	// Keys 0..9 at max 128 (groups from the Java program): 0→94, 1→86, 2→127, 3→113, 5→126, 7→113.
	s, err := keygroup.SplitByKeyGroup(map[int64]string{0: "x", 1: "y", 3: "z", 7: "w"}, hashKey, 128, rng(64, 127))
	require.NoError(t, err)
	assert.Equal(t, keygroup.KeyGroupsState[map[int64]string]{
		Range:  rng(64, 127),
		Groups: map[int]map[int64]string{94: {0: "x"}, 86: {1: "y"}, 113: {3: "z", 7: "w"}},
	}, s)
	assert.NoError(t, s.Validate())
	assert.Equal(t, keygroup.KeyGroupsState[map[int64]string]{
		Range:  rng(90, 100),
		Groups: map[int]map[int64]string{94: {0: "x"}},
	}, s.Intersection(rng(90, 100)))

	// Key 4 is in key group 7, not owned by a subtask with [64, 127].
	_, err = keygroup.SplitByKeyGroup(map[int64]string{4: "v"}, hashKey, 128, rng(64, 127))
	assert.ErrorContains(t, err, "key 4 is in key group 7, outside the subtask's key groups [64, 127]")
	_, err = keygroup.SplitByKeyGroup(map[int64]string{}, hashKey, 0, rng(0, 1))
	assert.ErrorContains(t, err, "max parallelism 0 is outside [1, 32768]")
	_, err = keygroup.SplitByKeyGroup(map[int64]string{}, hashKey, 64, rng(0, 127))
	assert.ErrorContains(t, err, "key group range [0, 127] is not within [0, 64)")
}
