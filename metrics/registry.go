package metrics

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
)

// ScopeKind is the level a metric group belongs to.
type ScopeKind int

const (
	// ScopeJobManager is the cluster: Flink's JobManagerMetricGroup.
	ScopeJobManager ScopeKind = iota + 1
	// ScopeJob is one job on the JobManager: Flink's JobManagerJobMetricGroup.
	ScopeJob
	// ScopeTask is one attempt of one subtask on a TaskExecutor: Flink's TaskMetricGroup.
	ScopeTask
)

// String gives the scope's name: "jobmanager", "jobmanager.job" or "taskmanager.job.task".
func (k ScopeKind) String() string {
	switch k {
	case ScopeJobManager:
		return "jobmanager"
	case ScopeJob:
		return "jobmanager.job"
	case ScopeTask:
		return "taskmanager.job.task"
	}
	return "unknown"
}

// Format gives Flink's default scope format of the scope (options metrics.scope.jm,
// metrics.scope.jm-job, metrics.scope.task), which we do not apply; it names the variables a
// reporter may join into a dotted identifier.
func (k ScopeKind) Format() string {
	switch k {
	case ScopeJobManager:
		return "<host>.jobmanager"
	case ScopeJob:
		return "<host>.jobmanager.<job_name>"
	case ScopeTask:
		return "<host>.taskmanager.<tm_id>.<job_name>.<task_name>.<subtask_index>"
	}
	return ""
}

// The variables of the scopes, Flink's scope variables without their angle brackets.
const (
	VarJobID          = "job_id"
	VarJobName        = "job_name"
	VarTaskID         = "task_id"
	VarTaskName       = "task_name"
	VarSubtaskIndex   = "subtask_index"
	VarTaskAttemptNum = "task_attempt_num"
)

// Scope identifies a metric group: its kind and its variables. Fields a kind has no variable for
// are zero (a ScopeJobManager scope is Scope{Kind: ScopeJobManager}). Comparable.
type Scope struct {
	Kind          ScopeKind
	JobID         jobgraph.JobID       // ScopeJob, ScopeTask: <job_id>
	JobName       string               // ScopeJob, ScopeTask: <job_name>
	TaskID        jobgraph.JobVertexID // ScopeTask: <task_id>, the vertex
	TaskName      string               // ScopeTask: <task_name>, the vertex's name
	SubtaskIndex  int                  // ScopeTask: <subtask_index>, from 0
	AttemptNumber int                  // ScopeTask: <task_attempt_num>, from 0
}

// Variable is one scope variable: Flink's name without brackets (VarJobID…) and its value.
type Variable struct{ Key, Value string }

// Variables returns the scope's variables in Flink's order: none for ScopeJobManager; job_id,
// job_name for ScopeJob; those and task_id, task_name, subtask_index, task_attempt_num for
// ScopeTask. IDs are printed as their String methods print them (32 hex digits).
func (s Scope) Variables() []Variable {
	switch s.Kind {
	case ScopeJob:
		return []Variable{{VarJobID, s.JobID.String()}, {VarJobName, s.JobName}}
	case ScopeTask:
		return []Variable{
			{VarJobID, s.JobID.String()}, {VarJobName, s.JobName},
			{VarTaskID, s.TaskID.String()}, {VarTaskName, s.TaskName},
			{VarSubtaskIndex, strconv.Itoa(s.SubtaskIndex)}, {VarTaskAttemptNum, strconv.Itoa(s.AttemptNumber)},
		}
	}
	return nil
}

func compareScopes(a, b Scope) int {
	return cmp.Or(
		cmp.Compare(a.Kind, b.Kind),
		bytes.Compare(a.JobID[:], b.JobID[:]),
		cmp.Compare(a.JobName, b.JobName),
		bytes.Compare(a.TaskID[:], b.TaskID[:]),
		cmp.Compare(a.TaskName, b.TaskName),
		cmp.Compare(a.SubtaskIndex, b.SubtaskIndex),
		cmp.Compare(a.AttemptNumber, b.AttemptNumber),
	)
}

