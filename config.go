package jobgraph

import (
	"fmt"
	"math"
	"time"
)

// CheckpointingSettings configures periodic checkpoints. The zero value disables them.
// Flink: org.apache.flink.runtime.jobgraph.tasks.CheckpointCoordinatorConfiguration and the
// execution.checkpointing.* options. The scheduler's CheckpointCoordinator follows them; Interval >
// 0 also changes the default restart strategy. Unaligned is carried and persisted only.
type CheckpointingSettings struct {
	// Interval between checkpoint triggers; 0 disables checkpointing. With checkpointing on, a
	// source task that returned waits for the next checkpoint to complete before it
	// finishes (FLIP-147's final checkpoint, see taskexecutor.CheckpointHandler), so a job ends
	// up to one Interval after its sources did.
	// Option execution.checkpointing.interval, default: none (disabled).
	Interval time.Duration `json:"interval,omitempty"`
	// Timeout after which a pending checkpoint is aborted.
	// Option execution.checkpointing.timeout, default 10 min (DefaultCheckpointTimeout).
	Timeout time.Duration `json:"timeout,omitempty"`
	// MinPauseBetweenCheckpoints after one completes before the next is triggered.
	// Option execution.checkpointing.min-pause, default 0.
	MinPauseBetweenCheckpoints time.Duration `json:"minPause,omitempty"`
	// MaxConcurrentCheckpoints pending at once. Option execution.checkpointing.max-concurrent-checkpoints,
	// default 1 (0 here means 1).
	MaxConcurrentCheckpoints int `json:"maxConcurrentCheckpoints,omitempty"`
	// TolerableFailedCheckpoints before the job fails.
	// Option execution.checkpointing.tolerable-failed-checkpoints, default 0.
	TolerableFailedCheckpoints int `json:"tolerableFailedCheckpoints,omitempty"`
	// RetainOnCancellation keeps the latest checkpoint when the job is canceled.
	// Option execution.checkpointing.externalized-checkpoint-retention = RETAIN_ON_CANCELLATION;
	// default false (NO_EXTERNALIZED_CHECKPOINTS).
	RetainOnCancellation bool `json:"retainOnCancellation,omitempty"`
	// NumRetained completed checkpoints (and savepoints) the job's CompletedCheckpointStore keeps.
	// Option execution.checkpointing.num-retained (formerly state.checkpoints.num-retained),
	// default 1 (0 here means 1).
	NumRetained int `json:"numRetained,omitempty"`
	// Unaligned checkpoints. Option execution.checkpointing.unaligned.enabled, default false.
	Unaligned bool `json:"unaligned,omitempty"`
}

// DefaultCheckpointTimeout is Flink's execution.checkpointing.timeout default.
const DefaultCheckpointTimeout = 10 * time.Minute

// Enabled reports whether periodic checkpoints are configured (Interval > 0).
func (c CheckpointingSettings) Enabled() bool { return c.Interval > 0 }

func (c CheckpointingSettings) validate() error {
	switch {
	case c.Interval < 0:
		return fmt.Errorf("execution.checkpointing.interval %v is negative", c.Interval)
	case c.Timeout < 0:
		return fmt.Errorf("execution.checkpointing.timeout %v is negative", c.Timeout)
	case c.MinPauseBetweenCheckpoints < 0:
		return fmt.Errorf("execution.checkpointing.min-pause %v is negative", c.MinPauseBetweenCheckpoints)
	case c.MaxConcurrentCheckpoints < 0:
		return fmt.Errorf("execution.checkpointing.max-concurrent-checkpoints %d is negative", c.MaxConcurrentCheckpoints)
	case c.TolerableFailedCheckpoints < 0:
		return fmt.Errorf("execution.checkpointing.tolerable-failed-checkpoints %d is negative", c.TolerableFailedCheckpoints)
	case c.NumRetained < 0:
		return fmt.Errorf("execution.checkpointing.num-retained %d is negative", c.NumRetained)
	}
	return nil
}

