package jobmaster_test

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// streamingPair is src (p) → ALL_TO_ALL PIPELINED → sink (p): one region of 2p tasks.
func streamingPair(p int) *jobgraph.JobGraph {
	g := jobgraph.New("streaming-pair", jobgraph.Streaming)
	src := g.AddVertex("src", "noop", p)
	sink := g.AddVertex("sink", "noop", p)
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Pipelined)
	return g
}

// The 8 tasks of one region go out in one SubmitTasks call per TaskExecutor, in the order the
// scheduler deployed them, once the region's last slot arrived.
func TestABulkGoesToEachTaskExecutorInOneSubmitTasksCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newHBEnvFor(t, jobmaster.Config{}, streamingPair(4))
		te1, te2 := e.addTE("te-1"), e.addTE("te-2")
		e.offer(te1, 0, "A")
		e.offer(te1, 1, "B")
		e.offer(te2, 0, "C")
		assert.Empty(t, te1.snapshot().submitCalls, "nothing is deployed before the region has all its slots")
		e.offer(te2, 1, "D")

		assert.Equal(t, []int{4}, te1.snapshot().submitCalls)
		assert.Equal(t, []int{4}, te2.snapshot().submitCalls)
		assert.Equal(t, []string{"src (1/4) @ A", "src (2/4) @ B", "sink (1/4) @ A", "sink (2/4) @ B"}, te1.deployed(e.names))
		assert.Equal(t, []string{"src (3/4) @ C", "src (4/4) @ D", "sink (3/4) @ C", "sink (4/4) @ D"}, te2.deployed(e.names))
		assert.Equal(t, jobgraph.JobStatusRunning, e.status())
	})
}

// A descriptor the TaskExecutor refuses in a batch fails that deployment alone (the job, which
// may not restart, fails with it as the cause); the others of the batch were submitted.
func TestARefusedDescriptorOfABatchFailsItsDeployment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newHBEnvFor(t, jobmaster.Config{}, streamingPair(2))
		te1 := e.addTE("te-1")
		te1.set(func(f *hbTE) { f.failSubmit = map[string]error{"sink (2/2)": errors.New("slot went away")} })
		e.offer(te1, 0, "A")
		e.offer(te1, 1, "B")

		assert.Equal(t, []int{4}, te1.snapshot().submitCalls)
		arc, err := e.jm.RequestJob(e.ctx)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFailing, arc.Status)
		require.NotNil(t, arc.FailureCause)
		assert.Contains(t, arc.FailureCause.Message, "deploying sink (2/2) to te-1: slot went away")
	})
}
