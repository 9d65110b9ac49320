package grpctransport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/transport/grpc/internal/pb"
)

// DefaultMaxMessageSize is the default of Options.MaxReceiveMessageSize and
// MaxSendMessageSize: 10 MiB, Flink's pekko.framesize (10485760b).
const DefaultMaxMessageSize = 10 << 20

// DefaultListenAddress is where a Service listens unless Options.ListenAddress says otherwise:
// the loopback interface, a port the kernel picks.
const DefaultListenAddress = "127.0.0.1:0"

// ErrMessageTooLarge is matched (errors.Is) by the error of a call whose request or answer is
// larger than the sender's MaxSendMessageSize or the receiver's MaxReceiveMessageSize. Only
// that call fails; the connection serves other calls on. It travels as the code
// "grpctransport.message-too-large".
var ErrMessageTooLarge = errors.New("grpctransport: message larger than the size limit")

// endpointKey is the gRPC metadata key naming the endpoint a call is for.
const endpointKey = "jobgraph-endpoint"

// Options configure a Service. The zero value listens on 127.0.0.1 (a port the kernel picks)
// without TLS, with 10 MiB message limits.
type Options struct {
	// ListenAddress is the host:port the Service listens on; DefaultListenAddress (127.0.0.1:0)
	// when empty. Without TLS it must be a loopback address (127.0.0.0/8, ::1 or localhost):
	// New refuses any other. Flink: jobmanager.rpc.bind-host / taskmanager.rpc.bind-host with
	// the rpc port options.
	ListenAddress string
	// AdvertisedAddress is the host:port endpoint addresses name (what peers dial); the
	// listener's own address (with the port the kernel picked) when empty. Flink:
	// jobmanager.rpc.address / taskmanager.host.
	AdvertisedAddress string
	// TLS configures mutual TLS for every connection, served and dialed; nil or
	// TLS.Enabled false means none (then the listener must be loopback, and New logs that it
	// is). Flink: security.ssl.internal.*.
	TLS *TLSOptions
	// MaxReceiveMessageSize and MaxSendMessageSize bound every message the Service receives and
	// sends, as server and as client, in bytes; DefaultMaxMessageSize (10 MiB, Flink's
	// pekko.framesize) when 0. A call whose message is larger fails with an error matching
	// ErrMessageTooLarge; other calls on the same connection are unaffected.
	MaxReceiveMessageSize int
	MaxSendMessageSize    int
	// Logger receives the Service's log lines (slog.Default() when nil).
	Logger *slog.Logger
}

// Service is rpc.Service over gRPC. It serves the endpoints registered on it on one listener,
// and resolves the addresses of endpoints of other Services (other processes) to client stubs.
//
// Addresses are "<host:port>/<name>": the host:port of the Service that serves the endpoint
// (Address gives it for a name) and the endpoint's name there, which may hold "/" itself. An
// address whose part before the first "/" is not a host:port with a numeric port is a bare name. Register and Unregister take
// either that form with this Service's own host:port, or a bare name, meaning the same: the
// bare name "jobmaster-a" and Address("jobmaster-a") name one endpoint. Lookup takes either
// form too; a bare name resolves to this Service's own listener. Lookup always answers a
// client stub that calls over gRPC, also for this Service's own endpoints, so a caller sees the
// same behaviour whichever process the endpoint runs in. An endpoint that hands its own address
// to peers in other processes (a TaskExecutor's Config.Address, which its registration carries;
// a JobMaster's address) must be configured with the full form, Address(name): a bare name
// resolves to the Service of whoever reads it.
//
// Safe for concurrent use. Flink: org.apache.flink.runtime.rpc.pekko.PekkoRpcService.
type Service struct {
	opts      Options
	log       *slog.Logger
	lis       net.Listener
	server    *grpc.Server
	advertise string
	clientTLS *tls.Config
	served    chan struct{} // closed when Serve returned

	mu        sync.RWMutex
	endpoints map[string]any
	conns     map[string]*grpc.ClientConn
	closed    bool
}

var _ rpc.Service = (*Service)(nil)