// entry is one registered metric.
type entry struct {
	owner *Group
	// m is the metric: a *Counter, a func() int64 (an int64 gauge), a func(int) int64 (a gauge
	// of a set, read as m(index)), a func() float64, a *Meter, a *TimerGauge or a *Histogram;
	// nil for a gauge registered with a nil function. One interface rather than a field per
	// form keeps an entry at 32 bytes with 3 pointer-typed words (a running task's five are
	// read by every collector cycle).
	m     any
	index int32
	kind  uint8 // a Kind
}

// view returns the metric's View, updated every UpdateInterval, or nil.
func (e *entry) view() view {
	switch m := e.m.(type) {
	case *Meter:
		return m
	case *TimerGauge:
		return m
	}
	return nil
}

// Registry holds the metric groups of one cluster (Flink's MetricRegistryImpl) and updates their
// meters. Safe for concurrent use by any goroutine; its methods never wait on a metric's owner.
// The zero value is not usable: use NewRegistry. Methods on a nil *Registry return nil groups
// and empty snapshots.
type Registry struct {
	mu     sync.RWMutex
	scopes map[Scope]*scopeMetrics
	byJob  map[jobgraph.JobID]map[*scopeMetrics]struct{}
	// viewScopes are the scopes holding a view (a Meter, a TimerGauge), which the timer updates
	// every UpdateInterval while there are any; timer and closed are guarded by mu too.
	viewScopes map[*scopeMetrics]struct{}
	timer      *time.Timer
	closed     bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		scopes:     make(map[Scope]*scopeMetrics),
		byJob:      make(map[jobgraph.JobID]map[*scopeMetrics]struct{}),
		viewScopes: make(map[*scopeMetrics]struct{}),
	}
}

// Close stops the meters' updater; the registry can still be read and written, but its meters
// keep their last rate. Idempotent.
func (r *Registry) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}

// JobManagerGroup returns a new group of the cluster scope (Flink's JobManagerMetricGroup, whose
// metrics are the cluster's: numRegisteredTaskManagers, numRunningJobs, taskSlotsAvailable,
// taskSlotsTotal). Each caller (the Dispatcher, the ResourceManager) takes its own group over the
// one scope and closes it when it stops, which removes the metrics it registered.
func (r *Registry) JobManagerGroup() *Group {
	return r.group(Scope{Kind: ScopeJobManager})
}

// JobGroup returns a new group of the scope of one job (Flink's JobManagerJobMetricGroup) for
// its JobMaster, to be closed when that JobMaster stops.
func (r *Registry) JobGroup(jobID jobgraph.JobID, jobName string) *Group {
	return r.group(Scope{Kind: ScopeJob, JobID: jobID, JobName: jobName})
}

// TaskGroup returns a new group of the scope of one task attempt (Flink's TaskMetricGroup) for
// its TaskExecutor, to be closed when the task ends. Its Kind is set to ScopeTask.
func (r *Registry) TaskGroup(s Scope) *Group {
	s.Kind = ScopeTask
	return r.group(s)
}

func (r *Registry) group(s Scope) *Group {
	if r == nil {
		return nil
	}
	return &Group{reg: r, scope: s}
}

// Value is one metric as read by Registry.Snapshot: its scope, name, kind and value.
type Value struct {
	Scope Scope
	Name  string
	Kind  Kind
	// Int is a counter's count, an int64 gauge's value, a meter's count (Meter.Count) or a
	// histogram's count (values ever recorded).
	Int int64
	// Float is a float64 gauge's value or a meter's rate in events per second.
	Float float64
	// IsFloat says whether the value is Float (a float64 gauge, a meter) rather than Int.
	IsFloat bool
	// Histogram holds a histogram's statistics.
	Histogram HistogramStatistics
}

// Field is one named value as Flink's REST API shows it: a metric's id and its value as text.
type Field struct{ ID, Value string }

