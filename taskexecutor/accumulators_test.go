package taskexecutor

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// unregistered is an accumulator of a kind nobody registered.
type unregistered struct{ jobgraph.IntCounter }

func (*unregistered) Kind() string { return "test.Unregistered" }

func TestAccumulatorRegistryGivesOneAccumulatorPerName(t *testing.T) {
	r := NewAccumulatorRegistry()
	assert.Nil(t, r.Snapshot())
	words, err := r.IntCounter("words")
	require.NoError(t, err)
	words.Add(2)
	again, err := r.IntCounter("words")
	require.NoError(t, err)
	assert.Same(t, words, again, "one accumulator per name")
	again.Add(3)
	assert.Equal(t, 5, words.Value())
	assert.Same(t, words, r.Get("words"))
	assert.Nil(t, r.Get("other"))

	lc, err := r.LongCounter("bytes")
	require.NoError(t, err)
	lc.Add(1 << 40)
	dc, err := r.DoubleCounter("ratio")
	require.NoError(t, err)
	dc.Add(0.5)
	h, err := r.Histogram("lengths")
	require.NoError(t, err)
	h.Add(3)
	h.Add(3)
	names := new(jobgraph.ListAccumulator[string])
	require.NoError(t, r.Add("names", names))
	names.Add("a")
	got, err := Accumulator(r, "names", func() *jobgraph.ListAccumulator[string] { return new(jobgraph.ListAccumulator[string]) })
	require.NoError(t, err)
	assert.Same(t, names, got)

	assert.Equal(t, map[string]jobgraph.SerializedAccumulator{
		"words":   {Kind: "IntCounter", Value: json.RawMessage(`5`)},
		"bytes":   {Kind: "LongCounter", Value: json.RawMessage(`1099511627776`)},
		"ratio":   {Kind: "DoubleCounter", Value: json.RawMessage(`0.5`)},
		"lengths": {Kind: "Histogram", Value: json.RawMessage(`{"3":2}`)},
		"names":   {Kind: "ListAccumulator", Value: json.RawMessage(`["a"]`)},
	}, r.Snapshot())
}

func TestAccumulatorRegistryRefusesBadNamesTypesAndKinds(t *testing.T) {
	r := NewAccumulatorRegistry()
	_, err := r.IntCounter("n")
	require.NoError(t, err)

	// Another type under a name taken: Flink throws UnsupportedOperationException.
	_, err = r.LongCounter("n")
	require.ErrorIs(t, err, jobgraph.ErrAccumulatorTypeMismatch)
	assert.EqualError(t, err, `accumulator "n": two types under one name: IntCounter and LongCounter`)
	_, err = r.Histogram("n")
	assert.EqualError(t, err, `accumulator "n": two types under one name: IntCounter and Histogram`)
	require.NoError(t, r.Add("l", new(jobgraph.ListAccumulator[string])))
	_, err = Accumulator(r, "l", func() *jobgraph.ListAccumulator[int] { return new(jobgraph.ListAccumulator[int]) })
	assert.EqualError(t, err, `accumulator "l": two types under one name: *jobgraph.ListAccumulator[string] and *jobgraph.ListAccumulator[int]`)

	err = r.Add("n", new(jobgraph.IntCounter))
	require.ErrorIs(t, err, ErrAccumulatorExists)
	assert.EqualError(t, err, `accumulator "n": accumulator already exists`)
	assert.EqualError(t, r.Add("", new(jobgraph.IntCounter)), "accumulator: empty name")
	assert.EqualError(t, r.Add("x", nil), `accumulator "x": nil accumulator`)
	_, err = r.IntCounter("")
	assert.EqualError(t, err, "accumulator: empty name")

	err = r.Add("u", new(unregistered))
	require.ErrorIs(t, err, jobgraph.ErrUnknownAccumulatorKind)
	assert.EqualError(t, err, `accumulator "u" of type *taskexecutor.unregistered: accumulator kind not registered: "test.Unregistered" (register it with jobgraph.RegisterAccumulator)`)

	// Nothing refused was added; what was accepted is untouched.
	assert.Equal(t, map[string]jobgraph.SerializedAccumulator{
		"n": {Kind: "IntCounter", Value: json.RawMessage(`0`)},
		"l": {Kind: "ListAccumulator", Value: json.RawMessage(`[]`)},
	}, r.Snapshot())
}