// New starts a Service listening on opts.ListenAddress. Errors: the options are invalid (a
// non-loopback ListenAddress without TLS, TLS files that cannot be read or parsed, a negative
// size limit), or the address cannot be listened on. Close it when done.
func New(opts Options) (*Service, error) {
	if opts.ListenAddress == "" {
		opts.ListenAddress = DefaultListenAddress
	}
	if opts.MaxReceiveMessageSize < 0 || opts.MaxSendMessageSize < 0 {
		return nil, fmt.Errorf("grpctransport: negative message size limit (receive %d, send %d)", opts.MaxReceiveMessageSize, opts.MaxSendMessageSize)
	}
	if opts.MaxReceiveMessageSize == 0 {
		opts.MaxReceiveMessageSize = DefaultMaxMessageSize
	}
	if opts.MaxSendMessageSize == 0 {
		opts.MaxSendMessageSize = DefaultMaxMessageSize
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	host, _, err := net.SplitHostPort(opts.ListenAddress)
	if err != nil {
		return nil, fmt.Errorf("grpctransport: ListenAddress %q: %w", opts.ListenAddress, err)
	}
	tlsOn := opts.TLS != nil && opts.TLS.Enabled
	if !tlsOn && !isLoopback(host) {
		return nil, fmt.Errorf("grpctransport: ListenAddress %q is not a loopback address, and TLS is off (security.ssl.internal.enabled): refusing to serve unauthenticated calls beyond this machine", opts.ListenAddress)
	}
	var serverTLS *tls.Config
	s := &Service{opts: opts, log: log, endpoints: make(map[string]any), conns: make(map[string]*grpc.ClientConn), served: make(chan struct{})}
	if tlsOn {
		if serverTLS, s.clientTLS, err = opts.TLS.configs(); err != nil {
			return nil, err
		}
	}
	lis, err := net.Listen("tcp", opts.ListenAddress)
	if err != nil {
		return nil, fmt.Errorf("grpctransport: listen: %w", err)
	}
	s.lis = lis
	s.advertise = opts.AdvertisedAddress
	if s.advertise == "" {
		s.advertise = lis.Addr().String()
	}
	serverOpts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(opts.MaxReceiveMessageSize),
		grpc.MaxSendMsgSize(opts.MaxSendMessageSize),
		grpc.WaitForHandlers(true),
	}
	if tlsOn {
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(serverTLS)))
		log.Info("grpctransport: serving with mutual TLS (security.ssl.internal.enabled)", "address", s.advertise)
	} else {
		log.Info("grpctransport: TLS is off (security.ssl.internal.enabled=false): listening on the loopback interface only", "address", lis.Addr().String())
	}
	s.server = grpc.NewServer(serverOpts...)
	pb.RegisterEndpointServer(s.server, endpointServer{s: s})
	pb.RegisterDispatcherServer(s.server, dispatcherServer{s: s})
	pb.RegisterJobMasterServer(s.server, jobMasterServer{s: s})
	pb.RegisterResourceManagerServer(s.server, resourceManagerServer{s: s})
	pb.RegisterTaskExecutorServer(s.server, taskExecutorServer{s: s})
	go func() {
		defer close(s.served)
		_ = s.server.Serve(lis) // returns once Stop closed the listener
	}()
	return s, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// HostPort is the host:port this Service's endpoints are reached at (Options.AdvertisedAddress
// or the listener's address).
func (s *Service) HostPort() string { return s.advertise }

// Address returns the address under which an endpoint registered as name on this Service is
// reached from any process: "<host:port>/<name>".
func (s *Service) Address(name string) string { return s.advertise + "/" + name }

// split parses an address into the host:port of its Service ("" for a bare name) and the name.
// The part before the first "/" is a host:port only if it parses as one with a numeric port;
// otherwise the whole address is a bare name, which may hold "/" itself (the MiniCluster names its
// JobMasters "jobmaster/<job>/<session>").
func split(address string) (hostPort, name string) {
	if hp, n, ok := strings.Cut(address, "/"); ok {
		if _, port, err := net.SplitHostPort(hp); err == nil && port != "" && strings.Trim(port, "0123456789") == "" {
			return hp, n
		}
	}
	return "", address
}

