package taskexecutor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/rpc"
)

// countingHandler is the tests' CheckpointHandler: its state is the number of records its task
// processed (count, as text). count belongs to the task code and is read by the handler's
// methods without a lock, so a call off the task's goroutine is a data race (-race).
type countingHandler struct {
	count int
	// block, if set, makes SnapshotState wait until it is closed.
	block chan struct{}
	// failOn, if it has id, is SnapshotState's error for checkpoint id.
	failOn map[checkpoint.CheckpointID]error
	// afterSnapshot, if set, runs at the end of SnapshotState.
	afterSnapshot func(checkpoint.CheckpointID)

	mu   sync.Mutex
	log  []string
	seen []int // the records the task processed, in order (sinks)
}

func (h *countingHandler) SnapshotState(ctx context.Context, id checkpoint.CheckpointID) (checkpoint.StateHandle, error) {
	if h.block != nil {
		select {
		case <-h.block:
		case <-ctx.Done():
			return checkpoint.StateHandle{}, ctx.Err()
		}
	}
	h.note(fmt.Sprintf("snapshot %d at %d", id, h.count))
	if h.afterSnapshot != nil {
		h.afterSnapshot(id)
	}
	if err := h.failOn[id]; err != nil {
		return checkpoint.StateHandle{}, err
	}
	return checkpoint.StateHandle{Data: []byte(strconv.Itoa(h.count))}, nil
}

func (h *countingHandler) NotifyCheckpointComplete(_ context.Context, id checkpoint.CheckpointID) error {
	h.note(fmt.Sprintf("complete %d at %d", id, h.count))
	return nil
}

func (h *countingHandler) NotifyCheckpointAborted(_ context.Context, id checkpoint.CheckpointID) {
	h.note(fmt.Sprintf("aborted %d at %d", id, h.count))
}

func (h *countingHandler) note(s string) {
	h.mu.Lock()
	h.log = append(h.log, s)
	h.mu.Unlock()
}

func (h *countingHandler) processed(r int) {
	h.count++
	h.mu.Lock()
	h.seen = append(h.seen, r)
	h.mu.Unlock()
}

func (h *countingHandler) events() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.log)
}

func (h *countingHandler) records() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen)
}

// cpJob is source (1) → map (2, ALL_TO_ALL, round robin) → sink (1) on one TaskExecutor, every
// edge PIPELINED_BOUNDED, in a job that takes checkpoints. The source emits 0..n-1, record i
// to map subtask i mod 2, and stops before record pauseAt until pause is closed.
type cpJob struct {
	c       *cluster
	te      *TaskExecutor
	src     rpc.TaskDeploymentDescriptor
	maps    [2]rpc.TaskDeploymentDescriptor
	sink    rpc.TaskDeploymentDescriptor
	hSrc    *countingHandler
	hMap    [2]*countingHandler
	hSink   *countingHandler
	pause   chan struct{}
	pauseAt int
}

func (j *cpJob) attempts() []jobgraph.ExecutionAttemptID {
	return []jobgraph.ExecutionAttemptID{j.src.ExecutionAttemptID, j.maps[0].ExecutionAttemptID, j.maps[1].ExecutionAttemptID, j.sink.ExecutionAttemptID}
}

