package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/examples/streaming/keyedsum"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rest"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// statusWaiter lets a test wait for a job status the MiniCluster reports.
type statusWaiter struct {
	mu      sync.Mutex
	reached map[jobgraph.JobID]map[jobgraph.JobStatus]chan struct{}
}

func (w *statusWaiter) ch(id jobgraph.JobID, s jobgraph.JobStatus) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reached == nil {
		w.reached = map[jobgraph.JobID]map[jobgraph.JobStatus]chan struct{}{}
	}
	if w.reached[id] == nil {
		w.reached[id] = map[jobgraph.JobStatus]chan struct{}{}
	}
	c, ok := w.reached[id][s]
	if !ok {
		c = make(chan struct{})
		w.reached[id][s] = c
	}
	return c
}

func (w *statusWaiter) record(id jobgraph.JobID, s jobgraph.JobStatus, _ time.Time) {
	c := w.ch(id, s)
	select {
	case <-c:
	default:
		close(c)
	}
}

// writeGraph writes the streaming example's job (endless unless records is small) to a file.
func writeGraph(t *testing.T, records int64) (string, *jobgraph.JobGraph) {
	t.Helper()
	g, err := keyedsum.BuildJob(keyedsum.JobOptions{Records: records, Keys: 10, Parallelism: 2, OutDir: t.TempDir(),
		CheckpointInterval: 50 * time.Millisecond, Rate: 2000})
	require.NoError(t, err)
	t.Cleanup(func() { keyedsum.ForgetPauses(g.JobID) })
	b, err := json.Marshal(g)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "graph.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path, g
}

