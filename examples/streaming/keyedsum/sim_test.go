package keyedsum

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

// sim runs the job's task code on fake environments, attempt by attempt, as the runtime would
// with aligned checkpoints: the sources run one after the other (checkpoint triggers at fixed
// emit counts, then the final checkpoint of FLIP-147, or the stop-with-savepoint at their pause),
// then each sum on the aligned merge of its inputs, then the sinks all at once, since a
// checkpoint completes, and is confirmed to the sinks, only once every task acknowledged it.
// A task failure ends the attempt: every task still running is canceled, and the next attempt
// restores every task from the latest completed checkpoint, redistributed to the parallelism.
type sim struct {
	g *jobgraph.JobGraph
	p int
	// every is the number of emits of each source between two checkpoint triggers, periodic
	// the number of periodic checkpoints per attempt.
	every, periodic int
	// stop: the sources pause (JobOptions.PauseAfter) and the attempt ends with a
	// stop-with-savepoint at the first Idle record of each.
	stop bool

	nextID    checkpoint.CheckpointID
	restoreID checkpoint.CheckpointID
	restore   map[string][]checkpoint.StateHandle // vertex → state of each subtask
	attempt   int
}

// attemptResult is what one attempt of the sim did.
type attemptResult struct {
	failure   error                   // the first task failure, nil when the attempt finished
	completed checkpoint.CheckpointID // the latest checkpoint every task acknowledged
	// states holds every task's snapshot per checkpoint, accs every task's accumulators.
	states map[string][]map[checkpoint.CheckpointID]checkpoint.StateHandle
	accs   []map[string]jobgraph.SerializedAccumulator
}

func (s *sim) env(v *jobgraph.JobVertex, subtask int, coord *coordinator) *fakeEnv {
	e := newFakeEnv(taskInfo(s.g, v, subtask, s.p, s.attempt, true))
	e.coord = coord
	if st := s.restore[v.Name]; st != nil {
		e.restoreID, e.restore = s.restoreID, &st[subtask]
	}
	return e
}

func (s *sim) runAttempt(ctx context.Context) attemptResult {
	if s.nextID == 0 {
		s.nextID = 1
	}
	base := s.nextID
	last := base + checkpoint.CheckpointID(s.periodic) // the final checkpoint, or the stop's savepoint
	s.nextID = last + 1
	coord := newCoordinator(3 * s.p)
	res := attemptResult{states: map[string][]map[checkpoint.CheckpointID]checkpoint.StateHandle{}}
	var failures []error
	fail := func(err error) { failures = append(failures, err) }
	record := func(v string, e *fakeEnv) {
		res.states[v] = append(res.states[v], e.snapshots)
		res.accs = append(res.accs, e.accs.Snapshot())
	}

	src, sum, sink := s.g.VertexByName(SourceVertex), s.g.VertexByName(SumVertex), s.g.VertexByName(SinkVertex)
	var srcOut []*fakeWriter
	for k := range s.p {
		e := s.env(src, k, coord)
		w := newFakeWriter(e, s.p)
		w.triggers = map[int]checkpoint.CheckpointID{}
		for c := range s.periodic {
			w.triggers[(c+1)*s.every] = base + checkpoint.CheckpointID(c)
		}
		if s.stop {
			w.stopOnIdle = last
		}
		err := RunSource(ctx, e)
		if err == nil && !e.stopped {
			// FLIP-147: the finished source takes part in the remaining checkpoints and the
			// final one.
			if err = w.takeRemaining(ctx); err == nil {
				err = e.checkpoint(ctx, barrier{id: last})
			}
		}
		if err != nil {
			fail(err)
		}
		srcOut = append(srcOut, w)
		record(SourceVertex, e)
	}
	var sumOut []*fakeWriter
	for j := range s.p {
		e := s.env(sum, j, coord)
		streams := make([][]any, s.p)
		for k, w := range srcOut {
			streams[k] = w.subs[j]
		}
		items, complete := alignedMerge(streams)
		e.gate = &fakeGate{env: e, items: items, canceled: !complete || len(failures) > 0}
		w := newFakeWriter(e, 1)
		if err := RunSum(ctx, e); err != nil && !errors.Is(err, context.Canceled) {
			fail(err)
		}
		sumOut = append(sumOut, w)
		record(SumVertex, e)
	}
	sinkCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sinkEnvs := make([]*fakeEnv, s.p)
	upstreamFailed := len(failures) > 0
	for j := range s.p {
		e := s.env(sink, j, coord)
		e.waitForConfirm = true
		items, complete := alignedMerge([][]any{sumOut[j].subs[0]})
		e.gate = &fakeGate{env: e, items: items, canceled: !complete || upstreamFailed}
		sinkEnvs[j] = e
		wg.Go(func() {
			err := RunSink(sinkCtx, e)
			if err != nil && !errors.Is(err, context.Canceled) {
				mu.Lock()
				fail(err)
				mu.Unlock()
			}
			if err != nil {
				cancel(err) // canceled or failed: the other sinks are canceled too
			}
		})
	}
	wg.Wait()
	for _, e := range sinkEnvs {
		record(SinkVertex, e)
	}
	res.completed, _ = coord.latest()
	res.failure = errors.Join(failures...)
	return res
}

