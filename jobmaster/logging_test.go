package jobmaster_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// The job's records carry each attribute once: the scheduler adds job and jobName, the JobMaster
// does not add job again ("job=X job=X" before).
func TestJobMasterLogRecordsNameTheJobOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logger, records := newRecordingLogger(slog.LevelDebug)
		e := newHBEnv(t, jobmaster.Config{Logger: logger})
		id := "job=" + e.g.JobID.String()
		changed := withMessage(records(), "job status changed")
		require.NotEmpty(t, changed)
		assert.Equal(t, loggedRecord{level: slog.LevelInfo, msg: "job status changed",
			attrs: []string{id, "jobName=src-sink", "from=CREATED", "to=RUNNING"}}, changed[0])
		bulks := withMessage(records(), "scheduling bulk")
		require.NotEmpty(t, bulks)
		assert.Equal(t, loggedRecord{level: slog.LevelDebug, msg: "scheduling bulk",
			attrs: []string{id, "jobName=src-sink", "executions=1"}}, bulks[0])
	})
}

// The JobStatusListener hears INITIALIZING first, when the JobMaster starts building the job,
// then CREATED and RUNNING.
func TestJobStatusListenerHearsInitializing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var heard []jobgraph.JobStatus
		var at []time.Duration // after the start
		start := time.Now()
		e := newHBEnv(t, jobmaster.Config{JobStatusListener: func(job jobgraph.JobID, s jobgraph.JobStatus, t time.Time) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, s)
			at = append(at, t.Sub(start))
		}})
		require.Equal(t, jobgraph.JobStatusRunning, e.status())
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []jobgraph.JobStatus{jobgraph.JobStatusInitializing, jobgraph.JobStatusCreated, jobgraph.JobStatusRunning}, heard)
		assert.Equal(t, []time.Duration{0, 0, 0}, at, "all at the (virtual) instant the JobMaster started")
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
