package minicluster_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Issue 15's scenario: v2's parallelism 4 is overridden to 2 by the cluster's
// pipeline.jobvertex-parallelism-overrides and to 3 by the job's own, which wins: v2 runs with
// exactly 3 subtasks (0, 1, 2), and the stored plan and the archived graph say 3. An override of
// 300 for a v2 whose max parallelism is 128 is refused, naming v2, and nothing of that job is
// persisted.
func TestParallelismOverridesJobsOwnWinOverTheClustersAndAreValidated(t *testing.T) {
	synctest.Test(t, testParallelismOverrides)
}

func testParallelismOverrides(t *testing.T) {
	var mu sync.Mutex
	var ran []int
	release := make(chan struct{})
	reg := taskexecutor.NewRegistry()
	reg.Register("noop", noop)
	reg.Register("count-and-hold", func(ctx context.Context, env taskexecutor.Environment) error {
		for {
			if _, err := env.Input(0).Next(ctx); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return err
			}
		}
		mu.Lock()
		ran = append(ran, env.Info().SubtaskIndex)
		mu.Unlock()
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})

	g := jobgraph.New("overridden", jobgraph.Batch)
	v1 := g.AddVertex("v1", "noop", 2)
	v2 := g.AddVertex("v2", "count-and-hold", 4)
	g.Connect(v1, v2, jobgraph.AllToAll, jobgraph.Pipelined)
	g.ParallelismOverrides = map[jobgraph.JobVertexID]int{v2.ID: 3}

	mc := start(t, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 2, Registry: reg,
		ParallelismOverrides: map[jobgraph.JobVertexID]int{v2.ID: 2}})
	ctx := context.Background()
	require.NoError(t, mc.SubmitJob(ctx, g))
	assert.Equal(t, 4, g.Vertices[1].Parallelism, "the caller's graph is not changed")

	stored, err := mc.HA().ExecutionPlanStore().Get(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, 2, stored.Vertices[0].Parallelism)
	assert.Equal(t, 3, stored.Vertices[1].Parallelism)
	assert.Equal(t, map[jobgraph.JobVertexID]int{v2.ID: 3}, stored.ParallelismOverrides)

	synctest.Wait() // every subtask runs and holds
	mu.Lock()
	assert.Len(t, ran, 3)
	mu.Unlock()
	close(release)
	res, err := mc.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFinished, res.Status)
	mu.Lock()
	slices.Sort(ran)
	assert.Equal(t, []int{0, 1, 2}, ran)
	mu.Unlock()
	a, err := mc.RequestJob(ctx, g.JobID)
	require.NoError(t, err)
	require.Len(t, a.JobVertices, 2)
	assert.Equal(t, v2.ID, a.JobVertices[1].ID)
	assert.Equal(t, 3, a.JobVertices[1].Parallelism)
	assert.Len(t, a.JobVertices[1].Subtasks, 3)
	assert.Equal(t, 3, a.JobVertices[1].StateCounts[jobgraph.ExecutionStateFinished])

	// 300 above max parallelism 128: refused naming v2; nothing persisted.
	bad := jobgraph.New("too wide", jobgraph.Batch)
	w1 := bad.AddVertex("v1", "noop", 2)
	w2 := bad.AddVertex("v2", "count-and-hold", 4).WithMaxParallelism(128)
	bad.Connect(w1, w2, jobgraph.AllToAll, jobgraph.Pipelined)
	bad.ParallelismOverrides = map[jobgraph.JobVertexID]int{w2.ID: 300}
	err = mc.SubmitJob(ctx, bad)
	require.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph)
	var verr *jobgraph.ValidationError
	require.ErrorAs(t, err, &verr)
	assert.Equal(t, jobgraph.RuleParallelism, verr.Rule)
	assert.Equal(t, w2.ID, verr.Vertex)
	assert.Equal(t, "v2", verr.VertexName)
	assert.Contains(t, err.Error(), `the job's pipeline.jobvertex-parallelism-overrides set vertex "v2" (`+w2.ID.String()+`) from parallelism 4 to 300: invalid job graph: parallelism: vertex "v2" (`+w2.ID.String()+`): parallelism 300 is above the max parallelism 128`)
	ids, err := mc.HA().ExecutionPlanStore().JobIDs(ctx)
	require.NoError(t, err)
	assert.NotContains(t, ids, bad.JobID)
	_, err = mc.HA().ExecutionPlanStore().Get(ctx, bad.JobID)
	assert.ErrorIs(t, err, ha.ErrNotFound)
	_, err = mc.HA().JobResultStore().Get(ctx, bad.JobID)
	assert.ErrorIs(t, err, ha.ErrNotFound)
	_, err = mc.RequestJobStatus(ctx, bad.JobID)
	assert.ErrorIs(t, err, dispatcher.ErrJobNotFound)
}
