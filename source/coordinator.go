package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/jobgraph/jobgraph/coordination"
)

// stateVersion is the version of the coordinator state's JSON (see the package doc).
const stateVersion = 1

// coordinatorState is the coordinator's checkpoint state.
type coordinatorState struct {
	Version    int    `json:"version"`
	Enumerator []byte `json:"enumerator"`
}

// ErrInvalidState is returned (wrapped) by ResetToCheckpoint for state that is not the
// coordinator's JSON or has another version.
var ErrInvalidState = errors.New("source: invalid coordinator state")

// SourceCoordinator is the operator coordinator of a source vertex: it runs a SplitEnumerator,
// passes the readers' split requests to it, sends the splits it assigns to the readers, tracks
// the assignments per checkpoint (SplitAssignmentTracker), checkpoints the enumerator and, on a
// reset, restores it or takes back a reset subtask's splits. It implements
// coordination.OperatorCoordinator; every method runs on the JobMaster's loop, as that interface
// says, and so does every method of the enumerator it runs. Flink: SourceCoordinator with its
// SourceCoordinatorContext (and RecreateOnResetOperatorCoordinator's replacement of the
// enumerator on a global reset). Where we differ: a reader counts as registered once its attempt
// is ready (ExecutionAttemptReady), where Flink's SourceOperator sends a ReaderRegistrationEvent.
type SourceCoordinator struct {
	ctx     coordination.Context
	factory EnumeratorFactory

	started, closed bool
	// restored is the enumerator state a ResetToCheckpoint before Start gave (nil: none).
	restored []byte

	enumerator SplitEnumerator
	// enumCtx is the current enumerator's context; a replaced one is marked dead.
	enumCtx *enumeratorContext
	tracker *SplitAssignmentTracker

	// gateways are the ready attempts' gateways by subtask.
	gateways map[int]coordination.SubtaskGateway
	// pending are split requests that arrived before their attempt's gateway: subtask →
	// attempt. ExecutionAttemptReady of that attempt hands them to the enumerator.
	pending map[int]int
}

var _ coordination.OperatorCoordinator = (*SourceCoordinator)(nil)

// NewSourceCoordinator returns the coordinator of the vertex ctx describes, whose enumerator
// factory creates on Start (and on every ResetToCheckpoint after it). It returns an error for a
// nil ctx or factory.
func NewSourceCoordinator(ctx coordination.Context, factory EnumeratorFactory) (*SourceCoordinator, error) {
	if ctx == nil || factory == nil {
		return nil, errors.New("source: NewSourceCoordinator needs a Context and an EnumeratorFactory")
	}
	return &SourceCoordinator{
		ctx:      ctx,
		factory:  factory,
		tracker:  NewSplitAssignmentTracker(),
		gateways: map[int]coordination.SubtaskGateway{},
		pending:  map[int]int{},
	}, nil
}

// NewProvider returns a coordination.Provider whose coordinators are SourceCoordinators running
// the enumerators factory creates. A host registers it under the name a source vertex's
// OperatorCoordinator field gives. Flink: SourceCoordinatorProvider.
func NewProvider(factory EnumeratorFactory) coordination.Provider {
	return coordination.ProviderFunc(func(ctx coordination.Context) (coordination.OperatorCoordinator, error) {
		return NewSourceCoordinator(ctx, factory)
	})
}

// StaticSplitsProvider returns a coordination.Provider for vertices that list their splits in
// their OperatorCoordinatorConfig (StaticSplitsConfig JSON, see EncodeStaticSplits); each
// coordinator runs NewStaticSplitEnumerator over them. Create returns an error, naming what is
// wrong, for a config that is not that JSON or lists a split with an empty or repeated ID.
func StaticSplitsProvider() coordination.Provider {
	return coordination.ProviderFunc(func(ctx coordination.Context) (coordination.OperatorCoordinator, error) {
		var cfg StaticSplitsConfig
		if err := json.Unmarshal(ctx.Config(), &cfg); err != nil {
			return nil, fmt.Errorf("source: the OperatorCoordinatorConfig is no StaticSplitsConfig JSON: %w", err)
		}
		if err := checkSplits(cfg.Splits, map[string]bool{}); err != nil {
			return nil, err
		}
		return NewSourceCoordinator(ctx, staticFactory(func(SplitEnumeratorContext) ([]Split, error) { return cfg.Splits, nil }))
	})
}

// SplitListProvider returns a coordination.Provider whose coordinators hand out, as
// NewStaticSplitEnumerator does, the splits list returns for the vertex. list runs on the
// JobMaster's loop, once per coordinator when it starts fresh (not when it restores a checkpoint,
// whose state has the splits left); its error, wrapped, fails the job. It must not block.
func SplitListProvider(list func(ctx coordination.Context) ([]Split, error)) coordination.Provider {
	return coordination.ProviderFunc(func(ctx coordination.Context) (coordination.OperatorCoordinator, error) {
		if list == nil {
			return nil, errors.New("source: SplitListProvider needs a list function")
		}
		return NewSourceCoordinator(ctx, staticFactory(func(SplitEnumeratorContext) ([]Split, error) {
			splits, err := list(ctx)
			if err != nil {
				return nil, fmt.Errorf("source: listing the splits of vertex %s: %w", ctx.VertexID(), err)
			}
			return splits, nil
		}))
	})
}

