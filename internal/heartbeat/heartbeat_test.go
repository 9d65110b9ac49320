package heartbeat_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph/internal/heartbeat"
	"github.com/jobgraph/jobgraph/internal/mainloop"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// event is a callback of the Manager: a heartbeat request, a timeout or a target found
// unreachable (with the last failure), with its virtual time since the test began.
type event struct {
	At     time.Duration
	Kind   string // "request", "timeout" or "unreachable"
	Target string
	Cause  error // "unreachable" only
}

// fixture is a Manager on a real main loop, inside a synctest bubble. Its callbacks record
// events; answer, when set, makes a requested target answer at once (on the loop); results, when
// set for a target, gives the result of the nth request RPC to it (from 1), reported at once,
// unless it is errHold: then the report is kept in held.
type fixture struct {
	t        *testing.T
	loop     *mainloop.Loop
	m        *heartbeat.Manager[string]
	start    time.Time
	events   []event // touched only on the loop, as the fields below
	answer   map[string]bool
	results  map[string]func(n int) error
	requests map[string]int
	held     []func(error)
}

// errHold as a result keeps the request's report in fixture.held.
var errHold = errors.New("held")

func newFixture(t *testing.T, sender bool, interval, timeout time.Duration) *fixture {
	t.Helper()
	return newFixtureWith(t, sender, heartbeat.Config[string]{Interval: interval, Timeout: timeout})
}

// newFixtureWith is newFixture with cfg's Interval, Timeout and RPCFailureThreshold.
func newFixtureWith(t *testing.T, sender bool, cfg heartbeat.Config[string]) *fixture {
	t.Helper()
	f := &fixture{t: t, loop: mainloop.New("heartbeat-test"), start: time.Now(), answer: map[string]bool{},
		results: map[string]func(int) error{}, requests: map[string]int{}}
	t.Cleanup(f.loop.Close)
	cfg.Timers = f.loop
	cfg.OnTimeout = func(k string) { f.record("timeout", k) }
	cfg.OnUnreachable = func(k string, last error) {
		f.events = append(f.events, event{At: time.Since(f.start), Kind: "unreachable", Target: k, Cause: last})
	}
	if sender {
		cfg.RequestHeartbeat = func(k string, report func(error)) {
			f.record("request", k)
			f.requests[k]++
			switch {
			case f.answer[k]:
				report(nil)
				f.m.ReceiveHeartbeat(k)
			case f.results[k] != nil:
				if err := f.results[k](f.requests[k]); err == errHold {
					f.held = append(f.held, report)
				} else {
					report(err)
				}
			}
		}
	}
	m, err := heartbeat.New(cfg)
	require.NoError(t, err)
	f.m = m
	return f
}

func (f *fixture) record(kind, k string) {
	f.events = append(f.events, event{At: time.Since(f.start), Kind: kind, Target: k})
}

// on runs fn on the loop and waits for it.
func (f *fixture) on(fn func()) {
	f.t.Helper()
	require.NoError(f.t, f.loop.Call(context.Background(), func() error { fn(); return nil }))
}

// take returns the events since the last take, after everything due by now has run.
func (f *fixture) take() []event {
	f.t.Helper()
	synctest.Wait()
	var out []event
	f.on(func() { out, f.events = f.events, nil })
	return out
}

// advance sleeps d of virtual time.
func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func TestTimeoutFiresExactlyTimeoutAfterTheLastHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, false, 0, 0)
		f.on(func() { f.m.Monitor("te-1") })

		advance(30 * time.Second)
		var known bool
		f.on(func() { known = f.m.ReceiveHeartbeat("te-1") })
		assert.True(t, known)

		advance(heartbeat.DefaultHeartbeatTimeout - time.Millisecond) // 79.999 s
		assert.Empty(t, f.take(), "no timeout at 49.999 s after the heartbeat")
		f.on(func() { known = f.m.IsMonitored("te-1") })
		assert.True(t, known)

		advance(time.Millisecond)
		assert.Equal(t, []event{{At: 80 * time.Second, Kind: "timeout", Target: "te-1"}}, f.take())
		f.on(func() { known = f.m.IsMonitored("te-1") })
		assert.False(t, known, "a timed-out target is no longer monitored")

		// Once only: no further timeout, and a late heartbeat is ignored.
		f.on(func() { known = f.m.ReceiveHeartbeat("te-1") })
		assert.False(t, known)
		advance(time.Hour)
		assert.Empty(t, f.take())
	})
}

func TestTimeoutIsExactToTheNanosecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, false, time.Second, 5*time.Second)
		f.on(func() { f.m.Monitor("te-1") })
		advance(5*time.Second - time.Nanosecond)
		assert.Empty(t, f.take())
		advance(time.Nanosecond)
		assert.Equal(t, []event{{At: 5 * time.Second, Kind: "timeout", Target: "te-1"}}, f.take())
	})
}

func TestHeartbeatsKeepATargetAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, false, 0, 0)
		f.on(func() { f.m.Monitor("te-1"); f.m.Monitor("te-2") })
		// te-1 sends a heartbeat every 49 s for an hour; te-2 stays silent.
		for range 73 {
			advance(49 * time.Second)
			f.on(func() { f.m.ReceiveHeartbeat("te-1") })
		}
		assert.Equal(t, []event{{At: 50 * time.Second, Kind: "timeout", Target: "te-2"}}, f.take())
		var targets []string
		f.on(func() { targets = f.m.Targets() })
		assert.Equal(t, []string{"te-1"}, targets)

		// Then te-1 falls silent too: it times out 50 s after its last heartbeat (73 × 49 s).
		advance(time.Hour)
		assert.Equal(t, []event{{At: 73*49*time.Second + 50*time.Second, Kind: "timeout", Target: "te-1"}}, f.take())
	})
}

func TestMonitoringAgainCountsAsAHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, false, 0, 0)
		f.on(func() { f.m.Monitor("te-1") })
		advance(40 * time.Second)
		f.on(func() { f.m.Monitor("te-1") })
		advance(time.Hour)
		assert.Equal(t, []event{{At: 90 * time.Second, Kind: "timeout", Target: "te-1"}}, f.take())
	})
}

func TestUnmonitorStopsTheTimeoutAndTheRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, true, 0, 0)
		var was, again bool
		f.on(func() {
			f.m.Monitor("te-1")
			was = f.m.Unmonitor("te-1")
			again = f.m.Unmonitor("te-1")
		})
		assert.True(t, was)
		assert.False(t, again)
		advance(time.Hour)
		assert.Empty(t, f.take(), "neither requests nor a timeout for an unmonitored target")

		// Unmonitoring between two ticks: requests stop after the last tick it was monitored at.
		f.on(func() { f.m.Monitor("te-2") })
		advance(25 * time.Second)
		f.on(func() { f.m.Unmonitor("te-2") })
		advance(time.Hour)
		assert.Equal(t, []event{
			{At: time.Hour + 10*time.Second, Kind: "request", Target: "te-2"},
			{At: time.Hour + 20*time.Second, Kind: "request", Target: "te-2"},
		}, f.take())
	})
}

func TestSenderRequestsAtExactIntervalSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, true, 0, 0)
		f.on(func() {
			f.answer["te-1"] = true
			f.m.Monitor("te-1")
			f.m.Monitor("te-2")
		})
		advance(10*time.Second - time.Nanosecond)
		assert.Empty(t, f.take(), "the first request comes one interval after monitoring starts")
		advance(time.Nanosecond)
		assert.Equal(t, []event{
			{At: 10 * time.Second, Kind: "request", Target: "te-1"},
			{At: 10 * time.Second, Kind: "request", Target: "te-2"},
		}, f.take())

		// A target monitored between ticks joins at the next tick. te-2 never answers a request;
		// it sends one heartbeat of its own at 15 s.
		advance(5 * time.Second)
		f.on(func() {
			f.answer["te-3"] = true
			f.m.Monitor("te-3")
			f.m.ReceiveHeartbeat("te-2")
		})
		advance(55 * time.Second) // to 70 s
		want := []event{}
		for _, at := range []time.Duration{20, 30, 40, 50, 60} {
			for _, k := range []string{"te-1", "te-2", "te-3"} {
				want = append(want, event{At: at * time.Second, Kind: "request", Target: k})
			}
		}
		// te-2 times out 50 s after its heartbeat; the others answer every request.
		want = append(want, event{At: 65 * time.Second, Kind: "timeout", Target: "te-2"},
			event{At: 70 * time.Second, Kind: "request", Target: "te-1"},
			event{At: 70 * time.Second, Kind: "request", Target: "te-3"})
		assert.Equal(t, want, f.take())

		// te-1 and te-3 stay monitored; requests keep their 10 s steps.
		advance(time.Hour)
		got := f.take()
		require.Len(t, got, 2*360)
		for i, e := range got {
			require.Equal(t, event{At: 80*time.Second + time.Duration(i/2)*10*time.Second, Kind: "request", Target: []string{"te-1", "te-3"}[i%2]}, e, "event %d", i)
		}
	})
}

