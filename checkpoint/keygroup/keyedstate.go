package keygroup

import (
	"fmt"
	"maps"
	"slices"
)

// KeyGroupsState is one subtask's keyed state, split by key group: the key groups the subtask
// owned (Range) and, for each key group that holds state, its state (Groups, key group → V). It
// is Flink's KeyGroupsStateHandle (a KeyGroupRangeOffsets over one stream) as plain data: where
// Flink keeps each key group's bytes at an offset in one file, we keep each key group's value
// apart. V is whatever the state backend stores per key group: opaque bytes ([]byte) for a
// checkpoint, or a map from key to value (SplitByKeyGroup builds that shape).
//
// Invariant (Validate): every key of Groups is in Range. A key group in Range without an entry has
// no state. The functions here copy the Groups map, never the V values in it.
type KeyGroupsState[V any] struct {
	Range  KeyGroupRange `json:"keyGroupRange"`
	Groups map[int]V     `json:"keyGroups,omitempty"`
}

// Validate reports the first key group of s (in ascending order) that lies outside s.Range.
func (s KeyGroupsState[V]) Validate() error {
	for _, kg := range slices.Sorted(maps.Keys(s.Groups)) {
		if !s.Range.Contains(kg) {
			return fmt.Errorf("keygroup: state holds key group %d outside its range %v", kg, s.Range)
		}
	}
	return nil
}

// Intersection is the part of s in r: its range is s.Range ∩ r and it holds the groups of s in
// that range. Flink: KeyGroupsStateHandle.getIntersection.
func (s KeyGroupsState[V]) Intersection(r KeyGroupRange) KeyGroupsState[V] {
	out := KeyGroupsState[V]{Range: s.Range.Intersection(r)}
	for kg, v := range s.Groups {
		if out.Range.Contains(kg) {
			if out.Groups == nil {
				out.Groups = make(map[int]V)
			}
			out.Groups[kg] = v
		}
	}
	return out
}

// SplitByKeyGroup splits one subtask's keyed state, a map from key to value, by key group: key k
// goes to group AssignToKeyGroup(keyHash(k), maxParallelism). owned is the subtask's range
// (ComputeKeyGroupRangeForOperatorIndex); the result's Range is owned. Each group's map is new;
// the values are not copied.
//
// Errors: maxParallelism outside [1, UpperBoundMaxParallelism], owned not within
// [0, maxParallelism), or a key whose group is outside owned (the key was routed to the wrong
// subtask; the error names the key and its group). Nothing is returned on error.
func SplitByKeyGroup[K comparable, V any](entries map[K]V, keyHash func(K) int32, maxParallelism int, owned KeyGroupRange) (KeyGroupsState[map[K]V], error) {
	if maxParallelism <= 0 || maxParallelism > UpperBoundMaxParallelism {
		return KeyGroupsState[map[K]V]{}, fmt.Errorf("keygroup: max parallelism %d is outside [1, %d]", maxParallelism, UpperBoundMaxParallelism)
	}
	if err := checkRangeWithin(owned, maxParallelism); err != nil {
		return KeyGroupsState[map[K]V]{}, err
	}
	out := KeyGroupsState[map[K]V]{Range: owned}
	for k, v := range entries {
		kg := AssignToKeyGroup(keyHash(k), maxParallelism)
		if !owned.Contains(kg) {
			return KeyGroupsState[map[K]V]{}, fmt.Errorf("keygroup: key %v is in key group %d, outside the subtask's key groups %v", k, kg, owned)
		}
		if out.Groups == nil {
			out.Groups = make(map[int]map[K]V)
		}
		g := out.Groups[kg]
		if g == nil {
			g = make(map[K]V)
			out.Groups[kg] = g
		}
		g[k] = v
	}
	return out, nil
}