func newCPJob(t *testing.T, n, pauseAt int) *cpJob {
	c := newCluster(t)
	c.shuffle = NewShuffle(ShuffleConfig{BatchSize: 1, QueueCapacity: 2}) // every record its own batch: exact counts
	j := &cpJob{c: c, hSrc: &countingHandler{}, hMap: [2]*countingHandler{{}, {}}, hSink: &countingHandler{},
		pause: make(chan struct{}), pauseAt: pauseAt}
	c.reg.Register("src", func(ctx context.Context, env Environment) error {
		h := j.hSrc
		env.SetCheckpointHandler(h)
		out := env.Output(0)
		for i := range n {
			if i == j.pauseAt {
				select {
				case <-j.pause:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			if err := out.Emit(ctx, i%2, i); err != nil {
				return err
			}
			h.count++
		}
		return nil
	})
	c.reg.Register("map", func(ctx context.Context, env Environment) error {
		h := j.hMap[env.Info().SubtaskIndex]
		env.SetCheckpointHandler(h)
		in, out := env.Input(0), env.Output(0)
		for {
			r, err := in.Next(ctx)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			h.processed(r.(int))
			if err := out.Emit(ctx, 0, r); err != nil {
				return err
			}
		}
	})
	c.reg.Register("sink", func(ctx context.Context, env Environment) error {
		h := j.hSink
		env.SetCheckpointHandler(h)
		in := env.Input(0)
		for {
			r, err := in.Next(ctx)
			if err == io.EOF {
				h.note("end of input")
				return nil
			}
			if err != nil {
				return err
			}
			h.processed(r.(int))
		}
	})
	j.te = c.startTE(1, 4)
	for n := range 4 {
		c.allocate(j.te, n, allocID(byte(n+1)))
	}
	synctest.Wait()

	j.src = tdd(1, 0, "src", allocID(1))
	j.src.Parallelism = 1
	srcPart := partID(1, 0, j.src.ExecutionAttemptID)
	j.src.ProducedPartitions = []rpc.ResultPartitionDeploymentDescriptor{{ResultPartitionID: srcPart, ResultType: jobgraph.PipelinedBounded, NumberOfSubpartitions: 2}}
	srcParts := []rpc.ResultPartitionID{srcPart}
	var mapParts []rpc.ResultPartitionID
	for s := range 2 {
		d := tdd(2, s, "map", allocID(byte(s+2)))
		d.InputGates = []rpc.InputGateDeploymentDescriptor{{DataSetID: dataSet(1), ResultType: jobgraph.PipelinedBounded, Partitions: srcParts, ConsumedSubpartitionIndex: s}}
		p := partID(2, s, d.ExecutionAttemptID)
		d.ProducedPartitions = []rpc.ResultPartitionDeploymentDescriptor{{ResultPartitionID: p, ResultType: jobgraph.PipelinedBounded, NumberOfSubpartitions: 1}}
		mapParts = append(mapParts, p)
		j.maps[s] = d
	}
	j.sink = tdd(3, 0, "sink", allocID(4))
	j.sink.Parallelism = 1
	j.sink.InputGates = []rpc.InputGateDeploymentDescriptor{{DataSetID: dataSet(2), ResultType: jobgraph.PipelinedBounded, Partitions: mapParts}}
	for _, d := range []*rpc.TaskDeploymentDescriptor{&j.sink, &j.maps[0], &j.maps[1], &j.src} {
		d.CheckpointingEnabled = true
		require.NoError(t, j.te.SubmitTask(ctx, jmToken(1), *d))
	}
	synctest.Wait()
	return j
}

var cpTime = time.Unix(1700000000, 0)

func (j *cpJob) trigger(t *testing.T, a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, typ checkpoint.SnapshotType) {
	t.Helper()
	require.NoError(t, j.te.TriggerCheckpoint(ctx, jmToken(1), a, id, cpTime, checkpoint.CheckpointPropertiesFor(typ)))
}

func (j *cpJob) confirmAll(t *testing.T, id checkpoint.CheckpointID) {
	t.Helper()
	for _, a := range j.attempts() {
		require.NoError(t, j.te.ConfirmCheckpoint(ctx, jmToken(1), a, id, cpTime))
	}
}

func (j *cpJob) abortAll(t *testing.T, id checkpoint.CheckpointID) {
	t.Helper()
	for _, a := range j.attempts() {
		require.NoError(t, j.te.AbortCheckpoint(ctx, jmToken(1), a, id, cpTime))
	}
}

func finished(c *cluster, a jobgraph.ExecutionAttemptID) bool {
	return slices.Contains(c.jm.statesOf(a), jobgraph.ExecutionStateFinished)
}

// TestCheckpointBarriersAlignThroughTheShuffle: checkpoint 1 triggered at the source after
// exactly k records cuts every task's state at the barrier: each map snapshots the k/2 records
// before it, the sink the k records before both barriers. While one map is slow to snapshot,
// the records the other map sends after its barrier are held back at the sink (the sink stays
// at k records though they were sent), and come after the sink's snapshot. Confirmations reach
// NotifyCheckpointComplete on the task's goroutine; the source finishes only after the final
// checkpoint 2 is confirmed (FLIP-147), and the others once their inputs ended.
func TestCheckpointBarriersAlignThroughTheShuffle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, k = 40, 10
		j := newCPJob(t, n, k)
		j.hMap[1].block = make(chan struct{}) // map 1 takes its time to snapshot
		synctest.Wait()
		require.Equal(t, k, len(j.hSink.records()), "the first k records went through before the trigger")

		j.trigger(t, j.src.ExecutionAttemptID, 1, checkpoint.Checkpoint)
		synctest.Wait()
		assert.Empty(t, j.hSrc.events(), "the source snapshots inside its next Emit, not before")
		close(j.pause)
		synctest.Wait()

		assert.Equal(t, []string{"snapshot 1 at 10"}, j.hSrc.events())
		assert.Equal(t, []string{"snapshot 1 at 5"}, j.hMap[0].events(), "map 0 saw the 5 records before its barrier")
		assert.Empty(t, j.hMap[1].events(), "map 1 is still snapshotting")
		assert.Greater(t, len(j.hMap[0].records()), k/2, "map 0 went on after its barrier")
		assert.Equal(t, k, len(j.hSink.records()), "the sink holds back map 0's records after its barrier")
		assert.Empty(t, j.hSink.events(), "the sink waits for map 1's barrier")
		assert.Equal(t, map[jobgraph.ExecutionAttemptID]string{j.src.ExecutionAttemptID: "10", j.maps[0].ExecutionAttemptID: "5"},
			j.c.jm.ackedStates(1))

		close(j.hMap[1].block)
		synctest.Wait()
		assert.Equal(t, []string{"snapshot 1 at 5"}, j.hMap[1].events())
		assert.Equal(t, []string{"snapshot 1 at 10"}, j.hSink.events(), "the sink snapshots the 10 records before both barriers")
		assert.Equal(t, map[jobgraph.ExecutionAttemptID]string{
			j.src.ExecutionAttemptID: "10", j.maps[0].ExecutionAttemptID: "5", j.maps[1].ExecutionAttemptID: "5", j.sink.ExecutionAttemptID: "10",
		}, j.c.jm.ackedStates(1))
		seen := j.hSink.records()
		before := slices.Clone(seen[:k])
		slices.Sort(before)
		assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, before, "exactly the records before the barrier come before the snapshot")
		for _, r := range seen[k:] {
			assert.GreaterOrEqual(t, r, k, "no record after the barrier comes before the snapshot")
		}

		j.confirmAll(t, 1)
		synctest.Wait()
		for _, a := range j.attempts() {
			assert.False(t, finished(j.c, a), "%s still runs", a)
		}
		assert.Equal(t, []string{"snapshot 1 at 10", "complete 1 at 40"}, j.hSrc.events(), "the source emitted everything and waits for its final checkpoint")
		assert.Equal(t, n, len(j.hSink.records()))

		// FLIP-147: the finished source takes the final checkpoint 2; nobody finishes before it
		// is confirmed.
		j.trigger(t, j.src.ExecutionAttemptID, 2, checkpoint.Checkpoint)
		synctest.Wait()
		assert.Equal(t, map[jobgraph.ExecutionAttemptID]string{
			j.src.ExecutionAttemptID: "40", j.maps[0].ExecutionAttemptID: "20", j.maps[1].ExecutionAttemptID: "20", j.sink.ExecutionAttemptID: "40",
		}, j.c.jm.ackedStates(2))
		for _, a := range j.attempts() {
			assert.False(t, finished(j.c, a), "%s waits for the confirmation of checkpoint 2", a)
		}
		j.confirmAll(t, 2)
		synctest.Wait()
		for _, a := range j.attempts() {
			assert.Equal(t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFinished},
				j.c.jm.statesOf(a), a.String())
		}
		assert.Equal(t, []string{"snapshot 1 at 10", "complete 1 at 40", "snapshot 2 at 40", "complete 2 at 40"}, j.hSrc.events())
		assert.Equal(t, []string{"snapshot 1 at 5", "complete 1 at 20", "snapshot 2 at 20", "complete 2 at 20"}, j.hMap[0].events())
		assert.Equal(t, []string{"snapshot 1 at 10", "complete 1 at 40", "snapshot 2 at 40", "complete 2 at 40", "end of input"}, j.hSink.events(),
			"the sink commits checkpoint 2 before it sees the end of its input")
		assert.Empty(t, j.c.jm.declined())
		assert.Equal(t, 0, j.c.shuffle.Len())
	})
}

