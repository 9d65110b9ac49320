package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
	"github.com/jobgraph/jobgraph/examples/streaming/keyedsum"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runArgs runs the job as the command line args ask, on a MiniCluster, and returns what it saw.
func runArgs(t *testing.T, args ...string) outcome {
	t.Helper()
	o, err := parseFlags(args, io.Discard)
	require.NoError(t, err)
	require.NoError(t, checkOutDir(o.out))
	r, err := runJob(t.Context(), o, nil)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFinished, r.result.Status, "%v", r.result.RootCause)
	return r
}

// The job with three injected task failures (seeded) on a MiniCluster in a synctest bubble: the
// sources emit 100,000 records/s of the bubble's clock, so checkpoints every 5 ms complete while
// records flow. Each failure restarts the job from the latest completed checkpoint, and the
// output holds every record once with every key's running sums.
func TestStreamingWithFailuresIsExactlyOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		r := runArgs(t, "-records", "20000", "-keys", "10", "-parallelism", "2", "-failures", "3", "-seed", "7",
			"-checkpoint-interval", "5ms", "-rate", "100000", "-out", dir)
		require.Len(t, r.result.ExceptionHistory, 3)
		plan, err := keyedsum.PlanFailures(keyedsum.JobOptions{Records: 20000, Keys: 10, Parallelism: 2, OutDir: dir}, 3, 7)
		require.NoError(t, err)
		for k, e := range r.result.ExceptionHistory {
			f := plan[k]
			assert.Contains(t, e.Message, "keyedsum: "+f.Vertex+" ("+strconv.Itoa(f.Subtask+1)+"/2) attempt "+strconv.Itoa(k)+
				" after "+strconv.FormatInt(f.AfterRecords, 10)+" records: injected failure")
		}
		st := r.archived.CheckpointStatistics
		require.NotNil(t, st)
		assert.Positive(t, st.Counts.Restored, "some restart restored a checkpoint")
		sum, err := keyedsum.Check(20000, 10, dir)
		require.NoError(t, err)
		assert.Equal(t, keyedsum.Summary{Runs: 1, Files: 2, Lines: 20000, Keys: 10}, sum)
	})
}

// A checkpoint declined by sink 2/2 while sink 1/2 may already have taken its snapshot: with no
// tolerated checkpoint failure the job fails over from the checkpoint before, and sink 1/2 must
// not have committed the declined checkpoint's lines (a sink that committed at its snapshot writes
// them twice here).
func TestStreamingDeclinedCheckpointCommitsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		o, err := parseFlags([]string{"-records", "20000", "-keys", "10", "-parallelism", "2", "-checkpoint-interval", "5ms",
			"-rate", "100000", "-out", dir}, io.Discard)
		require.NoError(t, err)
		o.extraFailures = []keyedsum.Failure{{Vertex: keyedsum.SinkVertex, Subtask: 1, Attempt: 0, AtSnapshot: 3}}
		r, err := runJob(t.Context(), o, nil)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusFinished, r.result.Status, "%v", r.result.RootCause)
		st := r.archived.CheckpointStatistics
		require.NotNil(t, st)
		// Checkpoints triggered before every task runs fail too, so the decline is the latest
		// failure, not necessarily the only one.
		require.NotNil(t, st.Latest.Failed)
		f := st.Latest.Failed
		assert.Contains(t, f.FailureMessage, fmt.Sprintf("checkpoint %d: Checkpoint was declined", f.ID))
		assert.Contains(t, f.FailureMessage, fmt.Sprintf("keyedsum: sink (2/2) attempt 0, snapshot 3 (checkpoint %d): injected snapshot failure", f.ID))
		assert.EqualValues(t, 1, st.Counts.Restored, "the job restarted once, from the checkpoint before the declined one")
		require.Len(t, r.result.ExceptionHistory, 1)
		sum, err := keyedsum.Check(20000, 10, dir)
		require.NoError(t, err)
		assert.Equal(t, keyedsum.Summary{Runs: 1, Files: 2, Lines: 20000, Keys: 10}, sum)
	})
}

