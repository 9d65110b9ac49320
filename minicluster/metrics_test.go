package minicluster_test

// The runtime's metrics under Flink's names on a whole MiniCluster, in virtual time: the job's
// status gauges, restarts and checkpoint metrics, the tasks' I/O metrics and the cluster's, with
// the exact values the instants give.

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/metrics"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// values maps each metric's name to its value (Fields' text) for one scope's metrics.
func values(vs []metrics.Value) map[string]string {
	out := map[string]string{}
	for _, v := range vs {
		for _, f := range v.Fields() {
			out[f.ID] = f.Value
		}
	}
	return out
}

// clusterValues are the cluster-scope metrics of reg.
func clusterValues(reg *metrics.Registry) map[string]string {
	var cl []metrics.Value
	for _, v := range reg.Snapshot() {
		if v.Scope.Kind == metrics.ScopeJobManager {
			cl = append(cl, v)
		}
	}
	return values(cl)
}

// taskValues are the metrics of the one running attempt of vertex v's subtask 0, with its attempt.
func taskValues(t *testing.T, reg *metrics.Registry, job jobgraph.JobID, v jobgraph.JobVertexID) (int, map[string]string) {
	t.Helper()
	vs := reg.TaskMetrics(job, v)
	require.NotEmpty(t, vs, "task metrics of vertex %s", v)
	attempt := vs[0].Scope.AttemptNumber
	for _, x := range vs {
		require.Equal(t, attempt, x.Scope.AttemptNumber, "one attempt at a time")
	}
	return attempt, values(vs)
}

