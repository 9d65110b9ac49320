package keyedsum

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeRun writes part files (name → content) into a new directory and returns it.
func writeRun(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir
}

// Records 1..6, keys i mod 2: key 0 gets 2, 4, 6 (sums 2, 6, 12), key 1 gets 3, 1, 5 (sums 3, 4,
// 9) — a key's records need not come in increasing order, only its sums must add up.
const goodPart0, goodPart1 = "0\t2\t2\n0\t6\t4\n0\t12\t6\n", "1\t3\t3\n1\t4\t1\n1\t9\t5\n"

func TestCheckAcceptsExactlyOnceOutput(t *testing.T) {
	dir := writeRun(t, map[string]string{"part-0": goodPart0, "part-1": goodPart1,
		".part-0.committed": "junk", "part-x": "junk", "part-01": "junk", "notes.txt": "junk"})
	sum, err := Check(6, 2, dir)
	require.NoError(t, err)
	assert.Equal(t, Summary{Runs: 1, Files: 2, Lines: 6, Keys: 2}, sum)

	// Two runs: 1 and 2 in the first (parallelism 2), the rest in the second (parallelism 1),
	// which continues both sums; an empty part file is fine.
	run1 := writeRun(t, map[string]string{"part-0": "0\t2\t2\n", "part-1": "1\t1\t1\n", "part-2": ""})
	run2 := writeRun(t, map[string]string{"part-0": "0\t6\t4\n1\t4\t3\n0\t12\t6\n1\t9\t5\n"})
	sum, err = Check(6, 2, run1, run2)
	require.NoError(t, err)
	assert.Equal(t, Summary{Runs: 2, Files: 4, Lines: 6, Keys: 2}, sum)

	// Part files part-0 … part-10, each holding one key: all are read.
	files := map[string]string{}
	for k := range 11 {
		first := k
		if k == 0 {
			first = 11
		}
		files[fmt.Sprintf("part-%d", k)] = fmt.Sprintf("%d\t%d\t%d\n%d\t%d\t%d\n", k, first, first, k, 2*first+11, first+11)
	}
	sum, err = Check(22, 11, writeRun(t, files))
	require.NoError(t, err)
	assert.Equal(t, Summary{Runs: 1, Files: 11, Lines: 22, Keys: 11}, sum)
}

func TestCheckNamesEachProblem(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts map[string]string
		want  []string // with DIR for the run's directory
	}{
		{"a record is missing", map[string]string{"part-0": goodPart0, "part-1": "1\t3\t3\n1\t4\t1\n"},
			[]string{"1 of the records 1..6 are missing: 5"}},
		{"a line is written twice", map[string]string{"part-0": goodPart0, "part-1": "1\t3\t3\n1\t4\t1\n1\t4\t1\n1\t9\t5\n"},
			[]string{"DIR/part-1:3: record 1 appears again", "DIR/part-1:3: key 1: sum 4, want 5 (the previous sum 4 + 1)"}},
		{"a sum is wrong", map[string]string{"part-0": "0\t2\t2\n0\t7\t4\n0\t13\t6\n", "part-1": goodPart1},
			[]string{"DIR/part-0:2: key 0: sum 7, want 6 (the previous sum 2 + 4)"}},
		{"a key does not match its record", map[string]string{"part-0": "0\t2\t2\n0\t6\t4\n0\t12\t6\n0\t3\t3\n", "part-1": "1\t1\t1\n1\t6\t5\n"},
			[]string{"DIR/part-0:4: record 3 has key 0, want 1 (i mod 2)", "1 of the records 1..6 are missing: 3"}},
		{"a malformed line", map[string]string{"part-0": goodPart0 + "0\t14\n", "part-1": goodPart1},
			[]string{"DIR/part-0:4: malformed line \"0\\t14\" (want key<TAB>sum<TAB>i)"}},
		{"a record out of range", map[string]string{"part-0": goodPart0 + "0\t20\t8\n", "part-1": goodPart1},
			[]string{"DIR/part-0:4: record 8 is outside 1..6"}},
		{"a key in two files of one run", map[string]string{"part-0": goodPart0, "part-1": "1\t3\t3\n1\t4\t1\n", "part-2": "1\t9\t5\n"},
			[]string{"DIR/part-2:1: key 1 is also in DIR/part-1 of run 1: a key's lines must be in one part file per run"}},
		{"nothing at all", map[string]string{},
			[]string{"6 of the records 1..6 are missing: 1, 2, 3, 4, 5, 6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeRun(t, tc.parts)
			_, err := Check(6, 2, dir)
			var ce *CheckError
			require.ErrorAs(t, err, &ce)
			var want []string
			for _, w := range tc.want {
				want = append(want, strings.ReplaceAll(w, "DIR", dir))
			}
			assert.Equal(t, want, ce.Problems)
			assert.Zero(t, ce.More)
			assert.Equal(t, fmt.Sprintf("keyedsum: the output is not exactly-once: %d problems\n  %s", len(want), strings.Join(want, "\n  ")), err.Error())
		})
	}
}

// Two correct runs read in the wrong order do not add up.
func TestCheckReadsRunsInOrder(t *testing.T) {
	run1 := writeRun(t, map[string]string{"part-0": "0\t2\t2\n", "part-1": "1\t1\t1\n"})
	run2 := writeRun(t, map[string]string{"part-0": "0\t6\t4\n1\t4\t3\n0\t12\t6\n1\t9\t5\n"})
	_, err := Check(6, 2, run2, run1)
	var ce *CheckError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{
		run2 + "/part-0:1: key 0: sum 6, want 4 (the previous sum 0 + 4)",
		run2 + "/part-0:2: key 1: sum 4, want 3 (the previous sum 0 + 3)",
		run1 + "/part-0:1: key 0: sum 2, want 14 (the previous sum 12 + 2)",
		run1 + "/part-1:1: key 1: sum 1, want 10 (the previous sum 9 + 1)",
	}, ce.Problems)
}

// Past MaxProblems the problems are counted; the missing records are always listed, the first
// ten of them.
func TestCheckCountsProblemsPastTheLimit(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "0\t%d\t%d\n", i, i) // every sum but the first is wrong
	}
	dir := writeRun(t, map[string]string{"part-0": b.String()})
	_, err := Check(50, 1, dir)
	var ce *CheckError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Problems, MaxProblems+1)
	assert.Equal(t, dir+"/part-0:2: key 0: sum 2, want 3 (the previous sum 1 + 2)", ce.Problems[0])
	assert.Equal(t, "20 of the records 1..50 are missing: 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, …", ce.Problems[MaxProblems])
	assert.Equal(t, 29-MaxProblems, ce.More)
	assert.True(t, strings.HasSuffix(err.Error(), "\n  … and 9 more"), err.Error())
}

func TestCheckRefusesBadArguments(t *testing.T) {
	_, err := Check(0, 2, t.TempDir())
	assert.EqualError(t, err, "keyedsum: check: records 0 and keys 2 must be at least 1")
	_, err = Check(6, 2, filepath.Join(t.TempDir(), "missing"))
	require.Error(t, err)
	var ce *CheckError
	assert.NotErrorAs(t, err, &ce, "an unreadable run is not a verdict")
	assert.ErrorContains(t, err, "no such file or directory")
}
