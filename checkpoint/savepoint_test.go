package checkpoint_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/checkpointtest"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

func mustJobID(t *testing.T, s string) jobgraph.JobID {
	t.Helper()
	id, err := jobgraph.ParseJobID(s)
	require.NoError(t, err)
	return id
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func sampleSavepoint(job jobgraph.JobID, v jobgraph.JobVertexID, pointer string) checkpoint.CompletedCheckpoint {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	kg := &keygroup.KeyGroupsState[[]byte]{Range: keygroup.KeyGroupRange{Start: 0, End: 1}, Groups: map[int][]byte{0: []byte("k0")}}
	return checkpoint.CompletedCheckpoint{
		JobID: job, CheckpointID: 7, Properties: checkpoint.CheckpointPropertiesFor(checkpoint.Savepoint),
		TriggerTimestamp: t0, CompletionTimestamp: t0.Add(time.Second),
		TaskStates: []checkpoint.SubtaskState{
			{JobVertexID: v, Subtask: 0, State: checkpoint.StateHandle{Data: []byte("s0"), Size: 2,
				OperatorState: keygroup.OperatorState[[]byte]{"splits": {Mode: keygroup.SplitDistribute, Elements: [][]byte{[]byte("a")}}}}},
			{JobVertexID: v, Subtask: 1, State: checkpoint.StateHandle{Files: []string{filepath.Join(pointer, "state-1")}, Size: 5, KeyedState: kg}},
		},
		StateSize: 7, ExternalPointer: pointer,
	}
}

// A savepoint is a directory savepoint-<6 hex of the JobID>-<12 random hex> with a _metadata
// file, written atomically; LoadSavepoint reads it back from the directory or the file.
func TestFileSavepointStorageWritesFlinksLayout(t *testing.T) {
	target := filepath.Join(t.TempDir(), "savepoints") // created on demand
	job := mustJobID(t, "a1b2c3d4e5f60718293a4b5c6d7e8f90")
	s := checkpoint.FileSavepointStorage{Random: &countingRandom{}}

	dir, err := s.InitializeLocationForSavepoint(job, target)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(target, "savepoint-a1b2c3-000000000001"), dir)
	assert.Empty(t, dirEntries(t, dir))

	cp := sampleSavepoint(job, jobgraph.NewJobVertexID(), dir)
	require.NoError(t, s.StoreMetadata(dir, cp))
	assert.Equal(t, []string{"_metadata"}, dirEntries(t, dir), "no temp file is left behind")

	fromDir, err := checkpoint.LoadSavepoint(dir)
	require.NoError(t, err)
	assert.Equal(t, cp, fromDir)
	fromFile, err := checkpoint.LoadSavepoint(filepath.Join(dir, "_metadata"))
	require.NoError(t, err)
	assert.Equal(t, cp, fromFile)

	// A name that is taken is drawn again.
	require.NoError(t, os.Mkdir(filepath.Join(target, "savepoint-a1b2c3-000000000003"), 0o755))
	s.Random = &countingRandom{n: 2}
	next, err := s.InitializeLocationForSavepoint(job, target)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(target, "savepoint-a1b2c3-000000000004"), next)

	// A moved savepoint directory loads with its new path.
	moved := filepath.Join(t.TempDir(), "elsewhere")
	require.NoError(t, os.Rename(dir, moved))
	got, err := checkpoint.LoadSavepoint(moved)
	require.NoError(t, err)
	assert.Equal(t, moved, got.ExternalPointer)

	require.NoError(t, s.DiscardLocation(next))
	assert.NoDirExists(t, next)
	require.NoError(t, s.DiscardLocation(next), "discarding what is gone is no error")
}

type constantRandom struct{}

func (constantRandom) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = 0xab
	}
	return len(b), nil
}

