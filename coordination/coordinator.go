// Package coordination holds the operator-coordinator plug point: code that runs on the
// JobMaster for one JobVertex, talks with that vertex's subtasks through events, and is
// checkpointed and restored with them. FLIP-27's split enumerator is its main user: readers ask
// for splits, the coordinator hands them out on demand, checkpoints the splits not yet handed
// out, and takes back the splits of a subtask that a region restart reset.
//
// Flink: org.apache.flink.runtime.operators.coordination.OperatorCoordinator with its Context,
// Provider and SubtaskGateway. Where we deliberately differ:
//
//   - A coordinator belongs to a JobVertex (Flink: to an OperatorID inside a chained vertex);
//     the vertex names its coordinators' providers by name in a Registry, as a vertex names its
//     task code (JobVertex.Invokable in taskexecutor.Registry), so graphs stay plain data.
//   - Events are plain bytes (Flink: serialized OperatorEvent objects), so they cross any
//     rpc.Service as they are; the coordinator and its subtasks agree on their encoding.
//   - Every method runs on the JobMaster's main loop (Flink: the coordinator's own executor
//     thread, SourceCoordinator's "SourceCoordinator-<name>", behind
//     RecreateOnResetOperatorCoordinator). A method must therefore never wait on I/O or on
//     another endpoint; work done off the loop comes back with Context.RunInMainThread.
//   - The coordinator's checkpoint result is a callback (Flink: a CompletableFuture<byte[]>).
//
// Holder runs one coordinator for the JobMaster (Flink's OperatorCoordinatorHolder): the gateways
// per attempt, the event valve around checkpoints, the fencing of events by attempt, and the
// global failure of the job on a coordinator's error; see docs/ARCHITECTURE.md.
package coordination

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/jobgraph/jobgraph"
)

// NoCheckpoint is the checkpoint ID ResetToCheckpoint and SubtaskReset get when there is no
// checkpoint to go back to: the coordinator returns to its initial state. Flink:
// OperatorCoordinator.NO_CHECKPOINT.
const NoCheckpoint int64 = -1

// OperatorCoordinator runs on the JobMaster for one JobVertex of a job, one instance per
// JobMaster (per leader session), created by its Provider. Subtasks are indexed 0 ≤ subtask <
// Context.CurrentParallelism(); attempt is the attempt number of that subtask's execution
// (ExecutionAttemptID.AttemptNumber), so an event or a failure of an attempt that was since
// replaced can be told from the current one's.
//
// Every method is called on the JobMaster's main loop, one at a time, never concurrently; none
// may block. A returned error fails the job globally (as Flink's handler calls failJob).
// Flink: org.apache.flink.runtime.operators.coordination.OperatorCoordinator.
type OperatorCoordinator interface {
	// Start is called once, before any other method, after ResetToCheckpoint if the job
	// restores a checkpoint or savepoint (Flink: start after resetToCheckpoint on restore).
	Start() error
	// Close releases everything the coordinator holds; it is called once, when the JobMaster
	// ends, and no method is called after it. Any result callback not yet called may be dropped.
	Close() error

	// HandleEventFromOperator handles an event the subtask's attempt sent. The runtime delivers
	// only events of the subtask's current attempt (Flink's handler checks the attempt too), in
	// the order that attempt sent them.
	HandleEventFromOperator(subtask, attempt int, event []byte) error

	// CheckpointCoordinator takes the coordinator's state for checkpointID. It is called before
	// any task is triggered for that checkpoint; events the coordinator sends after its result
	// are held back until the tasks were triggered, so each subtask gets them after its own
	// snapshot for that checkpoint (Flink's SubtaskGatewayImpl closes its gateways so). The
	// coordinator calls result exactly once, on the loop or from any goroutine, with its state
	// (nil for none) or an error that declines the checkpoint; a result for a checkpoint that
	// was since aborted is ignored.
	CheckpointCoordinator(checkpointID int64, result func(state []byte, err error))
	// NotifyCheckpointComplete tells the coordinator that checkpointID completed: every task and
	// every coordinator of the job acknowledged it and it is stored.
	NotifyCheckpointComplete(checkpointID int64)
	// NotifyCheckpointAborted tells the coordinator that checkpointID will not complete.
	NotifyCheckpointAborted(checkpointID int64)

	// ResetToCheckpoint replaces the coordinator's whole state with the state it produced for
	// checkpointID (nil if it produced none; checkpointID is NoCheckpoint and state nil for a
	// reset to the initial state). It is called on a global failover and on restore, before
	// Start in the latter case.
	ResetToCheckpoint(checkpointID int64, state []byte) error
	// SubtaskReset tells the coordinator that a partial (region) failover restores subtask to
	// checkpointID (NoCheckpoint if none): whatever the coordinator gave that subtask after that
	// checkpoint is lost and must be given again (a split enumerator takes back those splits).
	SubtaskReset(subtask int, checkpointID int64) error
	// ExecutionAttemptFailed tells the coordinator that the subtask's attempt failed (reason
	// may be nil); its gateway sends nothing from now on.
	ExecutionAttemptFailed(subtask, attempt int, reason error) error
	// ExecutionAttemptReady gives the coordinator the gateway to a subtask's attempt once that
	// attempt runs and can receive events. A later attempt of the same subtask gets its own
	// gateway; the earlier one's sends fail.
	ExecutionAttemptReady(subtask, attempt int, gateway SubtaskGateway) error
}