// Start creates the enumerator (from the state a ResetToCheckpoint before it gave, if any) and
// starts it.
func (c *SourceCoordinator) Start() error {
	if c.started {
		return errors.New("source: SourceCoordinator started twice")
	}
	c.started = true
	return c.createEnumerator(c.restored)
}

// createEnumerator replaces the enumerator by a new one over restored and starts it; readers
// already registered are added to it.
func (c *SourceCoordinator) createEnumerator(restored []byte) error {
	if c.enumCtx != nil {
		c.enumCtx.dead = true
	}
	c.enumCtx = &enumeratorContext{c: c}
	e, err := c.factory(c.enumCtx, restored)
	if err != nil {
		return fmt.Errorf("source: creating the split enumerator of vertex %s: %w", c.ctx.VertexID(), err)
	}
	if e == nil {
		return fmt.Errorf("source: the EnumeratorFactory of vertex %s returned no enumerator", c.ctx.VertexID())
	}
	c.enumerator = e
	if err := e.Start(); err != nil {
		return fmt.Errorf("source: starting the split enumerator of vertex %s: %w", c.ctx.VertexID(), err)
	}
	for _, s := range slices.Sorted(maps.Keys(c.gateways)) {
		if err := e.AddReader(s); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the enumerator; nothing is sent after it.
func (c *SourceCoordinator) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if c.enumCtx != nil {
		c.enumCtx.dead = true
	}
	if c.enumerator != nil {
		return c.enumerator.Close()
	}
	return nil
}

// HandleEventFromOperator handles a reader's RequestSplit. A request from an attempt whose
// gateway has not arrived yet waits for it. An event that is no RequestSplit, or a subtask out of
// range, is an error wrapping ErrInvalidEvent.
func (c *SourceCoordinator) HandleEventFromOperator(subtask, attempt int, ev []byte) error {
	e, err := decodeEvent(ev)
	if err != nil {
		return err
	}
	if e.Type != eventRequestSplit {
		return fmt.Errorf("%w: %q from subtask %d: a source coordinator handles only %s", ErrInvalidEvent, e.Type, subtask, eventRequestSplit)
	}
	if subtask < 0 || subtask >= c.ctx.CurrentParallelism() {
		return fmt.Errorf("%w: %s from subtask %d of parallelism %d", ErrInvalidEvent, e.Type, subtask, c.ctx.CurrentParallelism())
	}
	if gw := c.gateways[subtask]; gw == nil || gw.Attempt() != attempt {
		c.pending[subtask] = attempt
		return nil
	}
	return c.enumerator.HandleSplitRequest(subtask)
}

// CheckpointCoordinator closes the tracker's bucket for checkpointID and returns the
// enumerator's state (see the package doc for the JSON); an enumerator's error declines the
// checkpoint.
func (c *SourceCoordinator) CheckpointCoordinator(checkpointID int64, result func(state []byte, err error)) {
	c.tracker.OnCheckpoint(checkpointID)
	st, err := c.enumerator.SnapshotState(checkpointID)
	if err != nil {
		result(nil, fmt.Errorf("source: snapshotting the split enumerator of vertex %s for checkpoint %d: %w", c.ctx.VertexID(), checkpointID, err))
		return
	}
	b, err := json.Marshal(coordinatorState{Version: stateVersion, Enumerator: st})
	result(b, err)
}

// NotifyCheckpointComplete drops the tracker's assignments up to checkpointID and tells the
// enumerator; its error fails the job.
func (c *SourceCoordinator) NotifyCheckpointComplete(checkpointID int64) {
	c.tracker.OnCheckpointComplete(checkpointID)
	if err := c.enumerator.NotifyCheckpointComplete(checkpointID); err != nil {
		c.ctx.FailJob(fmt.Errorf("source: split enumerator of vertex %s: checkpoint %d complete: %w", c.ctx.VertexID(), checkpointID, err))
	}
}

// NotifyCheckpointAborted keeps the checkpoint's assignments: a reset to an earlier checkpoint
// still returns them.
func (c *SourceCoordinator) NotifyCheckpointAborted(int64) {}

// ResetToCheckpoint replaces the enumerator by one the factory restores from state (nil state:
// a fresh one) and forgets every assignment: every reader restores the same checkpoint. Before
// Start it only keeps the state for Start. State that is not the coordinator's JSON is an error
// wrapping ErrInvalidState, and nothing changes.
func (c *SourceCoordinator) ResetToCheckpoint(checkpointID int64, state []byte) error {
	var restored []byte
	if state != nil {
		var st coordinatorState
		if err := json.Unmarshal(state, &st); err != nil {
			return fmt.Errorf("%w of vertex %s in checkpoint %d: %v", ErrInvalidState, c.ctx.VertexID(), checkpointID, err)
		}
		if st.Version != stateVersion {
			return fmt.Errorf("%w of vertex %s in checkpoint %d: version %d, want %d", ErrInvalidState, c.ctx.VertexID(), checkpointID, st.Version, stateVersion)
		}
		restored = st.Enumerator
	}
	if !c.started {
		c.restored = restored
		return nil
	}
	c.tracker.Reset()
	clear(c.pending)
	if err := c.enumerator.Close(); err != nil {
		return fmt.Errorf("source: closing the split enumerator of vertex %s for a reset: %w", c.ctx.VertexID(), err)
	}
	return c.createEnumerator(restored)
}

// SubtaskReset hands the splits given to subtask after checkpointID back to the enumerator
// (AddSplitsBack), in the order they were given, and drops its request waiting for a gateway.
func (c *SourceCoordinator) SubtaskReset(subtask int, checkpointID int64) error {
	delete(c.pending, subtask)
	back := c.tracker.GetAndRemoveUncheckpointedAssignment(subtask, checkpointID)
	if len(back) == 0 || c.enumerator == nil {
		return nil
	}
	return c.enumerator.AddSplitsBack(back, subtask)
}

// ExecutionAttemptFailed unregisters the attempt's reader.
func (c *SourceCoordinator) ExecutionAttemptFailed(subtask, attempt int, _ error) error {
	if gw := c.gateways[subtask]; gw != nil && gw.Attempt() == attempt {
		delete(c.gateways, subtask)
	}
	if a, ok := c.pending[subtask]; ok && a == attempt {
		delete(c.pending, subtask)
	}
	return nil
}

// ExecutionAttemptReady registers the attempt's reader (SplitEnumerator.AddReader) and hands the
// enumerator the attempt's request that waited for it.
func (c *SourceCoordinator) ExecutionAttemptReady(subtask, attempt int, gateway coordination.SubtaskGateway) error {
	if gateway == nil {
		return fmt.Errorf("source: ExecutionAttemptReady of subtask %d attempt %d without a gateway", subtask, attempt)
	}
	c.gateways[subtask] = gateway
	if c.enumerator == nil {
		return nil
	}
	if err := c.enumerator.AddReader(subtask); err != nil {
		return err
	}
	if a, ok := c.pending[subtask]; ok {
		delete(c.pending, subtask)
		if a == attempt {
			return c.enumerator.HandleSplitRequest(subtask)
		}
	}
	return nil
}

// enumeratorContext is one enumerator's SplitEnumeratorContext; dead once that enumerator was
// replaced or the coordinator closed (only read and written on the loop).
type enumeratorContext struct {
	c    *SourceCoordinator
	dead bool
}

func (e *enumeratorContext) CurrentParallelism() int { return e.c.ctx.CurrentParallelism() }
func (e *enumeratorContext) Config() []byte          { return e.c.ctx.Config() }

func (e *enumeratorContext) RegisteredReaders() map[int]int {
	out := make(map[int]int, len(e.c.gateways))
	for s, gw := range e.c.gateways {
		out[s] = gw.Attempt()
	}
	return out
}

func (e *enumeratorContext) gateway(subtask int) (coordination.SubtaskGateway, error) {
	if e.dead {
		return nil, errors.New("source: the split enumerator was replaced or closed")
	}
	gw := e.c.gateways[subtask]
	if gw == nil {
		return nil, fmt.Errorf("source: subtask %d of vertex %s has no registered reader", subtask, e.c.ctx.VertexID())
	}
	return gw, nil
}

func (e *enumeratorContext) AssignSplits(subtask int, splits ...Split) error {
	if len(splits) == 0 {
		return fmt.Errorf("source: assigning no splits to subtask %d", subtask)
	}
	for i, s := range splits {
		if s.ID == "" {
			return fmt.Errorf("source: assigning split %d with an empty ID to subtask %d", i, subtask)
		}
	}
	gw, err := e.gateway(subtask)
	if err != nil {
		return err
	}
	splits = slices.Clone(splits)
	e.c.tracker.RecordSplitAssignment(subtask, splits...)
	// A lost event is the runtime's to repair: the Holder fails the attempt it could not reach
	// (Flink's SubtaskGatewayImpl triggers a task failover), and its SubtaskReset returns the
	// splits recorded above.
	gw.SendEvent(encodeEvent(event{Type: eventAddSplits, Splits: splits}), nil)
	return nil
}

func (e *enumeratorContext) SignalNoMoreSplits(subtask int) error {
	gw, err := e.gateway(subtask)
	if err != nil {
		return err
	}
	gw.SendEvent(encodeEvent(event{Type: eventNoMoreSplits}), nil)
	return nil
}

func (e *enumeratorContext) RunInCoordinatorThread(fn func()) {
	e.c.ctx.RunInMainThread(func() {
		if e.dead {
			return
		}
		fn()
	})
}
