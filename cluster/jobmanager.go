package cluster

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
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/internal/gopool"
	"github.com/jobgraph/jobgraph/internal/heartbeat"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/metrics"
	"github.com/jobgraph/jobgraph/resourcemanager"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
)

// DefaultResourceManagerAddress is JobManagerConfig.ResourceManagerAddress's default: the name
// the ResourceManager is registered under on the rpc.Service and confirms to its leader election.
const DefaultResourceManagerAddress = "resourcemanager"

// jobGoroutinesIdle is how many finished goroutines of its jobs a JobManager keeps for the next
// job: one job's runner and JobMaster use about six at once (the runner's loop and its
// operation, the ServiceProcess, the JobMaster's loop, outbox and registration attempt), and the
// next job starts while the last one's close is still under way.
const jobGoroutinesIdle = 16

// DefaultDispatcherAddress is JobManagerConfig.DispatcherAddress's default (dispatcher.DefaultAddress).
const DefaultDispatcherAddress = dispatcher.DefaultAddress

// JobManagerConfig configures a JobManager: its Dispatcher (under HA's Dispatcher leader
// election), its ResourceManager (under HA's ResourceManager leader election) and the JobMaster
// of each job (under the job's JobMaster leader election). Zero values take the defaults named;
// NewJobManager refuses a negative count or duration, an unknown scheduling strategy and
// inconsistent blocklist or heartbeat options with a *ConfigError naming the field and Flink's
// option key. Flink: the JobManager's Configuration, read by ClusterEntrypoint.
type JobManagerConfig struct {
	// RPC is the transport every endpoint of the JobManager registers on and finds the
	// TaskExecutors through: the ResourceManager under ResourceManagerAddress, the leading
	// Dispatcher under DispatcherAddress, each JobMaster under "jobmaster/<job>/<session>".
	// Default a fresh rpc.NewLocalService(), which only endpoints of this process can reach; a
	// JobManager whose TaskExecutors run in other processes needs a network transport
	// (transport/grpc). The JobManager closes a Service it created, never the host's.
	RPC rpc.Service
	// HA provides the leader elections, the plan and result stores and the checkpoints (its
	// CheckpointRecoveryFactory is every JobMaster's and the Dispatcher's global cleanup's).
	// Default a fresh embedded.New(), which no other process shares: TaskExecutors of other
	// processes then need the ResourceManager's fixed address (TaskExecutorConfig). With HA
	// services other JobManagers share (ha/file, ha/etcd), a JobManager that does not lead is a
	// standby and takes over when granted. The JobManager closes HA services it created, never
	// the host's.
	HA ha.Services
	// ResourceManagerAddress is where the ResourceManager is registered on RPC and the address it
	// confirms to HA's ResourceManager election, so TaskExecutors and JobMasters retrieve it;
	// default DefaultResourceManagerAddress's address on RPC (rpc.AddressOf:
	// "<host:port>/resourcemanager" on grpctransport.Service, the name itself in-process), so
	// others reach it from their processes; ResourceManagerAddress() returns it. A value set
	// is used as it is. Flink: the ResourceManager's RPC endpoint, at
	// jobmanager.rpc.address and jobmanager.rpc.port (here the transport decides the host and
	// port; the address is what RPC resolves).
	ResourceManagerAddress string
	// DispatcherAddress is where the leading Dispatcher is registered on RPC and the address it
	// confirms to HA's Dispatcher election; default DefaultDispatcherAddress's address on RPC,
	// as for ResourceManagerAddress.
	DispatcherAddress string
	// SlotRequestTimeout: slot.request.timeout, default 300 s. A job that waits this long for a
	// slot fails with slotpool.ErrNoResourceAvailable, also when the slots are busy with other
	// jobs: size it for the backlog a host submits.
	SlotRequestTimeout time.Duration
	// IdleSlotTimeout: slot.idle.timeout, default 50 s.
	IdleSlotTimeout time.Duration
	// SchedulingStrategy: "region" (default, scheduler.StrategyRegion) or "vertexwise"
	// (scheduler.StrategyVertexwise). Flink 1.12: jobmanager.scheduler.scheduling-strategy.
	SchedulingStrategy string
	// HeartbeatInterval: heartbeat.interval, default 10 s: how often the ResourceManager and each
	// JobMaster ask the TaskExecutors (and the ResourceManager the JobMasters) for a heartbeat.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout: heartbeat.timeout, default 50 s: a TaskExecutor silent this long (its
	// process killed, say) is dropped by the ResourceManager and by every JobMaster, whose tasks
	// on it fail and fail over; not shorter than HeartbeatInterval. The TaskExecutors should be
	// given the same two values (TaskExecutorConfig.HeartbeatInterval and HeartbeatTimeout).
	HeartbeatTimeout time.Duration
	// HeartbeatRPCFailureThreshold: heartbeat.rpc-failure-threshold, default 2: a TaskExecutor
	// (or JobMaster) whose last this many heartbeat requests failed because it could not be
	// reached (rpc.IsUnreachable: killed, its process gone, never a timeout) is dropped at once,
	// as on its heartbeat.timeout, by the ResourceManager and every JobMaster: a killed
	// TaskExecutor after about this many heartbeat.interval, not heartbeat.timeout. -1 turns it
	// off; 0 means the default (Flink refuses 0); below -1 is an error. Give the TaskExecutors
	// the same value.
	HeartbeatRPCFailureThreshold int
	// RequirementCheckDelay: slotmanager.requirement-check.delay, default 50 ms; negative: never
	// held back. See resourcemanager.Config.RequirementCheckDelay.
	RequirementCheckDelay time.Duration
	// ShuffleMaster is every JobMaster's side of the shuffle the TaskExecutors use
	// (jobmaster.Config.ShuffleMaster; Flink: shuffle-service-factory.class). Default none: no
	// shuffle descriptors, as the in-memory shuffle needs none; a network shuffle needs its own.
	ShuffleMaster scheduler.ShuffleMaster
	// JobStatusListener, if set, hears every job status transition of every job. It runs on the
	// job's JobMaster loop and must not block.
	JobStatusListener func(job jobgraph.JobID, status jobgraph.JobStatus, at time.Time)
	// ExecutionStateListener, if set, hears every state every execution attempt enters after
	// CREATED. It runs on the job's JobMaster loop and must not block.
	ExecutionStateListener func(attempt jobgraph.ExecutionAttemptID, state jobgraph.ExecutionState)
	// OperatorCoordinators holds the operator coordinators the jobs' vertices name, by name;
	// every JobMaster gets it (jobmaster.Config.OperatorCoordinators). nil: none, and a job whose
	// vertex names one fails its initialization naming the vertex and the coordinator.
	OperatorCoordinators *coordination.Registry
	// ExceptionHistorySize: web.exception-history-size, default 16.
	ExceptionHistorySize int
	// JobStoreExpiration: jobstore.expiration-time, default 1 h; negative: never. See
	// dispatcher.Config.JobStoreExpiration.
	JobStoreExpiration time.Duration
	// JobStoreMaxCapacity: jobstore.max-capacity, default (0) unlimited.
	JobStoreMaxCapacity int
	// ParallelismOverrides: pipeline.jobvertex-parallelism-overrides, see
	// dispatcher.Config.ParallelismOverrides.
	ParallelismOverrides map[jobgraph.JobVertexID]int
	// ClientAlivenessCheckInterval: $internal.dispatcher.client-aliveness-check.interval,
	// default (0) 1 min. See dispatcher.Config.ClientAlivenessCheckInterval.
	ClientAlivenessCheckInterval time.Duration
	// CleanupExponentialDelayInitialBackoff, …MaxBackoff and …Attempts:
	// cleanup-strategy.exponential-delay.initial-backoff (default 1 s), .max-backoff (default
	// 1 h) and .attempts (default 0: unlimited). See dispatcher.Config; NewJobManager returns the
	// Dispatcher's error for bad values.
	CleanupExponentialDelayInitialBackoff time.Duration
	CleanupExponentialDelayMaxBackoff     time.Duration
	CleanupExponentialDelayAttempts       int
	// SavepointDirectory: execution.checkpointing.savepoint-dir, the target of savepoints that
	// name none; default none (they fail with scheduler.ErrNoSavepointDirectory).
	SavepointDirectory string
	// ResourceBlocklistEnabled: cluster.resource-blocklist.enabled (FLIP-224), default false.
	ResourceBlocklistEnabled bool
	// BlocklistItemTimeout: cluster.resource-blocklist.item.timeout, default 1 h.
	BlocklistItemTimeout time.Duration
	// BlocklistAction: cluster.resource-blocklist.action (ours), MARK_BLOCKED (default) or
	// MARK_BLOCKED_AND_EVACUATE_TASKS.
	BlocklistAction rpc.BlockAction
	// BlocklistMaxTaskFailuresPerInterval and BlocklistTaskFailureInterval: the task-failure rule
	// (cluster.resource-blocklist.task-failure.max-failures-per-interval and
	// .failure-rate-interval, default off and 1 min); they need ResourceBlocklistEnabled.
	BlocklistMaxTaskFailuresPerInterval int
	BlocklistTaskFailureInterval        time.Duration
	// FatalErrorHandler hears what the JobManager cannot recover from (Flink's
	// FatalErrorHandler): what its Dispatcher Runner reports (the Dispatcher leader election's
	// error, a failed recovery, a recovered job whose JobMaster failed to initialize, a globally
	// terminated job whose result cannot be written to the JobResultStore), the ResourceManager's
	// leader election error, each JobMaster's (jobmaster.Config.FatalErrorHandler: its
	// ResourceManager retrieval's error), and a panic on any of their main loops — a broken
	// invariant or a bug — as an error wrapping a *jobgraph.PanicError. Called on a goroutine of
	// the JobManager's; it must not wait for the JobManager (call Close from another goroutine).
	// Default (nil): the error is logged at Error level and the JobManager closes itself, as
	// Flink's ClusterEntrypoint ends the process. Either way FatalError returns the first one
	// from then on, Failed's context is canceled with it, and Wait returns an error wrapping it.
	// The Dispatcher's own calls do not carry it: a job whose JobMaster died answers SUSPENDED,
	// without a Failure, once the JobManager closes (a MiniCluster's calls return the error).
	FatalErrorHandler func(err error)
	// SchedulerFactory builds each job's SchedulerNG (jobmaster.Config.SchedulerFactory); nil
	// means scheduler.DefaultSchedulerFactory. Flink: jobmanager.scheduler picks one of its
	// SchedulerNGFactory implementations; here a host may bring its own, or wrap the default.
	SchedulerFactory scheduler.SchedulerNGFactory
	// Metrics is the registry the Dispatcher, the ResourceManager and each JobMaster report to
	// under Flink's names (see minicluster.Config.Metrics). nil: the JobManager makes one, which
	// Metrics returns and Close closes; a host's registry is never closed by the JobManager.
	Metrics *metrics.Registry
	// Logger defaults to a logger that discards everything.
	Logger *slog.Logger
}

