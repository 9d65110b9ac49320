package keyedsum

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func pendingState(path string, txns ...transaction) checkpoint.StateHandle {
	elem := encodePending(pendingFile{Path: path, Txns: txns})
	return checkpoint.StateHandle{OperatorState: keygroup.OperatorState[[]byte]{PendingState: {Mode: keygroup.SplitDistribute,
		Elements: [][]byte{elem}}}, Size: int64(len(elem))}
}

const (
	line1 = "1\t1\t1\n"
	line2 = "2\t2\t2\n"
	line3 = "1\t5\t4\n"
	line4 = "2\t7\t5\n"
	line5 = "1\t12\t7\n"
)

func sinkEnv(t *testing.T, g *jobgraph.JobGraph, attempt int, items ...any) *fakeEnv {
	e := newFakeEnv(taskInfo(g, g.VertexByName(SinkVertex), 0, 1, attempt, true))
	e.gate = &fakeGate{env: e, items: items}
	return e
}

// The lines of a checkpoint reach the file only when that checkpoint is confirmed, and an
// aborted checkpoint's lines wait for the next confirmation; until then they are in the sink's
// state. Input that ends with lines no checkpoint committed fails the sink.
func TestSinkCommitsACheckpointsLinesOnlyWhenItCompletes(t *testing.T) {
	g := buildJob(t, JobOptions{Records: 10, Keys: 3, Parallelism: 1, CheckpointInterval: 1})
	part := PartFile(sinkDir(t, g), 0)
	file := func() string { return readFile(t, part) }
	var seen []string
	look := func() { seen = append(seen, file()) }
	e := sinkEnv(t, g, 0,
		Update{1, 1, 1}, Update{2, 2, 2}, barrier{id: 1}, look,
		Update{1, 5, 4}, barrier{id: 2}, abort{2}, look,
		Update{2, 7, 5}, barrier{id: 3}, look, confirm{3}, look,
		Update{1, 12, 7})
	err := RunSink(t.Context(), e)
	assert.EqualError(t, err, "keyedsum: sink (1/1): the input ended with 7 bytes of lines no completed checkpoint committed (last committed checkpoint 3)")
	assert.Equal(t, []string{"", "", "", line1 + line2 + line3 + line4}, seen)
	assert.Equal(t, pendingState(part, transaction{ID: 1, Lines: []byte(line1 + line2)}), e.snapshots[1])
	assert.Equal(t, pendingState(part, transaction{ID: 1, Lines: []byte(line1 + line2)}, transaction{ID: 2, Lines: []byte(line3)}, transaction{ID: 3, Lines: []byte(line4)}), e.snapshots[3])
	m, err := ReadCommitMarker(part)
	require.NoError(t, err)
	assert.Equal(t, CommitMarker{CheckpointID: 3, Length: int64(len(line1 + line2 + line3 + line4))}, m)

	// Restored from checkpoint 3, whose transactions were all committed: nothing is appended
	// again; the next checkpoint commits the new line.
	e = sinkEnv(t, g, 1, Update{1, 12, 7}, barrier{id: 4}, confirm{4})
	st := pendingState(part, transaction{ID: 1, Lines: []byte(line1 + line2)}, transaction{ID: 2, Lines: []byte(line3)}, transaction{ID: 3, Lines: []byte(line4)})
	e.restoreID, e.restore = 3, &st
	require.NoError(t, RunSink(t.Context(), e))
	assert.Equal(t, line1+line2+line3+line4+line5, file())
}

// sinkDir is the sink's output directory in g.
func sinkDir(t *testing.T, g *jobgraph.JobGraph) string {
	t.Helper()
	var cfg Config
	require.NoError(t, json.Unmarshal(g.VertexByName(SinkVertex).Config, &cfg))
	return cfg.OutDir
}

// A restore commits the transactions its checkpoint covers that the failed attempt had not
// committed (the confirmation never reached it), drops what a commit left half-written, and
// ignores transactions of later checkpoints.
func TestSinkRestoreCommitsWhatItsCheckpointCovers(t *testing.T) {
	g := buildJob(t, JobOptions{Records: 10, Keys: 3, Parallelism: 1, CheckpointInterval: 1})
	part := PartFile(sinkDir(t, g), 0)
	require.NoError(t, os.MkdirAll(sinkDir(t, g), 0o755))

	// Checkpoint 1 committed (marker), then a commit of 2 failed half-way: part of line3.
	require.NoError(t, os.WriteFile(part, []byte(line1+line2+line3[:3]), 0o644))
	require.NoError(t, writeCommitMarker(part, CommitMarker{CheckpointID: 1, Length: int64(len(line1 + line2))}))
	st := pendingState(part, transaction{ID: 1, Lines: []byte(line1 + line2)}, transaction{ID: 2, Lines: []byte(line3)}, transaction{ID: 5, Lines: []byte("junk\n")})
	e := sinkEnv(t, g, 2, Update{2, 7, 5}, barrier{id: 6}, confirm{6})
	e.restoreID, e.restore = 4, &st
	require.NoError(t, RunSink(t.Context(), e))
	assert.Equal(t, line1+line2+line3+line4, readFile(t, part))
	m, err := ReadCommitMarker(part)
	require.NoError(t, err)
	assert.Equal(t, CommitMarker{CheckpointID: 6, Length: int64(len(line1 + line2 + line3 + line4))}, m)

	// A fresh start (no checkpoint to restore) empties the file: nothing of it was committed
	// by this job.
	e = sinkEnv(t, g, 3, Update{1, 1, 1}, barrier{id: 7}, confirm{7})
	require.NoError(t, RunSink(t.Context(), e))
	assert.Equal(t, line1, readFile(t, part))

	// A file shorter than its marker lost committed lines: the sink fails rather than guess.
	require.NoError(t, os.WriteFile(part, nil, 0o644))
	e = sinkEnv(t, g, 4)
	e.restoreID, e.restore = 7, &checkpoint.StateHandle{}
	assert.EqualError(t, RunSink(t.Context(), e), "keyedsum: sink (1/1): "+part+": the file has 0 bytes, its commit marker says 6 were committed")
}

