package taskexecutor

import (
	"errors"
	"fmt"
	"sync"

	"github.com/jobgraph/jobgraph"
)

// AccumulatorRegistry holds one task's accumulators by name: the task adds to them, and its
// TaskExecutor sends their snapshot to the JobMaster with every heartbeat and with the task's
// final state, where the accumulators of every subtask's current attempt are merged into the
// job's results (jobgraph.JobResult.Accumulators). A task reaches it with
// env.AccumulatorRegistry():
//
//	words, err := env.AccumulatorRegistry().LongCounter("words")
//	if err != nil {
//		return err
//	}
//	words.Add(1)
//
// Flink: org.apache.flink.runtime.accumulators.AccumulatorRegistry, with the user-facing
// methods of RuntimeContext (addAccumulator, getAccumulator, getIntCounter, …).
//
// Safe for concurrent use: the task may add from several goroutines, and the TaskExecutor takes
// snapshots while it does. A host unit-testing task code gives its fake Environment one from
// NewAccumulatorRegistry and reads it back with Get or Snapshot.
type AccumulatorRegistry struct {
	mu   sync.Mutex
	accs map[string]jobgraph.Accumulator // made by the first add: most tasks add none
}

// NewAccumulatorRegistry returns an empty registry.
func NewAccumulatorRegistry() *AccumulatorRegistry {
	return &AccumulatorRegistry{}
}

// putLocked adds acc under name. Called with r.mu held.
func (r *AccumulatorRegistry) putLocked(name string, acc jobgraph.Accumulator) {
	if r.accs == nil {
		r.accs = make(map[string]jobgraph.Accumulator)
	}
	r.accs[name] = acc
}

// ErrAccumulatorExists: Add was given a name the task already has an accumulator under.
// Flink: UnsupportedOperationException "The accumulator … already exists".
var ErrAccumulatorExists = errors.New("accumulator already exists")

func init() { jobgraph.RegisterErrorCode("taskexecutor.accumulator-exists", ErrAccumulatorExists) }

// Add adds acc under name. It returns an error, adding nothing, for an empty name, a nil acc, a
// name already taken (ErrAccumulatorExists), or an accumulator whose kind is not registered
// (jobgraph.ErrUnknownAccumulatorKind: the JobMaster could not merge it). Flink:
// RuntimeContext.addAccumulator.
func (r *AccumulatorRegistry) Add(name string, acc jobgraph.Accumulator) error {
	if err := checkAccumulator(name, acc); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.accs[name]; dup {
		return fmt.Errorf("accumulator %q: %w", name, ErrAccumulatorExists)
	}
	r.putLocked(name, acc)
	return nil
}

func checkAccumulator(name string, acc jobgraph.Accumulator) error {
	if name == "" {
		return errors.New("accumulator: empty name")
	}
	if acc == nil {
		return fmt.Errorf("accumulator %q: nil accumulator", name)
	}
	if kind := acc.Kind(); !jobgraph.IsAccumulatorKindRegistered(kind) {
		return fmt.Errorf("accumulator %q of type %T: %w: %q (register it with jobgraph.RegisterAccumulator)", name, acc, jobgraph.ErrUnknownAccumulatorKind, kind)
	}
	return nil
}

// Get returns the accumulator under name, or nil. Flink: RuntimeContext.getAccumulator.
func (r *AccumulatorRegistry) Get(name string) jobgraph.Accumulator {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accs[name]
}

// Accumulator returns the task's accumulator under name as an A, adding newAcc() there first
// when the name is free:
//
//	names, err := taskexecutor.Accumulator(env.AccumulatorRegistry(), "names", func() *jobgraph.ListAccumulator[string] {
//		return new(jobgraph.ListAccumulator[string])
//	})
//
// It fails with an *jobgraph.AccumulatorTypeError (errors.Is jobgraph.ErrAccumulatorTypeMismatch)
// when name holds an accumulator of another type, and as Add does for a new one. Flink:
// RuntimeContext's getAccumulator(name, class), behind getIntCounter and the others.
func Accumulator[A jobgraph.Accumulator](r *AccumulatorRegistry, name string, newAcc func() A) (A, error) {
	var zero A
	r.mu.Lock()
	defer r.mu.Unlock()
	if have, ok := r.accs[name]; ok {
		a, ok := have.(A)
		if !ok {
			want := newAcc()
			te := &jobgraph.AccumulatorTypeError{Name: name, Have: have.Kind(), Got: want.Kind()}
			if te.Have == te.Got {
				te.Have, te.Got = fmt.Sprintf("%T", have), fmt.Sprintf("%T", want)
			}
			return zero, te
		}
		return a, nil
	}
	a := newAcc()
	if err := checkAccumulator(name, a); err != nil {
		return zero, err
	}
	r.putLocked(name, a)
	return a, nil
}

// IntCounter returns the task's IntCounter under name, adding one at 0 when the name is free; see
// Accumulator for the errors. Flink: RuntimeContext.getIntCounter.
func (r *AccumulatorRegistry) IntCounter(name string) (*jobgraph.IntCounter, error) {
	return Accumulator(r, name, func() *jobgraph.IntCounter { return new(jobgraph.IntCounter) })
}

// LongCounter returns the task's LongCounter under name, adding one at 0 when the name is free;
// see Accumulator for the errors. Flink: RuntimeContext.getLongCounter.
func (r *AccumulatorRegistry) LongCounter(name string) (*jobgraph.LongCounter, error) {
	return Accumulator(r, name, func() *jobgraph.LongCounter { return new(jobgraph.LongCounter) })
}

// DoubleCounter returns the task's DoubleCounter under name, adding one at 0 when the name is
// free; see Accumulator for the errors. Flink: RuntimeContext.getDoubleCounter.
func (r *AccumulatorRegistry) DoubleCounter(name string) (*jobgraph.DoubleCounter, error) {
	return Accumulator(r, name, func() *jobgraph.DoubleCounter { return new(jobgraph.DoubleCounter) })
}

// Histogram returns the task's Histogram under name, adding an empty one when the name is free;
// see Accumulator for the errors. Flink: RuntimeContext.getHistogram.
func (r *AccumulatorRegistry) Histogram(name string) (*jobgraph.Histogram, error) {
	return Accumulator(r, name, func() *jobgraph.Histogram { return new(jobgraph.Histogram) })
}

// Snapshot returns every accumulator's current value as plain data (jobgraph.SerializeAccumulator),
// nil when the registry is empty. An accumulator whose value does not encode is in it with its
// failure. The values are encoded outside the registry's lock, each under its own
// synchronization. Flink: AccumulatorRegistry.getSnapshot.
func (r *AccumulatorRegistry) Snapshot() map[string]jobgraph.SerializedAccumulator {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	if len(r.accs) == 0 {
		r.mu.Unlock()
		return nil
	}
	accs := make(map[string]jobgraph.Accumulator, len(r.accs))
	for name, a := range r.accs {
		accs[name] = a
	}
	r.mu.Unlock()
	out := make(map[string]jobgraph.SerializedAccumulator, len(accs))
	for name, a := range accs {
		out[name] = jobgraph.SerializeAccumulator(a)
	}
	return out
}
