package logtest_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
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