// Fields returns the metric as Flink's MetricStore (behind REST's `…/metrics?get=`) keeps it:
// one field named after the metric with its value for a counter, a gauge and a meter (the rate),
// and for a histogram the fields name_min, name_max, name_mean, name_median, name_stddev,
// name_p75, name_p90, name_p95, name_p98, name_p99 and name_p999. Integers print in decimal,
// floats as Java's Double.toString prints them ("10.0", "1.0E7").
func (v Value) Fields() []Field {
	if v.Kind != KindHistogram {
		s := strconv.FormatInt(v.Int, 10)
		if v.IsFloat {
			s = javaDouble(v.Float)
		}
		return []Field{{v.Name, s}}
	}
	h := v.Histogram
	return []Field{
		{v.Name + "_min", strconv.FormatInt(h.Min, 10)},
		{v.Name + "_max", strconv.FormatInt(h.Max, 10)},
		{v.Name + "_mean", javaDouble(h.Mean)},
		{v.Name + "_median", javaDouble(h.Quantile(0.5))},
		{v.Name + "_stddev", javaDouble(h.StdDev)},
		{v.Name + "_p75", javaDouble(h.Quantile(0.75))},
		{v.Name + "_p90", javaDouble(h.Quantile(0.90))},
		{v.Name + "_p95", javaDouble(h.Quantile(0.95))},
		{v.Name + "_p98", javaDouble(h.Quantile(0.98))},
		{v.Name + "_p99", javaDouble(h.Quantile(0.99))},
		{v.Name + "_p999", javaDouble(h.Quantile(0.999))},
	}
}

