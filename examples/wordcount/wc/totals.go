package wc

import (
	"errors"
	"fmt"
	"io"

	"github.com/jobgraph/jobgraph"
)

// Totals are what the job's accumulators report (jobgraph.JobResult.Accumulators): merged over
// the subtasks' attempts that count, so a failed and restarted attempt is not counted twice.
type Totals struct {
	Files        int
	Bytes, Words int64
	Distinct     int
	// Top is the AccTopWords list, read only when ReadTotals is asked for top > 0.
	Top []WordCount
	// FilesPerSource is AccFilesPerSource: source subtask → the files it read (nil when no
	// file was read).
	FilesPerSource map[int]int
}

// ReadTotals reads the job's totals from its accumulators; with top > 0 also the top words, and
// FilesPerSource when the job has it.
// Errors: every accumulator missing or of another type, joined.
func ReadTotals(accs map[string]jobgraph.SerializedAccumulator, top int) (Totals, error) {
	var t Totals
	var errs []error
	read := func(err error) { errs = append(errs, err) }
	var err error
	t.Files, err = jobgraph.AccumulatorValue[int](accs, AccFiles)
	read(err)
	t.Bytes, err = jobgraph.AccumulatorValue[int64](accs, AccBytes)
	read(err)
	t.Words, err = jobgraph.AccumulatorValue[int64](accs, AccWords)
	read(err)
	t.Distinct, err = jobgraph.AccumulatorValue[int](accs, AccDistinctWords)
	read(err)
	if top > 0 {
		t.Top, err = jobgraph.AccumulatorValue[[]WordCount](accs, AccTopWords)
		read(err)
	}
	if _, ok := accs[AccFilesPerSource]; ok { // absent when no file was read
		t.FilesPerSource, err = jobgraph.AccumulatorValue[map[int]int](accs, AccFilesPerSource)
		if len(t.FilesPerSource) == 0 {
			t.FilesPerSource = nil // the sources registered it but read no file
		}
		read(err)
	}
	return t, errors.Join(errs...)
}

// WriteFilesPerSource prints how many files each of the parallelism source subtasks read: a
// "files per source subtask (files-per-source):" section with one "source (i/p) n" line each.
func (t Totals) WriteFilesPerSource(w io.Writer, parallelism int) {
	fmt.Fprintf(w, "\nfiles per source subtask (%s):\n", AccFilesPerSource)
	for i := range parallelism {
		fmt.Fprintf(w, "  %s (%d/%d) %8d\n", SourceVertex, i+1, parallelism, t.FilesPerSource[i])
	}
}

// Write prints the totals and the top words as the examples print them: a "totals
// (accumulators):" section, then "top N of D distinct words:" with one numbered line a word.
func (t Totals) Write(w io.Writer, top int) {
	fmt.Fprintf(w, "\ntotals (accumulators):\n")
	fmt.Fprintf(w, "  %-15s %d\n", AccFiles, t.Files)
	fmt.Fprintf(w, "  %-15s %d\n", AccBytes, t.Bytes)
	fmt.Fprintf(w, "  %-15s %d\n", AccWords, t.Words)
	fmt.Fprintf(w, "  %-15s %d\n", AccDistinctWords, t.Distinct)

	fmt.Fprintf(w, "\ntop %d of %d distinct words:\n", top, t.Distinct)
	for i, c := range t.Top {
		fmt.Fprintf(w, "  %2d. %-20s %d\n", i+1, c.Word, c.Count)
	}
}
