package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/examples/wordcount/wc"
	"github.com/jobgraph/jobgraph/rpc"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

// writeInput writes a small Go source tree for the word count.
func writeInput(t *testing.T) string {
	dir := t.TempDir()
	files := map[string]string{
		"a/a.go":     "package a\n\n// Count counts the words of the words.\nfunc Count(words []string) int { return len(words) }\n",
		"a/b/b.go":   "package b\n\nimport \"fmt\"\n\nfunc Hello() { fmt.Println(\"hello, words, hello\") }\n",
		"c.go":       "package c\n\nvar x, y, z = 1, 2, 3 // x y z\n",
		"d/notgo.md": "ignored words words words\n",
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return dir
}

// The word count of examples/wordcount runs on a JobManager and two TaskExecutors started by
// cluster.RunJobManager and cluster.RunTaskExecutor, each on a gRPC Service of its own on
// loopback, the TaskExecutors with network shuffles: the job FINISHES, the sink's file holds
// exactly the counts of wc.SequentialCount (what examples/wordcount writes), and the totals
// are the input's.
func TestWordCountOnTheRolesOverGRPC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	jm, err := startJobManager(ctx, "", defaultHeartbeatTimeout, log)
	require.NoError(t, err)
	defer func() { assert.NoError(t, jm.close()) }()
	for range 2 {
		te, err := startTaskExecutor(ctx, jm.jm.ResourceManagerAddress(), 2, defaultHeartbeatTimeout, log)
		require.NoError(t, err)
		defer func() { assert.NoError(t, te.close()) }()
		_, err = te.te.TaskExecutor().WaitRegistered(ctx)
		require.NoError(t, err)
	}

	files, err := wc.ListInputFiles(writeInput(t))
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "counts.tsv")
	g, err := buildJob(files, 2, out, 3, defaultHeartbeatTimeout)
	require.NoError(t, err)
	client, err := grpctransport.New(grpctransport.Options{Logger: log})
	require.NoError(t, err)
	defer client.Close()
	require.NoError(t, jm.jm.AwaitLeadership(ctx))
	d, err := rpc.Connect[rpc.DispatcherGateway](ctx, client, jm.jm.DispatcherAddress())
	require.NoError(t, err)
	require.NoError(t, d.SubmitJob(ctx, g))
	res, err := d.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFinished, res.Status, "root cause: %v", res.RootCause)

	want, err := wc.SequentialCount(files)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, wc.WriteCounts(&buf, wc.SortedCounts(want)))
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, buf.String(), string(got))
	n, err := jobgraph.AccumulatorValue[int](res.Accumulators, wc.AccFiles)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	distinct, err := jobgraph.AccumulatorValue[int](res.Accumulators, wc.AccDistinctWords)
	require.NoError(t, err)
	assert.Equal(t, len(want), distinct)
}
