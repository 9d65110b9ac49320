package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/gopool"
	"github.com/jobgraph/jobgraph/internal/heartbeat"
	"github.com/jobgraph/jobgraph/internal/mainloop"
	"github.com/jobgraph/jobgraph/internal/registration"
	"github.com/jobgraph/jobgraph/metrics"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/slotpool"
)

// ErrClosed is returned by every DefaultJobMaster method that returns an error once Close has
// begun (wrapped with the job's ID), and handed to the done of every
// rpc.TaskExecutionStateNotifier call the closed JobMaster refuses, in an rpc.UnreachableError
// (rpc.IsUnreachable): a closed JobMaster is gone for its callers, so heartbeat senders (the
// ResourceManager asking it, a TaskExecutor answering it) count it toward
// heartbeat.rpc-failure-threshold, as they do the unknown address a transport answers once it is
// unregistered (Flink: an RPC to a stopped endpoint fails with RecipientUnreachableException).
// It is also the cause given to its tasks and slots, and to a job SUSPENDED by Close; that cause
// is not unreachable. A runner's (JobMasterServiceLeadershipRunner's) ErrClosed is not either:
// the runner is no RPC endpoint. It matches rpc.ErrClosed.
var ErrClosed = fmt.Errorf("jobmaster: %w", rpc.ErrClosed)

// ErrHeartbeatTimeout is matched (errors.Is) by the cause a TaskExecutor is disconnected with when
// its heartbeat timed out; its slots and the tasks in them fail with it, so a job failed by a lost
// TaskExecutor has it in its root cause. The message names the TaskExecutor: "heartbeat of
// TaskExecutor taskexecutor-1 timed out after 50s". Flink: the TimeoutException of
// JobMaster.TaskManagerHeartbeatListener.
var ErrHeartbeatTimeout = heartbeat.ErrTimeout

// ErrTaskExecutorUnreachable is matched (errors.Is) by the cause a TaskExecutor is disconnected
// with when heartbeat.rpc-failure-threshold heartbeat requests to it in a row failed because it
// could not be reached (rpc.IsUnreachable: killed, its process gone), before its
// heartbeat.timeout ran out; it is handled as ErrHeartbeatTimeout is. The cause is an
// *rpc.HeartbeatTargetUnreachableError: "TaskExecutor taskexecutor-1 is no longer reachable: 2
// consecutive heartbeat RPCs failed, the last with: …". Flink: the JobMasterException of
// JobMaster.TaskManagerHeartbeatListener.notifyTargetUnreachable.
var ErrTaskExecutorUnreachable = heartbeat.ErrUnreachable

// ErrUnknownTaskExecutor is returned by HeartbeatFromTaskExecutor for a TaskExecutor that is not
// registered with the JobMaster (never was, or was disconnected).
var ErrUnknownTaskExecutor = errors.New("TaskExecutor not registered with the JobMaster")

// The sentinels that may travel in a gateway message (see jobgraph.RegisterErrorCode).
func init() {
	jobgraph.RegisterErrorCode("jobmaster.closed", ErrClosed)
	jobgraph.RegisterErrorCode("jobmaster.unknown-task-executor", ErrUnknownTaskExecutor)
	jobgraph.RegisterErrorCode("jobmaster.job-initialization", ErrJobInitialization)
	jobgraph.RegisterErrorCode("jobmaster.runner-failed", ErrRunnerFailed)
	jobgraph.RegisterErrorCode("jobmaster.job-already-done", ErrJobAlreadyDone)
}