// ErrInvalidConfig is matched by the *ConfigError NewJobManager and RunTaskExecutor return for
// a configuration they refuse.
var ErrInvalidConfig = errors.New("cluster: invalid configuration")

// ConfigError is a configuration refused: Reason names the field, Flink's option key and what is
// wrong with it (and wraps the sentinel of the package that refused it, if any, such as
// scheduler.ErrUnknownStrategy). It matches ErrInvalidConfig.
type ConfigError struct{ Reason error }

func (e *ConfigError) Error() string { return ErrInvalidConfig.Error() + ": " + e.Reason.Error() }

// Unwrap returns Reason.
func (e *ConfigError) Unwrap() error { return e.Reason }

// Is reports whether target is ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

var (
	// ErrClosed is returned by JobManager's methods once Close was called; it matches rpc.ErrClosed.
	ErrClosed = fmt.Errorf("cluster: %w", rpc.ErrClosed)
	// ErrJobNotRunning is returned by SlotPoolStatus for a job that has no JobMaster in this
	// JobManager now (not submitted, finished, between leaders, or led by another JobManager).
	ErrJobNotRunning = errors.New("cluster: job has no running JobMaster")
)

func init() {
	jobgraph.RegisterErrorCode("cluster.closed", ErrClosed)
	jobgraph.RegisterErrorCode("cluster.invalid-config", ErrInvalidConfig)
	jobgraph.RegisterErrorCode("cluster.job-not-running", ErrJobNotRunning)
}

