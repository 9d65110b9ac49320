package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rest"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// t0 is the instant a synctest bubble starts at, in Unix milliseconds (2000-01-01T00:00:00Z).
const t0 = int64(946684800000)

// stopped treats stop-with-savepoint's end of a task as success.
func stopped(err error) error {
	if errors.Is(err, taskexecutor.ErrStopped) {
		return nil
	}
	return err
}

// registry holds the task code of the tests:
//   - "block" waits until canceled;
//   - "finish" adds 1 to the IntCounter "records" and returns;
//   - "fail" fails with "boom";
//   - "src" emits its count every 100 ms (so checkpoints reach it) until stopped or canceled;
//   - "sink" reads until its input ends.
func registry() *taskexecutor.Registry {
	reg := taskexecutor.NewRegistry()
	reg.Register("block", func(ctx context.Context, _ taskexecutor.Environment) error {
		<-ctx.Done()
		return ctx.Err()
	})
	reg.Register("finish", func(ctx context.Context, env taskexecutor.Environment) error {
		c, err := env.AccumulatorRegistry().IntCounter("records")
		if err != nil {
			return err
		}
		c.Add(1)
		return nil
	})
	reg.Register("fail", func(context.Context, taskexecutor.Environment) error { return errors.New("boom") })
	reg.Register("src", func(ctx context.Context, env taskexecutor.Environment) error {
		for n := int64(0); ; n++ {
			time.Sleep(100 * time.Millisecond)
			if err := env.Output(0).Emit(ctx, 0, n); err != nil {
				return stopped(err)
			}
		}
	})
	reg.Register("sink", func(ctx context.Context, env taskexecutor.Environment) error {
		for {
			if _, err := env.Input(0).Next(ctx); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return stopped(err)
			}
		}
	})
	return reg
}

// startCluster starts a MiniCluster of 2 TaskExecutors with 2 slots each, closed when the test ends.
func startCluster(t *testing.T, cfg minicluster.Config) *minicluster.MiniCluster {
	t.Helper()
	if cfg.Registry == nil {
		cfg.Registry = registry()
	}
	if cfg.TaskExecutors == 0 {
		cfg.TaskExecutors, cfg.SlotsPerTaskExecutor = 2, 2
	}
	mc, err := minicluster.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mc.Close()) })
	return mc
}

// newHandler returns a Handler over mc, closed when the test ends.
func newHandler(t *testing.T, cfg rest.Config) *rest.Handler {
	t.Helper()
	h, err := rest.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	return h
}

// do sends a request straight to the handler (no network: it works in a synctest bubble) and
// returns the status and the body.
func do(h http.Handler, method, path, body string) (int, []byte) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// getJSON GETs path and decodes the body as JSON.
func getJSON(t *testing.T, h http.Handler, path string) (int, any) {
	t.Helper()
	status, body := do(h, http.MethodGet, path, "")
	var v any
	require.NoError(t, json.Unmarshal(body, &v), "%s answered %s", path, body)
	return status, v
}

// obj is a JSON object; keys lists its keys sorted.
type obj = map[string]any

func keys(v any) []string {
	m, ok := v.(obj)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sorted returns its arguments sorted, to compare with keys.
func sorted(s ...string) []string { slices.Sort(s); return s }

// path walks a decoded JSON value along object keys and array indexes ("vertices", 0, "name").
func path(v any, steps ...any) any {
	for _, s := range steps {
		switch k := s.(type) {
		case string:
			m, _ := v.(obj)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// num is a JSON number as an int64.
func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// jobs are the four jobs of the endpoint tests, one per state.
type jobs struct {
	running, finished, failed, canceled *jobgraph.JobGraph
}

// checkpointed enables checkpoints every hour (none is periodic within a test; the tests trigger
// them).
func checkpointed(g *jobgraph.JobGraph) *jobgraph.JobGraph {
	g.Checkpointing = jobgraph.CheckpointingSettings{Interval: time.Hour}
	return g
}

// sleepUntil sleeps (in the bubble's virtual time) until t0+ms.
func sleepUntil(ms int64) { time.Sleep(time.Until(time.UnixMilli(t0 + ms))) }

// startJobs runs, in a synctest bubble starting at t0, one job per state, each checkpointed:
//   - at t0 the RUNNING streaming job "running" (src(2) → sink(1), ALL_TO_ALL,
//     PIPELINED_BOUNDED, checkpoints every hour), and its checkpoint 1, triggered at t0 and
//     completed at t0+100ms, once the sources emit;
//   - at t0+1s "finished" (a(2) → b(1), POINTWISE, ship strategy HASH, checkpoints every 100 ms;
//     each task adds 1 to the accumulator "records"): b finishes at once, a once its final
//     checkpoint 1 completed at t0+1.1s, and so the job;
//   - at t0+2s "failed" (one "fail" task, no restarts), FAILED at once;
//   - at t0+3s "canceled" (one "block" task), canceled at t0+4s.
//
// It returns at t0+5s with everything settled.
func startJobs(t *testing.T, mc *minicluster.MiniCluster) jobs {
	t.Helper()
	ctx := context.Background()
	var j jobs

	j.running = checkpointed(jobgraph.New("running", jobgraph.Streaming))
	src := j.running.AddVertex("src", "src", 2)
	sink := j.running.AddVertex("sink", "sink", 1)
	j.running.Connect(src, sink, jobgraph.AllToAll, jobgraph.PipelinedBounded)
	require.NoError(t, mc.SubmitJob(ctx, j.running))
	synctest.Wait() // RUNNING
	id, err := mc.TriggerCheckpoint(ctx, j.running.JobID)
	require.NoError(t, err)
	require.EqualValues(t, 1, id)
	sleepUntil(1000)

	j.finished = jobgraph.New("finished", jobgraph.Streaming)
	j.finished.Checkpointing = jobgraph.CheckpointingSettings{Interval: 100 * time.Millisecond}
	a := j.finished.AddVertex("a", "finish", 2)
	b := j.finished.AddVertex("b", "finish", 1)
	j.finished.Connect(a, b, jobgraph.Pointwise, jobgraph.PipelinedBounded).ShipStrategy = "HASH"
	res, err := mc.Run(ctx, j.finished)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFinished, res.Status)
	sleepUntil(2000)

	j.failed = checkpointed(jobgraph.New("failed", jobgraph.Streaming))
	j.failed.AddVertex("fail", "fail", 1)
	j.failed.RestartStrategy = jobgraph.NoRestart()
	res, err = mc.Run(ctx, j.failed)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFailed, res.Status)
	sleepUntil(3000)

	j.canceled = checkpointed(jobgraph.New("canceled", jobgraph.Streaming))
	j.canceled.AddVertex("block", "block", 1)
	require.NoError(t, mc.SubmitJob(ctx, j.canceled))
	sleepUntil(4000)
	require.NoError(t, mc.CancelJob(ctx, j.canceled.JobID))
	res, err = mc.RequestJobResult(ctx, j.canceled.JobID)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	sleepUntil(5000)
	synctest.Wait()
	return j
}

func httptestRequest(method, target string) *http.Request {
	return httptest.NewRequest(method, target, nil)
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}