func TestTickStopsWithoutTargetsAndRestartsInAFreshPhase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, true, time.Second, 5*time.Second)
		f.on(func() { f.m.Monitor("a") })
		advance(1500 * time.Millisecond)
		f.on(func() { f.m.Unmonitor("a") })
		advance(time.Minute) // the tick at 2 s finds nothing and stops
		f.on(func() { f.m.Monitor("b") })
		advance(2 * time.Second)
		start := 1500*time.Millisecond + time.Minute
		assert.Equal(t, []event{
			{At: time.Second, Kind: "request", Target: "a"},
			{At: start + time.Second, Kind: "request", Target: "b"},
			{At: start + 2*time.Second, Kind: "request", Target: "b"},
		}, f.take())
	})
}

func TestTimeoutCallbackMayMonitorAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loop := mainloop.New("again")
		defer loop.Close()
		start := time.Now()
		var at []time.Duration
		var m *heartbeat.Manager[string]
		m, err := heartbeat.New(heartbeat.Config[string]{
			Timers:              loop,
			Timeout:             5 * time.Second,
			Interval:            time.Second,
			RPCFailureThreshold: heartbeat.RPCFailureDetectionDisabled,
			OnTimeout: func(k string) {
				at = append(at, time.Since(start))
				if len(at) < 3 {
					m.Monitor(k)
				}
			},
		})
		require.NoError(t, err)
		loop.Execute(func() { m.Monitor("rm") })
		time.Sleep(time.Minute)
		synctest.Wait()
		require.NoError(t, loop.Call(context.Background(), func() error { return nil }))
		assert.Equal(t, []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second}, at)
	})
}

func TestStopCancelsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, true, 0, 0)
		f.on(func() { f.m.Monitor("te-1") })
		advance(10 * time.Second)
		f.on(func() {
			f.m.Stop()
			f.m.Stop()
			f.m.Monitor("te-2")
		})
		var targets []string
		var known bool
		f.on(func() { targets, known = f.m.Targets(), f.m.ReceiveHeartbeat("te-1") })
		assert.Empty(t, targets)
		assert.False(t, known)
		advance(time.Hour)
		assert.Equal(t, []event{{At: 10 * time.Second, Kind: "request", Target: "te-1"}}, f.take())
	})
}

