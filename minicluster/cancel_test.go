package minicluster_test

// Cancellation always stops a job (issue 8, item 1): the task API's blocking and looping calls
// return an error once the task is canceled, whatever its reader does.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// errEmitIgnoresCancel is what the looping source returns when Emit kept returning nil long
// after the source's context was canceled: the bug this file reproduces. Without the bound
// the source would spin forever and the test would hang instead of failing.
var errEmitIgnoresCancel = errors.New("emit returned nil 100000 times after the task was canceled")

// loopingSource emits 0, 1, 2, … to subpartition 0 until Emit returns an error, which it
// returns. It tells started once it has emitted its first record, and records in nilAfterCancel
// how many Emits returned nil after its context had been canceled.
type loopingSource struct {
	started        chan struct{}
	mu             sync.Mutex
	nilAfterCancel int
	emitErr        error
}

func (s *loopingSource) run(ctx context.Context, env taskexecutor.Environment) error {
	out := env.Output(0)
	late := 0
	for x := 0; ; x++ {
		canceled := ctx.Err() != nil
		err := out.Emit(ctx, 0, x)
		if x == 0 {
			close(s.started)
		}
		if err != nil {
			s.mu.Lock()
			s.nilAfterCancel, s.emitErr = late, err
			s.mu.Unlock()
			return err
		}
		if canceled {
			if late++; late == 100000 {
				s.mu.Lock()
				s.nilAfterCancel, s.emitErr = late, nil
				s.mu.Unlock()
				return errEmitIgnoresCancel
			}
		}
	}
}

// The sink variants of the scenario.
var cancelSinks = map[string]taskexecutor.Invokable{
	// reads until canceled
	"reads": func(ctx context.Context, env taskexecutor.Environment) error {
		for {
			if _, err := env.Input(0).Next(ctx); err != nil {
				return err
			}
		}
	},
	// returns at once, without reading: it FINISHES while the source still emits
	"returns-early": func(ctx context.Context, env taskexecutor.Environment) error { return nil },
	// waits for its cancellation without reading: the source blocks on back-pressure
	"waits": func(ctx context.Context, env taskexecutor.Environment) error {
		<-ctx.Done()
		return ctx.Err()
	},
}

// Scenario (issue 8): source →(PIPELINED_BOUNDED) sink, parallelism 1, the source looping
// Emit(ctx, 0, x) until Emit fails. After CancelJob the job ends CANCELED, for each sink
// variant, 30 times over; the source's first Emit after its cancellation fails with
// context.Canceled. Before the fix, Emit into a subpartition whose reader had detached returned
// nil without looking at ctx, and the job stayed CANCELLING in about 13 of 30 runs.
func TestCancelStopsASourceThatLoopsOnEmit(t *testing.T) {
	for name, sink := range cancelSinks {
		t.Run(name, func(t *testing.T) {
			for run := range 30 {
				synctest.Test(t, func(t *testing.T) {
					cancelLoopingSourceJob(t, run, sink)
				})
				if t.Failed() {
					return
				}
			}
		})
	}
}

func cancelLoopingSourceJob(t *testing.T, run int, sink taskexecutor.Invokable) {
	ctx := context.Background()
	src := &loopingSource{started: make(chan struct{})}
	reg := taskexecutor.NewRegistry()
	reg.Register("source", src.run)
	reg.Register("sink", sink)
	mc := start(t, minicluster.Config{Registry: reg})
	g := jobgraph.New(fmt.Sprintf("loop-%d", run), jobgraph.Streaming)
	source := g.AddVertex("source", "source", 1).WithSlotSharingGroup("default")
	g.Connect(source, g.AddVertex("sink", "sink", 1).WithSlotSharingGroup("default"), jobgraph.Pointwise, jobgraph.PipelinedBounded)
	require.NoError(t, mc.SubmitJob(ctx, g))
	<-src.started
	require.NoError(t, mc.CancelJob(ctx, g.JobID))
	res, err := mc.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusCanceled, res.Status, "run %d", run)
	src.mu.Lock()
	defer src.mu.Unlock()
	assert.ErrorIs(t, src.emitErr, context.Canceled, "run %d", run)
	assert.Equal(t, 0, src.nilAfterCancel, "run %d: Emit calls that returned nil after the cancellation", run)
}