// RestoreMode says who owns the snapshot a job is restored from.
// Flink: org.apache.flink.core.execution.RestoreMode, option execution.savepoint-restore-mode.
type RestoreMode uint8

const (
	// NoClaim: the job does not own the snapshot and never deletes it; Flink's default.
	NoClaim RestoreMode = iota
	// Claim: the job owns the snapshot and may delete it once it is subsumed.
	Claim
	// Legacy: Flink's pre-1.15 behaviour.
	Legacy
)

var restoreModes = enum[RestoreMode]{"RestoreMode", []string{"NO_CLAIM", "CLAIM", "LEGACY"}}

func (m RestoreMode) String() string                { return restoreModes.str(m) }
func (m RestoreMode) MarshalText() ([]byte, error)  { return restoreModes.marshal(m) }
func (m *RestoreMode) UnmarshalText(b []byte) error { return restoreModes.unmarshal(m, b) }

// SavepointRestoreSettings say which savepoint a job starts from. The zero value: none.
// Flink: org.apache.flink.runtime.jobgraph.SavepointRestoreSettings.
type SavepointRestoreSettings struct {
	// Path of the savepoint; empty for none. Option execution.savepoint.path.
	Path string `json:"path,omitempty"`
	// AllowNonRestoredState lets the job start when the savepoint has state for an operator the
	// job no longer has. Option execution.savepoint.ignore-unclaimed-state, default false.
	AllowNonRestoredState bool `json:"allowNonRestoredState,omitempty"`
	// RestoreMode, option execution.savepoint-restore-mode, default NO_CLAIM.
	RestoreMode RestoreMode `json:"restoreMode,omitempty"`
}

// RestartStrategyType names a restart strategy, with Flink's option values of restart-strategy.type.
type RestartStrategyType string

const (
	// RestartStrategyDefault: none without checkpointing, exponential-delay with it (Flink 1.19+).
	RestartStrategyDefault RestartStrategyType = ""
	// RestartStrategyNone: never restart; the first task failure fails the job.
	RestartStrategyNone RestartStrategyType = "none"
	// RestartStrategyFixedDelay: up to Attempts restarts, each after Delay.
	RestartStrategyFixedDelay RestartStrategyType = "fixed-delay"
	// RestartStrategyFailureRate: restart after Delay unless more than MaxFailuresPerInterval
	// failures fell in the last FailureRateInterval.
	RestartStrategyFailureRate RestartStrategyType = "failure-rate"
	// RestartStrategyExponentialDelay: backoff grows by a multiplier up to a maximum, with jitter,
	// and resets after a quiet period.
	RestartStrategyExponentialDelay RestartStrategyType = "exponential-delay"
)

