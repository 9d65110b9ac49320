package taskexecutor

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

// The task API's int64 batch path over the in-memory shuffle (which has no bulk writer, so the
// output emits each value): batches and single records mix in order on one output and one
// input, a record that is not an int64 is reported once by the next NextInt64s and reading
// goes on after it, every record counts once in numRecordsOut and numRecordsIn, and the end is
// io.EOF.
func TestInt64BatchPathOnTheInMemoryShuffle(t *testing.T) {
	s := NewShuffle(ShuffleConfig{BatchSize: 4})
	id := partID(1, 0, attemptID(1, 0, 0))
	sink := newTestEnv(t, s, pids(1))
	w := newTestWriter(t, s, id, jobgraph.PipelinedBounded, 1)
	src := newEnvironment(notStopped, TaskInfo{TaskName: "src (1/1)"})
	src.writers = append(src.writers, w)

	out, ok := src.Output(0).(Int64Writer)
	require.True(t, ok, "the task's output implements Int64Writer")
	require.NoError(t, out.EmitInt64s(ctx, 0, []int64{1, 2, 3}))
	require.NoError(t, src.Output(0).Emit(ctx, 0, int64(4)))
	require.NoError(t, src.Output(0).Emit(ctx, 0, "five"))
	require.NoError(t, out.EmitInt64s(ctx, 0, []int64{6, 7, 8, 9, 10, 11}))
	require.NoError(t, out.EmitInt64s(ctx, 0, nil))
	require.NoError(t, w.finish(ctx))
	assert.Equal(t, int64(11), src.recordsOut.Count())

	in, ok := sink.Input(0).(Int64Reader)
	require.True(t, ok, "the task's input implements Int64Reader")
	var got []int64
	var notInt []error
	buf := make([]int64, 3)
	for {
		n, err := in.NextInt64s(ctx, buf)
		if err == io.EOF {
			require.Zero(t, n)
			break
		}
		if errors.Is(err, ErrNotInt64) {
			require.Zero(t, n)
			notInt = append(notInt, err)
			continue
		}
		require.NoError(t, err)
		require.GreaterOrEqual(t, n, 1)
		got = append(got, buf[:n]...)
	}
	assert.Equal(t, []int64{1, 2, 3, 4, 6, 7, 8, 9, 10, 11}, got)
	if assert.Len(t, notInt, 1) {
		assert.EqualError(t, notInt[0], "taskexecutor: the record is not an int64: a record of type string")
	}
	assert.Equal(t, int64(11), sink.recordsIn.Count())
	n, err := in.NextInt64s(ctx, buf)
	assert.Zero(t, n)
	assert.Equal(t, io.EOF, err, "the end sticks")
}

// An output or input index out of range still implements the batch interfaces, and says what
// is wrong.
func TestInt64BatchPathOutOfRange(t *testing.T) {
	env := newEnvironment(notStopped, TaskInfo{TaskName: "t (1/1)"})
	err := env.Output(2).(Int64Writer).EmitInt64s(ctx, 0, []int64{1})
	assert.EqualError(t, err, "t (1/1): output 2 out of range [0, 0)")
	n, err := env.Input(1).(Int64Reader).NextInt64s(ctx, make([]int64, 1))
	assert.Zero(t, n)
	assert.EqualError(t, err, "t (1/1): input 1 out of range [0, 0)")
}

// HandOver gives what a subpartition gathered to its reader as one batch at once, whatever its
// size, and ReaderWaiting reports a waiting reader once per wait.
func TestHandOverWriter(t *testing.T) {
	s := NewShuffle(ShuffleConfig{BatchSize: 100})
	id := partID(1, 0, attemptID(1, 0, 0))
	sink := newTestEnv(t, s, pids(1))
	w := newTestWriter(t, s, id, jobgraph.PipelinedBounded, 1)
	var ho HandOverWriter = w
	require.NoError(t, w.Emit(ctx, 0, "a"))
	done, err := ho.HandOver(ctx, 0, "b", true)
	require.NoError(t, err)
	assert.True(t, done)
	g := sink.gates[0]
	r, ok, err := g.Poll()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "a", r)
	r, ok = g.Buffered()
	assert.True(t, ok)
	assert.Equal(t, "b", r)
	_, ok = g.Buffered()
	assert.False(t, ok, "one batch of two records")

	assert.False(t, ho.ReaderWaiting(0))
	g.SetWaiting(true)
	assert.True(t, ho.ReaderWaiting(0))
	assert.False(t, ho.ReaderWaiting(0), "once per wait")
	_, err = ho.HandOver(ctx, 1, nil, true)
	assert.ErrorContains(t, err, "subpartition 1 out of range [0, 1)")
}
