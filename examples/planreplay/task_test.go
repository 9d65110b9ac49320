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
}

func (e *fakeEnv) Info() taskexecutor.TaskInfo                     { return e.info }
func (e *fakeEnv) NumInputs() int                                  { return len(e.inputs) }
func (e *fakeEnv) Input(i int) taskexecutor.InputGate              { return e.inputs[i] }
func (e *fakeEnv) NumOutputs() int                                 { return len(e.outputs) }
func (e *fakeEnv) Output(i int) taskexecutor.ResultPartitionWriter { return e.outputs[i] }

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

// TestForwarderReadsEveryInput: a vertex with inputs reads them all, one record from each open
// input in turn, and writes every record to every output; a sink (no outputs) just counts.
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
