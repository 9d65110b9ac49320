package metrics

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is the type of a metric, as Flink's MetricType.
type Kind int

const (
	// KindCounter is a Counter: a count that goes up (and down) by calls of its owner.
	KindCounter Kind = iota + 1
	// KindGauge is a Gauge: a value read on demand from a function of its owner.
	KindGauge
	// KindMeter is a Meter: a per-second rate of events.
	KindMeter
	// KindHistogram is a Histogram: statistics over the last values recorded.
	KindHistogram
)

// String gives Flink's MetricType name: "COUNTER", "GAUGE", "METER" or "HISTOGRAM".
func (k Kind) String() string {
	switch k {
	case KindCounter:
		return "COUNTER"
	case KindGauge:
		return "GAUGE"
	case KindMeter:
		return "METER"
	case KindHistogram:
		return "HISTOGRAM"
	}
	return "UNKNOWN"
}

// Counter counts events. Safe for concurrent use; Inc costs one atomic add. The zero value is a
// counter at 0. Flink: org.apache.flink.metrics.SimpleCounter.
type Counter struct{ n atomic.Int64 }

// Inc adds 1.
func (c *Counter) Inc() { c.n.Add(1) }

// Add adds n (which may be negative).
func (c *Counter) Add(n int64) { c.n.Add(n) }

// Dec subtracts 1.
func (c *Counter) Dec() { c.n.Add(-1) }

// Count returns the current count.
func (c *Counter) Count() int64 { return c.n.Load() }

// UpdateInterval is how often the registry updates its meters (and the views built on them):
// Flink's MetricRegistryImpl view updater interval, View.UPDATE_INTERVAL_SECONDS.
const UpdateInterval = 5 * time.Second

// MeterTimeSpan is the window a Meter's rate is taken over: Flink's MeterView default of 60 s.
const MeterTimeSpan = 60 * time.Second

// meterSlots is MeterView's ring: one count per update over the time span, plus the oldest.
const meterSlots = int(MeterTimeSpan/UpdateInterval) + 1

// Meter is a per-second rate of the events its Counter counts, as Flink's MeterView: every
// UpdateInterval (5 s) the registry samples the counter, and the rate is the increase over the
// last MeterTimeSpan (60 s) divided by 60 — so within the first minute of a meter the samples not
// taken yet count as 0 (600 events in the first 5 s read as 10/s after the first update, as in
// Flink). Until the first update the rate is 0. Safe for concurrent use: MarkEvent is the
// counter's atomic add, Rate reads under the meter's own lock.
type Meter struct {
	counter *Counter

	mu     sync.Mutex
	values [meterSlots]int64
	time   int
	rate   float64
}

func newMeter(c *Counter) *Meter {
	if c == nil {
		c = new(Counter)
	}
	return &Meter{counter: c}
}

// MarkEvent counts one event (adds 1 to the meter's counter).
func (m *Meter) MarkEvent() { m.counter.Inc() }

// MarkEvents counts n events.
func (m *Meter) MarkEvents(n int64) { m.counter.Add(n) }

// Count returns the count of the meter's counter.
func (m *Meter) Count() int64 { return m.counter.Count() }

// Rate returns the events per second over the last MeterTimeSpan as of the last update.
func (m *Meter) Rate() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rate
}

// update is MeterView.update: called every UpdateInterval by the registry's updater.
func (m *Meter) update() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.time = (m.time + 1) % meterSlots
	m.values[m.time] = m.counter.Count()
	m.rate = float64(m.values[m.time]-m.values[(m.time+1)%meterSlots]) / MeterTimeSpan.Seconds()
}

// Histogram keeps the last WindowSize values recorded and gives statistics over them. Safe for
// concurrent use (its own lock; Statistics copies the window under it). Flink:
// org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram.
type Histogram struct {
	mu     sync.Mutex
	window []int64
	next   int
	count  int64
}

// DefaultHistogramWindowSize is the window Group.Histogram gives for a size of 0 or less.
const DefaultHistogramWindowSize = 1024

func newHistogram(windowSize int) *Histogram {
	if windowSize <= 0 {
		windowSize = DefaultHistogramWindowSize
	}
	return &Histogram{window: make([]int64, 0, windowSize)}
}

