package scheduler

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

// The scenarios re-express Flink's *RestartBackoffTimeStrategyTest with the same numbers.
// Times are milliseconds unless the test says otherwise.

var errRestartTestFailure = errors.New("task failed")

// restartTestClock is a manual clock: time moves only when the test advances it.
type restartTestClock struct{ now time.Time }

func newRestartTestClock() *restartTestClock {
	return &restartTestClock{now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *restartTestClock) Now() time.Time          { return c.now }
func (c *restartTestClock) advance(d time.Duration) { c.now = c.now.Add(d) }

// restartConstRandom is a random source that always draws r, and counts its draws.
type restartConstRandom struct {
	r     float64
	draws int
}

func (c *restartConstRandom) Float64() float64 { c.draws++; return c.r }

// exponentialDelay returns the exponential-delay configuration with the given options.
func exponentialDelayConfig(initial, maxBackoff time.Duration, multiplier float64, reset time.Duration,
	jitter float64, attempts int) jobgraph.RestartStrategyConfig {
	return jobgraph.RestartStrategyConfig{
		Type:                                       jobgraph.RestartStrategyExponentialDelay,
		ExponentialDelayInitialBackoff:             initial,
		ExponentialDelayMaxBackoff:                 maxBackoff,
		ExponentialDelayBackoffMultiplier:          multiplier,
		ExponentialDelayResetBackoffThreshold:      reset,
		ExponentialDelayJitterFactor:               jitter,
		ExponentialDelayAttemptsBeforeResetBackoff: attempts,
	}
}

func newTestRestartStrategy(t *testing.T, cfg jobgraph.RestartStrategyConfig, clock *restartTestClock,
	random func() float64) RestartBackoffTimeStrategy {
	t.Helper()
	s, err := NewRestartBackoffTimeStrategy(cfg, jobgraph.CheckpointingSettings{}, clock.Now, random)
	require.NoError(t, err)
	return s
}

func restartBackoff(t *testing.T, s RestartBackoffTimeStrategy) time.Duration {
	t.Helper()
	d, err := s.BackoffTime()
	require.NoError(t, err)
	return d
}

// Flink: testMaxAttempts. With attempts-before-reset-backoff 13, each of 14 failures 4 ms apart
// (more than the 3 ms max backoff, so none merges) starts a new attempt; the job may restart after
// each of the first 13 and not after the 14th.
func TestExponentialDelayRestartMaxAttempts(t *testing.T) {
	const ms = time.Millisecond
	clock := newRestartTestClock()
	random := &restartConstRandom{r: 0}
	s := newTestRestartStrategy(t, exponentialDelayConfig(1*ms, 3*ms, 1.2, 10*ms, 0.25, 13), clock, random.Float64)

	// ⌊1.2^k⌋ ms clamped to [1, 3]; jitter ⌊b×0.25⌋ is 0 below 4 ms, and from k = 8 (⌊4.29⌋ = 4 ms,
	// jitter ±1) the clamp to 3 ms wins even at the lowest draw.
	wantBackoffs := []time.Duration{1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3}
	for i, want := range wantBackoffs {
		failure := i + 1
		require.True(t, s.CanRestart(), "before failure %d", failure)
		require.True(t, s.NotifyFailure(errRestartTestFailure), "failure %d starts an attempt", failure)
		assert.Equal(t, want*ms, restartBackoff(t, s), "backoff after failure %d", failure)
		assert.Equal(t, failure <= 13, s.CanRestart(), "may restart after failure %d", failure)
		clock.advance(4 * ms)
	}
	assert.False(t, s.CanRestart())
}

// Flink: testBackoffMultiplier. Failures 301 ms apart (more than the max backoff and far less
// than the reset threshold): ⌊4 × 2.3^k⌋ = 4, 9, 21.
func TestExponentialDelayBackoffMultiplier(t *testing.T) {
	const ms = time.Millisecond
	clock := newRestartTestClock()
	s := newTestRestartStrategy(t, exponentialDelayConfig(4*ms, 300*ms, 2.3, math.MaxInt32*ms, 0, 10), clock, nil)

	for _, want := range []time.Duration{4 * ms, 9 * ms, 21 * ms} {
		require.True(t, s.NotifyFailure(errRestartTestFailure))
		assert.Equal(t, want, restartBackoff(t, s))
		clock.advance(301 * ms)
	}
}

// Flink: testResetBackoff. The reset threshold counts from the previous attempt's restart time
// (failure time + backoff): a failure at reset + backoff − 1 after the previous failure grows the
// backoff, one at reset + backoff resets it.
func TestExponentialDelayResetBackoff(t *testing.T) {
	const ms = time.Millisecond
	clock := newRestartTestClock()
	s := newTestRestartStrategy(t, exponentialDelayConfig(1*ms, 5*ms, 2, 8*ms, 0.25, math.MaxInt), clock, nil)

	require.True(t, s.NotifyFailure(errRestartTestFailure))
	require.Equal(t, 1*ms, restartBackoff(t, s))

	clock.advance(8*ms + restartBackoff(t, s) - 1*ms)
	require.True(t, s.NotifyFailure(errRestartTestFailure))
	assert.Equal(t, 2*ms, restartBackoff(t, s), "backoff grows")

	clock.advance(8*ms + restartBackoff(t, s))
	require.True(t, s.NotifyFailure(errRestartTestFailure))
	assert.Equal(t, 1*ms, restartBackoff(t, s), "backoff is reset")
}

// Flink: testMultipleSettings.
func TestExponentialDelayRestartMultipleSettings(t *testing.T) {
	const ms = time.Millisecond
	clock := newRestartTestClock()
	s := newTestRestartStrategy(t, exponentialDelayConfig(1*ms, 9*ms, 2, 80*ms, 0.25, math.MaxInt), clock, nil)

	step := func(advance, want time.Duration, msg string) {
		t.Helper()
		clock.advance(advance)
		require.True(t, s.NotifyFailure(errRestartTestFailure), msg)
		require.True(t, s.CanRestart(), msg)
		require.Equal(t, want, restartBackoff(t, s), msg)
	}
	step(0, 1*ms, "the first failure has the initial backoff")
	step(81*ms, 1*ms, "80 ms after the restart time: reset")
	step(4*ms, 2*ms, "3 ms after the restart time: the backoff grows")
	step(90*ms, 1*ms, "88 ms after the restart time: reset")
	step(10*ms, 2*ms, "and grows again")
}

// restartMergedWindow fails ten times in each millisecond of a window of the given length that starts
// now: only the very first failure starts an attempt, and BackoffTime counts down to the same
// restart. The clock ends at the restart time.
func restartMergedWindow(t *testing.T, s RestartBackoffTimeStrategy, clock *restartTestClock, window time.Duration) {
	const ms = time.Millisecond
	t.Helper()
	first := true
	for elapsed := time.Duration(0); elapsed < window; elapsed += ms {
		for range 10 {
			require.Equal(t, first, s.NotifyFailure(errRestartTestFailure), "at %v into the %v window", elapsed, window)
			first = false
			require.True(t, s.CanRestart())
			require.Equal(t, window-elapsed, restartBackoff(t, s), "at %v into the %v window", elapsed, window)
		}
		clock.advance(ms)
	}
}

// Flink: testMergeMultipleExceptionsIntoOneAttempt. Failures up to the pending restart time merge
// into the attempt; 1 ms later one starts the next attempt. Windows 2, 4, then 6 (8 clamped to
// the max); the attempt after the third cannot restart.
func TestExponentialDelayRestartMergesFailuresIntoOneAttempt(t *testing.T) {
	const ms = time.Millisecond
	clock := newRestartTestClock()
	s := newTestRestartStrategy(t, exponentialDelayConfig(2*ms, 6*ms, 2, 80*ms, 0, 3), clock, nil)

	restartMergedWindow(t, s, clock, 2*ms)
	require.False(t, s.NotifyFailure(errRestartTestFailure), "a failure exactly at the restart time still merges")
	require.Equal(t, time.Duration(0), restartBackoff(t, s))

	clock.advance(ms)
	restartMergedWindow(t, s, clock, 4*ms)
	clock.advance(ms)
	restartMergedWindow(t, s, clock, 6*ms)

	clock.advance(ms)
	assert.True(t, s.NotifyFailure(errRestartTestFailure))
	assert.False(t, s.CanRestart())
}

// Flink: testMergingExceptionsWorksWithResetting. The same windows, ten times over, each round
// starting the reset threshold after the last restart time, so the attempts limit is never hit.
func TestExponentialDelayRestartMergingWorksWithResetting(t *testing.T) {
	const ms = time.Millisecond
	clock := newRestartTestClock()
	s := newTestRestartStrategy(t, exponentialDelayConfig(2*ms, 6*ms, 2, 80*ms, 0, 3), clock, nil)

	for range 10 {
		restartMergedWindow(t, s, clock, 2*ms)
		clock.advance(ms)
		restartMergedWindow(t, s, clock, 4*ms)
		clock.advance(ms)
		restartMergedWindow(t, s, clock, 6*ms)
		clock.advance(80 * ms)
	}
}

// Flink: testNotCallNotifyFailure; the same holds for every strategy.
func TestRestartBackoffTimeBeforeAnyFailure(t *testing.T) {
	const ms = time.Millisecond
	for _, cfg := range []jobgraph.RestartStrategyConfig{
		exponentialDelayConfig(42*ms, 45*ms, 2, 8*ms, 0, 10),
		jobgraph.NoRestart(),
		jobgraph.FixedDelayRestart(3, 10*time.Second),
		jobgraph.FailureRateRestart(3, 10*time.Second, 10*time.Second),
	} {
		s := newTestRestartStrategy(t, cfg, newRestartTestClock(), nil)
		_, err := s.BackoffTime()
		assert.ErrorIs(t, err, ErrNoFailureYet, string(cfg.Type))
	}
}

// Flink: testInitialBackoff.
func TestExponentialDelayInitialBackoff(t *testing.T) {
	const ms = time.Millisecond
	s := newTestRestartStrategy(t, exponentialDelayConfig(42*ms, 45*ms, 2, 8*ms, 0, math.MaxInt), newRestartTestClock(), nil)
	require.True(t, s.NotifyFailure(errRestartTestFailure))
	assert.Equal(t, 42*ms, restartBackoff(t, s))
}

// restartJitterDraws drives the random source through its range: both ends and the middle, and steps
// in between.
var restartJitterDraws = []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, math.Nextafter(1, 0)}