// A failed snapshot declines the checkpoint (CheckpointDeclined, naming the error); the barrier
// still goes on, so the sink does not stay aligned, and the task takes the next checkpoint.
func TestSnapshotErrorDeclinesTheCheckpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newCPJob(t, 40, 10)
		j.hMap[0].failOn = map[checkpoint.CheckpointID]error{1: errors.New("disk full")}
		j.trigger(t, j.src.ExecutionAttemptID, 1, checkpoint.Checkpoint)
		close(j.pause)
		synctest.Wait()
		d := j.c.jm.declined()
		require.Len(t, d, 1)
		assert.Equal(t, jmToken(1), d[0].Token)
		assert.Equal(t, j.maps[0].ExecutionAttemptID, d[0].Decline.Attempt)
		assert.Equal(t, checkpoint.CheckpointID(1), d[0].Decline.CheckpointID)
		assert.Equal(t, checkpoint.CheckpointDeclined, d[0].Decline.Reason)
		assert.Equal(t, "v2 (1/2): snapshot of checkpoint 1 failed: disk full", d[0].Decline.Message)
		assert.Equal(t, map[jobgraph.ExecutionAttemptID]string{
			j.src.ExecutionAttemptID: "10", j.maps[1].ExecutionAttemptID: "5", j.sink.ExecutionAttemptID: "10",
		}, j.c.jm.ackedStates(1))
		assert.Equal(t, 40, len(j.hSink.records()), "the job goes on")

		j.trigger(t, j.src.ExecutionAttemptID, 2, checkpoint.Checkpoint)
		synctest.Wait()
		assert.Equal(t, "20", j.c.jm.ackedStates(2)[j.maps[0].ExecutionAttemptID], "the next checkpoint succeeds")
		j.confirmAll(t, 2)
		synctest.Wait()
		for _, a := range j.attempts() {
			assert.True(t, finished(j.c, a), a.String())
		}
	})
}

