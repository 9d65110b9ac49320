package minicluster_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func noop(ctx context.Context, env taskexecutor.Environment) error { return nil }

// emitN sends its subtask index to every subpartition of output 0, three times.
func emitN(ctx context.Context, env taskexecutor.Environment) error {
	for range 3 {
		if err := env.Output(0).Broadcast(ctx, env.Info().SubtaskIndex); err != nil {
			return err
		}
	}
	return nil
}

// sum reads everything and fails unless it got 3 records from each of 2 producers.
func sum(ctx context.Context, env taskexecutor.Environment) error {
	n := 0
	for {
		_, err := env.Input(0).Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		n++
	}
	if n != 6 {
		return errors.New("sum: wrong record count")
	}
	return nil
}

func registry() *taskexecutor.Registry {
	reg := taskexecutor.NewRegistry()
	reg.Register("noop", noop)
	reg.Register("emit", emitN)
	reg.Register("sum", sum)
	reg.Register("fail", func(ctx context.Context, env taskexecutor.Environment) error {
		return errBoom
	})
	return reg
}

var errBoom = errors.New("boom")

// errBoom crosses from task to JobMaster as plain data; registered, it still matches errors.Is in
// the JobResult, as a host's own sentinel does.
func init() { jobgraph.RegisterErrorCode("minicluster-test.boom", errBoom) }

func start(t *testing.T, cfg minicluster.Config) *minicluster.MiniCluster {
	t.Helper()
	if cfg.Registry == nil {
		cfg.Registry = registry()
	}
	mc, err := minicluster.New(cfg)
	require.NoError(t, err)
	require.NoError(t, mc.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, mc.Close()) })
	return mc
}

func TestRunsAPipelineToFinished(t *testing.T) {
	mc := start(t, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 2})
	for _, rt := range []jobgraph.ResultPartitionType{jobgraph.Blocking, jobgraph.PipelinedBounded} {
		g := jobgraph.New("emit-sum-"+rt.String(), jobgraph.Batch)
		p := g.AddVertex("emit", "emit", 2)
		c := g.AddVertex("sum", "sum", 2)
		g.Connect(p, c, jobgraph.AllToAll, rt)
		res, err := mc.Run(context.Background(), g)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)
	}
}

func TestTwoJobsShareOneTaskExecutor(t *testing.T) {
	mc := start(t, minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 2})
	ctx := context.Background()
	a := jobgraph.New("a", jobgraph.Batch)
	a.AddVertex("v", "noop", 1)
	b := jobgraph.New("b", jobgraph.Batch)
	b.AddVertex("v", "noop", 1)
	require.NoError(t, mc.SubmitJob(ctx, a))
	require.NoError(t, mc.SubmitJob(ctx, b))
	for _, g := range []*jobgraph.JobGraph{a, b} {
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status, "job %s: %v", g.Name, res.RootCause)
	}
}

func TestMissingTaskCodeFailsTheJobNamingIt(t *testing.T) {
	mc := start(t, minicluster.Config{})
	g := jobgraph.New("missing", jobgraph.Batch)
	g.AddVertex("v", "no-such-code", 1)
	res, err := mc.Run(context.Background(), g)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
	require.NotNil(t, res.Failure)
	assert.Contains(t, res.Failure.Message, `"no-such-code"`)
	require.Error(t, res.RootCause)
	assert.Contains(t, res.RootCause.Error(), "no-such-code")
}

func TestTaskFailureFailsTheJobWithItsRootCause(t *testing.T) {
	mc := start(t, minicluster.Config{SlotsPerTaskExecutor: 2})
	g := jobgraph.New("failing", jobgraph.Batch)
	src := g.AddVertex("src", "noop", 1)
	bad := g.AddVertex("bad", "fail", 1)
	g.Connect(src, bad, jobgraph.AllToAll, jobgraph.Blocking)
	res, err := mc.Run(context.Background(), g)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFailed, res.Status)
	assert.ErrorIs(t, res.RootCause, errBoom)
	assert.Contains(t, res.Failure.Message, "bad (1/1)")

	archived, err := mc.RequestJob(context.Background(), g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFailed, archived.Status)
}

type leaderListener chan [2]string

func (l leaderListener) NotifyLeaderAddress(address string, session ha.SessionID) {
	if address != "" {
		l <- [2]string{address, jobgraph.JobMasterID(session).String()}
	}
}
func (l leaderListener) HandleError(error) {}

func TestJobMasterAnswersUnknownAttemptWithFalseAndRefusesStaleTokens(t *testing.T) {
	block := make(chan struct{})
	reg := registry()
	reg.Register("block", func(ctx context.Context, env taskexecutor.Environment) error {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil
	})
	mc := start(t, minicluster.Config{Registry: reg})
	g := jobgraph.New("blocking", jobgraph.Batch)
	g.AddVertex("v", "block", 1)
	ctx := context.Background()

	leaders := make(leaderListener, 4)
	retrieval := mc.HA().JobMasterLeaderRetrieval(g.JobID)
	require.NoError(t, retrieval.Start(leaders))
	defer retrieval.Stop()
	require.NoError(t, mc.SubmitJob(ctx, g))
	leader := <-leaders
	token, err := jobgraph.ParseJobMasterID(leader[1])
	require.NoError(t, err)
	jm, err := rpc.Connect[rpc.JobMasterGateway](ctx, mc.RPC(), leader[0])
	require.NoError(t, err)

	unknown := rpc.TaskExecutionState{
		ExecutionAttemptID: jobgraph.ExecutionAttemptID{ExecutionGraphID: jobgraph.NewExecutionGraphID(),
			ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: g.Vertices[0].ID}},
		State: jobgraph.ExecutionStateFinished,
	}
	applied, err := jm.UpdateTaskExecutionState(ctx, token, unknown)
	require.NoError(t, err)
	assert.False(t, applied)

	_, err = jm.UpdateTaskExecutionState(ctx, jobgraph.NewJobMasterID(), unknown)
	assert.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)

	close(block)
	res, err := mc.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
}

// A task that fails on its first attempt under fixed-delay: the job FINISHES, and its JobResult
// carries the failure in the exception history, with the task, subtask and TaskExecutor.
func TestJobResultCarriesTheExceptionHistory(t *testing.T) {
	reg := registry()
	errFirst := errors.New("first attempt fails")
	reg.Register("flaky", func(ctx context.Context, env taskexecutor.Environment) error {
		if env.Info().SubtaskIndex == 1 && env.Info().AttemptNumber == 0 {
			return errFirst
		}
		return nil
	})
	mc := start(t, minicluster.Config{SlotsPerTaskExecutor: 2, Registry: reg})
	g := jobgraph.New("flaky", jobgraph.Batch)
	g.AddVertex("v", "flaky", 2)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, 0)
	res, err := mc.Run(context.Background(), g)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusFinished, res.Status, "%v", res.RootCause)
	require.Len(t, res.ExceptionHistory, 1)
	e := res.ExceptionHistory[0]
	assert.Equal(t, "v (2/2)", e.TaskName)
	assert.Equal(t, 1, e.Subtask)
	assert.Equal(t, jobgraph.ResourceID("taskexecutor-0"), e.Location)
	assert.Contains(t, e.Message, "first attempt fails")
	assert.Empty(t, e.Concurrent)
}
