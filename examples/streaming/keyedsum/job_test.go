package keyedsum

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

func TestBuildJobShape(t *testing.T) {
	dir := t.TempDir()
	fails := []Failure{{Vertex: SumVertex, Subtask: 1, Attempt: 0, AfterRecords: 9}, {Vertex: SinkVertex, Subtask: 0, Attempt: 1, AfterRecords: 4}}
	g, err := BuildJob(JobOptions{Records: 1000, Keys: 10, Parallelism: 3, OutDir: dir, CheckpointInterval: 100 * time.Millisecond,
		Failures: fails, RestartDelay: time.Millisecond, PauseAfter: 500, RestorePath: "/sp/savepoint-1"})
	require.NoError(t, err)
	assert.Equal(t, jobgraph.Streaming, g.Type)
	assert.Equal(t, 100*time.Millisecond, g.Checkpointing.Interval)
	assert.Equal(t, "/sp/savepoint-1", g.SavepointRestore.Path)
	assert.Equal(t, jobgraph.FixedDelayRestart(2, time.Millisecond), g.RestartStrategy)
	require.Len(t, g.Vertices, 3)
	cfgs := map[string]Config{}
	for i, name := range []string{SourceVertex, SumVertex, SinkVertex} {
		v := g.Vertices[i]
		assert.Equal(t, name, v.Name)
		assert.Equal(t, VertexID(name), v.ID, "fixed IDs, so a savepoint restores into another run's job")
		assert.Equal(t, 3, v.Parallelism)
		assert.Equal(t, 128, v.MaxParallelism)
		assert.Equal(t, jobgraph.DefaultSlotSharingGroup, v.SlotSharingGroup)
		var cfg Config
		require.NoError(t, json.Unmarshal(v.Config, &cfg))
		cfgs[name] = cfg
	}
	base := Config{Records: 1000, Keys: 10, Splits: 8, MaxParallelism: 128}
	src, sum, sink := base, base, base
	src.PauseAfter = 500
	sum.Failures = fails[:1]
	sink.OutDir, sink.Failures = dir, fails[1:]
	assert.Equal(t, map[string]Config{SourceVertex: src, SumVertex: sum, SinkVertex: sink}, cfgs)
	in := g.Vertices[1].Inputs[0]
	assert.Equal(t, jobgraph.AllToAll, in.DistributionPattern)
	assert.Equal(t, jobgraph.PipelinedBounded, g.Vertices[0].Results[0].ResultType)
	assert.Equal(t, jobgraph.Pointwise, g.Vertices[2].Inputs[0].DistributionPattern)
	assert.NotEqual(t, VertexID(SourceVertex), VertexID(SumVertex))

	g, err = BuildJob(JobOptions{Records: 10, Keys: 1, Parallelism: 1, OutDir: dir})
	require.NoError(t, err)
	assert.Equal(t, jobgraph.RestartStrategyNone, g.RestartStrategy.Type, "no failures planned: a failure fails the job")
}

func TestBuildJobRefusesBadOptions(t *testing.T) {
	ok := JobOptions{Records: 10, Keys: 2, Parallelism: 2, OutDir: "out"}
	for _, tc := range []struct {
		change func(*JobOptions)
		want   string
	}{
		{func(o *JobOptions) { o.Records = 0 }, "keyedsum: records 0 is below 1"},
		{func(o *JobOptions) { o.Keys = -1 }, "keyedsum: keys -1 is below 1"},
		{func(o *JobOptions) { o.Splits = -2 }, "keyedsum: splits -2 is below 1"},
		{func(o *JobOptions) { o.OutDir = "" }, "keyedsum: no output directory"},
		{func(o *JobOptions) { o.Parallelism = 0 }, "keyedsum: keygroup: parallelism 0 is outside [1, 32768]"},
		{func(o *JobOptions) { o.MaxParallelism = 1 }, "keyedsum: keygroup: parallelism 2 is above the max parallelism 1"},
		{func(o *JobOptions) { o.CheckpointInterval = -time.Second }, "keyedsum: checkpoint interval -1s is negative"},
		{func(o *JobOptions) { o.PauseAfter = -1 }, "keyedsum: pause after -1 is negative"},
		{func(o *JobOptions) { o.Rate = -1 }, "keyedsum: rate -1 is not a number of records per second"},
		{func(o *JobOptions) { o.Failures = []Failure{{Vertex: "map"}} }, `keyedsum: failure in vertex "map": the vertices are source, sum and sink`},
		{func(o *JobOptions) { o.Failures = []Failure{{Vertex: SinkVertex, Subtask: 2}} }, "keyedsum: failure {Vertex:sink Subtask:2 Attempt:0 AfterRecords:0 AtSnapshot:0}: subtask must be in [0, 2), attempt, record count and snapshot at least 0"},
	} {
		o := ok
		tc.change(&o)
		_, err := BuildJob(o)
		assert.EqualError(t, err, tc.want)
	}
}