// Only sources, and tasks whose inputs all ended, take a checkpoint from a trigger: a map with a
// live input declines it (CheckpointDeclinedTaskNotReady) and snapshots nothing.
func TestTriggerOfATaskWithLiveInputsIsDeclined(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newCPJob(t, 40, 10)
		j.trigger(t, j.maps[0].ExecutionAttemptID, 1, checkpoint.Checkpoint)
		synctest.Wait()
		d := j.c.jm.declined()
		require.Len(t, d, 1)
		assert.Equal(t, checkpoint.DeclineCheckpoint{Attempt: j.maps[0].ExecutionAttemptID, CheckpointID: 1,
			Reason:  checkpoint.CheckpointDeclinedTaskNotReady,
			Message: "v2 (1/2) has 1 inputs whose producers have not finished: it takes checkpoints when their barriers arrive"}, d[0].Decline)
		assert.Empty(t, j.hMap[0].events())
		assert.Zero(t, j.c.jm.numAcks())
	})
}

// A trigger or confirmation of an earlier JobMaster session fails with a fencing error and
// changes nothing; one for an attempt that does not run here is declined NotReady.
func TestCheckpointCallsAreFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newCPJob(t, 40, 10)
		err := j.te.TriggerCheckpoint(ctx, jmToken(2), j.src.ExecutionAttemptID, 1, cpTime, checkpoint.CheckpointPropertiesFor(checkpoint.Checkpoint))
		var fe *rpc.FencingError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, jmToken(1).String(), fe.Expected)
		require.ErrorIs(t, j.te.ConfirmCheckpoint(ctx, jmToken(2), j.sink.ExecutionAttemptID, 1, cpTime), rpc.ErrFencingTokenMismatch)
		require.ErrorIs(t, j.te.AbortCheckpoint(ctx, jmToken(2), j.sink.ExecutionAttemptID, 1, cpTime), rpc.ErrFencingTokenMismatch)
		close(j.pause)
		synctest.Wait()
		assert.Empty(t, j.hSrc.events(), "the source took no checkpoint")
		assert.Empty(t, j.hSink.events(), "the sink heard of none")
		assert.Zero(t, j.c.jm.numAcks())
		assert.Empty(t, j.c.jm.declined())

		unknown := attemptID(9, 0, 0)
		require.NoError(t, j.te.TriggerCheckpoint(ctx, jmToken(1), unknown, 3, cpTime, checkpoint.CheckpointPropertiesFor(checkpoint.Checkpoint)))
		synctest.Wait()
		d := j.c.jm.declined()
		require.Len(t, d, 1)
		assert.Equal(t, jmToken(1), d[0].Token)
		assert.Equal(t, unknown, d[0].Decline.Attempt)
		assert.Equal(t, checkpoint.CheckpointDeclinedTaskNotReady, d[0].Decline.Reason)

		// A confirmation or abort for an attempt this TaskExecutor does not run (an outdated
		// one), with the current token, is ignored: no error, nothing reaches any task.
		require.NoError(t, j.te.ConfirmCheckpoint(ctx, jmToken(1), unknown, 3, cpTime))
		require.NoError(t, j.te.AbortCheckpoint(ctx, jmToken(1), unknown, 3, cpTime))
		synctest.Wait()
		assert.Empty(t, j.hSrc.events())
		assert.Empty(t, j.hSink.events())
		assert.Len(t, j.c.jm.declined(), 1, "no further decline")
	})
}

// Stop-with-savepoint: after the sync savepoint's snapshot and barrier no task processes or
// sends anything; once it is confirmed every task's read or write returns ErrStopped and the
// tasks end FINISHED, with no final checkpoint.
func TestStopWithSavepointFinishesEveryTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newCPJob(t, 40, 10)
		j.trigger(t, j.src.ExecutionAttemptID, 5, checkpoint.SyncSavepoint)
		close(j.pause)
		synctest.Wait()
		assert.Equal(t, map[jobgraph.ExecutionAttemptID]string{
			j.src.ExecutionAttemptID: "10", j.maps[0].ExecutionAttemptID: "5", j.maps[1].ExecutionAttemptID: "5", j.sink.ExecutionAttemptID: "10",
		}, j.c.jm.ackedStates(5))
		assert.Equal(t, 10, len(j.hSink.records()), "nothing after the savepoint is sent")
		assert.Equal(t, 5, len(j.hMap[0].records()), "nothing after the savepoint is processed")
		for _, a := range j.attempts() {
			assert.False(t, finished(j.c, a), "%s waits for the savepoint's outcome", a)
		}
		j.confirmAll(t, 5)
		synctest.Wait()
		for _, a := range j.attempts() {
			assert.Equal(t, []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateFinished},
				j.c.jm.statesOf(a), a.String())
			assert.Nil(t, j.c.jm.lastState(t, a).State.Failure, a.String())
		}
		assert.Equal(t, []string{"snapshot 5 at 10", "complete 5 at 10"}, j.hSrc.events())
		assert.Equal(t, []string{"snapshot 5 at 10", "complete 5 at 10"}, j.hSink.events(), "the sink stops without reading the end of its input")
		assert.Equal(t, 10, len(j.hSink.records()))
	})
}

