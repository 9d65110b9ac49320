// Package mainloop is the main-thread executor every endpoint runs on: Flink's RpcEndpoint main
// thread. A Loop owns one goroutine that runs posted closures one at a time, in the order posted,
// so the state an endpoint keeps needs no locks. Timers fire onto the loop too.
//
// Posting never blocks (the queue is unbounded), so a closure may post to its own loop, and two
// loops may post to each other without deadlock. Call waits for the reply or for ctx; on an idle
// loop it runs the closure on the caller's goroutine instead, holding the loop (see Call).
//
// A closure that panics takes the process down, as a panic on any goroutine does, unless the
// loop has a panic handler (SetPanicHandler): then the loop dies alone, and its endpoint reports
// the panic as a fatal error (Flink's FatalErrorHandler, which its RpcEndpoint main thread's
// uncaught exceptions reach).
package mainloop

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/internal/gopool"
)

// ErrClosed is returned by Call and Submit when the loop was closed before the closure ran,
// unless the loop was made with NewWithClosedError.
var ErrClosed = errors.New("mainloop: closed")

// Loop runs closures on its own goroutine, one at a time. Create it with New; Close it once.
// All methods are safe for concurrent use.
type Loop struct {
	name      string
	namer     fmt.Stringer // NewNamed's: formats the name when asked for; nil for name
	closedErr error        // what Call and Submit return once closed

	mu     sync.Mutex
	queue  []task
	closed bool
	// busy is set while the loop's goroutine runs a batch, inline while a Call or Submit runs
	// its closure on the caller's goroutine (callInline); both under mu. At most one is set, and
	// the loop's goroutine takes no batch while inline is set: one closure at a time, in order.
	busy    bool
	inline  bool
	posted  uint64 // closures accepted (Posted)
	timers  map[*time.Timer]struct{}
	wake    chan struct{}
	stopped chan struct{}
	failed  chan struct{} // closed by die, before stopped: releases the waiting calls

	onPanic func(*jobgraph.PanicError) // under mu (SetPanicHandler)
	failure error                      // under mu: closedErr wrapped with the PanicError (die)
	dying   func()                     // the loop goroutine's only: the handler's call (die)
	dropped []task                     // the loop goroutine's only: what a panic kept from running (die, run)

	afterEach func() // the loop goroutine's only (SetAfterEach)
}

// New starts a loop. name is for diagnostics.
func New(name string) *Loop { return NewWithClosedError(name, ErrClosed) }

// NewWithClosedError starts a loop whose Call and Submit return closed, not ErrClosed, once it
// is closed. An endpoint passes its exported closed error (taskexecutor.ErrClosed, say), so the
// internal ErrClosed never reaches its callers: this is the one place a closed loop is mapped to
// the endpoint's public error.
func NewWithClosedError(name string, closed error) *Loop { return start(name, nil, closed, nil) }

// NewNamed is NewWithClosedError with a name formatted only when asked for (Name, a panic's
// PanicError.Endpoint): an endpoint made for every job names its loop after the job's ID without
// formatting that ID for every job. name.String may be called on any goroutine.
func NewNamed(name fmt.Stringer, closed error) *Loop { return start("", name, closed, nil) }

// NewNamedOn is NewNamed with the loop's goroutine started by run instead of a go statement:
// run(fn) must run fn on a goroutine at once, never waiting for another function to return
// (internal/gopool's Pool.Go; nil means a go statement). A goroutine that ran another loop before
// keeps the stack it grew there, so an endpoint made for every job does not grow a fresh stack
// through its deep first calls. The loop behaves exactly as one of NewNamed: Close and Done mean
// that the loop's function has returned on that goroutine, which run's owner may then reuse; run
// must accept fn until every loop made with it has been closed.
func NewNamedOn(run func(fn func()), name fmt.Stringer, closed error) *Loop {
	return start("", name, closed, run)
}

func start(name string, namer fmt.Stringer, closed error, run func(fn func())) *Loop {
	l := &Loop{
		name:      name,
		namer:     namer,
		closedErr: closed,
		timers:    make(map[*time.Timer]struct{}),
		wake:      make(chan struct{}, 1),
		stopped:   make(chan struct{}),
		failed:    make(chan struct{}),
	}
	gopool.Start(run, l.run)
	return l
}

// Name returns the name given to New, NewWithClosedError, NewNamed or NewNamedOn.
func (l *Loop) Name() string {
	if l.namer != nil {
		return l.namer.String()
	}
	return l.name
}

// task is what the queue holds: a closure posted with Execute (funcTask), or a Call or Submit
// waiting for its reply (which is its own task, so a call allocates one object, not a closure
// and a channel).
type task interface{ run() }

type funcTask func()

func (f funcTask) run() { f() }

