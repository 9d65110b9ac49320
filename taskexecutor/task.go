package taskexecutor

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/jobgraph/jobgraph"
)

// Invokable is task code: what one subtask of a JobVertex runs. It reads its inputs and writes its
// outputs through env, by index (JobVertex.Inputs and JobVertex.Results order). It returns nil
// when done — the TaskExecutor then finishes its output partitions and reports FINISHED — or an
// error to fail the execution (reported FAILED with that error). It must return promptly once ctx
// is canceled (CancelTask); the TaskExecutor reports CANCELED when it has returned.
// Flink: org.apache.flink.runtime.jobgraph.tasks.AbstractInvokable.invoke.
type Invokable func(ctx context.Context, env Environment) error

// Environment is what a running task sees of the world. Flink: org.apache.flink.runtime.execution.Environment.
// Its methods are called only from the task's own goroutine.
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
}

// InputGate reads every partition of one input (the subpartition meant for this subtask of each),
// in arrival order. Flink: org.apache.flink.runtime.io.network.partition.consumer.InputGate.
type InputGate interface {
	// Next returns the next record, io.EOF once every partition has ended, ctx's error when ctx
	// ends, or an error when a producer failed or its partition was released or lost.
	Next(ctx context.Context) (any, error)
}

// ResultPartitionWriter writes one produced partition. It has one subpartition per consumer
// subtask that reads it; the task chooses each record's subpartition (hash of a key, round robin,
// or all of them), as Flink's partitioners do.
// Flink: org.apache.flink.runtime.io.network.api.writer.ResultPartitionWriter.
type ResultPartitionWriter interface {
	// NumSubpartitions is at least 1.
	NumSubpartitions() int
	// Emit appends record to subpartition s, 0 ≤ s < NumSubpartitions(). For a bounded
	// pipelined partition it blocks while the consumer is behind (back-pressure), until ctx ends.
	Emit(ctx context.Context, s int, record any) error
	// Broadcast appends record to every subpartition.
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
