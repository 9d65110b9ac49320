// Package logtest records what a *slog.Logger was given, for tests that assert exactly which
// records a component logs and with which attributes.
package logtest

import (
	"context"
	"log/slog"
	"slices"
	"sync"
)

// Record is one logged record: its level, message, and every attribute as "key=value" — those
// added with Logger.With first, then the record's own, in order — as a handler would print them.
type Record struct {
	Level slog.Level
	Msg   string
	Attrs []string
}

// NewRecorder returns a logger that keeps every record at level or above, and a function that
// returns a copy of those kept so far. Safe for concurrent use. Groups are not supported.
func NewRecorder(level slog.Level) (*slog.Logger, func() []Record) {
	h := &handler{mu: new(sync.Mutex), records: new([]Record), level: level}
	return slog.New(h), func() []Record {
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.Clone(*h.records)
	}
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
	records *[]Record
	attrs   []string
	level   slog.Level
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	attrs := slices.Clone(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a.Key+"="+a.Value.String())
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.records = append(*h.records, Record{Level: r.Level, Msg: r.Message, Attrs: attrs})
	return nil
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = slices.Clone(h.attrs)
	for _, a := range as {
		c.attrs = append(c.attrs, a.Key+"="+a.Value.String())
	}
	return &c
}

func (h *handler) WithGroup(string) slog.Handler { return h } // no groups are used
