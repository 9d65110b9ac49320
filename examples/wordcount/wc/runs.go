package wc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jobgraph/jobgraph/taskexecutor"
)

// The job's tasks exchange sorted runs. A run is what one producer subtask sends to one consumer
// subtask: the Words of its Chunks on that subpartition, in the order emitted (the shuffle keeps
// the order of one producer's subpartition). Every run is strictly increasing by word, byte order:
// sorted, and no word twice. The source sorts each of its runs; the count and the sink merge the
// runs of their producers instead of hashing or sorting everything again.

// maxProducers bounds Chunk.Producer: Flink's upper limit of a vertex's parallelism, 2^15.
const maxProducers = 1 << 15

// A run is a sorted run as the Chunks' Words it arrived in, in order, or a merged run (one
// slice). Its slices are never modified.
type run [][]WordCount

// len is the number of words in r.
func (r run) len() int {
	n := 0
	for _, ws := range r {
		n += len(ws)
	}
	return n
}

// check returns an error unless r is strictly increasing by word. input and producer name it.
func (r run) check(input, producer int) error {
	var prev *WordCount
	for _, ws := range r {
		for i := range ws {
			if prev != nil {
				switch strings.Compare(prev.Word, ws[i].Word) {
				case 0:
					return fmt.Errorf("word %q arrived twice from input %d, producer %d (counts %d and %d)",
						prev.Word, input, producer, prev.Count, ws[i].Count)
				case 1:
					return fmt.Errorf("the words from input %d, producer %d are out of order: %q before %q",
						input, producer, prev.Word, ws[i].Word)
				}
			}
			prev = &ws[i]
		}
	}
	return nil
}

// flat returns r's words as one slice: r's only slice, or a copy of them all.
func (r run) flat() []WordCount {
	switch len(r) {
	case 0:
		return nil
	case 1:
		return r[0]
	}
	out := make([]WordCount, 0, r.len())
	for _, ws := range r {
		out = append(out, ws...)
	}
	return out
}

// readRuns reads every Chunk of every input of env until each ends and returns the runs, input by
// input, by producer index, skipping empty ones. It checks that each run is strictly increasing.
// The runs alias the Chunks' Words.
func readRuns(ctx context.Context, env taskexecutor.Environment) ([]run, error) {
	info := env.Info()
	var byProducer []run // of the current input
	var runs []run
	for i := range env.NumInputs() {
		byProducer = byProducer[:0]
		err := readInput(ctx, env, i, func(ch Chunk) error {
			if ch.Producer >= maxProducers {
				return fmt.Errorf("wc: %s: input %d: chunk from producer %d", info.TaskName, i, ch.Producer)
			}
			for len(byProducer) <= ch.Producer {
				byProducer = append(byProducer, nil)
			}
			if len(ch.Words) > 0 {
				byProducer[ch.Producer] = append(byProducer[ch.Producer], ch.Words)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for p, r := range byProducer {
			if len(r) == 0 {
				continue
			}
			if err := r.check(i, p); err != nil {
				return nil, fmt.Errorf("wc: %s: %w", info.TaskName, err)
			}
			runs = append(runs, r)
		}
	}
	return runs, nil
}

// duplicateError reports a word that is in two runs that must not share words.
type duplicateError struct{ a, b WordCount }

func (e *duplicateError) Error() string {
	return fmt.Sprintf("word %q arrived twice (counts %d and %d)", e.a.Word, e.a.Count, e.b.Count)
}

// mergeRuns merges strictly increasing runs into one, a new slice unless there is a single run of
// a single slice. A word in several runs is summed into one WordCount when sum is set, and is a
// *duplicateError otherwise. It merges pairs of runs until one is left: log2(len(runs)) passes.
// The runs are not modified.
func mergeRuns(runs []run, sum bool) ([]WordCount, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	for len(runs) > 1 {
		next := make([]run, 0, (len(runs)+1)/2)
		for i := 0; i+1 < len(runs); i += 2 {
			m, err := merge2(runs[i], runs[i+1], sum)
			if err != nil {
				return nil, err
			}
			next = append(next, run{m})
		}
		if len(runs)%2 == 1 {
			next = append(next, runs[len(runs)-1])
		}
		runs = next
	}
	return runs[0].flat(), nil
}

// distinctWords returns the number of words in strictly increasing runs that share no word, and
// a *duplicateError for a word in two of them: it walks the runs side by side as mergeRuns does,
// comparing their next words, without building the merged slice. More than maxWalk runs are
// merged with mergeRuns instead (each step of the walk compares every run's next word).
func distinctWords(runs []run) (int, error) {
	if len(runs) > maxWalk {
		m, err := mergeRuns(runs, false)
		return len(m), err
	}
	// heads[k] is the unwalked rest of the current slice of rest[k].
	heads := make([][]WordCount, 0, len(runs))
	rest := make([]run, 0, len(runs))
	for _, r := range runs {
		heads, rest = append(heads, nil), append(rest, r)
	}
	n := 0
	for {
		// Refill the heads and drop the runs walked to their end.
		for k := 0; k < len(heads); {
			for len(heads[k]) == 0 && len(rest[k]) > 0 {
				heads[k], rest[k] = rest[k][0], rest[k][1:]
			}
			if len(heads[k]) == 0 {
				heads, rest = slices.Delete(heads, k, k+1), slices.Delete(rest, k, k+1)
				continue
			}
			k++
		}
		switch len(heads) {
		case 0:
			return n, nil
		case 1:
			n += len(heads[0]) + rest[0].len()
			return n, nil
		}
		// Step past the smallest next word until one run's slice runs out. Two equal next
		// words are both the smallest at once, so one is compared with the other.
		for {
			least := 0
			for k := 1; k < len(heads); k++ {
				switch strings.Compare(heads[k][0].Word, heads[least][0].Word) {
				case -1:
					least = k
				case 0:
					return 0, &duplicateError{heads[least][0], heads[k][0]}
				}
			}
			n++
			heads[least] = heads[least][1:]
			if len(heads[least]) == 0 {
				break
			}
		}
	}
}

// maxWalk is the most runs distinctWords walks side by side.
const maxWalk = 8

// merge2 merges two strictly increasing runs into a new slice (see mergeRuns).
func merge2(ra, rb run, sum bool) ([]WordCount, error) {
	out := make([]WordCount, ra.len()+rb.len())
	k := 0
	// a and b are the unmerged rest of the current slices of ra and rb.
	var a, b []WordCount
	for {
		for len(a) == 0 && len(ra) > 0 {
			a, ra = ra[0], ra[1:]
		}
		for len(b) == 0 && len(rb) > 0 {
			b, rb = rb[0], rb[1:]
		}
		if len(a) == 0 || len(b) == 0 {
			break
		}
		// Merge until a or b runs out.
		i, j := 0, 0
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
		a, b = a[i:], b[j:]
	}
	for _, rest := range [][][]WordCount{{a}, ra, {b}, rb} {
		for _, ws := range rest {
			k += copy(out[k:], ws)
		}
	}
	return out[:k:k], nil
}
