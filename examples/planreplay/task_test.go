package main

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// fakeGate hands out its records, then io.EOF (or err).
type fakeGate struct {
	records []any
	err     error
}

func (g *fakeGate) Next(ctx context.Context) (any, error) {
	if len(g.records) > 0 {
		r := g.records[0]
		g.records = g.records[1:]
		return r, nil
	}
	if g.err != nil {
		return nil, g.err
	}
	return nil, io.EOF
}

// fakeWriter records what was emitted to each subpartition; it fails with err once it holds
// failAfter records (when failAfter > 0).
type fakeWriter struct {
	subs      [][]any
	failAfter int
	err       error
	n         int
}

func newFakeWriter(subpartitions int) *fakeWriter {
	return &fakeWriter{subs: make([][]any, subpartitions)}
}

func (w *fakeWriter) NumSubpartitions() int { return len(w.subs) }

func (w *fakeWriter) Emit(ctx context.Context, s int, record any) error {
	if w.failAfter > 0 && w.n >= w.failAfter {
		return w.err
	}
	w.subs[s] = append(w.subs[s], record)
	w.n++
	return nil
}

func (w *fakeWriter) Broadcast(ctx context.Context, record any) error {
	for s := range w.subs {
		if err := w.Emit(ctx, s, record); err != nil {
			return err
		}
	}
	return nil
}

type fakeEnv struct {
	info    taskexecutor.TaskInfo
	inputs  []*fakeGate
	outputs []*fakeWriter
	turn    int // the input NextAny looks at first
	accs    *taskexecutor.AccumulatorRegistry
}

func (e *fakeEnv) AccumulatorRegistry() *taskexecutor.AccumulatorRegistry {
	if e.accs == nil {
		e.accs = taskexecutor.NewAccumulatorRegistry()
	}
	return e.accs
}

func (e *fakeEnv) SetCheckpointHandler(taskexecutor.CheckpointHandler) {}

func (e *fakeEnv) RestoredState() (checkpoint.CheckpointID, checkpoint.StateHandle, bool) {
	return 0, checkpoint.StateHandle{}, false
}

// The operator-event methods: this fake's vertex has no operator coordinator.
func (e *fakeEnv) SetOperatorEventHandler(taskexecutor.OperatorEventHandler) {}
func (e *fakeEnv) SendEventToCoordinator([]byte) error {
	return taskexecutor.ErrNoOperatorCoordinator
}
func (e *fakeEnv) Yield(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

func (e *fakeEnv) Info() taskexecutor.TaskInfo                     { return e.info }
func (e *fakeEnv) NumInputs() int                                  { return len(e.inputs) }
func (e *fakeEnv) Input(i int) taskexecutor.InputGate              { return e.inputs[i] }
func (e *fakeEnv) NumOutputs() int                                 { return len(e.outputs) }
func (e *fakeEnv) Output(i int) taskexecutor.ResultPartitionWriter { return e.outputs[i] }

// NextAny takes turns record by record over the inputs that have records left; an input with
// none left but an error returns it.
func (e *fakeEnv) NextAny(ctx context.Context) (int, any, error) {
	n := len(e.inputs)
	for k := range n {
		i := (e.turn + k) % n
		g := e.inputs[i]
		if len(g.records) == 0 && g.err == nil {
			continue
		}
		e.turn = (i + 1) % n
		r, err := g.Next(ctx)
		if err != nil {
			return i, nil, err
		}
		return i, r, nil
	}
	return -1, nil, io.EOF
}

var _ taskexecutor.AnyInputReader = (*fakeEnv)(nil)

// nextOnlyEnv is an Environment without NextAny.
type nextOnlyEnv struct{ e *fakeEnv }

func (e nextOnlyEnv) Info() taskexecutor.TaskInfo                     { return e.e.Info() }
func (e nextOnlyEnv) NumInputs() int                                  { return e.e.NumInputs() }
func (e nextOnlyEnv) Input(i int) taskexecutor.InputGate              { return e.e.Input(i) }
func (e nextOnlyEnv) NumOutputs() int                                 { return e.e.NumOutputs() }
func (e nextOnlyEnv) Output(i int) taskexecutor.ResultPartitionWriter { return e.e.Output(i) }
func (e nextOnlyEnv) AccumulatorRegistry() *taskexecutor.AccumulatorRegistry {
	return e.e.AccumulatorRegistry()
}
func (e nextOnlyEnv) SetCheckpointHandler(h taskexecutor.CheckpointHandler) {
	e.e.SetCheckpointHandler(h)
}
func (e nextOnlyEnv) RestoredState() (checkpoint.CheckpointID, checkpoint.StateHandle, bool) {
	return e.e.RestoredState()
}
func (e nextOnlyEnv) SetOperatorEventHandler(h taskexecutor.OperatorEventHandler) {
	e.e.SetOperatorEventHandler(h)
}
func (e nextOnlyEnv) SendEventToCoordinator(event []byte) error {
	return e.e.SendEventToCoordinator(event)
}
func (e nextOnlyEnv) Yield(ctx context.Context) error { return e.e.Yield(ctx) }

var testVertex = jobgraph.NewJobVertexID()

func subtaskInfo(subtask, parallelism int) taskexecutor.TaskInfo {
	return taskexecutor.TaskInfo{
		ExecutionAttemptID: jobgraph.ExecutionAttemptID{ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: testVertex, Subtask: subtask}},
		SubtaskIndex:       subtask,
		Parallelism:        parallelism,
	}
}

