package jobgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Accumulator collects a value in one task — a count, a sum, a histogram, a list — that is merged
// with the accumulators of the same name in the job's other tasks into one result per name, which
// the job's result (JobResult.Accumulators) and the running job
// (ArchivedExecutionGraph.Accumulators) show. A task reaches its accumulators by name through its
// Environment (taskexecutor.AccumulatorRegistry). Flink:
// org.apache.flink.api.common.accumulators.Accumulator<V, R>.
//
// Each implementation has its own Add method taking the values it collects (Flink's add(V));
// Go's interfaces cannot name it without fixing its type. The value travels as plain data: a
// snapshot is the accumulator's Kind and its value in JSON (SerializedAccumulator), so it can
// cross a process boundary, and the JobMaster rebuilds accumulators from snapshots with the
// factory registered for the kind (RegisterAccumulator) to merge them.
//
// Where we differ from Flink: there is no clone (Flink merges clones so that it never changes a
// task's accumulator; here only decoded snapshots are merged, so nothing is ever shared) and no
// resetLocal (nothing here resets an accumulator).
//
// Concurrency: the task adds to its accumulators while its TaskExecutor takes snapshots of them
// for heartbeats, so every method must be safe for concurrent use. The accumulators of this
// package are.
type Accumulator interface {
	// Kind names the accumulator's type, e.g. "IntCounter": the name its factory is registered
	// under (RegisterAccumulator). Accumulators are merged only with ones of the same kind.
	Kind() string
	// Merge adds other's value to this one's. other must be of the same Go type; otherwise
	// Merge returns an *AccumulatorTypeError (errors.Is ErrAccumulatorTypeMismatch) and changes
	// nothing. It must not change other. Flink: Accumulator.merge.
	Merge(other Accumulator) error
	// LocalValue returns a copy of the current value (Flink: getLocalValue). The accumulators
	// of this package also have a Value method that returns it typed.
	LocalValue() any
	// MarshalJSON encodes the value (only the value, not the kind); UnmarshalJSON replaces the
	// value with the one encoded. UnmarshalJSON(MarshalJSON()) gives back the same value.
	json.Marshaler
	json.Unmarshaler
}

// Errors of accumulators (errors.Is).
var (
	// ErrAccumulatorTypeMismatch: one accumulator name was used with two types, in one task or
	// across the job's tasks. Flink fails the same way (AccumulatorHelper.compareAccumulatorTypes).
	ErrAccumulatorTypeMismatch = errors.New("accumulator type mismatch")
	// ErrUnknownAccumulatorKind: no factory is registered for an accumulator's kind in this
	// process (RegisterAccumulator), so a snapshot of it cannot be decoded or merged.
	ErrUnknownAccumulatorKind = errors.New("accumulator kind not registered")
	// ErrAccumulatorNotFound: the job has no accumulator of the name asked for.
	ErrAccumulatorNotFound = errors.New("accumulator not found")
)

// The accumulator errors travel as codes in an accumulator's failure (SerializedAccumulator.Failure).
func init() {
	RegisterErrorCode("jobgraph.accumulator-type-mismatch", ErrAccumulatorTypeMismatch)
	RegisterErrorCode("jobgraph.unknown-accumulator-kind", ErrUnknownAccumulatorKind)
	RegisterErrorCode("jobgraph.accumulator-not-found", ErrAccumulatorNotFound)
}

// AccumulatorTypeError is an accumulator name used with two types. errors.Is(err,
// ErrAccumulatorTypeMismatch).
type AccumulatorTypeError struct {
	// Name is the accumulator's name; empty when the error comes from Merge, which does not know it.
	Name string
	// Have is the type the name has first (its kind, or its Go type when the kinds are equal);
	// Got is the other one.
	Have, Got string
}

