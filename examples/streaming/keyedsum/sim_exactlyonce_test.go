package keyedsum

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

// Three failures, one in each vertex, each restoring from the latest completed checkpoint: the
// output is exactly-once.
func TestSimulatedFailuresKeepTheOutputExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	opts := JobOptions{Records: 3000, Keys: 7, Splits: 5, Parallelism: 2, OutDir: dir, CheckpointInterval: 1,
		Failures: []Failure{
			{Vertex: SinkVertex, Subtask: 1, Attempt: 0, AfterRecords: 400},
			{Vertex: SourceVertex, Subtask: 0, Attempt: 1, AfterRecords: 120},
			{Vertex: SumVertex, Subtask: 1, Attempt: 2, AfterRecords: 200},
		}}
	g, err := BuildJob(opts)
	require.NoError(t, err)
	s := &sim{g: g, p: 2, every: 40, periodic: 50}
	attempts := s.run(t, 5)
	require.Len(t, attempts, 4)
	for k, name := range []string{"sink (2/2)", "source (1/2)", "sum (2/2)"} {
		assert.ErrorIs(t, attempts[k].failure, ErrInjectedFailure, "attempt %d", k)
		assert.ErrorContains(t, attempts[k].failure, "keyedsum: "+name+" attempt "+strconv.Itoa(k)+" after ")
		assert.Positive(t, attempts[k].completed, "attempt %d completed a checkpoint before its failure", k)
	}
	sum, err := Check(3000, 7, dir)
	require.NoError(t, err)
	assert.Equal(t, Summary{Runs: 1, Files: 2, Lines: 3000, Keys: 7}, sum)
}

// A failure after the sink committed checkpoint 2: the committed lines stay; a restart with no
// state (as before any checkpoint) empties the file and starts over, still exactly-once; and
// output that kept the committed lines but lost the state is caught by Check, exactly.
func TestSimulatedRestartWithoutStateIsCaught(t *testing.T) {
	dir := t.TempDir()
	opts := JobOptions{Records: 200, Keys: 3, Splits: 2, Parallelism: 1, OutDir: dir, CheckpointInterval: 1,
		Failures: []Failure{{Vertex: SinkVertex, Subtask: 0, Attempt: 0, AfterRecords: 120}}}
	g, err := BuildJob(opts)
	require.NoError(t, err)
	s := &sim{g: g, p: 1, every: 50, periodic: 3}
	res := s.runAttempt(t.Context())
	require.ErrorIs(t, res.failure, ErrInjectedFailure)
	// Checkpoints 1 and 2 (after 50 and 100 records of the source) completed and were
	// confirmed before the sink's 121st record: it committed the first 100 lines, the records
	// 1..100 (split 0 gives 2, 4, …, split 1 gives 1, 3, …, taking turns).
	assert.EqualValues(t, 2, res.completed)
	committed, err := os.ReadFile(PartFile(dir, 0))
	require.NoError(t, err)
	assert.Equal(t, 100, strings.Count(string(committed), "\n"))

	// The next attempt starts fresh (no restore): the sink empties its file, the sources start
	// at 1 again, and the output is exactly-once — what a restart from no checkpoint gives.
	s.attempt++
	res = s.runAttempt(t.Context())
	require.NoError(t, res.failure)
	_, err = Check(200, 3, dir)
	require.NoError(t, err)

	// Copying the first attempt's committed lines in front of the file is what a restart that
	// kept the output but not the state would leave: Check names the repeated records.
	all, err := os.ReadFile(PartFile(dir, 0))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(PartFile(dir, 0), append(committed, all...), 0o644))
	_, err = Check(200, 3, dir)
	var ce *CheckError
	require.ErrorAs(t, err, &ce)
	// The records 1..100 appear again (100 problems), and the first line of each of the 3 keys
	// in the second copy does not continue the key's sum (3 problems): 20 listed, 83 more.
	require.Len(t, ce.Problems, MaxProblems)
	assert.Equal(t, 83, ce.More)
	part := filepath.Join(dir, "part-0")
	assert.Equal(t, part+":101: record 2 appears again", ce.Problems[0])
	// Key 2's sum over 2, 5, …, 98 (33 records) is 1650.
	assert.Equal(t, part+":101: key 2: sum 2, want 1652 (the previous sum 1650 + 2)", ce.Problems[1])
	assert.Equal(t, part+":102: record 1 appears again", ce.Problems[2])
}

