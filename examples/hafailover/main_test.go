package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph/examples/streaming/keyedsum"
)

// TestMain runs a JobManager process when the parent under test started this test binary as one
// (-role jobmanager first: the parent's own arguments), and the tests otherwise.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "-role" && os.Args[2] == roleJobManager {
		if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
			os.Stderr.WriteString("hafailover: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// runKills runs the whole example — two JobManager processes (this test binary, see TestMain)
// over backend, K SIGKILLs of the leader — with a small, rate-limited input, and checks the
// outcome. Each leader is killed once 3 checkpoints (every 50 ms) completed under it, while it
// waits for the acknowledgement of the third (-ack-checkpoints): no checkpoint after it is
// stored, so the next leader restores exactly that one.
func runKills(t *testing.T, backend string, kills int) clusterOutcome {
	t.Helper()
	out := t.TempDir()
	var stdout bytes.Buffer
	o, err := parseFlags([]string{"-ha", backend, "-kills", strconv.Itoa(kills), "-checkpoints", "3",
		"-records", "20000", "-keys", "10", "-parallelism", "2", "-checkpoint-interval", "50ms", "-rate", "10000",
		"-etcd-session-ttl", "2s", "-out", out, "-timeout", "2m"}, io.Discard)
	require.NoError(t, err)
	if backend == haFile {
		o.haDir = t.TempDir()
	}
	r, err := runCluster(t.Context(), o, &stdout)
	t.Logf("the example's output:\n%s", stdout.String())
	require.NoError(t, err)

	assert.Equal(t, kills, r.Kills)
	// jobmanager-1 leads first; each kill hands the job to the standby, and a new standby
	// starts; the last standby leads once the job finished, and finds it terminated.
	var leaders []string
	for i := 1; i <= kills+2; i++ {
		leaders = append(leaders, "jobmanager-"+strconv.Itoa(i))
	}
	assert.Equal(t, leaders, r.Leaders)
	finisher, last := leaders[kills], leaders[kills+1]
	assert.Equal(t, finisher, r.Finished)
	assert.Equal(t, map[string]string{finisher: "FINISHED", last: "FINISHED " + alreadyTerminated}, r.Results)
	require.Len(t, r.Takeovers, kills)
	prev := int64(0)
	for i, tk := range r.Takeovers {
		assert.Equal(t, leaders[i], tk.Killed, "takeover %d", i)
		assert.Equal(t, leaders[i+1], tk.Leader, "takeover %d", i)
		// Checkpoint IDs of failed checkpoints are skipped, so only the lower bound is fixed.
		assert.GreaterOrEqual(t, tk.KilledLatest, prev+3, "takeover %d: 3 checkpoints under the killed leader", i)
		assert.Equal(t, tk.KilledLatest, tk.Restored, "takeover %d: the new leader restores the killed one's latest checkpoint", i)
		prev = tk.KilledLatest
	}
	assert.Equal(t, keyedsum.Summary{Runs: 1, Files: 2, Lines: 20000, Keys: 10}, r.Summary)
	sum, err := keyedsum.Check(20000, 10, out)
	require.NoError(t, err)
	assert.Equal(t, r.Summary, sum)
	assert.Contains(t, stdout.String(), "check: exactly-once: 20000 lines in 2 part files of 1 run hold every record of 1..20000 once and 10 keys' running sums")
	return r
}

// Two JobManager processes over one ha/file directory; the leader is SIGKILLed twice in a row
// (each killed one replaced by a new standby): every takeover restores the latest checkpoint
// and the output is exactly once.
func TestFileFailoverIsExactlyOnce(t *testing.T) {
	runKills(t, haFile, 2)
}

// The same on one real etcd server (started by the example), the kills' leases expiring after
// their 2 s TTL.
func TestEtcdFailoverIsExactlyOnce(t *testing.T) {
	runKills(t, haEtcd, 2)
}

// Bad flags are refused with an error naming the flag.
func TestBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "-out is required"},
		{[]string{"-out", "x", "-ha", "zookeeper"}, `-ha "zookeeper"`},
		{[]string{"-out", "x", "-role", "taskmanager"}, `-role "taskmanager"`},
		{[]string{"-out", "x", "-kills", "-1"}, "-kills"},
		{[]string{"-out", "x", "-checkpoint-interval", "0"}, "-checkpoint-interval"},
		{[]string{"-out", "x", "-etcd-session-ttl", "1500ms"}, "-etcd-session-ttl 1.5s"},
		{[]string{"-out", "x", "-role", "jobmanager"}, "needs -ha-dir"},
		{[]string{"-out", "x", "-role", "jobmanager", "-ha", "etcd"}, "needs -etcd-endpoints"},
	} {
		_, err := parseFlags(c.args, io.Discard)
		if assert.Error(t, err, "%q", c.args) {
			assert.Contains(t, err.Error(), c.want, "%q", c.args)
		}
	}
}

// An output directory that holds part files is refused before anything starts.
func TestOutDirWithPartFilesIsRefused(t *testing.T) {
	out := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(out, "part-0"), nil, 0o644))
	o, err := parseFlags([]string{"-out", out}, io.Discard)
	require.NoError(t, err)
	_, err = runCluster(context.Background(), o, io.Discard)
	assert.ErrorContains(t, err, "already holds part files")
}
