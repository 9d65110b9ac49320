package keyedsum

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Idle is the record a paused source emits now and then so that it takes part in checkpoints
// (a source snapshots inside Emit, see taskexecutor.CheckpointHandler). The sum drops it.
type Idle struct{}

// SplitPosition is one split's progress: split Split emits Next next (Next > Records: done).
type SplitPosition struct {
	Split int
	Next  int64
}

// FirstOfSplit is the first integer of split j of S: j, or S for split 0.
func FirstOfSplit(j, splits int) int64 {
	if j == 0 {
		return int64(splits)
	}
	return int64(j)
}

// EncodeSplit is a split position as list-state element: two varints, split and next.
func EncodeSplit(p SplitPosition) []byte {
	b := binary.AppendVarint(nil, int64(p.Split))
	return binary.AppendVarint(b, p.Next)
}

// DecodeSplit reads an EncodeSplit element. Errors: malformed bytes.
func DecodeSplit(b []byte) (SplitPosition, error) {
	split, n := binary.Varint(b)
	if n <= 0 {
		return SplitPosition{}, fmt.Errorf("keyedsum: split state %x: bad split index", b)
	}
	next, m := binary.Varint(b[n:])
	if m <= 0 || n+m != len(b) {
		return SplitPosition{}, fmt.Errorf("keyedsum: split state %x: bad position", b)
	}
	return SplitPosition{Split: int(split), Next: next}, nil
}

// sourceState is the source's CheckpointHandler: its splits' positions.
type sourceState struct{ splits []SplitPosition }

func (s *sourceState) SnapshotState(context.Context, checkpoint.CheckpointID) (checkpoint.StateHandle, error) {
	elems := make([][]byte, len(s.splits))
	size := 0
	for i, p := range s.splits {
		elems[i] = EncodeSplit(p)
		size += len(elems[i])
	}
	return checkpoint.StateHandle{
		OperatorState: keygroup.OperatorState[[]byte]{SplitsState: {Mode: keygroup.SplitDistribute, Elements: elems}},
		Size:          int64(size),
	}, nil
}

func (*sourceState) NotifyCheckpointComplete(context.Context, checkpoint.CheckpointID) error {
	return nil
}
func (*sourceState) NotifyCheckpointAborted(context.Context, checkpoint.CheckpointID) {}

// initialSplits is this subtask's splits: on a fresh start split j goes to subtask j mod p at its
// first integer; restored, the positions in the state (already dealt out by the runtime). Each
// restored position is checked: a known split, at one of its integers or past the end.
func initialSplits(env taskexecutor.Environment, cfg Config) ([]SplitPosition, error) {
	info := env.Info()
	_, st, ok := env.RestoredState()
	if !ok {
		var out []SplitPosition
		for j := info.SubtaskIndex; j < cfg.Splits; j += info.Parallelism {
			out = append(out, SplitPosition{Split: j, Next: FirstOfSplit(j, cfg.Splits)})
		}
		return out, nil
	}
	ls := st.OperatorState[SplitsState]
	if len(ls.Elements) > 0 && ls.Mode != keygroup.SplitDistribute {
		return nil, fmt.Errorf("keyedsum: %s: restored %q state has mode %v, want %v", info.TaskName, SplitsState, ls.Mode, keygroup.SplitDistribute)
	}
	out := make([]SplitPosition, 0, len(ls.Elements))
	for _, b := range ls.Elements {
		p, err := DecodeSplit(b)
		if err != nil {
			return nil, fmt.Errorf("keyedsum: %s: %w", info.TaskName, err)
		}
		if p.Split < 0 || p.Split >= cfg.Splits || p.Next < FirstOfSplit(p.Split, cfg.Splits) || (p.Next-FirstOfSplit(p.Split, cfg.Splits))%int64(cfg.Splits) != 0 {
			return nil, fmt.Errorf("keyedsum: %s: restored position %d of split %d is not one of the split's integers (splits %d)", info.TaskName, p.Next, p.Split, cfg.Splits)
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b SplitPosition) int { return a.Split - b.Split })
	return out, nil
}

// router sends each key to the sum subtask that owns its key group.
type router struct {
	keys, maxParallelism int64
	n                    int
	table                []int32 // key → subpartition, for up to maxTable keys
}

const maxTable = 1 << 20