// assertRestartJitterRange makes, for each draw, a fresh strategy that fails `failures` times 8 ms apart
// (beyond the 7 ms max backoff), and asserts that the last backoff is in want and that every value
// of want is reached (both extremes included).
func assertRestartJitterRange(t *testing.T, cfg jobgraph.RestartStrategyConfig, failures int, want ...time.Duration) {
	const ms = time.Millisecond
	t.Helper()
	seen := map[time.Duration]bool{}
	for _, r := range restartJitterDraws {
		clock := newRestartTestClock()
		random := &restartConstRandom{r: r}
		s := newTestRestartStrategy(t, cfg, clock, random.Float64)
		for range failures {
			clock.advance(8 * ms)
			require.True(t, s.NotifyFailure(errRestartTestFailure))
		}
		got := restartBackoff(t, s)
		require.Contains(t, want, got, "%d failures, draw %v", failures, r)
		seen[got] = true
	}
	for _, w := range want {
		assert.True(t, seen[w], "%d failures: backoff %v never drawn", failures, w)
	}
}

// Flink: testJitter. Backoff b with jitter 0.25 varies by ±⌊b/4⌋ ms, then is clamped to the max:
// after 2 failures 4 ± 1, after 3 failures 8 ± 2 clamped to 7, after 4 failures 16 ± 4 clamped.
func TestExponentialDelayJitter(t *testing.T) {
	const ms = time.Millisecond
	cfg := exponentialDelayConfig(2*ms, 7*ms, 2, math.MaxInt32*ms, 0.25, math.MaxInt)
	assertRestartJitterRange(t, cfg, 2, 3*ms, 4*ms, 5*ms)
	assertRestartJitterRange(t, cfg, 3, 6*ms, 7*ms)
	assertRestartJitterRange(t, cfg, 4, 7*ms)
}

