// Package notifytest is what the conformance suites of the optional rpc notifiers
// (jobmaster/jmtest for rpc.TaskExecutionStateNotifier, resourcemanager/rmtest for
// rpc.ResourceManagerNotifier) share: a done callback that records every call with the
// goroutine it came on and whether the Notify call that was handed it had returned, a hold that
// keeps the recipient's loop busy inside one done, the error comparison the suites make, and
// their case harness (RunCase). Its change notification (Changes) also serves the fakes of
// taskexecutor/tetest. Test support only; nothing here is an API of the library.
package notifytest

import (
	"bytes"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jobgraph/jobgraph/rpc"
)

// Call is one call of a Callback's Done.
type Call struct {
	Err error
	// Goroutine is the ID of the goroutine Done ran on; Caller that of the goroutine that made
	// the Notify call.
	Goroutine, Caller uint64
	// DuringNotify is true when Done ran before the Notify call it was handed returned.
	DuringNotify bool
}

// Set groups the callbacks handed to one recipient, so that it can tell when two of them ran at
// once: what a recipient calling them on its one main loop never does.
type Set struct {
	active     atomic.Int32
	overlapped atomic.Bool
}

// Overlapped reports whether two callbacks of s were ever inside Done at the same time.
func (s *Set) Overlapped() bool { return s.overlapped.Load() }

// Callback is a notifier's done. Make one with Set.New or Set.NewHolding, and hand it over with
// Notify.
type Callback struct {
	set    *Set
	hold   chan struct{} // closed by Release; nil for a callback that never blocks
	inside chan struct{} // closed when a holding Done has begun
	once   sync.Once     // closes hold

	// caller and notifying describe the Notify call in progress (atomics: Done may run on any
	// goroutine while Notify still runs).
	caller    atomic.Uint64
	notifying atomic.Bool

	mu     sync.Mutex
	calls  []Call
	called chan struct{}
}

// New returns a callback that records its calls and returns at once.
func (s *Set) New() *Callback {
	return &Callback{set: s, called: make(chan struct{})}
}

// NewHolding returns a callback whose first Done blocks until Release: what a suite uses to keep
// a recipient that calls done on its main loop busy, so that what the next notifications do
// while it is held can be observed. The notifier contracts say done must not block; a suite
// breaks that on purpose, for one call, and releases it (also at the end of the case).
func (s *Set) NewHolding() *Callback {
	return &Callback{set: s, hold: make(chan struct{}), inside: make(chan struct{}), called: make(chan struct{})}
}

// Done is what the notifier is handed.
func (c *Callback) Done(err error) {
	if c.set.active.Add(1) > 1 {
		c.set.overlapped.Store(true)
	}
	defer c.set.active.Add(-1)
	call := Call{Err: err, Goroutine: GoroutineID(), Caller: c.caller.Load(), DuringNotify: c.notifying.Load()}
	c.mu.Lock()
	first := len(c.calls) == 0
	c.calls = append(c.calls, call)
	c.mu.Unlock()
	if first && c.hold != nil {
		close(c.inside)
		<-c.hold
	}
	if first {
		close(c.called)
	}
}

// Notify makes the notification: notify must hand done to the notifier. It records the calling
// goroutine and that the call is in progress, so that Done can tell whether it ran inside it.
func (c *Callback) Notify(notify func(done func(err error))) {
	c.caller.Store(GoroutineID())
	c.notifying.Store(true)
	defer c.notifying.Store(false)
	notify(c.Done)
}

// Calls returns every call of Done so far.
func (c *Callback) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// Called is closed once Done has returned the first time (for a holding callback: once it was
// released).
func (c *Callback) Called() <-chan struct{} { return c.called }

// Inside is closed once a holding callback's Done has begun (and is blocked until Release).
func (c *Callback) Inside() <-chan struct{} { return c.inside }

// Release lets a holding callback's Done return; it may be called more than once.
func (c *Callback) Release() {
	if c.hold != nil {
		c.once.Do(func() { close(c.hold) })
	}
}

// GoroutineID returns the ID of the calling goroutine (the number runtime.Stack prints).
func GoroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		b = b[:i]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		panic("notifytest: cannot read the goroutine ID from " + string(buf[:]))
	}
	return id
}

// SameError reports how got, the error a done was called with, differs from want, the error
// the gateway method returned for the same call ("" when they are the same error): both nil, or
// both with the same text, both an rpc.UnreachableError or neither, and matching the same of
// sentinels (errors.Is), rpc.ErrClosed and rpc.ErrFencingTokenMismatch always among them.
func SameError(got, want error, sentinels ...error) string {
	switch {
	case got == nil && want == nil:
		return ""
	case got == nil:
		return "done was called with nil; the gateway method returned " + strconv.Quote(want.Error())
	case want == nil:
		return "done was called with " + strconv.Quote(got.Error()) + "; the gateway method returned nil"
	case got.Error() != want.Error():
		return "done was called with " + strconv.Quote(got.Error()) + "; the gateway method returned " + strconv.Quote(want.Error())
	case rpc.IsUnreachable(got) != rpc.IsUnreachable(want):
		return "rpc.IsUnreachable differs: done's error " + strconv.FormatBool(rpc.IsUnreachable(got)) + ", the gateway method's " + strconv.FormatBool(rpc.IsUnreachable(want))
	}
	for _, s := range append([]error{rpc.ErrClosed, rpc.ErrFencingTokenMismatch}, sentinels...) {
		if s != nil && errors.Is(got, s) != errors.Is(want, s) {
			return "errors.Is(" + strconv.Quote(s.Error()) + ") differs: done's error " + strconv.FormatBool(errors.Is(got, s)) + ", the gateway method's " + strconv.FormatBool(errors.Is(want, s))
		}
	}
	return ""
}
