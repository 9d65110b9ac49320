package keyedsum

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Update is what the sum emits per record: the record's key, the key's running sum including I,
// and I.
type Update struct {
	Key, Sum, I int64
}

// EncodeSums is one key group's sums as keyed-state bytes: (key, sum) varint pairs in increasing
// key order.
func EncodeSums(sums map[int64]int64) []byte {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(sums)) {
		b = binary.AppendVarint(b, k)
		b = binary.AppendVarint(b, sums[k])
	}
	return b
}

// DecodeSums reads EncodeSums bytes into into. Errors: malformed bytes, a key twice.
func DecodeSums(b []byte, into map[int64]int64) error {
	for len(b) > 0 {
		k, n := binary.Varint(b)
		if n <= 0 {
			return errors.New("keyedsum: keyed state: bad key")
		}
		s, m := binary.Varint(b[n:])
		if m <= 0 {
			return fmt.Errorf("keyedsum: keyed state: bad sum of key %d", k)
		}
		if _, dup := into[k]; dup {
			return fmt.Errorf("keyedsum: keyed state: key %d twice", k)
		}
		into[k] = s
		b = b[n+m:]
	}
	return nil
}

// sumState is the sum's CheckpointHandler: the running sums, by key group.
type sumState struct {
	maxParallelism int
	owned          keygroup.KeyGroupRange
	sums           map[int64]int64
}

func (s *sumState) SnapshotState(context.Context, checkpoint.CheckpointID) (checkpoint.StateHandle, error) {
	split, err := keygroup.SplitByKeyGroup(s.sums, keygroup.HashInt64, s.maxParallelism, s.owned)
	if err != nil {
		return checkpoint.StateHandle{}, err
	}
	ks := &keygroup.KeyGroupsState[[]byte]{Range: s.owned}
	size := 0
	for kg, sums := range split.Groups {
		if ks.Groups == nil {
			ks.Groups = make(map[int][]byte, len(split.Groups))
		}
		ks.Groups[kg] = EncodeSums(sums)
		size += len(ks.Groups[kg])
	}
	return checkpoint.StateHandle{KeyedState: ks, Size: int64(size)}, nil
}

func (*sumState) NotifyCheckpointComplete(context.Context, checkpoint.CheckpointID) error {
	return nil
}
func (*sumState) NotifyCheckpointAborted(context.Context, checkpoint.CheckpointID) {}

// restoreSums reads the restored keyed state: it must cover exactly the subtask's key groups,
// and every key must lie in the group it is filed under.
func restoreSums(env taskexecutor.Environment, s *sumState) (*RestoredSums, error) {
	info := env.Info()
	id, st, ok := env.RestoredState()
	if !ok {
		return nil, nil
	}
	r := &RestoredSums{Subtask: info.SubtaskIndex, Parallelism: info.Parallelism, KeyGroups: s.owned,
		CheckpointID: int64(id), Sums: map[int64]int64{}}
	if st.KeyedState == nil {
		return r, nil // no keyed state for the subtask's key groups: no sums
	}
	ks := st.KeyedState
	r.KeyGroups, r.FromState = ks.Range, true
	if ks.Range != s.owned {
		return nil, fmt.Errorf("keyedsum: %s: restored keyed state covers key groups %v, the subtask owns %v", info.TaskName, ks.Range, s.owned)
	}
	for _, kg := range slices.Sorted(maps.Keys(ks.Groups)) {
		group := map[int64]int64{}
		if err := DecodeSums(ks.Groups[kg], group); err != nil {
			return nil, fmt.Errorf("keyedsum: %s: key group %d: %w", info.TaskName, kg, err)
		}
		for k, v := range group {
			if got := keygroup.AssignToKeyGroup(keygroup.HashInt64(k), s.maxParallelism); got != kg {
				return nil, fmt.Errorf("keyedsum: %s: restored key %d under key group %d, its group is %d", info.TaskName, k, kg, got)
			}
			s.sums[k] = v
			r.Sums[k] = v
		}
	}
	return r, nil
}

// RunSum is the keyed running sum: for every record i of input 0 it adds i to the sum of key
// i mod K and emits Update{key, sum, i} to output 0 (one subpartition: the sink subtask of the
// same index). The sums are keyed state by key group (over info.MaxParallelism); a record whose
// key the subtask does not own fails the task (the shuffle routed it wrongly). It returns nil
// when its input ended or a stop-with-savepoint stopped it. A restored subtask adds what it
// restored to accumulator AccRestoredSums.
func RunSum(ctx context.Context, env taskexecutor.Environment) error {
	info := env.Info()
	cfg, err := decodeConfig(info)
	if err != nil {
		return err
	}
	if env.NumInputs() != 1 || env.NumOutputs() != 1 {
		return fmt.Errorf("keyedsum: %s: the sum needs 1 input and 1 output, has %d and %d", info.TaskName, env.NumInputs(), env.NumOutputs())
	}
	out := env.Output(0)
	if n := out.NumSubpartitions(); n != 1 {
		return fmt.Errorf("keyedsum: %s: the sum's output has %d subpartitions, want 1 (POINTWISE to a sink of the same parallelism)", info.TaskName, n)
	}
	owned, err := keygroup.ComputeKeyGroupRangeForOperatorIndex(info.MaxParallelism, info.Parallelism, info.SubtaskIndex)
	if err != nil {
		return fmt.Errorf("keyedsum: %s: %w", info.TaskName, err)
	}
	if info.MaxParallelism != cfg.MaxParallelism {
		return fmt.Errorf("keyedsum: %s: max parallelism %d, the sources route by %d", info.TaskName, info.MaxParallelism, cfg.MaxParallelism)
	}
	st := &sumState{maxParallelism: info.MaxParallelism, owned: owned, sums: map[int64]int64{}}
	restored, err := restoreSums(env, st)
	if err != nil {
		return err
	}
	if restored != nil {
		acc := new(jobgraph.ListAccumulator[RestoredSums])
		if err := env.AccumulatorRegistry().Add(AccRestoredSums, acc); err != nil {
			return fmt.Errorf("keyedsum: %s: %w", info.TaskName, err)
		}
		acc.Add(*restored)
	}
	setCheckpointHandler(env, cfg, st)
	failAt := failAfter(info, cfg)
	in := env.Input(0)
	var n int64
	for {
		rec, err := in.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return stopped(err)
		}
		i, ok := rec.(int64)
		if !ok {
			if _, idle := rec.(Idle); idle {
				continue
			}
			return fmt.Errorf("keyedsum: %s: record of type %T, want int64", info.TaskName, rec)
		}
		if n == failAt {
			return injected(info, n)
		}
		n++
		key := KeyOf(i, cfg.Keys)
		sum, seen := st.sums[key]
		if !seen {
			if kg := keygroup.AssignToKeyGroup(keygroup.HashInt64(key), st.maxParallelism); !owned.Contains(kg) {
				return fmt.Errorf("keyedsum: %s: key %d (key group %d) arrived at the subtask owning %v", info.TaskName, key, kg, owned)
			}
		}
		sum += i
		st.sums[key] = sum
		if err := out.Emit(ctx, 0, Update{Key: key, Sum: sum, I: i}); err != nil {
			return stopped(err)
		}
	}
}
