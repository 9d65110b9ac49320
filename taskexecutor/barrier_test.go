package taskexecutor

import (
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// A checkpoint through a P × C ALL_TO_ALL exchange with no record adds no per-pair object (no
// writer slot, no kept batch): each gate aligns its P channels and ends with no alignment state.
func TestBarriersThroughAnAllToAllAddNoPerPairState(t *testing.T) {
	const p, c = 50, 40
	s := NewShuffle(ShuffleConfig{QueueCapacity: p})
	parts := make([]rpc.ResultPartitionID, p)
	for i := range parts {
		parts[i] = partID(1, i, attemptID(1, i, 0))
	}
	gates := make([]*inputGate, c)
	for j := range gates {
		g, err := s.newGate(jobID(1), rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.PipelinedBounded, Partitions: parts, ConsumedSubpartitionIndex: j})
		require.NoError(t, err)
		gates[j] = g
		t.Cleanup(g.close)
	}
	for i := range parts {
		w, err := s.newWriter(jobID(1), "te-1", rpc.ResultPartitionDeploymentDescriptor{ResultPartitionID: parts[i], ResultType: jobgraph.PipelinedBounded, NumberOfSubpartitions: c})
		require.NoError(t, err)
		require.NoError(t, w.BroadcastBarrier(ctx, barrier(1)))
	}
	assert.Zero(t, s.pairObjects.Load(), "barriers add no per-pair object")
	for j, g := range gates {
		for i := range p {
			assert.False(t, g.Aligned(1), "gate %d after %d barriers", j, i)
			r, ok, err := g.Poll()
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, barrier(1).ID, r.(*CheckpointBarrier).ID)
		}
		assert.True(t, g.Aligned(1), "gate %d has every channel's barrier", j)
		g.ResumeAlignment(1)
		g.mu.Lock()
		assert.Nil(t, g.blocked, "no alignment state left")
		assert.Zero(t, g.held.len())
		g.mu.Unlock()
	}
	assert.Zero(t, s.pairObjects.Load())
}

// A channel blocked by an alignment holds back at most QueueCapacity batches before its writer
// waits, while the other channels' records still flow; once resumed, the held-back records
// come in order.
func TestABlockedChannelIsBackPressured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewShuffle(ShuffleConfig{BatchSize: 1, QueueCapacity: 2})
		p0, p1 := partID(1, 0, attemptID(1, 0, 0)), partID(1, 1, attemptID(1, 1, 0))
		g, err := s.newGate(jobID(1), rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.PipelinedBounded, Partitions: []rpc.ResultPartitionID{p0, p1}})
		require.NoError(t, err)
		defer g.close()
		w0, w1 := pipelinedWriter(t, s, p0), pipelinedWriter(t, s, p1)
		require.NoError(t, w0.BroadcastBarrier(ctx, barrier(1)))
		r, ok, err := g.Poll()
		require.NoError(t, err)
		require.True(t, ok)
		require.IsType(t, &CheckpointBarrier{}, r)

		var emitted atomic.Int32
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 10 {
				if err := w0.Emit(ctx, 0, fmt.Sprint("a", i)); err != nil {
					return
				}
				emitted.Add(1)
			}
		}()
		for range 20 { // the reader keeps polling: p0's batches are held back, not handed out
			synctest.Wait()
			_, ok, err := g.Poll()
			require.NoError(t, err)
			require.False(t, ok, "nothing of the blocked channel is handed out")
		}
		synctest.Wait()
		n := emitted.Load()
		assert.LessOrEqual(t, n, int32(4), "at most QueueCapacity held back plus QueueCapacity queued")
		assert.GreaterOrEqual(t, n, int32(2), "the held-back batches gave their credit back")
		select {
		case <-done:
			t.Fatal("the blocked channel's writer went on")
		default:
		}
		require.NoError(t, w1.Emit(ctx, 0, "b0"))
		r, ok, err = g.Poll()
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, "b0", r, "the other channel still flows")

		g.ResumeAlignment(1)
		var got []any
		for len(got) < 10 {
			synctest.Wait()
			r, ok, err := g.Poll()
			require.NoError(t, err)
			if ok {
				got = append(got, r)
			}
		}
		<-done
		assert.Equal(t, []any{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"}, got)
	})
}

// An abort of the checkpoint being aligned ends the alignment: what was held back comes next,
// and the barrier that arrives late on the other channel is dropped.
func TestAbortEndsTheAlignment(t *testing.T) {
	s := NewShuffle(ShuffleConfig{})
	p0, p1 := partID(1, 0, attemptID(1, 0, 0)), partID(1, 1, attemptID(1, 1, 0))
	env, rep, h := cpEnv(t, s, rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.PipelinedBounded, Partitions: []rpc.ResultPartitionID{p0, p1}})
	w0, w1 := pipelinedWriter(t, s, p0), pipelinedWriter(t, s, p1)
	require.NoError(t, w0.Emit(ctx, 0, "a"))
	require.NoError(t, w0.BroadcastBarrier(ctx, barrier(1)))
	require.NoError(t, w0.Emit(ctx, 0, "b"))
	w0.FlushIdle()
	require.NoError(t, w1.Emit(ctx, 0, "c"))
	w1.FlushIdle()
	in := env.Input(0)
	next := func() any {
		r, err := in.Next(ctx)
		require.NoError(t, err)
		h.count++
		return r
	}
	assert.Equal(t, "a", next())
	assert.Equal(t, "c", next(), "b waits for checkpoint 1's alignment")
	env.cp.mail.post(mail{kind: mailAbort, barrier: CheckpointBarrier{ID: 1}})
	assert.Equal(t, "b", next(), "the abort ended the alignment")
	require.NoError(t, w1.BroadcastBarrier(ctx, barrier(1)))
	require.NoError(t, w1.Emit(ctx, 0, "d"))
	require.NoError(t, w0.Finish(ctx))
	require.NoError(t, w1.Finish(ctx))
	assert.Equal(t, "d", next(), "the late barrier is dropped")
	_, err := in.Next(ctx)
	assert.Equal(t, io.EOF, err)
	assert.Equal(t, []string{"aborted 1 at 2"}, h.events(), "no snapshot of the aborted checkpoint")
	assert.Empty(t, rep.acks)
	assert.Empty(t, rep.declines)
}
