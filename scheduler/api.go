package scheduler

import (
	"errors"
	"log/slog"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/metrics"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/slotpool"
)

// Names of the scheduling strategies, for Config.SchedulingStrategy.
const (
	// StrategyRegion schedules whole pipelined regions once their blocking inputs are
	// consumable. Flink: PipelinedRegionSchedulingStrategy, the default.
	StrategyRegion = "region"
	// StrategyVertexwise schedules single vertices once their blocking inputs are consumable;
	// meant for jobs whose edges are all blocking. Flink: VertexwiseSchedulingStrategy.
	StrategyVertexwise = "vertexwise"
)

// ErrUnknownStrategy is matched (errors.Is) by New's error for a Config.SchedulingStrategy that is
// neither "", StrategyRegion nor StrategyVertexwise.
var ErrUnknownStrategy = errors.New("unknown scheduling strategy")

// IsKnownStrategy reports whether name is a Config.SchedulingStrategy New accepts: "" (the
// default, region), StrategyRegion or StrategyVertexwise. Configs that carry the strategy to the
// scheduler (jobmaster, minicluster) check it with this at construction.
func IsKnownStrategy(name string) bool {
	switch name {
	case "", StrategyRegion, StrategyVertexwise:
		return true
	}
	return false
}

// Deployer carries out the scheduler's side effects on TaskExecutors. The JobMaster implements it:
// each method starts the RPC off the main loop and returns at once; outcomes come back on the
// loop (UpdateTaskExecutionState for task states, OnDeployFailed for a failed SubmitTask). Methods
// are called on the main loop and must not call into the scheduler synchronously.
type Deployer interface {
	// Deploy submits one execution attempt (TaskExecutorGateway.SubmitTask) to the TaskExecutor
	// holding slot (slot.TaskExecutor). The descriptor's slices may be shared with other
	// descriptors: the Deployer must not modify them. Flink: Execution.deploy.
	Deploy(tdd rpc.TaskDeploymentDescriptor, slot slotpool.AllocatedSlot)
	// CancelTask asks the TaskExecutor at location to cancel attempt
	// (TaskExecutorGateway.CancelTask); it reports CANCELED when done. Flink: Execution.sendCancelRpcCall.
	CancelTask(attempt jobgraph.ExecutionAttemptID, location jobgraph.ResourceID)
	// ReleasePartitions asks the TaskExecutor at location to drop the job's partitions named
	// (TaskExecutorGateway.ReleasePartitions): blocking partitions every consumer has read, or all
	// that are left when the job ends. Flink: JobMasterPartitionTracker.stopTrackingAndReleasePartitions.
	ReleasePartitions(location jobgraph.ResourceID, partitions []rpc.ResultPartitionID)
}

// Timers runs fn on the scheduler's main loop after d; cancel stops it if it has not run yet and
// reports whether it did. *mainloop.Loop satisfies it (it is slotpool.Timers too).
type Timers interface {
	Schedule(d time.Duration, fn func()) (cancel func() bool)
}

// ErrNoTimers is matched (errors.Is) by New's error when the job's restart strategy can restart
// (anything but "none" once resolved) and Config.Timers is nil: restarts wait on the main loop.
var ErrNoTimers = errors.New("no Config.Timers to wait out restart backoffs on")

func init() {
	jobgraph.RegisterErrorCode("scheduler.unknown-strategy", ErrUnknownStrategy)
	jobgraph.RegisterErrorCode("scheduler.no-timers", ErrNoTimers)
	jobgraph.RegisterErrorCode("scheduler.no-failure-yet", ErrNoFailureYet)
}

