package taskexecutor

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/metrics"
	"github.com/jobgraph/jobgraph/rpc"
)

// ShuffleEnvironment is the TaskExecutor's side of a shuffle service: it creates the writers and
// readers of a task from the task's deployment descriptor, and releases the partitions the
// TaskExecutor holds. Config.Shuffle takes one; the default is the in-memory *Shuffle, which
// TaskExecutors of one process share. Flink: org.apache.flink.runtime.shuffle.ShuffleEnvironment
// (createResultPartitionWriters, createInputGates, releasePartitionsLocally).
//
// The TaskExecutor calls CreateResultPartitionWriters and CreateInputGates from the task's
// goroutine, the others from its main loop; an implementation must be safe for concurrent use.
//
// The JobMaster's side is scheduler.ShuffleMaster (jobmaster.Config.ShuffleMaster): it describes
// each partition when its producer is deployed, and the descriptors arrive here in the
// deployment descriptors (rpc.ResultPartitionDeploymentDescriptor.ShuffleDescriptor,
// rpc.InputGateDeploymentDescriptor.ShuffleDescriptors). The in-memory shuffle needs none: its
// partitions are found by ResultPartitionID alone, and with no ShuffleMaster the descriptors are
// nil.
type ShuffleEnvironment interface {
	// CreateResultPartitionWriters registers the task of owner as the producer of the partitions
	// descs name and returns their writers, in order. On an error it fails the writers it
	// created and returns an error naming the output ("output i: …").
	CreateResultPartitionWriters(owner ShuffleIOOwnerContext, descs []rpc.ResultPartitionDeploymentDescriptor) ([]ShuffleWriter, error)
	// CreateInputGates attaches the readers descs name and returns them, in order. A reader may
	// attach before its producers registered. On an error it closes the readers it created and
	// returns an error naming the input ("input i: …").
	CreateInputGates(owner ShuffleIOOwnerContext, descs []rpc.InputGateDeploymentDescriptor) ([]ShuffleReader, error)
	// FailPartitions marks the partitions descs name failed with cause (errors.Is
	// ErrProducerFailed for their readers): the task failed before or while creating its
	// writers.
	FailPartitions(owner ShuffleIOOwnerContext, descs []rpc.ResultPartitionDeploymentDescriptor, cause error)
	// ReleasePartitionsLocally drops the partitions named (readers get ErrPartitionReleased);
	// unknown IDs are ignored.
	ReleasePartitionsLocally(ids ...rpc.ResultPartitionID)
	// ReleaseJobPartitions forgets the partitions of job produced on the TaskExecutor producer,
	// except finished BLOCKING_PERSISTENT ones: the job's JobMaster disconnected.
	ReleaseJobPartitions(job jobgraph.JobID, producer jobgraph.ResourceID)
	// ReleaseAllOf forgets every partition produced on producer (readers get ErrPartitionLost)
	// and returns their IDs: the TaskExecutor is gone.
	ReleaseAllOf(producer jobgraph.ResourceID) []rpc.ResultPartitionID
}

// ShuffleIOOwnerContext is the task a ShuffleEnvironment creates writers and readers for.
// Flink: org.apache.flink.runtime.shuffle.ShuffleIOOwnerContext.
type ShuffleIOOwnerContext struct {
	JobID    jobgraph.JobID
	TaskName string
	// TaskExecutor is where the task runs: the producer location of its partitions.
	TaskExecutor jobgraph.ResourceID
	// Stop tells the task's writers and readers that the task was stopped: from then on every
	// Emit, Broadcast, Next and Poll fails with Stop.Err() (see Invokable).
	Stop *TaskStop
	// Wake, if not nil, gets a token (a send that never blocks) whenever one of the task's
	// readers may have data: NextAny waits on it.
	Wake chan struct{}
	// BeforeWait, if not nil, runs before a reader waits for data: the task hands over what it
	// wrote to its own outputs.
	BeforeWait func()
	// BackPressure, if not nil, is the task's backPressuredTimeMsPerSecond: a writer brackets
	// every wait for room (Emit, Broadcast, BroadcastBarrier, Finish) with its MarkStart and
	// MarkEnd, and calls neither while it does not wait. Flink: TaskIOMetricGroup's
	// backPressuredTimePerSecond, measured where a buffer request blocks.
	BackPressure *metrics.TimerGauge
}

