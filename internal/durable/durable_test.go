package durable_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/internal/durable"
)

// names lists dir's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteFileReplacesAndLeavesNoTempFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "entry.json")
	require.NoError(t, durable.WriteFile(path, []byte("first")))
	require.NoError(t, durable.WriteFile(path, []byte("second")))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "second", string(data))
	assert.Equal(t, []string{"entry.json"}, names(t, dir))
}

func TestCreateExclusiveNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "job_DIRTY.json")
	require.NoError(t, durable.CreateExclusive(path, []byte("winner")))
	err := durable.CreateExclusive(path, []byte("loser"))
	require.ErrorIs(t, err, fs.ErrExist)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "winner", string(data))
	assert.Equal(t, []string{"job_DIRTY.json"}, names(t, dir), "the loser's temp file is removed")
}

func TestRenameAndRemove(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "a_DIRTY.json"), filepath.Join(dir, "a.json")
	require.NoError(t, durable.WriteFile(from, []byte("x")))
	require.NoError(t, durable.Rename(from, to))
	assert.Equal(t, []string{"a.json"}, names(t, dir))
	require.ErrorIs(t, durable.Rename(from, to), fs.ErrNotExist)
	require.NoError(t, durable.Remove(to))
	require.NoError(t, durable.Remove(to), "removing a missing file is not an error")
	assert.Empty(t, names(t, dir))
}

func TestIsTemp(t *testing.T) {
	dir := t.TempDir()
	// The temp file of a write that failed after it was created is the same kind of name a
	// crash leaves; make one the way WriteFile names them.
	f, err := os.CreateTemp(dir, ".plan.json.tmp-*")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.True(t, durable.IsTemp(filepath.Base(f.Name())))
	for _, name := range []string{"plan.json", "job_DIRTY.json", ".hidden", "checkpoint-00000000000000000001.json"} {
		assert.False(t, durable.IsTemp(name), name)
	}
}