// A task's final state carries its accumulators, whether it finished, failed or was canceled;
// the states before carry none.
func TestFinalTaskStateCarriesTheAccumulators(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		add := func(ctx context.Context, env Environment) (*jobgraph.IntCounter, error) {
			n, err := env.AccumulatorRegistry().IntCounter("n")
			if err != nil {
				return nil, err
			}
			n.Add(env.Info().SubtaskIndex + 1)
			return n, nil
		}
		c.reg.Register("finish", func(ctx context.Context, env Environment) error {
			_, err := add(ctx, env)
			return err
		})
		c.reg.Register("fail", func(ctx context.Context, env Environment) error {
			if _, err := add(ctx, env); err != nil {
				return err
			}
			return errors.New("boom")
		})
		c.reg.Register("wait", func(ctx context.Context, env Environment) error {
			n, err := add(ctx, env)
			if err != nil {
				return err
			}
			<-ctx.Done()
			n.Add(100) // after the cancel, before returning: still in the final snapshot
			return ctx.Err()
		})
		c.reg.Register("none", func(ctx context.Context, env Environment) error { return nil })
		te := c.startTE(1, 2)
		c.allocate(te, 0, allocID(1))
		c.allocate(te, 1, allocID(2))
		synctest.Wait()

		finish, fail := tdd(1, 0, "finish", allocID(1)), tdd(2, 1, "fail", allocID(2))
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), finish))
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), fail))
		synctest.Wait()
		wait, none := tdd(3, 0, "wait", allocID(1)), tdd(4, 1, "none", allocID(2))
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), wait))
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), none))
		synctest.Wait()
		require.NoError(t, te.CancelTask(ctx, wait.ExecutionAttemptID))
		synctest.Wait()

		for _, want := range []struct {
			attempt jobgraph.ExecutionAttemptID
			final   jobgraph.ExecutionState
			accs    map[string]jobgraph.SerializedAccumulator
		}{
			{finish.ExecutionAttemptID, jobgraph.ExecutionStateFinished, map[string]jobgraph.SerializedAccumulator{"n": {Kind: "IntCounter", Value: json.RawMessage(`1`)}}},
			{fail.ExecutionAttemptID, jobgraph.ExecutionStateFailed, map[string]jobgraph.SerializedAccumulator{"n": {Kind: "IntCounter", Value: json.RawMessage(`2`)}}},
			{wait.ExecutionAttemptID, jobgraph.ExecutionStateCanceled, map[string]jobgraph.SerializedAccumulator{"n": {Kind: "IntCounter", Value: json.RawMessage(`101`)}}},
			{none.ExecutionAttemptID, jobgraph.ExecutionStateFinished, nil},
		} {
			var got []rpc.TaskExecutionState
			c.jm.mu.Lock()
			for _, s := range c.jm.states {
				if s.State.ExecutionAttemptID == want.attempt {
					got = append(got, s.State)
				}
			}
			c.jm.mu.Unlock()
			require.Len(t, got, 3, want.final.String())
			for _, s := range got[:2] {
				assert.Nil(t, s.Accumulators, "%s carries no accumulators", s.State)
			}
			assert.Equal(t, want.final, got[2].State)
			assert.Equal(t, want.accs, got[2].Accumulators, want.final.String())
		}
	})
}