// Scenario: ctl → src → sink, POINTWISE PIPELINED, one region; ctl sends nothing, the source
// emits 256 records and waits for ctl's, the sink reads; attempt 0 of the source fails at 4 s, fixed-delay restarts it (with the sink)
// 2 s later. The job's metrics follow Flink's gauges at every instant: uptime and runningTime
// count from the latest RUNNING, downtime and restartingTime from RESTARTING, numRestarts counts
// the one restart; each attempt's numRecordsOut and numRecordsIn are 256, its
// numRecordsOutPerSecond (the sink's numRecordsInPerSecond) 256/60 after the first 5 s update; the cluster's gauges count the
// TaskExecutor, its slots and the running job. Once the job ended its job and task metrics are
// gone.
func TestJobTaskAndClusterMetricsUnderFlinksNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		reg := registry()
		// The source emits 256 records, then waits on its input (from ctl, which sends nothing):
		// a task waiting for input hands its partial batches over, so the sink gets them all.
		const n = 256
		reg.Register("emit-256", func(ctx context.Context, env taskexecutor.Environment) error {
			for i := range n {
				if err := env.Output(0).Emit(ctx, 0, int64(i)); err != nil {
					return err
				}
			}
			wait := ctx
			if env.Info().AttemptNumber == 0 {
				var cancel context.CancelFunc
				wait, cancel = context.WithTimeout(ctx, 4*time.Second)
				defer cancel()
			}
			_, err := env.Input(0).Next(wait)
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				return errBoom
			}
			return err
		})
		reg.Register("idle", func(ctx context.Context, env taskexecutor.Environment) error {
			<-ctx.Done()
			return ctx.Err()
		})
		reg.Register("read", func(ctx context.Context, env taskexecutor.Environment) error {
			for {
				if _, err := env.Input(0).Next(ctx); err != nil {
					if errors.Is(err, io.EOF) {
						<-ctx.Done()
						return ctx.Err()
					}
					return err
				}
			}
		})
		mc := start(t, minicluster.Config{SlotsPerTaskExecutor: 2, Registry: reg})
		m := mc.Metrics()
		require.NotNil(t, m)
		g := jobgraph.New("metrics", jobgraph.Streaming)
		ctl := g.AddVertex("ctl", "idle", 1)
		src := g.AddVertex("src", "emit-256", 1)
		g.Connect(ctl, src, jobgraph.Pointwise, jobgraph.Pipelined)
		sink := g.AddVertex("sink", "read", 1)
		g.Connect(src, sink, jobgraph.Pointwise, jobgraph.Pipelined)
		g.RestartStrategy = jobgraph.FixedDelayRestart(1, 2*time.Second)
		require.NoError(t, mc.SubmitJob(ctx, g))

		at(begin, 3*time.Second)
		job := values(m.JobMetrics(g.JobID))
		assert.Equal(t, "3000", job["uptime"])
		assert.Equal(t, "3000", job["runningTime"])
		assert.Equal(t, "0", job["downtime"])
		assert.Equal(t, "0", job["restartingTime"])
		assert.Equal(t, "0", job["numRestarts"])
		assert.Equal(t, "0", job["createdTime"])
		assert.Equal(t, "0", job["numberOfCompletedCheckpoints"], "a job without checkpoints shows a tracker that saw none")
		assert.Equal(t, "-1", job["lastCheckpointDuration"])
		assert.Equal(t, "-1", job["lastCheckpointSize"])
		attempt, s := taskValues(t, m, g.JobID, src.ID)
		assert.Equal(t, 0, attempt)
		assert.Equal(t, "256", s["numRecordsOut"])
		assert.Equal(t, "0", s["numRecordsIn"])
		assert.Equal(t, "0", s["backPressuredTimeMsPerSecond"], "the sink keeps up")
		_, k := taskValues(t, m, g.JobID, sink.ID)
		assert.Equal(t, "256", k["numRecordsIn"])
		assert.Equal(t, "0", k["numRecordsOut"])
		assert.Equal(t, map[string]string{
			"numRegisteredTaskManagers": "1", "taskSlotsTotal": "2", "taskSlotsAvailable": "1", "numRunningJobs": "1",
		}, clusterValues(m), "one slot holds the three tasks (slot sharing)")

		at(begin, 5*time.Second) // 1 s into the restart's 2 s backoff
		assert.Equal(t, jobgraph.JobStatusRestarting, jobStatus(t, mc, g.JobID))
		job = values(m.JobMetrics(g.JobID))
		assert.Equal(t, "0", job["uptime"])
		assert.Equal(t, "0", job["runningTime"])
		assert.Equal(t, "1000", job["downtime"])
		assert.Equal(t, "1000", job["restartingTime"])
		assert.Equal(t, "1", job["numRestarts"])
		assert.Empty(t, m.TaskMetrics(g.JobID, src.ID), "the failed attempt's group is closed")

		at(begin, 9*time.Second) // RUNNING again since 6 s
		job = values(m.JobMetrics(g.JobID))
		assert.Equal(t, "3000", job["uptime"])
		assert.Equal(t, "3000", job["runningTime"])
		assert.Equal(t, "0", job["downtime"])
		assert.Equal(t, "0", job["restartingTime"])
		assert.Equal(t, "1", job["numRestarts"])
		attempt, s = taskValues(t, m, g.JobID, src.ID)
		assert.Equal(t, 1, attempt)
		assert.Equal(t, "256", s["numRecordsOut"])
		assert.Equal(t, "0.0", s["numRecordsOutPerSecond"], "no update since the attempt started at 6 s")

		// The registry's updater stopped when the first attempts' meters went at 4 s and started
		// again with the second attempts' at 6 s: their first update is at 11 s.
		at(begin, 11*time.Second-time.Nanosecond)
		_, s = taskValues(t, m, g.JobID, src.ID)
		assert.Equal(t, "0.0", s["numRecordsOutPerSecond"])
		at(begin, 11*time.Second)
		var rate float64
		for _, v := range m.TaskMetrics(g.JobID, src.ID) {
			if v.Name == "numRecordsOutPerSecond" {
				rate = v.Float
			}
		}
		assert.Equal(t, 256.0/60, rate, "256 records over MeterView's 60 s")
		_, k = taskValues(t, m, g.JobID, sink.ID)
		assert.Equal(t, "256", k["numRecordsIn"])
		var inRate float64
		for _, v := range m.TaskMetrics(g.JobID, sink.ID) {
			if v.Name == "numRecordsInPerSecond" {
				inRate = v.Float
			}
		}
		assert.Equal(t, 256.0/60, inRate, "the sink's 256 records over MeterView's 60 s")

		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		synctest.Wait()
		assert.Empty(t, m.JobMetrics(g.JobID), "the JobMaster closed the job's group")
		assert.Empty(t, m.TaskMetrics(g.JobID, src.ID))
		assert.Empty(t, m.TaskMetrics(g.JobID, sink.ID))
		assert.Equal(t, map[string]string{
			"numRegisteredTaskManagers": "1", "taskSlotsTotal": "2", "taskSlotsAvailable": "2", "numRunningJobs": "0",
		}, clusterValues(m))
	})
}

