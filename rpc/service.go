package rpc

import (
	"context"
	"fmt"
	"sync"
)

// Service resolves addresses to gateways. Endpoints register under an address when they start
// and unregister when they stop; callers connect by address, typically one they learned from
// leader retrieval or a registration message. A host program brings its own Service to carry
// calls across processes: Lookup then returns client stubs implementing the gateway interfaces.
// Fenced gateways take their fencing token on every call (see JobMasterGateway), so the token a
// caller holds travels with each call rather than with the connection.
//
// A Service is safe for concurrent use. A call already in flight when its endpoint is unregistered
// returns (with the endpoint's answer or an error); later lookups of the address fail, and so
// may later calls through a gateway handed out before, with the unknown address's unreachable
// error (a transport's stub; the in-process Service's gateway is the endpoint itself). Every
// implementation should pass the conformance suite rpc/rpctest (TestService).
//
// The endpoints find out what else a gateway can do by type assertion: the optional interfaces
// of this package (TaskExecutionStateNotifier, ResourceManagerNotifier, TaskExecutorNotifier,
// ResourceManagerDisconnector, ResourceManagerBlocklistListener) are used when the gateway Lookup
// returns implements them. A Service that wraps another's gateways (to count or drop calls, say)
// hides them unless its wrapper implements them too: one that embeds only the gateway interface
// (TaskExecutorGateway, …) silently turns the notifiers back into waiting calls (timing only),
// drops the ResourceManager's disconnect (the TaskExecutor then finds out by its own heartbeat
// timeout) and keeps a JobMaster's blocked TaskExecutors from the ResourceManager (which still
// requests their slots; no other job hears of them). And the endpoints treat only a *LocalService itself as in process (see
// minicluster.Config.RPC).
// Flink: org.apache.flink.runtime.rpc.RpcService (connect, startServer, closeAsync).
type Service interface {
	// Register makes endpoint reachable under address. It fails if the address is taken, and
	// with ErrServiceClosed after Close.
	Register(address string, endpoint any) error
	// Unregister removes whatever is registered under address; an unknown address is a no-op.
	Unregister(address string)
	// Lookup returns what is registered under address, or an error wrapping ErrUnknownAddress
	// that is unreachable (IsUnreachable: nothing answers there, as for a call to a stopped
	// endpoint in Flink, RecipientUnreachableException); ErrServiceClosed after Close.
	Lookup(ctx context.Context, address string) (any, error)
	// Close stops the Service: Register and Lookup fail with ErrServiceClosed from then on.
	// Closing twice is harmless.
	Close() error
}

// Addresser is implemented by a Service whose endpoints other processes reach under another
// address than the name they are registered by (a network Service: grpctransport.Service's
// "<host:port>/<name>"). The in-process LocalService is none: a name is its own address.
type Addresser interface {
	// Address returns the address under which the endpoint registered as name on this Service
	// is reached from any process; Register accepts it as well as name.
	Address(name string) string
}

// AddressOf returns the address an endpoint that registers as name on s registers under and
// hands to others (in registrations, slot offers, leader elections): s.Address(name) when s is
// an Addresser, else name. Endpoints that make up their own address (a JobMaster's
// "jobmaster/<job>/<session>", a TaskExecutor's ResourceID) use it, so they are reachable from
// other processes over a network Service and unchanged in-process.
func AddressOf(s Service, name string) string {
	if a, ok := s.(Addresser); ok {
		return a.Address(name)
	}
	return name
}

// Connect looks address up and returns it as gateway type G (DispatcherGateway,
// JobMasterGateway, ResourceManagerGateway or TaskExecutorGateway). It fails with
// ErrUnknownAddress (unreachable, see Service.Lookup) when nothing is there and with a type
// error when the endpoint there is not a G.
func Connect[G any](ctx context.Context, s Service, address string) (G, error) {
	var zero G
	ep, err := s.Lookup(ctx, address)
	if err != nil {
		return zero, err
	}
	g, ok := ep.(G)
	if !ok {
		return zero, fmt.Errorf("rpc: endpoint at %q is a %T, not the gateway asked for", address, ep)
	}
	return g, nil
}

// LocalService is the in-process Service: Lookup returns the registered endpoint itself, so a call
// is a plain method call (each endpoint then hops onto its own main loop). Safe for concurrent use.
// The zero value is an empty LocalService, as NewLocalService returns.
type LocalService struct {
	mu        sync.RWMutex
	endpoints map[string]any
	closed    bool
}

// NewLocalService returns an empty in-process Service.
func NewLocalService() *LocalService { return &LocalService{endpoints: make(map[string]any)} }

func (s *LocalService) Register(address string, endpoint any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("rpc: register %q: %w", address, ErrServiceClosed)
	}
	if _, taken := s.endpoints[address]; taken {
		return fmt.Errorf("rpc: address %q is already registered", address)
	}
	if s.endpoints == nil {
		s.endpoints = make(map[string]any)
	}
	s.endpoints[address] = endpoint
	return nil
}

func (s *LocalService) Unregister(address string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.endpoints, address)
}

func (s *LocalService) Lookup(ctx context.Context, address string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("rpc: lookup %q: %w", address, ErrServiceClosed)
	}
	ep, ok := s.endpoints[address]
	if !ok {
		return nil, Unreachable(fmt.Errorf("%w %q", ErrUnknownAddress, address))
	}
	return ep, nil
}

// Close forgets every endpoint; Register and Lookup fail with ErrServiceClosed afterwards.
// Gateways handed out earlier are the endpoints themselves and keep working: closing them is
// their owners' business. It returns nil.
func (s *LocalService) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	clear(s.endpoints)
	return nil
}