func TestFileSavepointStorageErrorsNameThePath(t *testing.T) {
	job := mustJobID(t, "a1b2c3d4e5f60718293a4b5c6d7e8f90")
	target := t.TempDir()
	s := checkpoint.FileSavepointStorage{Random: constantRandom{}}
	_, err := s.InitializeLocationForSavepoint(job, target)
	require.NoError(t, err)
	_, err = s.InitializeLocationForSavepoint(job, target)
	assert.ErrorIs(t, err, fs.ErrExist)
	assert.ErrorContains(t, err, "no free savepoint directory name in "+target+" after 10 attempts")

	_, err = s.InitializeLocationForSavepoint(job, "")
	assert.ErrorIs(t, err, checkpoint.ErrInvalidConfig)

	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	_, err = checkpoint.FileSavepointStorage{}.InitializeLocationForSavepoint(job, file)
	assert.ErrorContains(t, err, "creating savepoint target directory "+file)

	err = s.StoreMetadata(filepath.Join(target, "missing"), checkpoint.CompletedCheckpoint{JobID: job, CheckpointID: 1})
	assert.ErrorContains(t, err, "writing savepoint metadata "+filepath.Join(target, "missing", "_metadata"))

	err = s.DiscardLocation(target)
	assert.ErrorIs(t, err, checkpoint.ErrInvalidConfig)
	assert.ErrorContains(t, err, target+" is not a savepoint directory")
	assert.DirExists(t, target)
}

func TestLoadSavepointErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	missing := filepath.Join(dir, "nope")
	empty := filepath.Join(dir, "savepoint-empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	notJSON := write("not-json", "PK\x03\x04")
	unknown := write("unknown", `{"jobId":"a1b2c3d4e5f60718293a4b5c6d7e8f90","checkpointId":3,"colour":"red"}`)
	noJob := write("no-job", `{"checkpointId":3}`)
	zeroID := write("zero-id", `{"jobId":"a1b2c3d4e5f60718293a4b5c6d7e8f90","checkpointId":0}`)
	trailing := write("trailing", `{"jobId":"a1b2c3d4e5f60718293a4b5c6d7e8f90","checkpointId":3} {}`)

	for _, tc := range []struct {
		path, want string
		is         []error
	}{
		{missing, "checkpoint: cannot find a savepoint or checkpoint at " + missing, []error{fs.ErrNotExist}},
		{empty, "checkpoint: not a savepoint: directory " + empty + " holds no _metadata file", []error{checkpoint.ErrInvalidSavepoint, fs.ErrNotExist}},
		{notJSON, "checkpoint: not a savepoint: " + notJSON + " does not decode as checkpoint metadata", []error{checkpoint.ErrInvalidSavepoint}},
		{unknown, "checkpoint: not a savepoint: " + unknown + ` does not decode as checkpoint metadata: json: unknown field "colour"`, []error{checkpoint.ErrInvalidSavepoint}},
		{noJob, "checkpoint: not a savepoint: " + noJob + " names no job (jobId missing)", []error{checkpoint.ErrInvalidSavepoint}},
		{zeroID, "checkpoint: not a savepoint: " + zeroID + " has checkpoint ID 0, not positive", []error{checkpoint.ErrInvalidSavepoint}},
		{trailing, "checkpoint: not a savepoint: " + trailing + " has data after the checkpoint metadata", []error{checkpoint.ErrInvalidSavepoint}},
		{"", "checkpoint: not a savepoint: the savepoint path is empty", []error{checkpoint.ErrInvalidSavepoint}},
	} {
		_, err := checkpoint.LoadSavepoint(tc.path)
		require.Error(t, err, tc.path)
		assert.True(t, strings.HasPrefix(err.Error(), tc.want), "got %q, want prefix %q", err, tc.want)
		for _, target := range tc.is {
			assert.ErrorIs(t, err, target, tc.path)
		}
	}
}

// A retained checkpoint of the file store loads too (restoring from a retained checkpoint).
func TestLoadSavepointReadsARetainedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s, err := checkpoint.OpenFileCompletedCheckpointStore(dir, 1)
	require.NoError(t, err)
	cp := checkpointtest.Sample(4, checkpoint.Checkpoint)
	cp.JobID = mustJobID(t, "a1b2c3d4e5f60718293a4b5c6d7e8f90")
	_, err = s.Add(cp)
	require.NoError(t, err)
	got, err := checkpoint.LoadSavepoint(filepath.Join(dir, fmt.Sprintf("checkpoint-%020d.json", 4)))
	require.NoError(t, err)
	assert.Equal(t, cp, got)
}