// checkpointHandler snapshots 8 bytes of state; the sink's takes 250 ms for checkpoint 1 and
// declines checkpoint 2.
type checkpointHandler struct{ sink bool }

func (h checkpointHandler) SnapshotState(_ context.Context, id checkpoint.CheckpointID) (checkpoint.StateHandle, error) {
	if h.sink {
		switch id {
		case 1:
			time.Sleep(250 * time.Millisecond)
		case 2:
			return checkpoint.StateHandle{}, errors.New("declined")
		}
	}
	return checkpoint.StateHandle{Data: []byte("12345678"), Size: 8}, nil
}
func (checkpointHandler) NotifyCheckpointComplete(context.Context, checkpoint.CheckpointID) error {
	return nil
}
func (checkpointHandler) NotifyCheckpointAborted(context.Context, checkpoint.CheckpointID) {}

// Scenario: checkpoints every 1 s on src → sink; the source emits one record at 50 ms past each
// 100 ms (so it takes each trigger 50 ms after it), the sink's snapshot of checkpoint 1 takes
// 250 ms and it declines checkpoint 2 (tolerated). The job's checkpoint metrics are
// CheckpointStatsTracker's: in progress while checkpoint 1 waits for the sink, then completed
// with lastCheckpointDuration 300 ms (trigger at 1 s to the sink's ack at 1.3 s) and
// lastCheckpointSize 16 bytes (8 from each task); checkpoint 2 counts as failed and leaves the
// latest completed one's figures alone.
func TestCheckpointMetricsUnderFlinksNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		reg := registry()
		reg.Register("src", func(ctx context.Context, env taskexecutor.Environment) error {
			env.SetCheckpointHandler(checkpointHandler{})
			time.Sleep(50 * time.Millisecond)
			for i := int64(0); ; i++ {
				if err := env.Output(0).Emit(ctx, 0, i); err != nil {
					return err
				}
				select {
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		})
		reg.Register("sink", func(ctx context.Context, env taskexecutor.Environment) error {
			env.SetCheckpointHandler(checkpointHandler{sink: true})
			for {
				if _, err := env.Input(0).Next(ctx); err != nil {
					return err
				}
			}
		})
		mc := start(t, minicluster.Config{SlotsPerTaskExecutor: 2, Registry: reg})
		m := mc.Metrics()
		g := jobgraph.New("checkpointed", jobgraph.Streaming)
		src := g.AddVertex("src", "src", 1)
		sink := g.AddVertex("sink", "sink", 1)
		g.Connect(src, sink, jobgraph.Pointwise, jobgraph.Pipelined)
		g.Checkpointing = jobgraph.CheckpointingSettings{Interval: time.Second, TolerableFailedCheckpoints: 10}
		require.NoError(t, mc.SubmitJob(ctx, g))

		at(begin, 500*time.Millisecond)
		job := values(m.JobMetrics(g.JobID))
		assert.Equal(t, "0", job["totalNumberOfCheckpoints"])
		assert.Equal(t, "-1", job["lastCheckpointDuration"])
		assert.Equal(t, "-1", job["lastCompletedCheckpointId"])

		at(begin, 1200*time.Millisecond) // checkpoint 1 waits for the sink's snapshot
		job = values(m.JobMetrics(g.JobID))
		assert.Equal(t, "1", job["totalNumberOfCheckpoints"])
		assert.Equal(t, "1", job["numberOfInProgressCheckpoints"])
		assert.Equal(t, "0", job["numberOfCompletedCheckpoints"])
		assert.Equal(t, "-1", job["lastCheckpointDuration"])
		assert.Equal(t, "-1", job["lastCheckpointSize"])

		at(begin, 1300*time.Millisecond)
		job = values(m.JobMetrics(g.JobID))
		assert.Equal(t, "0", job["numberOfInProgressCheckpoints"])
		assert.Equal(t, "1", job["numberOfCompletedCheckpoints"])
		assert.Equal(t, "0", job["numberOfFailedCheckpoints"])
		assert.Equal(t, "300", job["lastCheckpointDuration"])
		assert.Equal(t, "16", job["lastCheckpointSize"])
		assert.Equal(t, "16", job["lastCheckpointFullSize"])
		assert.Equal(t, "1", job["lastCompletedCheckpointId"])
		assert.Equal(t, "-1", job["lastCheckpointRestoreTimestamp"])

		at(begin, 2100*time.Millisecond) // checkpoint 2 was declined at 2.05 s
		job = values(m.JobMetrics(g.JobID))
		assert.Equal(t, "2", job["totalNumberOfCheckpoints"])
		assert.Equal(t, "0", job["numberOfInProgressCheckpoints"])
		assert.Equal(t, "1", job["numberOfCompletedCheckpoints"])
		assert.Equal(t, "1", job["numberOfFailedCheckpoints"])
		assert.Equal(t, "300", job["lastCheckpointDuration"])
		assert.Equal(t, "1", job["lastCompletedCheckpointId"])
		assert.Equal(t, "0", job["numRestarts"], "the decline is tolerated")

		// The figures are those of the job's checkpoint statistics.
		a, err := mc.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		require.NotNil(t, a.CheckpointStatistics.Latest.Completed)
		assert.Equal(t, int64(300), a.CheckpointStatistics.Latest.Completed.EndToEndDuration)
		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		_, err = mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
	})
}

