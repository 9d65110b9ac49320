package jobgraph

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
)

// Error codes let a failure cross a process boundary as plain data and still match errors.Is on
// the far side. The library's packages register their sentinel errors (rpc.ErrFencingTokenMismatch,
// slotpool.ErrNoResourceAvailable, taskexecutor.ErrPartitionLost, …) under stable codes when they
// are initialized; NewErrorInfo records the codes of the registered sentinels an error matches,
// and ErrorInfo.Err turns the plain data back into an error that matches the same sentinels.
// A host registers its own sentinels the same way. Flink carries a SerializedThrowable, whose
// class survives the trip; a Go error's identity does not, so the code stands in for it.

var errorCodes struct {
	mu     sync.RWMutex
	order  []error          // registration order, so Codes come out in the same order everywhere
	byErr  map[error]string // sentinel → code
	byCode map[string]error // code → sentinel
}

// RegisterErrorCode makes sentinel travel as code: NewErrorInfo lists code for every error that
// matches sentinel (errors.Is), and the error ErrorInfo.Err returns matches sentinel whenever the
// ErrorInfo lists code. Codes are stable names such as "rpc.fencing-token-mismatch"; both sides
// of a boundary must register the same code for the same sentinel, which they do by importing
// the package that defines it. Registering the same pair again is a no-op.
//
// Call it from a package's init or a variable declaration. It panics on an empty code, a nil or
// non-comparable sentinel, or a code or sentinel already registered with a different partner:
// those are programming errors, found the first time the program starts.
func RegisterErrorCode(code string, sentinel error) {
	if code == "" || sentinel == nil || !reflect.TypeOf(sentinel).Comparable() {
		panic(fmt.Sprintf("jobgraph.RegisterErrorCode(%q, %v): need a code and a comparable sentinel error", code, sentinel))
	}
	r := &errorCodes
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byErr == nil {
		r.byErr, r.byCode = make(map[error]string), make(map[string]error)
	}
	if c, ok := r.byErr[sentinel]; ok {
		if c == code {
			return
		}
		panic(fmt.Sprintf("jobgraph.RegisterErrorCode(%q, %v): the sentinel is registered as %q already", code, sentinel, c))
	}
	if e, ok := r.byCode[code]; ok {
		panic(fmt.Sprintf("jobgraph.RegisterErrorCode(%q, %v): the code is registered for %q already", code, sentinel, e))
	}
	r.byErr[sentinel], r.byCode[code] = code, sentinel
	r.order = append(r.order, sentinel)
}

// ErrorCodes returns the codes of the registered sentinels err matches (errors.Is), in the
// order they were registered; nil if none or err is nil.
func ErrorCodes(err error) []string {
	if err == nil {
		return nil
	}
	// err's tree is walked once, not once per registered sentinel (there are about 80): each
	// comparable error of the tree is looked up among the sentinels, an error ErrorInfo.Err made
	// matches the sentinels of its codes, and only an error with an Is method is asked about
	// every sentinel.
	var buf [8]errNode
	nodes := errTree(err, buf[:0])
	r := &errorCodes
	r.mu.RLock()
	defer r.mu.RUnlock()
	var found [4]error
	matched := found[:0]
	for i := range nodes {
		n := &nodes[i]
		switch {
		case n.info:
			for _, c := range n.codes {
				if s, ok := r.byCode[c]; ok {
					matched = append(matched, s)
				}
			}
			continue
		case n.pointer:
			if _, ok := r.byErr[n.err]; ok {
				matched = append(matched, n.err)
			}
		default:
			// Not a pointer: compared as errors.Is compares (hashing it could panic where
			// a comparison with a sentinel of another type cannot).
			for _, s := range r.order {
				if n.err == s {
					matched = append(matched, s)
				}
			}
		}
		if n.is != nil {
			for _, s := range r.order {
				if n.is.Is(s) {
					matched = append(matched, s)
				}
			}
		}
	}
	switch len(matched) {
	case 0:
		return nil
	case 1: // the common case: no ordering to restore
		return []string{r.byErr[matched[0]]}
	}
	var codes []string
	for _, s := range r.order {
		if slices.Contains(matched, s) {
			codes = append(codes, r.byErr[s])
		}
	}
	return codes
}