// JobManager is the JobManager process role: a Dispatcher (a dispatcher.Runner in HA's
// Dispatcher election), a ResourceManager (in HA's ResourceManager election) and the JobMasters
// its Dispatcher starts, one per job and leader session, on one rpc.Service. It runs no task:
// TaskExecutors register with its ResourceManager (RunTaskExecutor), in this process or others.
// The MiniCluster is a JobManager plus in-process TaskExecutors, built by the same code.
// Flink: ClusterEntrypoint with its DispatcherResourceManagerComponent (a session cluster).
//
// Create one with NewJobManager and Start it, or both at once with RunJobManager; Close it once.
// Methods are safe for concurrent use.
type JobManager struct {
	cfg        JobManagerConfig
	log        *slog.Logger
	rpc        rpc.Service
	ha         ha.Services
	metrics    *metrics.Registry
	ownRPC     bool
	ownHA      bool
	ownMetrics bool
	rm         *resourcemanager.ResourceManager
	dispatcher *dispatcher.Runner
	// jobGoroutines runs the long-lived goroutines of every job — its runner's loop, leadership
	// operations and ServiceProcess, its JobMaster's loops and calls off them — on goroutines
	// reused from job to job (they keep the stacks they grew); closed once the Dispatcher
	// Runner, and so every job, has closed.
	jobGoroutines gopool.Pool

	started atomic.Bool
	// failed is canceled with the first fatal error as its cause (onFatal, through fail).
	failed context.Context
	fail   context.CancelCauseFunc

	mu         sync.Mutex
	closing    bool // Close was called
	jobMasters map[jobgraph.JobID]*trackedJobMaster
	stopOnCtx  func() bool   // RunJobManager's context.AfterFunc, stopped by Close
	closed     chan struct{} // closed once the first Close returned; closeErr is its error
	closeErr   error
}

