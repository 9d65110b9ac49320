package registration

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/mainloop"
)

// answer is what one attempt returns.
type answer struct {
	id  jobgraph.ResourceManagerID
	err error
}

// harness drives a Connection on a loop; each attempt waits for an answer on its own channel,
// or for its context.
type harness struct {
	t     *testing.T
	loop  *mainloop.Loop
	wg    sync.WaitGroup
	begin time.Time
	conn  *Connection[string]

	mu        sync.Mutex
	attempts  []attempt
	registers []string // "address id" of each Registered call
	failures  []error
}

type attempt struct {
	address string
	at      time.Duration
	answer  chan answer
}

func newHarness(t *testing.T, configure ...func(*Config[string])) *harness {
	h := &harness{t: t, loop: mainloop.New("registration-test"), begin: time.Now()}
	cfg := Config[string]{
		Loop: h.loop,
		Go:   func(fn func()) { h.wg.Go(fn) },
		Attempt: func(address string) func(context.Context) (string, jobgraph.ResourceManagerID, error) {
			a := attempt{address: address, at: time.Since(h.begin), answer: make(chan answer, 1)}
			h.mu.Lock()
			h.attempts = append(h.attempts, a)
			h.mu.Unlock()
			return func(ctx context.Context) (string, jobgraph.ResourceManagerID, error) {
				select {
				case r := <-a.answer:
					return "gw@" + address, r.id, r.err
				case <-ctx.Done():
					return "", jobgraph.ResourceManagerID{}, ctx.Err()
				}
			}
		},
		Registered: func(gw string, id jobgraph.ResourceManagerID) {
			h.mu.Lock()
			h.registers = append(h.registers, gw+" "+id.String())
			h.mu.Unlock()
		},
		Failed: func(err error, _ time.Duration) {
			h.mu.Lock()
			h.failures = append(h.failures, err)
			h.mu.Unlock()
		},
	}
	for _, c := range configure {
		c(&cfg)
	}
	h.conn = New(cfg)
	t.Cleanup(func() {
		h.on(h.conn.Close)
		h.loop.Close()
		h.wg.Wait()
	})
	return h
}

func (h *harness) on(fn func()) {
	require.NoError(h.t, h.loop.Call(context.Background(), func() error { fn(); return nil }))
}

func (h *harness) snapshot() ([]attempt, []string, []error) {
	synctest.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]attempt(nil), h.attempts...), append([]string(nil), h.registers...), append([]error(nil), h.failures...)
}

// The answer to the registration with an earlier leader is dropped even when it succeeds; the
// registration with the new leader is the one that counts.
func TestAnswerOfAnEarlierLeaderIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		s1, s2 := ha.NewSessionID(), ha.NewSessionID()
		h.on(func() { assert.True(t, h.conn.NewLeader("rm", s1)) })
		h.on(func() { assert.False(t, h.conn.NewLeader("rm", s1), "the same leader again changes nothing") })
		h.on(func() { assert.True(t, h.conn.NewLeader("rm", s2)) })
		attempts, _, _ := h.snapshot()
		require.Len(t, attempts, 2)
		attempts[0].answer <- answer{id: jobgraph.ResourceManagerID(s1)}
		_, registers, failures := h.snapshot()
		assert.Empty(t, registers, "s1's answer came after s2 was the leader")
		assert.Empty(t, failures)
		attempts[1].answer <- answer{id: jobgraph.ResourceManagerID(s2)}
		attempts, registers, _ = h.snapshot()
		assert.Equal(t, []string{"gw@rm " + jobgraph.ResourceManagerID(s2).String()}, registers)
		assert.Len(t, attempts, 2, "no further attempt once registered")
		h.on(func() { assert.True(t, h.conn.Registered()) })

		// No leader: the registration is abandoned, nothing is attempted.
		h.on(func() { assert.True(t, h.conn.NewLeader("", ha.SessionID{})) })
		h.on(func() { assert.False(t, h.conn.Registered()) })
		attempts, _, _ = h.snapshot()
		assert.Len(t, attempts, 2)
	})
}

