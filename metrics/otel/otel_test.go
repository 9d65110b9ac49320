package otel_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/metrics"
	jgotel "github.com/jobgraph/jobgraph/metrics/otel"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// serveProm bridges reg to a MeterProvider whose reader is the Prometheus exporter, serves it on
// 127.0.0.1 at a random port, and returns its URL.
func serveProm(t *testing.T, reg *metrics.Registry) string {
	t.Helper()
	promReg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(promReg))
	require.NoError(t, err)
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { require.NoError(t, provider.Shutdown(context.Background())) })
	bridge, err := jgotel.New(reg, provider.Meter("github.com/jobgraph/jobgraph/metrics/otel"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, bridge.Close()) })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		<-done
	})
	return "http://" + ln.Addr().String() + "/metrics"
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

var sample = regexp.MustCompile(`^([A-Za-z_:][A-Za-z0-9_:]*)\{(.*)\} (\S+)$`)
var label = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// samples returns the value of every sample of metric name in a Prometheus text exposition, with
// its labels.
func samples(text, name string) []map[string]string {
	var out []map[string]string
	for _, line := range strings.Split(text, "\n") {
		m := sample.FindStringSubmatch(line)
		if m == nil || m[1] != name {
			continue
		}
		labels := map[string]string{"": m[3]}
		for _, l := range label.FindAllStringSubmatch(m[2], -1) {
			labels[l[1]] = l[2]
		}
		out = append(out, labels)
	}
	return out
}

// A MiniCluster runs a job whose task fails once and restarts; the Prometheus endpoint, scraped
// over HTTP once the second attempt runs, shows the job's numRestarts at 1 with its job ID and
// name as labels, and the cluster's gauges.
func TestPrometheusScrapeShowsNumRestartsAfterARestart(t *testing.T) {
	started := make(chan struct{})
	reg := taskexecutor.NewRegistry()
	reg.Register("fail-once", func(ctx context.Context, env taskexecutor.Environment) error {
		if env.Info().AttemptNumber == 0 {
			return errors.New("first attempt fails")
		}
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	mc, err := minicluster.New(minicluster.Config{Registry: reg})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, mc.Start(ctx))
	defer func() { require.NoError(t, mc.Close()) }()
	url := serveProm(t, mc.Metrics())

	g := jobgraph.New("restarts-once", jobgraph.Streaming)
	g.AddVertex("task", "fail-once", 1)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Millisecond)
	require.NoError(t, mc.SubmitJob(ctx, g))
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the second attempt did not start within a minute")
	}

	text := scrape(t, url)
	var found []map[string]string
	for _, s := range samples(text, "numRestarts") {
		if s["job_id"] == g.JobID.String() {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "one numRestarts sample for the job in:\n%s", text)
	assert.Equal(t, "1", found[0][""])
	assert.Equal(t, "restarts-once", found[0]["job_name"])
	assert.Equal(t, "jobmanager.job", found[0]["scope"])

	tms := samples(text, "numRegisteredTaskManagers")
	require.Len(t, tms, 1, "%s", text)
	assert.Equal(t, "1", tms[0][""])
	assert.Equal(t, "jobmanager", tms[0]["scope"])
	running := samples(text, "numRunningJobs")
	require.Len(t, running, 1)
	assert.Equal(t, "1", running[0][""])

	require.NoError(t, mc.CancelJob(ctx, g.JobID))
	_, err = mc.RequestJobResult(ctx, g.JobID)
	require.NoError(t, err)
}

// Metrics of names the runtime does not register get instruments at Sync; counters, float gauges
// and histograms keep their kinds and values.
func TestSyncExportsNewNamesWithTheirKinds(t *testing.T) {
	reg := metrics.NewRegistry()
	defer reg.Close()
	url := serveProm(t, reg)
	g := reg.JobManagerGroup()
	defer g.Close()
	g.Counter("customEvents").Add(7)
	g.FloatGauge("customRatio", func() float64 { return 0.25 })
	h := g.Histogram("customLatency", 10)
	for i := int64(1); i <= 4; i++ {
		h.Update(i)
	}
	assert.Empty(t, samples(scrape(t, url), "customRatio"), "no instrument before Sync")
	// The bridge in serveProm is not reachable here: a second bridge over the same registry
	// would double the samples, so Sync goes through a fresh provider.
	promReg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(promReg))
	require.NoError(t, err)
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer func() { require.NoError(t, provider.Shutdown(context.Background())) }()
	b, err := jgotel.New(reg, provider.Meter("test"))
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	g.Gauge("customLate", func() int64 { return 3 })
	require.NoError(t, b.Sync())
	require.NoError(t, b.Sync(), "nothing new: a no-op")

	mfs, err := promReg.Gather()
	require.NoError(t, err)
	got := map[string]string{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetGauge() != nil:
				got[mf.GetName()] = strconv.FormatFloat(m.GetGauge().GetValue(), 'f', -1, 64)
			case m.GetCounter() != nil:
				got[mf.GetName()] = strconv.FormatFloat(m.GetCounter().GetValue(), 'f', -1, 64)
			}
		}
	}
	assert.Equal(t, "7", got["customEvents"], "an UpDownCounter is exported as a gauge: %v", got)
	assert.Equal(t, "0.25", got["customRatio"])
	assert.Equal(t, "3", got["customLate"])
	assert.Equal(t, "1", got["customLatency_min"])
	assert.Equal(t, "4", got["customLatency_max"])
	assert.Equal(t, "2.5", got["customLatency_mean"])
	assert.Equal(t, "2.5", got["customLatency_median"])
	require.NoError(t, b.Close())
	assert.ErrorIs(t, b.Sync(), jgotel.ErrClosed)
}