// Flink: testJitterNoHigherThanMax. Jitter 1 can take the backoff to 0, which is clamped up to the
// initial backoff.
func TestExponentialDelayJitterWithinInitialAndMax(t *testing.T) {
	const ms = time.Millisecond
	cfg := exponentialDelayConfig(1*ms, 7*ms, 2, math.MaxInt32*ms, 1, math.MaxInt)
	assertRestartJitterRange(t, cfg, 1, 1*ms, 2*ms)
	assertRestartJitterRange(t, cfg, 2, 1*ms, 2*ms, 3*ms, 4*ms)
	assertRestartJitterRange(t, cfg, 3, 1*ms, 2*ms, 3*ms, 4*ms, 5*ms, 6*ms, 7*ms)
}

// How a draw maps to the jitter: [0, 1) is cut into 2j+1 equal parts, lowest first.
func TestExponentialDelayJitterDrawMapping(t *testing.T) {
	const ms = time.Millisecond
	cfg := exponentialDelayConfig(2*ms, 100*ms, 2, math.MaxInt32*ms, 0.25, math.MaxInt)
	for _, tc := range []struct {
		r    float64
		want time.Duration
	}{
		// The second attempt: 4 ms ± 1 ms, three parts of 1/3.
		{0, 3 * ms}, {0.33, 3 * ms}, {0.34, 4 * ms}, {0.5, 4 * ms}, {0.66, 4 * ms}, {0.67, 5 * ms},
		{math.Nextafter(1, 0), 5 * ms},
		// A source that breaks its contract cannot leave [-j, j].
		{-1, 3 * ms}, {1, 5 * ms}, {7, 5 * ms},
	} {
		clock := newRestartTestClock()
		random := &restartConstRandom{r: tc.r}
		s := newTestRestartStrategy(t, cfg, clock, random.Float64)
		require.True(t, s.NotifyFailure(errRestartTestFailure))
		assert.Zero(t, random.draws, "no draw when the jitter range is empty (2 ms × 0.25 < 1 ms)")
		clock.advance(3 * ms)
		require.True(t, s.NotifyFailure(errRestartTestFailure))
		assert.Equal(t, 1, random.draws)
		assert.Equal(t, tc.want, restartBackoff(t, s), "draw %v", tc.r)
	}
}

