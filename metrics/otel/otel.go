// Package otel bridges a jobgraph metrics.Registry to an OpenTelemetry Meter: every metric of the
// registry becomes an observable instrument named as the metric (Flink's names: uptime,
// numRestarts, numRecordsOut…), with the metric's scope variables as attributes (job_id,
// job_name, task_id, task_name, subtask_index, task_attempt_num) and the scope as attribute
// "scope" ("jobmanager", "jobmanager.job", "taskmanager.job.task"). It lives in a module of its
// own so that the core never depends on OpenTelemetry. Flink's nearest equivalent is a
// MetricReporter (its Prometheus reporter exposes the same metrics with the same variables as
// labels).
//
// Instruments: a Counter is an Int64ObservableUpDownCounter (Flink's counters may go down); an
// int64 gauge (and a TimerGauge) an Int64ObservableGauge; a float64 gauge and a Meter (its rate,
// events per second) a Float64ObservableGauge; a Histogram is Float64ObservableGauges named as
// metrics.Value.Fields names them (name_min, name_max, name_mean, name_median, name_stddev,
// name_p75 … name_p999), since OpenTelemetry has no observable histogram. Values are read from
// the registry on the collecting goroutine (one Registry.Snapshot per collection), which never
// waits on an endpoint's loop.
//
// Instruments exist for the names known when the Bridge is made (RuntimeMetricNames and those
// registered then) and for those Sync finds later; a metric whose name has no instrument yet is
// not exported until Sync.
package otel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/jobgraph/jobgraph/metrics"
)

// RuntimeMetricNames are the names jobgraph's runtime registers (see scheduler.Config.Metrics,
// taskexecutor.Config.Metrics, resourcemanager.Config.Metrics, dispatcher.Config.Metrics), each
// with its kind: a Bridge has instruments for them from the start.
var RuntimeMetricNames = map[string]metrics.Kind{
	// the cluster
	"numRegisteredTaskManagers": metrics.KindGauge,
	"taskSlotsAvailable":        metrics.KindGauge,
	"taskSlotsTotal":            metrics.KindGauge,
	"numRunningJobs":            metrics.KindGauge,
	// a job
	"uptime":                         metrics.KindGauge,
	"downtime":                       metrics.KindGauge,
	"numRestarts":                    metrics.KindGauge,
	"createdTime":                    metrics.KindGauge,
	"initializingTime":               metrics.KindGauge,
	"runningTime":                    metrics.KindGauge,
	"failingTime":                    metrics.KindGauge,
	"cancellingTime":                 metrics.KindGauge,
	"restartingTime":                 metrics.KindGauge,
	"totalNumberOfCheckpoints":       metrics.KindGauge,
	"numberOfInProgressCheckpoints":  metrics.KindGauge,
	"numberOfCompletedCheckpoints":   metrics.KindGauge,
	"numberOfFailedCheckpoints":      metrics.KindGauge,
	"lastCheckpointDuration":         metrics.KindGauge,
	"lastCheckpointSize":             metrics.KindGauge,
	"lastCheckpointFullSize":         metrics.KindGauge,
	"lastCompletedCheckpointId":      metrics.KindGauge,
	"lastCheckpointRestoreTimestamp": metrics.KindGauge,
	// a task
	"numRecordsIn":                 metrics.KindCounter,
	"numRecordsOut":                metrics.KindCounter,
	"numRecordsInPerSecond":        metrics.KindMeter,
	"numRecordsOutPerSecond":       metrics.KindMeter,
	"backPressuredTimeMsPerSecond": metrics.KindGauge,
}

// instKey names one instrument: an exported name with the type of its values.
type instKey struct {
	name  string
	float bool
	kind  metrics.Kind // KindCounter or KindGauge (meters, histograms: gauges)
}

// Bridge is the registration of one Registry's metrics with one Meter. Safe for concurrent use.
type Bridge struct {
	reg   *metrics.Registry
	meter metric.Meter

	// insts is replaced whole by Sync (under mu) and read by the callback without a lock, so a
	// collection never waits for Sync (which calls into the Meter).
	insts atomic.Pointer[map[instKey]metric.Observable]

	mu     sync.Mutex
	cb     metric.Registration
	closed bool
}

// New bridges reg to meter: it creates the instruments of RuntimeMetricNames and of the names
// reg holds now, and registers one callback that reads reg on every collection. Errors: the
// Meter's, naming the instrument; nil reg or meter.
func New(reg *metrics.Registry, meter metric.Meter) (*Bridge, error) {
	if reg == nil || meter == nil {
		return nil, errors.New("metrics/otel: New needs a registry and a meter")
	}
	b := &Bridge{reg: reg, meter: meter}
	known := make([]metrics.Value, 0, len(RuntimeMetricNames))
	for name, kind := range RuntimeMetricNames {
		known = append(known, metrics.Value{Name: name, Kind: kind, IsFloat: kind == metrics.KindMeter})
	}
	if err := b.sync(known); err != nil {
		return nil, err
	}
	return b, nil
}