// NewJobManager checks cfg and builds the JobManager's ResourceManager and Dispatcher Runner;
// nothing runs until Start. Errors: a *ConfigError (matching ErrInvalidConfig) naming the field
// and option key; the ResourceManager's or Dispatcher's refusal of a value.
func NewJobManager(cfg JobManagerConfig) (*JobManager, error) {
	if err := validateJobManager(&cfg); err != nil {
		return nil, err
	}
	jm := &JobManager{cfg: cfg, log: cfg.Logger, rpc: cfg.RPC, ha: cfg.HA, metrics: cfg.Metrics,
		jobMasters: make(map[jobgraph.JobID]*trackedJobMaster), closed: make(chan struct{}),
		jobGoroutines: gopool.Pool{Idle: jobGoroutinesIdle}}
	jm.failed, jm.fail = context.WithCancelCause(context.Background())
	if jm.log == nil {
		jm.log = slog.New(slog.DiscardHandler)
	}
	if jm.rpc == nil {
		jm.rpc, jm.ownRPC = rpc.NewLocalService(), true
	}
	if jm.ha == nil {
		jm.ha, jm.ownHA = embedded.New(), true
	}
	if jm.metrics == nil {
		jm.metrics, jm.ownMetrics = metrics.NewRegistry(), true
	}
	rm, err := resourcemanager.New(resourcemanager.Config{
		Metrics:                      jm.metrics,
		Address:                      cfg.ResourceManagerAddress,
		RPC:                          jm.rpc,
		Logger:                       jm.log,
		HeartbeatInterval:            cfg.HeartbeatInterval,
		HeartbeatTimeout:             cfg.HeartbeatTimeout,
		RequirementCheckDelay:        cfg.RequirementCheckDelay,
		HeartbeatRPCFailureThreshold: cfg.HeartbeatRPCFailureThreshold,
		HA:                           jm.ha, // the ResourceManager refuses JobMasters of stale sessions
		LeaderElection:               jm.ha.ResourceManagerLeaderElection(),
		FatalErrorHandler:            jm.onFatal,
	})
	if err != nil {
		return nil, jm.abandon(err)
	}
	jm.rm = rm
	jmConfig := jobmaster.Config{
		Metrics:                             jm.metrics,
		RPC:                                 jm.rpc,
		ResourceManagerRetrieval:            jm.ha.ResourceManagerLeaderRetrieval,
		SlotRequestTimeout:                  cfg.SlotRequestTimeout,
		IdleSlotTimeout:                     cfg.IdleSlotTimeout,
		SchedulingStrategy:                  cfg.SchedulingStrategy,
		JobStatusListener:                   cfg.JobStatusListener,
		ExecutionStateListener:              cfg.ExecutionStateListener,
		OperatorCoordinators:                cfg.OperatorCoordinators,
		ExceptionHistorySize:                cfg.ExceptionHistorySize,
		Logger:                              jm.log,
		HeartbeatInterval:                   cfg.HeartbeatInterval,
		HeartbeatTimeout:                    cfg.HeartbeatTimeout,
		HeartbeatRPCFailureThreshold:        cfg.HeartbeatRPCFailureThreshold,
		SavepointDirectory:                  cfg.SavepointDirectory,
		ShuffleMaster:                       cfg.ShuffleMaster,
		BlocklistItemTimeout:                cfg.BlocklistItemTimeout,
		BlocklistAction:                     cfg.BlocklistAction,
		BlocklistMaxTaskFailuresPerInterval: cfg.BlocklistMaxTaskFailuresPerInterval,
		BlocklistTaskFailureInterval:        cfg.BlocklistTaskFailureInterval,
		// The JobMasters and the Dispatcher's global cleanup see the same checkpoints, and a new
		// leader's JobMaster restores those of the one before it.
		CheckpointRecoveryFactory: jm.ha.CheckpointRecoveryFactory(),
		// A failed JobMaster (a panic on its loops, its ResourceManager retrieval's error) is
		// fatal for the JobManager, as Flink's Dispatcher.jobMasterFailed makes it.
		FatalErrorHandler: jm.onFatal,
		SchedulerFactory:  cfg.SchedulerFactory,
		Goroutines:        jm.jobGoroutines.Go,
	}
	var blocklist dispatcher.BlocklistOperations
	if cfg.ResourceBlocklistEnabled {
		blocklist = rm
	}
	d, err := dispatcher.NewRunner(dispatcher.RunnerConfig{
		Dispatcher: dispatcher.Config{
			Metrics:                               jm.metrics,
			HA:                                    jm.ha,
			Logger:                                jm.log,
			JobStoreExpiration:                    cfg.JobStoreExpiration,
			JobStoreMaxCapacity:                   cfg.JobStoreMaxCapacity,
			ParallelismOverrides:                  cfg.ParallelismOverrides,
			ClientAlivenessCheckInterval:          cfg.ClientAlivenessCheckInterval,
			Blocklist:                             blocklist,
			BlocklistItemTimeout:                  cfg.BlocklistItemTimeout,
			BlocklistAction:                       cfg.BlocklistAction,
			CleanupExponentialDelayInitialBackoff: cfg.CleanupExponentialDelayInitialBackoff,
			CleanupExponentialDelayMaxBackoff:     cfg.CleanupExponentialDelayMaxBackoff,
			CleanupExponentialDelayAttempts:       cfg.CleanupExponentialDelayAttempts,
			JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
				f, err := jobmaster.NewFactory(g, jmConfig)
				if err != nil {
					return nil, err
				}
				return trackingFactory{f, jm}, nil
			}, jobmaster.WithGoroutines(jm.jobGoroutines.Go)),
		},
		Address:           cfg.DispatcherAddress,
		RPC:               jm.rpc,
		FatalErrorHandler: jm.onFatal,
	})
	if err != nil {
		_ = rm.Close()
		return nil, jm.abandon(err)
	}
	jm.dispatcher = d
	return jm, nil
}