func (e *AccumulatorTypeError) Error() string {
	msg := fmt.Sprintf("two types under one name: %s and %s", e.Have, e.Got)
	if e.Name != "" {
		return fmt.Sprintf("accumulator %q: %s", e.Name, msg)
	}
	return msg
}

func (e *AccumulatorTypeError) Is(target error) bool { return target == ErrAccumulatorTypeMismatch }

// mismatch is the error Merge returns for an other of another type than a.
func mismatch(a, other Accumulator) error {
	have, got := a.Kind(), "nil"
	if other != nil {
		got = other.Kind()
	}
	if have == got {
		have, got = fmt.Sprintf("%T", a), fmt.Sprintf("%T", other)
	}
	return &AccumulatorTypeError{Have: have, Got: got}
}

// The kinds of the accumulators of this package.
const (
	KindIntCounter      = "IntCounter"
	KindLongCounter     = "LongCounter"
	KindDoubleCounter   = "DoubleCounter"
	KindHistogram       = "Histogram"
	KindListAccumulator = "ListAccumulator"
)

// accumulatorKinds maps each registered kind to its factory.
var accumulatorKinds = struct {
	sync.RWMutex
	m map[string]func() Accumulator
}{m: map[string]func() Accumulator{
	KindIntCounter:    func() Accumulator { return new(IntCounter) },
	KindLongCounter:   func() Accumulator { return new(LongCounter) },
	KindDoubleCounter: func() Accumulator { return new(DoubleCounter) },
	KindHistogram:     func() Accumulator { return new(Histogram) },
	// Merging lists only concatenates them, so the JobMaster keeps their elements as JSON,
	// whatever their Go type in the tasks.
	KindListAccumulator: func() Accumulator { return new(ListAccumulator[json.RawMessage]) },
}}

// RegisterAccumulator registers the factory of a host-defined accumulator kind: newAcc returns a
// new, zero accumulator, whose Kind() is the kind registered. Register every kind a job uses, in
// every process that runs its tasks or its JobMaster, before the job runs (in an init function,
// as with encoding/gob's Register): the JobMaster rebuilds accumulators from their snapshots with
// it, and a task may add only accumulators of registered kinds. Safe for concurrent use.
//
// It returns an error, registering nothing, for a nil newAcc, one that returns nil, an empty
// kind, or a kind already registered (the built-in ones included).
func RegisterAccumulator(newAcc func() Accumulator) error {
	if newAcc == nil {
		return errors.New("jobgraph: RegisterAccumulator: nil factory")
	}
	a := newAcc()
	if a == nil {
		return errors.New("jobgraph: RegisterAccumulator: the factory returned nil")
	}
	kind := a.Kind()
	if kind == "" {
		return fmt.Errorf("jobgraph: RegisterAccumulator: %T has an empty Kind", a)
	}
	accumulatorKinds.Lock()
	defer accumulatorKinds.Unlock()
	if _, dup := accumulatorKinds.m[kind]; dup {
		return fmt.Errorf("jobgraph: RegisterAccumulator: kind %q (%T) is already registered", kind, a)
	}
	accumulatorKinds.m[kind] = newAcc
	return nil
}

// NewAccumulator returns a new, zero accumulator of a registered kind, or an error matching
// ErrUnknownAccumulatorKind. Safe for concurrent use.
func NewAccumulator(kind string) (Accumulator, error) {
	accumulatorKinds.RLock()
	newAcc := accumulatorKinds.m[kind]
	accumulatorKinds.RUnlock()
	if newAcc == nil {
		return nil, fmt.Errorf("%w: %q (register it with jobgraph.RegisterAccumulator)", ErrUnknownAccumulatorKind, kind)
	}
	return newAcc(), nil
}

// IsAccumulatorKindRegistered reports whether a factory is registered for kind.
func IsAccumulatorKindRegistered(kind string) bool {
	accumulatorKinds.RLock()
	defer accumulatorKinds.RUnlock()
	return accumulatorKinds.m[kind] != nil
}

