package grpctransport_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
	"github.com/jobgraph/jobgraph/transport/grpc/internal/pb"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
	pool *x509.CertPool
}

var serial struct {
	mu sync.Mutex
	n  int64
}

func nextSerial() *big.Int {
	serial.mu.Lock()
	defer serial.mu.Unlock()
	serial.n++
	return big.NewInt(serial.n)
}

func newCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pool: pool}
}

// issue makes a certificate for 127.0.0.1 that serves as server and client certificate, with its
// PEM forms.
func (ca *testCA) issue(t testing.TB, name string) (tls.Certificate, []byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: nextSerial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	return pair, certPEM, keyPEM
}

// tlsServer serves a recording JobMaster on a Service with mutual TLS whose keystore and
// truststore are PEM files signed by ca.
func tlsServer(t *testing.T, ca *testCA) (*grpctransport.Service, *fakeJobMaster) {
	t.Helper()
	dir := t.TempDir()
	_, certPEM, keyPEM := ca.issue(t, "jobmanager")
	files := map[string][]byte{"cert.pem": certPEM, "key.pem": keyPEM, "ca.pem": ca.pem}
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	s := newService(t, grpctransport.Options{TLS: &grpctransport.TLSOptions{Enabled: true,
		KeystoreCertFile: filepath.Join(dir, "cert.pem"), KeystoreKeyFile: filepath.Join(dir, "key.pem"), TruststoreFile: filepath.Join(dir, "ca.pem")}})
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	f := &fakeJobMaster{}
	require.NoError(t, s.Register("jobmaster", f))
	return s, f
}

