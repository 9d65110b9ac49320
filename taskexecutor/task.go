package taskexecutor

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
)

// Invokable is task code: what one subtask of a JobVertex runs. It reads its inputs and writes its
// outputs through env, by index (JobVertex.Inputs and JobVertex.Results order). It returns nil
// when done — the TaskExecutor then finishes its output partitions and reports FINISHED — or an
// error to fail the execution (reported FAILED with that error). It must return promptly once ctx
// is canceled (CancelTask); the TaskExecutor reports CANCELED when it has returned.
// Flink: org.apache.flink.runtime.jobgraph.tasks.AbstractInvokable.invoke.
//
// Once the task is stopped (canceled, failed from outside, or its TaskExecutor closing), every
// call of the task API that waits or that task code may loop on — InputGate.Next,
// AnyInputReader.NextAny, ResultPartitionWriter.Emit and Broadcast — returns ctx's error
// (context.Canceled), whatever context it is given and whatever the task's readers do: a task
// that loops until one of them fails always ends. After CancelTask, the first such call fails.
// Task code that waits on anything else must watch ctx itself; one that has not returned
// task.cancellation.timeout after its cancellation makes its TaskExecutor fail fatally (see
// Config.TaskCancellationTimeout).
type Invokable func(ctx context.Context, env Environment) error

// Environment is what a running task sees of the world. Flink: org.apache.flink.runtime.execution.Environment.
// Its methods are called only from the task's own goroutine.
//
// The Environment the TaskExecutor gives a task also implements AnyInputReader: a task with
// several inputs reads whichever has data first with env.(AnyInputReader).NextAny.
type Environment interface {
	// Info describes the task.
	Info() TaskInfo
	// NumInputs is the number of input gates, one per JobEdge into the vertex.
	NumInputs() int
	// Input returns input gate i, 0 ≤ i < NumInputs().
	Input(i int) InputGate
	// NumOutputs is the number of produced partitions, one per IntermediateDataSet of the vertex.
	NumOutputs() int
	// Output returns output i, 0 ≤ i < NumOutputs().
	Output(i int) ResultPartitionWriter
	// AccumulatorRegistry holds the task's accumulators (see AccumulatorRegistry); the same one
	// on every call. Unlike the other methods it is safe to use from any goroutine.
	AccumulatorRegistry() *AccumulatorRegistry
	// SetCheckpointHandler registers the task's snapshot and notification hooks (see
	// CheckpointHandler); call it before the first read or write. A second call replaces the
	// first. Only meaningful when the job takes checkpoints (TaskInfo.CheckpointingEnabled) or
	// savepoints (every streaming job: its handler is called for savepoints and manual
	// checkpoints even without periodic checkpoints).
	SetCheckpointHandler(h CheckpointHandler)
	// RestoredState is the state this attempt starts from and the checkpoint or savepoint it
	// comes from; ok is false on a fresh start. The state is the subtask's share, already
	// redistributed to this attempt's subtask index and parallelism. ok is true for every task
	// of a job restored from a snapshot, also one whose share is empty (a vertex the snapshot
	// had no state for, or a rescaled subtask that got no element): check state.IsEmpty().
	// Flink: StateInitializationContext.isRestored (true for every operator of a restored job)
	// and getRestoredCheckpointId.
	RestoredState() (id checkpoint.CheckpointID, state checkpoint.StateHandle, ok bool)
	// SetOperatorEventHandler registers h for the events of the vertex's operator coordinator
	// (see jobgraph.JobVertex.OperatorCoordinator); a second call replaces the first. Events
	// that arrive before it are kept, in order, and handed to h once it is set. h runs on the
	// task's goroutine inside its next read (Next, NextAny), write (Emit, Broadcast) or Yield,
	// or while a read or Yield waits, in the order the events arrived and in order with the
	// checkpoint mail (triggers, confirmations, aborts) the TaskExecutor got between them; a
	// write that waits for room (back-pressure) runs no mail until it returns, as with
	// checkpoint triggers. h's error fails the task and is what the coordinator's send hears
	// (the read, write or Yield it ran inside returns it too). Flink:
	// OperatorEventDispatcher.registerEventHandler, whose mailbox also runs while the task is
	// back-pressured.
	SetOperatorEventHandler(h OperatorEventHandler)
	// SendEventToCoordinator sends event to the vertex's operator coordinator without waiting;
	// the events of one attempt arrive in the order sent, after the task's earlier checkpoint
	// acknowledgements and before its final state. event is copied. It returns an error
	// wrapping ErrNoOperatorCoordinator (rpc.ErrNoOperatorCoordinator) when the vertex has no
	// coordinator (rpc.TaskDeploymentDescriptor.HasOperatorCoordinator), and the task's stop
	// error once it is stopped. A delivery that fails later, for any reason other than the
	// JobMaster no longer counting this attempt as running (rpc.ErrTaskNotRunning: the event is
	// dropped), fails the task. Flink: OperatorEventGateway.sendEventToCoordinator through
	// RpcTaskOperatorEventGateway.
	SendEventToCoordinator(event []byte) error
	// Yield runs the mail queued for the task — operator events, checkpoint triggers,
	// confirmations and aborts — and, if there was none, waits until some arrives and runs it;
	// before it waits it hands over what the task wrote, as a read does. It returns nil after
	// running at least one mail, ctx's error if ctx ends first, the task's stop error once it is
	// stopped (context.Canceled, see Invokable), ErrStopped once a stop-with-savepoint
	// savepoint was confirmed, or the error of a mail it ran (a handler's). A task with nothing
	// to read or emit (a source reader waiting for its next split) waits here. Flink:
	// MailboxExecutor.yield.
	Yield(ctx context.Context) error
}

