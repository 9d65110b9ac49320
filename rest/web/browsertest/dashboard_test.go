package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rest"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// browserTimeout bounds each browser test: a deadline on the test's context, not a wait.
const browserTimeout = 3 * time.Minute

// waitTimeout bounds each wait for the page to show something.
const waitTimeout = 45 * time.Second

// chromiumPath finds the browser test.sh makes sure of (chromium.sh). A machine without one
// fails the test: the dashboard is never left untested for want of a browser.
func chromiumPath(t testing.TB) string {
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(b); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium or Chrome on PATH: run rest/web/browsertest/chromium.sh (test.sh does)")
	return ""
}

// browser starts a headless Chromium for the test and returns a context of its first tab; the
// browser is closed, and its goroutines ended, at cleanup.
func browser(t testing.TB) context.Context {
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // containers run the test as root, where Chromium's sandbox refuses
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 1000),
		chromedp.UserDataDir(t.TempDir()),
	)
	ctx, cancelTimeout := context.WithTimeout(context.Background(), browserTimeout)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
		cancelTimeout()
	})
	require.NoError(t, chromedp.Do(bctx)) // starts the browser
	return bctx
}

// tickingSource emits a record every 5 ms until it is canceled, counting them in the accumulator
// "records": the job runs until it is canceled, and its tasks are in Emit or Next often enough
// to take a savepoint's barrier.
func tickingSource(ctx context.Context, env taskexecutor.Environment) error {
	c, err := env.AccumulatorRegistry().LongCounter("records")
	if err != nil {
		return err
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for i := int64(0); ; i++ {
		if err := env.Output(0).Emit(ctx, 0, i); err != nil {
			return err
		}
		c.Add(1)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// forward passes every record on to subpartition 0 of its output.
func forward(ctx context.Context, env taskexecutor.Environment) error {
	for {
		r, err := env.Input(0).Next(ctx)
		if err != nil {
			return err
		}
		if err := env.Output(0).Emit(ctx, 0, r); err != nil {
			return err
		}
	}
}

// discard reads until canceled.
func discard(ctx context.Context, env taskexecutor.Environment) error {
	for {
		if _, err := env.Input(0).Next(ctx); err != nil {
			return err
		}
	}
}

func registry() *taskexecutor.Registry {
	reg := taskexecutor.NewRegistry()
	reg.Register("source", tickingSource)
	reg.Register("forward", forward)
	reg.Register("discard", discard)
	reg.Register("fail", func(context.Context, taskexecutor.Environment) error { return errors.New("boom") })
	return reg
}

func startCluster(t testing.TB, cfg minicluster.Config) *minicluster.MiniCluster {
	cfg.Registry = registry()
	mc, err := minicluster.New(cfg)
	require.NoError(t, err)
	require.NoError(t, mc.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, mc.Close()) })
	return mc
}

// serve serves package rest's handler (the REST API and, at / and /web/, the dashboard) over mc
// on 127.0.0.1, as a host program mounts it.
func serve(t testing.TB, mc *minicluster.MiniCluster) string {
	h, err := rest.New(rest.Config{Dispatcher: mc, Cluster: mc})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		require.NoError(t, h.Close())
	})
	return srv.URL
}

type vertexDOM struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"`
	Parallelism string `json:"parallelism"`
}

const readVertices = `[...document.querySelectorAll('#job-graph g.vertex')].map(g => ({
	id: g.dataset.vertexId, name: g.querySelector('.vname').textContent,
	status: g.dataset.status, parallelism: g.dataset.parallelism}))`

type edgeDOM struct {
	Source, Target, ShipStrategy, Label string
}

const readEdges = `[...document.querySelectorAll('#job-graph g.edge')].map(g => ({
	Source: g.dataset.source, Target: g.dataset.target, ShipStrategy: g.dataset.shipStrategy,
	Label: (g.querySelector('text') || {}).textContent || ''}))`