// An aborted stop-with-savepoint savepoint lets every task go on as if nothing happened.
func TestAbortedStopWithSavepointGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newCPJob(t, 40, 10)
		j.trigger(t, j.src.ExecutionAttemptID, 5, checkpoint.SyncSavepoint)
		close(j.pause)
		synctest.Wait()
		require.Len(t, j.c.jm.ackedStates(5), 4)
		j.abortAll(t, 5)
		synctest.Wait()
		assert.Equal(t, 40, len(j.hSink.records()), "every record goes through")
		assert.Equal(t, []string{"snapshot 5 at 10", "aborted 5 at 10"}, j.hSrc.events(), "the source waited at record 10")
		j.trigger(t, j.src.ExecutionAttemptID, 6, checkpoint.Checkpoint)
		synctest.Wait()
		j.confirmAll(t, 6)
		synctest.Wait()
		for _, a := range j.attempts() {
			assert.True(t, finished(j.c, a), a.String())
		}
		assert.Equal(t, []string{"snapshot 5 at 10", "aborted 5 at 10", "snapshot 6 at 40", "complete 6 at 40", "end of input"}, j.hSink.events())
	})
}

// FLIP-147: a source whose task code returned waits for a checkpoint's trigger and finishes
// once that checkpoint is confirmed; an aborted one makes it wait for the next.
func TestFinishedSourceWaitsForItsFinalCheckpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newCPJob(t, 40, 40) // never pauses
		assert.Equal(t, 40, len(j.hSink.records()))
		for _, a := range j.attempts() {
			assert.False(t, finished(j.c, a), "%s waits for a final checkpoint", a)
		}
		j.trigger(t, j.src.ExecutionAttemptID, 1, checkpoint.Checkpoint)
		synctest.Wait()
		require.Len(t, j.c.jm.ackedStates(1), 4)
		j.abortAll(t, 1)
		synctest.Wait()
		for _, a := range j.attempts() {
			assert.False(t, finished(j.c, a), "%s: checkpoint 1 was aborted", a)
		}
		j.trigger(t, j.src.ExecutionAttemptID, 2, checkpoint.Checkpoint)
		synctest.Wait()
		require.Len(t, j.c.jm.ackedStates(2), 4)
		// Only the source hears that checkpoint 2 completed: it finishes, the others' inputs
		// end, and they wait for the confirmation of the checkpoint they acknowledged last.
		require.NoError(t, j.te.ConfirmCheckpoint(ctx, jmToken(1), j.src.ExecutionAttemptID, 2, cpTime))
		synctest.Wait()
		assert.True(t, finished(j.c, j.src.ExecutionAttemptID))
		for _, a := range j.attempts()[1:] {
			assert.False(t, finished(j.c, a), "%s waits for the confirmation of checkpoint 2 before its end of input", a)
		}
		assert.Equal(t, []string{"snapshot 1 at 40", "aborted 1 at 40", "snapshot 2 at 40"}, j.hSink.events())
		j.confirmAll(t, 2)
		synctest.Wait()
		for _, a := range j.attempts() {
			assert.True(t, finished(j.c, a), a.String())
		}
		assert.Equal(t, []string{"snapshot 1 at 40", "aborted 1 at 40", "snapshot 2 at 40", "complete 2 at 40"}, j.hSrc.events())
		assert.Equal(t, []string{"snapshot 1 at 40", "aborted 1 at 40", "snapshot 2 at 40", "complete 2 at 40", "end of input"}, j.hSink.events())
	})
}

// recordingReporter collects an Environment's acks and declines (one goroutine).
type recordingReporter struct {
	acks     []checkpoint.AcknowledgeCheckpoint
	declines []checkpoint.DeclineCheckpoint
}

func (r *recordingReporter) acknowledge(a checkpoint.AcknowledgeCheckpoint) {
	r.acks = append(r.acks, a)
}
func (r *recordingReporter) decline(d checkpoint.DeclineCheckpoint) {
	r.declines = append(r.declines, d)
}

// cpEnv is an Environment of a job that takes checkpoints reading the gates ds, driven by the
// test's goroutine, with writers the test makes by hand.
func cpEnv(t *testing.T, s *Shuffle, ds ...rpc.InputGateDeploymentDescriptor) (*environment, *recordingReporter, *countingHandler) {
	env := newEnvironment(notStopped, TaskInfo{TaskName: "t (1/1)", CheckpointingEnabled: true})
	for _, d := range ds {
		require.NoError(t, env.openInput(s, jobID(1), d))
	}
	r, h := &recordingReporter{}, &countingHandler{}
	env.cp.reporter = r
	env.SetCheckpointHandler(h)
	t.Cleanup(env.closeInputs)
	return env, r, h
}

