package manualtime_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph/internal/manualtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTimersRunAtTheirInstantInOrder(t *testing.T) {
	start := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	f := manualtime.New(start)
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+f.Now().Sub(start).String()) }
	}
	f.Schedule(2*time.Second, at("b"))
	f.Schedule(time.Second, func() {
		at("a")()
		f.Schedule(500*time.Millisecond, at("a2")) // due within the same Advance
	})
	f.Schedule(2*time.Second, at("c"))
	cancel := f.Schedule(time.Second, at("canceled"))
	assert.True(t, cancel())
	assert.False(t, cancel())
	assert.Equal(t, 3, f.Pending())

	f.Advance(999 * time.Millisecond)
	assert.Empty(t, got)
	f.Advance(2 * time.Second)
	assert.Equal(t, []string{"a@1s", "a2@1.5s", "b@2s", "c@2s"}, got)
	assert.Equal(t, start.Add(2999*time.Millisecond), f.Now())
	assert.Equal(t, 0, f.Pending())
}
