package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph/examples/wordcount/wc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writeCorpus creates a small directory of .go files (and some files that must be ignored).
func writeCorpus(t *testing.T) string {
	dir := t.TempDir()
	files := map[string]string{
		"a.go":             "package a\n\nfunc Hello() string { return \"héllo, wörld\" } // hello_world 42\n",
		"b.go":             "package b\nvar x_1, X_1 = 1, 2 // 日本語 テキスト\n",
		"sub/c.go":         "package sub\n// hello hello HELLO\nconst π = 3.14159\n",
		"sub/deeper/d.go":  strings.Repeat("alpha beta gamma_delta 7 ", 500),
		"sub/notes.txt":    "not counted: zebra zebra zebra",
		"sub/deeper/e.go~": "not counted either",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	return dir
}

func TestWordCountMatchesSequentialCount(t *testing.T) {
	dir := writeCorpus(t)
	out := filepath.Join(t.TempDir(), "words.tsv")
	var stdout bytes.Buffer
	err := run(context.Background(), []string{"-input", dir, "-parallelism", "3", "-taskexecutors", "2", "-slots", "2", "-out", out}, &stdout)
	require.NoError(t, err, stdout.String())

	files, err := wc.ListInputFiles(dir)
	require.NoError(t, err)
	require.Len(t, files, 4)
	want, err := wc.SequentialCount(files)
	require.NoError(t, err)
	var wantFile bytes.Buffer
	require.NoError(t, wc.WriteCounts(&wantFile, wc.SortedCounts(want)))
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, wantFile.String(), string(got))
	assert.Equal(t, 500, want["alpha"])
	assert.Equal(t, 2, want["hello"])
	assert.Equal(t, 0, want["zebra"])

	text := stdout.String()
	for _, s := range []string{"is INITIALIZING", "is CREATED", "is RUNNING", "is FINISHED", "time per vertex:", "source", "count", "sink", "top 20 of", "total "} {
		assert.Contains(t, text, s)
	}
	assert.Contains(t, text, wantTotals(t, files, want), "the totals come from the accumulators")
	perSource := filesPerSource(t, text, 3)
	assert.Equal(t, 4, perSource[0]+perSource[1]+perSource[2], "every file read by one source subtask: %v", perSource)
	assert.Contains(t, text, fmt.Sprintf("top 20 of %d distinct words:\n   1. %-20s %d\n", len(want), "7", 500))
	assert.Contains(t, text, fmt.Sprintf("%-20s %d", "alpha", 500))
}

// wantTotals is the totals section the job prints for files, whose words are want.
func wantTotals(t *testing.T, files []wc.InputFile, want map[string]int) string {
	t.Helper()
	var bytes int64
	for _, f := range files {
		bytes += f.Size
	}
	words := 0
	for _, n := range want {
		words += n
	}
	return fmt.Sprintf("totals (accumulators):\n  %-15s %d\n  %-15s %d\n  %-15s %d\n  %-15s %d\n",
		"files", len(files), "bytes", bytes, "words", words, "distinct-words", len(want))
}

// filesPerSource parses the "files per source subtask" section of the output.
func filesPerSource(t *testing.T, text string, p int) []int {
	t.Helper()
	_, section, ok := strings.Cut(text, "\nfiles per source subtask (files-per-source):\n")
	require.True(t, ok, text)
	lines := strings.Split(section, "\n")
	require.GreaterOrEqual(t, len(lines), p)
	out := make([]int, p)
	for i := range p {
		var n int
		_, err := fmt.Sscanf(strings.TrimSpace(lines[i]), fmt.Sprintf("source (%d/%d) %%d", i+1, p), &n)
		require.NoError(t, err, lines[i])
		out[i] = n
	}
	return out
}