// Flink: testMaxBackoff. Growth stops at the max, however many attempts.
func TestExponentialDelayMaxBackoff(t *testing.T) {
	const ms = time.Millisecond
	clock := newRestartTestClock()
	random := &restartConstRandom{r: math.Nextafter(1, 0)}
	s := newTestRestartStrategy(t, exponentialDelayConfig(1*ms, 6*ms, 2, time.Hour, 0.25, math.MaxInt), clock, random.Float64)
	for i := range 2000 { // far beyond where 2^k overflows
		require.True(t, s.NotifyFailure(errRestartTestFailure))
		d := restartBackoff(t, s)
		require.LessOrEqual(t, d, 6*ms)
		if i >= 3 {
			require.Equal(t, 6*ms, d)
		}
		clock.advance(d + ms)
	}
	assert.True(t, s.CanRestart())
}

// Backoffs are whole milliseconds as in Flink: 1.5 s × 1.5^k.
func TestExponentialDelayBackoffWholeMilliseconds(t *testing.T) {
	const ms = time.Millisecond
	clock := newRestartTestClock()
	s := newTestRestartStrategy(t, exponentialDelayConfig(1500*ms, time.Minute, 1.5, time.Hour, 0, math.MaxInt), clock, nil)
	for _, want := range []time.Duration{1500 * ms, 2250 * ms, 3375 * ms, 5062 * ms, 7593 * ms} {
		require.True(t, s.NotifyFailure(errRestartTestFailure))
		assert.Equal(t, want, restartBackoff(t, s))
		clock.advance(want + ms)
	}
}

// Flink: FixedDelayRestartBackoffTimeStrategyTest. 3 attempts: the job may restart after each of
// three failures and not after the fourth; asking does not count; the backoff is the delay.
func TestFixedDelayRestart(t *testing.T) {
	s := newTestRestartStrategy(t, jobgraph.FixedDelayRestart(3, 10*time.Second), newRestartTestClock(), nil)
	for failure := 1; failure <= 3; failure++ {
		require.True(t, s.NotifyFailure(errRestartTestFailure))
		require.True(t, s.CanRestart(), "after failure %d", failure)
		require.True(t, s.CanRestart(), "asking again, after failure %d", failure)
		require.Equal(t, 10*time.Second, restartBackoff(t, s))
	}
	require.True(t, s.NotifyFailure(errRestartTestFailure))
	assert.False(t, s.CanRestart(), "after the 4th failure")
	assert.Equal(t, 10*time.Second, restartBackoff(t, s))
}

