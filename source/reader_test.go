package source_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/source"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// localEnv connects one reader task to a coordinator on the test's goroutine: its sends reach
// the coordinator at once, the coordinator's events wait in inbox until the task's next Yield
// or emit, as the TaskExecutor's mailbox runs them.
type localEnv struct {
	taskexecutor.Environment // the methods the reader does not use; calling one panics

	c        coordination.OperatorCoordinator
	subtask  int
	attempt  int
	restored *checkpoint.StateHandle

	handler    taskexecutor.OperatorEventHandler
	checkpoint taskexecutor.CheckpointHandler
	inbox      [][]byte
	sent       []string
	// snapshotAt takes a checkpoint inside the emit of that record (its index in emitted);
	// snapshots are the states taken.
	snapshotAt int
	snapshots  []checkpoint.StateHandle
	emitted    []string
}

func (e *localEnv) Info() taskexecutor.TaskInfo {
	return taskexecutor.TaskInfo{TaskName: fmt.Sprintf("reader (%d/2)", e.subtask+1), SubtaskIndex: e.subtask, Parallelism: 2, AttemptNumber: e.attempt}
}

func (e *localEnv) RestoredState() (checkpoint.CheckpointID, checkpoint.StateHandle, bool) {
	if e.restored == nil {
		return 0, checkpoint.StateHandle{}, false
	}
	return 1, *e.restored, true
}

func (e *localEnv) SetCheckpointHandler(h taskexecutor.CheckpointHandler)       { e.checkpoint = h }
func (e *localEnv) SetOperatorEventHandler(h taskexecutor.OperatorEventHandler) { e.handler = h }

func (e *localEnv) SendEventToCoordinator(ev []byte) error {
	e.sent = append(e.sent, string(ev))
	return e.c.HandleEventFromOperator(e.subtask, e.attempt, ev)
}

func (e *localEnv) SendEvent(ev []byte, ack func(error)) {
	e.inbox = append(e.inbox, ev)
	if ack != nil {
		ack(nil)
	}
}
func (e *localEnv) Subtask() int { return e.subtask }
func (e *localEnv) Attempt() int { return e.attempt }

// runMail runs the queued events; false if there were none.
func (e *localEnv) runMail() (bool, error) {
	if len(e.inbox) == 0 {
		return false, nil
	}
	for len(e.inbox) > 0 {
		ev := e.inbox[0]
		e.inbox = e.inbox[1:]
		if err := e.handler(ev); err != nil {
			return true, err
		}
	}
	return true, nil
}

var errWouldBlock = errors.New("Yield would wait forever: no event queued")

func (e *localEnv) Yield(context.Context) error {
	ran, err := e.runMail()
	if !ran {
		return errWouldBlock
	}
	return err
}

// emit is the read function's Emit: mail first, then the checkpoint if due, then the record.
func (e *localEnv) emit(record string) error {
	if _, err := e.runMail(); err != nil {
		return err
	}
	if len(e.emitted) == e.snapshotAt {
		st, err := e.checkpoint.SnapshotState(context.Background(), checkpoint.CheckpointID(len(e.snapshots)+1))
		if err != nil {
			return err
		}
		e.snapshots = append(e.snapshots, st)
	}
	e.emitted = append(e.emitted, record)
	return nil
}

// readRecords is a read function: the split's payload is its record count; it emits
// "<id>/<i>" from the split's Position on.
func readRecords(e *localEnv) source.SplitReadFunc {
	return func(ctx context.Context, s *source.Split) error {
		var n int64
		if _, err := fmt.Sscan(string(s.Payload), &n); err != nil {
			return err
		}
		for ; s.Position < n; s.Position++ {
			if err := e.emit(fmt.Sprintf("%s/%d", s.ID, s.Position)); err != nil {
				return err
			}
		}
		return nil
	}
}

func newLocal(t *testing.T, splits ...source.Split) (coordination.OperatorCoordinator, *localEnv) {
	t.Helper()
	cfg, err := source.EncodeStaticSplits(splits)
	require.NoError(t, err)
	c, err := source.StaticSplitsProvider().Create(&fakeContext{config: cfg, p: 2})
	require.NoError(t, err)
	require.NoError(t, c.Start())
	e := &localEnv{c: c, snapshotAt: -1}
	require.NoError(t, c.ExecutionAttemptReady(0, 0, e))
	return c, e
}