// abandon releases what NewJobManager built before failing with err.
func (jm *JobManager) abandon(err error) error {
	if jm.ownMetrics {
		jm.metrics.Close()
	}
	if jm.ownHA {
		err = errors.Join(err, jm.ha.Close())
	}
	if jm.ownRPC {
		err = errors.Join(err, jm.rpc.Close())
	}
	return err
}

// validateJobManager refuses what the components would otherwise accept and fail every job with,
// and fills in the addresses' defaults.
func validateJobManager(cfg *JobManagerConfig) error {
	invalid := func(format string, args ...any) error {
		return &ConfigError{fmt.Errorf(format, args...)}
	}
	switch {
	case cfg.SlotRequestTimeout < 0:
		return invalid("SlotRequestTimeout (slot.request.timeout) is %v, negative", cfg.SlotRequestTimeout)
	case cfg.IdleSlotTimeout < 0:
		return invalid("IdleSlotTimeout (slot.idle.timeout) is %v, negative", cfg.IdleSlotTimeout)
	case !scheduler.IsKnownStrategy(cfg.SchedulingStrategy):
		return invalid("SchedulingStrategy (jobmanager.scheduler.scheduling-strategy) %q: %w; want %q or %q",
			cfg.SchedulingStrategy, scheduler.ErrUnknownStrategy, scheduler.StrategyRegion, scheduler.StrategyVertexwise)
	case cfg.ExceptionHistorySize < 0:
		return invalid("ExceptionHistorySize (web.exception-history-size) is %d, negative", cfg.ExceptionHistorySize)
	case cfg.JobStoreMaxCapacity < 0:
		return invalid("JobStoreMaxCapacity (jobstore.max-capacity) is %d, negative", cfg.JobStoreMaxCapacity)
	case cfg.BlocklistItemTimeout < 0:
		return invalid("BlocklistItemTimeout (cluster.resource-blocklist.item.timeout) is %v, negative", cfg.BlocklistItemTimeout)
	case !cfg.BlocklistAction.Valid():
		return invalid("BlocklistAction (cluster.resource-blocklist.action) is %q; want %q or %q", cfg.BlocklistAction, rpc.BlockActionMarkBlocked, rpc.BlockActionMarkBlockedAndEvacuateTasks)
	case cfg.BlocklistMaxTaskFailuresPerInterval < 0:
		return invalid("BlocklistMaxTaskFailuresPerInterval (cluster.resource-blocklist.task-failure.max-failures-per-interval) is %d, negative", cfg.BlocklistMaxTaskFailuresPerInterval)
	case cfg.BlocklistMaxTaskFailuresPerInterval > 0 && !cfg.ResourceBlocklistEnabled:
		return invalid("BlocklistMaxTaskFailuresPerInterval (cluster.resource-blocklist.task-failure.max-failures-per-interval) needs ResourceBlocklistEnabled (cluster.resource-blocklist.enabled)")
	case cfg.BlocklistTaskFailureInterval < 0:
		return invalid("BlocklistTaskFailureInterval (cluster.resource-blocklist.task-failure.failure-rate-interval) is %v, negative", cfg.BlocklistTaskFailureInterval)
	}
	if _, _, err := heartbeat.Resolve(cfg.HeartbeatInterval, cfg.HeartbeatTimeout); err != nil {
		return &ConfigError{err}
	}
	if _, err := heartbeat.ResolveRPCFailureThreshold(cfg.HeartbeatRPCFailureThreshold); err != nil {
		return invalid("HeartbeatRPCFailureThreshold (heartbeat.rpc-failure-threshold) is %d; want a positive number of failed heartbeat RPCs, or -1 to turn the detection off", cfg.HeartbeatRPCFailureThreshold)
	}
	if cfg.ResourceManagerAddress == "" {
		cfg.ResourceManagerAddress = addressOf(cfg.RPC, DefaultResourceManagerAddress)
	}
	if cfg.DispatcherAddress == "" {
		cfg.DispatcherAddress = addressOf(cfg.RPC, DefaultDispatcherAddress)
	}
	if cfg.ResourceManagerAddress == cfg.DispatcherAddress {
		return invalid("ResourceManagerAddress and DispatcherAddress are both %q", cfg.ResourceManagerAddress)
	}
	return nil
}

// addressOf is rpc.AddressOf on svc; nil (the default LocalService) names itself.
func addressOf(svc rpc.Service, name string) string {
	if svc == nil {
		return name
	}
	return rpc.AddressOf(svc, name)
}