// The rescaling scenario on a MiniCluster: max parallelism 128, the keyed sum at
// parallelism 4, stop-with-savepoint once the records 1..10,000 are through, then the savepoint
// restored at 2 and at 8. New sum subtask i restores the key groups [⌈i·128/p⌉, ⌈(i+1)·128/p⌉)
// with exactly the sums the first run ended with, and each pair of runs, read one after the
// other, is exactly-once.
func TestStreamingRescalesFromASavepoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, keys, m = "20000", "10", "10000"
		dir1, sp := t.TempDir(), t.TempDir()
		var stdout bytes.Buffer
		err := run(t.Context(), []string{"-records", n, "-keys", keys, "-parallelism", "4", "-max-parallelism", "128",
			"-checkpoint-interval", "10ms", "-rate", "100000", "-stop-with-savepoint-after", m, "-savepoint-dir", sp, "-out", dir1}, &stdout)
		require.NoError(t, err, stdout.String())
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		path := lines[len(lines)-1]
		assert.Equal(t, sp, filepath.Dir(path), "the last line is the savepoint's path")
		assert.Contains(t, stdout.String(), "check: exactly-once: 10000 lines in 4 part files of 1 run hold every record of 1..10000 once")
		final := lastSums(t, dir1)
		require.Len(t, final, 10)

		for _, p := range []int{2, 8} {
			dir2 := t.TempDir()
			r := runArgs(t, "-records", n, "-keys", keys, "-parallelism", strconv.Itoa(p), "-max-parallelism", "128",
				"-checkpoint-interval", "10ms", "-rate", "100000", "-restore", path, "-out", dir2, "-previous-out", dir1)
			restored, err := jobgraph.AccumulatorValue[[]keyedsum.RestoredSums](r.result.Accumulators, keyedsum.AccRestoredSums)
			require.NoError(t, err)
			require.Len(t, restored, p)
			for i, rs := range restored {
				want := keygroup.KeyGroupRange{Start: (i*128 + p - 1) / p, End: ((i+1)*128+p-1)/p - 1}
				assert.Equal(t, i, rs.Subtask, "p=%d", p)
				assert.Equal(t, want, rs.KeyGroups, "subtask %d of %d", i, p)
				wantSums := map[int64]int64{}
				for k, v := range final {
					if want.Contains(keygroup.AssignToKeyGroup(keygroup.HashInt64(k), 128)) {
						wantSums[k] = v
					}
				}
				assert.Equal(t, wantSums, rs.Sums, "subtask %d of %d continues from the savepoint's sums", i, p)
				if len(wantSums) > 0 {
					assert.True(t, rs.FromState, "subtask %d of %d: the range is the restored state's", i, p)
				}
			}
			sum, err := keyedsum.Check(20000, 10, dir1, dir2)
			require.NoError(t, err, "p=%d", p)
			assert.Equal(t, keyedsum.Summary{Runs: 2, Files: 4 + p, Lines: 20000, Keys: 10}, sum)
		}
	})
}

// lastSums is each key's last sum in dir's part files.
func lastSums(t *testing.T, dir string) map[int64]int64 {
	t.Helper()
	out := map[int64]int64{}
	files, err := filepath.Glob(filepath.Join(dir, "part-*"))
	require.NoError(t, err)
	for _, f := range files {
		b, err := readFile(f)
		require.NoError(t, err)
		for line := range strings.Lines(b) {
			fields := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
			require.Len(t, fields, 3, line)
			key, err1 := strconv.ParseInt(fields[0], 10, 64)
			sum, err2 := strconv.ParseInt(fields[1], 10, 64)
			require.NoError(t, err1)
			require.NoError(t, err2)
			out[key] = sum
		}
	}
	return out
}

func TestStreamingRejectsBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "-out is required"},
		{[]string{"-out", dir, "-parallelism", "0"}, "-parallelism and -taskexecutors must be at least 1, -slots at least 0"},
		{[]string{"-out", dir, "-failures", "2", "-checkpoint-interval", "0"}, "-failures needs checkpoints (-checkpoint-interval > 0): without them the output is not exactly-once"},
		{[]string{"-out", dir, "-stop-with-savepoint-after", "5"}, "-stop-with-savepoint-after needs -savepoint-dir"},
		{[]string{"-out", dir, "-records", "10", "-stop-with-savepoint-after", "10", "-savepoint-dir", dir}, "-stop-with-savepoint-after 10 must be below -records 10"},
		{[]string{"-out", dir, "-previous-out", dir}, "-previous-out goes with -restore"},
		{[]string{"-out", dir, "extra"}, `unexpected arguments ["extra"]`},
		{[]string{"-out", dir, "-keys", "0"}, "keyedsum: keys 0 is below 1"},
	} {
		err := run(context.Background(), tc.args, io.Discard)
		assert.EqualError(t, err, tc.want, "%q", tc.args)
	}
	require.NoError(t, writeFile(filepath.Join(dir, "part-0"), ""))
	assert.EqualError(t, run(context.Background(), []string{"-out", dir}, io.Discard),
		"-out "+dir+" already holds part files (part-0…): use a new directory")
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }
