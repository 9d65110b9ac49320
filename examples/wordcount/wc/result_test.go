package wc

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/taskexecutor"
)

func TestTopN(t *testing.T) {
	counts := map[string]int{"func": 5, "b": 3, "a": 3, "Z": 3, "x": 1, "if": 7, "é": 3}
	assert.Equal(t, []WordCount{{"if", 7}, {"func", 5}, {"Z", 3}, {"a", 3}}, TopN(counts, 4))
	assert.Equal(t, []WordCount{{"if", 7}, {"func", 5}, {"Z", 3}, {"a", 3}, {"b", 3}, {"é", 3}, {"x", 1}}, TopN(counts, 100))
	assert.Equal(t, []WordCount{{"if", 7}}, TopN(counts, 1))
	assert.Empty(t, TopN(counts, 0))
	assert.Empty(t, TopN(counts, -1))
	assert.Empty(t, TopN(nil, 3))
}

func TestSortedCountsAndWriteCounts(t *testing.T) {
	sorted := SortedCounts(map[string]int{"b": 2, "é": 1, "B": 10, "_": 3, "a1": 12345678901})
	assert.Equal(t, []WordCount{{"B", 10}, {"_", 3}, {"a1", 12345678901}, {"b", 2}, {"é", 1}}, sorted, "byte order")
	var b strings.Builder
	assert.NoError(t, WriteCounts(&b, sorted))
	assert.Equal(t, "B\t10\n_\t3\na1\t12345678901\nb\t2\né\t1\n", b.String())

	b.Reset()
	assert.NoError(t, WriteCounts(&b, nil))
	assert.Empty(t, b.String())

	errBroken := errors.New("broken")
	assert.ErrorIs(t, WriteCounts(failingWriter{errBroken}, sorted), errBroken)
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// A job whose sources read no file has a files-per-source histogram with nothing in it:
// ReadTotals gives nil, as its doc says, not an empty map.
func TestReadTotalsFilesPerSourceNilWhenNoFileWasRead(t *testing.T) {
	reg := taskexecutor.NewAccumulatorRegistry()
	_, err := reg.IntCounter(AccFiles)
	require.NoError(t, err)
	_, err = reg.LongCounter(AccBytes)
	require.NoError(t, err)
	_, err = reg.LongCounter(AccWords)
	require.NoError(t, err)
	_, err = reg.IntCounter(AccDistinctWords)
	require.NoError(t, err)
	_, err = reg.Histogram(AccFilesPerSource)
	require.NoError(t, err)
	tot, err := ReadTotals(reg.Snapshot(), 0)
	require.NoError(t, err)
	assert.Nil(t, tot.FilesPerSource)
	assert.Equal(t, Totals{}, tot)
}
