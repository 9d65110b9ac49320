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

	"github.com/jobgraph/jobgraph/internal/heartbeat"
	"github.com/jobgraph/jobgraph/rpc"
)

// gone is the error of a heartbeat RPC whose recipient could not be reached (an
// rpc.UnreachableError), numbered so a test can tell which failure the Manager reported.
type gone struct{ n int }

func (e gone) Error() string   { return fmt.Sprintf("recipient gone (%d)", e.n) }
func (gone) Unreachable() bool { return true }
func goneAt(n int) error       { return fmt.Errorf("heartbeat request: %w", gone{n}) }
func alwaysGone(n int) error   { return goneAt(n) }
func holdAll(int) error        { return errHold }
func answeredNot(n int) error  { return fmt.Errorf("answered with an error (%d)", n) }

// slowGone is unreachable and a timeout at once: a timeout never counts.
type slowGone struct{}

func (slowGone) Error() string     { return "recipient gone, or slow" }
func (slowGone) Unreachable() bool { return true }
func (slowGone) Timeout() bool     { return true }

// notGone is an UnreachableError that says it is not unreachable.
type notGone struct{}

func (notGone) Error() string     { return "reached after all" }
func (notGone) Unreachable() bool { return false }

// unreachableFixture is a sender with heartbeat.interval 1 s, heartbeat.timeout 5.5 s (so that
// no request falls on the instant of a timeout) and heartbeat.rpc-failure-threshold threshold
// (0: the default, 2).
func unreachableFixture(t *testing.T, threshold int) *fixture {
	return newFixtureWith(t, true, heartbeat.Config[string]{Interval: time.Second, Timeout: 5500 * time.Millisecond, RPCFailureThreshold: threshold})
}

func requestsAt(target string, seconds ...int) []event {
	var out []event
	for _, s := range seconds {
		out = append(out, event{At: time.Duration(s) * time.Second, Kind: "request", Target: target})
	}
	return out
}

func TestTwoUnreachableRPCsInARowLoseTheTargetAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := unreachableFixture(t, 0)
		f.on(func() {
			f.answer["alive"] = true
			f.results["dead"] = alwaysGone
			f.m.Monitor("alive")
			f.m.Monitor("dead")
		})
		advance(time.Minute)
		want := []event{
			{At: time.Second, Kind: "request", Target: "alive"},
			{At: time.Second, Kind: "request", Target: "dead"},
			{At: 2 * time.Second, Kind: "request", Target: "alive"},
			{At: 2 * time.Second, Kind: "request", Target: "dead"},
			// At the second failure in a row, 3.5 s before its heartbeat.timeout: once, with the
			// second failure as the cause, and never a timeout afterwards.
			{At: 2 * time.Second, Kind: "unreachable", Target: "dead", Cause: goneAt(2)},
		}
		got := f.take()
		require.GreaterOrEqual(t, len(got), len(want))
		assert.Equal(t, want, got[:len(want)])
		for _, e := range got[len(want):] {
			assert.Equal(t, "alive", e.Target, "nothing more of the lost target: %+v", e)
			assert.Equal(t, "request", e.Kind)
		}
		assert.Len(t, got[len(want):], 58, "alive is asked every second up to 60 s")
		var monitored bool
		f.on(func() { monitored = f.m.IsMonitored("dead") })
		assert.False(t, monitored, "a target found unreachable is no longer monitored")
		var u gone
		require.ErrorAs(t, got[4].Cause, &u)
		assert.Equal(t, 2, u.n)
	})
}

func TestThresholdOfOneLosesTheTargetAtTheFirstUnreachableRPC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := unreachableFixture(t, 1)
		f.on(func() { f.results["dead"] = alwaysGone; f.m.Monitor("dead") })
		advance(time.Minute)
		assert.Equal(t, append(requestsAt("dead", 1), event{At: time.Second, Kind: "unreachable", Target: "dead", Cause: goneAt(1)}), f.take())
	})
}