// ShuffleWriter is a ResultPartitionWriter as the TaskExecutor drives it. Used only from the
// task's goroutine. Flink: ResultPartitionWriter's finish, fail and flushAll.
type ShuffleWriter interface {
	ResultPartitionWriter
	// FlushIdle hands over every partial batch that can go without waiting.
	FlushIdle()
	// Finish hands over what is left and marks the partition finished; it may wait for room
	// until ctx ends. It returns the partition's error when the partition failed or was released.
	Finish(ctx context.Context) error
	// Fail marks the partition failed: its readers get ErrProducerFailed wrapping cause.
	Fail(cause error)
	// BroadcastBarrier appends barrier b to every subpartition, after every record emitted
	// before it (partial batches are handed over first); it may wait for room as Emit does. A
	// partition that carries no barriers (blocking, hybrid) ignores it. b must not be changed
	// afterwards: readers get the same pointer. Flink: ResultPartitionWriter.broadcastEvent
	// with a CheckpointBarrier.
	BroadcastBarrier(ctx context.Context, b *CheckpointBarrier) error
}

// ShuffleReader is an InputGate as the TaskExecutor drives it (NextAny reads through it). Used
// only from the task's goroutine. Flink: IndexedInputGate's pollNext and close.
type ShuffleReader interface {
	InputGate
	// Buffered returns the next record of the batch at hand, without taking another batch.
	Buffered() (record any, ok bool)
	// Poll returns the next record without waiting (ok), or io.EOF once the input ended, the
	// sticky error of a failed input, or nil when nothing is there now.
	//
	// A checkpoint barrier comes out of Poll (and Next) as a record of type *CheckpointBarrier,
	// in its place in the record stream of the channel (producer partition) that sent it; the
	// Environment consumes it, task code never sees one. From then on the reader aligns (Flink's
	// aligned checkpoints): it holds back what that channel sends until ResumeAlignment, and
	// hands out the other channels' records. It drops a barrier of a checkpoint it aligned or
	// resumed already; a barrier of a newer checkpoint than the one it aligns resumes the older
	// alignment and starts the newer.
	Poll() (record any, ok bool, err error)
	// Aligned reports whether the reader's alignment of checkpoint id is complete: it took the
	// barrier of id from every channel that has not ended, and nothing is left to hand out of
	// the channels that ended without one. A reader whose channels carry no barriers (blocking,
	// hybrid), one that ended and one that failed are always aligned.
	Aligned(id checkpoint.CheckpointID) bool
	// ProducersFinished reports whether every partition the reader reads has finished: what it
	// still has to hand out is all there will be.
	ProducersFinished() bool
	// ResumeAlignment ends the alignment of every checkpoint up to id: the blocked channels go
	// on, what was held back first, in order; barriers of those checkpoints that come later
	// are dropped.
	ResumeAlignment(id checkpoint.CheckpointID)
	// SetWaiting says whether the task waits for this reader's data, so that its writers hand
	// over partial batches at once (true) or gather full ones again (false).
	SetWaiting(waiting bool)
	// Close detaches the reader. Idempotent.
	Close()
}

// TaskStop is how the writers and readers of a task learn that the task was stopped (canceled,
// failed from outside, or its TaskExecutor is closing), so that every call of the task API that
// waits, or that a task may loop on, fails from then on — whatever ctx the task passes, and even
// when the call would neither wait nor fail otherwise (an Emit into a subpartition whose reader
// went away, a Next with records at hand). Flink gets the same from interrupting the task thread
// and from releasing the task's network resources (Task.TaskCanceler). Safe for concurrent use.
type TaskStop struct {
	ctx    context.Context // the task's context
	cancel context.CancelCauseFunc
	// stopped is set by stop just before ctx is canceled, so a task that sees ctx canceled
	// never gets nil from its next call: one atomic load per call is all the hot paths pay.
	// When ctx ends otherwise (its TaskExecutor is closing or was killed) the calls see it at
	// their next batch or wait (Check).
	stopped atomic.Bool
}

// notStopped is the signal of gates and writers that belong to no task (in tests).
var notStopped = &TaskStop{ctx: context.Background(), cancel: func(error) {}}

// NewTaskStop returns the stop signal of one task, to put in ShuffleIOOwnerContext.Stop, and the
// function that stops it. Its Context is a child of parent (so it also ends when parent does);
// calling stop with a reason, from any goroutine and any number of times (the first reason
// wins), cancels that context with the reason as its cause and makes Err return
// context.Canceled, so that the task's writers and readers fail every call from then on and
// return from the waits they are in. The TaskExecutor makes one per task itself; this is for
// whoever drives a ShuffleEnvironment without a TaskExecutor: a shuffle's own tests and the
// conformance suite taskexecutor/shuffletest. Flink: the interruption of the task thread by
// Task.TaskCanceler, which wakes the task in its blocking buffer requests and reads.
func NewTaskStop(parent context.Context) (s *TaskStop, stop func(reason error)) {
	s = newTaskStop(parent)
	return s, s.stop
}

