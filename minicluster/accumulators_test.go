package minicluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// maxAccumulator is a host-defined accumulator: the largest int added.
type maxAccumulator struct {
	mu sync.Mutex
	v  int
}

func (m *maxAccumulator) Add(v int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.v = max(m.v, v)
}

func (m *maxAccumulator) get() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.v
}

func (m *maxAccumulator) Kind() string    { return "minicluster_test.Max" }
func (m *maxAccumulator) LocalValue() any { return m.get() }

func (m *maxAccumulator) Merge(other jobgraph.Accumulator) error {
	o, ok := other.(*maxAccumulator)
	if !ok {
		return errors.New("not a Max")
	}
	m.Add(o.get())
	return nil
}

func (m *maxAccumulator) MarshalJSON() ([]byte, error) { return json.Marshal(m.get()) }

func (m *maxAccumulator) UnmarshalJSON(data []byte) error {
	var v int
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	m.Add(v)
	return nil
}

func init() {
	if err := jobgraph.RegisterAccumulator(func() jobgraph.Accumulator { return new(maxAccumulator) }); err != nil {
		panic(err)
	}
}

func accumulatorValue[T any](t *testing.T, accs map[string]jobgraph.SerializedAccumulator, name string) T {
	t.Helper()
	v, err := jobgraph.AccumulatorValue[T](accs, name)
	require.NoError(t, err)
	return v
}

// addIndex adds its subtask index + 1 to IntCounter "sum", and records itself in the other
// kinds of accumulators.
func addIndex(ctx context.Context, env taskexecutor.Environment) error {
	info := env.Info()
	accs := env.AccumulatorRegistry()
	sum, err := accs.IntCounter("sum")
	if err != nil {
		return err
	}
	sum.Add(info.SubtaskIndex + 1)
	h, err := accs.Histogram("subtasks")
	if err != nil {
		return err
	}
	h.Add(info.SubtaskIndex)
	names := new(jobgraph.ListAccumulator[string])
	if err := accs.Add("names", names); err != nil {
		return err
	}
	names.Add(info.TaskName)
	m, err := taskexecutor.Accumulator(accs, "max", func() *maxAccumulator { return new(maxAccumulator) })
	if err != nil {
		return err
	}
	m.Add(10 * info.SubtaskIndex)
	return nil
}

// p=4, each subtask adds its index + 1: the JobResult has 10, and the other accumulators merged
// in subtask order; the archived job shows the same.
func TestJobResultMergesTheAccumulatorsOfEverySubtask(t *testing.T) {
	ctx := context.Background()
	reg := registry()
	reg.Register("add-index", addIndex)
	mc := start(t, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 2, Registry: reg})
	g := jobgraph.New("accumulators", jobgraph.Batch)
	g.AddVertex("add", "add-index", 4)

	res, err := mc.Run(ctx, g)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)
	assert.Equal(t, 10, accumulatorValue[int](t, res.Accumulators, "sum"))
	assert.Equal(t, map[int]int{0: 1, 1: 1, 2: 1, 3: 1}, accumulatorValue[map[int]int](t, res.Accumulators, "subtasks"))
	assert.Equal(t, []string{"add (1/4)", "add (2/4)", "add (3/4)", "add (4/4)"}, accumulatorValue[[]string](t, res.Accumulators, "names"))
	assert.Equal(t, 30, accumulatorValue[int](t, res.Accumulators, "max"))
	assert.Len(t, res.Accumulators, 4)

	archived, err := mc.RequestJob(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, res.Accumulators, archived.Accumulators)
	assert.Equal(t, json.RawMessage(`10`), archived.Accumulators["sum"].Value)
}

// Subtask 0's first attempt adds 1000, which a heartbeat shows on the running job, then fails;
// its restarted attempt adds 1. The failed attempt's 1000 is not counted: the result is exactly
// 1 + 2 + 3 + 4.
func TestFailedAttemptAccumulatorsAreDiscardedOnRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		reg := registry()
		reg.Register("add-or-fail", func(ctx context.Context, env taskexecutor.Environment) error {
			info := env.Info()
			sum, err := env.AccumulatorRegistry().IntCounter("sum")
			if err != nil {
				return err
			}
			if info.SubtaskIndex == 0 && info.AttemptNumber == 0 {
				sum.Add(1000)
				time.Sleep(1500 * time.Millisecond) // past the heartbeat at 1 s
				return errBoom
			}
			sum.Add(info.SubtaskIndex + 1)
			return nil
		})
		mc := start(t, minicluster.Config{
			TaskExecutors: 2, SlotsPerTaskExecutor: 2, Registry: reg,
			HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second,
		})
		g := jobgraph.New("fail-once", jobgraph.Batch)
		g.AddVertex("v", "add-or-fail", 4)
		g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
		require.NoError(t, mc.SubmitJob(ctx, g))

		at(begin, 1200*time.Millisecond)
		archived, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, archived.Status)
		assert.Equal(t, 1000+2+3+4, accumulatorValue[int](t, archived.Accumulators, "sum"), "the running attempt's 1000 came with the heartbeat")

		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)
		require.Len(t, res.ExceptionHistory, 1)
		assert.Contains(t, res.ExceptionHistory[0].Message, "boom")
		assert.Equal(t, 10, accumulatorValue[int](t, res.Accumulators, "sum"))
		archived, err = mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, 1, archived.JobVertices[0].Subtasks[0].AttemptNumber)
		assert.Equal(t, 2500*time.Millisecond, archived.JobVertices[0].Subtasks[0].StateTimestamps[jobgraph.ExecutionStateDeploying].Sub(begin))
	})
}