// The CLI against the real REST handler (package rest) over a MiniCluster: run, list, info
// (the same plan as GET /jobs/:jobid/plan), savepoint, stop, cancel, attached run, and the
// server's errors with exit code 1.
func TestEndToEnd(t *testing.T) {
	var waiter statusWaiter
	reg := taskexecutor.NewRegistry()
	keyedsum.Register(reg)
	// A savepoint needs every task RUNNING, not only the job (Flink's CheckpointCoordinator
	// refuses one while a task is still INITIALIZING, and this test once saw that): allRunning is
	// closed when the first job's tasks (target, set before it is submitted) all run.
	var running, target atomic.Int64
	allRunning := make(chan struct{})
	onState := func(_ jobgraph.ExecutionAttemptID, state jobgraph.ExecutionState) {
		if state == jobgraph.ExecutionStateRunning && running.Add(1) == target.Load() {
			close(allRunning)
		}
	}
	mc, err := minicluster.Start(t.Context(), minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 1, Registry: reg,
		SavepointDirectory: filepath.Join(t.TempDir(), "default-savepoints"), JobStatusListener: waiter.record,
		ExecutionStateListener: onState})
	require.NoError(t, err)
	defer mc.Close()
	h, err := rest.New(rest.Config{Dispatcher: mc, Cluster: mc, NoDashboard: true})
	require.NoError(t, err)
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	// Local times in UTC; the rest of the CLI as run sets it up.
	cliRun := func(args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		c := &cli{stdout: &stdout, stderr: &stderr, loc: time.UTC, clientTimeout: time.Minute,
			pollInitial: 10 * time.Millisecond, pollMax: 100 * time.Millisecond}
		code := c.run(t.Context(), append([]string{args[0], "-m", srv.Listener.Addr().String()}, args[1:]...))
		return code, stdout.String(), stderr.String()
	}

	// run -d, then list once the job runs.
	file, g := writeGraph(t, 1<<40)
	id := g.JobID.String()
	var tasks int64
	for _, v := range g.Vertices {
		tasks += int64(v.Parallelism)
	}
	target.Store(tasks)
	code, stdout, stderr := cliRun("run", "-d", file)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "Job has been submitted with JobID "+id+"\n", stdout)
	<-waiter.ch(g.JobID, jobgraph.JobStatusRunning)
	<-allRunning

	code, stdout, stderr = cliRun("list")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, regexp.MustCompile(`^Waiting for response...\n`+
		`------------------ Running/Restarting Jobs -------------------\n`+
		`\d\d\.\d\d\.\d{4} \d\d:\d\d:\d\d : `+id+` : `+keyedsum.JobName+` \(RUNNING\)\n`+
		`--------------------------------------------------------------\n`+
		`No scheduled jobs.\n$`), stdout)
	// The time printed is the job's start-time of /jobs/overview.
	var overview struct {
		Jobs []struct {
			StartTime int64 `json:"start-time"`
		} `json:"jobs"`
	}
	getJSON(t, srv.URL+"/jobs/overview", &overview)
	require.Len(t, overview.Jobs, 1)
	assert.Contains(t, stdout, time.UnixMilli(overview.Jobs[0].StartTime).UTC().Format("02.01.2006 15:04:05")+" : "+id)

	// info prints what GET /jobs/:jobid/plan serves for the running job.
	code, stdout, stderr = cliRun("info", file)
	require.Equal(t, 0, code, stderr)
	var local, served struct {
		Plan json.RawMessage `json:"plan"`
	}
	local.Plan = json.RawMessage(strings.TrimSuffix(strings.TrimPrefix(stdout, "----------------------- Execution Plan -----------------------\n"), dashes))
	getJSON(t, srv.URL+"/jobs/"+id+"/plan", &served)
	assert.JSONEq(t, string(served.Plan), string(local.Plan))

	// savepoint into a directory, and into the cluster's default one: each path holds _metadata.
	dir := filepath.Join(t.TempDir(), "sp")
	for _, args := range [][]string{{"savepoint", id, dir}, {"savepoint", id}} {
		code, stdout, stderr = cliRun(args...)
		require.Equal(t, 0, code, stderr)
		m := regexp.MustCompile(`(?m)^Savepoint completed. Path: (.+)$`).FindStringSubmatch(stdout)
		require.Len(t, m, 2, stdout)
		assert.FileExists(t, filepath.Join(m[1], "_metadata"))
		if len(args) == 3 {
			assert.Equal(t, dir, filepath.Dir(m[1]))
		}
	}

	// A second job with the same ID is refused (409) and the first runs on.
	code, _, stderr = cliRun("run", "-d", file)
	assert.Equal(t, 1, code)
	assert.True(t, strings.HasPrefix(stderr, banner+"Failed to submit job "+id+".\nCaused by: POST /jobs: 409 Conflict: "), stderr)

	// stop with a savepoint: the job FINISHES, list -a shows it terminated.
	code, stdout, stderr = cliRun("stop", "--savepointPath", dir, id)
	require.Equal(t, 0, code, stderr)
	m := regexp.MustCompile(`^Suspending job "` + id + `" with a savepoint.\nSavepoint completed. Path: (.+)\n$`).FindStringSubmatch(stdout)
	require.Len(t, m, 2, stdout)
	assert.FileExists(t, filepath.Join(m[1], "_metadata"))
	<-waiter.ch(g.JobID, jobgraph.JobStatusFinished)
	code, stdout, _ = cliRun("list", "-a")
	require.Equal(t, 0, code)
	assert.Regexp(t, regexp.MustCompile(`No running jobs.\nNo scheduled jobs.\n`+
		`---------------------- Terminated Jobs -----------------------\n`+
		`\d\d\.\d\d\.\d{4} \d\d:\d\d:\d\d : `+id+` : `+keyedsum.JobName+` \(FINISHED\)\n`), stdout)

	// A savepoint of the finished job fails with the operation's failure-cause.
	code, _, stderr = cliRun("savepoint", id)
	assert.Equal(t, 1, code)
	assert.True(t, strings.HasPrefix(stderr, banner+"Failed to trigger a savepoint for the job "+id+".\nCaused by: "), stderr)

	// run a job restored from the stop's savepoint and cancel it.
	file2, g2 := writeGraph(t, 1<<40)
	code, _, stderr = cliRun("run", "-d", "-s", m[1], file2)
	require.Equal(t, 0, code, stderr)
	<-waiter.ch(g2.JobID, jobgraph.JobStatusRunning)
	code, stdout, stderr = cliRun("cancel", g2.JobID.String())
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "Cancelling job "+g2.JobID.String()+".\nCancelled job "+g2.JobID.String()+".\n", stdout)
	<-waiter.ch(g2.JobID, jobgraph.JobStatusCanceled)
	a, err := mc.RequestJob(t.Context(), g2.JobID)
	require.NoError(t, err)
	require.NotNil(t, a.CheckpointStatistics)
	assert.Equal(t, int64(1), a.CheckpointStatistics.Counts.Restored, "it started from the savepoint")

	// An unknown job: 404 and rest's errors.
	unknown := jobgraph.NewJobID().String()
	code, _, stderr = cliRun("cancel", unknown)
	assert.Equal(t, 1, code)
	assert.True(t, strings.HasPrefix(stderr, banner+"Could not cancel job "+unknown+".\nCaused by: PATCH /jobs/"+unknown+"?mode=cancel: 404 Not Found: "), stderr)

	// An attached run of a finite job waits for its end.
	file3, g3 := writeGraph(t, 200)
	code, stdout, stderr = cliRun("run", file3)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, regexp.MustCompile(`^Job has been submitted with JobID `+g3.JobID.String()+`\n`+
		`Program execution finished\nJob with JobID `+g3.JobID.String()+` has finished.\nJob Runtime: \d+ ms\n$`), stdout)
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.NoError(t, json.Unmarshal(body, out))
}