func TestASuccessfulRPCStartsTheCountOverAHeartbeatDoesNot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := unreachableFixture(t, 3)
		// Requests 1, 2 fail; 3 succeeds; 4, 5 fail; 6 succeeds; 7, 8, 9 fail: lost at 9 s.
		f.on(func() {
			f.results["te"] = func(n int) error {
				if n == 3 || n == 6 {
					f.m.ReceiveHeartbeat("te") // the answer, which keeps the timeout away
					return nil
				}
				return goneAt(n)
			}
			f.m.Monitor("te")
		})
		advance(time.Minute)
		assert.Equal(t, append(requestsAt("te", 1, 2, 3, 4, 5, 6, 7, 8, 9),
			event{At: 9 * time.Second, Kind: "unreachable", Target: "te", Cause: goneAt(9)}), f.take())

		// A heartbeat received between failures (the target's own, say) does not start the count
		// over: Flink counts RPC results only. Failures at 1 s and 3 s of this round, a
		// heartbeat at 2.5 s, a success nowhere: lost at the third failure in a row.
		g := unreachableFixture(t, 3)
		g.on(func() { g.results["te"] = alwaysGone; g.m.Monitor("te") })
		advance(2500 * time.Millisecond)
		g.on(func() { g.m.ReceiveHeartbeat("te") })
		advance(time.Minute)
		assert.Equal(t, append(requestsAt("te", 1, 2, 3),
			event{At: 3 * time.Second, Kind: "unreachable", Target: "te", Cause: goneAt(3)}), g.take())
	})
}

func TestTimeoutsAndAnsweredErrorsNeitherCountNorStartTheCountOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := unreachableFixture(t, 0)
		// Never unreachable: a request that ran into its deadline, one that is unreachable but a
		// timeout too, an error the target answered with, an UnreachableError saying false. The
		// target is lost by its heartbeat.timeout at 5.5 s, not earlier.
		kinds := []error{
			fmt.Errorf("heartbeat request: %w", context.DeadlineExceeded),
			fmt.Errorf("heartbeat request: %w", slowGone{}),
			answeredNot(3),
			fmt.Errorf("heartbeat request: %w", notGone{}),
		}
		f.on(func() {
			f.results["te"] = func(n int) error { return kinds[(n-1)%len(kinds)] }
			f.m.Monitor("te")
		})
		advance(time.Minute)
		assert.Equal(t, append(requestsAt("te", 1, 2, 3, 4, 5), event{At: 5500 * time.Millisecond, Kind: "timeout", Target: "te"}), f.take())

		// Between two unreachable failures they do not start the count over either: gone at 1 s,
		// a timeout at 2 s, an answered error at 3 s, gone at 4 s: lost at 4 s.
		g := unreachableFixture(t, 0)
		g.on(func() {
			g.results["te"] = func(n int) error {
				switch n {
				case 2:
					return kinds[0]
				case 3:
					return kinds[2]
				}
				return goneAt(n)
			}
			g.m.Monitor("te")
		})
		advance(time.Minute)
		assert.Equal(t, append(requestsAt("te", 1, 2, 3, 4), event{At: 4 * time.Second, Kind: "unreachable", Target: "te", Cause: goneAt(4)}), g.take())
	})
}

func TestThresholdMinusOneWaitsForTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := unreachableFixture(t, heartbeat.RPCFailureDetectionDisabled)
		f.on(func() { f.results["dead"] = alwaysGone; f.m.Monitor("dead") })
		var tracked func(error)
		f.on(func() { tracked = f.m.TrackRPC("dead") })
		for range 10 {
			f.on(func() { tracked(goneAt(0)) })
		}
		advance(time.Minute)
		assert.Equal(t, append(requestsAt("dead", 1, 2, 3, 4, 5), event{At: 5500 * time.Millisecond, Kind: "timeout", Target: "dead"}), f.take())
	})
}

func TestAStaleRPCResultDoesNotCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := unreachableFixture(t, 0)
		// The request at 1 s is held: its failure comes back after te was unmonitored and
		// monitored again (at 1.5 s), as do the failures of an answer TrackRPC was called for
		// before: counted, they would lose te at 1.5 s. The new monitoring's own requests (the
		// ticks go on at whole seconds) fail at 2 s and 3 s: only they count, so te is lost at
		// 3 s, at the second of them.
		f.on(func() { f.results["te"] = holdAll; f.m.Monitor("te") })
		var tracked func(error)
		f.on(func() { tracked = f.m.TrackRPC("te") })
		advance(1500 * time.Millisecond)
		f.on(func() {
			f.m.Unmonitor("te")
			f.m.Monitor("te")
			f.results["te"] = alwaysGone
		})
		require.Len(t, f.held, 1)
		f.on(func() {
			f.held[0](goneAt(100))
			tracked(goneAt(101))
			tracked(goneAt(102))
		})
		advance(time.Minute)
		assert.Equal(t, append(requestsAt("te", 1, 2, 3),
			event{At: 3 * time.Second, Kind: "unreachable", Target: "te", Cause: goneAt(3)}), f.take())

		// The same after a timeout and a Monitor again in OnTimeout's wake, and after an
		// unreachable loss: a result of the monitoring that ended is dropped.
		g := newFixtureWith(t, false, heartbeat.Config[string]{Interval: time.Second, Timeout: 5 * time.Second})
		g.on(func() { g.m.Monitor("jm"); tracked = g.m.TrackRPC("jm") })
		advance(5 * time.Second) // jm times out
		g.on(func() { g.m.Monitor("jm") })
		g.on(func() { tracked(goneAt(1)) })
		var second func(error)
		g.on(func() { second = g.m.TrackRPC("jm") })
		g.on(func() { second(goneAt(2)) })
		advance(time.Second)
		var monitored bool
		g.on(func() { monitored = g.m.IsMonitored("jm") })
		assert.True(t, monitored, "one failure of the new monitoring, the stale one not counted")
		g.on(func() { g.m.TrackRPC("jm")(goneAt(3)) })
		// Monitored again, then the lost monitoring's report twice: were it counted, jm would be
		// lost once more.
		g.on(func() { g.m.Monitor("jm"); second(goneAt(4)); second(goneAt(5)) })
		advance(time.Second)
		g.on(func() { monitored = g.m.IsMonitored("jm") })
		assert.True(t, monitored)
		assert.Equal(t, []event{
			{At: 5 * time.Second, Kind: "timeout", Target: "jm"},
			{At: 6 * time.Second, Kind: "unreachable", Target: "jm", Cause: goneAt(3)},
		}, g.take())
	})
}

func TestTrackRPCCountsAReceiversAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixtureWith(t, false, heartbeat.Config[string]{Interval: time.Second, Timeout: 5 * time.Second})
		f.on(func() {
			f.m.TrackRPC("never-monitored")(goneAt(0)) // nothing to count for
			f.m.TrackRPC("never-monitored")(goneAt(0))
			f.m.Monitor("rm")
		})
		// Answers at 1 s (gone), 2 s (delivered), 3 s (gone), 4 s (gone): lost at 4 s.
		for _, err := range []error{goneAt(1), nil, goneAt(3), goneAt(4)} {
			advance(time.Second)
			f.on(func() {
				report := f.m.TrackRPC("rm")
				if err == nil {
					f.m.ReceiveHeartbeat("rm")
				}
				report(err)
			})
		}
		advance(time.Minute)
		assert.Equal(t, []event{{At: 4 * time.Second, Kind: "unreachable", Target: "rm", Cause: goneAt(4)}}, f.take())
	})
}

func TestStopDropsRPCResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := unreachableFixture(t, 1)
		f.on(func() { f.results["te"] = holdAll; f.m.Monitor("te") })
		advance(time.Second)
		require.Len(t, f.held, 1)
		f.on(func() { f.m.Stop(); f.held[0](goneAt(1)) })
		advance(time.Minute)
		assert.Equal(t, requestsAt("te", 1), f.take())
	})
}

func TestUnreachableError(t *testing.T) {
	var err error = &heartbeat.UnreachableError{Target: "TaskExecutor taskexecutor-1", Failures: 2, LastFailure: "TaskExecutor taskexecutor-1: taskexecutor: killed"}
	assert.EqualError(t, err, "TaskExecutor taskexecutor-1 is no longer reachable: 2 consecutive heartbeat RPCs failed, the last with: TaskExecutor taskexecutor-1: taskexecutor: killed")
	wrapped := fmt.Errorf("task lost its slot: %w", err)
	assert.ErrorIs(t, wrapped, heartbeat.ErrUnreachable)
	assert.ErrorIs(t, wrapped, rpc.ErrHeartbeatTargetUnreachable)
	assert.NotErrorIs(t, wrapped, heartbeat.ErrTimeout, "handled as a timeout, but not one")
	assert.False(t, rpc.IsUnreachable(wrapped), "the cause of a lost peer is not itself an unreachable call")
	u, ok := errors.AsType[*heartbeat.UnreachableError](wrapped)
	require.True(t, ok)
	assert.Equal(t, 2, u.Failures)
	assert.EqualError(t, &heartbeat.UnreachableError{Target: "the JobMaster of job j", Failures: 1}, "the JobMaster of job j is no longer reachable: its heartbeat RPC failed")
}

func TestResolveRPCFailureThreshold(t *testing.T) {
	for in, want := range map[int]int{0: 2, -1: -1, 1: 1, 2: 2, 10: 10} {
		got, err := heartbeat.ResolveRPCFailureThreshold(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []int{-2, -100} {
		_, err := heartbeat.ResolveRPCFailureThreshold(in)
		assert.EqualError(t, err, fmt.Sprintf("heartbeat: heartbeat.rpc-failure-threshold %d: want a positive number of failed heartbeat RPCs, or -1 to turn the detection off", in))
	}
}