// The rescaling scenario on fake environments: max parallelism 128, the keyed sum at
// parallelism 4, a stop-with-savepoint once the records 1..10,000 are through, restored at 2 and
// at 8: each new sum subtask i restores exactly the key groups [⌈i·128/p⌉, ⌈(i+1)·128/p⌉) with
// the sums the first run ended with, and the output of both runs, read one after the other, is
// exactly-once. (The paused sources' Idle ticks run on the bubble's clock.)
func TestSimulatedRescalingFromASavepoint(t *testing.T) {
	const n, keys, m = 20_000, 10, 10_000
	dir1 := t.TempDir()
	var run1 attemptResult
	synctest.Test(t, func(t *testing.T) {
		g, err := BuildJob(JobOptions{Records: n, Keys: keys, Parallelism: 4, MaxParallelism: 128, OutDir: dir1, CheckpointInterval: 1, PauseAfter: m})
		require.NoError(t, err)
		defer ForgetPauses(g.JobID)
		s := &sim{g: g, p: 4, every: 300, periodic: 5, stop: true}
		run1 = s.runAttempt(t.Context())
	})
	require.NoError(t, run1.failure)
	savepoint := run1.completed
	assert.EqualValues(t, 6, savepoint, "5 periodic checkpoints, then the savepoint")
	sum, err := Check(m, keys, dir1)
	require.NoError(t, err, "the first run's output is exactly the records 1..M")
	assert.Equal(t, Summary{Runs: 1, Files: 4, Lines: m, Keys: keys}, sum)
	final := lastSums(t, dir1)

	for _, p := range []int{2, 8} {
		t.Run("p="+strconv.Itoa(p), func(t *testing.T) {
			dir2 := t.TempDir()
			g2, err := BuildJob(JobOptions{Records: n, Keys: keys, Parallelism: p, MaxParallelism: 128, OutDir: dir2, CheckpointInterval: 1})
			require.NoError(t, err)
			s2 := &sim{g: g2, every: 300, periodic: 5}
			s2.restoreFrom(t, run1, savepoint, p)
			run2 := s2.runAttempt(t.Context())
			require.NoError(t, run2.failure)

			restored, err := jobgraph.AccumulatorValue[[]RestoredSums](jobgraph.MergeAccumulators(run2.accs...), AccRestoredSums)
			require.NoError(t, err)
			require.Len(t, restored, p)
			for i, r := range restored {
				want := keygroup.KeyGroupRange{Start: (i*128 + p - 1) / p, End: ((i+1)*128+p-1)/p - 1}
				assert.Equal(t, i, r.Subtask)
				assert.Equal(t, want, r.KeyGroups, "subtask %d of %d", i, p)
				assert.EqualValues(t, savepoint, r.CheckpointID)
				wantSums := map[int64]int64{}
				for k, v := range final {
					if want.Contains(keygroup.AssignToKeyGroup(keygroup.HashInt64(k), 128)) {
						wantSums[k] = v
					}
				}
				assert.Equal(t, wantSums, r.Sums, "subtask %d of %d continues from the savepoint's sums", i, p)
			}
			sum, err := Check(n, keys, dir1, dir2)
			require.NoError(t, err)
			assert.Equal(t, Summary{Runs: 2, Files: 4 + p, Lines: n, Keys: keys}, sum)
		})
	}
}

// lastSums is each key's last sum in dir's part files.
func lastSums(t *testing.T, dir string) map[int64]int64 {
	t.Helper()
	files, err := partFiles(dir)
	require.NoError(t, err)
	out := map[int64]int64{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for line := range strings.Lines(string(b)) {
			key, sum, _, ok := parseLine([]byte(strings.TrimSuffix(line, "\n")))
			require.True(t, ok, line)
			out[key] = sum
		}
	}
	return out
}