func TestReadSplitsAsksReadsAndAsksAgainUntilNoMoreSplits(t *testing.T) {
	_, e := newLocal(t, source.Split{ID: "a", Payload: []byte("2")}, source.Split{ID: "b", Payload: []byte("0")}, source.Split{ID: "c", Payload: []byte("1")})
	require.NoError(t, source.ReadSplits(t.Context(), e, readRecords(e)))
	assert.Equal(t, []string{"a/0", "a/1", "c/0"}, e.emitted)
	assert.Equal(t, []string{request, request, request, request}, e.sent, "one request per split, and the one NoMoreSplits answered")
}

func TestReadSplitsCheckpointsItsUnfinishedSplitsWithTheirPosition(t *testing.T) {
	c, e := newLocal(t, source.Split{ID: "a", Payload: []byte("3")}, source.Split{ID: "b", Payload: []byte("2")}, source.Split{ID: "c", Payload: []byte("1")})
	// Subtask 1 takes b before subtask 0 starts, and c is queued to subtask 0 with a while it
	// reads: a push, as a FLIP-27 enumerator may send several splits.
	other := &localEnv{c: c, subtask: 1}
	require.NoError(t, c.ExecutionAttemptReady(1, 0, other))
	e.snapshotAt = 1 // inside the emit of a/1
	read := readRecords(e)
	first := true
	err := source.ReadSplits(t.Context(), e, func(ctx context.Context, s *source.Split) error {
		if first {
			first = false
			require.NoError(t, c.HandleEventFromOperator(1, 0, []byte(request))) // b → subtask 1
			require.NoError(t, c.HandleEventFromOperator(0, 0, []byte(request))) // c → subtask 0, queued
		}
		return read(ctx, s)
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a/0", "a/1", "a/2", "c/0"}, e.emitted)
	require.Len(t, e.snapshots, 1)
	want := checkpoint.StateHandle{
		OperatorState: keygroup.OperatorState[[]byte]{source.ReaderStateName: {Mode: keygroup.SplitDistribute, Elements: [][]byte{
			[]byte(`{"id":"a","payload":"Mw==","position":1}`), []byte(`{"id":"c","payload":"MQ=="}`)}}},
		Size: 67,
	}
	assert.Equal(t, want, e.snapshots[0])

	// A new attempt restored from that state reads a from record 1 and then c, then asks.
	c2, e2 := newLocal(t)
	e2.restored = &want
	require.NoError(t, source.ReadSplits(t.Context(), e2, readRecords(e2)))
	assert.Equal(t, []string{"a/1", "a/2", "c/0"}, e2.emitted)
	assert.Equal(t, []string{request}, e2.sent)
	require.NoError(t, c2.Close())
}

func TestReadSplitsErrors(t *testing.T) {
	boom := errors.New("boom")
	_, e := newLocal(t, source.Split{ID: "a", Payload: []byte("1")})
	err := source.ReadSplits(t.Context(), e, func(context.Context, *source.Split) error { return boom })
	assert.ErrorIs(t, err, boom)
	assert.EqualError(t, err, `source: reader (1/2): reading split "a": boom`)

	// An event the reader does not know fails it.
	_, e = newLocal(t)
	e.inbox = [][]byte{[]byte(`{"type":"RequestSplit"}`)}
	err = source.ReadSplits(t.Context(), e, readRecords(e))
	assert.ErrorIs(t, err, source.ErrInvalidEvent)
	assert.EqualError(t, err, `source: invalid event: "RequestSplit": a source reader handles AddSplits and NoMoreSplits`)

	// A restored state that is not splits.
	_, e = newLocal(t)
	e.restored = &checkpoint.StateHandle{OperatorState: keygroup.OperatorState[[]byte]{source.ReaderStateName: {Elements: [][]byte{[]byte(`{`)}}}}
	assert.ErrorContains(t, source.ReadSplits(t.Context(), e, readRecords(e)), `source: reader (1/2): restoring split 0 of the reader state "SourceReaderState"`)

	// A canceled task stops before it asks.
	_, e = newLocal(t, source.Split{ID: "a", Payload: []byte("1")})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, source.ReadSplits(ctx, e, readRecords(e)), context.Canceled)
	assert.Empty(t, e.sent)
}