// -slow-source: source subtask 0 waits a (virtual) second before each file, while subtask 1
// reads at once; the coordinator hands each file (-split-bytes 1: a split per file) to whichever
// subtask asks, so subtask 1 reads
// every file but the one subtask 0 may have asked for first (whether its first request came
// before subtask 1 had taken all four is a race of the first instant). The counts are the same.
func TestWordCountSlowSourceReadsFewerFiles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := writeCorpus(t)
		files, err := wc.ListInputFiles(dir)
		require.NoError(t, err)
		want, err := wc.SequentialCount(files)
		require.NoError(t, err)
		var wantFile bytes.Buffer
		require.NoError(t, wc.WriteCounts(&wantFile, wc.SortedCounts(want)))

		out := filepath.Join(t.TempDir(), "words.tsv")
		var stdout bytes.Buffer
		err = run(context.Background(), []string{"-input", dir, "-parallelism", "2", "-taskexecutors", "1", "-slots", "2",
			"-out", out, "-slow-source", "1s", "-split-bytes", "1"}, &stdout)
		require.NoError(t, err, stdout.String())
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, wantFile.String(), string(got))
		text := stdout.String()
		assert.Contains(t, text, wantTotals(t, files, want))
		perSource := filesPerSource(t, text, 2)
		assert.Contains(t, [][]int{{0, 4}, {1, 3}}, perSource, text)
	})
}

func TestWordCountRejectsBadFlags(t *testing.T) {
	var stdout bytes.Buffer
	assert.Error(t, run(context.Background(), []string{"-parallelism", "0"}, &stdout))
	assert.Error(t, run(context.Background(), []string{"extra"}, &stdout))
	assert.ErrorContains(t, run(context.Background(), []string{"-split-bytes", "0"}, &stdout), "-split-bytes must be at least 1")
}

// -fail-once VERTEX: subtask 0 of that vertex fails after doing its work; the job restarts it
// (fixed-delay, 1 attempt) and the output is still exactly the sequential count.
func TestWordCountFailOnce(t *testing.T) {
	dir := writeCorpus(t)
	files, err := wc.ListInputFiles(dir)
	require.NoError(t, err)
	want, err := wc.SequentialCount(files)
	require.NoError(t, err)
	var wantFile bytes.Buffer
	require.NoError(t, wc.WriteCounts(&wantFile, wc.SortedCounts(want)))

	for _, tc := range []struct {
		vertex    string
		restarted []string // in the order they were redeployed
	}{
		// Every edge is BLOCKING, so each subtask is its own region: a failed subtask restarts
		// with the regions downstream of it, and nothing that still runs, already finished, or
		// still waits for its slot (it produces its partition when it runs).
		{"source", []string{"source (1/2) attempt 1", "count (1/2) attempt 1", "count (2/2) attempt 1", "sink (1/1) attempt 1"}},
		{"count", []string{"count (1/2) attempt 1", "sink (1/1) attempt 1"}},
		{"sink", []string{"sink (1/1) attempt 1"}},
	} {
		t.Run(tc.vertex, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "words.tsv")
			var stdout bytes.Buffer
			err := run(context.Background(), []string{"-input", dir, "-parallelism", "2", "-taskexecutors", "1", "-slots", "2",
				"-out", out, "-fail-once", tc.vertex, "-restart-delay", "0s"}, &stdout)
			require.NoError(t, err, stdout.String())
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			assert.Equal(t, wantFile.String(), string(got))

			text := stdout.String()
			assert.Contains(t, text, "is RESTARTING")
			assert.Contains(t, text, fmt.Sprintf("%s (1/", tc.vertex)+"")
			assert.Contains(t, text, "injected failure (fail once)")
			i := strings.Index(text, "restarted executions:\n")
			require.GreaterOrEqual(t, i, 0, text)
			j := strings.Index(text[i:], "\n\n")
			var restarted []string
			for _, line := range strings.Split(strings.TrimSpace(text[i+len("restarted executions:\n"):i+j]), "\n") {
				restarted = append(restarted, strings.TrimSpace(line))
			}
			assert.ElementsMatch(t, tc.restarted, restarted, text)
			// The failed attempt's totals are discarded with it: they are counted once.
			assert.Contains(t, text, wantTotals(t, files, want))
		})
	}
	var stdout bytes.Buffer
	assert.ErrorContains(t, run(context.Background(), []string{"-input", dir, "-fail-once", "nope"}, &stdout), `cannot fail vertex "nope" once`)
}