// TestDashboardShowsARunningJobAndCancelsIt is issue 14's browser scenario, on package rest's
// handler over a MiniCluster (2 TaskExecutors × 2 slots) running a streaming job (source → map →
// sink, until canceled). In headless Chromium: the overview shows 2 TaskExecutors (their IDs), 2
// of 4 slots free and the job RUNNING in the job list, whose link opens the job's page; the graph
// has each vertex's name, parallelism and RUNNING state, the edges with their ship strategies,
// left to right; the subtask table shows each subtask RUNNING, attempt 0, on one of the cluster's
// TaskExecutors, for the first vertex and, after a click on its box, for the map; the sources'
// accumulator shows; Savepoint with a typed directory completes with a savepoint directory
// holding _metadata; Cancel ends the job CANCELED, in the page (job and every vertex, the button
// disabled) and in the cluster. With JOBGRAPH_SCREENSHOT=1 it writes docs/dashboard.png of the
// running job.
func TestDashboardShowsARunningJobAndCancelsIt(t *testing.T) {
	mc := startCluster(t, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 2, HeartbeatInterval: 200 * time.Millisecond})
	g := jobgraph.New("dashboard-demo", jobgraph.Streaming)
	src := g.AddVertex("Source: numbers", "source", 2)
	mapper := g.AddVertex("Map: forward", "forward", 2)
	sink := g.AddVertex("Sink: discard", "discard", 1)
	g.Connect(src, mapper, jobgraph.Pointwise, jobgraph.PipelinedBounded).ShipStrategy = "FORWARD"
	g.Connect(mapper, sink, jobgraph.AllToAll, jobgraph.PipelinedBounded).ShipStrategy = "HASH"
	require.NoError(t, mc.SubmitJob(context.Background(), g))
	base := serve(t, mc)
	ctx := browser(t)

	want := []vertexDOM{
		{src.ID.String(), "Source: numbers", "RUNNING", "2"},
		{mapper.ID.String(), "Map: forward", "RUNNING", "2"},
		{sink.ID.String(), "Sink: discard", "RUNNING", "1"},
	}
	var tes []string
	for _, te := range mc.TaskExecutors() {
		tes = append(tes, te.ResourceID().String())
	}
	slices.Sort(tes)

	// The overview: 2 TaskExecutors, 4 slots of which the job (slot sharing: its largest
	// parallelism, 2) holds 2, one running job, listed RUNNING and linking to its page.
	waitFor(t, ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`#jobs tr[data-job-id="%s"][data-status="RUNNING"]`, g.JobID))),
		chromedp.WaitReady(chromedp.CSS(`#ov-slots[data-slots-available="2"][data-slots-total="4"]`)),
	)
	type overviewDOM struct {
		TaskManagers, JobsRunning, JobsFinished, JobsCanceled, JobsFailed string
		TaskManagerIDs                                                    []string
		JobName, JobLink                                                  string
	}
	assert.Equal(t, overviewDOM{"2", "1", "0", "0", "0", tes, "dashboard-demo", "#/jobs/" + g.JobID.String()},
		eval[overviewDOM](t, ctx, `({TaskManagers: document.getElementById('ov-taskmanagers').dataset.value,
			JobsRunning: document.getElementById('ov-jobs-running').dataset.value,
			JobsFinished: document.getElementById('ov-jobs-finished').dataset.value,
			JobsCanceled: document.getElementById('ov-jobs-cancelled').dataset.value,
			JobsFailed: document.getElementById('ov-jobs-failed').dataset.value,
			TaskManagerIDs: [...document.querySelectorAll('#taskmanagers tbody tr')].map(r => r.dataset.taskmanagerId).sort(),
			JobName: document.querySelector('#jobs tbody tr a.job-link').textContent,
			JobLink: document.querySelector('#jobs tbody tr a.job-link').getAttribute('href')})`))

	// The job's page, reached through the job list's link.
	waits := []chromedp.Action[chromedp.Void]{chromedp.Click(chromedp.CSS(`#jobs a.job-link`))}
	for _, v := range want {
		waits = append(waits, chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`#job-graph g.vertex[data-vertex-id="%s"][data-status="RUNNING"]`, v.ID))))
	}
	waits = append(waits, chromedp.WaitReady(chromedp.CSS(`#subtasks tbody tr[data-subtask="1"][data-status="RUNNING"]`)))
	waitFor(t, ctx, waits...)

	vertices := eval[[]vertexDOM](t, ctx, readVertices)
	edges := eval[[]edgeDOM](t, ctx, readEdges)
	// Left to right in topological order: each vertex's column is its longest path from a source.
	xs := eval[[]float64](t, ctx, `[...document.querySelectorAll('#job-graph g.vertex')].map(g => g.getBoundingClientRect().x)`)
	assert.Equal(t, want, vertices)
	assert.Equal(t, []edgeDOM{
		{src.ID.String(), mapper.ID.String(), "FORWARD", "FORWARD"},
		{mapper.ID.String(), sink.ID.String(), "HASH", "HASH"},
	}, edges)
	require.Len(t, xs, 3)
	assert.Less(t, xs[0], xs[1])
	assert.Less(t, xs[1], xs[2])

	// The subtask table of the selected (first) vertex: both subtasks RUNNING, attempt 0, each
	// on one of the cluster's TaskExecutors.
	rows := eval[[][]string](t, ctx, `[...document.querySelectorAll('#subtasks tbody tr')].map(r => [r.dataset.subtask, r.dataset.status, r.dataset.attempt, r.querySelector('td.taskmanager').textContent])`)
	require.Len(t, rows, 2)
	for i, r := range rows {
		assert.Equal(t, []string{fmt.Sprint(i), "RUNNING", "0"}, r[:3])
		assert.Contains(t, tes, r[3], "subtask %d's TaskExecutor", i)
	}

	// The Map's subtasks, by clicking its box in the graph.
	waitFor(t, ctx,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#job-graph g.vertex[data-vertex-id="%s"] rect.box`, mapper.ID))),
		chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`#subtasks[data-vertex-id="%s"] tbody tr[data-subtask="1"][data-status="RUNNING"]`, mapper.ID))),
	)
	assert.Equal(t, "#/jobs/"+g.JobID.String()+"/vertices/"+mapper.ID.String(), eval[string](t, ctx, `location.hash`))

	// The accumulator the sources count into, as a LongCounter.
	waitFor(t, ctx, chromedp.WaitReady(chromedp.CSS(`#accumulators tr[data-accumulator="records"]`)))
	acc := eval[[]string](t, ctx, `[...document.querySelectorAll('#accumulators tr[data-accumulator="records"] td')].map(td => td.textContent)`)
	require.Len(t, acc, 3)
	assert.Equal(t, []string{"records", "LongCounter"}, acc[:2])
	assert.Regexp(t, `^[1-9][0-9]*$`, acc[2])

	// A savepoint into a directory typed into the page: COMPLETED with its location, a
	// savepoint directory Flink's way named, which holds its _metadata.
	dir := t.TempDir()
	waitFor(t, ctx,
		chromedp.SendKeys(chromedp.CSS(`#savepoint-dir`), dir),
		chromedp.Click(chromedp.CSS(`#savepoint-job`)),
		chromedp.WaitReady(chromedp.CSS(`#savepoint-result[data-status="COMPLETED"]`)),
	)
	result := eval[string](t, ctx, `document.getElementById('savepoint-result').textContent`)
	prefix := "savepoint completed: " + filepath.Join(dir, "savepoint-"+g.JobID.String()[:6]+"-")
	require.True(t, strings.HasPrefix(result, prefix), "%q does not start with %q", result, prefix)
	_, err := os.Stat(filepath.Join(strings.TrimPrefix(result, "savepoint completed: "), "_metadata"))
	assert.NoError(t, err)

	// The savepoint in the page's checkpoint history, COMPLETED, with its location.
	waitFor(t, ctx, chromedp.WaitReady(chromedp.CSS(`#checkpoint-counts[data-completed="1"]`)))
	cps := eval[[][]string](t, ctx, `[...document.querySelectorAll('#checkpoints tbody tr')].map(r => [r.dataset.status, ...[...r.querySelectorAll('td')].map(td => td.textContent)])`)
	require.Len(t, cps, 1)
	require.Len(t, cps[0], 9)
	assert.Equal(t, []string{"COMPLETED", "SAVEPOINT"}, []string{cps[0][0], cps[0][3]})
	assert.Equal(t, strings.TrimPrefix(result, "savepoint completed: "), cps[0][8])

	if os.Getenv("JOBGRAPH_SCREENSHOT") == "1" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		path := filepath.Join("..", "..", "..", "docs", "dashboard.png")
		require.NoError(t, os.WriteFile(path, png, 0o644))
		t.Logf("wrote %s (%d bytes)", path, len(png))
	}

	waitFor(t, ctx,
		chromedp.Click(chromedp.CSS(`#cancel-job`)),
		chromedp.WaitReady(chromedp.CSS(`#job-state[data-status="CANCELED"]`)),
	)
	state, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#job-state`)))
	require.NoError(t, err)
	assert.Equal(t, "CANCELED", state)
	res, err := mc.RequestJobResult(context.Background(), g.JobID)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	vertices = eval[[]vertexDOM](t, ctx, readVertices)
	for _, v := range vertices {
		assert.Equal(t, "CANCELED", v.Status, "vertex %s", v.Name)
	}
	assert.True(t, eval[bool](t, ctx, `document.getElementById('cancel-job').disabled`), "Cancel stays enabled on a canceled job")
}

