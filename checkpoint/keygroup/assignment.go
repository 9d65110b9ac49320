// Package keygroup partitions keyed state into key groups and redistributes state when a job is
// restored with another parallelism, as Flink's KeyGroupRangeAssignment and
// StateAssignmentOperation do.
//
// A keyed operator's key space is split into maxParallelism key groups (the vertex's max
// parallelism, jobgraph.JobVertex.EffectiveMaxParallelism). A key's group is Flink's murmur hash of
// the key's 32-bit hash code modulo maxParallelism (AssignToKeyGroup); subtask i of an operator with
// parallelism p owns the contiguous key groups [⌈i·max/p⌉, ⌈(i+1)·max/p⌉)
// (ComputeKeyGroupRangeForOperatorIndex). Because a key's group never depends on the parallelism,
// a checkpoint taken at parallelism p restores at any parallelism p′ ≤ max: each new subtask
// gathers exactly its key groups from the old subtasks' state (RedistributeKeyGroups). Operator
// (non-keyed) list state is dealt out as Flink's RoundRobinOperatorStateRepartitioner does
// (RepartitionOperatorState).
//
// Everything here is plain computation on plain data: no goroutines, no I/O, no clock. Every
// function is safe to call from any goroutine; the value types are not synchronized.
package keygroup

import (
	"fmt"
	"math/bits"

	"github.com/jobgraph/jobgraph"
)

// UpperBoundMaxParallelism is the largest max parallelism (number of key groups) Flink allows,
// 1 << 15. Flink: KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM.
const UpperBoundMaxParallelism = jobgraph.MaxMaxParallelism

// DefaultLowerBoundMaxParallelism is the smallest default max parallelism, 1 << 7.
// Flink: KeyGroupRangeAssignment.DEFAULT_LOWER_BOUND_MAX_PARALLELISM.
const DefaultLowerBoundMaxParallelism = 1 << 7

// MurmurHash is Flink's MathUtils.murmurHash: one round of MurmurHash3_x86_32 with seed 0 over
// the 4 bytes of code, the 32-bit finalizer, then made non-negative (a negative result is negated;
// math.MinInt32 becomes 0). The result is in [0, math.MaxInt32] and equals Flink's bit for bit.
func MurmurHash(code int32) int32 {
	h := uint32(code)
	h *= 0xcc9e2d51
	h = bits.RotateLeft32(h, 15)
	h *= 0x1b873593
	// Seed 0: the running hash is 0, so mixing the one block in leaves just the block.
	h = bits.RotateLeft32(h, 13)
	h = h*5 + 0xe6546b64
	h ^= 4 // the input length in bytes
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	v := int32(h)
	switch {
	case v >= 0:
		return v
	case v != -1<<31:
		return -v
	default:
		return 0
	}
}

// CheckParallelism reports whether parallelism is in [1, UpperBoundMaxParallelism]. The error names
// the value. Flink: KeyGroupRangeAssignment.checkParallelismPreconditions.
func CheckParallelism(parallelism int) error {
	if parallelism <= 0 || parallelism > UpperBoundMaxParallelism {
		return fmt.Errorf("keygroup: parallelism %d is outside [1, %d]", parallelism, UpperBoundMaxParallelism)
	}
	return nil
}

// CheckMaxParallelism reports whether maxParallelism and parallelism are both in
// [1, UpperBoundMaxParallelism] and parallelism ≤ maxParallelism, the preconditions of every
// function of this package that takes them. The error names the offending value. Call it once
// where the values enter (the hot-path functions AssignToKeyGroup, ComputeOperatorIndexForKeyGroup
// and AssignKeyToParallelOperator do not return errors).
func CheckMaxParallelism(maxParallelism, parallelism int) error {
	if maxParallelism <= 0 || maxParallelism > UpperBoundMaxParallelism {
		return fmt.Errorf("keygroup: max parallelism %d is outside [1, %d]", maxParallelism, UpperBoundMaxParallelism)
	}
	if err := CheckParallelism(parallelism); err != nil {
		return err
	}
	if parallelism > maxParallelism {
		return fmt.Errorf("keygroup: parallelism %d is above the max parallelism %d", parallelism, maxParallelism)
	}
	return nil
}

// ComputeDefaultMaxParallelism is the max parallelism of an operator that sets none: 1.5 ×
// parallelism (integer p + p/2) rounded up to a power of two, within [128, 32768]. It is
// jobgraph.DefaultMaxParallelism with Flink's precondition: a parallelism outside [1, 32768] is an
// error. Flink: KeyGroupRangeAssignment.computeDefaultMaxParallelism.
func ComputeDefaultMaxParallelism(parallelism int) (int, error) {
	if err := CheckParallelism(parallelism); err != nil {
		return 0, err
	}
	return jobgraph.DefaultMaxParallelism(parallelism), nil
}

