// Package manualtime is a hand-driven clock with timers for tests of the cores that schedule on
// their owner's main loop (slot pool, scheduler): Schedule records a timer, Advance moves the clock
// and runs the timers that come due, each at its own instant, in order. Not safe for concurrent
// use: like the cores it drives, it belongs to one goroutine.
package manualtime

import "time"

// Timers is a manual clock with timers. It satisfies the Timers interfaces of slotpool and
// scheduler (Schedule(d, fn) (cancel func() bool)).
type Timers struct {
	now    time.Time
	seq    int
	timers []*timer
}

type timer struct {
	at   time.Time
	seq  int
	fn   func()
	live bool
}

// New returns Timers whose clock reads start.
func New(start time.Time) *Timers { return &Timers{now: start} }

// Schedule runs fn when the clock has been advanced by d; cancel stops it and reports whether it
// was still pending.
func (f *Timers) Schedule(d time.Duration, fn func()) (cancel func() bool) {
	f.seq++
	t := &timer{at: f.now.Add(d), seq: f.seq, fn: fn, live: true}
	f.timers = append(f.timers, t)
	return func() bool {
		was := t.live
		t.live = false
		return was
	}
}

// Now reads the clock.
func (f *Timers) Now() time.Time { return f.now }

// Advance moves the clock by d, running every timer due by then at its own instant (timers due
// at the same instant in the order they were scheduled; timers they schedule run too if due).
func (f *Timers) Advance(d time.Duration) {
	end := f.now.Add(d)
	for {
		var next *timer
		for _, t := range f.timers {
			if t.live && !t.at.After(end) && (next == nil || t.at.Before(next.at) || (t.at.Equal(next.at) && t.seq < next.seq)) {
				next = t
			}
		}
		if next == nil {
			break
		}
		next.live = false
		f.now = next.at
		next.fn()
	}
	f.now = end
	live := f.timers[:0]
	for _, t := range f.timers {
		if t.live {
			live = append(live, t)
		}
	}
	clear(f.timers[len(live):])
	f.timers = live
}

// Pending is the number of timers not yet run or canceled.
func (f *Timers) Pending() int {
	n := 0
	for _, t := range f.timers {
		if t.live {
			n++
		}
	}
	return n
}