// Savepoint 1 is never subsumed by checkpoints 2 and 3 (max retained 1): its directory, metadata
// and state files stay and load, while checkpoint 2's state is deleted once 3 subsumes it.
func TestSavepointIsNeverSubsumedByCheckpoints(t *testing.T) {
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	a := attempt(eg, v, "v", 0, 0)
	store, err := checkpoint.OpenFileCompletedCheckpointStore(t.TempDir(), 1)
	require.NoError(t, err)
	h := newHarnessOver(t, jobgraph.CheckpointingSettings{}, nil, store, checkpoint.NewStandaloneCheckpointIDCounter(), a)

	var sp checkpoint.CompletedCheckpoint
	require.NoError(t, h.c.TriggerSavepoint(h.jm, h.spDir, 0, func(cp checkpoint.CompletedCheckpoint, err error) {
		require.NoError(t, err)
		sp = cp
	}))
	spState := filepath.Join(h.savepointDir(1), "state-v-0")
	require.NoError(t, os.WriteFile(spState, []byte("sp"), 0o644))
	require.NoError(t, h.c.ReceiveAcknowledgeMessage(h.jm, checkpoint.AcknowledgeCheckpoint{Attempt: a, CheckpointID: 1,
		State: checkpoint.StateHandle{Files: []string{spState}, Size: 2}}))
	require.Equal(t, checkpoint.CheckpointID(1), sp.CheckpointID)
	assert.Equal(t, h.savepointDir(1), sp.ExternalPointer)

	ckState := map[checkpoint.CheckpointID]string{}
	for _, id := range []checkpoint.CheckpointID{2, 3} {
		ckState[id] = filepath.Join(t.TempDir(), "state")
		require.NoError(t, os.WriteFile(ckState[id], []byte("ck"), 0o644))
		h.trigger(fmt.Sprintf("cp%d", id))
		require.NoError(t, h.c.ReceiveAcknowledgeMessage(h.jm, checkpoint.AcknowledgeCheckpoint{Attempt: a, CheckpointID: id,
			State: checkpoint.StateHandle{Files: []string{ckState[id]}, Size: 2}}))
	}
	assert.Equal(t, []string{"cp2 completed 2", "cp3 completed 3"}, h.results)
	assert.Equal(t, []checkpoint.CheckpointID{3}, h.storedIDs())
	assert.NoFileExists(t, ckState[2], "a subsumed checkpoint's state is discarded")
	assert.FileExists(t, ckState[3])
	assert.Equal(t, []string{"_metadata", "state-v-0"}, dirEntries(t, h.savepointDir(1)), "the savepoint stays whole")
	loaded, err := checkpoint.LoadSavepoint(h.savepointDir(1))
	require.NoError(t, err)
	assert.Equal(t, sp, loaded)

	require.NoError(t, store.Shutdown(true))
	assert.FileExists(t, spState, "not even a discarding shutdown deletes a savepoint")
}

// failingSavepoints fails StoreMetadata and records every discard.
type failingSavepoints struct {
	checkpoint.FileSavepointStorage
	failMetadata error
	discarded    []string
}

func (s *failingSavepoints) StoreMetadata(pointer string, cp checkpoint.CompletedCheckpoint) error {
	if s.failMetadata != nil {
		return s.failMetadata
	}
	return s.FileSavepointStorage.StoreMetadata(pointer, cp)
}

func (s *failingSavepoints) DiscardLocation(pointer string) error {
	s.discarded = append(s.discarded, pointer)
	return s.FileSavepointStorage.DiscardLocation(pointer)
}

