package checkpoint_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/checkpointtest"
)

func TestStandaloneStoresConformance(t *testing.T) {
	t.Run("Store", func(t *testing.T) {
		checkpointtest.TestCompletedCheckpointStoreInBubble(t, func(t *testing.T, n int) checkpoint.CompletedCheckpointStore {
			s, err := checkpoint.NewStandaloneCompletedCheckpointStore(n)
			require.NoError(t, err)
			return s
		})
	})
	t.Run("Counter", func(t *testing.T) {
		checkpointtest.TestCheckpointIDCounterInBubble(t, func(t *testing.T) checkpoint.CheckpointIDCounter {
			return checkpoint.NewStandaloneCheckpointIDCounter()
		})
	})
}

func TestFileStoresConformance(t *testing.T) {
	t.Run("Store", func(t *testing.T) {
		checkpointtest.TestCompletedCheckpointStore(t, func(t *testing.T, n int) checkpoint.CompletedCheckpointStore {
			s, err := checkpoint.OpenFileCompletedCheckpointStore(t.TempDir(), n)
			require.NoError(t, err)
			return s
		})
	})
	t.Run("Counter", func(t *testing.T) {
		checkpointtest.TestCheckpointIDCounter(t, func(t *testing.T) checkpoint.CheckpointIDCounter {
			c, err := checkpoint.OpenFileCheckpointIDCounter(filepath.Join(t.TempDir(), "counter"))
			require.NoError(t, err)
			return c
		})
	})
}

func metadataFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "checkpoint-*.json"))
	require.NoError(t, err)
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

// The file store recovers its checkpoints on open, deletes a subsumed checkpoint's metadata and
// the state files no retained checkpoint lists, and never a savepoint's files.
func TestFileStoreRecoversAndDeletesOnlyUnreferencedFiles(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	require.NoError(t, os.MkdirAll(state, 0o755))
	file := func(name string) string {
		p := filepath.Join(state, name)
		require.NoError(t, os.WriteFile(p, []byte(name), 0o644))
		return p
	}
	shared, own1, sp := file("shared"), file("own-1"), file("savepoint-2")
	withFiles := func(id checkpoint.CheckpointID, typ checkpoint.SnapshotType, files ...string) checkpoint.CompletedCheckpoint {
		cp := checkpointtest.Sample(id, typ)
		cp.TaskStates[0].State.Files = files
		return cp
	}
	s, err := checkpoint.OpenFileCompletedCheckpointStore(filepath.Join(dir, "meta"), 2)
	require.NoError(t, err)
	_, err = s.Add(withFiles(1, checkpoint.Checkpoint, shared, own1))
	require.NoError(t, err)
	_, err = s.Add(withFiles(2, checkpoint.Savepoint, sp))
	require.NoError(t, err)
	require.NoError(t, s.Shutdown(false))

	s, err = checkpoint.OpenFileCompletedCheckpointStore(filepath.Join(dir, "meta"), 2)
	require.NoError(t, err)
	assert.Equal(t, []checkpoint.CompletedCheckpoint{withFiles(1, checkpoint.Checkpoint, shared, own1), withFiles(2, checkpoint.Savepoint, sp)}, s.All(), "recovered on open")

	sub, err := s.Add(withFiles(3, checkpoint.Checkpoint, shared))
	require.NoError(t, err)
	assert.Len(t, sub, 1)
	assert.Equal(t, []string{"checkpoint-00000000000000000002.json", "checkpoint-00000000000000000003.json"}, metadataFiles(t, filepath.Join(dir, "meta")))
	assert.FileExists(t, shared, "checkpoint 3 still references it")
	assert.NoFileExists(t, own1)

	_, err = s.Add(withFiles(4, checkpoint.Checkpoint))
	require.NoError(t, err)
	assert.FileExists(t, sp, "a savepoint's files are never deleted")
	assert.FileExists(t, shared, "checkpoint 3 is retained")
	_, err = s.Add(withFiles(5, checkpoint.Checkpoint))
	require.NoError(t, err)
	assert.NoFileExists(t, shared)
	require.NoError(t, s.Shutdown(false))
}

func TestFileCounterSurvivesReopenAndRejectsGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "counter")
	c, err := checkpoint.OpenFileCheckpointIDCounter(path)
	require.NoError(t, err)
	for range 4 {
		_, err = c.GetAndIncrement()
		require.NoError(t, err)
	}
	c2, err := checkpoint.OpenFileCheckpointIDCounter(path)
	require.NoError(t, err)
	id, err := c2.GetAndIncrement()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(5), id)

	require.NoError(t, os.WriteFile(path, []byte("minus one"), 0o644))
	_, err = checkpoint.OpenFileCheckpointIDCounter(path)
	assert.ErrorContains(t, err, "not a positive number")
	_, err = checkpoint.OpenFileCompletedCheckpointStore("", 1)
	assert.ErrorIs(t, err, checkpoint.ErrInvalidConfig)
	_, err = checkpoint.NewStandaloneCompletedCheckpointStore(-1)
	assert.ErrorIs(t, err, checkpoint.ErrInvalidConfig)
}
