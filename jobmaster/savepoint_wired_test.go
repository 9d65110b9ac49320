package jobmaster_test

import (
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// startSavepointJob runs ckJob with settings on one fake TaskExecutor, every task RUNNING.
func startSavepointJob(t *testing.T, cfg jobmaster.Config, settings jobgraph.CheckpointingSettings) (*hbEnv, *hbTE, jobmaster.SavepointGateway) {
	t.Helper()
	g := ckJob()
	g.Checkpointing = settings
	e := newHBEnvFor(t, cfg, g)
	te := e.addTE("te-1")
	e.offer(te, 0, "A")
	e.offer(te, 1, "B")
	for _, name := range ckTasks {
		e.report(te, name, jobgraph.ExecutionStateRunning)
	}
	return e, te, e.jm.(jobmaster.SavepointGateway)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// A savepoint the tasks never acknowledge expires at exactly execution.checkpointing.timeout
// after its trigger: the call returns the coordinator's timeout error then, and the savepoint's
// directory is gone. Virtual time.
func TestJobMasterSavepointExpiresAtExactlyTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, te, g := startSavepointJob(t, jobmaster.Config{}, jobgraph.CheckpointingSettings{Interval: time.Hour, Timeout: 30 * time.Second})
		dir := t.TempDir()
		start := time.Now()
		_, err := g.TriggerSavepoint(e.ctx, dir)
		assert.Equal(t, 30*time.Second, time.Since(start))
		assert.EqualError(t, err, "jobmaster: job "+e.g.JobID.String()+": savepoint: checkpoint 1: Checkpoint expired before completing.")
		var timeout interface{ Timeout() bool }
		require.ErrorAs(t, err, &timeout)
		assert.True(t, timeout.Timeout())
		assert.ErrorIs(t, err, checkpoint.CheckpointExpired)
		assert.Empty(t, dirNames(t, dir), "the expired savepoint's directory is removed")
		synctest.Wait()
		assert.Equal(t, []string{
			"trigger 1 src (1/2)#0 @0s", "trigger 1 src (2/2)#0 @0s",
			"abort 1 src (1/2)#0 @30s", "abort 1 src (2/2)#0 @30s", "abort 1 sink (1/2)#0 @30s", "abort 1 sink (2/2)#0 @30s",
		}, te.snapshot().ckCalls)
		assert.Equal(t, jobgraph.JobStatusRunning, e.status())
	})
}

// Stop-with-savepoint through the JobMaster: the sources get the synchronous savepoint, the
// acknowledgements come through the gateway, every task is confirmed, and the call returns the
// savepoint's directory once the tasks and the job are FINISHED; its _metadata holds the tasks'
// states. The default directory is execution.checkpointing.savepoint-dir.
func TestJobMasterStopWithSavepoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spDir := t.TempDir()
		e, te, g := startSavepointJob(t, jobmaster.Config{SavepointDirectory: spDir}, jobgraph.CheckpointingSettings{Interval: time.Hour})
		type result struct {
			path string
			err  error
		}
		res := make(chan result, 1)
		go func() {
			p, err := g.StopWithSavepoint(e.ctx, "")
			res <- result{p, err}
		}()
		advance(time.Second)
		assert.Equal(t, []string{"trigger 1 src (1/2)#0 @0s", "trigger 1 src (2/2)#0 @0s"}, te.snapshot().ckCalls)
		for _, name := range ckTasks {
			e.ack(te, name, 1)
		}
		synctest.Wait()
		assert.Equal(t, []string{"confirm 1 src (1/2)#0 @1s", "confirm 1 src (2/2)#0 @1s", "confirm 1 sink (1/2)#0 @1s", "confirm 1 sink (2/2)#0 @1s"}, te.snapshot().ckCalls[2:])
		for _, name := range ckTasks[:3] {
			e.report(te, name, jobgraph.ExecutionStateFinished)
		}
		select {
		case r := <-res:
			t.Fatalf("returned before the job was FINISHED: %v", r)
		default:
		}
		e.report(te, ckTasks[3], jobgraph.ExecutionStateFinished)
		r := <-res
		require.NoError(t, r.err)
		require.Len(t, dirNames(t, spDir), 1)
		assert.Equal(t, filepath.Join(spDir, dirNames(t, spDir)[0]), r.path)
		<-e.jm.Done()
		assert.Equal(t, jobgraph.JobStatusFinished, e.jm.Result().Archived.Status)
		sp, err := checkpoint.LoadSavepoint(r.path)
		require.NoError(t, err)
		assert.Equal(t, checkpoint.CheckpointID(1), sp.CheckpointID)
		assert.Equal(t, checkpoint.SyncSavepoint, sp.Properties.Type)
		var states []string
		for _, s := range sp.TaskStates {
			states = append(states, string(s.State.Data))
		}
		assert.Equal(t, []string{"src (1/2)", "src (2/2)", "sink (1/2)", "sink (2/2)"}, states)
	})
}
