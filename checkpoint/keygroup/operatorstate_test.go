package keygroup_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

// Ten elements 0..9 held by 3 old subtasks as 4, 3 and 3.
var tenFromThree = [][]int{{0, 1, 2, 3}, {4, 5, 6}, {7, 8, 9}}

func splitState(lists ...[]int) []keygroup.OperatorState[int] {
	out := make([]keygroup.OperatorState[int], len(lists))
	for i, l := range lists {
		out[i] = keygroup.OperatorState[int]{"offsets": {Mode: keygroup.SplitDistribute, Elements: l}}
	}
	return out
}

// Flink's RoundRobinOperatorStateRepartitioner cuts all elements, in old subtask order, into
// contiguous shares: 10 to 2 is 5 + 5; 10 to 4 is 3, 3, 2, 2 (the first 10 mod 4 = 2 subtasks
// get one more).
func TestSplitDistributeListState(t *testing.T) {
	to2, err := keygroup.SplitDistributeList(tenFromThree, 2)
	require.NoError(t, err)
	assert.Equal(t, [][]int{{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}}, to2)

	to4, err := keygroup.SplitDistributeList(tenFromThree, 4)
	require.NoError(t, err)
	assert.Equal(t, [][]int{{0, 1, 2}, {3, 4, 5}, {6, 7}, {8, 9}}, to4)

	// Fewer elements than subtasks: the last subtasks get nothing.
	to4, err = keygroup.SplitDistributeList([][]int{{1}, {2}}, 4)
	require.NoError(t, err)
	assert.Equal(t, [][]int{{1}, {2}, {}, {}}, to4)

	// The same through RepartitionOperatorState; an empty share has no entry, as in Flink.
	got, err := keygroup.RepartitionOperatorState(splitState(tenFromThree...), 4)
	require.NoError(t, err)
	assert.Equal(t, splitState([]int{0, 1, 2}, []int{3, 4, 5}, []int{6, 7}, []int{8, 9}), got)
	got, err = keygroup.RepartitionOperatorState(splitState([]int{1}, []int{2}), 3)
	require.NoError(t, err)
	assert.Equal(t, []keygroup.OperatorState[int]{
		{"offsets": {Mode: keygroup.SplitDistribute, Elements: []int{1}}},
		{"offsets": {Mode: keygroup.SplitDistribute, Elements: []int{2}}},
		{},
	}, got)
}

// With several names, each next name's extra elements start at the first subtask that got none
// from the previous name (Flink's newStartParallelOp); names are visited in ascending order.
func TestSplitDistributeRotatesAcrossNames(t *testing.T) {
	old := []keygroup.OperatorState[int]{
		{"a": {Elements: []int{0, 1, 2, 3}}, "b": {Elements: []int{10, 11, 12, 13}}},
		{"a": {Elements: []int{4, 5, 6}}, "b": {Elements: []int{14, 15, 16}}},
		{"a": {Elements: []int{7, 8, 9}}, "b": {Elements: []int{17, 18, 19}}},
	}
	got, err := keygroup.RepartitionOperatorState(old, 4)
	require.NoError(t, err)
	// "a": subtasks 0, 1 get 3 (the extras), 2 and 3 get 2; the next start is subtask 2.
	// "b": subtasks 2, 3 get 3, then 0 and 1 get 2.
	assert.Equal(t, []keygroup.OperatorState[int]{
		{"a": {Elements: []int{0, 1, 2}}, "b": {Elements: []int{16, 17}}},
		{"a": {Elements: []int{3, 4, 5}}, "b": {Elements: []int{18, 19}}},
		{"a": {Elements: []int{6, 7}}, "b": {Elements: []int{10, 11, 12}}},
		{"a": {Elements: []int{8, 9}}, "b": {Elements: []int{13, 14, 15}}},
	}, got)
}

func TestUnionListState(t *testing.T) {
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	to2, err := keygroup.UnionList(tenFromThree, 2)
	require.NoError(t, err)
	assert.Equal(t, [][]int{all, all}, to2)
	to2[0][0] = 99
	assert.Equal(t, 0, to2[1][0], "each subtask has its own slice")

	old := make([]keygroup.OperatorState[int], 3)
	for i, l := range tenFromThree {
		old[i] = keygroup.OperatorState[int]{"u": {Mode: keygroup.Union, Elements: l}}
	}
	got, err := keygroup.RepartitionOperatorState(old, 4)
	require.NoError(t, err)
	require.Len(t, got, 4)
	for i, st := range got {
		assert.Equal(t, keygroup.OperatorState[int]{"u": {Mode: keygroup.Union, Elements: all}}, st, "subtask %d", i)
	}
}

// Parallelism unchanged: without Union state every subtask keeps exactly its own state (Flink
// returns the old states); with Union state it keeps its own split lists and gets every union list.
func TestOperatorStateParallelismUnchanged(t *testing.T) {
	old := splitState(tenFromThree...)
	got, err := keygroup.RepartitionOperatorState(old, 3)
	require.NoError(t, err)
	assert.Equal(t, old, got)

	withUnion := []keygroup.OperatorState[int]{
		{"s": {Elements: []int{1, 2}}, "u": {Mode: keygroup.Union, Elements: []int{100}}},
		{"s": {Elements: []int{3}}, "u": {Mode: keygroup.Union, Elements: []int{200, 201}}},
	}
	got, err = keygroup.RepartitionOperatorState(withUnion, 2)
	require.NoError(t, err)
	assert.Equal(t, []keygroup.OperatorState[int]{
		{"s": {Elements: []int{1, 2}}, "u": {Mode: keygroup.Union, Elements: []int{100, 200, 201}}},
		{"s": {Elements: []int{3}}, "u": {Mode: keygroup.Union, Elements: []int{100, 200, 201}}},
	}, got)
}

func TestOperatorStateErrors(t *testing.T) {
	_, err := keygroup.RepartitionOperatorState(splitState([]int{1}), 0)
	assert.ErrorContains(t, err, "new parallelism 0 is below 1")
	_, err = keygroup.RepartitionOperatorState[int](nil, 2)
	assert.ErrorContains(t, err, "no old subtask state")
	_, err = keygroup.RepartitionOperatorState([]keygroup.OperatorState[int]{
		{"x": {Mode: keygroup.SplitDistribute}}, {"x": {Mode: keygroup.Union}},
	}, 3)
	assert.ErrorContains(t, err, `list state "x" is UNION in old subtask 1 but SPLIT_DISTRIBUTE before`)
	_, err = keygroup.RepartitionOperatorState([]keygroup.OperatorState[int]{{"x": {Mode: 7}}}, 3)
	assert.ErrorContains(t, err, `list state "x" of old subtask 0 has unknown mode DistributionMode(7)`)
	_, err = keygroup.SplitDistributeList(tenFromThree, 0)
	assert.Error(t, err)
	_, err = keygroup.UnionList(tenFromThree, -1)
	assert.Error(t, err)
}
