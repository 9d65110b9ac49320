package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/slotpool"
)

// Long job and vertex names are cut (jobgraph.Truncate) in the scheduler's errors.
func TestSchedulerErrorsCutLongNames(t *testing.T) {
	long := strings.Repeat("j", 1000)
	cut := strings.Repeat("j", 64) + "…(1000 bytes)"

	g := jobgraph.New(long, jobgraph.Streaming)
	g.AddVertex("v", "noop", 1)
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, time.Second)
	timers := newFakeTimers()
	pool, err := slotpool.New(slotpool.Config{Timers: timers, Clock: timers.Now})
	require.NoError(t, err)
	_, err = New(g, FromSlotPool(pool), &fakeDeployer{}, Config{})
	require.ErrorIs(t, err, ErrNoTimers)
	assert.EqualError(t, err, `scheduler: job "`+cut+`" (`+g.JobID.String()+`): restart strategy fixed-delay: no Config.Timers to wait out restart backoffs on`)

	// A task of a vertex with a long name fails: the root cause names it cut.
	g = jobgraph.New("job", jobgraph.Streaming)
	g.AddVertex(long, "noop", 1)
	h := newHarness(t, g, Config{})
	h.s.StartScheduling()
	h.offer("taskexecutor-a", 1)
	h.runDeployed()
	require.True(t, h.fail(long, 0, errors.New("boom")))
	require.Len(t, h.terminal, 1)
	assert.EqualError(t, h.terminal[0].cause, "task "+cut+" (1/1) (attempt 0) on taskexecutor-a failed: boom")
}