// certs writes a CA and, signed by it, a certificate for 127.0.0.1 (server) and one for a
// client, as PEM files in dir; it returns the file names.
func certs(t *testing.T, dir string) (ca, serverCert, serverKey, clientCert, clientKey string) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return path
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) (string, string) {
		k := newKey()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		require.NoError(t, err)
		kDER, err := x509.MarshalECPrivateKey(k)
		require.NoError(t, err)
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", kDER)
	}
	ca = write("ca.pem", "CERTIFICATE", caDER)
	serverCert, serverKey = leaf(2, "server", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	return
}

// The CLI against rest.Start over TLS that authenticates its clients
// (security.ssl.rest.authentication-enabled): --tls-ca with --tls-cert and --tls-key lists the
// jobs; without the client certificate the handshake fails and the CLI exits 1.
func TestEndToEndMutualTLS(t *testing.T) {
	ca, serverCert, serverKey, clientCert, clientKey := certs(t, t.TempDir())
	mc, err := minicluster.Start(t.Context(), minicluster.Config{TaskExecutors: 1, SlotsPerTaskExecutor: 1, Registry: taskexecutor.NewRegistry()})
	require.NoError(t, err)
	defer mc.Close()
	cert, err := tls.LoadX509KeyPair(serverCert, serverKey)
	require.NoError(t, err)
	caPEM, err := os.ReadFile(ca)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	srv, err := rest.Start(rest.Config{Dispatcher: mc, Cluster: mc, NoDashboard: true, Port: rest.AnyPort,
		Logger: slog.New(slog.DiscardHandler),
		TLS:    &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}})
	require.NoError(t, err)
	defer srv.Close()

	var stdout, stderr bytes.Buffer
	c := &cli{stdout: &stdout, stderr: &stderr, loc: time.UTC, clientTimeout: time.Minute}
	code := c.run(t.Context(), []string{"list", "-m", srv.Addr(), "--tls-ca", ca, "--tls-cert", clientCert, "--tls-key", clientKey})
	assert.Equal(t, 0, code, stderr.String())
	assert.Equal(t, "Waiting for response...\nNo running jobs.\nNo scheduled jobs.\n", stdout.String())

	stdout.Reset()
	stderr.Reset()
	code = c.run(t.Context(), []string{"list", "-m", srv.Addr(), "--tls-ca", ca})
	assert.Equal(t, 1, code)
	assert.True(t, strings.HasPrefix(stderr.String(), banner+"Failed to retrieve job list.\nCaused by: GET https://"+srv.Addr()+"/jobs/overview: "), stderr.String())
}