// TestSourceSplitsRecordsAndRoundRobins: subtask 1 of 3 generates 1, 4, 7, 10 of 0..11, and
// writes them to every output, the k-th to subpartition k mod n.
func TestSourceSplitsRecordsAndRoundRobins(t *testing.T) {
	st := &vertexStats{}
	task := &syntheticTask{records: 12, stats: map[jobgraph.JobVertexID]*vertexStats{testVertex: st}}
	two, three := newFakeWriter(2), newFakeWriter(3)
	env := &fakeEnv{info: subtaskInfo(1, 3), outputs: []*fakeWriter{two, three}}
	require.NoError(t, task.invoke(context.Background(), env))
	assert.Equal(t, [][]any{{int64(1), int64(7)}, {int64(4), int64(10)}}, two.subs)
	assert.Equal(t, [][]any{{int64(1), int64(10)}, {int64(4)}, {int64(7)}}, three.subs)
	assert.Equal(t, int64(4), st.records.Load())
	assert.Equal(t, int64(8), st.written.Load())
}

// TestSourceSubtasksCoverEveryRecordOnce: over all subtasks, each record number below -records
// is generated exactly once, also when the parallelism does not divide it.
func TestSourceSubtasksCoverEveryRecordOnce(t *testing.T) {
	st := &vertexStats{}
	task := &syntheticTask{records: 50, stats: map[jobgraph.JobVertexID]*vertexStats{testVertex: st}}
	seen := make(map[any]int)
	for s := range 4 {
		w := newFakeWriter(1)
		require.NoError(t, task.invoke(context.Background(), &fakeEnv{info: subtaskInfo(s, 4), outputs: []*fakeWriter{w}}))
		for _, r := range w.subs[0] {
			seen[r]++
		}
	}
	require.Len(t, seen, 50)
	for i := range 50 {
		assert.Equal(t, 1, seen[int64(i)], "record %d", i)
	}
	assert.Equal(t, int64(50), st.records.Load())
	assert.Equal(t, int64(50), st.written.Load())
}

// TestForwarderReadsEveryInput: a vertex with inputs reads them all, in the order NextAny hands
// out their records (the fake takes turns record by record), and writes every record to every
// output; a sink (no outputs) just counts.
func TestForwarderReadsEveryInput(t *testing.T) {
	st := &vertexStats{}
	task := &syntheticTask{records: 1000, stats: map[jobgraph.JobVertexID]*vertexStats{testVertex: st}}
	one, two := newFakeWriter(1), newFakeWriter(2)
	env := &fakeEnv{
		info:    subtaskInfo(0, 1),
		inputs:  []*fakeGate{{records: []any{"a", "b", "c"}}, {}, {records: []any{"d", "e"}}},
		outputs: []*fakeWriter{one, two},
	}
	require.NoError(t, task.invoke(context.Background(), env))
	assert.Equal(t, [][]any{{"a", "d", "b", "e", "c"}}, one.subs)
	assert.Equal(t, [][]any{{"a", "b", "c"}, {"d", "e"}}, two.subs)
	assert.Equal(t, int64(5), st.records.Load())
	assert.Equal(t, int64(10), st.written.Load())

	sink := &fakeEnv{info: subtaskInfo(0, 1), inputs: []*fakeGate{{records: []any{1, 2}}}}
	require.NoError(t, task.invoke(context.Background(), sink))
	assert.Equal(t, int64(7), st.records.Load())
	assert.Equal(t, int64(10), st.written.Load())
}