// RestartStrategyConfig is the job's restart strategy: restart-strategy.type and the options of the
// chosen type. Only the fields of the chosen Type are read, and they are read as given (a zero
// JitterFactor means no jitter): start from FixedDelayRestart, FailureRateRestart or
// ExponentialDelayRestart, which fill in Flink's defaults, and change what you need.
// The zero value is RestartStrategyDefault.
type RestartStrategyConfig struct {
	Type RestartStrategyType `json:"type,omitempty"`

	// FixedDelayAttempts: restart-strategy.fixed-delay.attempts, Flink default 1.
	FixedDelayAttempts int `json:"fixedDelayAttempts,omitempty"`
	// FixedDelay: restart-strategy.fixed-delay.delay, Flink default 1 s.
	FixedDelay time.Duration `json:"fixedDelay,omitempty"`

	// FailureRateMaxFailuresPerInterval: restart-strategy.failure-rate.max-failures-per-interval, default 1.
	FailureRateMaxFailuresPerInterval int `json:"failureRateMaxFailuresPerInterval,omitempty"`
	// FailureRateInterval: restart-strategy.failure-rate.failure-rate-interval, default 1 min.
	FailureRateInterval time.Duration `json:"failureRateInterval,omitempty"`
	// FailureRateDelay: restart-strategy.failure-rate.delay, default 1 s.
	FailureRateDelay time.Duration `json:"failureRateDelay,omitempty"`

	// ExponentialDelayInitialBackoff: restart-strategy.exponential-delay.initial-backoff, default 1 s.
	ExponentialDelayInitialBackoff time.Duration `json:"exponentialDelayInitialBackoff,omitempty"`
	// ExponentialDelayMaxBackoff: restart-strategy.exponential-delay.max-backoff, default 1 min.
	ExponentialDelayMaxBackoff time.Duration `json:"exponentialDelayMaxBackoff,omitempty"`
	// ExponentialDelayBackoffMultiplier: restart-strategy.exponential-delay.backoff-multiplier, default 1.5.
	ExponentialDelayBackoffMultiplier float64 `json:"exponentialDelayBackoffMultiplier,omitempty"`
	// ExponentialDelayResetBackoffThreshold: restart-strategy.exponential-delay.reset-backoff-threshold,
	// default 1 h: a failure this long after the previous restart resets the backoff.
	ExponentialDelayResetBackoffThreshold time.Duration `json:"exponentialDelayResetBackoffThreshold,omitempty"`
	// ExponentialDelayJitterFactor: restart-strategy.exponential-delay.jitter-factor in [0, 1], default 0.1.
	ExponentialDelayJitterFactor float64 `json:"exponentialDelayJitterFactor,omitempty"`
	// ExponentialDelayAttemptsBeforeResetBackoff: restart-strategy.exponential-delay.attempts-before-reset-backoff,
	// default unlimited (math.MaxInt).
	ExponentialDelayAttemptsBeforeResetBackoff int `json:"exponentialDelayAttemptsBeforeResetBackoff,omitempty"`
}

// NoRestart returns the "none" restart strategy.
func NoRestart() RestartStrategyConfig { return RestartStrategyConfig{Type: RestartStrategyNone} }

// FixedDelayRestart returns the fixed-delay strategy with the given attempts and delay.
func FixedDelayRestart(attempts int, delay time.Duration) RestartStrategyConfig {
	return RestartStrategyConfig{Type: RestartStrategyFixedDelay, FixedDelayAttempts: attempts, FixedDelay: delay}
}

// FailureRateRestart returns the failure-rate strategy: restart after delay unless more than
// maxFailures failures fell within interval.
func FailureRateRestart(maxFailures int, interval, delay time.Duration) RestartStrategyConfig {
	return RestartStrategyConfig{
		Type:                              RestartStrategyFailureRate,
		FailureRateMaxFailuresPerInterval: maxFailures,
		FailureRateInterval:               interval,
		FailureRateDelay:                  delay,
	}
}

// ExponentialDelayRestart returns the exponential-delay strategy with Flink's defaults
// (initial 1 s, max 1 min, multiplier 1.5, reset threshold 1 h, jitter 0.1, unlimited attempts).
func ExponentialDelayRestart() RestartStrategyConfig {
	return RestartStrategyConfig{
		Type:                                       RestartStrategyExponentialDelay,
		ExponentialDelayInitialBackoff:             time.Second,
		ExponentialDelayMaxBackoff:                 time.Minute,
		ExponentialDelayBackoffMultiplier:          1.5,
		ExponentialDelayResetBackoffThreshold:      time.Hour,
		ExponentialDelayJitterFactor:               0.1,
		ExponentialDelayAttemptsBeforeResetBackoff: math.MaxInt,
	}
}

// DefaultFixedDelayRestart and DefaultFailureRateRestart give Flink's defaults for those types.
func DefaultFixedDelayRestart() RestartStrategyConfig { return FixedDelayRestart(1, time.Second) }

// DefaultFailureRateRestart: 1 failure per 1 min, delay 1 s.
func DefaultFailureRateRestart() RestartStrategyConfig {
	return FailureRateRestart(1, time.Minute, time.Second)
}

// Resolve returns the strategy that applies: c itself, or for RestartStrategyDefault "none"
// without checkpointing and exponential-delay (Flink's defaults) with it.
func (c RestartStrategyConfig) Resolve(checkpointing CheckpointingSettings) RestartStrategyConfig {
	if c.Type != RestartStrategyDefault {
		return c
	}
	if checkpointing.Enabled() {
		return ExponentialDelayRestart()
	}
	return NoRestart()
}