// waitFor runs the steps, each query waiting until its element is in the DOM, within waitTimeout
// (a deadline, not a sleep); when they do not complete it fails the test with the page's text
// and error banner.
func waitFor(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	if err := chromedp.Do(wctx, steps...); err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('error').textContent + '\n' + document.getElementById('app').outerHTML.slice(0, 20000)`))
		t.Fatalf("%v; the page:\n%s", err, page)
	}
}

// eval evaluates a JavaScript expression in the page and returns its value.
func eval[T any](t testing.TB, ctx context.Context, js string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, opts...))
	require.NoError(t, err, "evaluating %s", js)
	return v
}

// A job whose only task fails (no restart): its page shows it FAILED, the vertex FAILED, and the
// exception history's one entry naming the task and the task's error; "No checkpoints yet."
func TestDashboardShowsAFailedJobsException(t *testing.T) {
	mc := startCluster(t, minicluster.Config{})
	g := jobgraph.New("failing", jobgraph.Streaming)
	v := g.AddVertex("Fail: boom", "fail", 1)
	g.RestartStrategy = jobgraph.NoRestart()
	res, err := mc.Run(context.Background(), g)
	require.NoError(t, err)
	require.Equal(t, jobgraph.JobStatusFailed, res.Status)
	base := serve(t, mc)
	ctx := browser(t)

	waitFor(t, ctx,
		chromedp.Navigate(base+"/#/jobs/"+g.JobID.String()),
		chromedp.WaitReady(chromedp.CSS(`#job-state[data-status="FAILED"]`)),
		chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`#job-graph g.vertex[data-vertex-id="%s"][data-status="FAILED"]`, v.ID))),
		chromedp.WaitReady(chromedp.CSS(`#exceptions[data-count="1"] tr.exception`)),
		chromedp.WaitReady(chromedp.CSS(`#checkpoints-box p.empty`)),
	)
	exc := eval[[]string](t, ctx, `[...document.querySelectorAll('#exceptions tr.exception td')].map(td => td.textContent)`)
	require.Len(t, exc, 4)
	assert.Equal(t, "Fail: boom (1/1)", exc[1])
	assert.Contains(t, exc[3], "boom")
	assert.Equal(t, "No checkpoints yet.", eval[string](t, ctx, `document.querySelector('#checkpoints-box p.empty').textContent`))
}