// SubtaskGateway sends events to one attempt of one subtask. Flink:
// OperatorCoordinator.SubtaskGateway.
type SubtaskGateway interface {
	// Subtask is the subtask's index.
	Subtask() int
	// Attempt is the attempt number this gateway reaches.
	Attempt() int
	// SendEvent sends event to the attempt without waiting. ack, if not nil, is called once on
	// the JobMaster's loop: nil once the task handled the event, else the error (the attempt was
	// replaced or failed, the transport lost it); the caller must not assume the event arrived
	// unless ack says so. Events reach the attempt in the order they were sent.
	SendEvent(event []byte, ack func(error))
}

// Context is what a coordinator gets from the runtime when it is created. Its methods may be
// called from the loop; RunInMainThread and FailJob also from any goroutine.
// Flink: OperatorCoordinator.Context.
type Context interface {
	// JobID is the job the coordinator belongs to.
	JobID() jobgraph.JobID
	// VertexID is the vertex the coordinator belongs to (Flink: getOperatorId).
	VertexID() jobgraph.JobVertexID
	// Config is the configuration bytes the vertex gave for this coordinator.
	Config() []byte
	// CurrentParallelism is the vertex's parallelism in the running ExecutionGraph.
	CurrentParallelism() int
	// RunInMainThread runs fn on the JobMaster's loop later, unless the coordinator was closed
	// first (Flink: the coordinator's executor; the ComponentMainThreadExecutor).
	RunInMainThread(fn func())
	// FailJob fails the job globally with cause (Flink: failJob).
	FailJob(cause error)
}

// Provider creates a vertex's coordinator; the JobMaster calls Create once per JobMaster on its
// loop, with the vertex's Context. Flink: OperatorCoordinator.Provider.
type Provider interface {
	Create(ctx Context) (OperatorCoordinator, error)
}

// ProviderFunc adapts a function to a Provider.
type ProviderFunc func(ctx Context) (OperatorCoordinator, error)

// Create calls f(ctx).
func (f ProviderFunc) Create(ctx Context) (OperatorCoordinator, error) { return f(ctx) }

// Errors of the Registry.
var (
	// ErrUnknownCoordinator is returned (wrapped, with the name) by Create for a name nothing
	// was registered under.
	ErrUnknownCoordinator = errors.New("coordination: no operator coordinator registered under this name")
	// ErrInvalidRegistration is returned (wrapped) by Register for an empty name, a nil
	// Provider or a name registered twice.
	ErrInvalidRegistration = errors.New("coordination: invalid registration")
)

// Registry maps coordinator names (what a JobVertex names, as it names its task code in
// taskexecutor.Registry) to Providers. The JobMaster of every job is given the host program's
// registry. Safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	providers map[string]Provider
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{providers: make(map[string]Provider)} }

// Register adds p under name. It returns an error wrapping ErrInvalidRegistration, and registers
// nothing, for an empty name, a nil p or a name already registered (the first one stays).
func (r *Registry) Register(name string, p Provider) error {
	if name == "" {
		return fmt.Errorf("%w: empty coordinator name", ErrInvalidRegistration)
	}
	if p == nil {
		return fmt.Errorf("%w: nil Provider for coordinator %q", ErrInvalidRegistration, name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.providers[name]; dup {
		return fmt.Errorf("%w: coordinator %q registered twice", ErrInvalidRegistration, name)
	}
	r.providers[name] = p
	return nil
}

// Lookup returns the Provider registered under name.
func (r *Registry) Lookup(name string) (Provider, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.providers[name]
	return p, ok
}

// Create creates the coordinator registered under name with ctx. It returns an error wrapping
// ErrUnknownCoordinator naming the vertex and name if nothing is registered under name, the
// Provider's error wrapped with the same names if it fails, and an error if it returns a nil
// coordinator without an error.
func (r *Registry) Create(name string, ctx Context) (OperatorCoordinator, error) {
	p, ok := r.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q (vertex %s)", ErrUnknownCoordinator, name, ctx.VertexID())
	}
	c, err := p.Create(ctx)
	if err != nil {
		return nil, fmt.Errorf("coordination: creating coordinator %q of vertex %s: %w", name, ctx.VertexID(), err)
	}
	if c == nil {
		return nil, fmt.Errorf("coordination: Provider of coordinator %q of vertex %s returned no coordinator", name, ctx.VertexID())
	}
	return c, nil
}

// Names lists the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.providers))
	for n := range r.providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
