package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	for _, s := range []string{"is CREATED", "is RUNNING", "is FINISHED", "time per vertex:", "source", "count", "sink", "top 20 of", "total "} {
		assert.Contains(t, text, s)
	}
	assert.Contains(t, text, fmt.Sprintf("%-20s %d", "alpha", 500))
}

func TestWordCountRejectsBadFlags(t *testing.T) {
	var stdout bytes.Buffer
	assert.Error(t, run(context.Background(), []string{"-parallelism", "0"}, &stdout))
	assert.Error(t, run(context.Background(), []string{"extra"}, &stdout))
}