// Two Services with certificates of the cluster CA talk over mutual TLS; a peer presenting no
// certificate, one whose certificate another CA signed, and one speaking plaintext are refused
// in the handshake: their lookups and calls fail and nothing reaches the endpoint.
func TestMutualTLS(t *testing.T) {
	cluster, other := newCA(t, "cluster CA"), newCA(t, "another CA")
	server, f := tlsServer(t, cluster)
	addr := server.Address("jobmaster")

	t.Run("ClusterCertificateIsServed", func(t *testing.T) {
		cert, _, _ := cluster.issue(t, "taskexecutor")
		client := newService(t, grpctransport.Options{TLS: &grpctransport.TLSOptions{Enabled: true, Certificate: cert, CAs: cluster.pool}})
		defer client.Close()
		gw, err := rpc.Connect[rpc.JobMasterGateway](t.Context(), client, addr)
		require.NoError(t, err)
		require.NoError(t, gw.HeartbeatFromResourceManager(t.Context(), "rm-1"))
		assert.Equal(t, call{"HeartbeatFromResourceManager", []any{jobgraph.ResourceID("rm-1")}}, f.last(t))
	})
	f.mu.Lock()
	served := len(f.calls)
	f.mu.Unlock()
	require.Equal(t, 1, served)

	t.Run("CertificateOfAnotherCA", func(t *testing.T) {
		cert, _, _ := other.issue(t, "intruder")
		// It trusts the cluster CA, so only the server's check of its certificate can refuse it.
		client := newService(t, grpctransport.Options{TLS: &grpctransport.TLSOptions{Enabled: true, Certificate: cert, CAs: cluster.pool}})
		defer client.Close()
		_, err := client.Lookup(t.Context(), addr)
		require.Error(t, err, "the handshake fails (Go's client offers no certificate of a CA the server does not name)")
		assert.NotErrorIs(t, err, rpc.ErrUnknownAddress, "the address was never asked about")
	})
	t.Run("CertificateOfAnotherCAPresentedAnyway", func(t *testing.T) {
		// Go's TLS client offers no certificate the server's CA list does not name (above); this
		// one presents its certificate of the other CA all the same, for the server to refuse.
		cert, _, _ := other.issue(t, "intruder")
		cc, err := grpc.NewClient("passthrough:///"+server.HostPort(), grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
			RootCAs: cluster.pool, MinVersion: tls.VersionTLS12,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }})))
		require.NoError(t, err)
		defer cc.Close()
		ctx := metadata.AppendToOutgoingContext(t.Context(), "jobgraph-endpoint", "jobmaster")
		_, err = pb.NewJobMasterClient(cc).HeartbeatFromResourceManager(ctx, &pb.HeartbeatFromResourceManagerRequest{ResourceManager: "rm-1"})
		require.Error(t, err, "the server refuses the certificate (the client trusts the server's: only the server can fail the handshake)")
	})
	t.Run("NoCertificate", func(t *testing.T) {
		cc, err := grpc.NewClient("passthrough:///"+server.HostPort(),
			grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: cluster.pool, MinVersion: tls.VersionTLS12})))
		require.NoError(t, err)
		defer cc.Close()
		ctx := metadata.AppendToOutgoingContext(t.Context(), "jobgraph-endpoint", "jobmaster")
		_, err = pb.NewEndpointClient(cc).Describe(ctx, &pb.DescribeRequest{Name: "jobmaster"})
		require.Error(t, err, "refused without a client certificate")
		_, err = pb.NewJobMasterClient(cc).HeartbeatFromResourceManager(ctx, &pb.HeartbeatFromResourceManagerRequest{ResourceManager: "rm-1"})
		require.Error(t, err)
	})
	t.Run("Plaintext", func(t *testing.T) {
		cc, err := grpc.NewClient("passthrough:///"+server.HostPort(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer cc.Close()
		ctx := metadata.AppendToOutgoingContext(t.Context(), "jobgraph-endpoint", "jobmaster")
		_, err = pb.NewJobMasterClient(cc).HeartbeatFromResourceManager(ctx, &pb.HeartbeatFromResourceManagerRequest{ResourceManager: "rm-1"})
		require.Error(t, err)
	})
	t.Run("ServerOfAnotherCA", func(t *testing.T) {
		// A cluster member does not talk to a server whose certificate the cluster CA did not sign.
		rogue, rf := tlsServer(t, other)
		cert, _, _ := cluster.issue(t, "taskexecutor")
		client := newService(t, grpctransport.Options{TLS: &grpctransport.TLSOptions{Enabled: true, Certificate: cert, CAs: cluster.pool}})
		defer client.Close()
		_, err := client.Lookup(t.Context(), rogue.Address("jobmaster"))
		require.Error(t, err)
		rf.mu.Lock()
		assert.Empty(t, rf.calls)
		rf.mu.Unlock()
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Len(t, f.calls, served, "no call of a refused peer reached the endpoint")
}

// TLS options that cannot work are refused by New with an error naming what is missing.
func TestTLSOptionsRefused(t *testing.T) {
	cert, _, _ := newCA(t, "cluster CA").issue(t, "jobmanager")
	for name, tc := range map[string]struct {
		opts *grpctransport.TLSOptions
		want string
	}{
		"NoCertificate":     {&grpctransport.TLSOptions{Enabled: true, TruststoreFile: "ca.pem"}, "no certificate is configured"},
		"KeystoreMissing":   {&grpctransport.TLSOptions{Enabled: true, KeystoreCertFile: "missing-cert.pem", KeystoreKeyFile: "missing-key.pem"}, "missing-cert.pem"},
		"NoTruststore":      {&grpctransport.TLSOptions{Enabled: true, Certificate: cert}, "no truststore is configured"},
		"TruststoreMissing": {&grpctransport.TLSOptions{Enabled: true, Certificate: cert, TruststoreFile: "missing-ca.pem"}, "missing-ca.pem"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := grpctransport.New(grpctransport.Options{TLS: tc.opts, Logger: quiet})
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// Without TLS a Service listens on loopback only: another address is refused, and the log says
// the listener is unauthenticated and loopback-only.
func TestWithoutTLSOnlyLoopback(t *testing.T) {
	_, err := grpctransport.New(grpctransport.Options{ListenAddress: "0.0.0.0:0", Logger: quiet})
	require.Error(t, err)
	assert.ErrorContains(t, err, "not a loopback address")

	var logs bytes.Buffer
	s, err := grpctransport.New(grpctransport.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer s.Close()
	host, _, err := net.SplitHostPort(s.HostPort())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host, "the default listener is 127.0.0.1")
	assert.Contains(t, logs.String(), "TLS is off (security.ssl.internal.enabled=false): listening on the loopback interface only")
	assert.Contains(t, logs.String(), "address="+s.HostPort())
}