func TestNewValidatesAndDefaults(t *testing.T) {
	loop := mainloop.New("validate")
	defer loop.Close()
	noop := func(string) {}
	noop2 := func(string, error) {}
	m, err := heartbeat.New(heartbeat.Config[string]{Timers: loop, OnTimeout: noop, OnUnreachable: noop2})
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, m.Interval())
	assert.Equal(t, 50*time.Second, m.Timeout())
	assert.Equal(t, 2, m.RPCFailureThreshold())
	assert.Equal(t, heartbeat.DefaultHeartbeatInterval, m.Interval())
	assert.Equal(t, heartbeat.DefaultHeartbeatTimeout, m.Timeout())
	assert.Equal(t, heartbeat.DefaultRPCFailureThreshold, m.RPCFailureThreshold())
	// Without the detection OnUnreachable may be nil.
	m, err = heartbeat.New(heartbeat.Config[string]{Timers: loop, OnTimeout: noop, RPCFailureThreshold: -1})
	require.NoError(t, err)
	assert.Equal(t, heartbeat.RPCFailureDetectionDisabled, m.RPCFailureThreshold())

	for _, tc := range []struct {
		cfg  heartbeat.Config[string]
		want string
	}{
		{heartbeat.Config[string]{OnTimeout: noop, OnUnreachable: noop2}, "heartbeat: Config.Timers is nil"},
		{heartbeat.Config[string]{Timers: loop, OnUnreachable: noop2}, "heartbeat: Config.OnTimeout is nil"},
		{heartbeat.Config[string]{Timers: loop, OnTimeout: noop}, "heartbeat: Config.OnUnreachable is nil and heartbeat.rpc-failure-threshold is not -1"},
		{heartbeat.Config[string]{Timers: loop, OnTimeout: noop, RPCFailureThreshold: 3}, "heartbeat: Config.OnUnreachable is nil and heartbeat.rpc-failure-threshold is not -1"},
		{heartbeat.Config[string]{Timers: loop, OnTimeout: noop, OnUnreachable: noop2, RPCFailureThreshold: -2}, "heartbeat: heartbeat.rpc-failure-threshold -2: want a positive number of failed heartbeat RPCs, or -1 to turn the detection off"},
		{heartbeat.Config[string]{Timers: loop, OnTimeout: noop, OnUnreachable: noop2, Interval: -time.Second}, "heartbeat: heartbeat.interval -1s and heartbeat.timeout 0s must not be negative"},
		{heartbeat.Config[string]{Timers: loop, OnTimeout: noop, OnUnreachable: noop2, Timeout: 5 * time.Second}, "heartbeat: heartbeat.timeout 5s is shorter than heartbeat.interval 10s"},
		{heartbeat.Config[string]{Timers: loop, OnTimeout: noop, OnUnreachable: noop2, Interval: time.Minute}, "heartbeat: heartbeat.timeout 50s is shorter than heartbeat.interval 1m0s"},
	} {
		_, err := heartbeat.New(tc.cfg)
		assert.EqualError(t, err, tc.want)
	}

	i, to, err := heartbeat.Resolve(time.Second, 0)
	require.NoError(t, err)
	assert.Equal(t, [2]time.Duration{time.Second, 50 * time.Second}, [2]time.Duration{i, to})
	i, to, err = heartbeat.Resolve(2*time.Second, 2*time.Second)
	require.NoError(t, err)
	assert.Equal(t, [2]time.Duration{2 * time.Second, 2 * time.Second}, [2]time.Duration{i, to})
}

func TestTimeoutError(t *testing.T) {
	var err error = &heartbeat.TimeoutError{Target: "TaskExecutor taskexecutor-1", Timeout: 5 * time.Second}
	assert.EqualError(t, err, "heartbeat of TaskExecutor taskexecutor-1 timed out after 5s")
	wrapped := fmt.Errorf("task lost its slot: %w", err)
	assert.ErrorIs(t, wrapped, heartbeat.ErrTimeout)
	var te *heartbeat.TimeoutError
	require.True(t, errors.As(wrapped, &te))
	assert.Equal(t, "TaskExecutor taskexecutor-1", te.Target)
}

// Unmonitor marks a target and compacts later, so the order of the targets left (first
// monitored first; a target monitored again goes last) must survive removals on both sides of
// a compaction, and a tick must request exactly those targets in that order.
func TestTargetsKeepTheirOrderAcrossRemovals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, true, 0, 0)
		var targets []string
		f.on(func() {
			for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
				f.m.Monitor(k)
			}
			f.m.Unmonitor("b")
			f.m.Unmonitor("d")
			f.m.Monitor("b") // again: now last
			f.m.Unmonitor("a")
			f.m.Unmonitor("e") // more than half of the slice dead: compacted here
			f.m.Unmonitor("x") // never monitored: nothing changes
			f.m.Monitor("c")   // a heartbeat: keeps its place
			targets = f.m.Targets()
		})
		assert.Equal(t, []string{"c", "f", "b"}, targets)
		advance(10 * time.Second)
		assert.Equal(t, []event{
			{At: 10 * time.Second, Kind: "request", Target: "c"},
			{At: 10 * time.Second, Kind: "request", Target: "f"},
			{At: 10 * time.Second, Kind: "request", Target: "b"},
		}, f.take())
	})
}

// BenchmarkUnmonitor monitors n targets, then unmonitors them oldest first (as jobs end in the
// order they started): one op is all n Unmonitor calls. Deleting from a slice made this
// O(n²); marking and compacting makes it O(n).
func BenchmarkUnmonitor(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("targets-%d", n), func(b *testing.B) {
			m, err := heartbeat.New(heartbeat.Config[int]{Timers: nopTimers{}, OnTimeout: func(int) {}, OnUnreachable: func(int, error) {}})
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for k := range n {
					m.Monitor(k)
				}
				b.StartTimer()
				for k := range n {
					m.Unmonitor(k)
				}
			}
		})
	}
}

// nopTimers schedules nothing.
type nopTimers struct{}

func (nopTimers) Schedule(time.Duration, func()) func() bool { return func() bool { return true } }
