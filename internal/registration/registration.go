// Package registration is how a TaskExecutor or a JobMaster stays registered with the
// ResourceManager leader its leader retrieval names: Flink's RegisteredRpcConnection with its
// RetryingRegistration, driven from the owner's main loop.
//
// A Connection follows one leader at a time, an (address, session) pair. Each new leader starts a
// new generation: the registration with the old one is abandoned (an answer that comes back for
// it is dropped on the loop, whatever it says), and attempts to register with the new one start
// at once. An attempt runs off the loop, bounded by a timeout that starts at
// cluster.registration.initial-timeout and doubles after each attempt that timed out, up to
// cluster.registration.max-timeout; an attempt that failed otherwise is repeated after
// cluster.registration.error-delay (Flink's defaults: 100 ms, 30 s, 10 s). It goes on until an
// attempt succeeds or the leader changes. An answer whose ResourceManagerID is not the leader's
// session (the ResourceManager at the address leads another session) counts as a failure, unless
// the leader came with ha.NoSession (a fixed address, whose session nobody knows): then the
// answer's ResourceManagerID is taken as it comes.
// Where we differ: Flink also waits cluster.registration.refused-registration-delay after a
// declined registration; our ResourceManager declines nothing, it fails (an error wrapping
// ha.ErrNotLeader, say), so the error delay applies. An owner whose rpc.Service is the
// in-process *rpc.LocalService sets Config.Unbounded: its attempts have no timeout, since the
// ResourceManager there answers from a main loop that never waits, so a timer per attempt would
// bound nothing.
//
// Like the other cores, a Connection is a plain struct: no locks; every method runs on the
// owner's loop, and so do the callbacks.
package registration

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
)

// Flink's defaults of the cluster.registration.* options (Flink: ClusterOptions).
const (
	DefaultInitialTimeout = 100 * time.Millisecond // cluster.registration.initial-timeout
	DefaultMaxTimeout     = 30 * time.Second       // cluster.registration.max-timeout
	DefaultErrorDelay     = 10 * time.Second       // cluster.registration.error-delay
)

// ErrWrongLeader is matched by the failure of an attempt answered with another ResourceManagerID
// than the session of the leader it was made for.
var ErrWrongLeader = errors.New("the ResourceManager answered for another leader session")

// Loop is what a Connection needs of its owner's main loop; *mainloop.Loop satisfies it.
type Loop interface {
	Execute(fn func()) bool
	Schedule(d time.Duration, fn func()) (cancel func() bool)
}

// Config configures a Connection. Loop, Go, Attempt and Registered are required.
type Config[G any] struct {
	// Zero values mean the defaults above.
	InitialTimeout, MaxTimeout, ErrorDelay time.Duration
	Loop                                   Loop
	// Context bounds every attempt (the owner cancels it when it closes); nil means Background.
	Context context.Context
	// Unbounded: attempts run bounded by Context only, with no timeout and so no timer each;
	// InitialTimeout and MaxTimeout are not used. For an owner whose rpc.Service is the
	// in-process *rpc.LocalService, whose ResourceManager answers from a main loop that never
	// waits (a closed one at once, with its ErrClosed); over any other Service leave it false.
	Unbounded bool
	// Go runs fn on a goroutine the owner waits for when it closes. Called on the loop.
	Go func(fn func())
	// Attempt builds, on the loop, one registration attempt with the leader at address (what to
	// register is read there); the call it returns runs off the loop, bounded by ctx, and returns
	// the leader's gateway and the ResourceManagerID it answered.
	Attempt func(address string) func(ctx context.Context) (G, jobgraph.ResourceManagerID, error)
	// Registered is called on the loop once an attempt for the current leader succeeded.
	Registered func(gateway G, id jobgraph.ResourceManagerID)
	// Failed, if set, is told on the loop of each failed attempt for the current leader, and when
	// the next one starts.
	Failed func(err error, retryIn time.Duration)
}

// Connection is the registration with the current ResourceManager leader. Create it with New;
// call its methods on the owner's loop only.
type Connection[G any] struct {
	cfg     Config[G]
	address string
	session ha.SessionID
	// gen counts the registrations started (one per leader, and one per Reconnect); an answer
	// or a retry timer of an older one is dropped.
	gen        uint64
	cancel     func() bool // the retry timer, nil when none is pending
	registered bool
	closed     bool
}