// Config configures a DefaultScheduler. The zero value is usable for a job that never restarts
// (restart strategy "none", the default without checkpointing): region scheduling, the pool's
// slot request timeout, time.Now, slog.Default(), no listeners. A job that may restart needs
// Timers.
type Config struct {
	// SchedulingStrategy is StrategyRegion ("region", also when empty) or StrategyVertexwise
	// ("vertexwise"). Flink chooses by jobmanager.scheduler and the job type; here it is explicit.
	SchedulingStrategy string
	// SlotRequestTimeout bounds each slot request; 0 means the pool's slot.request.timeout
	// (slotpool.DefaultSlotRequestTimeout, 300 s, unless the pool was configured otherwise).
	// Option slot.request.timeout.
	SlotRequestTimeout time.Duration
	// Clock stamps job status and execution state changes and exception history entries, and is
	// the restart strategy's clock; nil means time.Now. With Metrics it is also read by the
	// job's time gauges on the goroutine of whoever reads them, so it must then be safe for
	// concurrent use.
	Clock func() time.Time
	// Metrics, if not nil, is the job's metric group (the JobMaster's, metrics.Registry.JobGroup)
	// where the scheduler registers the job's metrics under Flink's names (SchedulerBase's
	// registerJobMetrics, JobStatusMetrics, CheckpointStatsTracker), all int64 gauges reading
	// values it publishes atomically on its owner's loop:
	//   - uptime: ms since the job entered RUNNING while it is RUNNING, -1 once it is terminal
	//     (SUSPENDED included), else 0 (Flink's UpTimeGauge);
	//   - downtime: -1 once terminal; ms since it entered FAILING or RESTARTING if it was not
	//     RUNNING since, else 0 (Flink's DownTimeGauge, which looks at FAILING only: our
	//     failovers go RUNNING → RESTARTING directly);
	//   - numRestarts: restart attempts so far (a failure merged into a pending attempt, as the
	//     exception history merges it, does not count; Flink's ExecutionFailureHandler);
	//   - createdTime, runningTime, failingTime, cancellingTime, restartingTime, initializingTime:
	//     ms since the job entered that status while it is in it, else 0 (JobStatusMetrics'
	//     CURRENT_TIME gauges; initializingTime stays 0, the scheduler exists only after it);
	//   - the checkpoint metrics of checkpoint.CheckpointStatsTracker.RegisterMetrics
	//     (numberOfCompletedCheckpoints, lastCheckpointDuration, …; for a job without
	//     checkpoints those of a tracker that saw none: counts 0, the latest checkpoint's -1).
	// Where we differ: region failovers make the job RESTARTING (Flink's stays RUNNING), so
	// uptime and runningTime start again after every restart.
	Metrics *metrics.Group
	// Timers runs the restart backoff on the main loop: the JobMaster passes its *mainloop.Loop.
	// Required (New fails with ErrNoTimers) unless the job's restart strategy resolves to "none".
	Timers Timers
	// Random draws the jitter of the exponential-delay restart strategy, uniformly from [0, 1);
	// nil means math/rand/v2's Float64.
	Random func() float64
	// NewSlotRequestID draws the ID of each slot request the slot-sharing allocator makes (one
	// per shared slot it asks the pool for); nil means one random UUID per scheduler
	// (slotpool.NewSlotRequestID) counted up by one in its last 8 bytes for each request: unique
	// within the job's pool as random IDs are, without a crypto/rand read per request (a restart
	// of 10,000 slots asks for 10,000). A test passes a counter so that the same inputs make the same requests. Called on the main
	// loop only. Flink draws SlotRequestIds at random and has no such option.
	NewSlotRequestID func() slotpool.SlotRequestID
	// PartitionAvailability tells the region failover strategy whether a partition a restarted
	// region reads can be read again, or whether its producer must restart too. nil means the
	// scheduler's own partition tracking: a BLOCKING or HYBRID partition is available from its
	// producer's FINISHED until it is released or lost (PartitionsLost); a partition that can be
	// read while it is produced (HYBRID_*, PIPELINED_APPROXIMATE) also while its producer is
	// deployed. Flink: the JobMasterPartitionTracker behind ResultPartitionAvailabilityChecker.
	PartitionAvailability ResultPartitionAvailabilityChecker
	// ExceptionHistorySize bounds the exception history: the newest entries are kept.
	// Option web.exception-history-size, default 16 (jobgraph.DefaultExceptionHistorySize);
	// 0 means the default.
	ExceptionHistorySize int
	// Logger receives the scheduler's logs (one line per job status change, per failure, per
	// bulk at debug level; nothing per edge). nil means slog.Default().
	Logger *slog.Logger
	// JobStatusListener, if set, is called for every job status the job enters, in order:
	// CREATED during New, then RUNNING, RESTARTING, FINISHED, FAILING, FAILED, CANCELLING,
	// CANCELED, SUSPENDED as they happen, with the instant the graph stamped. Called on the main
	// loop; it must not call into the scheduler synchronously. Flink: JobStatusListener.
	JobStatusListener func(job jobgraph.JobID, status jobgraph.JobStatus, at time.Time)
	// ExecutionStateListener, if set, is called for every state an execution attempt enters
	// after CREATED (SCHEDULED, DEPLOYING, …, FINISHED, CANCELING, CANCELED, FAILED), in order.
	// Same rules as JobStatusListener. Flink: ExecutionStateUpdateListener.
	ExecutionStateListener func(attempt jobgraph.ExecutionAttemptID, state jobgraph.ExecutionState)
	// OnTerminal, if set, is called once, when the job reaches a globally terminal status
	// (FINISHED, FAILED or CANCELED; not SUSPENDED, which the JobMaster causes itself through
	// Suspend), with the archived graph and the root cause (nil for FINISHED and for a cancel
	// without failure). It runs after the JobStatusListener call for that status, and after the
	// slots were given back and the partitions released. It may run inside a slot pool
	// callback (a slot request timing out fails the job); the pool tolerates being called, even
	// closed, from there. Flink: SchedulerNG.getJobTerminationFuture.
	OnTerminal func(archived *executiongraph.ArchivedExecutionGraph, rootCause error)
	// SavepointDirectory is the default target directory of savepoints triggered without one
	// (SavepointTrigger with an empty targetDirectory). Option execution.checkpointing.savepoint-dir (Flink 2; state.savepoints.dir before), default
	// none: such a savepoint then fails with ErrNoSavepointDirectory.
	SavepointDirectory string
	// ShuffleMaster registers the partitions of every deployed task and describes them to their
	// producers and consumers (see ShuffleMaster); nil means the in-memory shuffle's, which needs
	// no descriptor (and costs nothing per partition). Flink: the JobMaster's ShuffleMaster,
	// from shuffle-service-factory.class.
	ShuffleMaster ShuffleMaster
	// JobMasterID is the JobMaster session's fencing token: the CheckpointCoordinator's token.
	JobMasterID jobgraph.JobMasterID
	// CheckpointRecoveryFactory gives a job with a CheckpointCoordinator (see New) its
	// CompletedCheckpointStore (retaining execution.checkpointing.num-retained) and
	// CheckpointIDCounter, called once in New. nil means a new
	// checkpoint.StandaloneCheckpointRecoveryFactory (in memory, forgotten with the scheduler).
	// Flink: CheckpointRecoveryFactory, from the HA services.
	CheckpointRecoveryFactory checkpoint.CheckpointRecoveryFactory
	// CheckpointIOExecutor runs the coordinator's store, counter and savepoint-storage calls off
	// the main loop and their completion back on it; used for all of them when set (savepoints
	// write files whatever the store), required when the store or counter may do I/O. nil with
	// the in-memory Standalone ones: they, and savepoint files, are called in place (tests). The
	// JobMaster passes one.
	CheckpointIOExecutor checkpoint.IOExecutor
	// LoadSavepoint reads the savepoint of execution.savepoint.path
	// (JobGraph.SavepointRestore.Path) that a job with a coordinator starts from when its store holds
	// no checkpoint (a checkpoint takes precedence); called at most once, in New, on the main
	// loop (the JobMaster reads the file beforehand and passes what it read). nil with a path set
	// fails New. Flink: Checkpoints.loadAndValidateCheckpoint.
	LoadSavepoint func(path string) (checkpoint.CompletedCheckpoint, error)
	// GraphOptions are passed to executiongraph.Build (e.g. WithExecutionGraphID in tests,
	// WithMaxPriorAttempts). Config.Clock is passed as WithClock after them.
	GraphOptions []executiongraph.Option
	// OperatorCoordinators are the job's operator coordinators, at most one per JobVertex of the
	// job (the JobMaster's coordination.Holders; New refuses a nil one, two for one vertex, one
	// for a vertex the job does not have). The scheduler passes them to the
	// CheckpointCoordinator (checkpoint.Config.Coordinators; each checkpoint result is a
	// scheduler entry) and restores them as Flink's SchedulerBase.restoreState does, on the main
	// loop:
	//   - initial restore: New calls ResetToCheckpoint(snapshot ID, the vertex's state or nil)
	//     on each when the job starts from the store's latest snapshot or from
	//     execution.savepoint.path, after the tasks' state was assigned; none when it starts
	//     from nothing. The caller starts the coordinators only after New returned, before
	//     StartScheduling (Flink: startAllOperatorCoordinators in startScheduling);
	//   - global failover: ResetToCheckpoint on each with the snapshot the tasks restore, or
	//     (checkpoint.NoCheckpoint, nil) without one or without a CheckpointCoordinator;
	//   - region failover: SubtaskReset(subtask, the restored snapshot's ID or NoCheckpoint) for
	//     each restarted subtask of a coordinated vertex;
	// both after the restarted tasks' state was assigned and before they are scheduled. A reset
	// error on a restart is a global failure; on the initial restore New's error.
	OperatorCoordinators []checkpoint.OperatorCoordinatorCheckpointContext
}