func pipelinedWriter(t *testing.T, s *Shuffle, id rpc.ResultPartitionID) *partitionWriter {
	w, err := s.newWriter(jobID(1), "te-1", rpc.ResultPartitionDeploymentDescriptor{ResultPartitionID: id, ResultType: jobgraph.PipelinedBounded, NumberOfSubpartitions: 1})
	require.NoError(t, err)
	return w
}

func barrier(id checkpoint.CheckpointID) *CheckpointBarrier {
	return &CheckpointBarrier{ID: id, Timestamp: cpTime, Properties: checkpoint.CheckpointPropertiesFor(checkpoint.Checkpoint)}
}

// readAll reads input 0 (or any input, with NextAny) until io.EOF, and once the task took a
// snapshot posts the confirmation of checkpoint confirm, so that the task's end-of-input wait
// (for its last acknowledged checkpoint) returns.
func readAll(t *testing.T, env *environment, h *countingHandler, nextAny bool, confirm checkpoint.CheckpointID) []any {
	var out []any
	posted := false
	for {
		if !posted && len(h.events()) > 0 {
			env.cp.mail.post(mail{kind: mailConfirm, barrier: CheckpointBarrier{ID: confirm}})
			posted = true
		}
		var r any
		var err error
		if nextAny {
			_, r, err = env.NextAny(ctx)
		} else {
			r, err = env.Input(0).Next(ctx)
		}
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, r)
		h.count++
	}
}

// A barrier of a newer checkpoint while the gate aligns an older one: the older is declined
// (CheckpointDeclinedSubsumed), what its alignment held back goes first, and the gate aligns the
// newer. Flink: SingleCheckpointBarrierHandler's "received barrier of newer checkpoint".
func TestNewerBarrierSubsumesTheAlignedCheckpoint(t *testing.T) {
	s := NewShuffle(ShuffleConfig{})
	p0, p1 := partID(1, 0, attemptID(1, 0, 0)), partID(1, 1, attemptID(1, 1, 0))
	env, rep, h := cpEnv(t, s, rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.PipelinedBounded, Partitions: []rpc.ResultPartitionID{p0, p1}})
	w0, w1 := pipelinedWriter(t, s, p0), pipelinedWriter(t, s, p1)
	require.NoError(t, w0.Emit(ctx, 0, "a"))
	require.NoError(t, w0.BroadcastBarrier(ctx, barrier(1)))
	require.NoError(t, w0.Emit(ctx, 0, "b"))
	require.NoError(t, w0.BroadcastBarrier(ctx, barrier(2)))
	require.NoError(t, w1.Emit(ctx, 0, "c"))
	require.NoError(t, w1.BroadcastBarrier(ctx, barrier(2)))
	require.NoError(t, w0.Emit(ctx, 0, "d"))
	require.NoError(t, w1.Emit(ctx, 0, "e"))
	require.NoError(t, w0.Finish(ctx))
	require.NoError(t, w1.Finish(ctx))

	got := readAll(t, env, h, false, 2)
	assert.Equal(t, []any{"a", "c", "b", "d", "e"}, got, "b, held back by checkpoint 1's alignment, comes after c, then checkpoint 2 aligns")
	assert.Equal(t, []checkpoint.DeclineCheckpoint{{CheckpointID: 1, Reason: checkpoint.CheckpointDeclinedSubsumed,
		Message: "t (1/1): the barrier of checkpoint 2 arrived while it aligned checkpoint 1"}}, rep.declines)
	require.Len(t, rep.acks, 1)
	assert.Equal(t, checkpoint.CheckpointID(2), rep.acks[0].CheckpointID)
	assert.Equal(t, "3", string(rep.acks[0].State.Data))
	assert.Equal(t, []string{"snapshot 2 at 3", "complete 2 at 4"}, h.events())
}