// errNode is one error of a tree as errors.Is walks it: its value, its Is method if it has one,
// or, for an error ErrorInfo.Err made, its codes (such an error ends its branch: it is matched by
// its codes, without the lock its Is takes; the caller holds the registry's read lock).
type errNode struct {
	err     error
	is      interface{ Is(error) bool }
	codes   []string
	info    bool
	pointer bool // err's dynamic type is a pointer: it is looked up among the sentinels
}

// errTree appends err's tree to nodes in errors.Is's order.
func errTree(err error, nodes []errNode) []errNode {
	for err != nil {
		n := errNode{err: err, pointer: reflect.TypeOf(err).Kind() == reflect.Pointer}
		switch e := err.(type) {
		case *infoError:
			n.codes, n.info = e.codes, true
		case *partitionInfoError:
			n.codes, n.info = e.codes, true
		case interface{ Is(error) bool }:
			n.is = e
		}
		nodes = append(nodes, n)
		if n.info {
			return nodes
		}
		switch e := err.(type) {
		case interface{ Unwrap() error }:
			err = e.Unwrap()
		case interface{ Unwrap() []error }:
			for _, c := range e.Unwrap() {
				nodes = errTree(c, nodes)
			}
			return nodes
		default:
			return nodes
		}
	}
	return nodes
}

// String returns Message ("<nil>" for a nil ErrorInfo), so a failure printed with %v or %s, or
// logged, reads as its error text rather than as the struct's fields.
func (e *ErrorInfo) String() string {
	if e == nil {
		return "<nil>"
	}
	return e.Message
}

// Err returns the failure as an error: its text is Message, errors.Is matches every registered
// sentinel whose code Codes lists, and with UnavailablePartition set it has an
// UnavailablePartition() IntermediateResultPartitionID method (errors.As finds it). Nil for a nil
// ErrorInfo. The error's concrete type is not the original's (errors.As to the original type does
// not match): the text, the codes and the partition are what crosses a boundary.
func (e *ErrorInfo) Err() error {
	if e == nil {
		return nil
	}
	ie := &infoError{msg: e.Message}
	if len(e.Codes) == 1 {
		// The usual case, one code: kept in the error itself, one allocation in all.
		ie.one[0] = e.Codes[0]
		ie.codes = ie.one[:]
	} else {
		ie.codes = slices.Clone(e.Codes)
	}
	if e.UnavailablePartition != nil {
		return &partitionInfoError{infoError: ie, partition: *e.UnavailablePartition}
	}
	return ie
}

// partitionInfoError is an ErrorInfo with an UnavailablePartition back as an error.
type partitionInfoError struct {
	*infoError
	partition IntermediateResultPartitionID
}

// UnavailablePartition names the input partition whose loss caused the failure.
func (e *partitionInfoError) UnavailablePartition() IntermediateResultPartitionID { return e.partition }

// infoError is an ErrorInfo back as an error.
type infoError struct {
	msg   string
	codes []string  // a copy: the ErrorInfo may change later
	one   [1]string // codes' storage when there is one code
}

func (e *infoError) Error() string { return e.msg }

// Is reports whether target is a registered sentinel whose code e carries.
func (e *infoError) Is(target error) bool {
	if len(e.codes) == 0 || target == nil || !reflect.TypeOf(target).Comparable() {
		return false
	}
	errorCodes.mu.RLock()
	code, ok := errorCodes.byErr[target]
	errorCodes.mu.RUnlock()
	return ok && slices.Contains(e.codes, code)
}

// ErrInvalidJobGraph travels as "jobgraph.invalid-job-graph".
func init() { RegisterErrorCode("jobgraph.invalid-job-graph", ErrInvalidJobGraph) }