// The plan is the seed's: failure k in attempt k, in a task that handles records, after at most
// a quarter of that task's share divided by the number of failures + 1.
func TestPlanFailures(t *testing.T) {
	opts := JobOptions{Records: 20_000, Keys: 10, Parallelism: 3, OutDir: "out"}
	plan, err := PlanFailures(opts, 3, 7)
	require.NoError(t, err)
	again, err := PlanFailures(opts, 3, 7)
	require.NoError(t, err)
	assert.Equal(t, plan, again)
	other, err := PlanFailures(opts, 3, 8)
	require.NoError(t, err)
	assert.NotEqual(t, plan, other)
	require.Len(t, plan, 3)
	for k, f := range plan {
		assert.Equal(t, k, f.Attempt)
		assert.Contains(t, []string{SourceVertex, SumVertex, SinkVertex}, f.Vertex)
		assert.GreaterOrEqual(t, f.AfterRecords, int64(1))
		// The largest share is a source's 3 of the 8 splits (7,500 records) or a sum's keys.
		assert.LessOrEqual(t, f.AfterRecords, int64(20_000/16))
	}
	none, err := PlanFailures(opts, 0, 7)
	require.NoError(t, err)
	assert.Empty(t, none)
	_, err = PlanFailures(opts, -1, 7)
	assert.EqualError(t, err, "keyedsum: -1 failures")

	// Keys 0..9 at p=3 over 128 key groups: no sum subtask may be drawn that owns no key.
	opts = JobOptions{Records: 100, Keys: 1, Parallelism: 3, OutDir: "out"} // key 0: group 94, subtask 2
	for seed := range uint64(20) {
		plan, err := PlanFailures(opts, 2, seed)
		require.NoError(t, err)
		for _, f := range plan {
			if f.Vertex != SourceVertex {
				assert.Equal(t, 2, f.Subtask, "seed %d: %+v", seed, f)
			}
		}
	}
}

// A Failure with AtSnapshot fails that snapshot of its attempt only (declining the checkpoint);
// the other snapshots, attempts and subtasks are the handler's.
func TestInjectedDeclineFailsOneSnapshot(t *testing.T) {
	g := buildJob(t, JobOptions{Records: 10, Keys: 2, Parallelism: 2, CheckpointInterval: 1,
		Failures: []Failure{{Vertex: SumVertex, Subtask: 1, Attempt: 1, AtSnapshot: 2}}})
	for _, tc := range []struct {
		subtask, attempt int
		fails            bool
	}{{1, 1, true}, {1, 0, false}, {0, 1, false}} {
		e := newFakeEnv(taskInfo(g, g.VertexByName(SumVertex), tc.subtask, 2, tc.attempt, true))
		var cfg Config
		require.NoError(t, json.Unmarshal(e.info.Config, &cfg))
		assert.Equal(t, int64(-1), failAfter(e.info, cfg), "a decline is no record-count failure")
		setCheckpointHandler(e, cfg, &sumState{maxParallelism: 128, owned: keygroup.KeyGroupRange{Start: 0, End: 63}, sums: map[int64]int64{}})
		for id := checkpoint.CheckpointID(1); id <= 3; id++ {
			_, err := e.handler.SnapshotState(t.Context(), id)
			if tc.fails && id == 2 {
				assert.ErrorIs(t, err, ErrInjectedDecline)
				assert.EqualError(t, err, "keyedsum: sum (2/2) attempt 1, snapshot 2 (checkpoint 2): injected snapshot failure")
			} else {
				assert.NoError(t, err, "%+v checkpoint %d", tc, id)
			}
		}
	}
}
