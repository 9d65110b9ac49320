package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/examples/streaming/keyedsum"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a bytes.Buffer safe for the writer goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The program on a free port: once it says the job runs, GET /jobs/overview lists the
// streaming job RUNNING, its numRestarts metric is 0 and GET / is the dashboard; the interrupt (ctx) cancels the job, and
// run returns nil once the job ended CANCELED and everything closed (goleak checks the rest).
func TestDashboardServesTheRunningJob(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out syncBuffer
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-out", t.TempDir()}, &out, func(addr string) { addrs <- addr })
	}()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("run returned before the job ran: %v\n%s", err, out.String())
	}

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	get := func(path string) (*http.Response, []byte) {
		t.Helper()
		resp, err := client.Get("http://" + addr + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, body
	}

	resp, body := get("/jobs/overview")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var overview struct {
		Jobs []struct {
			JID   string `json:"jid"`
			Name  string `json:"name"`
			State string `json:"state"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal(body, &overview))
	require.Len(t, overview.Jobs, 1)
	assert.Equal(t, keyedsum.JobName, overview.Jobs[0].Name)
	assert.Equal(t, "RUNNING", overview.Jobs[0].State)
	assert.Contains(t, out.String(), "dashboard: http://"+addr+"/  (job \""+keyedsum.JobName+"\" "+overview.Jobs[0].JID+"; Ctrl-C to stop)\n")

	// The job's metrics under Flink's names (the cluster's registry).
	resp, body = get("/jobs/" + overview.Jobs[0].JID + "/metrics?get=numRestarts")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.JSONEq(t, `[{"id":"numRestarts","value":"0"}]`, string(body))

	resp, body = get("/")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html"), resp.Header.Get("Content-Type"))
	assert.Contains(t, string(body), "<html")

	cancel()
	require.NoError(t, <-done)
	assert.Contains(t, out.String(), "dashboard: job "+overview.Jobs[0].JID+" ended CANCELED\n")
}

// Flags out of range are errors naming the flag.
func TestFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"-parallelism", "0"}, "-parallelism 0 is below 1"},
		{[]string{"-rate", "0"}, "-rate 0 is not a positive number of records per second"},
		{[]string{"-failure-interval", "-1s"}, "-failure-interval, -failures and -restart-delay must not be negative"},
		{[]string{"-checkpoint-interval", "0"}, "-checkpoint-interval must be positive: the sink commits its output on checkpoints"},
		{[]string{"-addr", "8081"}, `-addr "8081" is not host:port: address 8081: missing port in address`},
		{[]string{"extra"}, `unexpected arguments ["extra"]`},
	} {
		_, err := parseFlags(tt.args, io.Discard)
		assert.EqualError(t, err, tt.err, "%q", tt.args)
	}
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:8081", o.addr)
}

// A failure every -failure-interval: source subtask 0 fails in each of the first -failures
// attempts after its share of -rate for that long.
func TestFailurePlan(t *testing.T) {
	o, err := parseFlags([]string{"-rate", "200", "-parallelism", "2", "-failure-interval", "20s", "-failures", "3"}, io.Discard)
	require.NoError(t, err)
	jo := jobOptions(o, "/out")
	assert.Equal(t, []keyedsum.Failure{
		{Vertex: keyedsum.SourceVertex, Subtask: 0, Attempt: 0, AfterRecords: 2000},
		{Vertex: keyedsum.SourceVertex, Subtask: 0, Attempt: 1, AfterRecords: 2000},
		{Vertex: keyedsum.SourceVertex, Subtask: 0, Attempt: 2, AfterRecords: 2000},
	}, jo.Failures)
	g, err := keyedsum.BuildJob(jo)
	require.NoError(t, err)
	assert.Equal(t, jobgraph.FixedDelayRestart(math.MaxInt32, 2*time.Second), g.RestartStrategy)

	o.failureInterval = 0
	assert.Empty(t, jobOptions(o, "/out").Failures)
}
