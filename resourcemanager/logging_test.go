package resourcemanager

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
)

// "registered TaskExecutor" is logged once, at INFO, and names each attribute once: the
// ResourceManager's own address and the TaskExecutor's are different keys.
func TestRegisteredTaskExecutorIsLoggedOnceWithDistinctAttributes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, records := newRecordingLogger(slog.LevelDebug)
		e := newEnv(t, func(c *Config) { c.Logger = logger })
		e.addTaskExecutor("te-1", cpu(1), cpu(1))
		assert.Equal(t, []loggedRecord{{level: slog.LevelInfo, msg: "registered TaskExecutor",
			attrs: []string{"component=resourcemanager", "address=rm-address", "taskExecutor=te-1", "taskExecutorAddress=te/te-1", "slots=2"}}},
			withMessage(records(), "registered TaskExecutor"))
	})
}

// recordingHandler keeps every record with its full attribute list — those added with With
// first, then the record's own — as "key=value" strings, so a test sees exactly what a handler
// would print.
type recordingHandler struct {
	mu      *sync.Mutex
	records *[]loggedRecord
	attrs   []string
	level   slog.Level
}

type loggedRecord struct {
	level slog.Level
	msg   string
	attrs []string
}

func newRecordingLogger(level slog.Level) (*slog.Logger, func() []loggedRecord) {
	h := &recordingHandler{mu: new(sync.Mutex), records: new([]loggedRecord), level: level}
	return slog.New(h), func() []loggedRecord {
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.Clone(*h.records)
	}
}

func (h *recordingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := slices.Clone(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a.Key+"="+a.Value.String())
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.records = append(*h.records, loggedRecord{level: r.Level, msg: r.Message, attrs: attrs})
	return nil
}

func (h *recordingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = slices.Clone(h.attrs)
	for _, a := range as {
		c.attrs = append(c.attrs, a.Key+"="+a.Value.String())
	}
	return &c
}

func (h *recordingHandler) WithGroup(string) slog.Handler { return h } // no groups are used

// withMessage returns the records whose message is msg.
func withMessage(records []loggedRecord, msg string) []loggedRecord {
	var out []loggedRecord
	for _, r := range records {
		if r.msg == msg {
			out = append(out, r)
		}
	}
	return out
}