// SchedulerNG is what a JobMaster needs of its scheduler; DefaultScheduler is the implementation.
// Every method is called from the JobMaster's main loop only. Flink: SchedulerNG.
type SchedulerNG interface {
	// StartScheduling moves the job to RUNNING and schedules what its strategy allows.
	StartScheduling()
	// UpdateTaskExecutionState applies a TaskExecutor's report; false for an unknown or
	// outdated attempt.
	UpdateTaskExecutionState(state rpc.TaskExecutionState) bool
	// OnDeployFailed fails an attempt whose SubmitTask call failed.
	OnDeployFailed(attempt jobgraph.ExecutionAttemptID, err error)
	// HandleGlobalFailure restarts the whole job, or fails it, under the restart strategy.
	HandleGlobalFailure(err error)
	// PartitionsLost marks every partition held by the TaskExecutor at location as gone.
	PartitionsLost(location jobgraph.ResourceID)
	// Cancel cancels the job (CANCELLING, then CANCELED).
	Cancel()
	// Suspend ends the job SUSPENDED at once, canceling its tasks.
	Suspend(cause error)
	// JobStatus, Archive and ExceptionHistory observe the job.
	JobStatus() jobgraph.JobStatus
	Archive() *executiongraph.ArchivedExecutionGraph
	ExceptionHistory() []jobgraph.ExceptionHistoryEntry
}

