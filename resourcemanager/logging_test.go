package resourcemanager

import (
	"log/slog"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph/internal/logtest"
)

// "registered TaskExecutor" is logged once, at INFO, and names each attribute once: the
// ResourceManager's own address and the TaskExecutor's are different keys.
func TestRegisteredTaskExecutorIsLoggedOnceWithDistinctAttributes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, records := logtest.NewRecorder(slog.LevelDebug)
		e := newEnv(t, func(c *Config) { c.Logger = logger })
		e.addTaskExecutor("te-1", cpu(1), cpu(1))
		assert.Equal(t, []logtest.Record{{Level: slog.LevelInfo, Msg: "registered TaskExecutor",
			Attrs: []string{"component=resourcemanager", "address=rm-address", "taskExecutor=te-1", "taskExecutorAddress=te/te-1", "slots=2"}}},
			logtest.WithMessage(records(), "registered TaskExecutor"))
	})
}
