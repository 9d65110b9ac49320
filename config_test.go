package jobgraph_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph"
)

func TestRestartStrategyConstructors(t *testing.T) {
	assert.Equal(t, jobgraph.RestartStrategyConfig{Type: "none"}, jobgraph.NoRestart())
	assert.Equal(t, jobgraph.RestartStrategyConfig{Type: "fixed-delay", FixedDelayAttempts: 1, FixedDelay: time.Second},
		jobgraph.DefaultFixedDelayRestart())
	assert.Equal(t, jobgraph.RestartStrategyConfig{Type: "fixed-delay", FixedDelayAttempts: 5, FixedDelay: 3 * time.Second},
		jobgraph.FixedDelayRestart(5, 3*time.Second))
	assert.Equal(t, jobgraph.RestartStrategyConfig{Type: "failure-rate", FailureRateMaxFailuresPerInterval: 1,
		FailureRateInterval: time.Minute, FailureRateDelay: time.Second}, jobgraph.DefaultFailureRateRestart())
	assert.Equal(t, jobgraph.RestartStrategyConfig{Type: "failure-rate", FailureRateMaxFailuresPerInterval: 3,
		FailureRateInterval: 5 * time.Minute, FailureRateDelay: 10 * time.Second},
		jobgraph.FailureRateRestart(3, 5*time.Minute, 10*time.Second))
	assert.Equal(t, jobgraph.RestartStrategyConfig{
		Type:                                       "exponential-delay",
		ExponentialDelayInitialBackoff:             time.Second,
		ExponentialDelayMaxBackoff:                 time.Minute,
		ExponentialDelayBackoffMultiplier:          1.5,
		ExponentialDelayResetBackoffThreshold:      time.Hour,
		ExponentialDelayJitterFactor:               0.1,
		ExponentialDelayAttemptsBeforeResetBackoff: math.MaxInt,
	}, jobgraph.ExponentialDelayRestart())
	assert.Equal(t, jobgraph.RestartStrategyDefault, jobgraph.RestartStrategyConfig{}.Type)
}

func TestRestartStrategyResolve(t *testing.T) {
	flinkExponential := jobgraph.RestartStrategyConfig{
		Type:                                       jobgraph.RestartStrategyExponentialDelay,
		ExponentialDelayInitialBackoff:             1 * time.Second,
		ExponentialDelayMaxBackoff:                 1 * time.Minute,
		ExponentialDelayBackoffMultiplier:          1.5,
		ExponentialDelayResetBackoffThreshold:      1 * time.Hour,
		ExponentialDelayJitterFactor:               0.1,
		ExponentialDelayAttemptsBeforeResetBackoff: math.MaxInt,
	}
	none := jobgraph.RestartStrategyConfig{Type: jobgraph.RestartStrategyNone}
	fixed := jobgraph.FixedDelayRestart(3, 2*time.Second)
	on := jobgraph.CheckpointingSettings{Interval: time.Second}
	off := jobgraph.CheckpointingSettings{}

	for _, tc := range []struct {
		name          string
		cfg           jobgraph.RestartStrategyConfig
		checkpointing jobgraph.CheckpointingSettings
		want          jobgraph.RestartStrategyConfig
	}{
		{"default without checkpointing is none", jobgraph.RestartStrategyConfig{}, off, none},
		{"default with only a timeout set is none", jobgraph.RestartStrategyConfig{},
			jobgraph.CheckpointingSettings{Timeout: time.Minute, NumRetained: 3}, none},
		{"default with a negative interval is none", jobgraph.RestartStrategyConfig{},
			jobgraph.CheckpointingSettings{Interval: -time.Second}, none},
		{"default with checkpointing is exponential-delay", jobgraph.RestartStrategyConfig{}, on, flinkExponential},
		{"default with a 1ns interval is exponential-delay", jobgraph.RestartStrategyConfig{},
			jobgraph.CheckpointingSettings{Interval: 1}, flinkExponential},
		{"explicit none stays none with checkpointing", none, on, none},
		{"explicit fixed-delay stays", fixed, on, fixed},
		{"explicit fixed-delay stays without checkpointing", fixed, off, fixed},
		{"explicit exponential-delay is taken as given", jobgraph.RestartStrategyConfig{Type: jobgraph.RestartStrategyExponentialDelay},
			off, jobgraph.RestartStrategyConfig{Type: jobgraph.RestartStrategyExponentialDelay}},
	} {
		assert.Equal(t, tc.want, tc.cfg.Resolve(tc.checkpointing), tc.name)
	}
}

func TestCheckpointingSettings(t *testing.T) {
	assert.Equal(t, 10*time.Minute, jobgraph.DefaultCheckpointTimeout)
	assert.False(t, jobgraph.CheckpointingSettings{}.Enabled())
	assert.False(t, jobgraph.CheckpointingSettings{Interval: -1}.Enabled())
	assert.True(t, jobgraph.CheckpointingSettings{Interval: 1}.Enabled())
}