// SerializedAccumulator is an accumulator as plain data: its kind and its value in JSON, or why
// there is no value. It is what accumulator snapshots (rpc.AccumulatorSnapshot) carry and what a
// job's results are (JobResult.Accumulators), so it crosses process boundaries and stores as it
// is. Flink: SerializedValue<OptionalFailure<Object>> in JobResult.accumulatorResults.
type SerializedAccumulator struct {
	// Kind is the accumulator's kind (Accumulator.Kind).
	Kind string `json:"kind"`
	// Value is the value as the accumulator's MarshalJSON encodes it; empty when Failure is set.
	Value json.RawMessage `json:"value,omitempty"`
	// Failure says why there is no value (Flink's OptionalFailure), as plain data whose Err
	// matches the sentinels: the value could not be encoded or decoded, its kind is not
	// registered (ErrUnknownAccumulatorKind), or the name was used with two types
	// (ErrAccumulatorTypeMismatch: "two types under one name: IntCounter and LongCounter"). It
	// does not name the accumulator (the map key does) and has no timestamp.
	Failure *ErrorInfo `json:"failure,omitempty"`
}

// accumulatorFailure is err as a SerializedAccumulator's Failure.
func accumulatorFailure(err error) *ErrorInfo { return NewErrorInfo(err, time.Time{}) }

// SerializeAccumulator returns a's snapshot: its kind and its value encoded, or, when a's
// MarshalJSON fails, its kind and the failure.
//
// A panic in a's MarshalJSON is recovered and recorded as the failure too: snapshots are taken
// off the task's goroutine (for heartbeats), where nothing else would recover it.
func SerializeAccumulator(a Accumulator) (s SerializedAccumulator) {
	s.Kind = a.Kind()
	defer func() {
		if r := recover(); r != nil {
			s.Value, s.Failure = nil, accumulatorFailure(fmt.Errorf("encoding the %s panicked: %v", s.Kind, r))
		}
	}()
	v, err := json.Marshal(a)
	if err != nil {
		s.Failure = accumulatorFailure(fmt.Errorf("encoding the %s: %w", s.Kind, err))
		return s
	}
	s.Value = v
	return s
}

// Err returns the failure as an error (Failure.Err), nil when there is a value.
func (s SerializedAccumulator) Err() error { return s.Failure.Err() }

// Accumulator decodes the snapshot into a new accumulator of its kind. It fails for a failed
// snapshot (its failure), an unregistered kind (ErrUnknownAccumulatorKind) or a value the kind
// cannot decode. A panic in the kind's factory or UnmarshalJSON is recovered as an error: the
// JobMaster decodes on its main loop what TaskExecutors sent.
func (s SerializedAccumulator) Accumulator() (a Accumulator, err error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			a, err = nil, fmt.Errorf("decoding the %s panicked: %v", s.Kind, r)
		}
	}()
	a, err = NewAccumulator(s.Kind)
	if err != nil {
		return nil, err
	}
	if err := a.UnmarshalJSON(s.Value); err != nil {
		return nil, fmt.Errorf("decoding the %s: %w", s.Kind, err)
	}
	return a, nil
}

// mergeInto merges other into acc, a panic in a host's Merge recovered as an error.
func mergeInto(acc, other Accumulator) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("merging the %s panicked: %v", acc.Kind(), r)
		}
	}()
	return acc.Merge(other)
}

// Decode unmarshals the value into v (json.Unmarshal), e.g. an *int for an IntCounter, a
// *map[int]int for a Histogram, a *[]string for a ListAccumulator of strings. A failed snapshot
// returns its failure.
func (s SerializedAccumulator) Decode(v any) error {
	if err := s.Err(); err != nil {
		return err
	}
	if err := json.Unmarshal(s.Value, v); err != nil {
		return fmt.Errorf("decoding the %s into %T: %w", s.Kind, v, err)
	}
	return nil
}