// Alignment across a task's inputs (NextAny): the records of input 0 after its barrier wait until
// input 1's barrier came; the snapshot sees exactly the records before both barriers.
func TestBarriersAlignAcrossInputs(t *testing.T) {
	s := NewShuffle(ShuffleConfig{})
	pa, pb := partID(1, 0, attemptID(1, 0, 0)), partID(2, 0, attemptID(2, 0, 0))
	env, rep, h := cpEnv(t, s,
		rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.PipelinedBounded, Partitions: []rpc.ResultPartitionID{pa}},
		rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.PipelinedBounded, Partitions: []rpc.ResultPartitionID{pb}})
	wa, wb := pipelinedWriter(t, s, pa), pipelinedWriter(t, s, pb)
	require.NoError(t, wa.Emit(ctx, 0, "x1"))
	require.NoError(t, wa.BroadcastBarrier(ctx, barrier(1)))
	require.NoError(t, wa.Emit(ctx, 0, "x2"))
	require.NoError(t, wa.Emit(ctx, 0, "x3"))
	require.NoError(t, wa.Finish(ctx))
	require.NoError(t, wb.Emit(ctx, 0, "y1"))
	require.NoError(t, wb.Emit(ctx, 0, "y2"))
	require.NoError(t, wb.BroadcastBarrier(ctx, barrier(1)))
	require.NoError(t, wb.Emit(ctx, 0, "y3"))
	require.NoError(t, wb.Finish(ctx))

	got := readAll(t, env, h, true, 1)
	require.Len(t, got, 6)
	assert.ElementsMatch(t, []any{"x1", "y1", "y2"}, got[:3], "the records before the barriers")
	assert.ElementsMatch(t, []any{"x2", "x3", "y3"}, got[3:], "the records after them")
	assert.Empty(t, rep.declines)
	require.Len(t, rep.acks, 1)
	assert.Equal(t, "3", string(rep.acks[0].State.Data))
	assert.Equal(t, []string{"snapshot 1 at 3", "complete 1 at 4"}, h.events())
}

// A task of a job that takes checkpoints without a CheckpointHandler acknowledges an empty
// state; its barrier goes out before the record being emitted.
func TestTaskWithoutHandlerAcksAnEmptyState(t *testing.T) {
	s := NewShuffle(ShuffleConfig{})
	p := partID(1, 0, attemptID(1, 0, 0))
	src := newEnvironment(notStopped, TaskInfo{TaskName: "src (1/1)", CheckpointingEnabled: true})
	rep := &recordingReporter{}
	src.cp.reporter = rep
	src.writers = []ShuffleWriter{pipelinedWriter(t, s, p)}
	sink, _, h := cpEnv(t, s, rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.PipelinedBounded, Partitions: []rpc.ResultPartitionID{p}})
	require.NoError(t, src.Output(0).Emit(ctx, 0, 1))
	src.cp.mail.post(mail{kind: mailTrigger, barrier: *barrier(4)})
	require.NoError(t, src.Output(0).Emit(ctx, 0, 2))
	require.NoError(t, src.writers[0].Finish(ctx))
	assert.Equal(t, []checkpoint.AcknowledgeCheckpoint{{CheckpointID: 4}}, rep.acks)
	got := readAll(t, sink, h, false, 4)
	assert.Equal(t, []any{1, 2}, got)
	assert.Equal(t, []string{"snapshot 4 at 1", "complete 4 at 2"}, h.events(), "the barrier came between the records")
}

// A trigger reaching a task whose producers all finished but that still has records to read
// is taken once they are all handed out, as if its barrier followed them (Flink's
// triggerUnfinishedChannelsCheckpoint); the end of input then waits for its confirmation.
func TestTriggerAfterTheProducersFinishedCoversTheRecordsLeft(t *testing.T) {
	s := NewShuffle(ShuffleConfig{})
	p0, p1 := partID(1, 0, attemptID(1, 0, 0)), partID(1, 1, attemptID(1, 1, 0))
	env, rep, h := cpEnv(t, s, rpc.InputGateDeploymentDescriptor{ResultType: jobgraph.PipelinedBounded, Partitions: []rpc.ResultPartitionID{p0, p1}})
	w0, w1 := pipelinedWriter(t, s, p0), pipelinedWriter(t, s, p1)
	require.NoError(t, w0.Emit(ctx, 0, "a"))
	require.NoError(t, w1.Emit(ctx, 0, "b"))
	require.NoError(t, w1.Emit(ctx, 0, "c"))
	require.NoError(t, w0.Finish(ctx))
	require.NoError(t, w1.Finish(ctx))
	h.afterSnapshot = func(id checkpoint.CheckpointID) {
		env.cp.mail.post(mail{kind: mailConfirm, barrier: CheckpointBarrier{ID: id}})
	}
	env.cp.mail.post(mail{kind: mailTrigger, barrier: *barrier(3)})
	var got []any
	for {
		r, err := env.Input(0).Next(ctx)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		got = append(got, r)
		h.count++
	}
	assert.ElementsMatch(t, []any{"a", "b", "c"}, got)
	assert.Empty(t, rep.declines)
	require.Len(t, rep.acks, 1)
	assert.Equal(t, checkpoint.CheckpointID(3), rep.acks[0].CheckpointID)
	assert.Equal(t, []string{"snapshot 3 at 3", "complete 3 at 3"}, h.events(), "the snapshot covers every record left")
}