// Config configures the JobMasters a Factory creates.
type Config struct {
	// RPC resolves addresses; the JobMaster registers itself there. Required.
	RPC rpc.Service
	// ResourceManagerAddress is where the ResourceManager's gateway is registered. Required
	// unless ResourceManagerRetrieval is set (setting both is an error).
	ResourceManagerAddress string
	// ResourceManagerRetrieval, if set, is how each JobMaster finds the ResourceManager instead
	// of ResourceManagerAddress: called once per JobMaster, it returns a leader retrieval of the
	// ResourceManager's election (ha.Services.ResourceManagerLeaderRetrieval, a method value),
	// which the JobMaster starts when it starts and stops when it closes. On every new leader
	// (address, session) the JobMaster drops its connection to the earlier one and registers
	// with the new one (RegisterJobMaster), off its main loop, retrying until registered or the
	// leader changes again (the cluster.registration.* timing of internal/registration); once
	// registered it declares its requirements again, so the new leader serves the job; the
	// slots the job holds stay with it. The answer to a registration made for an earlier leader
	// is dropped, and so is one with another ResourceManagerID than the leader's session: the
	// ResourceManager must run under that election (resourcemanager.Config.LeaderElection). The
	// JobMaster starts scheduling without waiting for the registration; its declarations wait
	// for it. A DisconnectResourceManager from the current leader makes it register again.
	// Flink: JobMaster.ResourceManagerLeaderListener, notifyOfNewResourceManagerLeader and its
	// ResourceManagerConnection. Where we differ: Flink also tells the old leader that the
	// JobMaster disconnects; the old leader drops it when it loses leadership.
	ResourceManagerRetrieval func() ha.LeaderRetrieval
	// SlotRequestTimeout: option slot.request.timeout, default 300 s (0 means the default).
	SlotRequestTimeout time.Duration
	// IdleSlotTimeout: option slot.idle.timeout, default 50 s (0 means the default).
	IdleSlotTimeout time.Duration
	// SchedulingStrategy: "region" (default, also when empty) or "vertexwise"
	// (scheduler.StrategyRegion, scheduler.StrategyVertexwise). Option
	// jobmanager.scheduler.scheduling-strategy.
	SchedulingStrategy string
	// RPCTimeout bounds each call the JobMaster makes. Option pekko.ask.timeout (formerly
	// akka.ask.timeout), default 10 s (0 means the default). Where we differ: over the
	// in-process *rpc.LocalService the JobMaster's calls to the ResourceManager and the
	// TaskExecutors (declarations, deployments, cancellations, freed slots, heartbeats) carry
	// no deadline, since the endpoints there answer from main loops that never wait (a closed
	// one at once, with its ErrClosed), so a timer per call would bound nothing; a host's own
	// endpoint registered on a LocalService must answer the same way; so do its registration
	// attempts with a retrieved ResourceManager leader (ResourceManagerRetrieval), which carry
	// cluster.registration.initial-timeout and its doublings elsewhere. Checkpoint calls and
	// operator events, which wait for the task, keep the timeout on every Service.
	RPCTimeout time.Duration
	// HeartbeatInterval is how often the JobMaster asks each registered TaskExecutor for a
	// heartbeat. Option heartbeat.interval, default 10 s (0 means the default).
	HeartbeatInterval time.Duration
	// HeartbeatTimeout is how long a registered TaskExecutor may stay silent: then it is
	// disconnected, its slots fail and so do the tasks in them (ErrHeartbeatTimeout). It is also
	// how long the ResourceManager the JobMaster is registered with may send no heartbeat
	// request (HeartbeatFromResourceManager): then the JobMaster registers with it again and
	// declares its requirements anew (Flink's resourceManagerHeartbeatManager). Option
	// heartbeat.timeout, default 50 s (0 means the default); not shorter than HeartbeatInterval.
	HeartbeatTimeout time.Duration
	// HeartbeatRPCFailureThreshold is how many heartbeat requests to a TaskExecutor in a row
	// may fail as unreachable (rpc.IsUnreachable) before it is disconnected at once, as on a
	// timeout (ErrTaskExecutorUnreachable); and how many answers to the ResourceManager's
	// requests, before the JobMaster registers with it again. Option
	// heartbeat.rpc-failure-threshold, default 2 (0 means the default); -1 turns it off; below
	// -1 is an error.
	HeartbeatRPCFailureThreshold int
	// JobStatusListener, if set, hears every job status the job enters, in order, on the
	// JobMaster's loop (it must not block): INITIALIZING when the JobMaster of a leader session
	// starts building the job, CREATED once its ExecutionGraph is built, then what the scheduler
	// reports (RUNNING, …, FINISHED, FAILED, CANCELED, SUSPENDED). Flink: JobStatusListener.
	JobStatusListener func(job jobgraph.JobID, status jobgraph.JobStatus, at time.Time)
	// ExecutionStateListener, if set, hears every state an execution attempt enters after
	// CREATED (on the JobMaster's loop: it must not block).
	ExecutionStateListener func(attempt jobgraph.ExecutionAttemptID, state jobgraph.ExecutionState)
	// ExceptionHistorySize: web.exception-history-size, default 16 (0 means the default).
	ExceptionHistorySize int
	// SchedulerFactory builds the job's SchedulerNG on the JobMaster's loop, from the slot pool,
	// the JobMaster's Deployer and the scheduler.Config the JobMaster fills in (Timers, the
	// options above, the listeners, and OnTerminal, which ends the JobMaster's job). nil means
	// scheduler.DefaultSchedulerFactory. Flink: SchedulerNGFactory (jobmanager.scheduler picks
	// one of Flink's; here the host passes its own).
	SchedulerFactory scheduler.SchedulerNGFactory
	// ShuffleMaster is the JobMaster's side of the shuffle service the TaskExecutors use
	// (taskexecutor.Config.Shuffle is theirs); nil means the in-memory shuffle's, which needs
	// none. See scheduler.ShuffleMaster. Flink: shuffle-service-factory.class.
	ShuffleMaster scheduler.ShuffleMaster
	// BlocklistItemTimeout is how long a TaskExecutor the task-failure rule blocks stays blocked.
	// Option cluster.resource-blocklist.item.timeout (FLIP-224), default 1 h (0 means the
	// default).
	BlocklistItemTimeout time.Duration
	// BlocklistAction is what the task-failure rule's block does to the tasks running on the
	// TaskExecutor: rpc.BlockActionMarkBlocked ("" means it) or
	// rpc.BlockActionMarkBlockedAndEvacuateTasks. Option cluster.resource-blocklist.action (ours,
	// after FLIP-224's block actions, which Flink's REST request was to carry), default
	// MARK_BLOCKED.
	BlocklistAction rpc.BlockAction
	// BlocklistMaxTaskFailuresPerInterval turns the task-failure rule on: a TaskExecutor on which
	// this many of the job's tasks failed (reported FAILED by it) within
	// BlocklistTaskFailureInterval is blocked for BlocklistItemTimeout — locally, and at the
	// ResourceManager (rpc.ResourceManagerBlocklistListener), which then requests no slot of it
	// for any job. Option cluster.resource-blocklist.task-failure.max-failures-per-interval, ours:
	// Flink's only rule that blocks is speculative execution's slow-task detection. 0 (the
	// default) turns it off; negative is an error.
	BlocklistMaxTaskFailuresPerInterval int
	// BlocklistTaskFailureInterval is the rule's window. Option
	// cluster.resource-blocklist.task-failure.failure-rate-interval (ours), default 1 min (0 means
	// the default).
	BlocklistTaskFailureInterval time.Duration
	// SavepointDirectory is the default target directory of savepoints and stop-with-savepoint
	// requests that name none. Option execution.checkpointing.savepoint-dir (Flink 2; state.savepoints.dir before), default none (such a request then
	// fails with scheduler.ErrNoSavepointDirectory).
	SavepointDirectory string
	// CheckpointRecoveryFactory gives a checkpointing job its CompletedCheckpointStore and
	// CheckpointIDCounter; the JobMaster opens both off its main loop before it builds the
	// scheduler, and its coordinator calls them (and writes savepoints) through an I/O loop of the
	// JobMaster's own, off the main loop. nil means one checkpoint.StandaloneCheckpointRecoveryFactory per
	// Factory (in memory: the JobMasters of later leader sessions of the job, in this process,
	// find the checkpoints of earlier ones). Flink: HighAvailabilityServices.getCheckpointRecoveryFactory.
	CheckpointRecoveryFactory checkpoint.CheckpointRecoveryFactory
	// LoadSavepoint reads the savepoint at a path (execution.savepoint.path, the JobGraph's
	// SavepointRestore.Path) that a checkpointing job starts from when its store holds no
	// checkpoint; the JobMaster calls it off its main loop, before it builds the scheduler. nil
	// means checkpoint.LoadSavepoint (a savepoint directory or its _metadata file). Flink:
	// Checkpoints.loadAndValidateCheckpoint.
	LoadSavepoint func(path string) (checkpoint.CompletedCheckpoint, error)
	// Metrics, if not nil, is the registry where each JobMaster opens the job's metric group
	// (metrics.Registry.JobGroup: job_id, job_name) and its scheduler registers the job's
	// metrics there (uptime, downtime, numRestarts, runningTime, restartingTime, the checkpoint
	// metrics…: see scheduler.Config.Metrics); the JobMaster closes the group when it closes,
	// so the registry forgets the job. A JobMaster of a later leader session replaces them.
	// Flink: JobManagerJobMetricGroup, from the JobManagerMetricGroup of the MetricRegistry.
	Metrics *metrics.Registry
	// OperatorCoordinators holds the operator coordinators the job's vertices name
	// (jobgraph.JobVertex.OperatorCoordinator), by name. Each JobMaster (each leader session of
	// the job) creates one coordination.Holder per coordinated vertex on its loop before it
	// builds the scheduler, with the vertex's OperatorCoordinatorConfig and parallelism, hands the
	// holders to the scheduler (scheduler.Config.OperatorCoordinators: checkpoints and restores),
	// starts them right before scheduling starts (after the initial restore), routes the events
	// between them and the subtasks (SendOperatorEventToCoordinator; coordinator events go to the
	// tasks in order with the checkpoint calls), tells them of every attempt that becomes
	// INITIALIZING or RUNNING and of every attempt FAILED or CANCELED, fails the job globally on a
	// coordinator's error, and closes them when it closes (job FINISHED, FAILED, CANCELED or
	// SUSPENDED). nil means none: a job whose vertex names a coordinator then fails its
	// initialization, as one naming a coordinator not registered here does, with an error
	// matching coordination.ErrUnknownCoordinator that names the vertex and the coordinator.
	// Flink: the OperatorCoordinator.Providers of the JobVertex with
	// DefaultOperatorCoordinatorHandler.
	OperatorCoordinators *coordination.Registry
	// FatalErrorHandler hears what a JobMaster cannot recover from (Flink's FatalErrorHandler,
	// which JobMaster.handleJobMasterError and the Dispatcher's jobMasterFailed reach): a panic
	// on one of its main loops — a broken invariant of the scheduler, the ExecutionGraph or the
	// slot pool, or a plain bug — as a *jobgraph.PanicError, after which that JobMaster serves
	// nothing (its calls return its closed error wrapping the PanicError, its job makes no
	// progress, Close still releases its goroutines), and the ResourceManager leader
	// retrieval's error (HandleError of ResourceManagerRetrieval's retrieval), after which the
	// JobMaster can no longer learn of a new ResourceManager. (A LeadershipRunner's own
	// failures end its Result with ErrRunnerFailed instead, which the Dispatcher makes fatal.)
	// It is called once per error, on
	// a goroutine of the JobMaster's (the dying loop's, after the calls waiting on it were
	// released), and must not wait for long: to close the JobMaster or the cluster, start a
	// goroutine. Default (nil): the error is logged at Error level and nothing else happens. A
	// cluster.JobManager's (and so a MiniCluster's) closes the cluster, as Flink's Dispatcher
	// ends the JobManager process on a failed JobMaster.
	FatalErrorHandler func(err error)
	// Goroutines, if set, starts the goroutines of every JobMaster the Config makes: its main
	// loop, its outbox, its I/O loop and lanes, and its calls off the loop (heartbeat requests,
	// ResourceManager registration attempts). Goroutines(fn) must run fn on a goroutine at once,
	// never waiting for another fn to return, as a go statement does; a host passes a pool whose
	// goroutines are reused (cluster.JobManager does), so one job after another does not start
	// fresh goroutines and grow their stacks anew through the JobMaster's deep first calls. It
	// must keep accepting functions until every JobMaster of the Config has been closed (Close
	// returned: then none of its functions runs any more). nil: a go statement each. Flink: the
	// executors of JobManagerSharedServices that every JobMaster shares; where we differ, each
	// function gets its own goroutine, never a queue.
	Goroutines func(fn func())
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// reportFatal hands err to cfg.FatalErrorHandler, or logs it.
func reportFatal(cfg Config, err error) {
	if h := cfg.FatalErrorHandler; h != nil {
		h(err)
		return
	}
	cfg.Logger.Error("fatal error of a JobMaster", "err", err)
}

// Factory creates the JobMaster of one job for each leader session. Flink: DefaultJobMasterServiceFactory.
type Factory struct {
	cfg Config
	g   *jobgraph.JobGraph
}

var _ JobMasterServiceFactory = (*Factory)(nil)

// ErrInvalidConfig is matched (errors.Is) by Config.Validate's errors, and so by NewFactory's for
// a Config it refuses; the message names the field and Flink's option key.
var ErrInvalidConfig = errors.New("jobmaster: invalid configuration")

// Validate reports the first thing wrong with c that would otherwise fail every job it runs:
// a missing RPC or ResourceManagerAddress (with no ResourceManagerRetrieval), both of those, a negative duration or size, an unknown scheduling
// strategy (also matching scheduler.ErrUnknownStrategy), heartbeat.timeout shorter than
// heartbeat.interval, heartbeat.rpc-failure-threshold below -1. Errors match ErrInvalidConfig. A host calls it at construction (the
// MiniCluster does); NewFactory calls it for every job.
func (c Config) Validate() error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.RPC == nil:
		return invalid("Config.RPC is required")
	case c.ResourceManagerAddress == "" && c.ResourceManagerRetrieval == nil:
		return invalid("Config.ResourceManagerAddress (or Config.ResourceManagerRetrieval) is required")
	case c.ResourceManagerAddress != "" && c.ResourceManagerRetrieval != nil:
		return invalid("set Config.ResourceManagerAddress or Config.ResourceManagerRetrieval, not both")
	case c.SlotRequestTimeout < 0:
		return invalid("SlotRequestTimeout (slot.request.timeout) is %v, negative", c.SlotRequestTimeout)
	case c.IdleSlotTimeout < 0:
		return invalid("IdleSlotTimeout (slot.idle.timeout) is %v, negative", c.IdleSlotTimeout)
	case c.RPCTimeout < 0:
		return invalid("RPCTimeout (pekko.ask.timeout) is %v, negative", c.RPCTimeout)
	case c.BlocklistItemTimeout < 0:
		return invalid("BlocklistItemTimeout (cluster.resource-blocklist.item.timeout) is %v, negative", c.BlocklistItemTimeout)
	case !c.BlocklistAction.Valid():
		return invalid("BlocklistAction (cluster.resource-blocklist.action) is %q; want %q or %q", c.BlocklistAction, rpc.BlockActionMarkBlocked, rpc.BlockActionMarkBlockedAndEvacuateTasks)
	case c.BlocklistMaxTaskFailuresPerInterval < 0:
		return invalid("BlocklistMaxTaskFailuresPerInterval (cluster.resource-blocklist.task-failure.max-failures-per-interval) is %d, negative", c.BlocklistMaxTaskFailuresPerInterval)
	case c.BlocklistTaskFailureInterval < 0:
		return invalid("BlocklistTaskFailureInterval (cluster.resource-blocklist.task-failure.failure-rate-interval) is %v, negative", c.BlocklistTaskFailureInterval)
	case c.ExceptionHistorySize < 0:
		return invalid("ExceptionHistorySize (web.exception-history-size) is %d, negative", c.ExceptionHistorySize)
	case !scheduler.IsKnownStrategy(c.SchedulingStrategy):
		return fmt.Errorf("%w: SchedulingStrategy (jobmanager.scheduler.scheduling-strategy) %q: %w; want %q or %q",
			ErrInvalidConfig, c.SchedulingStrategy, scheduler.ErrUnknownStrategy, scheduler.StrategyRegion, scheduler.StrategyVertexwise)
	}
	if _, _, err := heartbeat.Resolve(c.HeartbeatInterval, c.HeartbeatTimeout); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if _, err := heartbeat.ResolveRPCFailureThreshold(c.HeartbeatRPCFailureThreshold); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// NewFactory returns a factory for g, which must be valid (the Dispatcher validated it). An