func (l *Loop) run() {
	defer func() {
		if l.dying != nil { // die's, on this goroutine; before stopped, so Close waits for it
			l.notifyDropped()
			l.dying()
		}
		close(l.stopped)
	}()
	var batch []task
	l.mu.Lock()
	for {
		l.busy = false
		for l.inline || (len(l.queue) == 0 && !l.closed) {
			l.mu.Unlock()
			<-l.wake
			l.mu.Lock()
		}
		if len(l.queue) == 0 { // closed, and nothing is left to run
			l.mu.Unlock()
			return
		}
		batch, l.queue = l.queue, batch[:0]
		l.busy = true
		l.mu.Unlock()
		for i, t := range batch {
			if !l.runOne(t) {
				// The loop died of a panic (die); stopped is closed by the defer. What was still
				// in this batch never runs, as what die dropped from the queue; their Notify
				// callers hear so.
				l.dropped = append(slices.Clone(batch[i+1:]), l.dropped...)
				return
			}
			batch[i] = nil
		}
		l.mu.Lock()
	}
}

// runOne runs t and the after-each hook, and reports false when either panicked and the loop
// has a panic handler: then the loop has died (die). Without a handler the panic goes on up
// (recover is not even called), so the process ends exactly as it did before handlers existed.
func (l *Loop) runOne(t task) (ok bool) {
	defer func() {
		if ok {
			return
		}
		l.mu.Lock()
		h := l.onPanic
		l.mu.Unlock()
		if h == nil {
			return // not recovered: the panic continues
		}
		l.die(h, &jobgraph.PanicError{Endpoint: l.Name(), Value: recover(), Stack: debug.Stack()})
	}()
	t.run()
	if l.afterEach != nil {
		l.afterEach()
	}
	return true
}

// die ends a loop whose closure panicked: it closes the loop as Close does but drops what is
// queued (nothing more runs on a loop whose state a panic left half-changed), records the error
// every waiting and later Call and Submit return, and releases those waiting (failed; the
// failure is written under mu before the close, which orders it before their read). Then the
// dones of the dropped Notify calls hear the failure (notifyDropped), the handler runs, and
// stopped is closed after the handler (run's defer).
func (l *Loop) die(h func(*jobgraph.PanicError), perr *jobgraph.PanicError) {
	l.dying = func() { h(perr) }
	l.mu.Lock()
	l.closeLocked()
	l.dropped = l.queue // each dropped Call's or Submit's waiter gets the failure, each Notify's done
	l.queue = nil
	l.failure = fmt.Errorf("%w: %w", l.closedErr, perr)
	l.mu.Unlock()
	close(l.failed)
}

// SetPanicHandler makes a panic in a closure of this loop (or in SetAfterEach's fn) end the loop
// instead of the process, and fn hear of it. From the panic on, the loop is closed: whatever was
// queued behind the panicking closure never runs (a Notify's done is called with the failure
// instead, before fn), pending timers never fire, Execute reports
// false, Close returns at once, and every waiting and later Call and Submit returns an error
// wrapping both the loop's closed error and a *jobgraph.PanicError (the loop's name, the value,
// the stack), which Err returns too. fn gets that PanicError once, on the loop's goroutine after
// the waiting calls were released and before Done is closed: Close waits for fn, so fn must not
// Close the loop or wait for anything that does (start a goroutine for that); it may use state
// only the loop's closures touch, since none runs again. Set it right after New, before the first
// closure is posted; nil removes it. Flink: an RpcEndpoint's main thread hands an uncaught
// exception to the FatalErrorHandler; where we differ, only this loop stops, and fn's owner
// decides what else does.
func (l *Loop) SetPanicHandler(fn func(err *jobgraph.PanicError)) {
	l.mu.Lock()
	l.onPanic = fn
	l.mu.Unlock()
}

// Finally runs fn on the loop and waits for it, as Call does; but once a panic ended the loop
// (SetPanicHandler), it runs fn on the caller's goroutine instead, after the loop's goroutine has
// returned: nothing runs on the loop again, so the state fn touches is the caller's from then
// on. It is for an endpoint's Close, which must still release what a dead loop owned (the
// JobMasters of a Dispatcher, say). It reports whether fn ran: false when Close ended the loop
// first. Not from the loop itself.
func (l *Loop) Finally(fn func()) bool {
	err := l.Call(context.Background(), func() error { fn(); return nil })
	if err == nil {
		return true
	}
	if l.Err() == nil {
		return false
	}
	<-l.stopped
	fn()
	return true
}

// Err returns the error a panic ended the loop with (see SetPanicHandler), or nil while it runs
// or when Close ended it.
func (l *Loop) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failure
}

// closedError is what a Call or Submit returns once the loop is closed: the closed error, or the
// failure wrapping it after a panic.
func (l *Loop) closedError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failure != nil {
		return l.failure
	}
	return l.closedErr
}

