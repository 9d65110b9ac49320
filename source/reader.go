package source

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// ReaderStateName is the operator list state (checkpoint.StateHandle.OperatorState) a reader's
// splits are checkpointed under, one element per split (its JSON), SplitDistribute: restored at
// another parallelism, the unfinished splits are dealt out among the new readers. Flink:
// SourceOperator's "SourceReaderState".
const ReaderStateName = "SourceReaderState"

// SplitReadFunc reads one split: it emits the split's records (env.Output(i).Emit) from
// split.Position on, advancing split.Position after each record it emitted (records, bytes or
// whatever unit it resumes by), and returns nil once the split is read. A checkpoint taken while
// it runs — inside its Emit, before the record is handed over — records the split with the
// Position at that moment, and a reader restored from that checkpoint calls the read function
// again with that Position. A function that never advances Position reads a restored split from
// its start. Its error ends ReadSplits with it (wrapped with the split's ID), failing the task.
type SplitReadFunc func(ctx context.Context, split *Split) error

// ReadSplits is the reader side of a source vertex whose operator coordinator is a
// SourceCoordinator: called by the vertex's Invokable, on the task's goroutine, it reads the
// splits the restored checkpoint state (Environment.RestoredState) lists first, then asks the
// coordinator for a split ({"type":"RequestSplit"}), waits for the answer in Environment.Yield,
// reads the splits it got with read, one after another in the order they came, asks again, and
// returns nil once the coordinator said NoMoreSplits and every split it got was read. Flink:
// SourceOperator driving a SourceReaderBase (one split at a time, as a FileSource reader).
//
// It registers the task's operator event handler and its CheckpointHandler (replacing any the
// task set): the task's checkpoint state is the splits it was given and has not finished, the
// one being read with its Position (operator list state ReaderStateName). A task that has state
// of its own writes its own reader loop with this package's events instead.
//
// It returns read's error wrapped with the split's ID, an error wrapping ErrInvalidEvent for an
// event that is no AddSplits or NoMoreSplits (the handler's error fails the task too), an error
// naming the state for a restored state it cannot decode, the error of
// Environment.SendEventToCoordinator (ErrNoOperatorCoordinator when the vertex names no
// coordinator) or of Yield (ctx's, the task's stop error, taskexecutor.ErrStopped).
func ReadSplits(ctx context.Context, env taskexecutor.Environment, read SplitReadFunc) error {
	r := &splitReader{}
	if _, st, ok := env.RestoredState(); ok {
		for i, el := range st.OperatorState[ReaderStateName].Elements {
			var s Split
			if err := json.Unmarshal(el, &s); err != nil {
				return fmt.Errorf("source: %s: restoring split %d of the reader state %q: %w", env.Info().TaskName, i, ReaderStateName, err)
			}
			r.queue = append(r.queue, s)
		}
	}
	env.SetOperatorEventHandler(r.handleEvent)
	env.SetCheckpointHandler(r)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(r.queue) > 0 {
			s := r.queue[0]
			r.queue = r.queue[1:]
			r.current = &s
			if err := read(ctx, r.current); err != nil {
				return fmt.Errorf("source: %s: reading split %q: %w", env.Info().TaskName, s.ID, err)
			}
			r.current = nil
			continue
		}
		if r.noMore {
			return nil
		}
		if !r.requested {
			if err := env.SendEventToCoordinator(encodeEvent(event{Type: eventRequestSplit})); err != nil {
				return fmt.Errorf("source: %s: requesting a split: %w", env.Info().TaskName, err)
			}
			r.requested = true
		}
		if err := env.Yield(ctx); err != nil {
			return err
		}
	}
}

// splitReader is ReadSplits' state; every method runs on the task's goroutine.
type splitReader struct {
	// current is the split being read (nil between splits); queue the splits given and not
	// started, in order.
	current *Split
	queue   []Split
	// requested: a RequestSplit is unanswered. noMore: the coordinator said NoMoreSplits.
	requested, noMore bool
}

func (r *splitReader) handleEvent(b []byte) error {
	e, err := decodeEvent(b)
	if err != nil {
		return err
	}
	switch e.Type {
	case eventAddSplits:
		if len(e.Splits) == 0 {
			return fmt.Errorf("%w: AddSplits without splits", ErrInvalidEvent)
		}
		r.queue = append(r.queue, e.Splits...)
	case eventNoMoreSplits:
		r.noMore = true
	default:
		return fmt.Errorf("%w: %q: a source reader handles AddSplits and NoMoreSplits", ErrInvalidEvent, e.Type)
	}
	r.requested = false
	return nil
}

// SnapshotState returns the splits given and not finished: the current one (with its Position)
// first, then the queued ones; an empty state when there are none.
func (r *splitReader) SnapshotState(context.Context, checkpoint.CheckpointID) (checkpoint.StateHandle, error) {
	var els [][]byte
	var size int64
	add := func(s Split) error {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		els = append(els, b)
		size += int64(len(b))
		return nil
	}
	if r.current != nil {
		if err := add(*r.current); err != nil {
			return checkpoint.StateHandle{}, err
		}
	}
	for _, s := range r.queue {
		if err := add(s); err != nil {
			return checkpoint.StateHandle{}, err
		}
	}
	if len(els) == 0 {
		return checkpoint.StateHandle{}, nil
	}
	return checkpoint.StateHandle{
		OperatorState: keygroup.OperatorState[[]byte]{ReaderStateName: {Mode: keygroup.SplitDistribute, Elements: els}},
		Size:          size,
	}, nil
}

func (r *splitReader) NotifyCheckpointComplete(context.Context, checkpoint.CheckpointID) error {
	return nil
}

func (r *splitReader) NotifyCheckpointAborted(context.Context, checkpoint.CheckpointID) {}
