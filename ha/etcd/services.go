package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/mainloop"
)

// DefaultPrefix is the key prefix of Options.Prefix "": "/jobgraph/" followed by Flink's
// high-availability.cluster-id default, "default".
const DefaultPrefix = "/jobgraph/default"

// DefaultSessionTTL is the lease TTL of Options.SessionTTL 0: how long the etcd lease behind a
// leadership outlives its process's last keep-alive, so how long the other clients wait after
// the leader's process died without closing its Services (the election's own timeout). 15 s is
// Flink's high-availability.kubernetes.leader-election.lease-duration default; Flink's
// ZooKeeper session timeout (high-availability.zookeeper.client.session-timeout) is 60 s. A
// Services that is closed, or whose last contender leaves, revokes its lease at once, so a
// graceful handover does not wait for it.
const DefaultSessionTTL = 15 * time.Second

// DefaultRequestTimeout bounds each etcd request made without a caller's context (Options.
// RequestTimeout 0): the checkpoint store's and counter's calls, the leader information writes,
// resigning on Close.
const DefaultRequestTimeout = 10 * time.Second

// maxTxnOps is how many operations one transaction of this package holds at most: etcd's
// --max-txn-ops default is 128, and the fence comparison counts apart.
const maxTxnOps = 100

// Options configures Services. Exactly one of Endpoints and Client is set.
type Options struct {
	// Endpoints are the etcd client URLs ("127.0.0.1:2379", "https://etcd-0:2379"); New makes a
	// client over them and Close closes it. Flink's equivalent is
	// high-availability.zookeeper.quorum.
	Endpoints []string
	// TLS, when not nil, is the client's TLS configuration (with Endpoints only; a given Client
	// brings its own).
	TLS *tls.Config
	// DialTimeout bounds establishing the client's first connection (with Endpoints only); 0
	// means 5 s.
	DialTimeout time.Duration
	// Logger is the made client's logger (with Endpoints only); nil means none (zap.NewNop).
	Logger *zap.Logger
	// Client is an existing client to use instead; Close leaves it open.
	Client *clientv3.Client
	// Prefix is the key prefix every key of this cluster lives under, without a trailing '/';
	// "" means DefaultPrefix. Clients that share a Prefix are one cluster (Flink's
	// high-availability.cluster-id); it must start with '/'.
	Prefix string
	// SessionTTL is the TTL of the lease each leadership campaign holds, in whole seconds (etcd
	// grants leases by the second); 0 means DefaultSessionTTL. Below 1 s, or not a whole number
	// of seconds, is an error.
	SessionTTL time.Duration
	// RequestTimeout bounds each request made without a caller's context; 0 means
	// DefaultRequestTimeout; negative is an error.
	RequestTimeout time.Duration
}

// Services is the ha.Services over an etcd cluster; see the package doc. Safe for concurrent
// use; Close it once.
type Services struct {
	client     *clientv3.Client
	ownsClient bool
	prefix     string
	ttl        int // seconds
	reqTimeout time.Duration

	// callbacks runs every contender and listener callback, one at a time, in the order caused.
	callbacks *mainloop.Loop
	// ctx lives until Close; the watcher and the writer run under it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	// contenders holds, per component, the elections started on it in the order they started;
	// the first of each is granted while the client leads. count is their total: the client
	// campaigns while it is > 0 (Flink's DefaultLeaderElectionService runs its driver while a
	// contender is registered).
	contenders map[string][]*election
	count      int
	starts     uint64 // elections started so far (election.seq)
	// term is the current leadership, nil while the client does not lead.
	term *term
	// stopAttempt ends the current campaign attempt or term (nil when none runs).
	stopAttempt context.CancelFunc
	leaderWake  chan struct{}
	leadDone    chan struct{} // closed when the leader goroutine returned
	// pending holds the leader information writes not yet made, the last one per key.
	pending map[string]infoWrite
	// taken holds the leader information keys the writer took a put of in the current term:
	// only those can exist, so only those need a delete.
	taken      map[string]bool
	writerWake chan struct{}
	// watch is the shared watch of the leader keys all retrievals follow.
	watch watchState
}

var _ ha.Services = (*Services)(nil)

// term is one leadership of this client: its election key's create revision fences every write
// made while it lasts.
type term struct {
	session ha.SessionID
	key     string
	rev     int64
	lease   clientv3.LeaseID
}