// SetAfterEach has fn run on the loop once it is installed and after every closure that runs
// after that (the closures of Execute, Schedule, Call and Submit), replacing an earlier fn; nil
// removes it. An endpoint
// publishes what its metrics read there (metrics gauges read values the loop owns only through
// atomics the loop stores), so every change is published before the loop runs anything else. A
// Call's reply is sent from inside its closure, so its caller may read the published values a
// moment before fn ran for it. It is itself posted like Execute (nothing when closed).
func (l *Loop) SetAfterEach(fn func()) { l.Execute(func() { l.afterEach = fn }) }

// Execute posts fn to run on the loop and returns at once. It reports false, and fn never runs,
// when the loop is closed.
func (l *Loop) Execute(fn func()) bool { return l.post(funcTask(fn)) }

func (l *Loop) post(t task) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	l.queue = append(l.queue, t)
	l.posted++
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return true
}

// Posted is how many closures the loop has accepted so far: those of Execute, Call, Submit,
// Finally and SetAfterEach, and of each Schedule timer that fired (one that was canceled or
// never fired does not count); not those refused because the loop was closed. Each is a
// hand-over to the loop's goroutine, which every post may have to wake, so an endpoint's tests
// count the trips an operation makes with it.
func (l *Loop) Posted() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.posted
}

// Schedule runs fn on the loop after d. The returned cancel stops it if it has not been posted
// yet and reports whether it did: after true, fn never runs; false means fn was already posted
// (or the loop closed). Timers still pending when the loop closes never fire.
func (l *Loop) Schedule(d time.Duration, fn func()) (cancel func() bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return func() bool { return false }
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		l.mu.Lock()
		_, live := l.timers[t]
		delete(l.timers, t)
		l.mu.Unlock()
		if live {
			l.Execute(fn)
		}
	})
	l.timers[t] = struct{}{}
	return func() bool {
		l.mu.Lock()
		_, live := l.timers[t]
		delete(l.timers, t)
		l.mu.Unlock()
		// Once out of the map, the timer's callback can no longer post fn even if it already
		// started (it checks the map under mu), so a live timer is stopped whatever Stop says.
		t.Stop()
		return live
	}
}

// Notify is Call without waiting: it posts fn and returns at once. done, if not nil, is called
// with fn's error on the loop right after fn, or, when the loop is closed and fn is refused, with
// the error Call would return then (ErrClosed, NewWithClosedError's error, or the failure
// wrapping it after a panic) on the caller's goroutine before Notify returns. When the loop dies
// of a panic before it reaches fn, fn never runs and done is called with the failure every
// waiting Call returns, on the dying loop's goroutine before the panic handler runs: done is
// called exactly once whatever happens. done must not block.
func (l *Loop) Notify(fn func() error, done func(err error)) {
	if done == nil {
		l.Execute(func() { _ = fn() })
		return
	}
	if !l.post(&notifyTask{fn: fn, done: done}) {
		done(l.closedError())
	}
}

// notifyTask is one Notify with a done: a task of its own so that a loop dying of a panic can
// still call done for it (notifyDropped).
type notifyTask struct {
	fn   func() error
	done func(err error)
}

func (n *notifyTask) run() { n.done(n.fn()) }

// notifyDropped calls, with the failure, the done of every Notify a panic kept from running (die
// dropped the queue, run the rest of its batch), in the order they were posted; on the dying
// loop's goroutine, after the waiting calls were released and before the panic handler.
func (l *Loop) notifyDropped() {
	l.mu.Lock()
	failure := l.failure
	l.mu.Unlock()
	dropped := l.dropped
	l.dropped = nil
	for _, t := range dropped {
		if n, ok := t.(*notifyTask); ok {
			n.done(failure)
		}
	}
}

// Call runs fn on the loop and returns its error, or ctx's error if ctx ends first (fn may still
// run later), or ErrClosed (or NewWithClosedError's error) if the loop closed before fn ran. Never
// call it from the loop itself: that waits forever for a closure queued behind the caller.
//
// When the loop is idle (nothing queued, nothing running) and ctx has not ended, fn runs on the
// caller's goroutine instead of the loop's, holding the loop as its goroutine would: nothing
// else of the loop runs until fn returns, and what is posted meanwhile runs after it, in order.
// The caller waits for fn either way, so only who runs it differs; it saves the two goroutine
// wake-ups of a hand-over and back, which are most of a short call's cost. Such an fn runs to
// its end even if ctx ends meanwhile (a loop's closures never block). A panic in it is the
// loop's: with a panic handler the loop dies as if its goroutine had run fn (the handler still
// runs on the loop's goroutine), and Call returns the failure; without one the panic goes on up
// the caller's stack, as it would have ended the process from the loop's.
func (l *Loop) Call(ctx context.Context, fn func() error) error {
	c := &errCall{fn: fn}
	if ran, ok := l.callInline(ctx, c); ran {
		if !ok {
			return l.closedError()
		}
		return c.err
	}
	c.done = make(chan struct{}, 1)
	if err := l.wait(ctx, c, c.done); err != nil {
		return err
	}
	return c.err
}