// error matching ErrInvalidConfig for a Config that Validate refuses.
func NewFactory(g *jobgraph.JobGraph, cfg Config) (*Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.RPCTimeout == 0 {
		cfg.RPCTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.CheckpointRecoveryFactory == nil {
		cfg.CheckpointRecoveryFactory = checkpoint.NewStandaloneCheckpointRecoveryFactory()
	}
	if cfg.BlocklistItemTimeout == 0 {
		cfg.BlocklistItemTimeout = DefaultBlocklistItemTimeout
	}
	if cfg.BlocklistTaskFailureInterval == 0 {
		cfg.BlocklistTaskFailureInterval = DefaultBlocklistTaskFailureInterval
	}
	if cfg.LoadSavepoint == nil {
		cfg.LoadSavepoint = checkpoint.LoadSavepoint
	}
	return &Factory{cfg: cfg, g: g}, nil
}

func (f *Factory) JobID() jobgraph.JobID     { return f.g.JobID }
func (f *Factory) JobName() string           { return f.g.Name }
func (f *Factory) JobType() jobgraph.JobType { return f.g.Type }

// Create builds the job's ExecutionGraph, registers the JobMaster under a fresh address, connects
// it to the ResourceManager and starts scheduling. An error means the job cannot run (the
// ExecutionGraph could not be built, the ResourceManager at Config.ResourceManagerAddress is
// unreachable; with Config.ResourceManagerRetrieval the registration happens after Create, and
// is retried).
func (f *Factory) Create(ctx context.Context, token jobgraph.JobMasterID) (JobMaster, error) {
	jm, err := start(ctx, f.g, token, f.cfg)
	if err != nil {
		return nil, err
	}
	jm.startScheduling()
	return jm, nil
}

// CreateUnscheduled implements DeferredStartFactory: Create without the start of scheduling; the
// ServiceProcess makes the JobMaster known to its runner first and then calls startScheduling.
func (f *Factory) CreateUnscheduled(ctx context.Context, token jobgraph.JobMasterID) (JobMaster, func(), error) {
	jm, err := start(ctx, f.g, token, f.cfg)
	if err != nil {
		return nil, nil, err
	}
	return jm, jm.startScheduling, nil
}

// DefaultJobMaster runs one job for one leader session: its slot pool and scheduler live on the
// JobMaster's main loop; calls to other endpoints leave the loop through an ordered outbox and
// post their outcome back. Every gateway call is fenced by the session's JobMasterID.
// Flink: org.apache.flink.runtime.jobmaster.JobMaster.
type DefaultJobMaster struct {
	cfg        Config
	job        jobgraph.JobID
	token      jobgraph.JobMasterID
	address    string
	resourceID jobgraph.ResourceID
	log        *slog.Logger
	// inProcess: cfg.RPC is the in-process *rpc.LocalService, so rpcContext arms no timer.
	inProcess bool

	closedErr error // ErrClosed with the job's ID, an rpc.UnreachableError
	// closedFlag is set when Close begins, before closed: for the checks made off the loop.
	closedFlag atomic.Bool
	loop       *mainloop.Loop // state
	outbox     *mainloop.Loop // outgoing calls, in order
	loopNames  [2]loopName    // loop's and outbox's, formatted only when asked for
	// io runs the checkpoint store and ID counter calls, in order. It is started by the first
	// such call (a batch job has none: one goroutine less per job) and closed by shutDown.
	ioMu     sync.Mutex
	io       *mainloop.Loop
	ioClosed bool
	aside    sync.WaitGroup // heartbeat calls and registration attempts (goAside)
	// With Config.ResourceManagerRetrieval: the retrieval (started once retrieving is set), the
	// registration with the leader it names (loop-owned), and the context of its attempts,
	// canceled by shutDown.
	rmRetrieval ha.LeaderRetrieval
	retrieving  atomic.Bool
	rmConn      *registration.Connection[rpc.ResourceManagerGateway]
	rmCtx       context.Context
	rmCancel    context.CancelFunc

	// Owned by loop.
	pool          *slotpool.Pool
	metricGroup   *metrics.Group // the job's (Config.Metrics); nil without one
	sched         scheduler.SchedulerNG
	rm            rpc.ResourceManagerGateway
	rmID          jobgraph.ResourceManagerID // the fencing token RegisterJobMaster returned
	taskExecutors map[jobgraph.ResourceID]rpc.TaskExecutorGateway
	// teHeartbeats monitors the registered TaskExecutors; freeing holds the slots a FreeSlot
	// call is in flight for.
	teHeartbeats *heartbeat.Manager[jobgraph.ResourceID]
	// rmHeartbeats monitors the ResourceManager the JobMaster is registered with, under its
	// ResourceManagerID (the only one monitored): its heartbeat requests, and the answers'
	// RPCs. Flink: JobMaster's resourceManagerHeartbeatManager.
	rmHeartbeats *heartbeat.Manager[jobgraph.ResourceManagerID]
	rmAttempt    uint64 // registrations with the fixed ResourceManager gateway started again
	freeing      map[jobgraph.AllocationID]bool
	// deployments is what was deployed where, reconciled with each TaskExecutor's heartbeat.
	deployments *deploymentTracker
	// blocklist: the blocked TaskExecutors and the task-failure rule's counts (blocklist.go).
	bl     jobBlocklist
	ckOpen *ckBatch // checkpoint calls of the running loop task, not on the outbox yet
	// Operator coordinators (operatorevents.go): the vertices that name one (nil: none), the
	// attempts of theirs that may send events (INITIALIZING or RUNNING), and the handler
	// their events go to (nil until one is installed).
	coordinated  map[jobgraph.JobVertexID]bool
	eventSenders map[jobgraph.ExecutionAttemptID]struct{}
	coordinators operatorCoordinatorHandler
	coordHandler *coordinatorHandler // the same as coordinators (coordinators.go); nil without coordinators
	// lanes carry the checkpoint calls and operator events of a job with coordinators, one
	// lane per TaskExecutor (nil for a job without): owned by the outbox's goroutine.
	lanes    *teLanes
	terminal bool
	closed   bool

	// deployMu orders every enqueue on the outbox against the open deploy batch: openDeploys is
	// the batch the main loop is filling, not on the outbox yet. It goes onto the outbox when the
	// loop task that opened it has returned (a flush the loop runs next), or earlier when any other
	// call is enqueued (the batch first, so no call changes place with another); a deploy after
	// that starts a new batch.
	deployMu    sync.Mutex
	openDeploys *deployBatch

	// The newest requirements not yet sent and the ResourceManager they go to (nil while not
	// registered: then they wait for the registration), shared with the outbox.
	declareMu     sync.Mutex
	declareLatest []rpc.ResourceRequirement
	declareTo     rpc.ResourceManagerGateway
	declareRMID   jobgraph.ResourceManagerID // the token declareTo's registration answered
	declareQueued bool

	done      chan struct{}
	result    Result
	closeOnce sync.Once
	closedArc *executiongraph.ArchivedExecutionGraph
}

var (
	_ JobMaster                      = (*DefaultJobMaster)(nil)
	_ rpc.JobMasterGateway           = (*DefaultJobMaster)(nil)
	_ rpc.TaskExecutionStateNotifier = (*DefaultJobMaster)(nil)
)

func start(ctx context.Context, g *jobgraph.JobGraph, token jobgraph.JobMasterID, cfg Config) (*DefaultJobMaster, error) {
	// The one closed error every loop of the JobMaster answers: unreachable, see ErrClosed.
	closedErr := rpc.Unreachable(&closedError{what: "job", job: g.JobID})
	jm := &DefaultJobMaster{
		cfg:           cfg,
		job:           g.JobID,
		token:         token,
		address:       rpc.AddressOf(cfg.RPC, "jobmaster/"+g.JobID.String()+"/"+token.String()),
		resourceID:    jobgraph.ResourceID("jobmaster-" + token.String()[:12]),
		log:           cfg.Logger.With("job", g.JobID),
		closedErr:     closedErr,
		loopNames:     [2]loopName{{"jobmaster-", g.JobID}, {"jobmaster-outbox-", g.JobID}},
		taskExecutors: make(map[jobgraph.ResourceID]rpc.TaskExecutorGateway),
		freeing:       make(map[jobgraph.AllocationID]bool),
		deployments:   newDeploymentTracker(),
		done:          make(chan struct{}),
		coordinated:   coordinatedVertices(g),
	}
	jm.loop = mainloop.NewNamedOn(cfg.Goroutines, &jm.loopNames[0], closedErr)
	jm.outbox = mainloop.NewNamedOn(cfg.Goroutines, &jm.loopNames[1], closedErr)
	_, jm.inProcess = cfg.RPC.(*rpc.LocalService)
	jm.loop.SetPanicHandler(jm.onPanic)
	jm.outbox.SetPanicHandler(jm.onPanic)
	if jm.coordinated != nil {
		jm.eventSenders = make(map[jobgraph.ExecutionAttemptID]struct{})
		jm.lanes = newTELanes()
	}
	var rm rpc.ResourceManagerGateway
	var err error
	if cfg.ResourceManagerRetrieval == nil {
		rm, err = rpc.Connect[rpc.ResourceManagerGateway](ctx, cfg.RPC, cfg.ResourceManagerAddress)
	} else {
		jm.rmCtx, jm.rmCancel = context.WithCancel(context.Background())
		jm.rmConn = registration.New(registration.Config[rpc.ResourceManagerGateway]{
			Loop:       jm.loop,
			Context:    jm.rmCtx,
			Unbounded:  jm.inProcess, // no timer per attempt over the LocalService (Config.RPCTimeout)
			Go:         jm.goAside,
			Attempt:    jm.registrationAttempt,
			Registered: jm.registeredWithResourceManager,
			Failed: func(err error, retryIn time.Duration) {
				jm.log.Warn("registering with the ResourceManager failed", "retryIn", retryIn, "err", err)
			},
		})
	}
	var recovery *recovered
	if err == nil && scheduler.HasCheckpointCoordinator(g) {
		recovery, err = openRecovery(g, cfg)
	}
	if err == nil {
		err = jm.loop.Call(ctx, func() error { return jm.setUp(g, rm, recovery) })
	}
	if err == nil {
		err = cfg.RPC.Register(jm.address, jm)
	}
	if err == nil && rm != nil {
		var rmID jobgraph.ResourceManagerID
		rmID, err = rm.RegisterJobMaster(ctx, token, jm.resourceID, jm.address, jm.job)
		if err == nil {
			err = jm.loop.Call(ctx, func() error { jm.rmID = rmID; jm.monitorResourceManager(); return nil })
		}
	}
	if err == nil && rm == nil {
		// Off the loop: starting may do I/O, and may call the listener at once.
		jm.rmRetrieval = cfg.ResourceManagerRetrieval()
		if err = jm.rmRetrieval.Start(rmLeaderListener{jm}); err == nil {
			jm.retrieving.Store(true)
		} else {
			err = fmt.Errorf("jobmaster: job %s: starting the ResourceManager's leader retrieval: %w", jm.job, err)
		}
	}
	if err != nil {
		// setUp may have created coordinators (it closes them itself when it fails).
		_ = jm.loop.Call(context.Background(), func() error { jm.closeCoordinators(); return nil })
		jm.shutDown()
		return nil, err
	}
	return jm, nil
}

// startScheduling starts the job's scheduling on the loop, unless the JobMaster was closed (or
// its job ended) first.
func (jm *DefaultJobMaster) startScheduling() {
	jm.loop.Execute(func() {
		if !jm.closed && !jm.terminal {
			if jm.coordHandler != nil {
				jm.coordHandler.start() // Flink: startAllOperatorCoordinators, then scheduling
			}
			jm.sched.StartScheduling()
		}
	})
}

// rmLeaderListener hears the ResourceManager's leader retrieval and posts what it learns to the
// loop. Flink: JobMaster.ResourceManagerLeaderListener.
type rmLeaderListener struct{ jm *DefaultJobMaster }

func (l rmLeaderListener) NotifyLeaderAddress(address string, session ha.SessionID) {
	l.jm.loop.Execute(func() { l.jm.newResourceManagerLeader(address, session) })
}

// HandleError is fatal for the JobMaster (Flink: ResourceManagerLeaderListener.handleError,
// "Fatal error in the ResourceManager leader service"): it can no longer learn of a new leader.
func (l rmLeaderListener) HandleError(err error) {
	reportFatal(l.jm.cfg, fmt.Errorf("jobmaster: job %s: the ResourceManager's leader retrieval failed: %w", l.jm.job, err))
}

// onPanic is the panic handler of every main loop of the JobMaster (loop, outbox, I/O loop,
// lanes): the JobMaster is broken for good, so the handler hears it. The loop that panicked is
// closed already; the others keep running until Close, which still works (its calls onto the
// dead loop return at once).
func (jm *DefaultJobMaster) onPanic(err *jobgraph.PanicError) {
	jm.log.Error("a main loop of the JobMaster panicked", "loop", err.Endpoint, "panic", err.Value, "stack", string(err.Stack))
	reportFatal(jm.cfg, fmt.Errorf("jobmaster: job %s: %w", jm.job, err))
}

// newResourceManagerLeader drops the connection to the earlier ResourceManager leader and
// registers with the new one (none when address is empty). Flink:
// JobMaster.notifyOfNewResourceManagerLeader. On the loop.
func (jm *DefaultJobMaster) newResourceManagerLeader(address string, session ha.SessionID) {
	if jm.closed || !jm.rmConn.NewLeader(address, session) {
		return
	}
	jm.log.Info("new ResourceManager leader", "address", address, "resourceManagerID", jobgraph.ResourceManagerID(session))
	jm.rm, jm.rmID = nil, jobgraph.ResourceManagerID{}
	jm.monitorResourceManager()
}

// registrationAttempt is one RegisterJobMaster with the ResourceManager leader at address, made
// off the loop by the call it returns.
func (jm *DefaultJobMaster) registrationAttempt(address string) func(context.Context) (rpc.ResourceManagerGateway, jobgraph.ResourceManagerID, error) {
	svc, token, from, own, job := jm.cfg.RPC, jm.token, jm.resourceID, jm.address, jm.job
	return func(ctx context.Context) (rpc.ResourceManagerGateway, jobgraph.ResourceManagerID, error) {
		gw, err := rpc.Connect[rpc.ResourceManagerGateway](ctx, svc, address)
		if err != nil {
			return nil, jobgraph.ResourceManagerID{}, fmt.Errorf("connecting to the ResourceManager at %q: %w", address, err)
		}
		id, err := gw.RegisterJobMaster(ctx, token, from, own, job)
		return gw, id, err
	}
}

// registeredWithResourceManager makes the current leader the JobMaster's ResourceManager and
// declares the job's requirements to it anew. Flink: JobMaster.establishResourceManagerConnection
// (the slot pool connecting to the ResourceManager). On the loop.
func (jm *DefaultJobMaster) registeredWithResourceManager(gw rpc.ResourceManagerGateway, id jobgraph.ResourceManagerID) {
	if jm.closed {
		return
	}
	jm.rm, jm.rmID = gw, id
	jm.monitorResourceManager()
	jm.log.Info("registered with the ResourceManager", "resourceManagerID", id)
	if jm.pool != nil {
		jm.declareRequirements(jm.pool.Requirements())
	}
}

// setUp builds the slot pool and the scheduler (and with it the ExecutionGraph). On the loop.
func (jm *DefaultJobMaster) setUp(g *jobgraph.JobGraph, rm rpc.ResourceManagerGateway, recovery *recovered) error {
	jm.rm = rm
	hb, err := heartbeat.New(heartbeat.Config[jobgraph.ResourceID]{
		Timers:              jm.loop,
		Interval:            jm.cfg.HeartbeatInterval,
		Timeout:             jm.cfg.HeartbeatTimeout,
		RPCFailureThreshold: jm.cfg.HeartbeatRPCFailureThreshold,
		RequestHeartbeat:    jm.requestHeartbeat,
		OnTimeout:           jm.taskExecutorHeartbeatTimedOut,
		OnUnreachable:       jm.taskExecutorUnreachable,
	})
	if err != nil {
		return err
	}
	jm.teHeartbeats = hb
	// A receiver: the ResourceManager asks, the JobMaster answers (HeartbeatFromResourceManager).
	jm.rmHeartbeats, err = heartbeat.New(heartbeat.Config[jobgraph.ResourceManagerID]{
		Timers:              jm.loop,
		Interval:            jm.cfg.HeartbeatInterval,
		Timeout:             jm.cfg.HeartbeatTimeout,
		RPCFailureThreshold: jm.cfg.HeartbeatRPCFailureThreshold,
		OnTimeout:           jm.resourceManagerHeartbeatTimedOut,
		OnUnreachable:       jm.resourceManagerUnreachable,
	})
	if err != nil {
		return err
	}
	pool, err := slotpool.New(slotpool.Config{
		Timers:                jm.loop,
		SlotRequestTimeout:    jm.cfg.SlotRequestTimeout,
		IdleSlotTimeout:       jm.cfg.IdleSlotTimeout,
		OnRequirementsChanged: jm.declareRequirements,
		OnReturnSlot:          jm.freeSlot,
		BlockedTaskExecutor:   jm.blockedCause,
	})
	if err != nil {
		return err
	}
	jm.pool = pool
	if l := jm.cfg.JobStatusListener; l != nil {
		l(g.JobID, jobgraph.JobStatusInitializing, time.Now())
	}
	newScheduler := jm.cfg.SchedulerFactory
	if newScheduler == nil {
		newScheduler = scheduler.DefaultSchedulerFactory
	}
	scfg := scheduler.Config{
		Timers:             jm.loop, // restart backoffs, checkpoint intervals and timeouts
		SchedulingStrategy: jm.cfg.SchedulingStrategy,
		SlotRequestTimeout: jm.cfg.SlotRequestTimeout,
		// The scheduler adds the job's attributes itself.
		Logger:                 jm.cfg.Logger,
		JobStatusListener:      jm.cfg.JobStatusListener,
		ExecutionStateListener: jm.executionStateChanged,
		ExceptionHistorySize:   jm.cfg.ExceptionHistorySize,
		SavepointDirectory:     jm.cfg.SavepointDirectory,
		ShuffleMaster:          jm.cfg.ShuffleMaster,
		OnTerminal:             jm.onTerminal,
		JobMasterID:            jm.token,
		CheckpointIOExecutor:   ioExecutor{jm},
	}
	if jm.cfg.Metrics != nil {
		jm.metricGroup = jm.cfg.Metrics.JobGroup(g.JobID, g.Name)
		scfg.Metrics = jm.metricGroup
	}
	if recovery != nil {
		scfg.CheckpointRecoveryFactory = recovery
		scfg.LoadSavepoint = recovery.loadSavepoint
	}
	if jm.coordinated != nil {
		c, err := newCoordinatorHandler(jm, g)
		if err != nil {
			jm.metricGroup.Close()
			return err
		}
		jm.coordHandler, jm.coordinators = c, c
		scfg.OperatorCoordinators = c.contexts()
	}
	sched, err := newScheduler(g, scheduler.FromSlotPool(pool), deployer{jm}, scfg)
	if err == nil && sched == nil {
		err = errors.New("jobmaster: Config.SchedulerFactory returned no scheduler and no error")
	}
	if eg, ok := sched.(executionGraphOf); ok && err == nil && jm.coordHandler != nil {
		err = jm.coordHandler.checkParallelism(eg.ExecutionGraph(), g)
	}
	if err != nil {
		jm.metricGroup.Close()
		jm.closeCoordinators()
		return err
	}
	jm.sched = sched
	return nil
}

// closeCoordinators closes the operator coordinators, if any; later calls do nothing. On the loop.
func (jm *DefaultJobMaster) closeCoordinators() {
	if jm.coordHandler != nil {
		jm.coordHandler.close()
	}
}

// executionStateChanged is the scheduler's ExecutionStateListener: a terminal attempt is no
// longer tracked as deployed (Flink: the listener DefaultExecutionGraphFactory adds), then the
// host's listener hears it. On the loop.
func (jm *DefaultJobMaster) executionStateChanged(attempt jobgraph.ExecutionAttemptID, st jobgraph.ExecutionState) {
	if st.IsTerminal() {
		jm.deployments.stop(attempt)
	}
	jm.trackOperatorEventSender(attempt, st)
	if jm.coordHandler != nil {
		jm.coordHandler.executionStateChanged(attempt, st)
	}
	if l := jm.cfg.ExecutionStateListener; l != nil {
		l(attempt, st)
	}
}

// loopName names one of a job's loops, "<prefix><job ID>", formatted only when asked for (a
// panic's report): the JobMaster and its runner keep theirs in their own structs, so naming
// their loops allocates nothing per job.
type loopName struct {
	prefix string
	job    jobgraph.JobID
}

func (n *loopName) String() string { return n.prefix + n.job.String() }

// textName is a loop's name formatted already (the I/O loop's, the lanes').
type textName string

func (n textName) String() string { return string(n) }

// closedError is ErrClosed naming the job ("jobmaster: job <id>: …", "jobmaster: runner of job
// <id>: …"). Every JobMaster and runner makes one, and most never return it: the message is
// formatted only when asked for. The JobMaster's is wrapped with rpc.Unreachable (see ErrClosed),
// the runner's is not.
type closedError struct {
	what string
	job  jobgraph.JobID
}

func (e *closedError) Error() string {
	return "jobmaster: " + e.what + " " + e.job.String() + ": " + ErrClosed.Error()
}

func (e *closedError) Unwrap() error { return ErrClosed }

// onTerminal is called by the scheduler, on the loop, when the job is globally terminal.
func (jm *DefaultJobMaster) onTerminal(archived *executiongraph.ArchivedExecutionGraph, rootCause error) {
	if jm.terminal {
		return
	}
	jm.terminal = true
	jm.result = Result{Archived: archived, Err: rootCause}
	close(jm.done)
}

// rpcContext bounds one outgoing call by Config.RPCTimeout; over the in-process LocalService it
// is the background context, with no timer (see Config.RPCTimeout).
func (jm *DefaultJobMaster) rpcContext() (context.Context, context.CancelFunc) {
	if jm.inProcess {
		return context.Background(), func() {}
	}
	return context.WithTimeout(context.Background(), jm.cfg.RPCTimeout)
}

// sendAside runs call on a goroutine of its own, out of the outbox's order: for heartbeats,
// which are independent of each other and of every other call, so that a TaskExecutor that does
// not answer (over a remote transport, until the RPC timeout) holds up neither deployments nor
// the heartbeats of the others. Close waits for these goroutines.
func (jm *DefaultJobMaster) sendAside(call func(ctx context.Context) error, onError func(err error)) {
	jm.goAside(func() {
		ctx, cancel := jm.rpcContext()
		defer cancel()
		if err := call(ctx); err != nil && onError != nil {
			jm.loop.Execute(func() { onError(err) })
		}
	})
}

// heartbeatAside is sendAside for a heartbeat RPC: report hears its error, nil on success too,
// on the loop (the heartbeat manager counts both, heartbeat.rpc-failure-threshold).
func (jm *DefaultJobMaster) heartbeatAside(call func(ctx context.Context) error, report func(err error)) {
	jm.goAside(func() {
		ctx, cancel := jm.rpcContext()
		err := call(ctx)
		cancel()
		jm.loop.Execute(func() { report(err) })
	})
}

// goAside runs fn on a goroutine of Config.Goroutines (or its own) that shutDown waits for.
func (jm *DefaultJobMaster) goAside(fn func()) {
	jm.aside.Add(1)
	gopool.Start(jm.cfg.Goroutines, func() {
		defer jm.aside.Done()
		fn()
	})
}

// send runs call in the outbox, in order with every other outgoing call.
func (jm *DefaultJobMaster) send(call func(ctx context.Context) error, onError func(err error)) {
	jm.enqueue(func() {
		ctx, cancel := jm.rpcContext()
		defer cancel()
		if err := call(ctx); err != nil && onError != nil {
			jm.loop.Execute(func() { onError(err) })
		}
	})
}

// enqueue queues fn on the outbox after everything queued before, and closes the open deploy
// batch: a later deploy goes after fn. Every outbox call but deploys goes through here.
func (jm *DefaultJobMaster) enqueue(fn func()) {
	jm.deployMu.Lock()
	defer jm.deployMu.Unlock()
	jm.flushDeploysLocked()
	jm.outbox.Execute(fn)
}

// flushDeploysLocked puts the open deploy batch, if any, on the outbox. deployMu held.
func (jm *DefaultJobMaster) flushDeploysLocked() {
	if b := jm.openDeploys; b != nil {
		jm.openDeploys = nil
		jm.outbox.Execute(func() { jm.sendDeploys(b) })
	}
}

// deployBatch is consecutive deployments in the outbox, by TaskExecutor in order of first
// deployment: one SubmitTasks call per TaskExecutor, however many tasks a bulk puts there.
// Guarded by the JobMaster's deployMu until the outbox takes it.
type deployBatch struct {
	byTE  map[jobgraph.ResourceID]int // index into perTE
	perTE []teDeploys
}

type teDeploys struct {
	id   jobgraph.ResourceID
	gw   rpc.TaskExecutorGateway
	tdds []rpc.TaskDeploymentDescriptor
}

// queueDeploy adds tdd for the TaskExecutor id to the open deploy batch, or opens a new one. A
// new batch is flushed to the outbox by a closure posted to the main loop, which runs once the
// loop task deploying now (a whole bulk, say) has returned: so every deployment of one loop task
// to one TaskExecutor is one SubmitTasks call, whatever the outbox is doing meanwhile. (Sending
// the batch from the outbox as soon as it was queued raced with the loop still filling it.) On
// the main loop.
func (jm *DefaultJobMaster) queueDeploy(id jobgraph.ResourceID, gw rpc.TaskExecutorGateway, tdd rpc.TaskDeploymentDescriptor) {
	jm.deployMu.Lock()
	defer jm.deployMu.Unlock()
	b := jm.openDeploys
	if b == nil {
		b = &deployBatch{byTE: map[jobgraph.ResourceID]int{}}
		jm.openDeploys = b
		flush := func() {
			jm.deployMu.Lock()
			defer jm.deployMu.Unlock()
			if jm.openDeploys == b {
				jm.flushDeploysLocked()
			}
		}
		if !jm.loop.Execute(flush) {
			jm.flushDeploysLocked() // the loop is closing: nothing will run the flush
		}
	}
	i, ok := b.byTE[id]
	if !ok {
		i = len(b.perTE)
		b.byTE[id] = i
		b.perTE = append(b.perTE, teDeploys{id: id, gw: gw})
	}
	b.perTE[i].tdds = append(b.perTE[i].tdds, tdd)
}

// sendDeploys carries out a closed deploy batch: it calls SubmitTasks once per
// TaskExecutor; the deployments that failed go back to the main loop in one closure, each to
// OnDeployFailed. On the outbox.
func (jm *DefaultJobMaster) sendDeploys(b *deployBatch) {
	perTE := b.perTE // closed: it left openDeploys before it was queued here
	type failed struct {
		attempt jobgraph.ExecutionAttemptID
		err     error
	}
	var failures []failed
	var acknowledged []jobgraph.ExecutionAttemptID
	for _, d := range perTE {
		ctx, cancel := jm.rpcContext()
		errs, err := d.gw.SubmitTasks(ctx, jm.token, d.tdds)
		cancel()
		for i, tdd := range d.tdds {
			e := err
			if e == nil && errs != nil {
				e = errs[i]
			}
			if e != nil {
				failures = append(failures, failed{tdd.ExecutionAttemptID, fmt.Errorf("deploying %s to %s: %w", tdd.TaskName, d.id, e)})
			} else {
				acknowledged = append(acknowledged, tdd.ExecutionAttemptID)
			}
		}
	}
	jm.loop.Execute(func() {
		// Fenced by attempt: complete leaves an attempt that became terminal meanwhile untracked.
		for _, a := range acknowledged {
			jm.deployments.complete(a)
		}
		for _, f := range failures {
			jm.sched.OnDeployFailed(f.attempt, f.err)
		}
	})
}

// declareRequirements sends the pool's requirements to the ResourceManager. Declarations replace
// each other, so only the latest one matters: a burst of changes (one per slot request) becomes
// one call with the newest list, as Flink's DeclareResourceRequirementServiceConnectionManager does.
func (jm *DefaultJobMaster) declareRequirements(reqs []rpc.ResourceRequirement) {
	jm.declareMu.Lock()
	jm.declareLatest, jm.declareTo, jm.declareRMID = reqs, jm.rm, jm.rmID
	queued := jm.declareQueued
	// Not registered: nothing to send (the registration declares the newest requirements), so
	// nothing goes on the outbox; a call queued before finds declareTo nil and sends nothing.
	jm.declareQueued = queued || jm.rm != nil
	jm.declareMu.Unlock()
	if queued || jm.rm == nil {
		return
	}
	failed := func(err error) { jm.log.Warn("declaring resource requirements failed", "err", err) }
	jm.send(func(ctx context.Context) error {
		jm.declareMu.Lock()
		reqs, rm, rmID := jm.declareLatest, jm.declareTo, jm.declareRMID
		jm.declareQueued = false
		jm.declareMu.Unlock()
		if rm == nil {
			return nil // not registered: the registration declares them
		}
		msg := rpc.ResourceRequirements{JobID: jm.job, TargetAddress: jm.address, Requirements: reqs}
		if n, ok := rm.(rpc.ResourceManagerNotifier); ok { // the in-process ResourceManager
			n.NotifyRequiredResources(rmID, jm.token, msg, jm.onLoop(failed))
			return nil
		}
		return rm.DeclareRequiredResources(ctx, rmID, jm.token, msg)
	}, failed)
}

// onLoop is a done callback for an rpc notifier (rpc.ResourceManagerNotifier): a non-nil error
// goes to onError on the JobMaster's loop, as send's onError does. nil for a nil onError.
func (jm *DefaultJobMaster) onLoop(onError func(err error)) func(err error) {
	if onError == nil {
		return nil
	}
	return func(err error) {
		if err != nil {
			jm.loop.Execute(func() { onError(err) })
		}
	}
}

// freeSlot is the pool's OnReturnSlot: the slot goes back to its TaskExecutor.
func (jm *DefaultJobMaster) freeSlot(slot slotpool.AllocatedSlot, cause error) {
	jm.sendFreeSlot(slot, cause, true)
}

// sendFreeSlot asks the slot's TaskExecutor to free it, unless the TaskExecutor is gone. When the
// call fails and reoffer is set, freeSlotFailed decides what becomes of the slot.
func (jm *DefaultJobMaster) sendFreeSlot(slot slotpool.AllocatedSlot, cause error, reoffer bool) {
	te, ok := jm.taskExecutors[slot.TaskExecutor]
	if !ok {
		return
	}
	jm.freeing[slot.AllocationID] = true
	done := func(err error) {
		jm.loop.Execute(func() {
			delete(jm.freeing, slot.AllocationID)
			if err != nil && reoffer {
				jm.freeSlotFailed(slot, err)
			}
		})
	}
	jm.enqueue(func() {
		if n, ok := te.(rpc.TaskExecutorNotifier); ok { // the in-process TaskExecutor
			n.NotifyFreeSlot(slot.AllocationID, rpc.Failure(cause), done)
			return
		}
		ctx, cancel := jm.rpcContext()
		defer cancel()
		done(te.FreeSlot(ctx, slot.AllocationID, rpc.Failure(cause)))
	})
}

// freeSlotFailed handles a FreeSlot call that failed: the TaskExecutor may still hold the slot
// for the job. If the TaskExecutor is still registered, the slot is offered to the pool again as
// a free slot (taken if the job needs it; otherwise the next heartbeat from the TaskExecutor,
// which lists the slot, frees it again — see reconcileSlots); if it is not, the slot is dropped
// for good. Flink: the JobMaster's slot pool on a failed freeSlot (SlotPoolImpl "Resubmitting
// slot to slot pool" / "Discarding slot").
func (jm *DefaultJobMaster) freeSlotFailed(slot slotpool.AllocatedSlot, err error) {
	if jm.closed {
		return
	}
	if _, ok := jm.taskExecutors[slot.TaskExecutor]; !ok {
		jm.log.Debug("freeing a slot failed and its TaskExecutor is no longer registered; discarding the slot",
			"allocation", slot.AllocationID, "taskExecutor", slot.TaskExecutor, "err", err)
		return
	}
	offer := rpc.SlotOffer{AllocationID: slot.AllocationID, SlotIndex: slot.SlotIndex, ResourceProfile: slot.Profile}
	accepted := jm.pool.OfferSlots(slot.TaskExecutor, []rpc.SlotOffer{offer})
	jm.log.Debug("freeing a slot failed; offered it to the slot pool again", "allocation", slot.AllocationID,
		"taskExecutor", slot.TaskExecutor, "accepted", len(accepted) == 1, "err", err)
}

// deployer carries the scheduler's side effects out through the outbox. Deploy joins the open
// deploy batch (one SubmitTasks call per TaskExecutor, see queueDeploy); the other calls close it.
type deployer struct{ jm *DefaultJobMaster }

func (d deployer) Deploy(tdd rpc.TaskDeploymentDescriptor, slot slotpool.AllocatedSlot) {
	jm := d.jm
	te, ok := jm.taskExecutors[slot.TaskExecutor]
	if !ok {
		err := fmt.Errorf("TaskExecutor %s is not connected", slot.TaskExecutor)
		jm.loop.Execute(func() { jm.sched.OnDeployFailed(tdd.ExecutionAttemptID, err) })
		return
	}
	jm.deployments.startPending(tdd.ExecutionAttemptID, slot.TaskExecutor)
	jm.queueDeploy(slot.TaskExecutor, te, tdd)
}

// CancelTask sends CancelTask to the TaskExecutor, in order after the calls queued before (the
// deployment it undoes among them). A call that fails is made again, up to CancelTaskTries
// calls in all, the retries off the outbox (so a silent TaskExecutor holds up the other calls
// for one RPC timeout, not three); when the last one fails too, the attempt counts as CANCELED
// (reported to the scheduler as such) with a warning matching ErrTaskNotCanceled: if the task
// still runs there, the TaskExecutor's next heartbeat reports an execution the JobMaster no
// longer tracks, and reconcileDeployments cancels it. Flink: Execution.sendCancelRpcCall with
// NUM_CANCEL_CALL_TRIES, whose failure fails the execution, completing a cancel under way.
func (d deployer) CancelTask(attempt jobgraph.ExecutionAttemptID, location jobgraph.ResourceID) {
	jm := d.jm
	te, ok := jm.taskExecutors[location]
	if !ok {
		return
	}
	gaveUp := func(err error) {
		if jm.closed {
			return
		}
		jm.log.Warn("canceling a task failed; counting it as canceled", "execution", attempt, "taskExecutor", location,
			"err", fmt.Errorf("%w after %d calls: %w", ErrTaskNotCanceled, CancelTaskTries, err))
		jm.sched.UpdateTaskExecutionState(rpc.TaskExecutionState{ExecutionAttemptID: attempt, State: jobgraph.ExecutionStateCanceled})
	}
	jm.send(func(ctx context.Context) error { return te.CancelTask(ctx, attempt) }, func(error) {
		jm.sendAside(func(context.Context) error {
			var err error
			for range CancelTaskTries - 1 {
				ctx, cancel := jm.rpcContext()
				err = te.CancelTask(ctx, attempt)
				cancel()
				if err == nil {
					return nil
				}
			}
			return err
		}, gaveUp)
	})
}

func (d deployer) ReleasePartitions(location jobgraph.ResourceID, partitions []rpc.ResultPartitionID) {
	if te, ok := d.jm.taskExecutors[location]; ok {
		job := d.jm.job
		d.jm.send(func(ctx context.Context) error { return te.ReleasePartitions(ctx, job, partitions) }, nil)
	}
}

// causeOf is the error a gateway message's failure stands for; "no cause given" for none.
func causeOf(info *jobgraph.ErrorInfo) error {
	if err := info.Err(); err != nil {
		return err
	}
	return errors.New("no cause given")
}

// fenced runs fn on the loop if token is the session's: a closed JobMaster answers its closed
// error whatever the token, an open one a *rpc.FencingError for a stale token.
func (jm *DefaultJobMaster) fenced(ctx context.Context, token jobgraph.JobMasterID, fn func() error) error {
	return jm.loop.Call(ctx, func() error {
		if err := jm.fence(token); err != nil {
			return err
		}
		return fn()
	})
}

// fence is fenced's check, on the loop: the closed error, a *rpc.FencingError, or nil.
func (jm *DefaultJobMaster) fence(token jobgraph.JobMasterID) error {
	if jm.closed {
		return jm.closedErr
	}
	return jm.tokenError(token)
}

// tokenError is a *rpc.FencingError when token is not the JobMaster's, else nil. jm.token never
// changes, so it may be called on any goroutine.
func (jm *DefaultJobMaster) tokenError(token jobgraph.JobMasterID) error {
	if token != jm.token {
		return &rpc.FencingError{Endpoint: "JobMaster " + jm.address, Expected: jm.token.String(), Got: token.String()}
	}
	return nil
}

// UpdateTaskExecutionState implements rpc.JobMasterGateway.
func (jm *DefaultJobMaster) UpdateTaskExecutionState(ctx context.Context, token jobgraph.JobMasterID, state rpc.TaskExecutionState) (bool, error) {
	var applied bool
	err := jm.fenced(ctx, token, func() error {
		applied = jm.applyTaskExecutionState(state)
		return nil
	})
	return applied, err
}

// NotifyTaskExecutionState implements rpc.TaskExecutionStateNotifier: UpdateTaskExecutionState
// queued on the loop, fenced there, without waiting for it; done hears the fencing or closed
// error on the loop, or at once when the loop takes nothing any more.
func (jm *DefaultJobMaster) NotifyTaskExecutionState(token jobgraph.JobMasterID, state rpc.TaskExecutionState, done func(err error)) {
	// A closed loop answers its closed error (jm.closedErr, or the panic that ended it), as a
	// fenced call returns it.
	jm.loop.Notify(func() error {
		err := jm.fence(token)
		if err == nil {
			jm.applyTaskExecutionState(state)
		}
		return err
	}, done)
}

// applyTaskExecutionState hands a TaskExecutor's report to the scheduler; on the loop, fenced.
func (jm *DefaultJobMaster) applyTaskExecutionState(state rpc.TaskExecutionState) bool {
	host, deployed := jm.deployments.hostOf(state.ExecutionAttemptID)
	applied := jm.sched.UpdateTaskExecutionState(state)
	if applied && deployed && state.State == jobgraph.ExecutionStateFailed {
		jm.taskFailedOn(host)
	}
	if state.State.IsTerminal() {
		jm.deployments.stop(state.ExecutionAttemptID) // the TaskExecutor no longer holds it
	}
	return applied
}

// RegisterTaskExecutor implements rpc.JobMasterGateway.
func (jm *DefaultJobMaster) RegisterTaskExecutor(ctx context.Context, token jobgraph.JobMasterID, reg rpc.TaskExecutorRegistration) error {
	// Fenced (and closed) before connecting, as after; this first check off the loop, as
	// checkpointMessage's: the token never changes and closedFlag is set when Close begins.
	if jm.closedFlag.Load() {
		return jm.closedErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := jm.tokenError(token); err != nil {
		return err
	}
	te, err := rpc.Connect[rpc.TaskExecutorGateway](ctx, jm.cfg.RPC, reg.Address)
	if err != nil {
		return fmt.Errorf("jobmaster: connecting TaskExecutor %s: %w", reg.ResourceID, err)
	}
	return jm.fenced(ctx, token, func() error {
		jm.taskExecutors[reg.ResourceID] = te
		jm.teHeartbeats.Monitor(reg.ResourceID)
		return nil
	})
}

// OfferSlots implements rpc.JobMasterGateway.
func (jm *DefaultJobMaster) OfferSlots(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, offers []rpc.SlotOffer) ([]rpc.SlotOffer, error) {
	var accepted []rpc.SlotOffer
	err := jm.fenced(ctx, token, func() error {
		if _, ok := jm.taskExecutors[taskExecutor]; !ok {
			return fmt.Errorf("jobmaster: job %s: TaskExecutor %s offered slots before registering", jm.job, taskExecutor)
		}
		if jm.blockedCause(taskExecutor) != nil {
			jm.log.Debug("declining the slots of a blocked TaskExecutor", "taskExecutor", taskExecutor, "slots", len(offers))
			return nil // Flink: BlocklistDeclarativeSlotPool.offerSlots
		}
		accepted = jm.pool.OfferSlots(taskExecutor, offers)
		return nil
	})
	return accepted, err
}

// FailSlot implements rpc.JobMasterGateway.
func (jm *DefaultJobMaster) FailSlot(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, allocation jobgraph.AllocationID, cause *jobgraph.ErrorInfo) error {
	return jm.fenced(ctx, token, func() error {
		if err := jm.pool.ReleaseSlot(allocation, causeOf(cause)); err != nil {
			jm.log.Debug("FailSlot for a slot the pool does not hold", "allocation", allocation, "err", err)
		}
		return nil
	})
}

// DisconnectTaskExecutor implements rpc.JobMasterGateway.
func (jm *DefaultJobMaster) DisconnectTaskExecutor(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error {
	return jm.fenced(ctx, token, func() error {
		jm.disconnectTaskExecutor(taskExecutor, causeOf(cause), false)
		return nil
	})
}

// disconnectTaskExecutor forgets the TaskExecutor: it is no longer monitored, the partitions it
// held are lost, and its slots leave the pool with cause (the scheduler fails the tasks in them,
// which restart or fail the job as its restart strategy says). With
// tell, the TaskExecutor is asked to drop the job too, in case it is still there.
// Flink: JobMaster.disconnectTaskManager. On the loop.
func (jm *DefaultJobMaster) disconnectTaskExecutor(id jobgraph.ResourceID, cause error, tell bool) {
	te, registered := jm.taskExecutors[id]
	// Forget the TaskExecutor first: its slots are gone with it, so freeSlot sends nothing there.
	delete(jm.taskExecutors, id)
	jm.teHeartbeats.Unmonitor(id)
	jm.deployments.stopHost(id)
	// The partitions go before the slots, so the failovers of the tasks that ran there already
	// see them lost.
	jm.sched.PartitionsLost(id)
	jm.pool.ReleaseSlots(id, cause)
	if registered && tell {
		job, token, info := jm.job, jm.token, rpc.Failure(cause)
		jm.send(func(ctx context.Context) error { return te.DisconnectJobMaster(ctx, token, job, info) }, nil)
	}
}

// requestHeartbeat asks a registered TaskExecutor for a heartbeat; it answers with
// HeartbeatFromTaskExecutor. The request's result goes to report on the loop (unreachable
// failures count toward heartbeat.rpc-failure-threshold). Flink: JobMaster's TaskManager
// HeartbeatSender. On the loop.
func (jm *DefaultJobMaster) requestHeartbeat(id jobgraph.ResourceID, report func(error)) {
	te, ok := jm.taskExecutors[id]
	if !ok {
		jm.teHeartbeats.Unmonitor(id)
		return
	}
	from := jm.resourceID
	jm.heartbeatAside(func(ctx context.Context) error { return te.HeartbeatFromJobMaster(ctx, from) }, func(err error) {
		if err != nil {
			jm.log.Debug("heartbeat request to a TaskExecutor failed", "taskExecutor", id, "err", err)
		}
		report(err)
	})
}

// taskExecutorUnreachable disconnects a TaskExecutor whose last heartbeat.rpc-failure-threshold
// heartbeat requests failed as unreachable, as a timeout does. Flink:
// JobMaster.TaskManagerHeartbeatListener.notifyTargetUnreachable. On the loop.
func (jm *DefaultJobMaster) taskExecutorUnreachable(id jobgraph.ResourceID, last error) {
	if jm.closed {
		return
	}
	cause := &heartbeat.UnreachableError{Target: "TaskExecutor " + string(id), Failures: jm.teHeartbeats.RPCFailureThreshold(), LastFailure: last.Error()}
	jm.log.Warn("TaskExecutor unreachable; disconnecting it", "taskExecutor", id, "cause", cause)
	jm.disconnectTaskExecutor(id, cause, true)
}

// taskExecutorHeartbeatTimedOut disconnects a TaskExecutor silent for heartbeat.timeout.
// Flink: JobMaster.TaskManagerHeartbeatListener.notifyHeartbeatTimeout. On the loop.
func (jm *DefaultJobMaster) taskExecutorHeartbeatTimedOut(id jobgraph.ResourceID) {
	if jm.closed {
		return
	}
	cause := &heartbeat.TimeoutError{Target: "TaskExecutor " + string(id), Timeout: jm.teHeartbeats.Timeout()}
	jm.log.Warn("TaskExecutor heartbeat timed out; disconnecting it", "taskExecutor", id, "cause", cause)
	jm.disconnectTaskExecutor(id, cause, true)
}

// DisconnectResourceManager implements rpc.JobMasterGateway: the ResourceManager dropped the job
// (its JobMaster heartbeat timed out, say) and with it the job's requirements, so the JobMaster
// registers again and declares its requirements anew. A disconnect whose rm is not the
// ResourceManagerID the JobMaster registered with (an earlier ResourceManager's) fails with an
// *rpc.FencingError (rpc.ErrFencingTokenMismatch) and changes nothing.
// Flink: JobMaster.disconnectResourceManager / reconnectToResourceManager.
func (jm *DefaultJobMaster) DisconnectResourceManager(ctx context.Context, token jobgraph.JobMasterID, rm jobgraph.ResourceManagerID, cause *jobgraph.ErrorInfo) error {
	return jm.fenced(ctx, token, func() error {
		if rm != jm.rmID {
			return &rpc.FencingError{Endpoint: "JobMaster " + jm.address + " (ResourceManagerID)", Expected: jm.rmID.String(), Got: rm.String()}
		}
		jm.log.Warn("ResourceManager disconnected; registering again", "cause", cause.Err())
		jm.reconnectToResourceManager()
		return nil
	})
}

// reconnectToResourceManager drops the connection to the ResourceManager and registers again:
// with the ResourceManager leader's retrieval, through the registration connection (to the
// leader it knows by then); with a fixed ResourceManagerAddress, with the same gateway, after
// which the requirements are declared anew. Nothing while the job is terminal or not connected.
// Where we differ: Flink's closeResourceManagerConnection first tells the ResourceManager
// (disconnectJobManager); ours does not, as that call could overtake the registration after it,
// and a registration replaces the job's earlier one there (ResourceManager.RegisterJobMaster).
// A failed registration with the fixed gateway is tried again after
// cluster.registration.error-delay (10 s), until one succeeds, the job is terminal or the
// JobMaster closes. Flink: JobMaster.reconnectToResourceManager. On the loop.
func (jm *DefaultJobMaster) reconnectToResourceManager() {
	if jm.terminal || jm.rm == nil {
		return
	}
	if jm.rmConn != nil {
		jm.rm, jm.rmID = nil, jobgraph.ResourceManagerID{}
		jm.monitorResourceManager()
		jm.rmConn.Reconnect()
		return
	}
	gw, token, from, address, job := jm.rm, jm.token, jm.resourceID, jm.address, jm.job
	jm.rmHeartbeats.Unmonitor(jm.rmID) // until the registration's answer: monitored again then
	jm.rmAttempt++
	attempt := jm.rmAttempt
	jm.enqueue(func() {
		ctx, cancel := jm.rpcContext()
		defer cancel()
		rmID, err := gw.RegisterJobMaster(ctx, token, from, address, job)
		jm.loop.Execute(func() {
			switch {
			case jm.closed:
			case err != nil:
				// Tried again after cluster.registration.error-delay, as the leader retrieval's
				// connection does, unless a later attempt was made by then.
				jm.log.Warn("registering with the ResourceManager again failed", "retryIn", registration.DefaultErrorDelay, "err", err)
				jm.loop.Schedule(registration.DefaultErrorDelay, func() {
					if !jm.closed && jm.rmAttempt == attempt && jm.rm == gw {
						jm.reconnectToResourceManager()
					}
				})
			default:
				jm.rmID = rmID
				jm.monitorResourceManager()
				jm.declareRequirements(jm.pool.Requirements())
			}
		})
	})
}

// monitorResourceManager makes the ResourceManager the JobMaster is registered with, if any, the
// only one whose heartbeats it monitors, its timeout starting now. On the loop.
func (jm *DefaultJobMaster) monitorResourceManager() {
	if jm.rmHeartbeats == nil || jm.closed {
		return
	}
	for _, id := range jm.rmHeartbeats.Targets() {
		if id != jm.rmID || jm.rm == nil {
			jm.rmHeartbeats.Unmonitor(id)
		}
	}
	if jm.rm != nil && !jm.rmHeartbeats.IsMonitored(jm.rmID) {
		jm.rmHeartbeats.Monitor(jm.rmID)
	}
}

// resourceManagerHeartbeatTimedOut registers again with a ResourceManager that sent no
// heartbeat request for heartbeat.timeout. Flink: JobMaster.ResourceManagerHeartbeatListener.
// notifyHeartbeatTimeout. On the loop.
func (jm *DefaultJobMaster) resourceManagerHeartbeatTimedOut(id jobgraph.ResourceManagerID) {
	if jm.closed || id != jm.rmID {
		return
	}
	cause := &heartbeat.TimeoutError{Target: "ResourceManager " + id.String(), Timeout: jm.rmHeartbeats.Timeout()}
	jm.log.Warn("ResourceManager heartbeat timed out; registering again", "cause", cause)
	jm.reconnectToResourceManager()
}

// resourceManagerUnreachable registers again with a ResourceManager whose heartbeat answers
// failed heartbeat.rpc-failure-threshold times in a row as unreachable. Flink:
// JobMaster.ResourceManagerHeartbeatListener.notifyTargetUnreachable. On the loop.
func (jm *DefaultJobMaster) resourceManagerUnreachable(id jobgraph.ResourceManagerID, last error) {
	if jm.closed || id != jm.rmID {
		return
	}
	cause := &heartbeat.UnreachableError{Target: "ResourceManager " + id.String(), Failures: jm.rmHeartbeats.RPCFailureThreshold(), LastFailure: last.Error()}
	jm.log.Warn("ResourceManager unreachable; registering again", "cause", cause)
	jm.reconnectToResourceManager()
}

// HeartbeatFromTaskExecutor implements rpc.JobMasterGateway: a registered TaskExecutor answers a
// heartbeat request (or sends one), listing the slots it holds for the job. The TaskExecutor's
// heartbeat timeout starts over, and slots the TaskExecutor lists that the job no longer has are
// freed there again (see reconcileSlots). The accumulator snapshots it carries become those of
// their current attempts (Flink: JobMaster's TaskManagerHeartbeatListener.reportPayload), and
// its ExecutionDeploymentReport is reconciled with what the JobMaster deployed there: attempts
// the JobMaster does not know are canceled on the TaskExecutor, acknowledged deployments not
// reported fail with ErrMissingDeployment (see reconcileDeployments). It fails with ErrUnknownTaskExecutor for a
// TaskExecutor that is not registered, so that one does not take the JobMaster for alive.
func (jm *DefaultJobMaster) HeartbeatFromTaskExecutor(ctx context.Context, taskExecutor jobgraph.ResourceID, report rpc.AllocatedSlotReport) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return jm.loop.Call(ctx, func() error {
		if jm.closed {
			return jm.closedErr
		}
		if !jm.teHeartbeats.ReceiveHeartbeat(taskExecutor) {
			return fmt.Errorf("jobmaster: job %s: heartbeat from TaskExecutor %s: %w", jm.job, taskExecutor, ErrUnknownTaskExecutor)
		}
		jm.reconcileSlots(taskExecutor, report)
		jm.reconcileDeployments(taskExecutor, report)
		if u, ok := jm.sched.(scheduler.AccumulatorUpdater); ok {
			for _, snap := range report.Accumulators {
				u.UpdateAccumulators(snap) // it drops the snapshots of outdated attempts
			}
		}
		return nil
	})
}

// reconcileSlots frees, on the TaskExecutor, the slots it reports holding for the job that the
// pool does not have and that no FreeSlot call is in flight for: slots whose FreeSlot failed and
// that the job did not need when they were offered to the pool again. Flink reconciles from the
// other side (TaskExecutor.syncSlotsWithSnapshotFromJobMaster frees what the JobMaster's
// AllocatedSlotReport does not list). On the loop.
func (jm *DefaultJobMaster) reconcileSlots(id jobgraph.ResourceID, report rpc.AllocatedSlotReport) {
	if report.JobID != jm.job || jm.pool == nil {
		return
	}
	for _, a := range report.Slots {
		if _, inPool := jm.pool.Slot(a); inPool || jm.freeing[a] {
			continue
		}
		cause := fmt.Errorf("job %s: TaskExecutor %s holds slot %s, which the job no longer has", jm.job, id, a)
		jm.log.Debug("freeing a slot the job no longer has", "allocation", a, "taskExecutor", id)
		jm.sendFreeSlot(slotpool.AllocatedSlot{AllocationID: a, TaskExecutor: id}, cause, false)
	}
}

// HeartbeatFromResourceManager implements rpc.JobMasterGateway: the JobMaster answers with
// ResourceManagerGateway.HeartbeatFromJobMaster, to the ResourceManager it is registered with,
// whose heartbeat timeout starts over (Config.HeartbeatTimeout; rm, the sender's ResourceID, is
// not checked: the JobMaster knows one ResourceManager at a time). Without a registered
// ResourceManager it does nothing.
func (jm *DefaultJobMaster) HeartbeatFromResourceManager(ctx context.Context, rm jobgraph.ResourceID) error {
	return jm.loop.Call(ctx, func() error {
		if jm.closed {
			return jm.closedErr
		}
		if gw := jm.rm; gw != nil {
			from, rmID := jm.resourceID, jm.rmID
			jm.rmHeartbeats.ReceiveHeartbeat(rmID)
			jm.heartbeatAside(func(ctx context.Context) error { return gw.HeartbeatFromJobMaster(ctx, rmID, from) },
				jm.rmHeartbeats.TrackRPC(rmID))
		}
		return nil
	})
}

// Address implements JobMaster.
func (jm *DefaultJobMaster) Address() string { return jm.address }

// Gateway implements JobMaster.
func (jm *DefaultJobMaster) Gateway() rpc.JobMasterGateway { return jm }

// Done implements JobMaster.
func (jm *DefaultJobMaster) Done() <-chan struct{} { return jm.done }

// Result implements JobMaster; valid once Done is closed.
func (jm *DefaultJobMaster) Result() Result {
	<-jm.done
	return jm.result
}

// Cancel implements JobMaster: the job goes CANCELLING, then CANCELED once its tasks are.
func (jm *DefaultJobMaster) Cancel(ctx context.Context) error {
	return jm.loop.Call(ctx, func() error {
		if jm.closed {
			return jm.closedErr
		}
		jm.sched.Cancel()
		return nil
	})
}

// RequestJobStatus implements JobMaster.
func (jm *DefaultJobMaster) RequestJobStatus(ctx context.Context) (jobgraph.JobStatus, error) {
	return mainloop.Submit(ctx, jm.loop, func() (jobgraph.JobStatus, error) {
		if jm.closed {
			return 0, jm.closedErr
		}
		return jm.sched.JobStatus(), nil
	})
}

// RequestJob implements JobMaster.
func (jm *DefaultJobMaster) RequestJob(ctx context.Context) (*executiongraph.ArchivedExecutionGraph, error) {
	return mainloop.Submit(ctx, jm.loop, func() (*executiongraph.ArchivedExecutionGraph, error) {
		if jm.closed {
			return nil, jm.closedErr
		}
		return jm.sched.Archive(), nil
	})
}

// Close implements JobMaster: a job not yet terminal is SUSPENDED and its tasks canceled; every
// slot goes back to its TaskExecutor and the ResourceManager forgets the job. It waits for the
// outgoing calls already queued (a call through an rpc notifier, the in-process
// ResourceManager's, until the recipient's loop has queued it: what that loop takes later sees
// it done) and returns the final archived graph.
func (jm *DefaultJobMaster) Close() *executiongraph.ArchivedExecutionGraph {
	jm.closeOnce.Do(func() {
		jm.closedFlag.Store(true)
		_ = jm.loop.Call(context.Background(), func() error {
			jm.closed = true
			if jm.teHeartbeats != nil {
				jm.teHeartbeats.Stop()
			}
			if jm.rmHeartbeats != nil {
				jm.rmHeartbeats.Stop()
			}
			if jm.sched == nil {
				return nil
			}
			if jm.terminal {
				// The archive the job ended with is the final one: a terminal graph changes no more.
				jm.closedArc = jm.result.Archived
			} else {
				jm.sched.Suspend(fmt.Errorf("job %s: %w", jm.job, ErrClosed))
				jm.closedArc = jm.sched.Archive()
			}
			// After the tasks were canceled (their coordinators heard of it), before the slots go.
			jm.closeCoordinators()
			jm.pool.Close()
			// After the slots are freed, each TaskExecutor forgets the job: what is left of its
			// partitions there is dropped. Flink: JobMaster.disconnectTaskManager on stop.
			job, token := jm.job, jm.token
			cause := rpc.Failure(fmt.Errorf("job %s: %w", job, ErrClosed))
			for _, te := range jm.taskExecutors {
				jm.send(func(ctx context.Context) error {
					if n, ok := te.(rpc.TaskExecutorNotifier); ok { // the in-process TaskExecutor
						n.NotifyDisconnectJobMaster(token, job, cause, nil)
						return nil
					}
					return te.DisconnectJobMaster(ctx, token, job, cause)
				}, nil)
			}
			if rm, rmID := jm.rm, jm.rmID; rm != nil {
				jm.send(func(ctx context.Context) error {
					if n, ok := rm.(rpc.ResourceManagerNotifier); ok { // the in-process ResourceManager
						n.NotifyJobMasterDisconnected(rmID, token, job, cause, nil)
						return nil
					}
					return rm.DisconnectJobMaster(ctx, rmID, token, job, cause)
				}, nil)
			}
			return nil
		})
		jm.shutDown()
	})
	return jm.closedArc
}

func (jm *DefaultJobMaster) shutDown() {
	if jm.retrieving.Load() {
		if err := jm.rmRetrieval.Stop(); err != nil {
			jm.log.Warn("stopping the ResourceManager's leader retrieval failed", "err", err)
		}
	}
	jm.cfg.RPC.Unregister(jm.address)
	jm.loop.Close()        // no heartbeat goroutine or registration attempt is started after this
	jm.metricGroup.Close() // after the loop: nothing registers or publishes any more
	if jm.rmCancel != nil {
		jm.rmCancel()
	}
	jm.aside.Wait()
	jm.outbox.Close()
	if jm.lanes != nil {
		jm.lanes.close() // after the outbox: nothing hands them calls any more
	}
	// After the loop: its last work (a store's shutdown) still runs.
	jm.ioMu.Lock()
	io := jm.io
	jm.ioClosed = true
	jm.ioMu.Unlock()
	if io != nil {
		io.Close()
	}
}

// ioLoop returns the I/O loop, starting it on the first call; nil once shutDown closed it.
func (jm *DefaultJobMaster) ioLoop() *mainloop.Loop {
	jm.ioMu.Lock()
	defer jm.ioMu.Unlock()
	if jm.io == nil && !jm.ioClosed {
		jm.io = mainloop.NewNamedOn(jm.cfg.Goroutines, textName("jobmaster-io-"+jm.job.String()), jm.closedErr)
		jm.io.SetPanicHandler(jm.onPanic)
	}
	return jm.io
}