// New returns Services over the etcd cluster o names. It does not wait for the cluster: the
// client connects in the background (clientv3.New), and requests made before it is connected
// wait for it, each up to its context's deadline or RequestTimeout. Errors: both or neither of Endpoints and Client, a bad Prefix,
// SessionTTL or RequestTimeout (named in the error), clientv3.New's error.
func New(o Options) (*Services, error) {
	if (len(o.Endpoints) == 0) == (o.Client == nil) {
		return nil, errors.New("ha/etcd: set exactly one of Options.Endpoints and Options.Client")
	}
	prefix := o.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("ha/etcd: Options.Prefix %q must start with '/' and not end with one", prefix)
	}
	ttl := o.SessionTTL
	if ttl == 0 {
		ttl = DefaultSessionTTL
	}
	if ttl < time.Second || ttl%time.Second != 0 {
		return nil, fmt.Errorf("ha/etcd: Options.SessionTTL %v is not a whole number of seconds ≥ 1 s", o.SessionTTL)
	}
	reqTimeout := o.RequestTimeout
	if reqTimeout == 0 {
		reqTimeout = DefaultRequestTimeout
	}
	if reqTimeout < 0 {
		return nil, fmt.Errorf("ha/etcd: Options.RequestTimeout %v is negative", o.RequestTimeout)
	}
	client, owns := o.Client, false
	if client == nil {
		logger := o.Logger
		if logger == nil {
			logger = zap.NewNop()
		}
		dial := o.DialTimeout
		if dial == 0 {
			dial = 5 * time.Second
		}
		c, err := clientv3.New(clientv3.Config{Endpoints: o.Endpoints, TLS: o.TLS, DialTimeout: dial, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("ha/etcd: client for %v: %w", o.Endpoints, err)
		}
		client, owns = c, true
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Services{
		client: client, ownsClient: owns, prefix: prefix, ttl: int(ttl / time.Second), reqTimeout: reqTimeout,
		callbacks:  mainloop.New("ha-etcd-callbacks"),
		ctx:        ctx,
		cancel:     cancel,
		contenders: make(map[string][]*election),
		leaderWake: make(chan struct{}, 1),
		leadDone:   make(chan struct{}),
		pending:    make(map[string]infoWrite),
		taken:      make(map[string]bool),
		writerWake: make(chan struct{}, 1),
	}
	s.watch.init()
	s.wg.Add(1)
	go s.lead()
	go s.write()
	return s, nil
}

// Client returns the etcd client the Services use (the given one or the one New made).
func (s *Services) Client() *clientv3.Client { return s.client }

// Prefix returns the key prefix every key of the Services lives under.
func (s *Services) Prefix() string { return s.prefix }

// Keys of the Services, all below the prefix.
func (s *Services) electionPrefix() string          { return s.prefix + "/leader/election" }
func (s *Services) leaderPrefix() string            { return s.prefix + "/leader/" }
func (s *Services) infoPrefix() string              { return s.prefix + "/leader/info/" }
func (s *Services) infoKey(component string) string { return s.infoPrefix() + component }
func (s *Services) planPrefix() string              { return s.prefix + "/plans/" }
func (s *Services) resultPrefix() string            { return s.prefix + "/results/" }
func (s *Services) checkpointPrefix(job jobgraph.JobID) string {
	return s.prefix + "/checkpoints/" + job.String() + "/"
}
func (s *Services) counterKey(job jobgraph.JobID) string {
	return s.prefix + "/checkpoint-counter/" + job.String()
}

// Component names: the last part of their leader information key.
const (
	dispatcherComponent      = "dispatcher"
	resourceManagerComponent = "resourcemanager"
)

func jobMasterComponent(job jobgraph.JobID) string { return "jobmaster/" + job.String() }

// DispatcherLeaderElection returns a new handle on the cluster's Dispatcher election.
func (s *Services) DispatcherLeaderElection() ha.LeaderElection {
	return &election{s: s, component: dispatcherComponent}
}

// DispatcherLeaderRetrieval returns a new retrieval of the Dispatcher's leader.
func (s *Services) DispatcherLeaderRetrieval() ha.LeaderRetrieval {
	return &retrieval{s: s, component: dispatcherComponent}
}

// ResourceManagerLeaderElection returns a new handle on the ResourceManager's election.
func (s *Services) ResourceManagerLeaderElection() ha.LeaderElection {
	return &election{s: s, component: resourceManagerComponent}
}

// ResourceManagerLeaderRetrieval returns a new retrieval of the ResourceManager's leader.
func (s *Services) ResourceManagerLeaderRetrieval() ha.LeaderRetrieval {
	return &retrieval{s: s, component: resourceManagerComponent}
}

// JobMasterLeaderElection returns a new handle on job's JobMaster election.
func (s *Services) JobMasterLeaderElection(job jobgraph.JobID) ha.LeaderElection {
	return &election{s: s, component: jobMasterComponent(job)}
}

// JobMasterLeaderRetrieval returns a new retrieval of job's JobMaster leader.
func (s *Services) JobMasterLeaderRetrieval(job jobgraph.JobID) ha.LeaderRetrieval {
	return &retrieval{s: s, component: jobMasterComponent(job)}
}

// ExecutionPlanStore returns the plans under <prefix>/plans/.
func (s *Services) ExecutionPlanStore() ha.ExecutionPlanStore { return planStore{s} }

// JobResultStore returns the results under <prefix>/results/.
func (s *Services) JobResultStore() ha.JobResultStore { return resultStore{s} }

// CheckpointRecoveryFactory returns the factory of every job's checkpoint store and ID counter
// over etcd (CheckpointRecoveryFactory).
func (s *Services) CheckpointRecoveryFactory() checkpoint.CheckpointRecoveryFactory {
	return CheckpointRecoveryFactory{s: s}
}

// CleanupJobData deletes job's JobMaster leader information, fenced: a client that does not
// lead removes nothing, and gets an error wrapping ha.ErrNotLeader if there was something to
// remove (nil if there was not: removing nothing is not an error). Errors otherwise: ctx's or
// etcd's.
func (s *Services) CleanupJobData(ctx context.Context, job jobgraph.JobID) error {
	what := "cleanup of job " + job.String()
	key := s.infoKey(jobMasterComponent(job))
	t, notLeader := s.currentTerm(what)
	if notLeader != nil {
		resp, err := s.client.Get(ctx, key, clientv3.WithCountOnly())
		if err != nil {
			return fmt.Errorf("ha/etcd: %s: %w", what, err)
		}
		if resp.Count == 0 {
			return nil
		}
		return notLeader
	}
	resp, err := s.client.Txn(ctx).If(fenceOf(t)).Then(clientv3.OpDelete(key)).
		Else(clientv3.OpGet(key, clientv3.WithCountOnly())).Commit()
	if err != nil {
		return fmt.Errorf("ha/etcd: %s: %w", what, err)
	}
	if !resp.Succeeded && resp.Responses[0].GetResponseRange().Count > 0 {
		return errNotLeader(what)
	}
	return nil
}

// Close ends the client's leadership (every granted contender is revoked; the lease is revoked
// so another client may lead at once), stops its watches, delivers the callbacks already caused,
// and closes the client New made. The stored data stays. With etcd unreachable it waits at most
// 2 × RequestTimeout (resigning, revoking the lease; the lease then expires after SessionTTL).
// Calls after Close fail; Close twice returns nil.
func (s *Services) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.endTermLocked()
	if s.stopAttempt != nil {
		s.stopAttempt()
		s.stopAttempt = nil
	}
	s.mu.Unlock()
	poke(s.leaderWake)
	// The leader goroutine resigns and revokes its lease before the context of the others ends.
	<-s.leadDone
	s.cancel()
	s.wg.Wait()
	s.callbacks.Close()
	if s.ownsClient {
		return s.client.Close()
	}
	return nil
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// errNotLeader is the error of a write refused by the fence.
func errNotLeader(what string) error {
	return fmt.Errorf("ha/etcd: %s: %w", what, ha.ErrNotLeader)
}

// errClosed is the error of a call after Close.
var errClosed = errors.New("ha/etcd: services closed")

// currentTerm returns the term writes are fenced by now: an error wrapping ha.ErrNotLeader when
// the client does not lead.
func (s *Services) currentTerm(what string) (*term, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("ha/etcd: %s: %w (%w)", what, ha.ErrNotLeader, errClosed)
	}
	if s.term == nil {
		return nil, errNotLeader(what)
	}
	return s.term, nil
}

func fenceOf(t *term) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(t.key), "=", t.rev)
}

// fencedTxn commits If(fence, cmps...) Then(ops...) Else(Get(leader key), elseOps...) in one
// transaction under the client's current term. A failed fence is an error wrapping
// ha.ErrNotLeader; a transaction whose fence held but whose other comparisons failed returns its
// response with Succeeded false and no error (its Else responses after the leader key's).
func (s *Services) fencedTxn(ctx context.Context, what string, cmps []clientv3.Cmp, ops, elseOps []clientv3.Op) (*clientv3.TxnResponse, error) {
	t, err := s.currentTerm(what)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Txn(ctx).
		If(append([]clientv3.Cmp{fenceOf(t)}, cmps...)...).
		Then(ops...).
		Else(append([]clientv3.Op{clientv3.OpGet(t.key, clientv3.WithKeysOnly())}, elseOps...)...).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("ha/etcd: %s: %w", what, err)
	}
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 || kvs[0].CreateRevision != t.rev {
			return nil, errNotLeader(what)
		}
	}
	return resp, nil
}

// requestContext bounds a request made without a caller's context.
func (s *Services) requestContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, s.reqTimeout)
}
