// Package logtest records what a *slog.Logger was given, for tests that assert exactly which
// records a component logs and with which attributes.
package logtest

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Record is one logged record: its level, message, and every attribute as "key=value" — those
// added with Logger.With first, then the record's own, in order — as a handler would print them.
type Record struct {
	Level slog.Level
	Msg   string
	Attrs []string
}

// TimedRecord is a Record with its time and its attributes by key as Go values
// (slog.Value.Any; a later attribute replaces an earlier one of the same key), for tests that
// assert when something was logged and compare typed values.
type TimedRecord struct {
	Record
	Time   time.Time
	Values map[string]any
}

// NewRecorder returns a logger that keeps every record at level or above, and a function that
// returns a copy of those kept so far. Safe for concurrent use. Groups are not supported.
func NewRecorder(level slog.Level) (*slog.Logger, func() []Record) {
	logger, timed := NewTimedRecorder(level)
	return logger, func() []Record {
		rs := timed()
		out := make([]Record, len(rs))
		for i, r := range rs {
			out[i] = r.Record
		}
		return out
	}
}

// NewTimedRecorder is NewRecorder keeping each record's time and typed attribute values too.
func NewTimedRecorder(level slog.Level) (*slog.Logger, func() []TimedRecord) {
	h := &handler{mu: new(sync.Mutex), records: new([]TimedRecord), level: level}
	return slog.New(h), func() []TimedRecord {
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.Clone(*h.records)
	}
}

// AtLevel returns the records of level l, in order.
func AtLevel(records []TimedRecord, l slog.Level) []TimedRecord {
	var out []TimedRecord
	for _, r := range records {
		if r.Level == l {
			out = append(out, r)
		}
	}
	return out
}

// Since returns the instants of records relative to begin, in order.
func Since(records []TimedRecord, begin time.Time) []time.Duration {
	var out []time.Duration
	for _, r := range records {
		out = append(out, r.Time.Sub(begin))
	}
	return out
}

// WithMessage returns the records whose message is msg, in order.
func WithMessage(records []Record, msg string) []Record {
	var out []Record
	for _, r := range records {
		if r.Msg == msg {
			out = append(out, r)
		}
	}
	return out
}

type handler struct {
	mu      *sync.Mutex
	records *[]TimedRecord
	attrs   []slog.Attr // from WithAttrs, in order
	level   slog.Level
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	rec := TimedRecord{Record: Record{Level: r.Level, Msg: r.Message}, Time: r.Time, Values: make(map[string]any, len(h.attrs)+r.NumAttrs())}
	add := func(a slog.Attr) bool {
		rec.Attrs = append(rec.Attrs, a.Key+"="+a.Value.String())
		rec.Values[a.Key] = a.Value.Any()
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.records = append(*h.records, rec)
	return nil
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clone(h.attrs), as...)
	return &c
}

func (h *handler) WithGroup(string) slog.Handler { return h } // no groups are used
