package wc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMergeRuns(t *testing.T) {
	got, err := mergeRuns(nil, true)
	require.NoError(t, err)
	assert.Empty(t, got)

	one := []WordCount{{"a", 1}, {"b", 2}}
	got, err = mergeRuns([][]WordCount{one}, false)
	require.NoError(t, err)
	assert.Equal(t, one, got)

	runs := [][]WordCount{
		{{"b", 1}, {"d", 1}},
		{{"a", 2}, {"d", 2}, {"z", 2}},
		{{"d", 3}},
		{},
		{{"c", 5}, {"z", 5}, {"é", 5}},
	}
	got, err = mergeRuns(runs, true)
	require.NoError(t, err)
	assert.Equal(t, []WordCount{{"a", 2}, {"b", 1}, {"c", 5}, {"d", 6}, {"z", 7}, {"é", 5}}, got)
	assert.Equal(t, []WordCount{{"b", 1}, {"d", 1}}, runs[0], "the runs are not modified")

	_, err = mergeRuns(runs, false)
	var dup *duplicateError
	require.ErrorAs(t, err, &dup)
	assert.Equal(t, `word "d" arrived twice (counts 1 and 2)`, err.Error())

	got, err = mergeRuns([][]WordCount{{{"b", 1}}, {{"a", 1}, {"c", 1}}, {{"d", 1}}}, false)
	require.NoError(t, err)
	assert.Equal(t, []WordCount{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}}, got)
}

func TestCheckRun(t *testing.T) {
	assert.NoError(t, checkRun(nil, "x"))
	assert.NoError(t, checkRun([]WordCount{{"A", 1}, {"a", 1}, {"ab", 1}, {"é", 1}}, "x"))
	assert.EqualError(t, checkRun([]WordCount{{"a", 1}, {"b", 1}, {"b", 4}}, "x"), `word "b" arrived twice from x (counts 1 and 4)`)
	assert.EqualError(t, checkRun([]WordCount{{"b", 1}, {"a", 1}}, "x"), `the words from x are out of order: "b" before "a"`)
}