// ReassignKeyGroups gathers the keyed state of subtask newSubtask of an operator restored at
// newParallelism from the state of all old subtasks (old[i] is old subtask i's state): the result's
// Range is ComputeKeyGroupRangeForOperatorIndex(maxParallelism, newParallelism, newSubtask) and it
// holds exactly the groups of every old state in that range. When newParallelism equals len(old)
// the subtask keeps old[newSubtask] as it is (Flink short-cuts this case too). Flink:
// StateAssignmentOperation.reAssignSubKeyedStates and getKeyGroupsStateHandles.
//
// maxParallelism must be the one the state was written with: key groups do not survive a change
// of max parallelism (Flink fails such a restore too).
//
// Errors: len(old) or newParallelism fails CheckMaxParallelism against maxParallelism, newSubtask
// is outside [0, newParallelism), an old state's range is not within [0, maxParallelism), an old
// state fails Validate, or two old states both hold a key group (each names the subtasks and the
// group). The old states are not modified.
func ReassignKeyGroups[V any](old []KeyGroupsState[V], maxParallelism, newParallelism, newSubtask int) (KeyGroupsState[V], error) {
	if err := checkOldKeyed(old, maxParallelism); err != nil {
		return KeyGroupsState[V]{}, err
	}
	r, err := ComputeKeyGroupRangeForOperatorIndex(maxParallelism, newParallelism, newSubtask)
	if err != nil {
		return KeyGroupsState[V]{}, err
	}
	return reassign(old, r, newParallelism, newSubtask), nil
}

// RedistributeKeyGroups is ReassignKeyGroups for every new subtask 0..newParallelism−1, in subtask
// order. Errors as ReassignKeyGroups.
func RedistributeKeyGroups[V any](old []KeyGroupsState[V], maxParallelism, newParallelism int) ([]KeyGroupsState[V], error) {
	if err := checkOldKeyed(old, maxParallelism); err != nil {
		return nil, err
	}
	ranges, err := KeyGroupPartitions(maxParallelism, newParallelism)
	if err != nil {
		return nil, err
	}
	out := make([]KeyGroupsState[V], newParallelism)
	for i, r := range ranges {
		out[i] = reassign(old, r, newParallelism, i)
	}
	return out, nil
}

func reassign[V any](old []KeyGroupsState[V], r KeyGroupRange, newParallelism, newSubtask int) KeyGroupsState[V] {
	if newParallelism == len(old) {
		return old[newSubtask]
	}
	out := KeyGroupsState[V]{Range: r}
	for _, s := range old {
		if s.Range.Intersection(r).IsEmpty() {
			continue // Flink skips handles whose range does not intersect as well
		}
		for kg, v := range s.Groups {
			if r.Contains(kg) {
				if out.Groups == nil {
					out.Groups = make(map[int]V)
				}
				out.Groups[kg] = v
			}
		}
	}
	return out
}

// checkOldKeyed checks the old states once: parallelism, ranges, groups in range, no group in two.
func checkOldKeyed[V any](old []KeyGroupsState[V], maxParallelism int) error {
	if err := CheckMaxParallelism(maxParallelism, len(old)); err != nil {
		return fmt.Errorf("old state of %d subtasks: %w", len(old), err)
	}
	owner := make(map[int]int)
	for i, s := range old {
		if err := checkRangeWithin(s.Range, maxParallelism); err != nil {
			return fmt.Errorf("old subtask %d: %w", i, err)
		}
		if err := s.Validate(); err != nil {
			return fmt.Errorf("old subtask %d: %w", i, err)
		}
		for _, kg := range slices.Sorted(maps.Keys(s.Groups)) {
			if j, dup := owner[kg]; dup {
				return fmt.Errorf("keygroup: key group %d is in the state of both old subtask %d and old subtask %d", kg, j, i)
			}
			owner[kg] = i
		}
	}
	return nil
}

func checkRangeWithin(r KeyGroupRange, maxParallelism int) error {
	if r.IsEmpty() {
		return nil
	}
	if r.Start < 0 || r.End >= maxParallelism {
		return fmt.Errorf("keygroup: key group range %v is not within [0, %d)", r, maxParallelism)
	}
	return nil
}
