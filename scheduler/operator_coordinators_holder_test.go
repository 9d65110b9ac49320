package scheduler

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/coordination"
)

// countingCoordinator counts its checkpoints: its state is the number of the checkpoints it took
// since its last reset, as a decimal string. It logs the restore calls.
type countingCoordinator struct {
	n   int
	log *[]string
}

func (c *countingCoordinator) Start() error { *c.log = append(*c.log, "start"); return nil }
func (c *countingCoordinator) Close() error { return nil }
func (c *countingCoordinator) HandleEventFromOperator(int, int, []byte) error {
	return nil
}
func (c *countingCoordinator) CheckpointCoordinator(_ int64, result func([]byte, error)) {
	c.n++
	result([]byte(strconv.Itoa(c.n)), nil)
}
func (c *countingCoordinator) NotifyCheckpointComplete(int64) {}
func (c *countingCoordinator) NotifyCheckpointAborted(int64)  {}
func (c *countingCoordinator) ResetToCheckpoint(id int64, state []byte) error {
	*c.log = append(*c.log, fmt.Sprintf("reset %d %q", id, state))
	c.n = 0
	if state != nil {
		n, err := strconv.Atoi(string(state))
		if err != nil {
			return err
		}
		c.n = n
	}
	return nil
}
func (c *countingCoordinator) SubtaskReset(subtask int, id int64) error {
	*c.log = append(*c.log, fmt.Sprintf("subtaskReset %d %d", subtask, id))
	return nil
}
func (c *countingCoordinator) ExecutionAttemptFailed(int, int, error) error { return nil }
func (c *countingCoordinator) ExecutionAttemptReady(int, int, coordination.SubtaskGateway) error {
	return nil
}

// The scenario at the scheduler, with the real coordination.Holder (whose checkpoint
// results come back later, posted to the loop): the coordinator's state is part of checkpoint 1,
// taken before any task is triggered; a region failover resets only the restarted subtask to 1;
// a global failover resets the coordinator to checkpoint 1's state, with the tasks.
func TestHolderCoordinatorStateIsCheckpointedAndRestored(t *testing.T) {
	g := pointwise(jobgraph.CheckpointingSettings{Interval: 10 * time.Millisecond})
	var log, loop []string
	var queue []func()
	drain := func() {
		for len(queue) > 0 {
			fn := queue[0]
			queue = queue[1:]
			fn()
		}
	}
	reg := coordination.NewRegistry()
	coord := &countingCoordinator{log: &log}
	require.NoError(t, reg.Register("counting", coordination.ProviderFunc(func(coordination.Context) (coordination.OperatorCoordinator, error) {
		return coord, nil
	})))
	holder, err := coordination.NewHolder(coordination.HolderConfig{
		JobID: g.JobID, VertexID: g.Vertices[0].ID, Name: "counting", Registry: reg, Parallelism: 2,
		Execute: func(fn func()) bool { queue = append(queue, fn); return true },
		Send:    func(jobgraph.ExecutionAttemptID, []byte, func(error)) {},
		FailJob: func(cause error) { loop = append(loop, "failJob "+cause.Error()) },
	})
	require.NoError(t, err)
	h := newCoordHarness(t, g, Config{OperatorCoordinators: []checkpoint.OperatorCoordinatorCheckpointContext{holder}})
	require.NoError(t, holder.Start())
	h.start(2)
	h.takeLog()

	h.timers.Advance(10 * time.Millisecond)
	assert.Empty(t, h.takeLog(), "no task is triggered before the coordinator's result is in")
	drain()
	assert.Equal(t, []string{"trigger 1 v1/0#0", "trigger 1 v1/1#0"}, h.takeLog())
	h.ackAll(1)
	cp, ok := h.s.CheckpointCoordinator().LatestSnapshot()
	require.True(t, ok)
	require.Equal(t, checkpoint.CheckpointID(1), cp.CheckpointID)
	assert.Equal(t, []checkpoint.CoordinatorState{{JobVertexID: g.Vertices[0].ID, State: []byte("1")}}, cp.CoordinatorStates)

	// Checkpoint 2 is taken by the coordinator (n=2), then a region failover aborts it.
	h.timers.Advance(10 * time.Millisecond)
	drain()
	require.True(t, h.fail("v2", 1, errors.New("boom")))
	require.True(t, h.report("v1", 1, jobgraph.ExecutionStateCanceled))
	h.timers.Advance(time.Second)
	drain()
	assert.Equal(t, []string{"start", "subtaskReset 1 1"}, log)
	h.runDeployed()

	log = nil
	h.s.HandleGlobalFailure(errors.New("global boom"))
	h.cancelAll()
	h.timers.Advance(time.Second)
	drain()
	assert.Equal(t, []string{`reset 1 "1"`}, log)
	assert.Equal(t, 1, coord.n, "back at checkpoint 1's count")
	assert.Empty(t, loop, "the job was never failed by the coordinator")
}