// Every way a savepoint fails after its directory exists removes the directory before the
// trigger's callback hears of the failure: a decline, an expiry, the metadata write, the store,
// the plan, a shutdown while the location was being created. A directory that cannot be
// created fails the savepoint with IO_EXCEPTION naming it.
func TestFailedSavepointFilesAreRemoved(t *testing.T) {
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	a := attempt(eg, v, "v", 0, 0)
	newH := func(t *testing.T, exec checkpoint.IOExecutor) (*harness, *failingSavepoints) {
		sps := &failingSavepoints{FileSavepointStorage: checkpoint.FileSavepointStorage{Random: &countingRandom{}}}
		h := newHarness(t, jobgraph.CheckpointingSettings{}, exec, a)
		c, err := checkpoint.NewCheckpointCoordinator(checkpoint.Config{
			JobID: h.job, JobMasterID: h.jm, Timers: h.timers, Clock: h.timers.Now, Tasks: h.rec,
			Plan:  func() (checkpoint.CheckpointPlan, error) { return h.plan, h.planErr },
			Store: h.store, IDCounter: h.counter, Executor: exec, FailJob: h.rec, Savepoints: sps,
		})
		require.NoError(t, err)
		h.c = c
		return h, sps
	}
	// trigger triggers a savepoint whose callback records the error and whether the
	// directory was still there when it ran.
	trigger := func(t *testing.T, h *harness, timeout time.Duration) *[]string {
		var got []string
		require.NoError(t, h.c.TriggerSavepoint(h.jm, h.spDir, timeout, func(_ checkpoint.CompletedCheckpoint, err error) {
			require.Error(t, err)
			_, statErr := os.Stat(h.savepointDir(1))
			got = append(got, fmt.Sprintf("%v; directory gone: %v", err, errors.Is(statErr, fs.ErrNotExist)))
		}))
		return &got
	}

	t.Run("declined", func(t *testing.T) {
		h, sps := newH(t, nil)
		got := trigger(t, h, 0)
		assert.DirExists(t, h.savepointDir(1))
		require.NoError(t, h.decline(1, a, 0))
		assert.Equal(t, []string{"checkpoint 1: Checkpoint was declined.; directory gone: true"}, *got)
		assert.Equal(t, []string{h.savepointDir(1)}, sps.discarded)
		assert.Empty(t, dirEntries(t, h.spDir))
	})
	t.Run("expired", func(t *testing.T) {
		h, _ := newH(t, nil)
		got := trigger(t, h, time.Second)
		h.timers.Advance(time.Second - 1)
		assert.Empty(t, *got)
		h.timers.Advance(1)
		assert.Equal(t, []string{"checkpoint 1: Checkpoint expired before completing.; directory gone: true"}, *got)
	})
	t.Run("metadata write fails", func(t *testing.T) {
		h, sps := newH(t, nil)
		sps.failMetadata = errors.New("disk full")
		got := trigger(t, h, 0)
		require.NoError(t, h.ack(1, a, 1))
		assert.Equal(t, []string{"checkpoint 1: Failure to finalize checkpoint.: disk full; directory gone: true"}, *got)
		assert.Empty(t, h.store.All())
		assert.Empty(t, filterPrefix(h.rec.log, "store"), "the store never hears of it")
	})
	t.Run("store fails", func(t *testing.T) {
		h, _ := newH(t, nil)
		h.store.fail = errors.New("store down")
		got := trigger(t, h, 0)
		require.NoError(t, h.ack(1, a, 1))
		assert.Equal(t, []string{"checkpoint 1: Failure to finalize checkpoint.: store down; directory gone: true"}, *got)
	})
	t.Run("plan fails", func(t *testing.T) {
		h, _ := newH(t, nil)
		h.planErr = errors.New("v/0 is DEPLOYING")
		got := trigger(t, h, 0)
		assert.Equal(t, []string{"checkpoint 1: Not all required tasks are currently running.: v/0 is DEPLOYING; directory gone: true"}, *got)
	})
	t.Run("shutdown while the location is created", func(t *testing.T) {
		exec := &heldExecutor{}
		h, _ := newH(t, exec)
		got := trigger(t, h, 0)
		assert.DirExists(t, h.savepointDir(1))
		h.c.Shutdown()
		exec.Release() // the trigger's initialization comes back to a shut-down coordinator
		exec.Release() // the discard
		assert.Equal(t, []string{"checkpoint 1: CheckpointCoordinator shutdown.; directory gone: true"}, *got)
	})
	t.Run("location cannot be created", func(t *testing.T) {
		h, _ := newH(t, nil)
		file := filepath.Join(h.spDir, "a-file")
		require.NoError(t, os.WriteFile(file, nil, 0o644))
		var spErr error
		require.NoError(t, h.c.TriggerSavepoint(h.jm, file, 0, func(_ checkpoint.CompletedCheckpoint, err error) { spErr = err }))
		assert.ErrorIs(t, spErr, checkpoint.IOException)
		assert.ErrorContains(t, spErr, "checkpoint 1: An Exception occurred while triggering the checkpoint. IO-problem detected.: checkpoint: creating savepoint target directory "+file)
		assert.Empty(t, h.rec.triggered, "no task is asked")
	})
}

func filterPrefix(log []string, prefix string) []string {
	var out []string
	for _, l := range log {
		if strings.HasPrefix(l, prefix) {
			out = append(out, strings.Fields(l)[0])
		}
	}
	return out
}
