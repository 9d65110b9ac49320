package resourcemanager

import (
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/internal/logtest"
	"github.com/jobgraph/jobgraph/rpc"
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

// A job's round trip logs, at its levels, what it always did: the JobMaster registered (INFO),
// its requirements declared, the slot requested, allocated and freed (DEBUG), the JobMaster
// disconnected (INFO) — each once; at INFO the DEBUG ones are not logged (their arguments are
// not even made, see the guards).
func TestJobRoundTripLogsAtItsLevels(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		synctest.Test(t, func(t *testing.T) {
			logger, records := logtest.NewRecorder(level)
			e := newEnv(t, func(c *Config) { c.Logger = logger })
			te := e.addTaskExecutor("te-1", cpu(1))
			job, token := e.addJob("jm")
			require.NoError(t, e.declare(job, token, req(unknown, 1)))
			synctest.Wait()
			calls := te.Calls()
			require.Len(t, calls, 1)
			require.NoError(t, e.gw.NotifySlotAvailable(e.ctx, e.rm.ResourceManagerID(), "te-1", calls[0].Slot, calls[0].Allocation))
			require.NoError(t, e.gw.DisconnectJobMaster(e.ctx, e.rm.ResourceManagerID(), token, job, rpc.Failure(errors.New("job done"))))
			synctest.Wait()
			count := func(msg string) int { return len(logtest.WithMessage(records(), msg)) }
			debug := 0
			if level == slog.LevelDebug {
				debug = 1
			}
			assert.Equal(t, 1, count("registered JobMaster"), level)
			assert.Equal(t, debug, count("resource requirements declared"), level)
			assert.Equal(t, debug, count("requesting slot"), level)
			assert.Equal(t, debug, count("slot allocated"), level)
			assert.Equal(t, debug, count("slot freed"), level)
			assert.Equal(t, 1, count("disconnected JobMaster"), level)
		})
	}
}