// AccumulatorValue returns the value of accumulator name in accs (a job's JobResult.Accumulators
// or ArchivedExecutionGraph.Accumulators) decoded as a T:
//
//	words, err := jobgraph.AccumulatorValue[int64](res.Accumulators, "words")
//
// Errors name the accumulator: ErrAccumulatorNotFound (listing the names accs has), the
// accumulator's failure (ErrAccumulatorTypeMismatch for one name used with two types across the
// job's tasks, say; errors.Is matches it in any process), or a value that does not decode as T.
// Flink: JobExecutionResult.getAccumulatorResult.
func AccumulatorValue[T any](accs map[string]SerializedAccumulator, name string) (T, error) {
	var v T
	s, ok := accs[name]
	if !ok {
		names := make([]string, 0, len(accs))
		for n := range accs {
			names = append(names, fmt.Sprintf("%q", n))
		}
		sort.Strings(names)
		has := "none"
		if len(names) > 0 {
			has = strings.Join(names, ", ")
		}
		return v, fmt.Errorf("accumulator %q: %w (the job has: %s)", name, ErrAccumulatorNotFound, has)
	}
	if err := s.Decode(&v); err != nil {
		return v, fmt.Errorf("accumulator %q: %w", name, err)
	}
	return v, nil
}

// MergeAccumulators merges the accumulator snapshots of several tasks into one result per name,
// in the order given (ListAccumulators concatenate in that order): the first snapshot of a name
// is decoded, the later ones are merged into it, and the result is encoded again. A name fails
// — a SerializedAccumulator with Failure, while the other names merge on — when one of its
// snapshots failed, two snapshots have different kinds or Go types (ErrAccumulatorTypeMismatch),
// a kind is not registered (ErrUnknownAccumulatorKind), a value cannot be decoded, or a host
// kind panics (recovered). nil when there is nothing.
// Flink: AccumulatorHelper.mergeInto, as DefaultExecutionGraph.aggregateUserAccumulators uses it.
func MergeAccumulators(snapshots ...map[string]SerializedAccumulator) map[string]SerializedAccumulator {
	type merged struct {
		kind    string
		acc     Accumulator
		failure *ErrorInfo
	}
	byName := make(map[string]*merged)
	for _, snap := range snapshots {
		for name, s := range snap {
			m := byName[name]
			switch {
			case m == nil:
				m = &merged{kind: s.Kind}
				byName[name] = m
				if a, err := s.Accumulator(); err != nil {
					m.failure = accumulatorFailure(err)
				} else {
					m.acc = a
				}
			case m.failure != nil:
			case s.Failure != nil:
				m.acc, m.failure = nil, accumulatorFailure(s.Err())
			case s.Kind != m.kind:
				m.acc, m.failure = nil, accumulatorFailure(&AccumulatorTypeError{Have: m.kind, Got: s.Kind})
			default:
				other, err := s.Accumulator()
				if err == nil {
					err = mergeInto(m.acc, other)
				}
				if err != nil {
					m.acc, m.failure = nil, accumulatorFailure(err)
				}
			}
		}
	}
	if len(byName) == 0 {
		return nil
	}
	out := make(map[string]SerializedAccumulator, len(byName))
	for name, m := range byName {
		if m.failure != nil {
			out[name] = SerializedAccumulator{Kind: m.kind, Failure: m.failure}
		} else {
			out[name] = SerializeAccumulator(m.acc)
		}
	}
	return out
}

// CloneAccumulators returns a deep copy of accs, nil for an empty one, so a snapshot never shares
// memory with what it was taken from.
func CloneAccumulators(accs map[string]SerializedAccumulator) map[string]SerializedAccumulator {
	if len(accs) == 0 {
		return nil
	}
	out := make(map[string]SerializedAccumulator, len(accs))
	for name, s := range accs {
		if s.Value != nil {
			s.Value = append(json.RawMessage(nil), s.Value...)
		}
		if s.Failure != nil {
			f := *s.Failure
			f.Codes = append([]string(nil), f.Codes...)
			if p := f.UnavailablePartition; p != nil {
				q := *p
				f.UnavailablePartition = &q
			}
			s.Failure = &f
		}
		out[name] = s
	}
	return out
}

