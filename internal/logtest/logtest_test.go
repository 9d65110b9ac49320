package logtest_test

import (
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph/internal/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRecorderKeepsWithAttrsFirstAndFiltersByLevel(t *testing.T) {
	logger, records := logtest.NewRecorder(slog.LevelInfo)
	l := logger.With("component", "rm")
	l.Debug("dropped", "k", 1)
	l.Info("kept", "k", 2)
	l.With("job", "j").Warn("kept", "k", 3)
	logger.Info("other")
	assert.Equal(t, []logtest.Record{
		{Level: slog.LevelInfo, Msg: "kept", Attrs: []string{"component=rm", "k=2"}},
		{Level: slog.LevelWarn, Msg: "kept", Attrs: []string{"component=rm", "job=j", "k=3"}},
	}, logtest.WithMessage(records(), "kept"))
	assert.Len(t, records(), 3)
}

// The timed recorder keeps each record's time and its attributes' Go values, With attributes
// first; AtLevel and Since pick records and their instants.
func TestTimedRecorderKeepsTimesAndTypedValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begin := time.Now()
		logger, records := logtest.NewTimedRecorder(slog.LevelWarn)
		l := logger.With("task", "v (1/2)")
		l.Info("dropped")
		time.Sleep(30 * time.Second)
		l.Warn("slow", "since", 30*time.Second)
		time.Sleep(time.Second)
		l.Error("stuck", "attempt", 3)
		rs := records()
		require.Len(t, rs, 2)
		assert.Equal(t, logtest.Record{Level: slog.LevelWarn, Msg: "slow", Attrs: []string{"task=v (1/2)", "since=30s"}}, rs[0].Record)
		assert.Equal(t, map[string]any{"task": "v (1/2)", "since": 30 * time.Second}, rs[0].Values)
		assert.Equal(t, map[string]any{"task": "v (1/2)", "attempt": int64(3)}, rs[1].Values)
		assert.Equal(t, []time.Duration{30 * time.Second, 31 * time.Second}, logtest.Since(rs, begin))
		assert.Equal(t, []time.Duration{31 * time.Second}, logtest.Since(logtest.AtLevel(rs, slog.LevelError), begin))
	})
}
