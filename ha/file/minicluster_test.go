package file_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha/file"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// A MiniCluster over ha/file runs a job to FINISHED: the plan was stored and removed, the
// result is a clean entry under Flink's file name, and the JobMaster's leader file is gone; a
// closed client still reads.
func TestMiniClusterRunsAJobOverTheDirectory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// No contender of the test's holds the Dispatcher election: the cluster's Dispatcher is its
	// contender, and Run waits until the client leads.
	s, err := file.New(file.Options{Dir: dir, PollInterval: testPoll})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	reg := taskexecutor.NewRegistry()
	reg.Register("noop", func(context.Context, taskexecutor.Environment) error { return nil })
	mc, err := minicluster.New(minicluster.Config{Registry: reg, HA: s})
	require.NoError(t, err)
	require.NoError(t, mc.Start(ctx))
	g := jobgraph.New("over ha/file", jobgraph.Batch)
	g.AddVertex("v", "noop", 1)
	res, err := mc.Run(ctx, g)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
	require.NoError(t, mc.Close())
	require.NoError(t, s.Close()) // runs the leader-file writes and removals still queued

	entry, err := s.JobResultStore().Get(ctx, g.JobID)
	require.NoError(t, err)
	assert.True(t, entry.Clean, "the Dispatcher's cleanup marked the result clean")
	assert.Equal(t, jobgraph.JobStatusFinished, entry.Result.Status)
	assert.FileExists(t, filepath.Join(dir, "job-result-store", g.JobID.String()+".json"))
	plans, err := os.ReadDir(filepath.Join(dir, "plans"))
	require.NoError(t, err)
	assert.Empty(t, plans, "the plan was removed in the job's cleanup")
	assert.NoFileExists(t, filepath.Join(dir, "leader", g.JobID.String()+".json"), "the JobMaster's leader file went with its election")
}