// Submit runs fn on the loop and returns its results; see Call for the errors, and for when fn
// runs on the caller's goroutine.
func Submit[T any](ctx context.Context, l *Loop, fn func() (T, error)) (T, error) {
	c := &call[T]{fn: fn}
	if ran, ok := l.callInline(ctx, c); ran {
		if !ok {
			var zero T
			return zero, l.closedError()
		}
		return c.v, c.err
	}
	c.done = make(chan struct{}, 1)
	if err := l.wait(ctx, c, c.done); err != nil {
		var zero T
		return zero, err
	}
	return c.v, c.err
}

// callInline runs t on the calling goroutine if the loop is idle: open, nothing queued, neither
// its goroutine nor another caller running a closure, and ctx not ended. ran reports whether it
// did; ok is runOne's (false: t panicked and the loop died of it). The loop's goroutine may be
// parked or about to park; it takes no batch while inline is set, and endInline wakes it when
// something was posted meanwhile or the loop was closed (or died).
func (l *Loop) callInline(ctx context.Context, t task) (ran, ok bool) {
	l.mu.Lock()
	if l.closed || l.busy || l.inline || len(l.queue) > 0 || ctx.Err() != nil {
		l.mu.Unlock()
		return false, false
	}
	l.inline = true
	l.posted++
	l.mu.Unlock()
	// Deferred, so that a panic going on up without a handler still hands the loop back.
	defer l.endInline()
	return true, l.runOne(t)
}

// endInline hands the loop back after callInline. A post made while inline was set has already
// sent its wake-up, which the loop's goroutine may have used up while it still saw inline set, so
// endInline sends one again. die, run by runOne on a panic, wrote the loop goroutine's dying and
// dropped before its mu.Unlock, so the goroutine reads them after this Lock: ordered by mu.
func (l *Loop) endInline() {
	l.mu.Lock()
	l.inline = false
	pending := len(l.queue) > 0 || l.closed
	l.mu.Unlock()
	if pending {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// call is one Submit: its closure, the results, and the channel its caller waits on. The loop
// writes the results before it sends on done; the caller reads them only after receiving, and
// never touches them once it gave up waiting (run may still come and write them).
type call[T any] struct {
	fn   func() (T, error)
	v    T
	err  error
	done chan struct{}
}

func (c *call[T]) run() {
	c.v, c.err = c.fn()
	if c.done != nil { // nil when run inline (callInline)
		c.done <- struct{}{}
	}
}

// errCall is one Call: Submit's without a value, so Call needs no closure around fn.
//
// (The reply channels are not pooled: a channel made in one testing/synctest bubble must not be
// used outside it, and one made outside does not block durably inside, so a pool shared by
// bubbles would break the tests that drive endpoints in virtual time.)
type errCall struct {
	fn   func() error
	err  error
	done chan struct{}
}

func (c *errCall) run() {
	c.err = c.fn()
	if c.done != nil { // nil when run inline (callInline)
		c.done <- struct{}{}
	}
}

// wait posts t, whose run sends on done once, and waits for that. nil means t ran and its
// results are set; otherwise ctx's error (t may still run later) or the loop's closed error (t
// never ran).
func (l *Loop) wait(ctx context.Context, t task, done chan struct{}) error {
	if !l.post(t) {
		return l.closedError()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-l.failed: // die released the waiters: t ran before the panic, or never will
		return l.ranOrClosed(done)
	case <-l.stopped:
		// The loop's goroutine returns only once the queue is empty, and Close drops nothing
		// queued: t ran and sent before stopped was closed, unless it was never taken.
		return l.ranOrClosed(done)
	}
}

// ranOrClosed is wait's answer once the loop ended: nil if t ran (done was sent), else the
// loop's closed error.
func (l *Loop) ranOrClosed(done chan struct{}) error {
	select {
	case <-done:
		return nil
	default:
		return l.closedError()
	}
}

// Close stops accepting closures, stops pending timers, runs what was already queued, and waits
// until the loop's goroutine has returned. Closing twice is harmless. Do not call it from the loop.
func (l *Loop) Close() {
	l.mu.Lock()
	if !l.closed {
		l.closeLocked()
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	<-l.stopped
}

// closeLocked stops accepting closures and stops the pending timers (Close, die). Under mu.
func (l *Loop) closeLocked() {
	l.closed = true
	for t := range l.timers {
		t.Stop()
	}
	clear(l.timers)
}

// Done is closed once the loop's goroutine has returned (for NewNamedOn: once the loop's
// function has returned on it).
func (l *Loop) Done() <-chan struct{} { return l.stopped }
