package wc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jobgraph/jobgraph/taskexecutor"
)

// The job's tasks exchange sorted runs. A run is what one producer subtask sends to one consumer
// subtask: the Words of its Chunks on that subpartition, concatenated in the order emitted (the
// shuffle keeps the order of one producer's subpartition). Every run is strictly increasing by
// word, byte order: sorted, and no word twice. The source sorts each of its runs; the count and
// the sink merge the runs of their producers instead of hashing or sorting everything again.

// maxProducers bounds Chunk.Producer: Flink's upper limit of a vertex's parallelism, 2^15.
const maxProducers = 1 << 15

// sortWords sorts words by word, byte order.
func sortWords(words []WordCount) { slices.SortFunc(words, compareWords) }

// checkRun returns an error unless run is strictly increasing by word. what names the run.
func checkRun(run []WordCount, what string) error {
	for i := 1; i < len(run); i++ {
		switch strings.Compare(run[i-1].Word, run[i].Word) {
		case 0:
			return fmt.Errorf("word %q arrived twice from %s (counts %d and %d)", run[i].Word, what, run[i-1].Count, run[i].Count)
		case 1:
			return fmt.Errorf("the words from %s are out of order: %q before %q", what, run[i-1].Word, run[i].Word)
		}
	}
	return nil
}

// readRuns reads every Chunk of every input of env until each ends and returns the runs, input by
// input, by producer index, skipping empty ones. It checks that each run is strictly increasing.
// A run of a single Chunk aliases its Words; longer runs are copied together.
func readRuns(ctx context.Context, env taskexecutor.Environment) ([][]WordCount, error) {
	info := env.Info()
	var chunks [][][]WordCount // by producer, of the current input
	var runs [][]WordCount
	for i := range env.NumInputs() {
		chunks = chunks[:0]
		err := readInput(ctx, env, i, func(ch Chunk) error {
			if ch.Producer >= maxProducers {
				return fmt.Errorf("wc: %s: input %d: chunk from producer %d", info.TaskName, i, ch.Producer)
			}
			for len(chunks) <= ch.Producer {
				chunks = append(chunks, nil)
			}
			chunks[ch.Producer] = append(chunks[ch.Producer], ch.Words)
			return nil
		})
		if err != nil {
			return nil, err
		}
		for p, cs := range chunks {
			var run []WordCount
			if len(cs) == 1 {
				run = cs[0]
			} else {
				run = slices.Concat(cs...)
			}
			if len(run) == 0 {
				continue
			}
			if err := checkRun(run, fmt.Sprintf("input %d, producer %d", i, p)); err != nil {
				return nil, fmt.Errorf("wc: %s: %w", info.TaskName, err)
			}
			runs = append(runs, run)
		}
	}
	return runs, nil
}

// duplicateError reports a word that is in two runs that must not share words.
type duplicateError struct{ a, b WordCount }

func (e *duplicateError) Error() string {
	return fmt.Sprintf("word %q arrived twice (counts %d and %d)", e.a.Word, e.a.Count, e.b.Count)
}

// mergeRuns merges strictly increasing runs into one. A word in several runs is summed into one
// WordCount when sum is set, and is a *duplicateError otherwise. It merges pairs of runs until
// one is left: log2(len(runs)) passes. The result may alias a run; the runs are not modified.
func mergeRuns(runs [][]WordCount, sum bool) ([]WordCount, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	for len(runs) > 1 {
		next := make([][]WordCount, 0, (len(runs)+1)/2)
		for i := 0; i+1 < len(runs); i += 2 {
			m, err := merge2(runs[i], runs[i+1], sum)
			if err != nil {
				return nil, err
			}
			next = append(next, m)
		}
		if len(runs)%2 == 1 {
			next = append(next, runs[len(runs)-1])
		}
		runs = next
	}
	return runs[0], nil
}

// merge2 merges two strictly increasing runs into a new one (see mergeRuns).
func merge2(a, b []WordCount, sum bool) ([]WordCount, error) {
	out := make([]WordCount, len(a)+len(b))
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch strings.Compare(a[i].Word, b[j].Word) {
		case -1:
			out[k] = a[i]
			i++
		case 1:
			out[k] = b[j]
			j++
		default:
			if !sum {
				return nil, &duplicateError{a[i], b[j]}
			}
			out[k] = WordCount{Word: a[i].Word, Count: a[i].Count + b[j].Count}
			i++
			j++
		}
		k++
	}
	k += copy(out[k:], a[i:])
	k += copy(out[k:], b[j:])
	return out[:k:k], nil
}