// An attempt that times out is repeated at once with twice the timeout (100 ms, 200 ms, … up to
// 30 s); one that fails otherwise, or is answered for another session, is repeated after the
// 10 s error delay with the initial timeout again.
func TestRetryTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		s := ha.NewSessionID()
		h.on(func() { h.conn.NewLeader("rm", s) })
		time.Sleep(60 * time.Second)
		attempts, _, failures := h.snapshot()
		var at []time.Duration
		for _, a := range attempts {
			at = append(at, a.at)
		}
		ms := time.Millisecond
		// 0.1+0.2+0.4+…+25.6 = 51.1 s; then 30 s (capped) attempts.
		want := []time.Duration{0, 100 * ms, 300 * ms, 700 * ms, 1500 * ms, 3100 * ms, 6300 * ms, 12700 * ms, 25500 * ms, 51100 * ms}
		assert.Equal(t, want, at)
		require.Len(t, failures, 9)
		assert.ErrorIs(t, failures[0], context.DeadlineExceeded)

		// A new leader; its first attempt fails, the next one 10 s later is answered for
		// another session, the one 10 s after that succeeds.
		s2 := ha.NewSessionID()
		h.on(func() { h.conn.NewLeader("rm2", s2) })
		start := time.Since(h.begin)
		attempts, _, _ = h.snapshot()
		attempts[len(attempts)-1].answer <- answer{err: errors.New("refused")}
		time.Sleep(10 * time.Second)
		attempts, _, _ = h.snapshot()
		last := attempts[len(attempts)-1]
		assert.Equal(t, "rm2", last.address)
		assert.Equal(t, start+10*time.Second, last.at)
		last.answer <- answer{id: jobgraph.ResourceManagerID(ha.NewSessionID())}
		_, _, failures = h.snapshot()
		assert.ErrorIs(t, failures[len(failures)-1], ErrWrongLeader)
		time.Sleep(10 * time.Second)
		attempts, _, _ = h.snapshot()
		last = attempts[len(attempts)-1]
		assert.Equal(t, start+20*time.Second, last.at)
		last.answer <- answer{id: jobgraph.ResourceManagerID(s2)}
		_, registers, _ := h.snapshot()
		assert.Equal(t, []string{"gw@rm2 " + jobgraph.ResourceManagerID(s2).String()}, registers)
	})
}

// An Unbounded Connection (an owner over the in-process LocalService) gives its attempts no
// deadline: an attempt not answered after a minute is still the only one, and is taken when it
// is answered; one that fails is repeated after the error delay, as always.
func TestUnboundedAttemptsHaveNoDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		deadlines := make(chan bool, 4)
		h := newHarness(t, func(c *Config[string]) {
			c.Unbounded = true
			attempt := c.Attempt
			c.Attempt = func(address string) func(context.Context) (string, jobgraph.ResourceManagerID, error) {
				call := attempt(address)
				return func(ctx context.Context) (string, jobgraph.ResourceManagerID, error) {
					_, ok := ctx.Deadline()
					deadlines <- ok
					return call(ctx)
				}
			}
		})
		s := ha.NewSessionID()
		h.on(func() { h.conn.NewLeader("rm", s) })
		time.Sleep(60 * time.Second)
		attempts, _, failures := h.snapshot()
		require.Len(t, attempts, 1)
		assert.Empty(t, failures)
		assert.False(t, <-deadlines, "the attempt has no deadline")

		attempts[0].answer <- answer{err: errors.New("refused")}
		time.Sleep(DefaultErrorDelay)
		attempts, _, failures = h.snapshot()
		require.Len(t, failures, 1)
		require.Len(t, attempts, 2)
		assert.Equal(t, 60*time.Second+DefaultErrorDelay, attempts[1].at)
		assert.False(t, <-deadlines)
		attempts[1].answer <- answer{id: jobgraph.ResourceManagerID(s)}
		_, registers, _ := h.snapshot()
		assert.Equal(t, []string{"gw@rm " + jobgraph.ResourceManagerID(s).String()}, registers)
	})
}

// A leader known by its address only (ha.NoSession: a fixed address) is registered with
// whatever ResourceManagerID it answers; a later registration with it (Reconnect, after a
// heartbeat timeout) takes the new answer as it comes too.
func TestLeaderWithNoSessionTakesTheAnsweredID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.on(func() { assert.True(t, h.conn.NewLeader("rm", ha.NoSession)) })
		first, second := jobgraph.NewResourceManagerID(), jobgraph.NewResourceManagerID()
		attempts, _, _ := h.snapshot()
		require.Len(t, attempts, 1)
		attempts[0].answer <- answer{id: first}
		_, registers, _ := h.snapshot()
		assert.Equal(t, []string{"gw@rm " + first.String()}, registers)
		h.on(h.conn.Reconnect)
		attempts, _, _ = h.snapshot()
		require.Len(t, attempts, 2)
		attempts[1].answer <- answer{id: second}
		_, registers, failures := h.snapshot()
		assert.Equal(t, []string{"gw@rm " + first.String(), "gw@rm " + second.String()}, registers)
		assert.Empty(t, failures)
	})
}