func TestFixedDelayRestartZeroAttempts(t *testing.T) {
	s := newTestRestartStrategy(t, jobgraph.FixedDelayRestart(0, 0), newRestartTestClock(), nil)
	assert.True(t, s.CanRestart(), "nothing has failed yet")
	require.True(t, s.NotifyFailure(errRestartTestFailure))
	assert.False(t, s.CanRestart())
	assert.Equal(t, time.Duration(0), restartBackoff(t, s))
}

// Flink: testFailuresExceedingRate. 3 per 10 s: three failures at once may restart, the 4th
// inside the window may not. The rate is judged when CanRestart is asked.
func TestFailureRateRestartExceedingRate(t *testing.T) {
	clock := newRestartTestClock()
	s := newTestRestartStrategy(t, jobgraph.FailureRateRestart(3, 10*time.Second, 0), clock, nil)
	for failure := 1; failure <= 3; failure++ {
		require.True(t, s.NotifyFailure(errRestartTestFailure))
		require.True(t, s.CanRestart(), "after failure %d", failure)
	}
	require.True(t, s.NotifyFailure(errRestartTestFailure))
	assert.False(t, s.CanRestart(), "the 4th failure inside 10 s")

	clock.advance(10 * time.Second)
	assert.False(t, s.CanRestart(), "the first failure is exactly 10 s old: still inside the window")
	clock.advance(1)
	assert.True(t, s.CanRestart(), "the first failure has left the window")
}

// Flink: testManyFailuresWithinRate. 1 per 1 ms with failures 2 ms apart never exceeds the rate.
func TestFailureRateRestartManyFailuresWithinRate(t *testing.T) {
	const ms = time.Millisecond
	clock := newRestartTestClock()
	s := newTestRestartStrategy(t, jobgraph.FailureRateRestart(1, 1*ms, 0), clock, nil)
	for failure := 1; failure <= 100; failure++ {
		require.True(t, s.NotifyFailure(errRestartTestFailure))
		require.True(t, s.CanRestart(), "after failure %d", failure)
		clock.advance(2 * ms)
	}
	assert.True(t, s.CanRestart())
}

// Only the failures of the latest window count: with 2 per 10 ms, the job may not restart while
// the oldest of the latest three failures is at most 10 ms old.
func TestFailureRateRestartSlidingWindow(t *testing.T) {
	const ms = time.Millisecond
	clock := newRestartTestClock()
	start := clock.now
	s := newTestRestartStrategy(t, jobgraph.FailureRateRestart(2, 10*ms, 0), clock, nil)
	for _, step := range []struct {
		advance time.Duration
		can     bool
	}{
		{0, true},       // failures at 0
		{4 * ms, true},  // 0, 4
		{4 * ms, false}, // 0, 4, 8: the oldest is 8 ms old
		{7 * ms, true},  // 4, 8, 15: 11 ms
		{2 * ms, false}, // 8, 15, 17: 9 ms
		{23 * ms, true}, // 15, 17, 40
		{11 * ms, true}, // 17, 40, 51
		{0, true},       // 40, 51, 51: 11 ms
		{0, false},      // 51, 51, 51
	} {
		clock.advance(step.advance)
		require.True(t, s.NotifyFailure(errRestartTestFailure))
		assert.Equal(t, step.can, s.CanRestart(), "after the failure at %v", clock.now.Sub(start))
	}
}

// Flink: testBackoffTime.
func TestFailureRateRestartBackoffTime(t *testing.T) {
	const ms = time.Millisecond
	s := newTestRestartStrategy(t, jobgraph.FailureRateRestart(1, 1*ms, 10*time.Second), newRestartTestClock(), nil)
	require.True(t, s.NotifyFailure(errRestartTestFailure))
	assert.Equal(t, 10*time.Second, restartBackoff(t, s))
}