// Stop-with-savepoint: the savepoint's confirmation commits every line, then ErrStopped ends the
// sink normally.
func TestSinkStopsWithASavepoint(t *testing.T) {
	g := buildJob(t, JobOptions{Records: 10, Keys: 3, Parallelism: 1, CheckpointInterval: 1})
	e := sinkEnv(t, g, 0, Update{1, 1, 1}, barrier{id: 1}, Update{2, 2, 2}, barrier{id: 2, stop: true}, Update{1, 5, 4})
	require.NoError(t, RunSink(t.Context(), e))
	assert.Equal(t, line1+line2, readFile(t, PartFile(sinkDir(t, g), 0)))
	assert.Len(t, e.gate.items, 1, "nothing after the savepoint is read")
}

// Without checkpoints the sink writes every line as it comes.
func TestSinkWithoutCheckpointsWritesAtOnce(t *testing.T) {
	g := buildJob(t, JobOptions{Records: 10, Keys: 3, Parallelism: 1})
	e := newFakeEnv(taskInfo(g, g.VertexByName(SinkVertex), 0, 1, 0, false))
	e.gate = &fakeGate{env: e, items: []any{Update{1, 1, 1}, Update{2, 2, 2}}}
	require.NoError(t, RunSink(t.Context(), e))
	assert.Equal(t, line1+line2, readFile(t, PartFile(sinkDir(t, g), 0)))
}

func TestPendingStateRoundTrips(t *testing.T) {
	p := pendingFile{Path: "/tmp/out/part-3", Txns: []transaction{{ID: 1, Lines: []byte(line1)}, {ID: 300, Lines: []byte{}}, {ID: 301, Lines: []byte(line2 + line3)}}}
	b := encodePending(p)
	assert.Len(t, b, 1+len(p.Path)+3*txnHeader+len(line1+line2+line3))
	got, err := decodePending(b)
	require.NoError(t, err)
	assert.Equal(t, p, got)
	for _, tc := range []struct {
		b    []byte
		want string
	}{
		{[]byte{}, "keyedsum: sink state: bad path"},
		{[]byte{0x05, 'a'}, "keyedsum: sink state: bad path"},
		{append(encodePending(pendingFile{Path: "x"}), 0, 1), "keyedsum: sink state of x: a transaction header of 2 bytes"},
		{append(encodePending(pendingFile{Path: "x"}), 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 3, 'a'), "keyedsum: sink state of x: transaction 7 has 1 bytes of its 3"},
	} {
		_, err := decodePending(tc.b)
		assert.EqualError(t, err, tc.want, "%x", tc.b)
	}
}

// The sink hands its one pending transaction over as the state element without copying its
// lines, and the element decodes to that transaction; the next lines go to a new buffer.
func TestSinkSnapshotDoesNotCopyOneTransaction(t *testing.T) {
	s := newSinkState("/out/part-0")
	s.cur = AppendLine(s.cur, Update{1, 1, 1})
	st, err := s.SnapshotState(t.Context(), 5)
	require.NoError(t, err)
	elem := st.OperatorState[PendingState].Elements[0]
	assert.Same(t, &elem[len(elem)-1], &s.pending[0].Lines[len(line1)-1], "the element is the buffer the lines were written to")
	got, err := decodePending(elem)
	require.NoError(t, err)
	assert.Equal(t, pendingFile{Path: "/out/part-0", Txns: []transaction{{ID: 5, Lines: []byte(line1)}}}, got)
	s.cur = AppendLine(s.cur, Update{2, 2, 2})
	assert.Equal(t, line1, string(got.Txns[0].Lines), "new lines do not touch the state")
	st, err = s.SnapshotState(t.Context(), 6)
	require.NoError(t, err)
	got, err = decodePending(st.OperatorState[PendingState].Elements[0])
	require.NoError(t, err)
	assert.Equal(t, pendingFile{Path: "/out/part-0", Txns: []transaction{{ID: 5, Lines: []byte(line1)}, {ID: 6, Lines: []byte(line2)}}}, got)
}
