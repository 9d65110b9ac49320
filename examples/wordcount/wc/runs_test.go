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
	got, err = mergeRuns([]run{{one}}, false)
	require.NoError(t, err)
	assert.Equal(t, one, got)
	got, err = mergeRuns([]run{{one[:1], one[1:]}}, false)
	require.NoError(t, err)
	assert.Equal(t, one, got, "a single run of several chunks")

	// Runs of several chunks, ending at different points, merged in pairs over three passes.
	runs := []run{
		{{{"b", 1}}, {{"d", 1}}},
		{{{"a", 2}, {"d", 2}}, {{"z", 2}}},
		{{{"d", 3}}},
		{},
		{{{"c", 5}}, {{"z", 5}, {"é", 5}}, {{"ü", 1}}},
	}
	got, err = mergeRuns(runs, true)
	require.NoError(t, err)
	assert.Equal(t, []WordCount{{"a", 2}, {"b", 1}, {"c", 5}, {"d", 6}, {"z", 7}, {"é", 5}, {"ü", 1}}, got)
	assert.Equal(t, run{{{"b", 1}}, {{"d", 1}}}, runs[0], "the runs are not modified")

	_, err = mergeRuns(runs, false)
	var dup *duplicateError
	require.ErrorAs(t, err, &dup)
	assert.Equal(t, `word "d" arrived twice (counts 1 and 2)`, err.Error())

	got, err = mergeRuns([]run{{{{"b", 1}}}, {{{"a", 1}}, {{"c", 1}}}, {{{"d", 1}}}}, false)
	require.NoError(t, err)
	assert.Equal(t, []WordCount{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}}, got)
}

func TestRunCheck(t *testing.T) {
	assert.NoError(t, run(nil).check(0, 0))
	assert.NoError(t, run{{{"A", 1}, {"a", 1}}, {{"ab", 1}}, {{"é", 1}}}.check(0, 0))
	assert.EqualError(t, run{{{"a", 1}, {"b", 1}}, {{"b", 4}}}.check(1, 2), `word "b" arrived twice from input 1, producer 2 (counts 1 and 4)`)
	assert.EqualError(t, run{{{"b", 1}}, {{"a", 1}}}.check(0, 3), `the words from input 0, producer 3 are out of order: "b" before "a"`)
}

func TestDistinctWords(t *testing.T) {
	n, err := distinctWords(nil)
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	n, err = distinctWords([]run{{{{"a", 1}}, {{"b", 1}, {"c", 1}}}})
	require.NoError(t, err)
	assert.Equal(t, 3, n, "one run")

	// Runs of several chunks (one empty), ending at different points.
	runs := []run{
		{{{"b", 1}}, {}, {{"d", 1}}},
		{{{"a", 2}, {"e", 2}}, {{"z", 2}}},
		{},
		{{{"c", 5}}, {{"y", 5}, {"é", 5}}, {{"ü", 1}}},
	}
	n, err = distinctWords(runs)
	require.NoError(t, err)
	assert.Equal(t, 9, n)
	assert.Equal(t, run{{{"b", 1}}, {}, {{"d", 1}}}, runs[0], "the runs are not modified")

	// A word in two runs, wherever it is: at a run's start, inside one, at the end of both,
	// with a smaller word of a third run between the two when they meet.
	for _, tc := range []struct {
		runs []run
		want string
	}{
		{[]run{{{{"a", 1}}}, {{{"a", 2}}}}, `word "a" arrived twice (counts 1 and 2)`},
		{[]run{{{{"b", 1}, {"m", 1}}}, {{{"a", 1}}, {{"m", 3}, {"x", 1}}}}, `word "m" arrived twice (counts 1 and 3)`},
		{[]run{{{{"q", 4}}}, {{{"a", 1}}}, {{{"b", 1}, {"q", 6}}}}, `word "q" arrived twice (counts 4 and 6)`},
		{[]run{{{{"k", 1}}}, {{{"a", 1}, {"z", 1}}}, {{{"k", 2}}}}, `word "k" arrived twice (counts 1 and 2)`},
	} {
		_, err := distinctWords(tc.runs)
		var dup *duplicateError
		require.ErrorAs(t, err, &dup)
		assert.Equal(t, tc.want, err.Error())
	}

	// More runs than it walks side by side: merged instead, with the same answers.
	var many []run
	for k := range maxWalk + 1 {
		many = append(many, run{{{string(rune('a' + k)), 1}}})
	}
	n, err = distinctWords(many)
	require.NoError(t, err)
	assert.Equal(t, maxWalk+1, n)
	many = append(many, run{{{"c", 9}}})
	_, err = distinctWords(many)
	assert.EqualError(t, err, `word "c" arrived twice (counts 1 and 9)`)
}