// RunJobManager builds a JobManager with NewJobManager and starts it, and closes it once ctx
// ends (a process's signal context, say): the JobManager runs until ctx ends, Close is called or
// a fatal error closes it (FatalErrorHandler unset); Wait waits for that. It does not wait for
// leadership: over HA services other JobManagers share it may start as a standby
// (AwaitLeadership waits). On failure nothing is left running. Errors: NewJobManager's, Start's.
// Flink: ClusterEntrypoint.runClusterEntrypoint of a StandaloneSessionClusterEntrypoint.
func RunJobManager(ctx context.Context, cfg JobManagerConfig) (*JobManager, error) {
	jm, err := NewJobManager(cfg)
	if err != nil {
		return nil, err
	}
	if err := jm.Start(ctx); err != nil {
		return nil, errors.Join(err, jm.Close())
	}
	stop := context.AfterFunc(ctx, func() { _ = jm.Close() })
	jm.mu.Lock()
	jm.stopOnCtx = stop
	jm.mu.Unlock()
	return jm, nil
}

// Start starts the ResourceManager (it joins HA's ResourceManager election and serves once
// granted) and the Dispatcher Runner (it joins HA's Dispatcher election; each leader session
// recovers the stored jobs and runs them). It returns without waiting for either election. ctx
// bounds the ResourceManager's start. It may be called once; ErrClosed after Close.
func (jm *JobManager) Start(ctx context.Context) error {
	if !jm.started.CompareAndSwap(false, true) {
		return errors.New("cluster: JobManager already started")
	}
	if jm.isClosed() {
		return ErrClosed
	}
	if err := jm.rm.Start(ctx); err != nil {
		return fmt.Errorf("cluster: starting the ResourceManager: %w", err)
	}
	if err := jm.dispatcher.Start(); err != nil {
		return fmt.Errorf("cluster: starting the Dispatcher: %w", err)
	}
	if jm.isClosed() {
		return ErrClosed // Close came meanwhile and stopped what started
	}
	jm.log.Info("JobManager started", "resourceManager", jm.cfg.ResourceManagerAddress, "dispatcher", jm.cfg.DispatcherAddress)
	return nil
}

// isClosed reports whether Close was called.
func (jm *JobManager) isClosed() bool {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	return jm.closing
}

// AwaitLeadership waits until this JobManager's Dispatcher leads and has recovered the stored
// jobs (with its own ha/embedded that is at once after Start). Errors: ctx's; the Runner's
// ErrClosed once closed.
func (jm *JobManager) AwaitLeadership(ctx context.Context) error {
	return jm.dispatcher.AwaitLeadership(ctx)
}

// Dispatcher returns the JobManager's *dispatcher.Runner: its calls go to the current leader
// session's Dispatcher and fail with dispatcher.ErrNotLeader while this JobManager does not lead.
func (jm *JobManager) Dispatcher() *dispatcher.Runner { return jm.dispatcher }

// LeaderDispatcher returns the Dispatcher a client in this process calls: each call waits, within
// its ctx, until this JobManager's Dispatcher leads, and is asked again of the next leader
// session when the one it reached ended meanwhile, so RequestJobResult returns the job's final
// result rather than the SUSPENDED of a deposed session. Its Close does nothing (Close the
// JobManager). A client in another process reaches the leading Dispatcher through
// HA.DispatcherLeaderRetrieval() or at DispatcherAddress instead.
func (jm *JobManager) LeaderDispatcher() LeadingDispatcher { return followLeader{jm.dispatcher} }

// LeadingDispatcher is what LeaderDispatcher returns: the Dispatcher's methods and its job
// clients' heartbeats (dispatcher.JobClientGateway, for dispatcher.SubmitAttached).
type LeadingDispatcher interface {
	dispatcher.Dispatcher
	dispatcher.JobClientGateway
}

// BlockTaskExecutor blocks a TaskExecutor through the leading Dispatcher, waiting for and
// following leadership as LeaderDispatcher's calls do; see
// dispatcher.StandaloneDispatcher.BlockTaskExecutor for what it does and its errors
// (dispatcher.ErrBlocklistDisabled without ResourceBlocklistEnabled).
func (jm *JobManager) BlockTaskExecutor(ctx context.Context, req dispatcher.BlockRequest) (rpc.BlockedNode, error) {
	return follow(ctx, jm.dispatcher, func() (rpc.BlockedNode, error) { return jm.dispatcher.BlockTaskExecutor(ctx, req) })
}

// ResourceManager returns the JobManager's ResourceManager, registered at ResourceManagerAddress.
func (jm *JobManager) ResourceManager() *resourcemanager.ResourceManager { return jm.rm }

// ResourceManagerAddress returns where the ResourceManager is registered on RPC.
func (jm *JobManager) ResourceManagerAddress() string { return jm.cfg.ResourceManagerAddress }

// DispatcherAddress returns where the Dispatcher is registered on RPC while it leads.
func (jm *JobManager) DispatcherAddress() string { return jm.cfg.DispatcherAddress }

// RPC returns the JobManager's rpc.Service.
func (jm *JobManager) RPC() rpc.Service { return jm.rpc }

// HA returns the JobManager's HA services.
func (jm *JobManager) HA() ha.Services { return jm.ha }

// Metrics returns the JobManager's metric registry (JobManagerConfig.Metrics or its own).
func (jm *JobManager) Metrics() *metrics.Registry { return jm.metrics }