// Every wait of the checkpoint machinery ends when the task is canceled: the source waiting
// for its final checkpoint, the tasks waiting for the outcome of a stop-with-savepoint
// savepoint, and the tasks waiting at their end of input for a confirmation.
func TestCancelEndsTheCheckpointWaits(t *testing.T) {
	canceled := []jobgraph.ExecutionState{jobgraph.ExecutionStateInitializing, jobgraph.ExecutionStateRunning, jobgraph.ExecutionStateCanceled}
	t.Run("final checkpoint and end of input", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := newCPJob(t, 40, 40)
			require.NoError(t, j.te.CancelTask(ctx, j.src.ExecutionAttemptID))
			synctest.Wait()
			assert.Equal(t, canceled, j.c.jm.statesOf(j.src.ExecutionAttemptID), "the source waiting for a final checkpoint")

			k := newCPJob(t, 40, 40)
			k.trigger(t, k.src.ExecutionAttemptID, 1, checkpoint.Checkpoint)
			synctest.Wait()
			require.NoError(t, k.te.ConfirmCheckpoint(ctx, jmToken(1), k.src.ExecutionAttemptID, 1, cpTime))
			synctest.Wait()
			require.True(t, finished(k.c, k.src.ExecutionAttemptID))
			assert.Equal(t, []string{"snapshot 1 at 20"}, k.hMap[0].events(), "map 0 waits at its end of input")
			// The sink first (it waits for input), then the maps waiting at their end of input.
			for _, a := range []jobgraph.ExecutionAttemptID{k.sink.ExecutionAttemptID, k.maps[0].ExecutionAttemptID, k.maps[1].ExecutionAttemptID} {
				require.NoError(t, k.te.CancelTask(ctx, a))
				synctest.Wait()
				assert.Equal(t, canceled, k.c.jm.statesOf(a), a.String())
			}
		})
	})
	t.Run("stop-with-savepoint", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := newCPJob(t, 40, 10)
			j.trigger(t, j.src.ExecutionAttemptID, 5, checkpoint.SyncSavepoint)
			close(j.pause)
			synctest.Wait()
			require.Len(t, j.c.jm.ackedStates(5), 4)
			for _, a := range j.attempts() {
				require.NoError(t, j.te.CancelTask(ctx, a))
			}
			synctest.Wait()
			for _, a := range j.attempts() {
				assert.Equal(t, canceled, j.c.jm.statesOf(a), a.String())
			}
		})
	})
}

// RestoredState is the TDD's TaskRestore: the checkpoint and the subtask's state.
func TestRestoredStateIsTheDeploymentsTaskRestore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		type restored struct {
			id    checkpoint.CheckpointID
			state checkpoint.StateHandle
			ok    bool
		}
		got := make(chan restored, 2)
		c.reg.Register("restore", func(ctx context.Context, env Environment) error {
			id, st, ok := env.RestoredState()
			got <- restored{id, st, ok}
			return nil
		})
		te := c.startTE(1, 2)
		c.allocate(te, 0, allocID(1))
		c.allocate(te, 1, allocID(2))
		synctest.Wait()
		d := tdd(1, 0, "restore", allocID(1))
		d.TaskRestore = &rpc.TaskRestore{CheckpointID: 7, State: checkpoint.StateHandle{Data: []byte("sum=42"), Size: 6}}
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), d))
		synctest.Wait()
		assert.Equal(t, restored{7, checkpoint.StateHandle{Data: []byte("sum=42"), Size: 6}, true}, <-got)
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), tdd(1, 1, "restore", allocID(2))))
		synctest.Wait()
		assert.Equal(t, restored{}, <-got, "a fresh start restores nothing")
	})
}

// A task of a job that takes no checkpoints declines a trigger
// (CHECKPOINT_DECLINED_TASK_NOT_CHECKPOINTING), from inside its wait for input.
func TestTriggerOfAJobWithoutCheckpointsIsDeclined(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t)
		c.reg.Register("wait", func(ctx context.Context, env Environment) error {
			_, err := env.Input(0).Next(ctx) // waits for a producer that never comes
			return err
		})
		te := c.startTE(1, 1)
		c.allocate(te, 0, allocID(1))
		synctest.Wait()
		d := tdd(2, 0, "wait", allocID(1))
		d.InputGates = []rpc.InputGateDeploymentDescriptor{{ResultType: jobgraph.PipelinedBounded, Partitions: []rpc.ResultPartitionID{partID(1, 0, attemptID(1, 0, 0))}}}
		require.NoError(t, te.SubmitTask(ctx, jmToken(1), d))
		synctest.Wait()
		require.NoError(t, te.TriggerCheckpoint(ctx, jmToken(1), d.ExecutionAttemptID, 1, cpTime, checkpoint.CheckpointPropertiesFor(checkpoint.Checkpoint)))
		synctest.Wait()
		got := c.jm.declined()
		require.Len(t, got, 1)
		assert.Equal(t, checkpoint.DeclineCheckpoint{Attempt: d.ExecutionAttemptID, CheckpointID: 1,
			Reason: checkpoint.CheckpointDeclinedTaskNotCheckpointing, Message: "the job does not take checkpoints"}, got[0].Decline)
	})
}
