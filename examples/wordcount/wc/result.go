package wc

import (
	"bufio"
	"cmp"
	"container/heap"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jobgraph/jobgraph"
)

// WordCount is a word and its count: what the job's tasks exchange, in Chunks, and one line of
// its result.
type WordCount struct {
	Word  string
	Count int
}

// ChunkSize is the most words a Chunk carries.
const ChunkSize = 4096

// Chunk is the record the job's tasks exchange: up to ChunkSize words with their counts, from the
// producer subtask with index Producer. A Chunk's Words must not be modified once emitted.
type Chunk struct {
	Producer int
	Words    []WordCount
}

// results holds the sinks' results until the host takes them: jobgraph.JobID → []WordCount.
var results sync.Map

// TakeResult returns the result the sink of job jobID stored (every word with its count, sorted
// by word), and forgets it. ok is false when there is none (yet).
func TakeResult(jobID jobgraph.JobID) (result []WordCount, ok bool) {
	v, ok := results.LoadAndDelete(jobID)
	if !ok {
		return nil, false
	}
	return v.([]WordCount), true
}

func storeResult(jobID jobgraph.JobID, result []WordCount) { results.Store(jobID, result) }

// compareWords orders by word, byte order.
func compareWords(a, b WordCount) int { return strings.Compare(a.Word, b.Word) }

// SortedCounts returns the counts as a slice sorted by word (byte order): the order of the job's
// result.
func SortedCounts(counts map[string]int) []WordCount {
	out := make([]WordCount, 0, len(counts))
	for w, n := range counts {
		out = append(out, WordCount{w, n})
	}
	slices.SortFunc(out, compareWords)
	return out
}

// WriteCounts writes one "word\tcount\n" line per element, in the given order: the format of the
// sink's output file.
func WriteCounts(w io.Writer, counts []WordCount) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var num [20]byte
	for _, wc := range counts {
		bw.WriteString(wc.Word)
		bw.WriteByte('\t')
		bw.Write(strconv.AppendInt(num[:0], int64(wc.Count), 10))
		bw.WriteByte('\n')
	}
	return bw.Flush() // a bufio.Writer keeps its first error
}

// byCount orders by count descending, then word ascending (byte order).
func byCount(a, b WordCount) int {
	return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Word, b.Word))
}

// TopN returns the n most frequent words, sorted by count descending, then word ascending. It
// returns every word when n ≥ len(counts) and none when n ≤ 0. It takes O(len(counts)·log n).
func TopN(counts map[string]int, n int) []WordCount {
	return topN(func(yield func(WordCount) bool) {
		for w, c := range counts {
			if !yield(WordCount{w, c}) {
				return
			}
		}
	}, n)
}

// TopOf is TopN over a slice of counts, each word at most once.
func TopOf(counts []WordCount, n int) []WordCount { return topN(slices.Values(counts), n) }

func topN(counts iter.Seq[WordCount], n int) []WordCount {
	if n <= 0 {
		return []WordCount{}
	}
	// A min-heap, by the order above reversed, of the best n seen so far: its root is the worst.
	h := &worstFirst{}
	for wc := range counts {
		if len(*h) < n {
			heap.Push(h, wc)
		} else if byCount(wc, (*h)[0]) < 0 {
			(*h)[0] = wc
			heap.Fix(h, 0)
		}
	}
	out := []WordCount(*h)
	slices.SortFunc(out, byCount)
	return out
}

type worstFirst []WordCount

func (h worstFirst) Len() int           { return len(h) }
func (h worstFirst) Less(i, j int) bool { return byCount(h[i], h[j]) > 0 }
func (h worstFirst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *worstFirst) Push(x any)        { *h = append(*h, x.(WordCount)) }
func (h *worstFirst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
