package wc

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