func newTaskStop(parent context.Context) *TaskStop {
	ctx, cancel := context.WithCancelCause(parent)
	return &TaskStop{ctx: ctx, cancel: cancel}
}

// stop cancels the task's context with why (the first reason wins) and tells its gates and
// writers. Safe anywhere.
func (s *TaskStop) stop(why error) {
	s.stopped.Store(true)
	s.cancel(why)
}

// Context is the task's context: Done once the task is stopped or its TaskExecutor closes.
func (s *TaskStop) Context() context.Context { return s.ctx }

// Err is context.Canceled — what the task's context's Err returns once canceled — once the task
// was stopped, else nil: one atomic load. Every call of the task API checks it first.
func (s *TaskStop) Err() error {
	if s.stopped.Load() {
		return context.Canceled
	}
	return nil
}

// Check returns the task's context's error, or ctx's, once either has ended: the test a call
// makes once per batch and before it waits.
func (s *TaskStop) Check(ctx context.Context) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	return ctx.Err()
}

// The in-memory Shuffle is a ShuffleEnvironment.
var (
	_ ShuffleEnvironment = (*Shuffle)(nil)
	_ ShuffleWriter      = (*partitionWriter)(nil)
	_ ShuffleReader      = (*inputGate)(nil)
)

// CreateResultPartitionWriters implements ShuffleEnvironment: O(1) per partition; a writer
// allocates per-subpartition state only for the subpartitions it writes to.
func (s *Shuffle) CreateResultPartitionWriters(owner ShuffleIOOwnerContext, descs []rpc.ResultPartitionDeploymentDescriptor) ([]ShuffleWriter, error) {
	out := make([]ShuffleWriter, 0, len(descs))
	for i, d := range descs {
		w, err := s.newWriter(owner.JobID, owner.TaskExecutor, d)
		if err != nil {
			for _, w := range out {
				w.Fail(err)
			}
			return nil, fmt.Errorf("output %d: %w", i, err)
		}
		if owner.Stop != nil {
			w.stop = owner.Stop
		}
		w.backPressure = owner.BackPressure
		out = append(out, w)
	}
	return out, nil
}

// CreateInputGates implements ShuffleEnvironment: O(1) per gate whose partition list another
// attached gate shares (the scheduler shares one per ConsumedPartitionGroup), else O(partitions).
func (s *Shuffle) CreateInputGates(owner ShuffleIOOwnerContext, descs []rpc.InputGateDeploymentDescriptor) ([]ShuffleReader, error) {
	out := make([]ShuffleReader, 0, len(descs))
	for i, d := range descs {
		g, err := s.openGate(owner.JobID, d, owner.Wake)
		if err != nil {
			for _, g := range out {
				g.Close()
			}
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
		g.beforeWait = owner.BeforeWait
		if owner.Stop != nil {
			g.stop = owner.Stop
		}
		out = append(out, g)
	}
	return out, nil
}

// FailPartitions implements ShuffleEnvironment.
func (s *Shuffle) FailPartitions(owner ShuffleIOOwnerContext, descs []rpc.ResultPartitionDeploymentDescriptor, cause error) {
	s.failProduced(owner.JobID, owner.TaskExecutor, descs, cause)
}

// ReleasePartitionsLocally implements ShuffleEnvironment: ReleasePartitions.
func (s *Shuffle) ReleasePartitionsLocally(ids ...rpc.ResultPartitionID) { s.ReleasePartitions(ids...) }

// ReleaseJobPartitions implements ShuffleEnvironment.
func (s *Shuffle) ReleaseJobPartitions(job jobgraph.JobID, producer jobgraph.ResourceID) {
	s.releaseJob(job, producer)
}

func (w *partitionWriter) FlushIdle()                       { w.flushIdle() }
func (w *partitionWriter) Finish(ctx context.Context) error { return w.finish(ctx) }
func (w *partitionWriter) Fail(cause error)                 { w.fail(cause) }

func (g *inputGate) Buffered() (any, bool) {
	if g.pos < len(g.cur) {
		r := g.cur[g.pos]
		g.pos++
		return r, true
	}
	return nil, false
}

func (g *inputGate) Poll() (any, bool, error) {
	if err := g.stop.Err(); err != nil {
		return nil, false, err
	}
	return g.poll()
}

func (g *inputGate) SetWaiting(waiting bool) { g.hungry.Store(waiting) }
func (g *inputGate) Close()                  { g.close() }