// run runs attempts until one finishes, restoring each from the latest completed checkpoint
// (or what the previous one restored, when none completed), at most max attempts.
func (s *sim) run(t *testing.T, maxAttempts int) []attemptResult {
	t.Helper()
	var out []attemptResult
	for range maxAttempts {
		res := s.runAttempt(t.Context())
		out = append(out, res)
		if res.failure == nil {
			return out
		}
		if res.completed > 0 {
			s.restoreFrom(t, res, res.completed, s.p)
		}
		s.attempt++
	}
	t.Fatalf("the job did not finish in %d attempts: %v", maxAttempts, out[len(out)-1].failure)
	return nil
}

// restoreFrom makes the next attempt (at parallelism p) start from checkpoint id of res.
func (s *sim) restoreFrom(t *testing.T, res attemptResult, id checkpoint.CheckpointID, p int) {
	t.Helper()
	s.restore = map[string][]checkpoint.StateHandle{}
	s.restoreID = id
	for v, subtasks := range res.states {
		old := make([]checkpoint.StateHandle, len(subtasks))
		for k, snaps := range subtasks {
			st, ok := snaps[id]
			require.True(t, ok, "%s subtask %d has no state for checkpoint %d", v, k, id)
			old[k] = st
		}
		st, err := redistribute(old, s.g.VertexByName(v).EffectiveMaxParallelism(), p)
		require.NoError(t, err, v)
		s.restore[v] = st
	}
	s.p = p
	s.nextID = max(s.nextID, id+1)
}

// redistribute is what the JobMaster does with a vertex's state on restore: operator list state
// round robin, keyed state by key group.
func redistribute(old []checkpoint.StateHandle, maxParallelism, p int) ([]checkpoint.StateHandle, error) {
	ops := make([]keygroup.OperatorState[[]byte], len(old))
	var keyed []keygroup.KeyGroupsState[[]byte]
	for k, st := range old {
		ops[k] = st.OperatorState
		if st.KeyedState != nil {
			if keyed == nil {
				keyed = make([]keygroup.KeyGroupsState[[]byte], len(old))
			}
			keyed[k] = *st.KeyedState
		}
	}
	newOps, err := keygroup.RepartitionOperatorState(ops, p)
	if err != nil {
		return nil, err
	}
	out := make([]checkpoint.StateHandle, p)
	for k := range out {
		out[k].OperatorState = newOps[k]
	}
	if keyed != nil {
		for k := range keyed {
			if old[k].KeyedState == nil {
				return nil, fmt.Errorf("subtask %d has no keyed state", k)
			}
		}
		newKeyed, err := keygroup.RedistributeKeyGroups(keyed, maxParallelism, p)
		if err != nil {
			return nil, err
		}
		for k := range out {
			out[k].KeyedState = &newKeyed[k]
		}
	}
	return out, nil
}
