package wc

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sortKeysOf returns the sortKeys of words, in order.
func sortKeysOf(words []string) []sortKey {
	keys := make([]sortKey, len(words))
	for i, w := range words {
		keys[i] = sortKey{key: wordKey(w, 0), i: i}
	}
	return keys
}

// sortedByKeys returns words sorted by sortWordKeys.
func sortedByKeys(words []string) []string {
	keys := sortKeysOf(words)
	sortWordKeys(keys, make([]sortKey, len(keys)), words)
	out := make([]string, len(keys))
	for j, k := range keys {
		out[j] = words[k.i]
	}
	return out
}

func TestSortWordKeys(t *testing.T) {
	assert.Empty(t, sortedByKeys(nil))
	assert.Equal(t, []string{"x"}, sortedByKeys([]string{"x"}))
	small := []string{"b", "é", "B", "_", "a1", "abcdefgh", "abcdefg", "abcdefghi", "abcdefgha", "日本語", "a"}
	want := slices.Sorted(slices.Values(small))
	assert.Equal(t, want, sortedByKeys(small))

	// Large groups sharing 8, 16 and more bytes exercise the radix passes and the recursion, and
	// duplicates (which runs never hold) must not loop forever.
	rng := rand.New(rand.NewPCG(5, 6))
	prefixes := []string{"", "Test", "TestMarshal", "BenchmarkEncodeDecode", strings.Repeat("x", 40), "é日"}
	var words []string
	for range 20000 {
		p := prefixes[rng.IntN(len(prefixes))]
		words = append(words, fmt.Sprintf("%s%x", p, rng.IntN(5000)))
	}
	words = append(words, strings.Repeat("y", 30), strings.Repeat("y", 30), strings.Repeat("y", 31))
	want = slices.Sorted(slices.Values(words))
	require.Equal(t, want, sortedByKeys(words))
	// A group just above the small-sort size whose words end at the next offset.
	var same []string
	for range smallSort + 3 {
		same = append(same, "abcdefgh")
	}
	same = append(same, "abcdefgh_")
	assert.Equal(t, slices.Sorted(slices.Values(same)), sortedByKeys(same))
}

func FuzzSortWordKeys(f *testing.F) {
	f.Add([]byte("b a abcdefghij abcdefghi 日本語 a"))
	f.Add([]byte("a a\x00 a\x00\x00\x00\x00\x00\x00\x00\x00\x00z abcdefgh\x00 abcdefgh"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Any strings, zero bytes included, twice over and in groups beyond smallSort.
		words := strings.Split(string(data), " ")
		for range 5 {
			words = append(words, words...)
		}
		require.Equal(t, slices.Sorted(slices.Values(words)), sortedByKeys(words))
	})
}

// BenchmarkSortRun sorts the distinct words of the first half of the default input (by path) that
// fall into subpartition 0 of 2, in first-seen order, as a source subtask of the benchmark job
// sorts a run: sortWordKeys
// against slices.SortFunc with strings.Compare.
func BenchmarkSortRun(b *testing.B) {
	dir, err := DefaultInputDir()
	if err != nil {
		b.Skip(err)
	}
	files, err := ListInputFiles(dir)
	require.NoError(b, err)
	var c Counter
	var buf []byte
	for _, f := range files[:len(files)/2] {
		buf, err = readFile(f.Path, buf)
		require.NoError(b, err)
		c.AddText(buf)
	}
	var run []int
	for k, w := range c.words {
		if Partition(w, 2) == 0 {
			run = append(run, k)
		}
	}
	b.Run("sortWordKeys", func(b *testing.B) {
		keys := make([]sortKey, len(run))
		tmp := make([]sortKey, len(run))
		for b.Loop() {
			for j, k := range run {
				keys[j] = sortKey{key: wordKey(c.words[k], 0), i: k}
			}
			sortWordKeys(keys, tmp, c.words)
		}
		require.True(b, slices.IsSortedFunc(keys, func(x, y sortKey) int { return strings.Compare(c.words[x.i], c.words[y.i]) }))
	})
	b.Run("SortFunc", func(b *testing.B) {
		work := make([]int, len(run))
		for b.Loop() {
			copy(work, run)
			slices.SortFunc(work, func(x, y int) int { return strings.Compare(c.words[x], c.words[y]) })
		}
	})
}