// TestRepeatWritesEachRecordSeveralTimes: a vertex with repeat 3 writes each record it processes
// three times to each output, round-robin going on over the copies.
func TestRepeatWritesEachRecordSeveralTimes(t *testing.T) {
	st := &vertexStats{}
	task := &syntheticTask{records: 2, stats: map[jobgraph.JobVertexID]*vertexStats{testVertex: st},
		repeat: map[jobgraph.JobVertexID]int{testVertex: 3}}
	one, two := newFakeWriter(1), newFakeWriter(2)
	env := &fakeEnv{info: subtaskInfo(0, 1), inputs: []*fakeGate{{records: []any{"a", "b"}}}, outputs: []*fakeWriter{one, two}}
	require.NoError(t, task.invoke(context.Background(), env))
	assert.Equal(t, [][]any{{"a", "a", "a", "b", "b", "b"}}, one.subs)
	assert.Equal(t, [][]any{{"a", "a", "b"}, {"a", "b", "b"}}, two.subs)
	assert.Equal(t, int64(2), st.records.Load())
	assert.Equal(t, int64(12), st.written.Load())

	src := newFakeWriter(1)
	require.NoError(t, task.invoke(context.Background(), &fakeEnv{info: subtaskInfo(0, 1), outputs: []*fakeWriter{src}}))
	assert.Equal(t, [][]any{{int64(0), int64(0), int64(0), int64(1), int64(1), int64(1)}}, src.subs)
}

// TestTaskNeedsNextAny: a vertex with inputs whose environment cannot read whichever input has
// data first fails, saying so; a source does not need it.
func TestTaskNeedsNextAny(t *testing.T) {
	task := &syntheticTask{records: 3}
	info := subtaskInfo(0, 1)
	info.TaskName = "D (1/1)"
	err := task.invoke(context.Background(), nextOnlyEnv{&fakeEnv{info: info, inputs: []*fakeGate{{records: []any{1}}}}})
	assert.EqualError(t, err, "D (1/1): its environment (main.nextOnlyEnv) cannot read whichever input has data first")
	w := newFakeWriter(1)
	require.NoError(t, task.invoke(context.Background(), nextOnlyEnv{&fakeEnv{info: info, outputs: []*fakeWriter{w}}}))
	assert.Len(t, w.subs[0], 3)
}

func TestTaskFailsWithInputAndOutputErrors(t *testing.T) {
	task := &syntheticTask{records: 10}
	lost := errors.New("partition lost")
	err := task.invoke(context.Background(), &fakeEnv{info: subtaskInfo(0, 1), inputs: []*fakeGate{{records: []any{1}, err: lost}}})
	assert.ErrorIs(t, err, lost)

	full := errors.New("consumer gone")
	w := newFakeWriter(1)
	w.failAfter, w.err = 3, full
	err = task.invoke(context.Background(), &fakeEnv{info: subtaskInfo(0, 1), outputs: []*fakeWriter{w}})
	assert.ErrorIs(t, err, full)
	assert.Len(t, w.subs[0], 3)
}

// TestTaskTimeStopsOnCancel: a task spending time per record returns as soon as its context is
// canceled, with the context's error, without processing further records.
func TestTaskTimeStopsOnCancel(t *testing.T) {
	task := &syntheticTask{records: 1000, taskTime: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := newFakeWriter(1)
	err := task.invoke(ctx, &fakeEnv{info: subtaskInfo(0, 1), outputs: []*fakeWriter{w}})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, w.subs[0])
}

// TestTaskTimePerRecord: -task-time is spent once per record processed (virtual time).
func TestTaskTimePerRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		task := &syntheticTask{records: 3, taskTime: 10 * time.Millisecond}
		start := time.Now()
		require.NoError(t, task.invoke(context.Background(), &fakeEnv{info: subtaskInfo(0, 1), outputs: []*fakeWriter{newFakeWriter(1)}}))
		assert.Equal(t, 30*time.Millisecond, time.Since(start))

		start = time.Now()
		fwd := &fakeEnv{info: subtaskInfo(0, 1), inputs: []*fakeGate{{records: []any{1, 2}}}}
		require.NoError(t, task.invoke(context.Background(), fwd))
		assert.Equal(t, 20*time.Millisecond, time.Since(start))
	})
}