// SlotPoolStatus returns a snapshot of the slot pool of the job's JobMaster in this JobManager,
// taken on the JobMaster's loop. Errors: ErrJobNotRunning when it has none now; ErrClosed; ctx's;
// the JobMaster's when it closes meanwhile.
func (jm *JobManager) SlotPoolStatus(ctx context.Context, id jobgraph.JobID) (jobmaster.SlotPoolStatus, error) {
	jm.mu.Lock()
	t, closing := jm.jobMasters[id], jm.closing
	jm.mu.Unlock()
	if closing {
		return jobmaster.SlotPoolStatus{}, ErrClosed
	}
	if t == nil {
		return jobmaster.SlotPoolStatus{}, fmt.Errorf("%w: %s", ErrJobNotRunning, id)
	}
	g, ok := t.JobMaster.(interface {
		SlotPoolStatus(context.Context) (jobmaster.SlotPoolStatus, error)
	})
	if !ok {
		return jobmaster.SlotPoolStatus{}, fmt.Errorf("cluster: the JobMaster of job %s (%T) has no SlotPoolStatus", id, t.JobMaster)
	}
	return g.SlotPoolStatus(ctx)
}

// DisconnectTaskExecutor tells the ResourceManager (its current session) and every JobMaster now
// running in this JobManager that TaskExecutor id is gone, with cause: the ResourceManager
// forgets it and its slots, each JobMaster fails its tasks there (they restart as the job's
// restart strategy says) at once rather than after heartbeat.timeout. A ResourceManager that
// does not lead, or whose session the TaskExecutor did not register with, has nothing to forget
// and is not an error, nor is a JobMaster that ended meanwhile. Errors: the others', joined;
// ctx's. Flink: ResourceManager.disconnectTaskManager, which the JobMasters hear of.
func (jm *JobManager) DisconnectTaskExecutor(ctx context.Context, id jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error {
	errs := []error{}
	if err := jm.rm.DisconnectTaskExecutor(ctx, jm.rm.ResourceManagerID(), id, cause); err != nil &&
		!errors.Is(err, rpc.ErrFencingTokenMismatch) && !errors.Is(err, ha.ErrNotLeader) {
		errs = append(errs, err)
	}
	for _, t := range jm.runningJobMasters() {
		err := t.Gateway().DisconnectTaskExecutor(ctx, t.token, id, cause)
		if err != nil && !errors.Is(err, ctx.Err()) {
			// The JobMaster may have ended meanwhile; its job no longer needs telling.
			jm.log.Debug("telling a JobMaster of a gone TaskExecutor", "taskExecutor", id, "job", t.job, "error", err)
			continue
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// runningJobMasters lists the JobMasters now running.
func (jm *JobManager) runningJobMasters() []*trackedJobMaster {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	out := make([]*trackedJobMaster, 0, len(jm.jobMasters))
	for _, t := range jm.jobMasters {
		out = append(out, t)
	}
	return out
}

// onFatal is the Runner's and the ResourceManager's FatalErrorHandler: it records the first fatal
// error and hands each to JobManagerConfig.FatalErrorHandler, or logs it and closes the
// JobManager on a goroutine of its own (Close waits for the Runner, whose goroutine calls this).
func (jm *JobManager) onFatal(err error) {
	jm.fail(err) // the first one wins: it is FatalError's from then on
	if h := jm.cfg.FatalErrorHandler; h != nil {
		h(err)
		return
	}
	jm.log.Error("fatal error: the JobManager closes", "err", err)
	go func() { _ = jm.Close() }()
}

// Failed returns a context that is canceled at the JobManager's first fatal error, with that
// error as its cause (context.Cause), before FatalErrorHandler is called; it is never canceled
// otherwise. A host derives the contexts of its waiting calls from it (context.AfterFunc), so a
// fatal error also ends a wait on a job whose JobMaster can no longer end it: a job whose
// JobMaster's loop panicked waits until Close, and answers SUSPENDED without a Failure then;
// FatalError and Wait carry the error. (minicluster.MiniCluster's job calls do this.)
func (jm *JobManager) Failed() context.Context { return jm.failed }

// FatalError returns the first fatal error the JobManager met (see
// JobManagerConfig.FatalErrorHandler), or nil. The Runner records the error before the job it
// concerns is archived, so a call woken by that archive sees it.
func (jm *JobManager) FatalError() error {
	if err := jm.dispatcher.FatalError(); err != nil {
		return err
	}
	return context.Cause(jm.failed) // nil until fail
}

// Close shuts the JobManager down: running jobs end SUSPENDED (nothing of HA is cleaned, so the
// next leader recovers them), its Dispatcher leaves its election and its ResourceManager too,
// and the HA services, rpc.Service and registry it created are closed. No goroutine of the
// JobManager is left afterwards. It returns what closing failed with (a fatal error that came
// before is Wait's and FatalError's, not Close's). Closing twice returns the first Close's
// error, once that has returned. Flink: ClusterEntrypoint.closeAsync.
func (jm *JobManager) Close() error {
	jm.mu.Lock()
	if jm.closing {
		jm.mu.Unlock()
		<-jm.closed // another Close is under way, or done
		return jm.closeErr
	}
	jm.closing = true
	stop := jm.stopOnCtx
	jm.mu.Unlock()
	if stop != nil {
		stop()
	}
	err := jm.dispatcher.Close()
	jm.jobGoroutines.Close() // every job's runner and JobMaster has closed with the Dispatcher
	err = errors.Join(err, jm.rm.Close())
	if jm.ownHA {
		err = errors.Join(err, jm.ha.Close())
	}
	if jm.ownRPC {
		err = errors.Join(err, jm.rpc.Close())
	}
	if jm.ownMetrics {
		jm.metrics.Close()
	}
	jm.closeErr = err
	close(jm.closed)
	return err
}

// Wait blocks until the JobManager has closed — by Close, by RunJobManager's ctx ending, or by a
// fatal error with no FatalErrorHandler — and returns why it is not running: nil after a plain
// Close, else an error wrapping the fatal error, joined with Close's. A process role returns it
// as its exit status. Safe on any goroutine, any number of times.
func (jm *JobManager) Wait() error {
	<-jm.closed
	var fatal error
	if err := jm.FatalError(); err != nil {
		fatal = fmt.Errorf("cluster: fatal error: %w", err)
	}
	return errors.Join(fatal, jm.closeErr)
}

// Done is closed once the JobManager has closed (Wait then returns at once).
func (jm *JobManager) Done() <-chan struct{} { return jm.closed }

// trackingFactory records each JobMaster it creates in the JobManager until the JobMaster is
// closed, so that the JobManager can observe its slot pool and tell it of a gone TaskExecutor.
type trackingFactory struct {
	jobmaster.JobMasterServiceFactory
	jm *JobManager
}

var _ jobmaster.DeferredStartFactory = trackingFactory{}

func (f trackingFactory) Create(ctx context.Context, token jobgraph.JobMasterID) (jobmaster.JobMaster, error) {
	created, err := f.JobMasterServiceFactory.Create(ctx, token)
	if err != nil {
		return nil, err
	}
	return f.track(created, token), nil
}

// CreateUnscheduled implements jobmaster.DeferredStartFactory, so the wrapped Factory's deferred
// start reaches the runner: without it a task could report RUNNING while the runner, not yet
// knowing its JobMaster, answered INITIALIZING (seen once in hascenarios' standby scenario).
func (f trackingFactory) CreateUnscheduled(ctx context.Context, token jobgraph.JobMasterID) (jobmaster.JobMaster, func(), error) {
	d, ok := f.JobMasterServiceFactory.(jobmaster.DeferredStartFactory)
	if !ok {
		created, err := f.Create(ctx, token)
		return created, func() {}, err
	}
	created, start, err := d.CreateUnscheduled(ctx, token)
	if err != nil {
		return nil, nil, err
	}
	return f.track(created, token), start, nil
}

func (f trackingFactory) track(created jobmaster.JobMaster, token jobgraph.JobMasterID) *trackedJobMaster {
	t := &trackedJobMaster{JobMaster: created, jm: f.jm, job: f.JobID(), token: token}
	f.jm.mu.Lock()
	f.jm.jobMasters[t.job] = t
	f.jm.mu.Unlock()
	return t
}

// trackedJobMaster is a JobMaster the JobManager lists while it runs.
type trackedJobMaster struct {
	jobmaster.JobMaster
	jm    *JobManager
	job   jobgraph.JobID
	token jobgraph.JobMasterID
}

// The savepoint methods go to the JobMaster, as jobmaster.SavepointGateway, if it has them: the
// runner finds them on this wrapper.
var _ jobmaster.SavepointGateway = (*trackedJobMaster)(nil)

func (t *trackedJobMaster) savepoints() (jobmaster.SavepointGateway, error) {
	g, ok := t.JobMaster.(jobmaster.SavepointGateway)
	if !ok {
		return nil, fmt.Errorf("cluster: the JobMaster of job %s (%T) takes no savepoints or checkpoints: %w", t.job, t.JobMaster, errors.ErrUnsupported)
	}
	return g, nil
}

func (t *trackedJobMaster) TriggerSavepoint(ctx context.Context, dir string) (string, error) {
	g, err := t.savepoints()
	if err != nil {
		return "", err
	}
	return g.TriggerSavepoint(ctx, dir)
}

func (t *trackedJobMaster) StopWithSavepoint(ctx context.Context, dir string) (string, error) {
	g, err := t.savepoints()
	if err != nil {
		return "", err
	}
	return g.StopWithSavepoint(ctx, dir)
}

func (t *trackedJobMaster) TriggerCheckpoint(ctx context.Context) (checkpoint.CheckpointID, error) {
	g, err := t.savepoints()
	if err != nil {
		return 0, err
	}
	return g.TriggerCheckpoint(ctx)
}

func (t *trackedJobMaster) Close() *executiongraph.ArchivedExecutionGraph {
	t.jm.mu.Lock()
	if t.jm.jobMasters[t.job] == t {
		delete(t.jm.jobMasters, t.job)
	}
	t.jm.mu.Unlock()
	return t.JobMaster.Close()
}
