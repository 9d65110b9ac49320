package scheduler

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/jobgraph/jobgraph"
)

// NewRestartBackoffTimeStrategy builds the restart backoff time strategy that cfg names, after
// resolving the default with cfg.Resolve(checkpointing): "none" without checkpointing,
// exponential-delay with Flink's defaults with it.
//
// clock tells the current time (time.Now when nil); random draws the jitter of exponential-delay,
// uniformly from [0, 1) (math/rand/v2's Float64 when nil). Both are called only from the methods
// of the returned strategy, so that a test can drive it deterministically.
//
// An out-of-range value is an error that names its option key; it matches
// jobgraph.ErrInvalidJobGraph with errors.Is and is a *jobgraph.ValidationError with
// Rule jobgraph.RuleConfiguration, as JobGraph.Validate reports it.
//
// What the strategies do (every strategy returns ErrNoFailureYet from BackoffTime before the
// first NotifyFailure):
//   - none: CanRestart is always false; every failure is a new attempt; the backoff is 0.
//   - fixed-delay with n attempts: CanRestart holds after each of the first n failures and not
//     after failure n+1; every failure is a new attempt; the backoff is the delay.
//   - failure-rate with n per interval: CanRestart is false while more than n failures lie within
//     the interval before now (the oldest of the latest n+1 failures is at most interval old);
//     every failure is a new attempt; the backoff is the delay.
//   - exponential-delay (FLIP-364): a failure at or before the restart time of the current
//     attempt (the attempt's first failure plus its backoff) merges into it: NotifyFailure
//     returns false and counts nothing. A later failure starts an attempt whose backoff is
//     initial × multiplier^k, k counting the attempts since the last reset, plus jitter, clamped
//     to [initial, max]; the count resets when the failure comes at least the reset threshold
//     after the previous attempt's restart time. CanRestart holds while at most
//     attempts-before-reset-backoff attempts were started since the last reset. BackoffTime is
//     the time left until the current attempt's restart, so it shrinks as the clock advances.
//     Backoffs are whole milliseconds, as in Flink, unless clamped to a sub-millisecond bound.
//
// None of the strategies implements AttemptDone: exponential-delay merges failures by time, so
// the scheduler does not need to report restarts. A failure that comes after the restart time
// but before the scheduler actually restarted (cancellation took longer) starts a new attempt,
// as in Flink.
//
// Flink: org.apache.flink.runtime.executiongraph.failover.RestartBackoffTimeStrategyFactoryLoader.
func NewRestartBackoffTimeStrategy(cfg jobgraph.RestartStrategyConfig, checkpointing jobgraph.CheckpointingSettings,
	clock func() time.Time, random func() float64) (RestartBackoffTimeStrategy, error) {
	cfg = cfg.Resolve(checkpointing)
	if err := cfg.Validate(); err != nil {
		return nil, &jobgraph.ValidationError{Rule: jobgraph.RuleConfiguration, Detail: err.Error()}
	}
	if clock == nil {
		clock = time.Now
	}
	if random == nil {
		random = rand.Float64
	}
	switch cfg.Type {
	case jobgraph.RestartStrategyFixedDelay:
		return &fixedDelayRestartStrategy{maxAttempts: cfg.FixedDelayAttempts, delay: cfg.FixedDelay}, nil
	case jobgraph.RestartStrategyFailureRate:
		return &failureRateRestartStrategy{
			maxFailures: cfg.FailureRateMaxFailuresPerInterval,
			interval:    cfg.FailureRateInterval,
			delay:       cfg.FailureRateDelay,
			clock:       clock,
		}, nil
	case jobgraph.RestartStrategyExponentialDelay:
		return &exponentialDelayRestartStrategy{
			initial:     cfg.ExponentialDelayInitialBackoff,
			max:         cfg.ExponentialDelayMaxBackoff,
			multiplier:  cfg.ExponentialDelayBackoffMultiplier,
			reset:       cfg.ExponentialDelayResetBackoffThreshold,
			jitter:      cfg.ExponentialDelayJitterFactor,
			maxAttempts: cfg.ExponentialDelayAttemptsBeforeResetBackoff,
			clock:       clock,
			random:      random,
		}, nil
	default: // RestartStrategyNone; Resolve never returns RestartStrategyDefault.
		return &noRestartStrategy{}, nil
	}
}

