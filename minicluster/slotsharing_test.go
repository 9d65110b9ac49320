package minicluster_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/slotpool"
)

// Issue 8's scenario: source → sink, p=2, ALL_TO_ALL PIPELINED, built with AddVertex, on 2
// TaskExecutors × 1 slot. Both vertices are in Flink's "default" slot-sharing group, so the job
// needs 2 slots, not 4: it runs at once, each slot holding one source and one sink subtask, and
// ends FINISHED with every record read (the sink fails unless it reads 3 from each source).
// Opted out of slot sharing, the same job needs 4 slots and fails with no-resource-available
// after the slot request timeout, as every job did before the default.
func TestDefaultSlotSharingRunsSourceToSinkOnTwoSlots(t *testing.T) {
	build := func() *jobgraph.JobGraph {
		g := jobgraph.New("source-sink", jobgraph.Streaming)
		src := g.AddVertex("source", "emit", 2)
		sink := g.AddVertex("sink", "sum", 2)
		g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Pipelined)
		return g
	}
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		mc := start(t, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 1})
		g := build()
		require.Equal(t, []string{"default", "default"}, []string{g.Vertices[0].SlotSharingGroup, g.Vertices[1].SlotSharingGroup})
		res, err := mc.Run(ctx, g)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)
		assert.Nil(t, res.RootCause)
		assert.Equal(t, time.Duration(0), time.Since(begin), "no wait for slots")

		archived, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		require.Len(t, archived.JobVertices, 2)
		source, sink := archived.JobVertices[0].Subtasks, archived.JobVertices[1].Subtasks
		for i := range 2 {
			assert.Equal(t, jobgraph.ExecutionStateFinished, source[i].State)
			assert.Equal(t, jobgraph.ExecutionStateFinished, sink[i].State)
			assert.Equal(t, 0, source[i].AttemptNumber)
			assert.Equal(t, 0, sink[i].AttemptNumber)
			assert.Equal(t, source[i].Location, sink[i].Location, "subtask %d of both vertices share one slot", i)
		}
		assert.NotEqual(t, source[0].Location, source[1].Location, "one shared slot on each TaskExecutor")
	})

	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		mc := start(t, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 1, SlotRequestTimeout: 10 * time.Second})
		g := build()
		for _, v := range g.Vertices {
			v.WithoutSlotSharingGroup()
		}
		res, err := mc.Run(ctx, g)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
		require.ErrorIs(t, res.RootCause, slotpool.ErrNoResourceAvailable)
		assert.Contains(t, res.RootCause.Error(), "could not allocate the required slots within the slot request timeout of 10s")
		assert.Equal(t, 10*time.Second, time.Since(begin))
	})
}