// Update records one value.
func (h *Histogram) Update(v int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.count++
	if len(h.window) < cap(h.window) {
		h.window = append(h.window, v)
		return
	}
	h.window[h.next] = v
	h.next = (h.next + 1) % len(h.window)
}

// Count returns how many values were ever recorded (not only those in the window), as Flink's
// Histogram.getCount.
func (h *Histogram) Count() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

// HistogramStatistics are the statistics of a histogram's window, as Flink's
// HistogramStatistics. Over an empty window every field is 0.
type HistogramStatistics struct {
	Count  int64   // values ever recorded
	Size   int     // values in the window
	Min    int64   // smallest value in the window
	Max    int64   // largest value in the window
	Mean   float64 // arithmetic mean of the window
	StdDev float64 // sample standard deviation of the window (0 for fewer than 2 values)
	sorted []int64
}

// Quantile returns the q-quantile (0 < q ≤ 1) of the window, estimated as Apache Commons Math's
// Percentile (its default, LEGACY, estimation) that Flink's histogram statistics use: position
// q·(n+1), linear between its neighbours, clamped to min and max. 0 for an empty window; q outside
// (0, 1] is clamped into it.
func (s HistogramStatistics) Quantile(q float64) float64 {
	n := len(s.sorted)
	if n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	pos := q * float64(n+1)
	if pos < 1 {
		return float64(s.sorted[0])
	}
	if pos >= float64(n) {
		return float64(s.sorted[n-1])
	}
	f := math.Floor(pos)
	lower, upper := float64(s.sorted[int(f)-1]), float64(s.sorted[int(f)])
	return lower + (pos-f)*(upper-lower)
}

// Statistics returns the statistics of the current window.
func (h *Histogram) Statistics() HistogramStatistics {
	h.mu.Lock()
	vals := slices.Clone(h.window)
	count := h.count
	h.mu.Unlock()
	s := HistogramStatistics{Count: count, Size: len(vals)}
	if len(vals) == 0 {
		return s
	}
	slices.Sort(vals)
	s.sorted = vals
	s.Min, s.Max = vals[0], vals[len(vals)-1]
	var sum float64
	for _, v := range vals {
		sum += float64(v)
	}
	s.Mean = sum / float64(len(vals))
	if len(vals) > 1 {
		var sq float64
		for _, v := range vals {
			d := float64(v) - s.Mean
			sq += d * d
		}
		s.StdDev = math.Sqrt(sq / float64(len(vals)-1))
	}
	return s
}

// TimerGauge measures how much of each UpdateInterval something took, in milliseconds per second
// (0 to 1000), as Flink's TimerGauge behind `backPressuredTimeMsPerSecond`: its owner brackets
// each wait with MarkStart and MarkEnd, and every UpdateInterval the registry's updater turns the
// time measured in the interval just ended (a wait still going on counts up to the update) into
// the value. Until the first update the value is 0. Safe for concurrent use (its own lock); the
// owner's calls are cheap: a clock read and the lock.
type TimerGauge struct {
	mu          sync.Mutex
	start       time.Time // of the wait going on, zero if none
	accumulated time.Duration
	value       int64
}

func newTimerGauge() *TimerGauge { return &TimerGauge{} }

// MarkStart starts a measured wait; nothing if one is going on already. Nothing on a nil
// *TimerGauge.
func (t *TimerGauge) MarkStart() {
	if t == nil {
		return
	}
	now := time.Now()
	t.mu.Lock()
	if t.start.IsZero() {
		t.start = now
	}
	t.mu.Unlock()
}

// MarkEnd ends the wait MarkStart started; nothing if none is going on, or on a nil *TimerGauge.
func (t *TimerGauge) MarkEnd() {
	if t == nil {
		return
	}
	now := time.Now()
	t.mu.Lock()
	if !t.start.IsZero() {
		t.accumulated += now.Sub(t.start)
		t.start = time.Time{}
	}
	t.mu.Unlock()
}

// Value returns the milliseconds per second measured over the last complete UpdateInterval.
func (t *TimerGauge) Value() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.value
}

func (t *TimerGauge) update() {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.start.IsZero() {
		t.accumulated += now.Sub(t.start)
		t.start = now
	}
	t.value = t.accumulated.Milliseconds() / int64(UpdateInterval/time.Second)
	t.accumulated = 0
}
