package keygroup

import (
	"fmt"
	"iter"
)

// KeyGroupRange is a range of key group indexes, both ends inclusive, as Flink's KeyGroupRange:
// [Start, End]. A range with End < Start is empty; EmptyKeyGroupRange is the canonical empty range
// (Flink's EMPTY_KEY_GROUP_RANGE, {0, -1}). Note that the zero value is the one key group 0, not
// the empty range. It is a plain comparable value: == compares ranges.
type KeyGroupRange struct {
	Start int `json:"startKeyGroup"`
	End   int `json:"endKeyGroup"`
}

// EmptyKeyGroupRange holds no key group. Flink: KeyGroupRange.EMPTY_KEY_GROUP_RANGE.
var EmptyKeyGroupRange = KeyGroupRange{Start: 0, End: -1}

// NewKeyGroupRange returns [start, end], or EmptyKeyGroupRange when start > end (Flink's
// KeyGroupRange.of). Errors: start < 0.
func NewKeyGroupRange(start, end int) (KeyGroupRange, error) {
	if start < 0 {
		return EmptyKeyGroupRange, fmt.Errorf("keygroup: key group range start %d is negative", start)
	}
	if start > end {
		return EmptyKeyGroupRange, nil
	}
	return KeyGroupRange{Start: start, End: end}, nil
}

// IsEmpty reports whether r holds no key group.
func (r KeyGroupRange) IsEmpty() bool { return r.End < r.Start }

// NumberOfKeyGroups is End − Start + 1, 0 for an empty range.
// Flink: KeyGroupRange.getNumberOfKeyGroups.
func (r KeyGroupRange) NumberOfKeyGroups() int {
	if r.IsEmpty() {
		return 0
	}
	return r.End - r.Start + 1
}

// Contains reports whether keyGroup is in r. Flink: KeyGroupRange.contains.
func (r KeyGroupRange) Contains(keyGroup int) bool { return keyGroup >= r.Start && keyGroup <= r.End }

// Intersection is the key groups in both r and other, EmptyKeyGroupRange when they share none.
// Flink: KeyGroupRange.getIntersection.
func (r KeyGroupRange) Intersection(other KeyGroupRange) KeyGroupRange {
	start, end := max(r.Start, other.Start), min(r.End, other.End)
	if start > end {
		return EmptyKeyGroupRange
	}
	return KeyGroupRange{Start: start, End: end}
}

// All yields the key groups of r in ascending order. Flink: KeyGroupRange.iterator.
func (r KeyGroupRange) All() iter.Seq[int] {
	return func(yield func(int) bool) {
		for kg := r.Start; kg <= r.End; kg++ {
			if !yield(kg) {
				return
			}
		}
	}
}

// String formats r as "[start, end]", or "[]" when empty.
func (r KeyGroupRange) String() string {
	if r.IsEmpty() {
		return "[]"
	}
	return fmt.Sprintf("[%d, %d]", r.Start, r.End)
}