// noRestartStrategy is restart-strategy "none": no failure may be restarted.
// Flink: NoRestartBackoffTimeStrategy.
type noRestartStrategy struct {
	failed bool
}

// NotifyFailure counts nothing; every failure is its own (fatal) attempt.
func (s *noRestartStrategy) NotifyFailure(error) bool {
	s.failed = true
	return true
}

func (s *noRestartStrategy) CanRestart() bool { return false }

// BackoffTime is 0 once a failure was recorded.
func (s *noRestartStrategy) BackoffTime() (time.Duration, error) {
	if !s.failed {
		return 0, ErrNoFailureYet
	}
	return 0, nil
}

func (s *noRestartStrategy) String() string { return "NoRestartBackoffTimeStrategy" }

// fixedDelayRestartStrategy is restart-strategy "fixed-delay": with maxAttempts = n the job may
// restart after each of its first n failures and not after failure n+1. Every failure is a new
// attempt; the backoff is always delay. Flink: FixedDelayRestartBackoffTimeStrategy.
type fixedDelayRestartStrategy struct {
	maxAttempts int
	delay       time.Duration
	failures    int
}

func (s *fixedDelayRestartStrategy) NotifyFailure(error) bool {
	if s.failures < math.MaxInt {
		s.failures++
	}
	return true
}

// CanRestart holds while no more failures than attempts were recorded; asking does not count.
func (s *fixedDelayRestartStrategy) CanRestart() bool { return s.failures <= s.maxAttempts }

func (s *fixedDelayRestartStrategy) BackoffTime() (time.Duration, error) {
	if s.failures == 0 {
		return 0, ErrNoFailureYet
	}
	return s.delay, nil
}

func (s *fixedDelayRestartStrategy) String() string {
	return fmt.Sprintf("FixedDelayRestartBackoffTimeStrategy(attempts=%d, delay=%v, failures=%d)",
		s.maxAttempts, s.delay, s.failures)
}

// failureRateRestartStrategy is restart-strategy "failure-rate": the job may restart unless more
// than maxFailures failures fell within interval, that is unless the oldest of the last
// maxFailures+1 failures is no more than interval before now (measured when CanRestart is asked).
// Every failure is a new attempt; the backoff is always delay.
// Flink: FailureRateRestartBackoffTimeStrategy.
type failureRateRestartStrategy struct {
	maxFailures int
	interval    time.Duration
	delay       time.Duration
	clock       func() time.Time
	// recent holds the times of at most maxFailures+1 latest failures, oldest first.
	recent []time.Time
}

func (s *failureRateRestartStrategy) NotifyFailure(error) bool {
	if len(s.recent) > s.maxFailures {
		// Drop the oldest; copying keeps the backing array at maxFailures+1 entries.
		n := copy(s.recent, s.recent[1:])
		s.recent = s.recent[:n]
	}
	s.recent = append(s.recent, s.clock())
	return true
}

func (s *failureRateRestartStrategy) CanRestart() bool {
	if len(s.recent) <= s.maxFailures {
		return true
	}
	return s.clock().Sub(s.recent[0]) > s.interval
}

func (s *failureRateRestartStrategy) BackoffTime() (time.Duration, error) {
	if len(s.recent) == 0 {
		return 0, ErrNoFailureYet
	}
	return s.delay, nil
}

func (s *failureRateRestartStrategy) String() string {
	return fmt.Sprintf("FailureRateRestartBackoffTimeStrategy(maxFailuresPerInterval=%d, interval=%v, delay=%v)",
		s.maxFailures, s.interval, s.delay)
}