// ---- the accumulators Flink has ----

// IntCounter sums ints. The zero value is a counter at 0, ready to use; safe for concurrent use.
// Flink: org.apache.flink.api.common.accumulators.IntCounter, whose int is 32 bits; here it is
// Go's int (kept in an int64).
type IntCounter struct{ v atomic.Int64 }

// Add adds v.
func (c *IntCounter) Add(v int) { c.v.Add(int64(v)) }

// Value returns the sum. Flink: IntCounter.getLocalValuePrimitive.
func (c *IntCounter) Value() int { return int(c.v.Load()) }

func (c *IntCounter) Kind() string    { return KindIntCounter }
func (c *IntCounter) LocalValue() any { return c.Value() }

func (c *IntCounter) Merge(other Accumulator) error {
	o, ok := other.(*IntCounter)
	if !ok {
		return mismatch(c, other)
	}
	c.v.Add(o.v.Load())
	return nil
}

func (c *IntCounter) MarshalJSON() ([]byte, error) { return json.Marshal(c.v.Load()) }

func (c *IntCounter) UnmarshalJSON(data []byte) error {
	v, err := decodeInt64(data)
	if err != nil {
		return err
	}
	c.v.Store(v)
	return nil
}

// LongCounter sums int64s. The zero value is a counter at 0; safe for concurrent use.
// Flink: org.apache.flink.api.common.accumulators.LongCounter.
type LongCounter struct{ v atomic.Int64 }

// Add adds v.
func (c *LongCounter) Add(v int64) { c.v.Add(v) }

// Value returns the sum. Flink: LongCounter.getLocalValuePrimitive.
func (c *LongCounter) Value() int64 { return c.v.Load() }

func (c *LongCounter) Kind() string    { return KindLongCounter }
func (c *LongCounter) LocalValue() any { return c.Value() }

func (c *LongCounter) Merge(other Accumulator) error {
	o, ok := other.(*LongCounter)
	if !ok {
		return mismatch(c, other)
	}
	c.v.Add(o.v.Load())
	return nil
}

func (c *LongCounter) MarshalJSON() ([]byte, error) { return json.Marshal(c.v.Load()) }

func (c *LongCounter) UnmarshalJSON(data []byte) error {
	v, err := decodeInt64(data)
	if err != nil {
		return err
	}
	c.v.Store(v)
	return nil
}

// decodeInt64 decodes a JSON integer: the common case without reflection (the JobMaster decodes
// one per counter and subtask on every merge), anything else through encoding/json, for its
// errors.
func decodeInt64(data []byte) (int64, error) {
	if v, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64); err == nil {
		return v, nil
	}
	var v int64
	err := json.Unmarshal(data, &v)
	return v, err
}

// DoubleCounter sums float64s. The zero value is a counter at 0; safe for concurrent use. Its
// JSON is a number, or "NaN", "+Inf" or "-Inf", which JSON numbers cannot express.
// Flink: org.apache.flink.api.common.accumulators.DoubleCounter.
type DoubleCounter struct{ bits atomic.Uint64 }