// New returns a Connection that knows no leader yet.
func New[G any](cfg Config[G]) *Connection[G] {
	if cfg.InitialTimeout <= 0 {
		cfg.InitialTimeout = DefaultInitialTimeout
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultMaxTimeout
	}
	if cfg.MaxTimeout < cfg.InitialTimeout {
		cfg.MaxTimeout = cfg.InitialTimeout
	}
	if cfg.ErrorDelay <= 0 {
		cfg.ErrorDelay = DefaultErrorDelay
	}
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	return &Connection[G]{cfg: cfg}
}

// Leader returns the leader the Connection follows: its address ("" when none is known) and
// session.
func (c *Connection[G]) Leader() (address string, session ha.SessionID) { return c.address, c.session }

// Registered reports whether the registration with the current leader succeeded.
func (c *Connection[G]) Registered() bool { return c.registered }

// NewLeader follows the leader at address with session (what a leader retrieval reported; an
// empty address means there is none now). It reports false, changing nothing, for the leader it
// follows already, or once closed. Otherwise the registration with the earlier leader is
// abandoned and, when address is not empty, attempts to register with the new one start at once;
// the caller drops what it holds of the earlier leader. Flink:
// TaskExecutor.notifyOfNewResourceManagerLeader, JobMaster.notifyOfNewResourceManagerLeader.
func (c *Connection[G]) NewLeader(address string, session ha.SessionID) bool {
	if c.closed || (address == c.address && session == c.session) {
		return false
	}
	c.address, c.session = address, session
	c.restart()
	return true
}

// Reconnect abandons the registration with the current leader and registers with it again (its
// heartbeat timed out, or it disconnected the owner). No-op without a leader or once closed.
// Flink: reconnectToResourceManager.
func (c *Connection[G]) Reconnect() {
	if !c.closed {
		c.restart()
	}
}

// Close abandons the registration for good: later answers are dropped, no attempt starts again.
func (c *Connection[G]) Close() {
	c.closed = true
	c.stop()
}

func (c *Connection[G]) stop() {
	c.gen++
	c.registered = false
	if c.cancel != nil {
		c.cancel()
		c.cancel = nil
	}
}

func (c *Connection[G]) restart() {
	c.stop()
	if c.address != "" {
		c.attempt(c.gen, c.cfg.InitialTimeout)
	}
}

// attempt starts one registration attempt of generation gen, bounded by timeout (by Context
// only when Unbounded). On the loop.
func (c *Connection[G]) attempt(gen uint64, timeout time.Duration) {
	call := c.cfg.Attempt(c.address)
	base := c.cfg.Context
	if c.cfg.Unbounded {
		c.cfg.Go(func() {
			gw, id, err := call(base)
			c.cfg.Loop.Execute(func() { c.done(gen, timeout, gw, id, err, false) })
		})
		return
	}
	c.cfg.Go(func() {
		ctx, cancel := context.WithTimeout(base, timeout)
		gw, id, err := call(ctx)
		timedOut := err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
		cancel()
		c.cfg.Loop.Execute(func() { c.done(gen, timeout, gw, id, err, timedOut) })
	})
}

// done applies the answer to an attempt of generation gen. On the loop.
func (c *Connection[G]) done(gen uint64, timeout time.Duration, gw G, id jobgraph.ResourceManagerID, err error, timedOut bool) {
	if gen != c.gen || c.closed {
		return // the answer of an earlier leader's registration (or an abandoned one)
	}
	// A leader known by its address only (ha.NoSession: a fixed address) is registered with
	// whatever ResourceManagerID it answers.
	if err == nil && c.session != ha.NoSession && id != jobgraph.ResourceManagerID(c.session) {
		err = fmt.Errorf("registration with the ResourceManager at %q as leader %s: answered as %s: %w",
			c.address, jobgraph.ResourceManagerID(c.session), id, ErrWrongLeader)
	}
	if err == nil {
		c.registered = true
		c.cfg.Registered(gw, id)
		return
	}
	delay, next := c.cfg.ErrorDelay, c.cfg.InitialTimeout
	if timedOut {
		delay, next = 0, min(2*timeout, c.cfg.MaxTimeout)
	}
	if c.cfg.Failed != nil {
		c.cfg.Failed(err, delay)
	}
	c.cancel = c.cfg.Loop.Schedule(delay, func() {
		if gen == c.gen && !c.closed {
			c.cancel = nil
			c.attempt(gen, next)
		}
	})
}
