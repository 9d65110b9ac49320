package rest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rest"
)

// BenchmarkRESTJobsOverview: GET /jobs/overview on a cluster with 1,000 archived (FINISHED) and
// 100 RUNNING jobs, the handler called directly (no network), one request at a time; it reports
// requests/s and the p99 latency of the requests measured.
func BenchmarkRESTJobsOverview(b *testing.B) {
	const archived, running = 1000, 100
	reg := registry()
	mc, err := minicluster.Start(context.Background(), minicluster.Config{TaskExecutors: 4, SlotsPerTaskExecutor: running / 4, Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer mc.Close()
	ctx := context.Background()
	for range archived {
		g := jobgraph.New("finished", jobgraph.Batch)
		g.AddVertex("v", "finish", 1)
		if res, err := mc.Run(ctx, g); err != nil || res.Status != jobgraph.JobStatusFinished {
			b.Fatal(res, err)
		}
	}
	for range running {
		if err := mc.SubmitJob(ctx, blockJob("running")); err != nil {
			b.Fatal(err)
		}
	}
	h, err := rest.New(rest.Config{Dispatcher: mc, Cluster: mc})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	get := func() time.Duration {
		start := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/jobs/overview", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		return time.Since(start)
	}
	get() // the archived jobs' details are computed once

	latencies := make([]time.Duration, 0, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		latencies = append(latencies, get())
	}
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(latencies)
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "requests/s")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-ms")
}
