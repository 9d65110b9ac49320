package netshuffle_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// testCA is a certificate authority made for one test (no key is ever committed).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) *testCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue returns a certificate for 127.0.0.1 usable by a server and a client.
func (ca *testCA) issue(t *testing.T, name string) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// With mutual TLS on the data server, a consumer with a certificate of the cluster's CA reads;
// one without a certificate and one with a certificate of another CA are refused before their
// stream reaches the partition (ErrPartitionLost on their side), which the next good reader of
// the same pipelined subpartition proves: it is not "already being read".
func TestMutualTLSRefusesConsumersWithoutTheClustersCertificate(t *testing.T) {
	ca, other := newTestCA(t, "cluster CA"), newTestCA(t, "another CA")
	producerEnv := newEnv(t, netshuffle.Config{ServerTLS: &tls.Config{MinVersion: tls.VersionTLS13,
		Certificates: []tls.Certificate{ca.issue(t, "producer")}, ClientCAs: ca.pool, ClientAuth: tls.RequireAndVerifyClientCert}})
	client := func(certs ...tls.Certificate) *netshuffle.Environment {
		return newEnv(t, netshuffle.Config{ClientTLS: &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: ca.pool, Certificates: certs}})
	}
	x := newExchange(t)
	id := x.partition(jobgraph.NewIntermediateDataSetID(), 0)
	w, sd := x.produce(producerEnv, "te-1", id, jobgraph.PipelinedBounded, netshuffle.CodecString, 1)

	intruder := other.issue(t, "intruder")
	// Go's TLS client offers no certificate of a CA the server does not name, so the second case
	// sends none; the third presents the other CA's certificate all the same, for the server's
	// verification to refuse.
	presentsAnyway := newEnv(t, netshuffle.Config{ClientTLS: &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: ca.pool,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &intruder, nil }}})
	for name, env := range map[string]*netshuffle.Environment{
		"no certificate":                                client(),
		"a certificate of another CA":                   client(intruder),
		"a certificate of another CA, presented anyway": presentsAnyway,
	} {
		got, err := readAll(t.Context(), x.read(env, jobgraph.PipelinedBounded, 0, sd))
		assert.Empty(t, got, name)
		assert.ErrorIs(t, err, taskexecutor.ErrPartitionLost, name)
	}

	r := x.read(client(ca.issue(t, "consumer")), jobgraph.PipelinedBounded, 0, sd)
	for _, s := range []string{"a", "b"} {
		require.NoError(t, w.Emit(t.Context(), 0, s))
	}
	require.NoError(t, w.Finish(t.Context()))
	got, err := readAll(t.Context(), r)
	assert.Equal(t, io.EOF, err)
	assert.Equal(t, []any{"a", "b"}, got)
}

// Without TLS the data server listens on loopback only: New refuses another address, and says
// which; with ServerTLS any interface is allowed.
func TestWithoutTLSOnlyLoopback(t *testing.T) {
	_, err := netshuffle.New(netshuffle.Config{ListenAddress: "0.0.0.0:0", Logger: quietLogger()})
	assert.EqualError(t, err, `netshuffle: ListenAddress "0.0.0.0:0" is not a loopback address and ServerTLS is nil: refusing to serve partitions unauthenticated beyond this machine`)
	_, err = netshuffle.New(netshuffle.Config{ListenAddress: "no-port", Logger: quietLogger()})
	assert.ErrorContains(t, err, `netshuffle: ListenAddress "no-port": `)
	assert.Contains(t, newEnv(t, netshuffle.Config{}).Addr(), "127.0.0.1:", "the default")
	assert.NotEmpty(t, newEnv(t, netshuffle.Config{ListenAddress: "localhost:0"}).Addr())
	ca := newTestCA(t, "cluster CA")
	env := newEnv(t, netshuffle.Config{ListenAddress: "0.0.0.0:0", ServerTLS: &tls.Config{MinVersion: tls.VersionTLS13,
		Certificates: []tls.Certificate{ca.issue(t, "producer")}}})
	assert.NotEmpty(t, env.Addr())
}