// TaskInfo describes one execution attempt. Flink: org.apache.flink.api.common.TaskInfo.
type TaskInfo struct {
	JobID              jobgraph.JobID
	ExecutionAttemptID jobgraph.ExecutionAttemptID
	// TaskName is "<vertex name> (<subtask+1>/<parallelism>)".
	TaskName       string
	VertexName     string
	SubtaskIndex   int
	Parallelism    int
	MaxParallelism int
	AttemptNumber  int
	// Config is the JobVertex's opaque config.
	Config []byte
	// CheckpointingEnabled says the job takes periodic checkpoints (rpc.TaskDeploymentDescriptor's
	// CheckpointingEnabled): the task's CheckpointHandler, if any, is called, and a finished
	// source takes part in a final checkpoint. A streaming job without it still has its
	// handlers called for savepoints and manual checkpoints (the descriptor's
	// HasCheckpointCoordinator).
	CheckpointingEnabled bool
}

// InputGate reads every partition of one input (the subpartition meant for this subtask of each),
// in arrival order. Flink: org.apache.flink.runtime.io.network.partition.consumer.InputGate.
type InputGate interface {
	// Next returns the next record, io.EOF once every partition has ended, or an error when a
	// producer failed or its partition was released or lost. Once the task is stopped it
	// returns the task's context's error, records at hand or not (see Invokable); when the ctx
	// given ends it returns ctx's error at the latest before it takes the next batch or waits.
	//
	// Before it waits for data, it hands over what the task wrote to its own outputs so far.
	// Waiting on one input while another has data can hang a task with several pipelined
	// inputs; such a task reads with AnyInputReader.NextAny instead.
	Next(ctx context.Context) (any, error)
}

// AnyInputReader reads whichever input of a task has data first. The Environment the
// TaskExecutor gives a task implements it:
//
//	in, ok := env.(taskexecutor.AnyInputReader)
//
// Flink: StreamMultipleInputProcessor with InputSelection.ALL ("read any available input").
//
// A task with several inputs reads them this way. Reading one input after the other, or taking
// turns one record at a time, can hang once more records are in flight than the shuffle buffers
// whenever two pipelined inputs are fed by one upstream vertex, directly or not (a diamond
// A→B→D, A→D): the task waits on one input while the upstream is blocked on the full queue of
// the other.
type AnyInputReader interface {
	// NextAny returns the next record of any input that has one and the index of that input,
	// 0 ≤ input < NumInputs(). It waits only while no input has a record, and before waiting it
	// hands over what the task wrote to its outputs so far, as InputGate.Next does.
	//
	// It works batch by batch: it takes a batch of records (up to the shuffle's batch size) from
	// one input, hands out its records, then looks at the inputs in turn starting with the one
	// after it. So an input that always has data delays another input that has data by at most
	// one batch. The records of one input come in the order InputGate.Next would return them.
	//
	// It returns input -1 and io.EOF once every input has ended (at once for a task without
	// inputs), and input -1 and ctx's error when ctx ends while it waits or before it takes a
	// new batch; once the task is stopped, input -1 and the task's context's error at once
	// (see Invokable). When input i cannot be read (its producer failed, or a partition was released
	// or lost) it returns input i and an error reading "input i: result partition …" that wraps
	// the *PartitionError; from then on it returns that error again.
	//
	// A task may mix NextAny with Input(i).Next: every record is handed out once, by whichever
	// call takes it, and each input keeps its order; NextAny's turns count only the batches it
	// takes itself.
	NextAny(ctx context.Context) (input int, record any, err error)
}

// ResultPartitionWriter writes one produced partition. It has one subpartition per consumer
// subtask that reads it; the task chooses each record's subpartition (hash of a key, round robin,
// or all of them), as Flink's partitioners do.
// Flink: org.apache.flink.runtime.io.network.api.writer.ResultPartitionWriter.
type ResultPartitionWriter interface {
	// NumSubpartitions is at least 1.
	NumSubpartitions() int
	// Emit appends record to subpartition s, 0 ≤ s < NumSubpartitions(). For a bounded
	// pipelined partition it blocks while the consumer is behind (back-pressure), until ctx ends
	// (ctx's error). Records for a pipelined subpartition whose reader went away before its end
	// (it finished early, say) are dropped without an error, as Flink's released subpartitions
	// drop them. Once the task is stopped it returns the task's context's error (see
	// Invokable); when the ctx given ends it returns ctx's error at the latest when it hands
	// over the next batch.
	Emit(ctx context.Context, s int, record any) error
	// Broadcast appends record to every subpartition, as Emit does.
	Broadcast(ctx context.Context, record any) error
}

// Registry maps task-code names (JobVertex.Invokable) to Invokables. Every TaskExecutor of a
// cluster is given the registry of the host program. Safe for concurrent use.
type Registry struct {
	mu         sync.RWMutex
	invokables map[string]Invokable
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{invokables: make(map[string]Invokable)} }

// Register adds task code under name. It panics on an empty name, a nil Invokable or a name
// registered twice: these are programming errors of the host, found at start-up.
func (r *Registry) Register(name string, fn Invokable) {
	if name == "" || fn == nil {
		panic("taskexecutor: Register needs a name and an Invokable")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.invokables[name]; dup {
		panic(fmt.Sprintf("taskexecutor: task code %q registered twice", name))
	}
	r.invokables[name] = fn
}

// Lookup returns the task code registered under name.
func (r *Registry) Lookup(name string) (Invokable, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	fn, ok := r.invokables[name]
	return fn, ok
}

// Names lists the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.invokables))
	for n := range r.invokables {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
