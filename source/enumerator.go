package source

import (
	"encoding/json"
	"fmt"
)

// SplitEnumerator decides which reader reads which split. It lives inside a SourceCoordinator,
// which calls every method on the JobMaster's loop, one at a time; none may block (work off the
// loop comes back through SplitEnumeratorContext.RunInCoordinatorThread). A returned error fails
// the job globally. Flink: org.apache.flink.api.connector.source.SplitEnumerator.
type SplitEnumerator interface {
	// Start is called once, before any other method.
	Start() error
	// HandleSplitRequest answers a reader's request for a split: the enumerator assigns it one
	// (SplitEnumeratorContext.AssignSplits) or tells it there are no more
	// (SignalNoMoreSplits), now or later.
	HandleSplitRequest(subtask int) error
	// AddSplitsBack returns splits that were handed to subtask after the checkpoint it was reset
	// to (a region restart); the enumerator hands them out again.
	AddSplitsBack(splits []Split, subtask int) error
	// AddReader says that subtask's reader can receive splits (its attempt is ready).
	AddReader(subtask int) error
	// SnapshotState returns the enumerator's state for checkpointID, which the enumerator
	// factory gets back on a restore.
	SnapshotState(checkpointID int64) ([]byte, error)
	// NotifyCheckpointComplete says checkpointID completed.
	NotifyCheckpointComplete(checkpointID int64) error
	// Close releases what the enumerator holds; no method is called after it.
	Close() error
}

// SplitEnumeratorContext is what a SplitEnumerator gets from its SourceCoordinator. Its methods
// are called on the JobMaster's loop, except RunInCoordinatorThread, which any goroutine may
// call. Flink: org.apache.flink.api.connector.source.SplitEnumeratorContext.
type SplitEnumeratorContext interface {
	// CurrentParallelism is the source vertex's parallelism: readers are 0 … n−1.
	CurrentParallelism() int
	// RegisteredReaders lists the subtasks whose current attempt can receive splits, mapped to
	// that attempt's number.
	RegisteredReaders() map[int]int
	// AssignSplits sends splits to subtask's reader (one AddSplits event) and records them as
	// assigned to it. It returns an error, and assigns nothing, when subtask has no registered
	// reader, when a split has an empty ID or when splits is empty.
	AssignSplits(subtask int, splits ...Split) error
	// SignalNoMoreSplits tells subtask's reader that it gets no more splits: once it read those
	// it has, it finishes. An error when subtask has no registered reader.
	SignalNoMoreSplits(subtask int) error
	// RunInCoordinatorThread runs fn on the JobMaster's loop later, unless the coordinator was
	// closed or reset first (Flink: runInCoordinatorThread).
	RunInCoordinatorThread(fn func())
	// Config is the vertex's OperatorCoordinatorConfig.
	Config() []byte
}

// EnumeratorFactory creates the SplitEnumerator of a source vertex: restored is the state it
// returned from SnapshotState for the checkpoint being restored, nil for a fresh start (the job's
// first run, or a reset to coordination.NoCheckpoint). It runs on the JobMaster's loop when the
// coordinator starts and on every ResetToCheckpoint after that. Flink: Source.createEnumerator
// and Source.restoreEnumerator.
type EnumeratorFactory func(ctx SplitEnumeratorContext, restored []byte) (SplitEnumerator, error)

// StaticSplitsConfig is the JSON a source vertex's OperatorCoordinatorConfig holds for
// StaticSplitsProvider, and the static enumerator's checkpoint state:
//
//	{"splits":[{"id":"part-0","payload":"…base64…"},…]}
type StaticSplitsConfig struct {
	Splits []Split `json:"splits"`
}

// EncodeStaticSplits returns the OperatorCoordinatorConfig for StaticSplitsProvider: splits as
// StaticSplitsConfig JSON. It returns an error naming the split for an empty or repeated ID.
func EncodeStaticSplits(splits []Split) ([]byte, error) {
	if err := checkSplits(splits, map[string]bool{}); err != nil {
		return nil, err
	}
	return json.Marshal(StaticSplitsConfig{Splits: splits})
}

// NewStaticSplitEnumerator returns the enumerator of a fixed list of splits: each request gets
// the next split not handed out yet, in list order (splits added back come first, in the order
// given), and once none is left the request is answered with NoMoreSplits. Its state is the
// splits not handed out, as StaticSplitsConfig. It returns an error naming the split for an
// empty or repeated ID. Flink: FileSource's StaticFileSplitEnumerator (whose assigner picks
// splits by locality; ours goes in order).
func NewStaticSplitEnumerator(ctx SplitEnumeratorContext, splits []Split) (SplitEnumerator, error) {
	seen := map[string]bool{}
	if err := checkSplits(splits, seen); err != nil {
		return nil, err
	}
	return &staticEnumerator{ctx: ctx, pending: append([]Split(nil), splits...)}, nil
}

type staticEnumerator struct {
	ctx     SplitEnumeratorContext
	pending []Split
}

func (e *staticEnumerator) Start() error                         { return nil }
func (e *staticEnumerator) AddReader(int) error                  { return nil }
func (e *staticEnumerator) Close() error                         { return nil }
func (e *staticEnumerator) NotifyCheckpointComplete(int64) error { return nil }

func (e *staticEnumerator) HandleSplitRequest(subtask int) error {
	if len(e.pending) == 0 {
		return e.ctx.SignalNoMoreSplits(subtask)
	}
	if err := e.ctx.AssignSplits(subtask, e.pending[0]); err != nil {
		return err
	}
	e.pending = e.pending[1:]
	return nil
}

func (e *staticEnumerator) AddSplitsBack(splits []Split, _ int) error {
	e.pending = append(append([]Split(nil), splits...), e.pending...)
	return nil
}

func (e *staticEnumerator) SnapshotState(int64) ([]byte, error) {
	return json.Marshal(StaticSplitsConfig{Splits: e.pending})
}

// staticFactory is the EnumeratorFactory of a fixed list: the restored state's splits, else
// list's.
func staticFactory(list func(SplitEnumeratorContext) ([]Split, error)) EnumeratorFactory {
	return func(ctx SplitEnumeratorContext, restored []byte) (SplitEnumerator, error) {
		if restored != nil {
			var st StaticSplitsConfig
			if err := json.Unmarshal(restored, &st); err != nil {
				return nil, fmt.Errorf("source: restoring the static split enumerator: %w", err)
			}
			return NewStaticSplitEnumerator(ctx, st.Splits)
		}
		splits, err := list(ctx)
		if err != nil {
			return nil, err
		}
		return NewStaticSplitEnumerator(ctx, splits)
	}
}