// exponentialDelayRestartStrategy is restart-strategy "exponential-delay", with the FLIP-364
// semantics of Flink 1.19:
//
//   - A failure at or before the restart time of the current attempt (its failure time plus its
//     backoff) merges into that attempt: NotifyFailure returns false and nothing changes, so the
//     backoff that BackoffTime reports is the time left until that same restart.
//   - A later failure starts a new attempt. If it comes at least the reset threshold after the
//     previous attempt's restart time, the attempt count starts again from zero first. The
//     attempt's backoff is initial × multiplier^k, k being the number of attempts since the last
//     reset (0 for the first), with jitter added, and the result clamped to [initial, max].
//   - CanRestart holds while at most maxAttempts attempts were started since the last reset; the
//     attempt that exceeds it cannot be restarted.
//
// Backoffs are computed in whole milliseconds, as Flink computes them: initial × multiplier^k is
// truncated to milliseconds, the jitter is a whole number of milliseconds drawn uniformly from
// [-j, j] with j = ⌊backoff × jitter factor⌋ ms (with j = 0 nothing is drawn), and only
// the clamp to [initial, max] can give a result that is not a whole millisecond.
// Flink: ExponentialDelayRestartBackoffTimeStrategy.
type exponentialDelayRestartStrategy struct {
	initial     time.Duration
	max         time.Duration
	multiplier  float64
	reset       time.Duration
	jitter      float64
	maxAttempts int
	clock       func() time.Time
	random      func() float64

	// attempts started since the last reset.
	attempts int
	// failed is set by the first failure; nextRestart is meaningless before.
	failed bool
	// nextRestart is when the current attempt restarts: its first failure plus its backoff.
	nextRestart time.Time
}

func (s *exponentialDelayRestartStrategy) NotifyFailure(error) bool {
	now := s.clock()
	if s.failed && !now.After(s.nextRestart) {
		return false // the pending restart covers this failure too
	}
	if !s.failed || now.Sub(s.nextRestart) >= s.reset {
		s.attempts = 0
	}
	s.failed = true
	s.nextRestart = now.Add(s.backoff(s.attempts))
	if s.attempts < math.MaxInt {
		s.attempts++
	}
	return true
}

func (s *exponentialDelayRestartStrategy) CanRestart() bool { return s.attempts <= s.maxAttempts }

// BackoffTime is the time left until the current attempt's restart, never negative.
func (s *exponentialDelayRestartStrategy) BackoffTime() (time.Duration, error) {
	if !s.failed {
		return 0, ErrNoFailureYet
	}
	return max(0, s.nextRestart.Sub(s.clock())), nil
}

// backoff returns the backoff of the attempt that follows k attempts since the last reset.
func (s *exponentialDelayRestartStrategy) backoff(k int) time.Duration {
	const ms = float64(time.Millisecond)
	// Work in float64 milliseconds: exact for whole milliseconds far beyond any sensible backoff,
	// and free of integer overflow. The cap keeps the values finite (math.Pow may give +Inf).
	limit := float64(math.MaxInt64) / ms
	grown := min(math.Floor(float64(s.initial)/ms*math.Pow(s.multiplier, float64(k))), limit)
	withJitter := grown
	if s.jitter > 0 {
		if j := math.Floor(grown * s.jitter); j > 0 {
			// Uniform over the 2j+1 whole milliseconds in [-j, j].
			d := math.Floor(s.random()*(2*j+1)) - j
			withJitter += max(-j, min(d, j))
		}
	}
	switch ns := withJitter * ms; {
	case ns >= float64(s.max):
		return s.max
	case ns <= float64(s.initial):
		return s.initial
	default:
		return time.Duration(ns)
	}
}

func (s *exponentialDelayRestartStrategy) String() string {
	return fmt.Sprintf("ExponentialDelayRestartBackoffTimeStrategy(initialBackoff=%v, maxBackoff=%v, "+
		"backoffMultiplier=%v, resetBackoffThreshold=%v, jitterFactor=%v, attemptsBeforeResetBackoff=%d, attempts=%d)",
		s.initial, s.max, s.multiplier, s.reset, s.jitter, s.maxAttempts, s.attempts)
}
