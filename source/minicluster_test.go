package source_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/source"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// The scenarios on a whole MiniCluster in virtual time.

// startCluster starts a MiniCluster of one TaskExecutor with slots slots over reg and coords.
func startCluster(t *testing.T, slots int, reg *taskexecutor.Registry, coords *coordination.Registry) *minicluster.MiniCluster {
	t.Helper()
	mc, err := minicluster.New(minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: slots, Registry: reg, OperatorCoordinators: coords})
	require.NoError(t, err)
	require.NoError(t, mc.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, mc.Close()) })
	return mc
}

// sleep waits d (virtual time in a bubble) or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

func splitIDs(n int) []source.Split {
	out := make([]source.Split, n)
	for i := range out {
		out[i] = source.Split{ID: fmt.Sprintf("s%03d", i)}
	}
	return out
}

// readersJob is a BATCH job: reader (p, the split source) –ALL_TO_ALL BLOCKING→ collector (1).
// A reader emits "<subtask>:<split>" for every split it read; the collector keeps them.
type readersJob struct {
	mu sync.Mutex
	// byAttempt are the splits each reader attempt was handed, in order ("<subtask>#<attempt>").
	byAttempt map[string][]string
	collected []string
}

func (j *readersJob) register(t *testing.T, perSplit func(taskexecutor.TaskInfo) time.Duration, fail func(info taskexecutor.TaskInfo, read int) bool) *taskexecutor.Registry {
	reg := taskexecutor.NewRegistry()
	reg.Register("reader", func(ctx context.Context, env taskexecutor.Environment) error {
		info := env.Info()
		key := fmt.Sprintf("%d#%d", info.SubtaskIndex, info.AttemptNumber)
		read := 0
		return source.ReadSplits(ctx, env, func(ctx context.Context, s *source.Split) error {
			j.mu.Lock()
			j.byAttempt[key] = append(j.byAttempt[key], s.ID)
			j.mu.Unlock()
			if fail(info, read) {
				return errors.New("injected reader failure")
			}
			if err := sleep(ctx, perSplit(info)); err != nil {
				return err
			}
			read++
			return env.Output(0).Emit(ctx, 0, fmt.Sprintf("%d:%s", info.SubtaskIndex, s.ID))
		})
	})
	reg.Register("collector", func(ctx context.Context, env taskexecutor.Environment) error {
		var got []string
		for {
			r, err := env.Input(0).Next(ctx)
			if errors.Is(err, io.EOF) {
				j.mu.Lock()
				j.collected = got
				j.mu.Unlock()
				return nil
			}
			if err != nil {
				return err
			}
			got = append(got, r.(string))
		}
	})
	return reg
}

func (j *readersJob) graph(t *testing.T, splits []source.Split, p int) *jobgraph.JobGraph {
	cfg, err := source.EncodeStaticSplits(splits)
	require.NoError(t, err)
	g := jobgraph.New("split-readers", jobgraph.Batch)
	r := g.AddVertex("reader", "reader", p)
	r.OperatorCoordinator = "splits"
	r.OperatorCoordinatorConfig = cfg
	g.Connect(r, g.AddVertex("collector", "collector", 1), jobgraph.AllToAll, jobgraph.Blocking)
	return g
}

