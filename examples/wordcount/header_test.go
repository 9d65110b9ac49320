package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The header names the cluster in correct English: "1 TaskExecutor × 1 slot", "2 TaskExecutors
// × 2 slots" (it said "× 1 slots").
func TestWordCountHeaderPluralizes(t *testing.T) {
	dir := writeCorpus(t)
	for _, tc := range []struct {
		taskExecutors, slots string
		want                 string
	}{
		{"1", "1", "parallelism 1 on 1 TaskExecutor × 1 slot\n"},
		{"2", "2", "parallelism 1 on 2 TaskExecutors × 2 slots\n"},
	} {
		var stdout bytes.Buffer
		out := filepath.Join(t.TempDir(), "words.tsv")
		err := run(context.Background(), []string{"-input", dir, "-parallelism", "1", "-taskexecutors", tc.taskExecutors, "-slots", tc.slots, "-out", out}, &stdout)
		require.NoError(t, err, stdout.String())
		header, _, _ := strings.Cut(stdout.String(), "\n")
		assert.True(t, strings.HasSuffix(header+"\n", tc.want), "header %q", header)
	}
}