// A running task's accumulators show on the running job with the heartbeats, at the heartbeat
// interval, and not before.
func TestRunningJobShowsAccumulatorsAtTheHeartbeatInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		step, release := make(chan int), make(chan struct{})
		reg := registry()
		reg.Register("count", func(ctx context.Context, env taskexecutor.Environment) error {
			n, err := env.AccumulatorRegistry().LongCounter("records")
			if err != nil {
				return err
			}
			n.Add(7)
			for {
				select {
				case v := <-step:
					n.Add(int64(v))
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		})
		mc := start(t, minicluster.Config{
			TaskExecutors: 1, Registry: reg,
			HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second,
		})
		g := jobgraph.New("running", jobgraph.Streaming)
		g.AddVertex("v", "count", 1)
		require.NoError(t, mc.SubmitJob(ctx, g))
		records := func() map[string]jobgraph.SerializedAccumulator {
			archived, err := mc.RequestJob(ctx, g.JobID)
			require.NoError(t, err)
			require.Equal(t, jobgraph.JobStatusRunning, archived.Status)
			return archived.Accumulators
		}

		at(begin, time.Second-time.Nanosecond)
		assert.Nil(t, records(), "no heartbeat yet")
		at(begin, time.Second)
		assert.Equal(t, int64(7), accumulatorValue[int64](t, records(), "records"))

		at(begin, 1500*time.Millisecond)
		step <- 5
		at(begin, 2*time.Second-time.Nanosecond)
		assert.Equal(t, int64(7), accumulatorValue[int64](t, records(), "records"), "until the next heartbeat")
		at(begin, 2*time.Second)
		assert.Equal(t, int64(12), accumulatorValue[int64](t, records(), "records"))

		step <- 30
		close(release)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusFinished, res.Status)
		assert.Equal(t, int64(42), accumulatorValue[int64](t, res.Accumulators, "records"), "the final state carries the last value")
	})
}

// One name used with two types across subtasks: that result fails with a clear error, the job
// still finishes and the other accumulators are there.
func TestAccumulatorTypeMismatchAcrossSubtasksFailsThatName(t *testing.T) {
	ctx := context.Background()
	reg := registry()
	reg.Register("mixed", func(ctx context.Context, env taskexecutor.Environment) error {
		accs := env.AccumulatorRegistry()
		ok, err := accs.IntCounter("ok")
		if err != nil {
			return err
		}
		ok.Add(1)
		if env.Info().SubtaskIndex == 0 {
			n, err := accs.IntCounter("n")
			if err != nil {
				return err
			}
			n.Add(1)
			return nil
		}
		n, err := accs.LongCounter("n")
		if err != nil {
			return err
		}
		n.Add(1)
		return nil
	})
	mc := start(t, minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 2, Registry: reg})
	g := jobgraph.New("mixed", jobgraph.Batch)
	g.AddVertex("v", "mixed", 2)
	res, err := mc.Run(ctx, g)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)
	assert.Equal(t, jobgraph.SerializedAccumulator{Kind: "IntCounter", Failure: &jobgraph.ErrorInfo{
		Message: "two types under one name: IntCounter and LongCounter",
		Codes:   []string{"jobgraph.accumulator-type-mismatch"},
	}}, res.Accumulators["n"])
	_, err = jobgraph.AccumulatorValue[int](res.Accumulators, "n")
	require.ErrorIs(t, err, jobgraph.ErrAccumulatorTypeMismatch)
	assert.EqualError(t, err, `accumulator "n": two types under one name: IntCounter and LongCounter`)
	assert.Equal(t, 2, accumulatorValue[int](t, res.Accumulators, "ok"))
}