func TestNoRestart(t *testing.T) {
	s := newTestRestartStrategy(t, jobgraph.NoRestart(), newRestartTestClock(), nil)
	assert.False(t, s.CanRestart())
	require.True(t, s.NotifyFailure(errRestartTestFailure))
	assert.False(t, s.CanRestart())
	assert.Equal(t, time.Duration(0), restartBackoff(t, s))
}

// restart-strategy.type unset: none without checkpointing, exponential-delay with Flink's defaults
// (initial 1 s, max 1 min, multiplier 1.5, reset 1 h, jitter 0.1, unlimited attempts) with it.
func TestNewRestartBackoffTimeStrategyDefaults(t *testing.T) {
	const ms = time.Millisecond
	clock := newRestartTestClock()

	s, err := NewRestartBackoffTimeStrategy(jobgraph.RestartStrategyConfig{}, jobgraph.CheckpointingSettings{}, clock.Now, nil)
	require.NoError(t, err)
	require.IsType(t, &noRestartStrategy{}, s)
	s.NotifyFailure(errRestartTestFailure)
	assert.False(t, s.CanRestart())

	checkpointing := jobgraph.CheckpointingSettings{Interval: time.Second}
	s, err = NewRestartBackoffTimeStrategy(jobgraph.RestartStrategyConfig{}, checkpointing, clock.Now, nil)
	require.NoError(t, err)
	exp, ok := s.(*exponentialDelayRestartStrategy)
	require.True(t, ok, "got %T", s)
	assert.Equal(t, time.Second, exp.initial)
	assert.Equal(t, time.Minute, exp.max)
	assert.Equal(t, 1.5, exp.multiplier)
	assert.Equal(t, time.Hour, exp.reset)
	assert.Equal(t, 0.1, exp.jitter)
	assert.Equal(t, math.MaxInt, exp.maxAttempts)

	// 1 s ± 100 ms, clamped up to the 1 s initial backoff; then 1.5 s ± 150 ms.
	for _, tc := range []struct {
		r             float64
		first, second time.Duration
	}{
		{0, 1000 * ms, 1350 * ms},
		{0.5, 1000 * ms, 1500 * ms},
		{math.Nextafter(1, 0), 1100 * ms, 1650 * ms},
	} {
		random := &restartConstRandom{r: tc.r}
		s, err := NewRestartBackoffTimeStrategy(jobgraph.RestartStrategyConfig{}, checkpointing, clock.Now, random.Float64)
		require.NoError(t, err)
		require.True(t, s.NotifyFailure(errRestartTestFailure))
		assert.Equal(t, tc.first, restartBackoff(t, s), "draw %v", tc.r)
		clock.advance(2 * time.Second)
		require.True(t, s.NotifyFailure(errRestartTestFailure))
		assert.Equal(t, tc.second, restartBackoff(t, s), "draw %v", tc.r)
		assert.True(t, s.CanRestart())
	}

	// An explicit type wins over the checkpointing default.
	s, err = NewRestartBackoffTimeStrategy(jobgraph.NoRestart(), checkpointing, clock.Now, nil)
	require.NoError(t, err)
	assert.IsType(t, &noRestartStrategy{}, s)
	s, err = NewRestartBackoffTimeStrategy(jobgraph.DefaultFixedDelayRestart(), checkpointing, clock.Now, nil)
	require.NoError(t, err)
	assert.IsType(t, &fixedDelayRestartStrategy{}, s)
	s, err = NewRestartBackoffTimeStrategy(jobgraph.DefaultFailureRateRestart(), checkpointing, clock.Now, nil)
	require.NoError(t, err)
	assert.IsType(t, &failureRateRestartStrategy{}, s)
}

// A nil clock and random source fall back to time.Now and math/rand/v2.
func TestNewRestartBackoffTimeStrategyRealClock(t *testing.T) {
	const ms = time.Millisecond
	s, err := NewRestartBackoffTimeStrategy(jobgraph.ExponentialDelayRestart(), jobgraph.CheckpointingSettings{}, nil, nil)
	require.NoError(t, err)
	require.True(t, s.NotifyFailure(errRestartTestFailure))
	d := restartBackoff(t, s)
	assert.LessOrEqual(t, d, 1100*ms)
	assert.Greater(t, d, time.Duration(0))
}