// A cluster that ran 1,000 jobs holds the metrics of none of them: every JobMaster and task closed
// its group, and the registry keeps only the cluster's four gauges.
func TestMetricsOfAThousandFinishedJobsAreGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		reg := registry()
		mc := start(t, minicluster.Config{SlotsPerTaskExecutor: 2, Registry: reg, JobStoreMaxCapacity: 10})
		m := mc.Metrics()
		for i := range 1000 {
			g := jobgraph.New("job", jobgraph.Batch)
			a := g.AddVertex("a", "noop", 2)
			b := g.AddVertex("b", "noop", 2)
			g.Connect(a, b, jobgraph.AllToAll, jobgraph.Blocking)
			res, err := mc.Run(ctx, g)
			require.NoError(t, err)
			require.Equal(t, jobgraph.JobStatusFinished, res.Status, "job %d", i)
		}
		synctest.Wait()
		var left []string
		for _, v := range m.Snapshot() {
			left = append(left, v.Scope.Kind.String()+"/"+v.Name)
		}
		assert.Equal(t, []string{"jobmanager/numRegisteredTaskManagers", "jobmanager/numRunningJobs",
			"jobmanager/taskSlotsAvailable", "jobmanager/taskSlotsTotal"}, left)
	})
}

// A source whose sink does not read waits for room from its first instant on: after the first
// 5 s update its backPressuredTimeMsPerSecond is 1000 (Flink's maximum), the sink's 0.
func TestBackPressuredTimeOfABlockedSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		begin := time.Now()
		reg := registry()
		reg.Register("flood", func(ctx context.Context, env taskexecutor.Environment) error {
			for i := int64(0); ; i++ {
				if err := env.Output(0).Emit(ctx, 0, i); err != nil {
					return err
				}
			}
		})
		reg.Register("stall", func(ctx context.Context, env taskexecutor.Environment) error {
			<-ctx.Done()
			return ctx.Err()
		})
		mc := start(t, minicluster.Config{SlotsPerTaskExecutor: 2, Registry: reg})
		m := mc.Metrics()
		g := jobgraph.New("back-pressure", jobgraph.Streaming)
		src := g.AddVertex("src", "flood", 1)
		sink := g.AddVertex("sink", "stall", 1)
		g.Connect(src, sink, jobgraph.Pointwise, jobgraph.Pipelined)
		require.NoError(t, mc.SubmitJob(ctx, g))

		at(begin, 5*time.Second-time.Nanosecond)
		_, s := taskValues(t, m, g.JobID, src.ID)
		assert.Equal(t, "0", s["backPressuredTimeMsPerSecond"], "no update yet")
		at(begin, 5*time.Second)
		_, s = taskValues(t, m, g.JobID, src.ID)
		assert.Equal(t, "1000", s["backPressuredTimeMsPerSecond"])
		_, k := taskValues(t, m, g.JobID, sink.ID)
		assert.Equal(t, "0", k["backPressuredTimeMsPerSecond"])
		require.NoError(t, mc.CancelJob(ctx, g.JobID))
		_, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
	})
}