// perReader counts the collected records by reader subtask and returns the split IDs sorted.
func perReader(collected []string, p int) (counts []int, ids []string) {
	counts = make([]int, p)
	for _, r := range collected {
		var subtask int
		var id string
		if _, err := fmt.Sscanf(r, "%d:%s", &subtask, &id); err == nil {
			counts[subtask]++
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return counts, ids
}

func wantIDs(n int) []string {
	var out []string
	for _, s := range splitIDs(n) {
		out = append(out, s.ID)
	}
	return out
}

// 100 splits, 4 readers; reader 3 takes 10 s a split, the others 1 s. Every reader asks at 0 s;
// the fast ones ask again every second, the slow one at 10, 20 and 30 s (there are splits left
// at each) and at 40 s, when the 100 are gone: at 31 s the fast readers take the last 3 (4 at
// 0 s, 3·31 in 1…31 s, 3 by the slow one at 10, 20, 30 s). So each fast reader reads exactly 32
// splits and the slow one 4, and every split is read exactly once.
func TestSlowReaderGetsFewerSplits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &readersJob{byAttempt: map[string][]string{}}
		reg := j.register(t, func(info taskexecutor.TaskInfo) time.Duration {
			if info.SubtaskIndex == 3 {
				return 10 * time.Second
			}
			return time.Second
		}, func(taskexecutor.TaskInfo, int) bool { return false })
		coords := coordination.NewRegistry()
		require.NoError(t, coords.Register("splits", source.StaticSplitsProvider()))
		mc := startCluster(t, 5, reg, coords)
		g := j.graph(t, splitIDs(100), 4)
		start := time.Now()
		res, err := mc.Run(context.Background(), g)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)

		j.mu.Lock()
		defer j.mu.Unlock()
		counts, ids := perReader(j.collected, 4)
		t.Logf("splits per reader: %v, the job took %s", counts, time.Since(start))
		assert.Equal(t, wantIDs(100), ids, "every split read exactly once")
		assert.Equal(t, []int{32, 32, 32, 4}, counts)
		assert.Len(t, j.collected, 100)
		assert.Equal(t, 40*time.Second, time.Since(start).Truncate(time.Second), "the slow reader's NoMoreSplits comes at 40 s")
	})
}

// The same job, and reader 0 fails once, when it was handed its 7th split (at 6 s, after reading
// 6): its region (reader 0 alone, its output is BLOCKING and not consumed yet) restarts at once
// (fixed-delay 0), the coordinator takes back the 7 splits it handed that attempt (SubtaskReset
// with no checkpoint) and hands them out again, first. The final output has every split exactly
// once, the failed attempt's seven among them. Counting: 107 splits are handed out (100 and the
// 7 again); by 6 s the fast readers got 3·7 and the new attempt 1, the slow one 1 (and 3 more at
// 10, 20, 30 s), so the fast readers take the last 3 at 33 s: readers 1 and 2 read 34 each
// (0…33 s), reader 0's new attempt 28 (6…33 s), the slow reader 4.
func TestRegionRestartOfAReaderHandsItsSplitsOutAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &readersJob{byAttempt: map[string][]string{}}
		reg := j.register(t, func(info taskexecutor.TaskInfo) time.Duration {
			if info.SubtaskIndex == 3 {
				return 10 * time.Second
			}
			return time.Second
		}, func(info taskexecutor.TaskInfo, read int) bool {
			return info.SubtaskIndex == 0 && info.AttemptNumber == 0 && read == 6
		})
		coords := coordination.NewRegistry()
		require.NoError(t, coords.Register("splits", source.StaticSplitsProvider()))
		mc := startCluster(t, 5, reg, coords)
		g := j.graph(t, splitIDs(100), 4)
		g.RestartStrategy = jobgraph.FixedDelayRestart(1, 0)
		res, err := mc.Run(context.Background(), g)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)
		require.Len(t, res.ExceptionHistory, 1)

		j.mu.Lock()
		defer j.mu.Unlock()
		counts, ids := perReader(j.collected, 4)
		t.Logf("splits per reader in the output: %v; handed out per attempt: %v", counts, j.byAttempt)
		assert.Equal(t, wantIDs(100), ids, "every split exactly once in the final output")
		failed := j.byAttempt["0#0"]
		require.Len(t, failed, 7, "the failed attempt was handed 7 splits")
		assert.Subset(t, ids, failed)
		// The returned splits go out first: whoever asks at 6 s after the reset (reader 0's new
		// attempt, and readers 1 and 2 unless they asked before it) gets one of them.
		require.NotEmpty(t, j.byAttempt["0#1"])
		assert.Contains(t, failed, j.byAttempt["0#1"][0])
		handedOut := 0
		for _, s := range j.byAttempt {
			handedOut += len(s)
		}
		assert.Equal(t, 107, handedOut, "100, and the failed attempt's 7 again")
		assert.Equal(t, []int{28, 34, 34, 4}, counts)
	})
}
