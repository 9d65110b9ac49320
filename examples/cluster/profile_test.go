package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With -cpuprofile PREFIX every role process writes its CPU profile to PREFIX.<role> and the
// launcher's output is unchanged: PREFIX.jobmanager and PREFIX.taskexecutor-0…2 exist once the
// command returned, each a complete gzip stream (runtime/pprof's format, written to its end
// when the process stopped), and nothing else is written next to them.
func TestCPUProfileFlagWritesOneProfilePerRole(t *testing.T) {
	dir := writeInput(t)
	prefix := filepath.Join(t.TempDir(), "cpu")
	printed, _, _ := runLauncher(t, "-input", dir, "-cpuprofile", prefix)
	assert.Contains(t, printed, "1 JobManager and 3 TaskExecutor processes")
	names, err := filepath.Glob(prefix + "*")
	require.NoError(t, err)
	want := []string{prefix + ".jobmanager", prefix + ".taskexecutor-0", prefix + ".taskexecutor-1", prefix + ".taskexecutor-2"}
	assert.ElementsMatch(t, want, names)
	for _, name := range want {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		zr, err := gzip.NewReader(bytes.NewReader(b))
		require.NoError(t, err, name)
		n, err := io.Copy(io.Discard, zr)
		require.NoError(t, err, "%s is not a complete gzip stream", name)
		assert.Positive(t, n, name)
	}
}
