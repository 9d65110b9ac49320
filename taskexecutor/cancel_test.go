package taskexecutor

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// cancelCase puts a task API call in a state where it returns nil, returns a record, or waits —
// and hands back the call (run with context.Background, not the task's context).
type cancelCase struct {
	name string
	// setup builds the call for a task whose context is task. The returned call is what is
	// repeated; blocks says whether it waits before the cancellation.
	setup func(t *testing.T, s *Shuffle, task *TaskStop) (call func() error, blocks bool)
}

func cancelWriter(t *testing.T, s *Shuffle, task *TaskStop, subs int) *partitionWriter {
	w := newTestWriter(t, s, partID(1, 0, attemptID(1, 0, 0)), jobgraph.PipelinedBounded, subs)
	w.stop = task
	t.Cleanup(func() { w.fail(context.Canceled) })
	return w
}

func cancelGate(t *testing.T, s *Shuffle, task *TaskStop) *inputGate {
	g := newTestGate(t, s, jobgraph.PipelinedBounded, 0, partID(1, 0, attemptID(1, 0, 0)))
	g.stop = task
	t.Cleanup(g.close)
	return g
}

func cancelEnv(t *testing.T, s *Shuffle, task *TaskStop) *environment {
	env := newEnvironment(task, TaskInfo{TaskName: "sink (1/1)"})
	t.Cleanup(env.closeInputs)
	d := rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.PipelinedBounded, Partitions: []rpc.ResultPartitionID{partID(1, 0, attemptID(1, 0, 0))}}
	require.NoError(t, env.openInput(s, jobID(1), d))
	return env
}

var cancelCases = []cancelCase{
	{name: "Emit into a subpartition whose reader detached", setup: func(t *testing.T, s *Shuffle, task *TaskStop) (func() error, bool) {
		g := cancelGate(t, s, notStopped)
		w := cancelWriter(t, s, task, 1)
		g.close() // the reader went away: what is written is dropped
		return func() error { return w.Emit(context.Background(), 0, 1) }, false
	}},
	{name: "Broadcast into subpartitions whose readers detached", setup: func(t *testing.T, s *Shuffle, task *TaskStop) (func() error, bool) {
		w := cancelWriter(t, s, task, 2)
		for sub := range 2 {
			g, err := s.newGate(jobID(1), rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.PipelinedBounded,
				Partitions: []rpc.ResultPartitionID{w.p.id}, ConsumedSubpartitionIndex: sub})
			require.NoError(t, err)
			g.close()
		}
		return func() error { return w.Broadcast(context.Background(), 1) }, false
	}},
	{name: "Emit into a full queue nobody reads", setup: func(t *testing.T, s *Shuffle, task *TaskStop) (func() error, bool) {
		cancelGate(t, s, notStopped)
		w := cancelWriter(t, s, task, 1)
		return func() error { return w.Emit(context.Background(), 0, 1) }, true
	}},
	{name: "Next with records at hand", setup: func(t *testing.T, s *Shuffle, task *TaskStop) (func() error, bool) {
		g := cancelGate(t, s, task)
		w := cancelWriter(t, s, notStopped, 1)
		emitRange(t, w, 0, 0, 3*DefaultBatchSize)
		return func() error { _, err := g.Next(context.Background()); return err }, false
	}},
	{name: "Next on an input without data", setup: func(t *testing.T, s *Shuffle, task *TaskStop) (func() error, bool) {
		g := cancelGate(t, s, task)
		cancelWriter(t, s, notStopped, 1)
		return func() error { _, err := g.Next(context.Background()); return err }, true
	}},
	{name: "NextAny with records at hand", setup: func(t *testing.T, s *Shuffle, task *TaskStop) (func() error, bool) {
		env := cancelEnv(t, s, task)
		w := cancelWriter(t, s, notStopped, 1)
		emitRange(t, w, 0, 0, 3*DefaultBatchSize)
		return func() error { _, _, err := env.NextAny(context.Background()); return err }, false
	}},
	{name: "NextAny on inputs without data", setup: func(t *testing.T, s *Shuffle, task *TaskStop) (func() error, bool) {
		env := cancelEnv(t, s, task)
		cancelWriter(t, s, notStopped, 1)
		return func() error { _, _, err := env.NextAny(context.Background()); return err }, true
	}},
}

// Every blocking or looping call of the task API fails with context.Canceled once the task's
// context is canceled — even when the call is given another context (here
// context.Background()), and even when it would neither block nor fail otherwise. A call that
// waits returns at the cancellation.
func TestTaskAPICallsFailOnceTheTaskIsCanceled(t *testing.T) {
	for _, c := range cancelCases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewShuffle(ShuffleConfig{})
				task := newTaskStop(context.Background())
				defer task.cancel(nil)
				cancel := func() { task.stop(&stopReason{kind: stopCancel}) }
				call, blocks := c.setup(t, s, task)
				if !blocks {
					// Before the cancellation the call succeeds, again and again.
					for range 2 * DefaultBatchSize {
						require.NoError(t, call())
					}
					cancel()
					assert.ErrorIs(t, call(), context.Canceled, "the first call after the cancellation")
					assert.ErrorIs(t, call(), context.Canceled, "and every one after it")
					return
				}
				// Fill what the call would fill without waiting, then wait in it.
				errc := make(chan error, 1)
				go func() {
					for {
						if err := call(); err != nil {
							errc <- err
							return
						}
					}
				}()
				synctest.Wait()
				require.Empty(t, errc, "the call waits")
				cancel()
				synctest.Wait()
				require.Len(t, errc, 1, "the call returned at the cancellation")
				assert.ErrorIs(t, <-errc, context.Canceled)
				assert.ErrorIs(t, call(), context.Canceled)
			})
		})
	}
}
