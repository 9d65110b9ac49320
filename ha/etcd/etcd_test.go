package etcd

import (
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/jobgraph/jobgraph/ha"
)

// server is a real single-member etcd cluster for one test: 127.0.0.1, ports the OS picks, data
// in the test's temp directory, its logger silent. Closed when the test ends.
type server struct {
	etcd     *embed.Etcd
	endpoint string
}

func startServer(t testing.TB) *server {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.LogLevel = "error"
	// Port 0: the listeners get free ports; a single member never dials its peer URL.
	u := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{u}, []url.URL{u}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{u}, []url.URL{u}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	require.NoError(t, err)
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		require.NoError(t, err, "etcd failed before it was ready")
	case <-time.After(time.Minute):
		require.FailNow(t, "etcd was not ready within a minute")
	}
	return &server{etcd: e, endpoint: e.Clients[0].Addr().String()}
}

// client returns a new client of the server, closed when the test ends.
func (s *server) client(t testing.TB) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.endpoint}, Logger: zap.NewNop(), DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	return c
}

// newPrefix is a key prefix no other test uses, so tests can share a server.
func newPrefix() string { return "/test/" + uuid.NewString() }

// open returns Services over the server under prefix with their own client (closed by Close,
// which the caller arranges).
func (s *server) open(t testing.TB, prefix string) *Services {
	t.Helper()
	svc, err := New(Options{Endpoints: []string{s.endpoint}, Prefix: prefix, SessionTTL: 5 * time.Second})
	require.NoError(t, err)
	return svc
}

// holder is a contender that only records its grants and revocations.
type holder struct {
	events chan ha.SessionID // zero: revoked
	errs   chan error
}

func newHolder() *holder {
	return &holder{events: make(chan ha.SessionID, 64), errs: make(chan error, 64)}
}

func (h *holder) GrantLeadership(s ha.SessionID) { h.events <- s }
func (h *holder) RevokeLeadership()              { h.events <- ha.SessionID{} }
func (h *holder) HandleError(err error)          { h.errs <- err }

const wait = 20 * time.Second

func (h *holder) awaitGrant(t testing.TB) ha.SessionID {
	t.Helper()
	select {
	case s := <-h.events:
		require.NotEqual(t, ha.SessionID{}, s, "revoked where a grant was due")
		return s
	case <-time.After(wait):
		require.FailNow(t, "no grant")
	}
	panic("unreachable")
}

func (h *holder) awaitRevoke(t testing.TB) {
	t.Helper()
	select {
	case s := <-h.events:
		require.Equal(t, ha.SessionID{}, s, "granted %s where a revocation was due", s)
	case <-time.After(wait):
		require.FailNow(t, "no revocation")
	}
}

// lead starts a holder on svc's Dispatcher election and waits until it is granted: svc leads.
func lead(t testing.TB, svc *Services) (*holder, ha.SessionID) {
	t.Helper()
	h := newHolder()
	require.NoError(t, svc.DispatcherLeaderElection().Start(h))
	return h, h.awaitGrant(t)
}