// An invalid option is an error naming its key, the same error JobGraph.Validate gives.
func TestNewRestartBackoffTimeStrategyInvalid(t *testing.T) {
	exp := jobgraph.ExponentialDelayRestart
	with := func(c jobgraph.RestartStrategyConfig, f func(*jobgraph.RestartStrategyConfig)) jobgraph.RestartStrategyConfig {
		f(&c)
		return c
	}
	for _, tc := range []struct {
		cfg jobgraph.RestartStrategyConfig
		key string
	}{
		{jobgraph.RestartStrategyConfig{Type: "fixed"}, "restart-strategy.type"},
		{jobgraph.FixedDelayRestart(-1, time.Second), "restart-strategy.fixed-delay.attempts"},
		{jobgraph.FixedDelayRestart(1, -time.Second), "restart-strategy.fixed-delay.delay"},
		{jobgraph.FailureRateRestart(0, time.Minute, time.Second), "restart-strategy.failure-rate.max-failures-per-interval"},
		{jobgraph.FailureRateRestart(1, 0, time.Second), "restart-strategy.failure-rate.failure-rate-interval"},
		{jobgraph.FailureRateRestart(1, time.Minute, -1), "restart-strategy.failure-rate.delay"},
		{jobgraph.RestartStrategyConfig{Type: jobgraph.RestartStrategyExponentialDelay}, "restart-strategy.exponential-delay.initial-backoff"},
		{with(exp(), func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayInitialBackoff = -time.Second }),
			"restart-strategy.exponential-delay.initial-backoff"},
		{with(exp(), func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayMaxBackoff = time.Millisecond }),
			"restart-strategy.exponential-delay.max-backoff"},
		{with(exp(), func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayBackoffMultiplier = 0.5 }),
			"restart-strategy.exponential-delay.backoff-multiplier"},
		{with(exp(), func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayBackoffMultiplier = math.NaN() }),
			"restart-strategy.exponential-delay.backoff-multiplier"},
		{with(exp(), func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayResetBackoffThreshold = 0 }),
			"restart-strategy.exponential-delay.reset-backoff-threshold"},
		{with(exp(), func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayJitterFactor = 1.5 }),
			"restart-strategy.exponential-delay.jitter-factor"},
		{with(exp(), func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayJitterFactor = -0.1 }),
			"restart-strategy.exponential-delay.jitter-factor"},
		{with(exp(), func(c *jobgraph.RestartStrategyConfig) { c.ExponentialDelayAttemptsBeforeResetBackoff = 0 }),
			"restart-strategy.exponential-delay.attempts-before-reset-backoff"},
	} {
		for _, checkpointing := range []jobgraph.CheckpointingSettings{{}, {Interval: time.Second}} {
			s, err := NewRestartBackoffTimeStrategy(tc.cfg, checkpointing, nil, nil)
			require.Error(t, err, tc.key)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), tc.key)
			assert.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph)
			var verr *jobgraph.ValidationError
			require.ErrorAs(t, err, &verr)
			assert.Equal(t, jobgraph.RuleConfiguration, verr.Rule)

			// The same rule and words as JobGraph.Validate.
			g := jobgraph.New("restart", jobgraph.Batch)
			g.AddVertex("v", "noop", 1)
			g.RestartStrategy = tc.cfg
			g.Checkpointing = checkpointing
			assert.Equal(t, g.Validate(), err, tc.key)
		}
	}
}

// Every constructor of the root package yields a valid strategy.
func TestNewRestartBackoffTimeStrategyValid(t *testing.T) {
	const ms = time.Millisecond
	for _, cfg := range []jobgraph.RestartStrategyConfig{
		{}, jobgraph.NoRestart(), jobgraph.DefaultFixedDelayRestart(), jobgraph.FixedDelayRestart(0, 0),
		jobgraph.DefaultFailureRateRestart(), jobgraph.ExponentialDelayRestart(),
		exponentialDelayConfig(ms, ms, 1, ms, 0, 1), exponentialDelayConfig(ms, time.Hour, math.Inf(1), ms, 1, 1),
	} {
		_, err := NewRestartBackoffTimeStrategy(cfg, jobgraph.CheckpointingSettings{Interval: time.Second}, nil, nil)
		assert.NoError(t, err, "%+v", cfg)
	}
}