// localName returns the name address has on this Service, or an error if it names another.
func (s *Service) localName(address string) (string, error) {
	hp, name := split(address)
	if hp != "" && hp != s.advertise {
		return "", fmt.Errorf("grpctransport: address %q is not on this Service (%s)", address, s.advertise)
	}
	if name == "" {
		return "", fmt.Errorf("grpctransport: address %q names no endpoint", address)
	}
	return name, nil
}

// Register makes endpoint reachable under address, a bare name or Address(name). Errors: the
// address names another Service or no name, it is taken, or (rpc.ErrServiceClosed) the
// Service is closed. endpoint should implement one of the four gateways; calls for a gateway it
// does not implement fail.
func (s *Service) Register(address string, endpoint any) error {
	name, err := s.localName(address)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("grpctransport: register %q: %w", address, rpc.ErrServiceClosed)
	}
	if _, taken := s.endpoints[name]; taken {
		return fmt.Errorf("grpctransport: address %q is already registered", address)
	}
	s.endpoints[name] = endpoint
	return nil
}

// Unregister removes the endpoint under address; later calls to it fail with an error
// matching rpc.ErrUnknownAddress that is unreachable (rpc.IsUnreachable), calls in flight return
// with the endpoint's answer. An unknown
// address, or one of another Service, is a no-op.
func (s *Service) Unregister(address string) {
	name, err := s.localName(address)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.endpoints, name)
}

// endpoint returns what is registered under name, or the status error the caller gets.
func (s *Service) endpoint(name string) (any, error) {
	s.mu.RLock()
	ep, ok := s.endpoints[name]
	closed := s.closed
	s.mu.RUnlock()
	switch {
	case closed:
		return nil, toStatus(fmt.Errorf("grpctransport: %s: %w", s.Address(name), rpc.ErrServiceClosed))
	case !ok:
		// Nothing answers there: unreachable on the caller's side too (see rpc.ErrUnknownAddress).
		return nil, toStatus(rpc.Unreachable(fmt.Errorf("%w %q", rpc.ErrUnknownAddress, s.Address(name))))
	}
	return ep, nil
}

// gateway returns the endpoint a call is for (named by the call's metadata) as G.
func gateway[G any](ctx context.Context, s *Service, kind string) (G, error) {
	var zero G
	md, _ := metadata.FromIncomingContext(ctx)
	names := md.Get(endpointKey)
	if len(names) != 1 {
		return zero, status.Errorf(codes.InvalidArgument, "grpctransport: the call names %d endpoints, want 1", len(names))
	}
	ep, err := s.endpoint(names[0])
	if err != nil {
		return zero, err
	}
	g, ok := ep.(G)
	if !ok {
		return zero, toStatus(fmt.Errorf("grpctransport: endpoint at %q is a %T, not a %s gateway", s.Address(names[0]), ep, kind))
	}
	return g, nil
}

// Gateway kinds, as Describe names them.
const (
	kindDispatcher      = "dispatcher"
	kindJobMaster       = "jobmaster"
	kindResourceManager = "resourcemanager"
	kindTaskExecutor    = "taskexecutor"
)

func kinds(ep any) []string {
	var ks []string
	if _, ok := ep.(rpc.DispatcherGateway); ok {
		ks = append(ks, kindDispatcher)
	}
	if _, ok := ep.(rpc.JobMasterGateway); ok {
		ks = append(ks, kindJobMaster)
	}
	if _, ok := ep.(rpc.ResourceManagerGateway); ok {
		ks = append(ks, kindResourceManager)
	}
	if _, ok := ep.(rpc.TaskExecutorGateway); ok {
		ks = append(ks, kindTaskExecutor)
	}
	return ks
}

type endpointServer struct {
	pb.UnimplementedEndpointServer
	s *Service
}

func (e endpointServer) Describe(_ context.Context, req *pb.DescribeRequest) (*pb.DescribeReply, error) {
	ep, err := e.s.endpoint(req.GetName())
	if err != nil {
		return nil, err
	}
	return &pb.DescribeReply{Gateways: kinds(ep)}, nil
}

// connectParams bound how long a connection to a peer that went away waits between attempts to
// reconnect: gRPC's default backoff (1 s, ×1.6, ±20 %) capped at 10 s instead of 120 s, so a
// peer that comes back at the same address (a process restarted on a fixed port) is reached
// again within 10 s. Calls made meanwhile fail at once (gRPC's fail-fast), as calls to an
// unreachable peer do.
var connectParams = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 10 * time.Second},
	MinConnectTimeout: 20 * time.Second,
}