// javaDouble formats f as Java's Double.toString does for the values metrics take: decimal with
// at least one fraction digit for 1e-3 ≤ |f| < 1e7 (and 0), computerized scientific notation
// ("1.0E7") otherwise.
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	a := math.Abs(f)
	if f == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64) // 1E+07
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// Snapshot reads every registered metric, ordered by scope (kind, then job, task, subtask,
// attempt) and name. Gauges are called on the caller's goroutine without the registry's lock
// held.
func (r *Registry) Snapshot() []Value {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	type item struct {
		s    Scope
		name string
		e    *entry
	}
	items := make([]item, 0, 64)
	for s, sm := range r.scopes {
		for _, m := range sm.metrics {
			items = append(items, item{s, m.name, m.e})
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(items, func(a, b item) int {
		return cmp.Or(compareScopes(a.s, b.s), cmp.Compare(a.name, b.name))
	})
	out := make([]Value, len(items))
	for i, it := range items {
		out[i] = it.e.read(it.s, it.name)
	}
	return out
}

// JobMetrics reads the metrics of the job scope of jobID (those its JobMaster registered: uptime,
// numRestarts…), ordered by name; none if no JobMaster of that job has a group open.
func (r *Registry) JobMetrics(jobID jobgraph.JobID) []Value {
	return r.jobMetrics(jobID, func(s Scope) bool { return s.Kind == ScopeJob })
}

// TaskMetrics reads the metrics of every open task group of the vertex vertexID of job jobID
// (every subtask and attempt running), ordered by subtask, attempt and name.
func (r *Registry) TaskMetrics(jobID jobgraph.JobID, vertexID jobgraph.JobVertexID) []Value {
	return r.jobMetrics(jobID, func(s Scope) bool { return s.Kind == ScopeTask && s.TaskID == vertexID })
}

func (r *Registry) jobMetrics(jobID jobgraph.JobID, keep func(Scope) bool) []Value {
	if r == nil {
		return nil
	}
	type item struct {
		s    Scope
		name string
		e    *entry
	}
	var items []item
	r.mu.RLock()
	for sm := range r.byJob[jobID] {
		if !keep(sm.scope) {
			continue
		}
		for _, m := range sm.metrics {
			items = append(items, item{sm.scope, m.name, m.e})
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(items, func(a, b item) int {
		return cmp.Or(compareScopes(a.s, b.s), cmp.Compare(a.name, b.name))
	})
	out := make([]Value, len(items))
	for i, it := range items {
		out[i] = it.e.read(it.s, it.name)
	}
	return out
}

func (e *entry) read(s Scope, name string) Value {
	v := Value{Scope: s, Name: name, Kind: Kind(e.kind)}
	switch m := e.m.(type) {
	case *Counter:
		v.Int = m.Count()
	case func() int64:
		v.Int = m()
	case func(int) int64:
		v.Int = m(int(e.index))
	case func() float64:
		v.Float, v.IsFloat = m(), true
	case *Meter:
		v.Float, v.IsFloat = m.Rate(), true
		v.Int = m.Count()
	case *TimerGauge:
		v.Int = m.Value()
	case *Histogram:
		v.Histogram = m.Statistics()
		v.Int = v.Histogram.Count
	}
	return v
}

// scopeSizeHint is how many metrics a scope of kind usually holds (a job's scheduler registers
// about 20, a task attempt 5, see the package doc): its slice is made that large at once (a
// task's inside its record, taskScopeMetrics), so it does not grow step by step through every
// job's registrations.
func scopeSizeHint(kind ScopeKind) int {
	switch kind {
	case ScopeJob:
		return 24
	case ScopeTask:
		return taskScopeRoom
	}
	return 0
}

const taskScopeRoom = 8

// add registers e under (g's scope, name), replacing what was there. Called with g's lock held.
func (r *Registry) add(g *Group, name string, e *entry) {
	r.mu.Lock()
	sm := r.scopeLocked(g)
	sm.put(name, e)
	r.viewsChangedLocked(sm)
	r.mu.Unlock()
}

// addGauges registers es[i] under (g's scope, names[i]) for every es[i] with an owner (the
// valid ones), under one lock: the gauges of a set (Group.Gauges), none of which is a view.
// Called with the owner's lock held.
func (r *Registry) addGauges(g *Group, names []string, es []entry) {
	r.mu.Lock()
	sm := r.scopeLocked(g)
	for i, n := range names {
		if es[i].owner != nil {
			sm.put(n, &es[i])
		}
	}
	r.viewsChangedLocked(sm) // a gauge may have replaced a view
	r.mu.Unlock()
}

// scopeMetrics is what the registry holds of one scope: its metrics in the order they were
// first registered (a scope holds a few dozen at most, so a slice searched by name costs less
// than a map of them, and registering and removing a task attempt's five hashes its Scope twice:
// once when its group first registers, once when the last of them goes).
type scopeMetrics struct {
	scope   Scope
	metrics []namedEntry
	// gone is set when the scope's last metric was removed and the registry forgot it; a group
	// that cached it looks its scope up again.
	gone bool
	// nviews counts the metrics that are views (each view is the metric of one entry: Group
	// makes a new Meter or TimerGauge for every registration).
	nviews int
}

// taskScopeMetrics is a task attempt's scope with room for its usual metrics.
type taskScopeMetrics struct {
	scopeMetrics
	room [taskScopeRoom]namedEntry
}

type namedEntry struct {
	name string
	e    *entry
}

// put registers e under name in the scope, replacing what was there.
func (sm *scopeMetrics) put(name string, e *entry) {
	if e.view() != nil {
		sm.nviews++
	}
	for i := range sm.metrics {
		if m := &sm.metrics[i]; m.name == name {
			if m.e.view() != nil {
				sm.nviews--
			}
			m.e = e
			return
		}
	}
	sm.metrics = append(sm.metrics, namedEntry{name, e})
}

// viewsChangedLocked records whether sm holds views, and arms the updater for the first view.
// Called with r.mu held for writing.
func (r *Registry) viewsChangedLocked(sm *scopeMetrics) {
	if sm.nviews == 0 || sm.gone {
		delete(r.viewScopes, sm)
		return
	}
	r.viewScopes[sm] = struct{}{}
	if r.timer == nil && !r.closed {
		r.timer = time.AfterFunc(UpdateInterval, r.updateViews)
	}
}

// scopeLocked returns the metrics of g's scope, made (and indexed by job) if the scope had none,
// and keeps them in g for its next registration. Called with r.mu held for writing.
func (r *Registry) scopeLocked(g *Group) *scopeMetrics {
	if sm := g.held; sm != nil && !sm.gone {
		return sm
	}
	s := g.scope
	sm := r.scopes[s]
	if sm == nil {
		if s.Kind == ScopeTask { // one allocation for the record and the room for its metrics
			t := &taskScopeMetrics{scopeMetrics: scopeMetrics{scope: s}}
			t.metrics = t.room[:0]
			sm = &t.scopeMetrics
		} else {
			sm = &scopeMetrics{scope: s, metrics: make([]namedEntry, 0, scopeSizeHint(s.Kind))}
		}
		r.scopes[s] = sm
		if s.Kind != ScopeJobManager {
			idx := r.byJob[s.JobID]
			if idx == nil {
				idx = make(map[*scopeMetrics]struct{})
				r.byJob[s.JobID] = idx
			}
			idx[sm] = struct{}{}
		}
	}
	g.held = sm
	return sm
}

// remove unregisters the metrics of owner's scope that owner still owns: a look at every metric of
// the scope (a job's or a task's holds a few dozen), so a group keeps no list of its names.
func (r *Registry) remove(owner *Group) {
	r.mu.Lock()
	sm := owner.held
	if sm == nil || sm.gone {
		sm = r.scopes[owner.scope]
	}
	if sm != nil {
		kept := sm.metrics[:0]
		for _, m := range sm.metrics {
			if m.e.owner != owner {
				kept = append(kept, m)
			} else if m.e.view() != nil {
				sm.nviews--
			}
		}
		clear(sm.metrics[len(kept):])
		sm.metrics = kept
		if len(kept) == 0 {
			sm.gone = true
			delete(r.scopes, sm.scope)
			if idx := r.byJob[sm.scope.JobID]; idx != nil && sm.scope.Kind != ScopeJobManager {
				delete(idx, sm)
				if len(idx) == 0 {
					delete(r.byJob, sm.scope.JobID)
				}
			}
		}
		r.viewsChangedLocked(sm)
	}
	owner.held = nil
	r.mu.Unlock()
}

// view is a metric the registry updates every UpdateInterval: Flink's View (a Meter's
// MeterView, a TimerGauge).
type view interface{ update() }

// updateViews is the view updater (Flink's MetricRegistryImpl.ViewUpdater): every UpdateInterval
// while views are registered, all of them at once. The timer is re-armed before the views are
// updated, so a slow update does not shift the period; the first tick that finds no view left
// drops it, and the next registered view arms a new one, in its own phase (a view registered
// before that tick keeps the old phase: its first update may come sooner than UpdateInterval).
// The views are updated outside the lock; a view removed meanwhile may be updated once more,
// which nobody reads.
func (r *Registry) updateViews() {
	r.mu.Lock()
	if r.closed || len(r.viewScopes) == 0 {
		r.timer = nil
		r.mu.Unlock()
		return
	}
	n := 0
	for sm := range r.viewScopes {
		n += sm.nviews
	}
	vs := make([]view, 0, n)
	for sm := range r.viewScopes {
		for _, m := range sm.metrics {
			if v := m.e.view(); v != nil {
				vs = append(vs, v)
			}
		}
	}
	r.timer.Reset(UpdateInterval)
	r.mu.Unlock()
	for _, v := range vs {
		v.update()
	}
}

// Group is a handle on one scope of a Registry (Flink's MetricGroup) through which one owner
// registers its metrics; Close removes them. Several groups may share one scope (the Dispatcher's
// and the ResourceManager's cluster metrics); each removes only its own. Safe for concurrent use.
// Every method works on a nil *Group, registering nothing (see the package doc).
type Group struct {
	reg   *Registry
	scope Scope

	mu     sync.Mutex
	closed bool
	errs   []error
	held   *scopeMetrics // the scope's metrics once g registered one; guarded by reg.mu
}

// Scope returns the group's scope (the zero Scope for a nil group).
func (g *Group) Scope() Scope {
	if g == nil {
		return Scope{}
	}
	return g.scope
}

// ErrInvalidName is wrapped by the error Group.Err reports for a metric name that is empty, longer
// than 256 bytes, or has a character other than an ASCII letter, a digit, '_', '-' or '.'.
var ErrInvalidName = errors.New("metrics: invalid metric name")

// ErrNilGauge is wrapped by the error Group.Err reports for a gauge registered with a nil function.
var ErrNilGauge = errors.New("metrics: nil gauge function")

func validName(name string) bool {
	if name == "" || len(name) > 256 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Err returns the registration errors of the group so far, joined (nil if none): each names the
// metric and wraps ErrInvalidName or ErrNilGauge. A metric refused is still returned to its
// caller and works; it is only not registered.
func (g *Group) Err() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return errors.Join(g.errs...)
}

func (g *Group) register(name string, e *entry) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.validLocked(name, e) || g.closed {
		return
	}
	e.owner = g
	g.reg.add(g, name, e)
}

// validLocked says whether e may be registered under name, recording the error if not. Called
// with g.mu held.
func (g *Group) validLocked(name string, e *entry) bool {
	switch {
	case !validName(name):
		g.errs = append(g.errs, fmt.Errorf("%w %q in scope %s: want 1 to 256 of [A-Za-z0-9_.-]", ErrInvalidName, jobgraph.Truncate(name), g.scope.Kind))
		return false
	case Kind(e.kind) == KindGauge && e.m == nil:
		g.errs = append(g.errs, fmt.Errorf("%w for %q in scope %s", ErrNilGauge, name, g.scope.Kind))
		return false
	}
	return true
}

// Counter registers and returns a new Counter named name (Flink: MetricGroup.counter).
func (g *Group) Counter(name string) *Counter {
	c := new(Counter)
	g.register(name, &entry{kind: uint8(KindCounter), m: c})
	return c
}

// RegisterCounter registers c, a Counter the caller made, under name; nothing if c is nil.
func (g *Group) RegisterCounter(name string, c *Counter) {
	if c != nil {
		g.register(name, &entry{kind: uint8(KindCounter), m: c})
	}
}

// Gauge registers an int64 gauge (Flink: MetricGroup.gauge): value is called on the goroutine of
// whoever reads the registry, at any time until the group is closed, so it must only read what its
// owner publishes atomically, and must not block.
func (g *Group) Gauge(name string, value func() int64) {
	e := &entry{kind: uint8(KindGauge)}
	if value != nil { // a nil func in m would not compare equal to nil
		e.m = value
	}
	g.register(name, e)
}

// Gauges registers one int64 gauge per name at once, under Gauge's rules: the gauge names[i]
// reads value(i). It is what len(names) calls of Gauge would register (each name a metric of its
// own, refused on its own), at the cost of one allocation for the set rather than one per gauge
// and a closure each, and under one lock of the registry: a job's scheduler registers its
// status gauges this way. names is read during the call only.
func (g *Group) Gauges(names []string, value func(i int) int64) {
	if g == nil || len(names) == 0 {
		return
	}
	es := make([]entry, len(names))
	g.mu.Lock()
	defer g.mu.Unlock()
	valid := 0
	for i, n := range names {
		es[i] = entry{kind: uint8(KindGauge), index: int32(i)}
		if value != nil {
			es[i].m = value
		}
		if g.validLocked(n, &es[i]) {
			es[i].owner = g
			valid++
		}
	}
	if valid == 0 || g.closed {
		return
	}
	g.reg.addGauges(g, names, es)
}

// FloatGauge registers a float64 gauge, under Gauge's rules.
func (g *Group) FloatGauge(name string, value func() float64) {
	e := &entry{kind: uint8(KindGauge)}
	if value != nil {
		e.m = value
	}
	g.register(name, e)
}

// Meter registers and returns a Meter named name over counter (Flink: MetricGroup.meter with a
// MeterView over a counter, as `numRecordsOutPerSecond` over `numRecordsOut`); a nil counter
// gives the meter a counter of its own.
func (g *Group) Meter(name string, counter *Counter) *Meter {
	m := newMeter(counter)
	g.register(name, &entry{kind: uint8(KindMeter), m: m})
	return m
}

// TimerGauge registers and returns a TimerGauge named name (Flink: TimerGauge, registered as a
// gauge, as `backPressuredTimeMsPerSecond`); its Kind is KindGauge.
func (g *Group) TimerGauge(name string) *TimerGauge {
	t := newTimerGauge()
	g.register(name, &entry{kind: uint8(KindGauge), m: t})
	return t
}

// Histogram registers and returns a Histogram named name keeping the last windowSize values
// (DefaultHistogramWindowSize for 0 or less).
func (g *Group) Histogram(name string, windowSize int) *Histogram {
	h := newHistogram(windowSize)
	g.register(name, &entry{kind: uint8(KindHistogram), m: h})
	return h
}

// Close removes the metrics registered through g that another group has not replaced since; a
// metric registered after Close is not registered. Idempotent.
func (g *Group) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.closed = true
	g.reg.remove(g)
}
