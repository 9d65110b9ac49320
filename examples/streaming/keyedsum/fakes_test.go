package keyedsum

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// barrier is a checkpoint barrier in a fake stream; stop marks the stop-with-savepoint one.
type barrier struct {
	id   checkpoint.CheckpointID
	stop bool
}

// confirm and abort in a fake gate's items hand a checkpoint's confirmation or abort to the
// task's handler there; a func() item runs there (to look at the task's effects mid-stream).
type (
	confirm struct{ id checkpoint.CheckpointID }
	abort   struct{ id checkpoint.CheckpointID }
)

// coordinator counts the acknowledgements of every checkpoint, as the JobMaster's would: a
// checkpoint is complete once need tasks acknowledged it; confirmed is the latest complete one.
type coordinator struct {
	mu        sync.Mutex
	need      int
	acks      map[checkpoint.CheckpointID]int
	confirmed checkpoint.CheckpointID
	changed   chan struct{}
}

func newCoordinator(need int) *coordinator {
	return &coordinator{need: need, acks: map[checkpoint.CheckpointID]int{}, changed: make(chan struct{})}
}

func (c *coordinator) ack(id checkpoint.CheckpointID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acks[id]++
	if c.acks[id] == c.need && id > c.confirmed {
		c.confirmed = id
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

func (c *coordinator) latest() (checkpoint.CheckpointID, chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.confirmed, c.changed
}

// fakeEnv is a taskexecutor.Environment that plays the task side of checkpoints as
// taskexecutor.CheckpointHandler describes it: its writers snapshot before chosen emits
// (sources), its gate snapshots at each barrier and forwards the barrier to the outputs; the
// gate hands over the coordinator's confirmations, and at its end waits for the last
// acknowledged checkpoint's confirmation (FLIP-147) when waitAtEnd.
type fakeEnv struct {
	info    taskexecutor.TaskInfo
	gate    *fakeGate
	outputs []*fakeWriter
	accs    *taskexecutor.AccumulatorRegistry
	coord   *coordinator

	handler   taskexecutor.CheckpointHandler
	restoreID checkpoint.CheckpointID
	restore   *checkpoint.StateHandle

	// waitForConfirm: the env waits for the coordinator's confirmation of a stop-with-savepoint
	// and, at the gate's end, of the last checkpoint acknowledged (FLIP-147), as a sink's must.
	waitForConfirm bool

	snapshots map[checkpoint.CheckpointID]checkpoint.StateHandle
	acked     checkpoint.CheckpointID // the last checkpoint acknowledged
	notified  checkpoint.CheckpointID // the last confirmation handed to the handler
	stopped   bool
}

func newFakeEnv(info taskexecutor.TaskInfo) *fakeEnv {
	return &fakeEnv{info: info, snapshots: map[checkpoint.CheckpointID]checkpoint.StateHandle{}, accs: taskexecutor.NewAccumulatorRegistry()}
}

func (e *fakeEnv) Info() taskexecutor.TaskInfo { return e.info }
func (e *fakeEnv) NumInputs() int {
	if e.gate == nil {
		return 0
	}
	return 1
}
func (e *fakeEnv) Input(int) taskexecutor.InputGate                       { return e.gate }
func (e *fakeEnv) NumOutputs() int                                        { return len(e.outputs) }
func (e *fakeEnv) Output(i int) taskexecutor.ResultPartitionWriter        { return e.outputs[i] }
func (e *fakeEnv) AccumulatorRegistry() *taskexecutor.AccumulatorRegistry { return e.accs }
func (e *fakeEnv) SetCheckpointHandler(h taskexecutor.CheckpointHandler)  { e.handler = h }
func (e *fakeEnv) RestoredState() (checkpoint.CheckpointID, checkpoint.StateHandle, bool) {
	if e.restore == nil {
		return 0, checkpoint.StateHandle{}, false
	}
	return e.restoreID, *e.restore, true
}

// The operator-event methods: this fake's vertex has no operator coordinator.
func (e *fakeEnv) SetOperatorEventHandler(taskexecutor.OperatorEventHandler) {}
func (e *fakeEnv) SendEventToCoordinator([]byte) error {
	return taskexecutor.ErrNoOperatorCoordinator
}
func (e *fakeEnv) Yield(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

// checkpoint snapshots the task, acknowledges, and sends the barrier down every output.
func (e *fakeEnv) checkpoint(ctx context.Context, b barrier) error {
	if e.handler == nil {
		return fmt.Errorf("%s: no checkpoint handler", e.info.TaskName)
	}
	st, err := e.handler.SnapshotState(ctx, b.id)
	if err != nil {
		return err
	}
	e.snapshots[b.id] = st
	e.acked = b.id
	if e.coord != nil {
		e.coord.ack(b.id)
	}
	for _, w := range e.outputs {
		for s := range w.subs {
			w.subs[s] = append(w.subs[s], b)
		}
	}
	if b.stop {
		// The task sends and processes nothing more until the savepoint is confirmed. A task
		// whose notification has effects (the sink) waits for the coordinator; the others'
		// notifications do nothing, so the fakes, which run them before their consumers, run
		// them at once.
		if e.waitForConfirm {
			if err := e.awaitConfirmed(ctx, b.id); err != nil {
				return err
			}
		}
		e.notified = b.id
		if err := e.handler.NotifyCheckpointComplete(ctx, b.id); err != nil {
			return err
		}
		e.stopped = true
	}
	return nil
}

// awaitConfirmed waits until the coordinator confirmed id or a later checkpoint.
func (e *fakeEnv) awaitConfirmed(ctx context.Context, id checkpoint.CheckpointID) error {
	for {
		c, changed := e.coord.latest()
		if c >= id {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// deliver hands the latest confirmation over, if there is a new one.
func (e *fakeEnv) deliver(ctx context.Context) error {
	if e.coord == nil {
		return nil
	}
	if c, _ := e.coord.latest(); c > e.notified && e.acked > e.notified {
		e.notified = c
		return e.handler.NotifyCheckpointComplete(ctx, c)
	}
	return nil
}

// fakeWriter records every record and barrier by subpartition. Before emit number n (0-based)
// it takes checkpoint triggers[n]; a non-zero stopOnIdle is the savepoint a stop-with-savepoint
// takes at the first Idle record.
type fakeWriter struct {
	env        *fakeEnv
	subs       [][]any
	emits      int
	triggers   map[int]checkpoint.CheckpointID
	stopOnIdle checkpoint.CheckpointID
}

func newFakeWriter(env *fakeEnv, n int) *fakeWriter {
	w := &fakeWriter{env: env, subs: make([][]any, n)}
	env.outputs = append(env.outputs, w)
	return w
}

func (w *fakeWriter) NumSubpartitions() int { return len(w.subs) }

func (w *fakeWriter) Emit(ctx context.Context, s int, record any) error {
	if w.env.stopped {
		return taskexecutor.ErrStopped
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s < 0 || s >= len(w.subs) {
		return fmt.Errorf("subpartition %d out of [0, %d)", s, len(w.subs))
	}
	if id, ok := w.triggers[w.emits]; ok && w.env.info.CheckpointingEnabled {
		if err := w.env.checkpoint(ctx, barrier{id: id}); err != nil {
			return err
		}
	}
	if _, idle := record.(Idle); idle && w.stopOnIdle > 0 {
		if err := w.takeRemaining(ctx); err != nil {
			return err
		}
		if err := w.env.checkpoint(ctx, barrier{id: w.stopOnIdle, stop: true}); err != nil {
			return err
		}
		return taskexecutor.ErrStopped
	}
	w.subs[s] = append(w.subs[s], record)
	w.emits++
	return nil
}

// takeRemaining takes the checkpoints triggered after the emits done so far, in order: a
// source that ended (or paused) still takes part in them.
func (w *fakeWriter) takeRemaining(ctx context.Context) error {
	for _, n := range slices.Sorted(maps.Keys(w.triggers)) {
		if n >= w.emits {
			if err := w.env.checkpoint(ctx, barrier{id: w.triggers[n]}); err != nil {
				return err
			}
			delete(w.triggers, n)
		}
	}
	return nil
}

func (w *fakeWriter) Broadcast(ctx context.Context, record any) error {
	for s := range w.subs {
		if err := w.Emit(ctx, s, record); err != nil {
			return err
		}
	}
	return nil
}

// records is subpartition s without the barriers.
func (w *fakeWriter) records(s int) []any {
	var out []any
	for _, r := range w.subs[s] {
		if _, ok := r.(barrier); !ok {
			out = append(out, r)
		}
	}
	return out
}

// fakeGate hands out items (records and barriers) in order. At its end it returns
// context.Canceled when canceled (an upstream task failed: the task would be canceled), else
// io.EOF — once the last acknowledged checkpoint is confirmed, when the env waitForConfirm.
type fakeGate struct {
	env      *fakeEnv
	items    []any
	canceled bool
}

func (g *fakeGate) Next(ctx context.Context) (any, error) {
	e := g.env
	for {
		if e.stopped {
			return nil, taskexecutor.ErrStopped
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := e.deliver(ctx); err != nil {
			return nil, err
		}
		if len(g.items) == 0 {
			if g.canceled {
				return nil, context.Canceled
			}
			if e.waitForConfirm && e.acked > 0 {
				if err := e.awaitConfirmed(ctx, e.acked); err != nil {
					return nil, err
				}
				if err := e.deliver(ctx); err != nil {
					return nil, err
				}
			}
			return nil, io.EOF
		}
		it := g.items[0]
		g.items = g.items[1:]
		switch ev := it.(type) {
		case confirm:
			e.notified = ev.id
			if err := e.handler.NotifyCheckpointComplete(ctx, ev.id); err != nil {
				return nil, err
			}
			continue
		case abort:
			e.handler.NotifyCheckpointAborted(ctx, ev.id)
			continue
		case func():
			ev()
			continue
		}
		if b, ok := it.(barrier); ok {
			if err := e.checkpoint(ctx, b); err != nil {
				return nil, err
			}
			if e.waitForConfirm && !b.stop {
				// Lock step: the sinks go on once every task took the checkpoint, so which
				// checkpoints completed before a failure does not depend on scheduling.
				if err := e.awaitConfirmed(ctx, b.id); err != nil {
					return nil, err
				}
			}
			continue
		}
		return it, nil
	}
}

// alignedMerge is what an aligned gate reading streams (one per producer, each with barriers
// 1, 2, … in the same order) hands out: epoch by epoch, every producer's records before barrier
// c, then barrier c once. A stream that ends before a barrier the others have (its producer
// failed) ends the merge there: records after that barrier on the other streams are held back
// forever. complete says whether every stream was read to its end.
func alignedMerge(streams [][]any) (items []any, complete bool) {
	pos := make([]int, len(streams))
	for {
		var next *barrier
		ended := 0
		for k, s := range streams {
			for pos[k] < len(s) {
				if b, ok := s[pos[k]].(barrier); ok {
					if next != nil && *next != b {
						panic(fmt.Sprintf("streams disagree on the next barrier: %v and %v", *next, b))
					}
					next = &b
					break
				}
				items = append(items, s[pos[k]])
				pos[k]++
			}
			if pos[k] == len(s) {
				ended++
			}
		}
		switch {
		case ended == len(streams):
			return items, true
		case ended > 0:
			return items, false
		}
		items = append(items, *next)
		for k := range pos {
			pos[k]++
		}
	}
}

func taskInfo(g *jobgraph.JobGraph, v *jobgraph.JobVertex, subtask, parallelism, attempt int, checkpointing bool) taskexecutor.TaskInfo {
	return taskexecutor.TaskInfo{
		JobID:                g.JobID,
		ExecutionAttemptID:   jobgraph.ExecutionAttemptID{ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: v.ID, Subtask: subtask}, AttemptNumber: attempt},
		TaskName:             fmt.Sprintf("%s (%d/%d)", v.Name, subtask+1, parallelism),
		VertexName:           v.Name,
		SubtaskIndex:         subtask,
		Parallelism:          parallelism,
		MaxParallelism:       v.EffectiveMaxParallelism(),
		AttemptNumber:        attempt,
		Config:               v.Config,
		CheckpointingEnabled: checkpointing,
	}
}
