package wc

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

// RunOnMiniCluster runs the job to FINISHED on a cluster of the shape asked for: the -out file
// holds exactly SequentialCount's counts, the accumulators the input's totals, Prepare saw the
// job before it ran (every vertex in the slot-sharing group "default") and the listeners heard
// the job FINISH and every one of its 2p+1 tasks run.
func TestRunOnMiniCluster(t *testing.T) {
	dir, want := generateInput(t, 12, 3*ChunkSize, manyWords)
	files, err := ListInputFiles(dir)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "counts.tsv")
	var mu sync.Mutex
	var prepared []*jobgraph.JobGraph
	var statuses []jobgraph.JobStatus
	running := 0
	res, archived, err := RunOnMiniCluster(context.Background(), files, MiniClusterOptions{
		TaskExecutors:        2,
		SlotsPerTaskExecutor: 2,
		Job:                  JobOptions{Parallelism: 3, OutPath: out, SkipResult: true, Top: 2},
		Prepare: func(g *jobgraph.JobGraph) {
			prepared = append(prepared, g)
			for _, v := range g.Vertices {
				assert.Equal(t, "default", v.SlotSharingGroup, v.Name)
			}
		},
		JobStatusListener: func(_ jobgraph.JobID, st jobgraph.JobStatus, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			statuses = append(statuses, st)
		},
		ExecutionStateListener: func(_ jobgraph.ExecutionAttemptID, st jobgraph.ExecutionState) {
			mu.Lock()
			defer mu.Unlock()
			if st == jobgraph.ExecutionStateRunning {
				running++
			}
		},
	})
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFinished, res.Status, "root cause: %v", res.RootCause)
	require.Len(t, prepared, 1)
	assert.Equal(t, prepared[0].JobID, res.JobID)
	assert.Equal(t, res.JobID, archived.JobID)
	mu.Lock()
	assert.Equal(t, jobgraph.JobStatusFinished, statuses[len(statuses)-1])
	assert.Equal(t, 3+3+1, running)
	mu.Unlock()

	var wantFile bytes.Buffer
	require.NoError(t, WriteCounts(&wantFile, SortedCounts(want)))
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, wantFile.String(), string(got))
	tot, err := ReadTotals(res.Accumulators, 2)
	require.NoError(t, err)
	assert.Equal(t, len(files), tot.Files)
	assert.Equal(t, len(want), tot.Distinct)
	assert.Equal(t, TopN(want, 2), tot.Top)
}

// Bad options are errors that name what is wrong, and no cluster is left running (goleak).
func TestRunOnMiniClusterErrors(t *testing.T) {
	dir, _ := generateInput(t, 2, 10, manyWords)
	files, err := ListInputFiles(dir)
	require.NoError(t, err)
	_, _, err = RunOnMiniCluster(context.Background(), files, MiniClusterOptions{TaskExecutors: 1, SlotsPerTaskExecutor: 1, Job: JobOptions{Parallelism: 0}})
	assert.ErrorContains(t, err, "parallelism 0 is below 1")
	_, _, err = RunOnMiniCluster(context.Background(), files, MiniClusterOptions{TaskExecutors: -1, SlotsPerTaskExecutor: 1, Job: JobOptions{Parallelism: 1}})
	assert.ErrorContains(t, err, "TaskExecutors (minicluster.number-of-taskmanagers) is -1, negative")
}