// Heartbeats carry the accumulator snapshots of the job's running tasks, as they are at the
// heartbeat; tasks without accumulators send none, and other jobs' tasks go to their own
// JobMaster.
func TestHeartbeatCarriesTheRunningTasksAccumulators(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newHBCluster(t)
		step := make(chan struct{})
		c.reg.Register("count", func(ctx context.Context, env Environment) error {
			n, err := env.AccumulatorRegistry().LongCounter("records")
			if err != nil {
				return err
			}
			for {
				n.Add(int64(env.Info().SubtaskIndex + 1))
				select {
				case <-step:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		})
		c.reg.Register("quiet", func(ctx context.Context, _ Environment) error { <-ctx.Done(); return ctx.Err() })
		c.allocate(1, 0, allocID(1))
		c.allocate(2, 1, allocID(2))
		counting, quiet := tdd(1, 1, "count", allocID(1)), tdd(2, 0, "quiet", allocID(2))
		quiet.JobID = jobID(2)
		require.NoError(t, c.te.SubmitTask(ctx, jmToken(1), counting))
		require.NoError(t, c.te.SubmitTask(ctx, jmToken(2), quiet))
		synctest.Wait()

		beat := func() {
			require.NoError(t, c.te.HeartbeatFromJobMaster(ctx, "jobmaster"))
			synctest.Wait()
		}
		snap := func(v string) []rpc.AccumulatorSnapshot {
			return []rpc.AccumulatorSnapshot{{JobID: jobID(1), ExecutionAttemptID: counting.ExecutionAttemptID,
				Accumulators: map[string]jobgraph.SerializedAccumulator{"records": {Kind: "LongCounter", Value: json.RawMessage(v)}}}}
		}
		beat()
		deployed := func(d rpc.TaskDeploymentDescriptor) *rpc.ExecutionDeploymentReport {
			return &rpc.ExecutionDeploymentReport{Executions: []jobgraph.ExecutionAttemptID{d.ExecutionAttemptID}}
		}
		assert.Equal(t, []hbBeat{{0, "te-1", rpc.AllocatedSlotReport{JobID: jobID(1), Slots: []jobgraph.AllocationID{allocID(1)}, Accumulators: snap(`2`), ExecutionDeploymentReport: deployed(counting)}}}, c.jms[1].take())
		assert.Equal(t, []hbBeat{{0, "te-1", rpc.AllocatedSlotReport{JobID: jobID(2), Slots: []jobgraph.AllocationID{allocID(2)}, ExecutionDeploymentReport: deployed(quiet)}}}, c.jms[2].take())

		step <- struct{}{}
		step <- struct{}{}
		synctest.Wait()
		sleep(time.Second)
		beat()
		assert.Equal(t, []hbBeat{{time.Second, "te-1", rpc.AllocatedSlotReport{JobID: jobID(1), Slots: []jobgraph.AllocationID{allocID(1)}, Accumulators: snap(`6`), ExecutionDeploymentReport: deployed(counting)}}}, c.jms[1].take())
	})
}

// A task's registry costs one allocation until the task adds an accumulator (most add none):
// empty, it reads as empty, and the first Add or Accumulator makes its map.
func TestAccumulatorRegistryMakesItsMapOnTheFirstAdd(t *testing.T) {
	var kept *AccumulatorRegistry
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { kept = NewAccumulatorRegistry() }))
	assert.Nil(t, kept.Snapshot())
	r := NewAccumulatorRegistry()
	assert.Nil(t, r.Snapshot())
	assert.Nil(t, r.Get("n"))
	c, err := Accumulator(r, "n", func() *jobgraph.IntCounter { return &jobgraph.IntCounter{} })
	require.NoError(t, err)
	assert.Same(t, c, r.Get("n"))
	r2 := NewAccumulatorRegistry()
	require.NoError(t, r2.Add("m", &jobgraph.IntCounter{}))
	assert.NotNil(t, r2.Get("m"))
	assert.ErrorIs(t, r2.Add("m", &jobgraph.IntCounter{}), ErrAccumulatorExists)
}
