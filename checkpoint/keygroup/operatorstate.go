package keygroup

import (
	"fmt"
	"maps"
	"slices"
)

// DistributionMode says how a named operator list state is redistributed on restore.
// Flink: OperatorStateHandle.Mode.
type DistributionMode int

const (
	// SplitDistribute deals the elements of all old subtasks out among the new subtasks (Flink's
	// SPLIT_DISTRIBUTE, the mode of getListState).
	SplitDistribute DistributionMode = iota
	// Union gives every new subtask all elements of all old subtasks (Flink's UNION, the mode of
	// getUnionListState).
	Union
)

// String is Flink's name of the mode.
func (m DistributionMode) String() string {
	switch m {
	case SplitDistribute:
		return "SPLIT_DISTRIBUTE"
	case Union:
		return "UNION"
	default:
		return fmt.Sprintf("DistributionMode(%d)", int(m))
	}
}

// ListState is one named operator list state of one subtask: its mode and its elements, in order.
// Flink: an OperatorStateHandle.StateMetaInfo (the mode and the offsets of the elements).
type ListState[T any] struct {
	Mode     DistributionMode `json:"mode"`
	Elements []T              `json:"elements,omitempty"`
}

// OperatorState is one subtask's operator (non-keyed) state: its list states by name.
// Flink: the OperatorStateHandles of one subtask.
type OperatorState[T any] map[string]ListState[T]

// RepartitionOperatorState redistributes the operator state of all old subtasks (old[i] is old
// subtask i's) to newParallelism new subtasks, as Flink's default
// RoundRobinOperatorStateRepartitioner does:
//
//   - Parallelism unchanged (newParallelism == len(old)) and no Union state: every subtask keeps
//     exactly its own state (the result's entries are old's maps). With Union state, every
//     subtask keeps its own SplitDistribute lists and gets every Union list whole.
//   - SplitDistribute, parallelism changed: for each state name, the elements of all old subtasks,
//     in old subtask order, are cut into newParallelism contiguous shares (not dealt one by one):
//     n elements give n/p to each new subtask and one more to the first n mod p of them, counted
//     from a start subtask. The start is 0 for the first name; each next name starts at the first
//     subtask that got no extra element from the previous one, so the extras rotate. A new subtask
//     whose share is empty has no entry for the name (as in Flink).
//   - Union: every new subtask gets all elements of all old subtasks, in old subtask order.
//
// Where we differ: Flink visits the names in its HashMap's order; we visit them in ascending
// order, so the rotation is deterministic. Element slices are new; elements are not copied.
//
// Errors: newParallelism < 1, no old subtask, a mode other than SplitDistribute and Union, or one
// name with two modes (each names the state and the subtask). Nothing is returned on error.
func RepartitionOperatorState[T any](old []OperatorState[T], newParallelism int) ([]OperatorState[T], error) {
	if newParallelism < 1 {
		return nil, fmt.Errorf("keygroup: new parallelism %d is below 1", newParallelism)
	}
	if len(old) == 0 {
		return nil, fmt.Errorf("keygroup: no old subtask state to repartition (old parallelism 0)")
	}
	modes := make(map[string]DistributionMode)
	for i, st := range old {
		for _, name := range slices.Sorted(maps.Keys(st)) {
			m := st[name].Mode
			if m != SplitDistribute && m != Union {
				return nil, fmt.Errorf("keygroup: list state %q of old subtask %d has unknown mode %v", name, i, m)
			}
			if prev, seen := modes[name]; seen && prev != m {
				return nil, fmt.Errorf("keygroup: list state %q is %v in old subtask %d but %v before", name, m, i, prev)
			}
			modes[name] = m
		}
	}
	names := slices.Sorted(maps.Keys(modes))
	union := make(map[string][]T)
	for _, name := range names {
		if modes[name] == Union {
			union[name] = gather(old, name)
		}
	}

	out := make([]OperatorState[T], newParallelism)
	if newParallelism == len(old) {
		if len(union) == 0 {
			return slices.Clone(old), nil
		}
		for i, st := range old {
			out[i] = make(OperatorState[T], len(st))
			for name, ls := range st {
				if ls.Mode == SplitDistribute {
					out[i][name] = ls
				}
			}
		}
	} else {
		for i := range out {
			out[i] = make(OperatorState[T])
		}
		start := 0
		for _, name := range names {
			if modes[name] == SplitDistribute {
				shares, next := splitShares(gather(old, name), newParallelism, start)
				for i, share := range shares {
					if len(share) > 0 {
						out[i][name] = ListState[T]{Mode: SplitDistribute, Elements: share}
					}
				}
				start = next
			}
		}
	}
	for name, all := range union {
		for i := range out {
			out[i][name] = ListState[T]{Mode: Union, Elements: slices.Clone(all)}
		}
	}
	return out, nil
}

// SplitDistributeList redistributes one SplitDistribute list state: old[i] is old subtask i's
// list; the result gives new subtask j its share, cut as RepartitionOperatorState cuts the first
// state name (start subtask 0). Every new subtask has a (possibly empty, non-nil) slice. Errors:
// newParallelism < 1.
func SplitDistributeList[T any](old [][]T, newParallelism int) ([][]T, error) {
	if newParallelism < 1 {
		return nil, fmt.Errorf("keygroup: new parallelism %d is below 1", newParallelism)
	}
	var all []T
	for _, l := range old {
		all = append(all, l...)
	}
	shares, _ := splitShares(all, newParallelism, 0)
	return shares, nil
}

// UnionList redistributes one Union list state: every new subtask gets all elements of old, in
// old subtask order (each its own slice). Errors: newParallelism < 1.
func UnionList[T any](old [][]T, newParallelism int) ([][]T, error) {
	if newParallelism < 1 {
		return nil, fmt.Errorf("keygroup: new parallelism %d is below 1", newParallelism)
	}
	all := []T{}
	for _, l := range old {
		all = append(all, l...)
	}
	out := make([][]T, newParallelism)
	for i := range out {
		out[i] = slices.Clone(all)
	}
	return out, nil
}

func gather[T any](old []OperatorState[T], name string) []T {
	var all []T
	for _, st := range old {
		all = append(all, st[name].Elements...)
	}
	return all
}

// splitShares cuts all into p contiguous shares: subtask (start+i) mod p takes the i-th share, the
// first len(all) mod p shares one element longer. It returns the shares by subtask and the start
// for the next state name: the first subtask that got no extra element (Flink's
// newStartParallelOp; start itself when there was no extra, or when every subtask got one).
func splitShares[T any](all []T, p, start int) ([][]T, int) {
	shares := make([][]T, p)
	base, extra := len(all)/p, len(all)%p
	next := start
	pos := 0
	for i := range p {
		idx := (i + start) % p
		n := base
		if i < extra {
			n++
		} else if i == extra {
			next = idx
		}
		shares[idx] = slices.Clone(all[pos : pos+n])
		if shares[idx] == nil {
			shares[idx] = []T{}
		}
		pos += n
	}
	return shares, next
}