// Validate checks the options of the chosen Type and returns an error naming the first option key
// out of range (e.g. "restart-strategy.exponential-delay.backoff-multiplier 0.5 is below 1"), or
// nil. JobGraph.Validate reports the same error as a *ValidationError with RuleConfiguration.
func (c RestartStrategyConfig) Validate() error {
	switch c.Type {
	case RestartStrategyDefault, RestartStrategyNone:
		return nil
	case RestartStrategyFixedDelay:
		switch {
		case c.FixedDelayAttempts < 0:
			return fmt.Errorf("restart-strategy.fixed-delay.attempts %d is negative", c.FixedDelayAttempts)
		case c.FixedDelay < 0:
			return fmt.Errorf("restart-strategy.fixed-delay.delay %v is negative", c.FixedDelay)
		}
	case RestartStrategyFailureRate:
		switch {
		case c.FailureRateMaxFailuresPerInterval < 1:
			return fmt.Errorf("restart-strategy.failure-rate.max-failures-per-interval %d is below 1", c.FailureRateMaxFailuresPerInterval)
		case c.FailureRateInterval <= 0:
			return fmt.Errorf("restart-strategy.failure-rate.failure-rate-interval %v is not positive", c.FailureRateInterval)
		case c.FailureRateDelay < 0:
			return fmt.Errorf("restart-strategy.failure-rate.delay %v is negative", c.FailureRateDelay)
		}
	case RestartStrategyExponentialDelay:
		switch {
		case c.ExponentialDelayInitialBackoff <= 0:
			return fmt.Errorf("restart-strategy.exponential-delay.initial-backoff %v is not positive", c.ExponentialDelayInitialBackoff)
		case c.ExponentialDelayMaxBackoff < c.ExponentialDelayInitialBackoff:
			return fmt.Errorf("restart-strategy.exponential-delay.max-backoff %v is below the initial backoff %v", c.ExponentialDelayMaxBackoff, c.ExponentialDelayInitialBackoff)
		case !(c.ExponentialDelayBackoffMultiplier >= 1):
			return fmt.Errorf("restart-strategy.exponential-delay.backoff-multiplier %v is below 1", c.ExponentialDelayBackoffMultiplier)
		case c.ExponentialDelayResetBackoffThreshold <= 0:
			return fmt.Errorf("restart-strategy.exponential-delay.reset-backoff-threshold %v is not positive", c.ExponentialDelayResetBackoffThreshold)
		case !(c.ExponentialDelayJitterFactor >= 0 && c.ExponentialDelayJitterFactor <= 1):
			return fmt.Errorf("restart-strategy.exponential-delay.jitter-factor %v is outside [0, 1]", c.ExponentialDelayJitterFactor)
		case c.ExponentialDelayAttemptsBeforeResetBackoff < 1:
			return fmt.Errorf("restart-strategy.exponential-delay.attempts-before-reset-backoff %d is below 1", c.ExponentialDelayAttemptsBeforeResetBackoff)
		}
	default:
		return fmt.Errorf("restart-strategy.type %q is not one of none, fixed-delay, failure-rate, exponential-delay", Truncate(string(c.Type)))
	}
	return nil
}

// FailoverStrategy names the failover strategy, with Flink's values of
// jobmanager.execution.failover-strategy.
type FailoverStrategy string

const (
	// FailoverRegion restarts the failed pipelined region, the regions downstream of it, and the
	// producer regions of partitions that are no longer available. The default ("" means region).
	FailoverRegion FailoverStrategy = "region"
	// FailoverFull restarts every task.
	FailoverFull FailoverStrategy = "full"
)

func (f FailoverStrategy) validate() error {
	switch f {
	case "", FailoverRegion, FailoverFull:
		return nil
	}
	return fmt.Errorf("jobmanager.execution.failover-strategy %q is not one of region, full", Truncate(string(f)))
}