// Add adds v.
func (c *DoubleCounter) Add(v float64) {
	for {
		old := c.bits.Load()
		if c.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Value returns the sum. Flink: DoubleCounter.getLocalValuePrimitive.
func (c *DoubleCounter) Value() float64 { return math.Float64frombits(c.bits.Load()) }

func (c *DoubleCounter) Kind() string    { return KindDoubleCounter }
func (c *DoubleCounter) LocalValue() any { return c.Value() }

func (c *DoubleCounter) Merge(other Accumulator) error {
	o, ok := other.(*DoubleCounter)
	if !ok {
		return mismatch(c, other)
	}
	c.Add(o.Value())
	return nil
}

func (c *DoubleCounter) MarshalJSON() ([]byte, error) {
	switch v := c.Value(); {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	default:
		return json.Marshal(v)
	}
}

func (c *DoubleCounter) UnmarshalJSON(data []byte) error {
	var v float64
	switch string(data) {
	case `"NaN"`:
		v = math.NaN()
	case `"+Inf"`:
		v = math.Inf(1)
	case `"-Inf"`:
		v = math.Inf(-1)
	default:
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
	}
	c.bits.Store(math.Float64bits(v))
	return nil
}

// Histogram counts how often each int was added: a map from value to count. The zero value is
// empty; safe for concurrent use. Its JSON is an object whose keys are the values in decimal,
// {"3":2,"5":1}. Flink: org.apache.flink.api.common.accumulators.Histogram (a TreeMap<Integer,
// Integer>).
type Histogram struct {
	mu sync.Mutex
	m  map[int]int
}

// Add counts one occurrence of v.
func (h *Histogram) Add(v int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[int]int)
	}
	h.m[v]++
}

// Value returns a copy of the counts by value (an empty map when nothing was added).
func (h *Histogram) Value() map[int]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[int]int, len(h.m))
	for k, n := range h.m {
		out[k] = n
	}
	return out
}

func (h *Histogram) Kind() string    { return KindHistogram }
func (h *Histogram) LocalValue() any { return h.Value() }

func (h *Histogram) Merge(other Accumulator) error {
	o, ok := other.(*Histogram)
	if !ok {
		return mismatch(h, other)
	}
	counts := o.Value() // o's lock is not held while h's is: no lock order to get wrong
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[int]int, len(counts))
	}
	for k, n := range counts {
		h.m[k] += n
	}
	return nil
}

func (h *Histogram) MarshalJSON() ([]byte, error) { return json.Marshal(h.Value()) }

func (h *Histogram) UnmarshalJSON(data []byte) error {
	var m map[int]int
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m = m
	return nil
}

// ListAccumulator collects the elements added, in order; merging appends the other list. The
// zero value is empty; safe for concurrent use. Its JSON is an array of the elements' JSON, so T
// must encode to JSON. Every ListAccumulator has kind "ListAccumulator", whatever T: the
// JobMaster merges them as ListAccumulator[json.RawMessage], and a reader decodes the result
// as a []T (AccumulatorValue[[]T]). Flink: org.apache.flink.api.common.accumulators.ListAccumulator.
type ListAccumulator[T any] struct {
	mu    sync.Mutex
	elems []T
}

// Add appends v.
func (l *ListAccumulator[T]) Add(v T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.elems = append(l.elems, v)
}

// Value returns a copy of the elements (nil when none were added).
func (l *ListAccumulator[T]) Value() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.elems) == 0 {
		return nil
	}
	return append([]T(nil), l.elems...)
}

func (l *ListAccumulator[T]) Kind() string    { return KindListAccumulator }
func (l *ListAccumulator[T]) LocalValue() any { return l.Value() }

func (l *ListAccumulator[T]) Merge(other Accumulator) error {
	o, ok := other.(*ListAccumulator[T])
	if !ok {
		return mismatch(l, other)
	}
	elems := o.Value() // taken before l's lock: merging a list into itself doubles it
	l.mu.Lock()
	defer l.mu.Unlock()
	l.elems = append(l.elems, elems...)
	return nil
}

func (l *ListAccumulator[T]) MarshalJSON() ([]byte, error) {
	elems := l.Value()
	if elems == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(elems)
}

func (l *ListAccumulator[T]) UnmarshalJSON(data []byte) error {
	var elems []T
	if err := json.Unmarshal(data, &elems); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.elems = elems
	return nil
}