// keysOf gives the instruments a metric's value is exported on.
func keysOf(v metrics.Value) []instKey {
	switch v.Kind {
	case metrics.KindCounter:
		return []instKey{{v.Name, false, metrics.KindCounter}}
	case metrics.KindHistogram:
		var out []instKey
		for _, f := range v.Fields() {
			out = append(out, instKey{f.ID, true, metrics.KindGauge})
		}
		return out
	}
	return []instKey{{v.Name, v.IsFloat, metrics.KindGauge}}
}

// instrument creates the instrument of k in insts unless it is there. b.mu held.
func (b *Bridge) instrument(insts map[instKey]metric.Observable, k instKey) error {
	if _, ok := insts[k]; ok {
		return nil
	}
	var (
		o   metric.Observable
		err error
	)
	switch {
	case k.kind == metrics.KindCounter:
		o, err = b.meter.Int64ObservableUpDownCounter(k.name)
	case k.float:
		o, err = b.meter.Float64ObservableGauge(k.name)
	default:
		o, err = b.meter.Int64ObservableGauge(k.name)
	}
	if err != nil {
		return fmt.Errorf("metrics/otel: instrument %q: %w", k.name, err)
	}
	insts[k] = o
	return nil
}

// Sync creates instruments for the names the registry holds that have none yet, and registers
// the callback anew over all of them. The runtime's names have instruments from New on; call
// Sync after registering metrics of other names. Errors: the Meter's; ErrClosed after Close.
func (b *Bridge) Sync() error { return b.sync(b.reg.Snapshot()) }

func (b *Bridge) sync(vals []metrics.Value) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	insts := map[instKey]metric.Observable{}
	if old := b.insts.Load(); old != nil {
		for k, o := range *old {
			insts[k] = o
		}
	}
	n := len(insts)
	for _, v := range vals {
		for _, k := range keysOf(v) {
			if err := b.instrument(insts, k); err != nil {
				return err
			}
		}
	}
	if b.cb != nil && n == len(insts) {
		return nil
	}
	b.insts.Store(&insts)
	all := make([]metric.Observable, 0, len(insts))
	for _, o := range insts {
		all = append(all, o)
	}
	cb, err := b.meter.RegisterCallback(b.observe, all...)
	if err != nil {
		return fmt.Errorf("metrics/otel: registering the callback: %w", err)
	}
	if b.cb != nil {
		if err := b.cb.Unregister(); err != nil {
			_ = cb.Unregister()
			return fmt.Errorf("metrics/otel: unregistering the previous callback: %w", err)
		}
	}
	b.cb = cb
	return nil
}

// ErrClosed is returned by Sync after Close.
var ErrClosed = errors.New("metrics/otel: bridge closed")

// Close unregisters the callback: the Meter's instruments observe nothing from then on.
// Idempotent.
func (b *Bridge) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.cb == nil {
		return nil
	}
	return b.cb.Unregister()
}

// attributes gives a scope's variables, and the scope's name as "scope".
func attributes(s metrics.Scope) metric.MeasurementOption {
	vars := s.Variables()
	kv := make([]attribute.KeyValue, 0, len(vars)+1)
	kv = append(kv, attribute.String("scope", s.Kind.String()))
	for _, v := range vars {
		kv = append(kv, attribute.String(v.Key, v.Value))
	}
	return metric.WithAttributes(kv...)
}

// histogramValues are a histogram's exported values, in the order and with the names of
// metrics.Value.Fields.
func histogramValues(v metrics.Value) []float64 {
	h := v.Histogram
	return []float64{float64(h.Min), float64(h.Max), h.Mean, h.Quantile(0.5), h.StdDev,
		h.Quantile(0.75), h.Quantile(0.90), h.Quantile(0.95), h.Quantile(0.98), h.Quantile(0.99), h.Quantile(0.999)}
}

// observe is the callback: one snapshot of the registry, each value on its instrument.
func (b *Bridge) observe(_ context.Context, o metric.Observer) error {
	p := b.insts.Load()
	if p == nil {
		return nil
	}
	insts := *p
	for _, v := range b.reg.Snapshot() {
		attrs := attributes(v.Scope)
		switch v.Kind {
		case metrics.KindHistogram:
			xs := histogramValues(v)
			for i, f := range v.Fields() {
				if g, ok := insts[instKey{f.ID, true, metrics.KindGauge}].(metric.Float64Observable); ok {
					o.ObserveFloat64(g, xs[i], attrs)
				}
			}
		case metrics.KindCounter:
			if c, ok := insts[instKey{v.Name, false, metrics.KindCounter}].(metric.Int64Observable); ok {
				o.ObserveInt64(c, v.Int, attrs)
			}
		default:
			k := instKey{v.Name, v.IsFloat, metrics.KindGauge}
			if v.IsFloat {
				if g, ok := insts[k].(metric.Float64Observable); ok {
					o.ObserveFloat64(g, v.Float, attrs)
				}
			} else if g, ok := insts[k].(metric.Int64Observable); ok {
				o.ObserveInt64(g, v.Int, attrs)
			}
		}
	}
	return nil
}