func newRouter(keys int64, maxParallelism, n int) (*router, error) {
	if err := keygroup.CheckMaxParallelism(maxParallelism, n); err != nil {
		return nil, err
	}
	r := &router{keys: keys, maxParallelism: int64(maxParallelism), n: n}
	if keys <= maxTable {
		r.table = make([]int32, keys)
		for k := range r.table {
			r.table[k] = int32(keygroup.AssignKeyToParallelOperator(keygroup.HashInt64(int64(k)), maxParallelism, n))
		}
	}
	return r, nil
}

func (r *router) subpartition(key int64) int {
	if r.table != nil {
		return int(r.table[key])
	}
	return keygroup.AssignKeyToParallelOperator(keygroup.HashInt64(key), int(r.maxParallelism), r.n)
}

// RunSource is the source task: it emits the integers of its splits (see the package doc),
// taking turns among them, record i (an int64) to output 0's subpartition owning key i mod K,
// at most its share of Config.Rate per second, and keeps each split's position as list state
// SplitsState. It returns nil once every split is
// done, and nil when a stop-with-savepoint stopped it (taskexecutor.ErrStopped).
//
// With Config.PauseAfter M, a split stops before its first integer above M; once every split
// stopped or ended, the subtask reports itself paused (WaitSourcesPaused) and emits an Idle
// record every PauseTick until it is stopped or canceled, so that it takes part in checkpoints
// and savepoints (a source snapshots inside Emit).
func RunSource(ctx context.Context, env taskexecutor.Environment) error {
	info := env.Info()
	cfg, err := decodeConfig(info)
	if err != nil {
		return err
	}
	if env.NumOutputs() < 1 {
		return fmt.Errorf("keyedsum: %s: the source has no output", info.TaskName)
	}
	out := env.Output(0)
	rt, err := newRouter(cfg.Keys, cfg.MaxParallelism, out.NumSubpartitions())
	if err != nil {
		return fmt.Errorf("keyedsum: %s: routing: %w", info.TaskName, err)
	}
	splits, err := initialSplits(env, cfg)
	if err != nil {
		return err
	}
	st := &sourceState{splits: splits}
	setCheckpointHandler(env, cfg, st)
	failAt := failAfter(info, cfg)
	limit := cfg.Records
	if cfg.PauseAfter > 0 {
		limit = min(limit, cfg.PauseAfter)
	}
	step := int64(cfg.Splits)
	pace := newPacer(cfg.Rate, info.Parallelism)
	var emitted int64
	for {
		progressed := false
		for k := range st.splits {
			p := &st.splits[k]
			if p.Next > limit {
				continue
			}
			if emitted == failAt {
				return injected(info, emitted)
			}
			i := p.Next
			if err := out.Emit(ctx, rt.subpartition(KeyOf(i, cfg.Keys)), i); err != nil {
				return stopped(err)
			}
			// After Emit: a snapshot taken inside it covers the records before i, not i.
			p.Next = i + step
			emitted++
			progressed = true
			if err := pace.wait(ctx, emitted); err != nil {
				return err
			}
		}
		if !progressed {
			break
		}
	}
	if cfg.PauseAfter <= 0 || cfg.PauseAfter >= cfg.Records {
		return nil
	}
	reportPaused(info)
	tick := time.NewTicker(cfg.PauseTick)
	defer tick.Stop()
	idle := info.SubtaskIndex % out.NumSubpartitions()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if err := out.Emit(ctx, idle, Idle{}); err != nil {
			return stopped(err)
		}
	}
}

// pacer holds a source subtask to its share of Config.Rate: after every chunk of records it
// waits until the time that many records are due (a timer, so it is the bubble's clock in a
// synctest test).
type pacer struct {
	perSecond float64
	chunk     int64
	start     time.Time
}

func newPacer(rate float64, parallelism int) *pacer {
	if rate <= 0 {
		return nil
	}
	per := rate / float64(parallelism)
	return &pacer{perSecond: per, chunk: max(1, int64(per/1000)), start: time.Now()}
}

func (p *pacer) wait(ctx context.Context, emitted int64) error {
	if p == nil || emitted%p.chunk != 0 {
		return nil
	}
	due := p.start.Add(time.Duration(float64(emitted) / p.perSecond * float64(time.Second)))
	d := time.Until(due)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// stopped turns taskexecutor.ErrStopped into a normal end (nil); other errors pass.
func stopped(err error) error {
	if errors.Is(err, taskexecutor.ErrStopped) {
		return nil
	}
	return err
}