var _ SchedulerNG = (*DefaultScheduler)(nil)

// AccumulatorUpdater is a SchedulerNG that takes the accumulator snapshots TaskExecutors send
// with heartbeats: the JobMaster hands each one to its scheduler if it implements this, on the
// JobMaster's main loop. UpdateAccumulators reports whether it kept the snapshot (false for an
// unknown, outdated or terminal attempt). A scheduler without it shows the accumulators of the
// final task states only. DefaultScheduler implements it. Flink: SchedulerNG.updateAccumulators
// (part of SchedulerNG there; a separate interface here, so a host's SchedulerNG need not
// change).
type AccumulatorUpdater interface {
	UpdateAccumulators(snapshot rpc.AccumulatorSnapshot) bool
}

var _ AccumulatorUpdater = (*DefaultScheduler)(nil)

// SchedulerNGFactory builds the scheduler of one job for its JobMaster, on the JobMaster's main
// loop: g is the job (valid, not to be changed), pool the JobMaster's slot pool, deployer its
// outgoing calls, cfg what the JobMaster configured (Timers, listeners, OnTerminal — an
// implementation must call cfg.OnTerminal once the job is globally terminal, or the job never
// ends). An error fails the job's initialization. New is the default.
// Flink: SchedulerNGFactory (DefaultSchedulerFactory).
type SchedulerNGFactory func(g *jobgraph.JobGraph, pool SlotPool, deployer Deployer, cfg Config) (SchedulerNG, error)

// DefaultSchedulerFactory is the SchedulerNGFactory of the DefaultScheduler: New.
func DefaultSchedulerFactory(g *jobgraph.JobGraph, pool SlotPool, deployer Deployer, cfg Config) (SchedulerNG, error) {
	s, err := New(g, pool, deployer, cfg)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return s, nil
}

var _ SchedulerNGFactory = DefaultSchedulerFactory

// SlotPool is what the scheduler needs of the JobMaster's slot pool: request a physical slot for
// a shared slot, cancel the request, and attach the shared slot as the payload that is released
// when the pool takes the slot away. Methods are called on the JobMaster's main loop only, and
// an implementation calls back (SlotRequest.OnDone, Payload.Release) on that loop too, never
// inside the call that caused it unless it is already running a callback.
// Flink: PhysicalSlotProvider over the DeclarativeSlotPool. *slotpool.Pool is the default,
// through FromSlotPool.
type SlotPool interface {
	// RequestSlot asks for a slot of profile for request id, failing it after timeout (0: the
	// pool's slot.request.timeout) with an error matching slotpool.ErrNoResourceAvailable. An
	// error means the request was not taken (a duplicate id, a closed pool).
	RequestSlot(id slotpool.SlotRequestID, profile jobgraph.ResourceProfile, timeout time.Duration) (SlotRequest, error)
	// CancelRequest ends request id (pending or allocated) with cause; the allocated slot goes
	// back to the pool. It reports whether the pool knew the request.
	CancelRequest(id slotpool.SlotRequestID, cause error) bool
	// AssignPayload attaches payload to an allocated slot; the pool calls payload.Release when
	// it takes the slot away. An error for a slot it does not hold allocated.
	AssignPayload(allocation jobgraph.AllocationID, payload slotpool.Payload) error
}

// SlotRequest is one pending or completed SlotPool.RequestSlot. Flink: the future of a
// PhysicalSlotRequest.
type SlotRequest interface {
	// OnDone calls fn once with the allocated slot or the failure, on the main loop: at once
	// (or after the current callback) when already done.
	OnDone(fn func(slot slotpool.AllocatedSlot, err error))
}

// FromSlotPool adapts the default slot pool to SlotPool; nil for a nil pool (which New rejects).
func FromSlotPool(p *slotpool.Pool) SlotPool {
	if p == nil {
		return nil
	}
	return poolAdapter{p}
}

type poolAdapter struct{ *slotpool.Pool }

func (a poolAdapter) RequestSlot(id slotpool.SlotRequestID, profile jobgraph.ResourceProfile, timeout time.Duration) (SlotRequest, error) {
	r, err := a.Pool.RequestSlot(id, profile, timeout)
	if err != nil {
		return nil, err
	}
	return r, nil
}

var _ SlotPool = poolAdapter{}