// conn returns the cached connection to hostPort, dialing it on first use.
func (s *Service) conn(hostPort string) (*grpc.ClientConn, error) {
	s.mu.RLock()
	cc, ok := s.conns[hostPort]
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return nil, rpc.ErrServiceClosed
	}
	if ok {
		return cc, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, rpc.ErrServiceClosed
	}
	if cc, ok := s.conns[hostPort]; ok {
		return cc, nil
	}
	creds := insecure.NewCredentials()
	if s.clientTLS != nil {
		creds = credentials.NewTLS(s.clientTLS)
	}
	cc, err := grpc.NewClient("passthrough:///"+hostPort,
		grpc.WithTransportCredentials(creds),
		grpc.WithConnectParams(connectParams),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(s.opts.MaxReceiveMessageSize), grpc.MaxCallSendMsgSize(s.opts.MaxSendMessageSize)))
	if err != nil {
		return nil, err
	}
	s.conns[hostPort] = cc
	return cc, nil
}

// Lookup returns a client stub for the endpoint at address ("<host:port>/<name>", or a bare
// name on this Service): it asks the Service there which gateway the endpoint serves and
// returns a stub implementing exactly that one (rpc.DispatcherGateway, rpc.JobMasterGateway,
// rpc.ResourceManagerGateway or rpc.TaskExecutorGateway; for an endpoint serving several, the
// first of these). Errors: nothing registered there (rpc.ErrUnknownAddress, checked on the
// remote side, and unreachable: rpc.IsUnreachable), the Service there cannot be reached or refuses this one's certificate, ctx's
// error, rpc.ErrServiceClosed once this Service is closed. One connection per peer host:port
// is dialed on first use and kept until Close.
func (s *Service) Lookup(ctx context.Context, address string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	hp, name := split(address)
	if hp == "" {
		hp = s.advertise
	}
	if name == "" {
		return nil, fmt.Errorf("grpctransport: address %q names no endpoint", address)
	}
	cc, err := s.conn(hp)
	if err != nil {
		return nil, fmt.Errorf("grpctransport: lookup %q: %w", address, err)
	}
	reply, err := pb.NewEndpointClient(cc).Describe(ctx, &pb.DescribeRequest{Name: name})
	if err != nil {
		return nil, s.callError(ctx, "Describe", address, err)
	}
	c := client{s: s, cc: cc, name: name, address: address}
	for _, k := range reply.GetGateways() {
		switch k {
		case kindDispatcher:
			return &dispatcherClient{client: c, pb: pb.NewDispatcherClient(cc)}, nil
		case kindJobMaster:
			return &jobMasterClient{client: c, pb: pb.NewJobMasterClient(cc)}, nil
		case kindResourceManager:
			return &resourceManagerClient{client: c, pb: pb.NewResourceManagerClient(cc)}, nil
		case kindTaskExecutor:
			return &taskExecutorClient{client: c, pb: pb.NewTaskExecutorClient(cc)}, nil
		}
	}
	return nil, fmt.Errorf("grpctransport: endpoint at %q serves none of the gateways (it answers %v)", address, reply.GetGateways())
}

// Close stops serving (calls in flight have their contexts canceled; Close waits for their
// handlers to return), closes every connection this Service dialed and forgets every endpoint.
// Register and Lookup fail with rpc.ErrServiceClosed from then on, and so do calls through stubs
// it handed out. Closing twice is harmless; it returns nil.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	clear(s.endpoints)
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, cc := range conns {
		_ = cc.Close()
	}
	s.server.Stop()
	<-s.served
	return nil
}

func (s *Service) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// client is what every stub shares: the connection and the endpoint's name.
type client struct {
	s       *Service
	cc      *grpc.ClientConn
	name    string
	address string
}

// ctx names the endpoint in the outgoing call.
func (c *client) ctx(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, endpointKey, c.name)
}

// err turns a failed call's error into what the gateway method returns.
func (c *client) err(ctx context.Context, method string, err error) error {
	return c.s.callError(ctx, method, c.address, err)
}
