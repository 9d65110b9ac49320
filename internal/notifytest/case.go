package notifytest

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph/rpc"
)

// Case is the part of one conformance case that both notifier suites share: the LocalService
// the recipient and the suite's fakes are registered on, a context that bounds the case, the
// callbacks the case hands out (each checked at the end to have been called exactly once, and
// no two at once), the recipient's Close, and a change notification the suite's fakes fire so
// that WaitFor can wait without polling. Make one with RunCase. Its methods are for the case's
// goroutine, except Changes' Fire, which a fake calls on any goroutine.
type Case struct {
	T        *testing.T
	Ctx      context.Context   // ends timeout after the case began (RunCase)
	RPC      *rpc.LocalService // closed when the case ends
	InBubble bool              // the case runs in a testing/synctest bubble
	Changes  Changes           // fired by the suite's fakes

	timeout   time.Duration
	dones     Set
	callbacks []*Callback
	close     func()
	closeOnce sync.Once
}

// RunCase runs body as the subtest name of t: inside a testing/synctest bubble when inBubble,
// in real time otherwise. body gets a Case with a fresh LocalService and a context that ends
// after timeout.
func RunCase(t *testing.T, name string, inBubble bool, timeout time.Duration, body func(c *Case)) {
	t.Run(name, func(t *testing.T) {
		run := func(t *testing.T) {
			svc := rpc.NewLocalService()
			t.Cleanup(func() { assert.NoError(t, svc.Close()) })
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			t.Cleanup(cancel)
			body(&Case{T: t, Ctx: ctx, RPC: svc, InBubble: inBubble, timeout: timeout})
		}
		if inBubble {
			synctest.Test(t, run)
		} else {
			run(t)
		}
	})
}

// Recipient hands the case the recipient's Close and registers the case's end, so call it right
// after the recipient was made: its cleanup then runs before the recipient's own cleanups. At
// the end every holding callback is released, the recipient closed (once: see Close), and
// everything in flight let happen (Settle); then every callback the case made must have been
// called exactly once, and no two of them at the same time (a recipient calls them on its one
// main loop).
func (c *Case) Recipient(close func()) {
	c.close = close
	c.T.Cleanup(func() {
		for _, cb := range c.callbacks {
			cb.Release()
		}
		c.Close()
		c.Settle()
		for i, cb := range c.callbacks {
			assert.Len(c.T, cb.Calls(), 1, "done of notification %d is called exactly once", i)
		}
		assert.False(c.T, c.dones.Overlapped(), "two dones ran at once: they are not called on one main loop")
	})
}

// Close closes the recipient given to Recipient, the first time only.
func (c *Case) Close() { c.closeOnce.Do(c.close) }

// Settle lets everything in flight happen: in a bubble, until every goroutine in it is blocked;
// in real time there is no such point, and the "nothing else happened" checks after it are
// weaker.
func (c *Case) Settle() {
	if c.InBubble {
		synctest.Wait()
	}
}

// New returns a callback (Set.New) that the case's end checks.
func (c *Case) New() *Callback { return c.track(c.dones.New()) }

// NewHolding returns a holding callback (Set.NewHolding) that the case's end checks and
// releases.
func (c *Case) NewHolding() *Callback { return c.track(c.dones.NewHolding()) }

func (c *Case) track(cb *Callback) *Callback {
	c.callbacks = append(c.callbacks, cb)
	return cb
}

// WaitFor waits until cond holds, evaluating it again after every Changes.Fire; the case fails
// with what when Ctx ends first.
func (c *Case) WaitFor(what string, cond func() bool) {
	c.T.Helper()
	for {
		ch := c.Changes.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-c.Ctx.Done():
			c.T.Fatalf("waited %v for: %s", c.timeout, what)
		}
	}
}

// Changes is a change notification: the channel Changed returns is closed at the next Fire. The
// zero value is ready to use; safe for concurrent use.
type Changes struct {
	mu sync.Mutex
	ch chan struct{}
}

// Changed returns a channel that the next Fire closes.
func (c *Changes) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

// Fire closes the channel Changed returned so far.
func (c *Changes) Fire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}
