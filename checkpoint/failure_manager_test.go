package checkpoint_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// The counted reasons are exactly Flink's (CheckpointFailureManager.checkFailureCounter, FLINK-27570).
func TestCountedReasonsAreFlinks(t *testing.T) {
	var counted []string
	for _, r := range checkpoint.AllCheckpointFailureReasons() {
		if r.CountsTowardTolerableFailures() {
			counted = append(counted, r.String())
		}
	}
	assert.Equal(t, []string{"IO_EXCEPTION", "CHECKPOINT_ASYNC_EXCEPTION", "CHECKPOINT_EXPIRED", "CHECKPOINT_DECLINED", "FINALIZE_CHECKPOINT_FAILURE"}, counted)
	assert.Len(t, checkpoint.AllCheckpointFailureReasons(), 27)
	var r checkpoint.CheckpointFailureReason
	require.NoError(t, r.UnmarshalText([]byte("JOB_FAILOVER_REGION")))
	assert.Equal(t, checkpoint.JobFailoverRegion, r)
	assert.Error(t, r.UnmarshalText([]byte("NOPE")))
	err := error(&checkpoint.CheckpointError{Reason: checkpoint.CheckpointExpired, CheckpointID: 3})
	assert.ErrorIs(t, err, checkpoint.CheckpointExpired)
	assert.NotErrorIs(t, err, checkpoint.CheckpointDeclined)
	info := jobgraph.NewErrorInfo(err, start)
	assert.ErrorIs(t, info.Err(), checkpoint.CheckpointExpired, "the reason travels as an error code")
}

func TestFailureManagerRules(t *testing.T) {
	rec := &recorder{}
	m, err := checkpoint.NewCheckpointFailureManager(1, rec)
	require.NoError(t, err)
	cp := checkpoint.CheckpointPropertiesFor(checkpoint.Checkpoint)
	a := attempt(jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID(), "t", 0, 0)
	fail := func(id checkpoint.CheckpointID, r checkpoint.CheckpointFailureReason) *checkpoint.CheckpointError {
		return &checkpoint.CheckpointError{Reason: r, CheckpointID: id}
	}

	m.HandleTaskLevelCheckpointException(cp, fail(5, checkpoint.CheckpointDeclined), a)
	m.HandleTaskLevelCheckpointException(cp, fail(5, checkpoint.CheckpointDeclined), a)
	assert.Equal(t, 1, m.ContinuousFailureCount(), "one checkpoint counts once")
	m.HandleJobLevelCheckpointException(checkpoint.CheckpointPropertiesFor(checkpoint.Savepoint), fail(6, checkpoint.CheckpointExpired))
	assert.Equal(t, 1, m.ContinuousFailureCount(), "JobManager-side savepoint failures are not counted")
	m.HandleCheckpointSuccess(7)
	assert.Equal(t, 0, m.ContinuousFailureCount())
	m.HandleJobLevelCheckpointException(cp, fail(6, checkpoint.CheckpointExpired))
	assert.Equal(t, 0, m.ContinuousFailureCount(), "older than the last success: not counted")
	m.HandleJobLevelCheckpointException(cp, fail(0, checkpoint.IOException))
	m.HandleJobLevelCheckpointException(cp, fail(0, checkpoint.IOException))
	assert.Equal(t, []string{"job: checkpoint: exceeded checkpoint tolerable failure threshold (last: checkpoint: An Exception occurred while triggering the checkpoint. IO-problem detected.)"}, rec.failJobs, "failures without an ID each count")
	rec.failJobs = nil
	m.HandleTaskLevelCheckpointException(checkpoint.CheckpointPropertiesFor(checkpoint.SyncSavepoint), fail(9, checkpoint.CheckpointDeclinedTaskNotReady), a)
	assert.Equal(t, []string{"job: checkpoint 9: Checkpoint was declined (tasks not ready)"}, rec.failJobs, "stop-with-savepoint declined: the job fails at once")

	_, err = checkpoint.NewCheckpointFailureManager(-1, rec)
	assert.ErrorIs(t, err, checkpoint.ErrInvalidConfig)
	_, err = checkpoint.NewCheckpointFailureManager(0, nil)
	assert.ErrorIs(t, err, checkpoint.ErrInvalidConfig)
	assert.True(t, errors.Is(&checkpoint.CheckpointError{Reason: checkpoint.IOException, Cause: errDisk}, errDisk))
}

var errDisk = errors.New("disk")

// The snapshot's JSON names are Flink's REST /jobs/:jobid/checkpoints fields.
func TestStatisticsJSONNamesAreFlinksREST(t *testing.T) {
	eg, v := jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	a := attempt(eg, v, "v", 0, 0)
	h := newHarness(t, jobgraph.CheckpointingSettings{}, nil, a)
	h.trigger("cp")
	require.NoError(t, h.ack(1, a, 9))
	b, err := json.Marshal(h.c.Statistics())
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, map[string]any{"restored": 0.0, "total": 1.0, "in_progress": 0.0, "completed": 1.0, "failed": 0.0}, got["counts"])
	latest := got["latest"].(map[string]any)
	assert.Nil(t, latest["savepoint"])
	completed := latest["completed"].(map[string]any)
	for _, k := range []string{"id", "status", "is_savepoint", "checkpoint_type", "trigger_timestamp", "latest_ack_timestamp", "state_size", "end_to_end_duration", "num_subtasks", "num_acknowledged_subtasks", "tasks"} {
		assert.Contains(t, completed, k)
	}
	assert.Equal(t, "COMPLETED", completed["status"])
	assert.Equal(t, "CHECKPOINT", completed["checkpoint_type"])
	assert.Len(t, got["history"], 1)
}
