package rest_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rest"
)

// selfSigned returns a TLS certificate for 127.0.0.1 signed by itself, and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jobgraph rest test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func waitRunning(t *testing.T, running <-chan jobgraph.JobID, id jobgraph.JobID) {
	t.Helper()
	for got := range running {
		if got == id {
			return
		}
	}
}

// Start listens on rest.bind-address 127.0.0.1 and a free port (AnyPort) over TLS
// (security.ssl.rest.enabled with a self-signed certificate): a client trusting the certificate
// reads a job's status, one that does not trust it is refused, plain HTTP gets no answer of the
// API; Close ends the server and its handler.
func TestServerOverTLS(t *testing.T) {
	running := make(chan jobgraph.JobID, 16)
	mc := startCluster(t, minicluster.Config{JobStatusListener: func(id jobgraph.JobID, s jobgraph.JobStatus, _ time.Time) {
		if s == jobgraph.JobStatusRunning {
			running <- id
		}
	}})
	cert, pool := selfSigned(t)
	srv, err := rest.Start(rest.Config{Dispatcher: mc, Cluster: mc, Port: rest.AnyPort,
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Close()) }()
	assert.True(t, strings.HasPrefix(srv.Addr(), "127.0.0.1:"), srv.Addr())
	assert.Equal(t, "https://"+srv.Addr(), srv.URL())

	g := blockJob("over tls")
	require.NoError(t, mc.SubmitJob(context.Background(), g))
	waitRunning(t, running, g.JobID)

	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer trusting.CloseIdleConnections()
	resp, err := trusting.Get(srv.URL() + "/v1/jobs/" + g.JobID.String() + "/status")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"status":"RUNNING"}`, string(body))
	assert.NotNil(t, resp.TLS)

	untrusting := &http.Client{Transport: &http.Transport{}}
	defer untrusting.CloseIdleConnections()
	_, err = untrusting.Get(srv.URL() + "/jobs")
	var unknown x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknown)

	plain := &http.Client{Transport: &http.Transport{}}
	defer plain.CloseIdleConnections()
	resp, err = plain.Get("http://" + srv.Addr() + "/jobs")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "Go's answer to plain HTTP on a TLS port")
	assert.NotContains(t, string(body), g.JobID.String())
}

// Without TLS the server speaks plain HTTP; a port out of range is refused; two servers cannot
// share a port.
func TestServerPlainAndItsConfig(t *testing.T) {
	mc := startCluster(t, minicluster.Config{})
	srv, err := rest.Start(rest.Config{Dispatcher: mc, Port: rest.AnyPort})
	require.NoError(t, err)
	assert.Equal(t, "http://"+srv.Addr(), srv.URL())
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL() + "/jobs")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.JSONEq(t, `{"jobs":[]}`, string(body))

	_, port, _ := net.SplitHostPort(srv.Addr())
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	_, err = rest.Start(rest.Config{Dispatcher: mc, Port: p})
	assert.ErrorContains(t, err, "rest: listen on rest.bind-address 127.0.0.1, rest.port "+port)
	require.NoError(t, srv.Close())
	require.NoError(t, srv.Close(), "Close twice")

	_, err = rest.Start(rest.Config{Dispatcher: mc, Port: 70000})
	assert.ErrorIs(t, err, rest.ErrInvalidConfig)
	_, err = rest.Start(rest.Config{Dispatcher: mc, Port: -2})
	assert.ErrorIs(t, err, rest.ErrInvalidConfig)
	_, err = rest.New(rest.Config{})
	assert.ErrorIs(t, err, rest.ErrInvalidConfig)
	_, err = rest.New(rest.Config{Dispatcher: mc, MaxContentLength: -1})
	assert.ErrorIs(t, err, rest.ErrInvalidConfig)
}

// The dashboard of package rest/web is served at / and /web/, the API beside it.
func TestDashboardIsMounted(t *testing.T) {
	mc := startCluster(t, minicluster.Config{})
	h := newHandler(t, rest.Config{Dispatcher: mc})
	rec := serve(h, httptestRequest(http.MethodGet, "/"))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Contains(t, rec.Header().Get("Content-Type"), "text/html")
	rec = serve(h, httptestRequest(http.MethodGet, "/web/dashboard.js"))
	assert.Equal(t, http.StatusOK, rec.Code)
	rec = serve(h, httptestRequest(http.MethodGet, "/jobs"))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"jobs":[]}`, rec.Body.String())
}

// rest.port defaults to 8081 (Flink's): with 127.0.0.1:8081 taken (by this test, or by whatever
// holds it already), Start with Port 0 fails naming that port rather than picking another.
func TestServerDefaultPortIs8081(t *testing.T) {
	assert.Equal(t, 8081, rest.DefaultPort)
	assert.Equal(t, "127.0.0.1", rest.DefaultBindAddress)
	if ln, err := net.Listen("tcp", "127.0.0.1:8081"); err == nil {
		defer ln.Close()
	}
	mc := startCluster(t, minicluster.Config{})
	srv, err := rest.Start(rest.Config{Dispatcher: mc})
	if err == nil {
		_ = srv.Close()
	}
	assert.ErrorContains(t, err, "rest: listen on rest.bind-address 127.0.0.1, rest.port 8081: ")
}