// AssignToKeyGroup returns the key group, in [0, maxParallelism), of a key whose 32-bit hash code
// is keyHash (see HashString, HashInt64…): MurmurHash(keyHash) mod maxParallelism.
// Flink: KeyGroupRangeAssignment.computeKeyGroupForKeyHash (assignToKeyGroup with key.hashCode()).
//
// maxParallelism must be in [1, UpperBoundMaxParallelism] (check it once with CheckMaxParallelism);
// any other value is a programming error and panics, as Flink's division would throw.
func AssignToKeyGroup(keyHash int32, maxParallelism int) int {
	mustMaxParallelism(maxParallelism)
	return int(MurmurHash(keyHash)) % maxParallelism
}

// ComputeOperatorIndexForKeyGroup returns the subtask index, in [0, parallelism), that owns
// keyGroup: keyGroup × parallelism / maxParallelism. It agrees with
// ComputeKeyGroupRangeForOperatorIndex: the returned subtask's range contains keyGroup.
// Flink: KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup.
//
// The arguments must satisfy CheckMaxParallelism and 0 ≤ keyGroup < maxParallelism; anything else
// is a programming error and panics (Flink does not check and returns a wrong index).
func ComputeOperatorIndexForKeyGroup(maxParallelism, parallelism, keyGroup int) int {
	if err := CheckMaxParallelism(maxParallelism, parallelism); err != nil {
		panic(err.Error())
	}
	if keyGroup < 0 || keyGroup >= maxParallelism {
		panic(fmt.Sprintf("keygroup: key group %d is outside [0, %d)", keyGroup, maxParallelism))
	}
	return keyGroup * parallelism / maxParallelism
}

// AssignKeyToParallelOperator returns the subtask index, in [0, parallelism), a key whose hash code
// is keyHash is routed to: ComputeOperatorIndexForKeyGroup of AssignToKeyGroup. A hash shuffle in
// front of a keyed operator chooses the subpartition with it, as Flink's KeyGroupStreamPartitioner
// does. Flink: KeyGroupRangeAssignment.assignKeyToParallelOperator. Panics as
// ComputeOperatorIndexForKeyGroup does.
func AssignKeyToParallelOperator(keyHash int32, maxParallelism, parallelism int) int {
	return ComputeOperatorIndexForKeyGroup(maxParallelism, parallelism, AssignToKeyGroup(keyHash, maxParallelism))
}

// ComputeKeyGroupRangeForOperatorIndex returns the key groups subtask operatorIndex owns at the
// given parallelism: [⌈i·max/p⌉, ⌈(i+1)·max/p⌉ − 1], inclusive as KeyGroupRange is. The ranges of
// subtasks 0..p−1 are contiguous, disjoint and cover [0, maxParallelism); their sizes differ by at
// most one. Flink: KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex.
//
// Errors: the arguments fail CheckMaxParallelism, or operatorIndex is outside [0, parallelism)
// (Flink does not check the index).
func ComputeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, operatorIndex int) (KeyGroupRange, error) {
	if err := CheckMaxParallelism(maxParallelism, parallelism); err != nil {
		return EmptyKeyGroupRange, err
	}
	if operatorIndex < 0 || operatorIndex >= parallelism {
		return EmptyKeyGroupRange, fmt.Errorf("keygroup: operator index %d is outside [0, %d)", operatorIndex, parallelism)
	}
	return keyGroupRange(maxParallelism, parallelism, operatorIndex), nil
}

// keyGroupRange computes the range with checked arguments. Go's int is 64 bits, so the products
// cannot overflow (Flink's int arithmetic needs maxParallelism ≤ 32768 for that).
func keyGroupRange(maxParallelism, parallelism, i int) KeyGroupRange {
	start := (i*maxParallelism + parallelism - 1) / parallelism
	end := ((i+1)*maxParallelism - 1) / parallelism
	return KeyGroupRange{Start: start, End: end}
}

// KeyGroupPartitions returns the key group range of every subtask 0..parallelism−1, in subtask
// order. Errors as CheckMaxParallelism. Flink: StateAssignmentOperation.createKeyGroupPartitions.
func KeyGroupPartitions(maxParallelism, parallelism int) ([]KeyGroupRange, error) {
	if err := CheckMaxParallelism(maxParallelism, parallelism); err != nil {
		return nil, err
	}
	out := make([]KeyGroupRange, parallelism)
	for i := range out {
		out[i] = keyGroupRange(maxParallelism, parallelism, i)
	}
	return out, nil
}

func mustMaxParallelism(maxParallelism int) {
	if maxParallelism <= 0 || maxParallelism > UpperBoundMaxParallelism {
		panic(fmt.Sprintf("keygroup: max parallelism %d is outside [1, %d]", maxParallelism, UpperBoundMaxParallelism))
	}
}
