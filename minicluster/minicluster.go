// Package minicluster runs a whole jobgraph cluster in one process: a Dispatcher, a
// ResourceManager, N TaskExecutors with M slots each, HA services (in-memory by default) and an
// RPC service (in-process by default). It is the embedded default a host program or a test
// starts with; a test can add, kill and remove TaskExecutors while jobs run and observe a job's
// slot pool. Flink: org.apache.flink.runtime.minicluster.MiniCluster.
//
//	mc, err := minicluster.Start(ctx, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 2, Registry: reg})
//	if err != nil {
//		return err
//	}
//	defer mc.Close()
//	res, err := mc.Run(ctx, g) // submit and wait for the JobResult
package minicluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/cluster"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/metrics"
	"github.com/jobgraph/jobgraph/resourcemanager"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Config configures a MiniCluster. Zero values take the defaults named; New refuses a negative
// count or duration and an unknown scheduling strategy with an error matching ErrInvalidConfig
// that names Flink's option key.
type Config struct {
	// TaskExecutors is the number of TaskExecutors Start starts, default 1.
	// Flink: minicluster.number-of-taskmanagers.
	TaskExecutors int
	// SlotsPerTaskExecutor is the number of slots of each, default 1.
	// Flink: taskmanager.numberOfTaskSlots.
	SlotsPerTaskExecutor int
	// SlotProfile is the ResourceProfile of every slot; the zero value offers UNKNOWN slots,
	// which serve any request.
	SlotProfile jobgraph.ResourceProfile
	// Registry holds the task code every TaskExecutor runs. Required.
	Registry *taskexecutor.Registry
	// OperatorCoordinators holds the operator coordinators the jobs' vertices name
	// (jobgraph.JobVertex.OperatorCoordinator), given to every JobMaster
	// (cluster.JobManagerConfig.OperatorCoordinators, jobmaster.Config.OperatorCoordinators: one
	// coordinator per coordinated vertex per leader session, on the JobMaster's loop). nil: none,
	// and a job whose vertex names one fails its initialization with an error naming the vertex
	// and the coordinator.
	OperatorCoordinators *coordination.Registry
	// SchedulerFactory builds each job's SchedulerNG (cluster.JobManagerConfig.SchedulerFactory);
	// nil means scheduler.DefaultSchedulerFactory. Flink: jobmanager.scheduler.
	SchedulerFactory scheduler.SchedulerNGFactory
	// RPC is the transport every endpoint registers on and finds the others through; default a
	// fresh rpc.NewLocalService(). The cluster registers the ResourceManager under
	// ResourceManagerAddress, the leading Dispatcher under DispatcherAddress (while it leads),
	// TaskExecutors under "taskexecutor-<n>" and JobMasters under "jobmaster/<job>/<session>",
	// so two clusters must not share one Service. Only a *rpc.LocalService itself counts as in
	// process: over any other Service, a wrapper of one included, the ResourceManager, the
	// TaskExecutors and the JobMasters bound their outgoing calls and registration attempts by
	// their timeouts, as over a network (see their Configs).
	RPC rpc.Service
	// HA provides leader election, the plan and result stores and the checkpoints (its
	// CheckpointRecoveryFactory is every JobMaster's and the Dispatcher's global cleanup's);
	// default a fresh embedded.New(). The cluster closes HA services it created, never the host's.
	// The cluster's Dispatcher runs under HA's Dispatcher leader election (see MiniCluster): with
	// HA services other processes share (or a second cluster in this process), a cluster that
	// does not lead starts as a standby and takes the jobs over when it is granted leadership.
	HA ha.Services
	// SlotRequestTimeout: slot.request.timeout, default 300 s. A job that waits this long for a
	// slot fails with slotpool.ErrNoResourceAvailable, also when the slots are busy with other
	// jobs (Flink's PhysicalSlotRequestBulkChecker does the same when the job's pool holds no slot
	// that could serve it): size it for the backlog a host submits.
	SlotRequestTimeout time.Duration
	// IdleSlotTimeout: slot.idle.timeout, default 50 s.
	IdleSlotTimeout time.Duration
	// SchedulingStrategy: "region" (default, scheduler.StrategyRegion) or "vertexwise"
	// (scheduler.StrategyVertexwise). Flink 1.12: jobmanager.scheduler.scheduling-strategy.
	SchedulingStrategy string
	// HeartbeatInterval: heartbeat.interval, default 10 s: how often the ResourceManager and each
	// JobMaster ask the TaskExecutors (and the ResourceManager the JobMasters) for a heartbeat.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout: heartbeat.timeout, default 50 s: a TaskExecutor silent this long (killed,
	// say) is dropped by the ResourceManager and by every JobMaster, whose tasks on it fail; it
	// must not be shorter than HeartbeatInterval.
	HeartbeatTimeout time.Duration
	// HeartbeatRPCFailureThreshold: heartbeat.rpc-failure-threshold, default 2: a TaskExecutor
	// whose last this many heartbeat requests failed because it could not be reached (killed:
	// rpc.IsUnreachable) is dropped at once, as on its heartbeat.timeout, by the
	// ResourceManager and every JobMaster; -1 turns it off (then only heartbeat.timeout drops
	// it); 0 means the default; below -1 is an error. See
	// cluster.JobManagerConfig.HeartbeatRPCFailureThreshold.
	HeartbeatRPCFailureThreshold int
	// RequirementCheckDelay: slotmanager.requirement-check.delay, default 50 ms: the least time
	// between two rounds of slot requests for a job that loses a slot it was just sent (a
	// declined offer, a lost TaskExecutor); negative: never held back (Flink's 0). See
	// resourcemanager.Config.RequirementCheckDelay.
	RequirementCheckDelay time.Duration
	// JobStatusListener, if set, hears every job status transition of every job. It runs on the
	// job's JobMaster loop and must not block.
	JobStatusListener func(job jobgraph.JobID, status jobgraph.JobStatus, at time.Time)
	// ExecutionStateListener, if set, hears every state every execution attempt enters after
	// CREATED. It runs on the job's JobMaster loop and must not block.
	ExecutionStateListener func(attempt jobgraph.ExecutionAttemptID, state jobgraph.ExecutionState)
	// TaskCancellationInterval and TaskCancellationTimeout are every TaskExecutor's
	// task.cancellation.interval (default 30 s) and task.cancellation.timeout (default 180 s;
	// taskexecutor.NoTaskCancellationTimeout disables it): see taskexecutor.Config.
	TaskCancellationInterval time.Duration
	TaskCancellationTimeout  time.Duration
	// ExceptionHistorySize: web.exception-history-size, default 16.
	ExceptionHistorySize int
	// JobStoreExpiration: jobstore.expiration-time, default 1 h; negative: never. See
	// dispatcher.Config.JobStoreExpiration.
	JobStoreExpiration time.Duration
	// JobStoreMaxCapacity: jobstore.max-capacity, default (0) unlimited. See
	// dispatcher.Config.JobStoreMaxCapacity.
	JobStoreMaxCapacity int
	// ParallelismOverrides: the cluster's pipeline.jobvertex-parallelism-overrides, the
	// parallelism by vertex ID that every submitted job having the vertex runs it with, unless
	// the job's own jobgraph.JobGraph.ParallelismOverrides name the vertex. Default none. See
	// dispatcher.Config.ParallelismOverrides.
	ParallelismOverrides map[jobgraph.JobVertexID]int
	// ClientAlivenessCheckInterval: $internal.dispatcher.client-aliveness-check.interval, default
	// (0) 1 min: how often the Dispatcher cancels the jobs whose attached client stopped
	// heartbeating (SubmitAttached). See dispatcher.Config.ClientAlivenessCheckInterval.
	ClientAlivenessCheckInterval time.Duration
	// CleanupExponentialDelayInitialBackoff, …MaxBackoff and …Attempts: Flink's
	// cleanup-strategy.exponential-delay.initial-backoff (default 1 s), .max-backoff (default
	// 1 h) and .attempts (default 0: unlimited), the retries of a globally terminated job's
	// cleanup steps. See dispatcher.Config.CleanupExponentialDelayInitialBackoff; New returns
	// the Dispatcher's error for bad values.
	CleanupExponentialDelayInitialBackoff time.Duration
	CleanupExponentialDelayMaxBackoff     time.Duration
	CleanupExponentialDelayAttempts       int
	// FatalErrorHandler hears what the cluster cannot recover from (Flink's FatalErrorHandler):
	// what its Dispatcher Runner reports (dispatcher.RunnerConfig.FatalErrorHandler: the
	// Dispatcher leader election's error, a failed recovery, a recovered job whose JobMaster
	// failed to initialize, a globally terminated job whose result cannot be written to the
	// JobResultStore — an ha.ErrUnrecoverable store error, or the cleanup-strategy's attempts
	// used up), the ResourceManager's leader election error
	// (resourcemanager.Config.FatalErrorHandler), a JobMaster's (jobmaster.Config.FatalErrorHandler)
	// and a panic on the main loop of any of these — a broken invariant or a bug — as an error
	// wrapping a *jobgraph.PanicError. (A TaskExecutor's fatal errors close only that
	// TaskExecutor, see TaskExecutors.) Called on a goroutine of the cluster's, it must not
	// wait for the cluster (call Close from another goroutine). Default (nil): the error is
	// logged at Error level and the cluster closes itself, as Flink's ClusterEntrypoint ends the
	// process. Either way, from the first fatal error on, Close and every call that was waiting
	// for a job or starts later (RequestJobResult, Run, SubmitJob, …) return an error wrapping it.
	FatalErrorHandler func(err error)
	// RunCancelTimeout bounds how long Run waits, once its ctx ended, for the job it canceled to
	// reach a terminal state; default 60 s. No Flink option: Flink's MiniCluster.executeJobBlocking
	// leaves the job running.
	RunCancelTimeout time.Duration
	// SavepointDirectory: execution.checkpointing.savepoint-dir (Flink 2; state.savepoints.dir
	// before), the target directory of TriggerSavepoint and StopWithSavepoint calls that name
	// none; default none (they then fail with scheduler.ErrNoSavepointDirectory).
	SavepointDirectory string
	// ResourceBlocklistEnabled turns the blocklist on: BlockTaskExecutor works (it fails with
	// dispatcher.ErrBlocklistDisabled otherwise) and so does the task-failure rule. Option
	// cluster.resource-blocklist.enabled (FLIP-224), default false.
	ResourceBlocklistEnabled bool
	// BlocklistItemTimeout: cluster.resource-blocklist.item.timeout, default 1 h: how long a
	// block lasts when BlockTaskExecutor names no duration, and a block by the task-failure rule.
	BlocklistItemTimeout time.Duration
	// BlocklistAction: cluster.resource-blocklist.action (ours), MARK_BLOCKED (default) or
	// MARK_BLOCKED_AND_EVACUATE_TASKS: the action of a block that names none (see rpc.BlockAction).
	BlocklistAction rpc.BlockAction
	// BlocklistMaxTaskFailuresPerInterval and BlocklistTaskFailureInterval are the task-failure
	// rule (ours; off by default): a TaskExecutor on which that many of one job's tasks failed
	// within the interval (default 1 min) is blocked. Options
	// cluster.resource-blocklist.task-failure.max-failures-per-interval and
	// cluster.resource-blocklist.task-failure.failure-rate-interval; see jobmaster.Config. They
	// need ResourceBlocklistEnabled.
	BlocklistMaxTaskFailuresPerInterval int
	BlocklistTaskFailureInterval        time.Duration
	// Metrics is the metric registry every component of the cluster reports to under Flink's
	// names: the ResourceManager's and the Dispatcher's cluster metrics (numRegisteredTaskManagers,
	// taskSlotsAvailable, taskSlotsTotal, numRunningJobs), each JobMaster's job metrics (uptime,
	// numRestarts, the checkpoint metrics…: scheduler.Config.Metrics) and each task's I/O
	// metrics (numRecordsIn, numRecordsOutPerSecond, backPressuredTimeMsPerSecond…:
	// taskexecutor.Config.Metrics). nil: the cluster makes one, which MiniCluster.Metrics
	// returns and Close closes; a host's registry is never closed by the cluster. Flink: the
	// MiniCluster's MetricRegistry.
	Metrics *metrics.Registry
	// Logger defaults to a logger that discards everything.
	Logger *slog.Logger
}

// DefaultRunCancelTimeout is Config.RunCancelTimeout's default.
const DefaultRunCancelTimeout = 60 * time.Second

// ResourceManagerAddress is where the cluster's ResourceManager is registered on its rpc.Service:
// a host's own TaskExecutor registers there (taskexecutor.Config.ResourceManagerAddress), or,
// better, follows HA().ResourceManagerLeaderRetrieval() (taskexecutor.Config.ResourceManagerRetrieval),
// which names this address with the leader session: at a fixed address a TaskExecutor registers
// with a new ResourceManager leader only once the old one's heartbeats stopped for
// heartbeat.timeout.
const ResourceManagerAddress = "resourcemanager"

// DispatcherAddress is where the cluster's Dispatcher is registered on its rpc.Service while it
// leads (the leader session's dispatcher.StandaloneDispatcher, an rpc.DispatcherGateway), and the
// address it confirms to the Dispatcher leader election.
const DispatcherAddress = dispatcher.DefaultAddress

var (
	// ErrInvalidConfig is matched by New's errors for a Config it refuses; the message names the
	// field and Flink's option key.
	ErrInvalidConfig = errors.New("minicluster: invalid configuration")
	// ErrNotStarted is returned by the methods that need a started cluster (SubmitJob, Run,
	// AddTaskExecutor, …) before Start succeeded.
	ErrNotStarted = errors.New("minicluster: not started")
	// ErrClosed is returned by every method that returns an error once Close was called; it
	// matches rpc.ErrClosed.
	ErrClosed = fmt.Errorf("minicluster: %w", rpc.ErrClosed)
	// ErrTaskExecutorNotFound is returned by KillTaskExecutor and RemoveTaskExecutor for a
	// ResourceID that is not one of the cluster's TaskExecutors: never started, or taken away
	// by KillTaskExecutor or RemoveTaskExecutor already. One that killed or closed itself
	// (which TaskExecutors no longer lists) is still found, and released.
	ErrTaskExecutorNotFound = errors.New("minicluster: no such TaskExecutor")
	// ErrJobNotRunning is returned by SlotPoolStatus for a job that has no JobMaster now (not
	// submitted, finished, or between leaders).
	// It is cluster.ErrJobNotRunning (the same value).
	ErrJobNotRunning = cluster.ErrJobNotRunning
)

// MiniCluster is a cluster in one process. Create it with New and Start it (or both at once with
// Start), Close it once; methods are safe for concurrent use.
//
// # Leadership
//
// The cluster's Dispatcher is a dispatcher.Runner in Config.HA's Dispatcher leader election
// (Flink's DefaultDispatcherRunner): each leader session recovers the jobs of the HA stores and
// runs them, and a revocation suspends them (see dispatcher.Runner). Every JobMaster takes its
// checkpoint store and counter from HA's CheckpointRecoveryFactory, so the JobMaster of a new
// session restores the job's latest checkpoint. The job methods (SubmitJob, Run, CancelJob,
// RequestJobStatus, RequestJobResult, RequestJob, the savepoint and checkpoint triggers, and
// RunApplication) wait, within their ctx, until this cluster's Dispatcher leads, and follow it
// across a leader change: a call the deposed session could not answer is asked again of the
// next one, so Run and RequestJobResult return the job's final result, not the SUSPENDED of a
// session that ended, as Flink's MiniCluster waits for the leading Dispatcher's gateway. With
// its own HA services (Config.HA unset) the cluster is the only contender, and Start returns
// once its Dispatcher leads; a cluster over shared HA services starts as a standby, and its
// job methods wait. Before Start the job methods fail with ErrNotStarted. Dispatcher() is the
// Runner itself, which answers dispatcher.ErrNotLeader without leadership instead of waiting.
type MiniCluster struct {
	cfg Config
	log *slog.Logger
	// jm is the cluster's JobManager (Dispatcher Runner, ResourceManager, JobMasters), built by
	// the code cluster.RunJobManager runs; the fields below it are its parts.
	jm         *cluster.JobManager
	rpc        rpc.Service
	ha         ha.Services
	ownHA      bool // the cluster's own ha/embedded (Config.HA unset), which only it uses
	metrics    *metrics.Registry
	shuffle    *taskexecutor.Shuffle
	rm         *resourcemanager.ResourceManager
	dispatcher *dispatcher.Runner
	// leader is the Dispatcher the job methods use: the Runner's current leader, waited for.
	leader cluster.LeadingDispatcher

	mu            sync.Mutex
	state         clusterState
	taskExecutors []*taskexecutor.TaskExecutor // running, in start order
	nextTE        int                          // number of the next TaskExecutor
	// closing counts KillTaskExecutor and RemoveTaskExecutor calls releasing a TaskExecutor the
	// cluster no longer lists; Close waits for them.
	closing  sync.WaitGroup
	closed   chan struct{} // closed once the first Close returned; closeErr is its error
	closeErr error
}

type clusterState int

const (
	created clusterState = iota
	starting
	running
	closed
)

// New checks cfg and builds the cluster's JobManager (ResourceManager and Dispatcher, see
// cluster.NewJobManager); nothing runs until Start. Errors: ErrInvalidConfig (naming the field and
// option key); a missing Registry.
func New(cfg Config) (*MiniCluster, error) {
	if err := validate(&cfg); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mc := &MiniCluster{cfg: cfg, log: log, closed: make(chan struct{}), ownHA: cfg.HA == nil,
		shuffle: taskexecutor.NewShuffle(taskexecutor.ShuffleConfig{})}
	jm, err := cluster.NewJobManager(cluster.JobManagerConfig{
		RPC:                                   cfg.RPC,
		HA:                                    cfg.HA,
		ResourceManagerAddress:                ResourceManagerAddress,
		DispatcherAddress:                     DispatcherAddress,
		SlotRequestTimeout:                    cfg.SlotRequestTimeout,
		IdleSlotTimeout:                       cfg.IdleSlotTimeout,
		SchedulingStrategy:                    cfg.SchedulingStrategy,
		HeartbeatInterval:                     cfg.HeartbeatInterval,
		HeartbeatTimeout:                      cfg.HeartbeatTimeout,
		HeartbeatRPCFailureThreshold:          cfg.HeartbeatRPCFailureThreshold,
		RequirementCheckDelay:                 cfg.RequirementCheckDelay,
		JobStatusListener:                     cfg.JobStatusListener,
		ExecutionStateListener:                cfg.ExecutionStateListener,
		OperatorCoordinators:                  cfg.OperatorCoordinators,
		SchedulerFactory:                      cfg.SchedulerFactory,
		ExceptionHistorySize:                  cfg.ExceptionHistorySize,
		JobStoreExpiration:                    cfg.JobStoreExpiration,
		JobStoreMaxCapacity:                   cfg.JobStoreMaxCapacity,
		ParallelismOverrides:                  cfg.ParallelismOverrides,
		ClientAlivenessCheckInterval:          cfg.ClientAlivenessCheckInterval,
		CleanupExponentialDelayInitialBackoff: cfg.CleanupExponentialDelayInitialBackoff,
		CleanupExponentialDelayMaxBackoff:     cfg.CleanupExponentialDelayMaxBackoff,
		CleanupExponentialDelayAttempts:       cfg.CleanupExponentialDelayAttempts,
		SavepointDirectory:                    cfg.SavepointDirectory,
		ResourceBlocklistEnabled:              cfg.ResourceBlocklistEnabled,
		BlocklistItemTimeout:                  cfg.BlocklistItemTimeout,
		BlocklistAction:                       cfg.BlocklistAction,
		BlocklistMaxTaskFailuresPerInterval:   cfg.BlocklistMaxTaskFailuresPerInterval,
		BlocklistTaskFailureInterval:          cfg.BlocklistTaskFailureInterval,
		FatalErrorHandler:                     mc.onFatal,
		Metrics:                               cfg.Metrics,
		Logger:                                log,
	})
	if ce := (*cluster.ConfigError)(nil); errors.As(err, &ce) {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, ce.Reason)
	}
	if err != nil {
		return nil, err
	}
	mc.jm, mc.rpc, mc.ha, mc.metrics = jm, jm.RPC(), jm.HA(), jm.Metrics()
	mc.rm, mc.dispatcher, mc.leader = jm.ResourceManager(), jm.Dispatcher(), jm.LeaderDispatcher()
	return mc, nil
}

// Metrics returns the cluster's metric registry (Config.Metrics, or the one the cluster made):
// read it with Snapshot, JobMetrics and TaskMetrics at any time, from any goroutine; the
// metrics of a job are there while its JobMaster runs, those of a task while it runs. Flink:
// MiniCluster's MetricRegistry, read by the REST endpoint's MetricFetcher.
func (mc *MiniCluster) Metrics() *metrics.Registry { return mc.metrics }

// validate refuses what the TaskExecutors would otherwise accept and fail with, and fills in the
// defaults of the cluster's own fields; cluster.NewJobManager checks the JobManager's.
func validate(cfg *Config) error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case cfg.Registry == nil:
		return invalid("Config.Registry is required (the task code TaskExecutors run)")
	case cfg.TaskExecutors < 0:
		return invalid("TaskExecutors (minicluster.number-of-taskmanagers) is %d, negative", cfg.TaskExecutors)
	case cfg.SlotsPerTaskExecutor < 0:
		return invalid("SlotsPerTaskExecutor (taskmanager.numberOfTaskSlots) is %d, negative", cfg.SlotsPerTaskExecutor)
	case cfg.TaskCancellationInterval < 0:
		return invalid("TaskCancellationInterval (task.cancellation.interval) is %v, negative", cfg.TaskCancellationInterval)
	case cfg.TaskCancellationTimeout < 0 && cfg.TaskCancellationTimeout != taskexecutor.NoTaskCancellationTimeout:
		return invalid("TaskCancellationTimeout (task.cancellation.timeout) is %v, negative; taskexecutor.NoTaskCancellationTimeout disables the watchdog", cfg.TaskCancellationTimeout)
	case cfg.RunCancelTimeout < 0:
		return invalid("RunCancelTimeout is %v, negative", cfg.RunCancelTimeout)
	}
	cfg.TaskExecutors = max(cfg.TaskExecutors, 1)
	cfg.SlotsPerTaskExecutor = max(cfg.SlotsPerTaskExecutor, 1)
	if cfg.RunCancelTimeout == 0 {
		cfg.RunCancelTimeout = DefaultRunCancelTimeout
	}
	return nil
}

// Start builds a cluster with New and starts it; on failure nothing is left running.
func Start(ctx context.Context, cfg Config) (*MiniCluster, error) {
	mc, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := mc.Start(ctx); err != nil {
		return nil, errors.Join(err, mc.Close())
	}
	return mc, nil
}

// Start starts the JobManager (cluster.JobManager.Start: the ResourceManager under
// HA.ResourceManagerLeaderElection() and the Dispatcher's Runner, which joins
// HA.DispatcherLeaderElection()), then Config.TaskExecutors TaskExecutors, which register with the
// ResourceManager leader they retrieve (HA.ResourceManagerLeaderRetrieval(); with its own HA
// services it waits until each registered). With the cluster's own HA
// services it returns once the Dispatcher leads and has recovered; over shared ones it does not
// wait for that (see MiniCluster). ctx bounds the waits. It may be called once; it fails with
// ErrClosed after Close. Flink: MiniCluster.start.
func (mc *MiniCluster) Start(ctx context.Context) error {
	mc.mu.Lock()
	switch mc.state {
	case closed:
		mc.mu.Unlock()
		return ErrClosed
	case starting, running:
		mc.mu.Unlock()
		return errors.New("minicluster: already started")
	}
	mc.state = starting
	mc.mu.Unlock()
	if err := mc.jm.Start(ctx); err != nil {
		return fmt.Errorf("minicluster: %w", err)
	}
	for range mc.cfg.TaskExecutors {
		if _, err := mc.startTaskExecutor(ctx); err != nil {
			return err
		}
	}
	if mc.ownHA {
		if err := mc.dispatcher.AwaitLeadership(ctx); err != nil {
			return fmt.Errorf("minicluster: waiting for the Dispatcher's leadership: %w", err)
		}
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.state == closed {
		return ErrClosed
	}
	mc.state = running
	return nil
}

// startTaskExecutor builds, lists and starts one more TaskExecutor.
func (mc *MiniCluster) startTaskExecutor(ctx context.Context) (*taskexecutor.TaskExecutor, error) {
	mc.mu.Lock()
	if mc.state == closed {
		mc.mu.Unlock()
		return nil, ErrClosed
	}
	n := mc.nextTE
	mc.nextTE++
	te, err := taskexecutor.New(taskexecutor.Config{
		ResourceID:                   jobgraph.ResourceID(fmt.Sprintf("taskexecutor-%d", n)),
		Address:                      fmt.Sprintf("taskexecutor-%d", n),
		NumSlots:                     mc.cfg.SlotsPerTaskExecutor,
		SlotProfile:                  mc.cfg.SlotProfile,
		Registry:                     mc.cfg.Registry,
		RPC:                          mc.rpc,
		ResourceManagerRetrieval:     mc.ha.ResourceManagerLeaderRetrieval(),
		Shuffle:                      mc.shuffle,
		Metrics:                      mc.metrics,
		Logger:                       mc.log,
		HeartbeatInterval:            mc.cfg.HeartbeatInterval,
		HeartbeatTimeout:             mc.cfg.HeartbeatTimeout,
		HeartbeatRPCFailureThreshold: mc.cfg.HeartbeatRPCFailureThreshold,
		TaskCancellationInterval:     mc.cfg.TaskCancellationInterval,
		TaskCancellationTimeout:      mc.cfg.TaskCancellationTimeout,
	})
	if err != nil {
		mc.mu.Unlock()
		return nil, fmt.Errorf("minicluster: creating TaskExecutor %d: %w", n, err)
	}
	// Listed before it starts, so that Close releases it whatever happens next.
	mc.taskExecutors = append(mc.taskExecutors, te)
	mc.mu.Unlock()
	if err := te.Start(ctx); err != nil {
		return nil, fmt.Errorf("minicluster: starting TaskExecutor %s: %w", te.ResourceID(), err)
	}
	if mc.ownHA {
		// The cluster's own ha/embedded grants its ResourceManager, the only contender,
		// leadership at once (and again after a revoke), so the TaskExecutor registers soon:
		// wait for it. Shared HA services (another cluster's ha/embedded client, another
		// backend) may keep this cluster's ResourceManager a standby for good.
		if _, err := te.WaitRegistered(ctx); err != nil {
			return nil, fmt.Errorf("minicluster: TaskExecutor %s registering with the ResourceManager: %w", te.ResourceID(), err)
		}
	}
	return te, nil
}

// closedErr returns ErrClosed once Close was called: the job calls go to the Dispatcher, whose own
// closed error would name it rather than the cluster.
func (mc *MiniCluster) closedErr() error {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.state == closed {
		return ErrClosed
	}
	return nil
}

// overtaken returns ErrClosed for a closed error (one matching rpc.ErrClosed: the Dispatcher's,
// a JobMaster's, the ResourceManager's) that a call got because Close began while it ran, so that every method returns
// the cluster's ErrClosed once Close was called, as ErrClosed says; any other err unchanged.
func (mc *MiniCluster) overtaken(err error) error {
	if err != nil && errors.Is(err, rpc.ErrClosed) && mc.closedErr() != nil {
		return ErrClosed
	}
	return err
}

// usable says why the cluster cannot take jobs or TaskExecutors now: ErrNotStarted, ErrClosed,
// or nil.
func (mc *MiniCluster) usable() error {
	if err := mc.fatalErr(); err != nil {
		return err
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	switch mc.state {
	case created, starting:
		return ErrNotStarted
	case closed:
		return ErrClosed
	}
	return nil
}

// AddTaskExecutor starts one more TaskExecutor with Config.SlotsPerTaskExecutor slots of
// Config.SlotProfile, registered with the ResourceManager (with the cluster's own HA services; with
// shared ones it registers when its ResourceManager leader is known), and returns it; the cluster owns it
// and releases it on Close. Errors: ErrNotStarted, ErrClosed, or why the TaskExecutor did not
// start (it is released at Close all the same). Flink: MiniCluster.startTaskManager.
func (mc *MiniCluster) AddTaskExecutor(ctx context.Context) (*taskexecutor.TaskExecutor, error) {
	if err := mc.usable(); err != nil {
		return nil, err
	}
	return mc.startTaskExecutor(ctx)
}

// take unlists the running TaskExecutor id and counts its release in mc.closing.
func (mc *MiniCluster) take(id jobgraph.ResourceID) (*taskexecutor.TaskExecutor, error) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	switch mc.state {
	case created, starting:
		return nil, ErrNotStarted
	case closed:
		return nil, ErrClosed
	}
	i := slices.IndexFunc(mc.taskExecutors, func(te *taskexecutor.TaskExecutor) bool { return te.ResourceID() == id })
	if i < 0 {
		return nil, fmt.Errorf("%w: %s", ErrTaskExecutorNotFound, id)
	}
	te := mc.taskExecutors[i]
	mc.taskExecutors = slices.Delete(mc.taskExecutors, i, i+1)
	mc.closing.Add(1)
	return te, nil
}

// KillTaskExecutor makes TaskExecutor id die as a crashed process does: no goodbye to the
// ResourceManager or the JobMasters, which notice it only by their heartbeat requests, which
// fail as unreachable: at heartbeat.rpc-failure-threshold of them (2, within two
// heartbeat.interval), or at heartbeat.timeout with the threshold -1; its tasks are canceled
// without reporting and its partitions are lost.
// It returns once every goroutine of the TaskExecutor has ended (a task that ignores its
// context holds it up). Errors: ErrTaskExecutorNotFound, ErrNotStarted, ErrClosed.
// Flink: MiniCluster.terminateTaskManager of a process that is then killed; here nothing is left.
func (mc *MiniCluster) KillTaskExecutor(id jobgraph.ResourceID) error {
	te, err := mc.take(id)
	if err != nil {
		return err
	}
	defer mc.closing.Done()
	te.Kill()
	te.Close()
	mc.log.Info("killed TaskExecutor", "taskExecutor", id)
	return nil
}

// ErrTaskExecutorRemoved is the cause the ResourceManager and the JobMasters are given for a
// TaskExecutor RemoveTaskExecutor took away.
var ErrTaskExecutorRemoved = errors.New("TaskExecutor removed from the MiniCluster")

// The removal crosses the gateways as plain data; registered, it still matches errors.Is in the
// JobResult's RootCause.
func init() {
	jobgraph.RegisterErrorCode("minicluster.task-executor-removed", ErrTaskExecutorRemoved)
	jobgraph.RegisterErrorCode("minicluster.closed", ErrClosed)
	jobgraph.RegisterErrorCode("minicluster.not-started", ErrNotStarted)
	jobgraph.RegisterErrorCode("minicluster.task-executor-not-found", ErrTaskExecutorNotFound)
}

// RemoveTaskExecutor shuts TaskExecutor id down and says goodbye: once its tasks and goroutines
// have ended, the ResourceManager forgets it and its slots, and every JobMaster of the cluster is
// told at once (its tasks there fail with ErrTaskExecutorRemoved, and restart as the job's restart
// strategy says), rather than by the heartbeats as for KillTaskExecutor. Errors:
// ErrTaskExecutorNotFound, ErrNotStarted, ErrClosed, or ctx's. Flink: MiniCluster.terminateTaskManager
// (there the TaskExecutor disconnects itself in onStop; here the cluster does it for it).
func (mc *MiniCluster) RemoveTaskExecutor(ctx context.Context, id jobgraph.ResourceID) error {
	te, err := mc.take(id)
	if err != nil {
		return err
	}
	defer mc.closing.Done()
	te.Close()
	cause := jobgraph.NewErrorInfo(fmt.Errorf("%s: %w", id, ErrTaskExecutorRemoved), time.Now())
	// The ResourceManager's current session: the TaskExecutor is closed, so no registration with
	// a later one comes.
	err = mc.jm.DisconnectTaskExecutor(ctx, id, cause)
	mc.log.Info("removed TaskExecutor", "taskExecutor", id)
	return err
}

// Dispatcher returns the cluster's Dispatcher: its *dispatcher.Runner, whose calls go to the
// current leader session's Dispatcher and fail with dispatcher.ErrNotLeader without leadership
// (the cluster's own job methods wait for leadership instead; see MiniCluster).
func (mc *MiniCluster) Dispatcher() dispatcher.Dispatcher { return mc.dispatcher }

// ResourceManager returns the cluster's ResourceManager, registered at ResourceManagerAddress.
func (mc *MiniCluster) ResourceManager() *resourcemanager.ResourceManager { return mc.rm }

// TaskExecutors returns the cluster's running TaskExecutors in start order: those Start and
// AddTaskExecutor started, less those KillTaskExecutor and RemoveTaskExecutor took away, those
// killed through their own Kill, and those that failed fatally (TaskExecutor.FatalError, a task
// stuck past task.cancellation.timeout), as Flink's MiniCluster terminates a TaskManager that
// reports a fatal error: every one whose TaskExecutor.Killed is true; and those closed through
// their own Close (TaskExecutor.Closed). The cluster still releases a killed or failed one on
// Close.
func (mc *MiniCluster) TaskExecutors() []*taskexecutor.TaskExecutor {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(mc.taskExecutors), func(te *taskexecutor.TaskExecutor) bool {
		return te.Killed() || te.Closed()
	})
}

// RPC returns the cluster's RPC service, where every endpoint is registered.
func (mc *MiniCluster) RPC() rpc.Service { return mc.rpc }

// HA returns the cluster's HA services.
func (mc *MiniCluster) HA() ha.Services { return mc.ha }

// SubmitJob submits g to the Dispatcher; see dispatcher.Dispatcher.SubmitJob for the errors.
// Before Start it fails with ErrNotStarted, after Close with ErrClosed; a nil g with the
// Dispatcher's error for it, matching jobgraph.ErrInvalidJobGraph.
func (mc *MiniCluster) SubmitJob(ctx context.Context, g *jobgraph.JobGraph) error {
	if err := mc.usable(); err != nil {
		return err
	}
	return mc.overtaken(mc.leader.SubmitJob(ctx, g))
}

// SubmitAttached submits g attached and returns its job client: with
// opts.ShutdownOnAttachedExit (execution.shutdown-on-attached-exit) the client heartbeats every
// client.heartbeat.interval (30 s) until the job ends or the client's Close, and the Dispatcher
// cancels the job once its heartbeats stopped for client.heartbeat.timeout (180 s), at its next
// client aliveness check (Config.ClientAlivenessCheckInterval, 1 min). The caller closes the
// client. Errors: SubmitJob's, and dispatcher.ErrInvalidConfig for bad options. See
// dispatcher.SubmitAttached.
func (mc *MiniCluster) SubmitAttached(ctx context.Context, g *jobgraph.JobGraph, opts dispatcher.JobClientOptions) (*dispatcher.JobClient, error) {
	if err := mc.usable(); err != nil {
		return nil, err
	}
	return dispatcher.SubmitAttached(ctx, mc, g, opts)
}

// ReportJobClientHeartbeat tells the Dispatcher that the job's client is alive until expires; see
// dispatcher.StandaloneDispatcher.ReportJobClientHeartbeat.
func (mc *MiniCluster) ReportJobClientHeartbeat(ctx context.Context, id jobgraph.JobID, expires time.Time) error {
	if err := mc.usable(); err != nil {
		return err
	}
	return mc.overtaken(mc.leader.ReportJobClientHeartbeat(ctx, id, expires))
}

// RequestJobResult waits for the job's result; see dispatcher.Dispatcher.RequestJobResult.
func (mc *MiniCluster) RequestJobResult(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error) {
	if err := mc.usable(); err != nil {
		return nil, err
	}
	// A fatal error ends the wait even when the job's JobMaster can no longer end the job (its
	// loop died) and the host's FatalErrorHandler keeps the cluster up.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(mc.jm.Failed(), cancel)()
	res, err := mc.leader.RequestJobResult(ctx, id)
	if ferr := mc.fatalErr(); ferr != nil {
		return nil, ferr // the job's result, or the cluster's close, came from a fatal error
	}
	return res, mc.overtaken(err)
}

// RequestJob returns the job's ArchivedExecutionGraph: a snapshot of a running job, or the
// archive of one that ended (kept for jobstore.expiration-time, see Config.JobStoreExpiration).
// Its CheckpointStatistics are the job's checkpoint statistics (counts, latest completed,
// failed, restored and savepoint, history) in Flink's /jobs/:jobid/checkpoints shape; the
// JobResult of Run does not carry them. Errors: ErrClosed, dispatcher.ErrJobNotFound, ctx's.
func (mc *MiniCluster) RequestJob(ctx context.Context, id jobgraph.JobID) (*executiongraph.ArchivedExecutionGraph, error) {
	if err := mc.usable(); err != nil {
		return nil, err
	}
	v, err := mc.leader.RequestJob(ctx, id)
	return v, mc.overtaken(err)
}

// CancelJob cancels the job; see dispatcher.Dispatcher.CancelJob.
func (mc *MiniCluster) CancelJob(ctx context.Context, id jobgraph.JobID) error {
	if err := mc.usable(); err != nil {
		return err
	}
	return mc.overtaken(mc.leader.CancelJob(ctx, id))
}

// RequestJobStatus returns the job's status.
func (mc *MiniCluster) RequestJobStatus(ctx context.Context, id jobgraph.JobID) (jobgraph.JobStatus, error) {
	if err := mc.usable(); err != nil {
		return 0, err
	}
	v, err := mc.leader.RequestJobStatus(ctx, id)
	return v, mc.overtaken(err)
}

// TriggerSavepoint takes a savepoint of the running job under targetDirectory ("" means
// Config.SavepointDirectory, execution.checkpointing.savepoint-dir) and returns its path once it completed: the
// directory "targetDirectory/savepoint-<first 6 hex digits of the JobID>-<12 random hex digits>"
// holding its _metadata (checkpoint.LoadSavepoint reads it; a job starts from it through
// JobGraph.SavepointRestore.Path). The job keeps running. Errors: ErrClosed;
// dispatcher.ErrJobNotFound; jobmaster.ErrJobNotRunning for a job that is not RUNNING or ended;
// scheduler.ErrNoCheckpointCoordinator for a batch job; scheduler.ErrNoSavepointDirectory; the
// savepoint's *checkpoint.CheckpointError (an expired one reports Timeout() true); ctx's (the
// savepoint carries on). See dispatcher.StandaloneDispatcher.TriggerSavepoint. Flink:
// MiniCluster.triggerSavepoint.
func (mc *MiniCluster) TriggerSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (string, error) {
	if err := mc.usable(); err != nil {
		return "", err
	}
	v, err := mc.leader.TriggerSavepoint(ctx, id, targetDirectory)
	return v, mc.overtaken(err)
}

// StopWithSavepoint stops the running job with a savepoint: the tasks take the synchronous
// savepoint and finish, and it returns the savepoint's path once every task and the job are
// FINISHED. If the savepoint fails or is declined, it returns that error, the savepoint's files
// are removed and the job keeps running. Errors otherwise as TriggerSavepoint's. Flink:
// MiniCluster.stopWithSavepoint.
func (mc *MiniCluster) StopWithSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (string, error) {
	if err := mc.usable(); err != nil {
		return "", err
	}
	v, err := mc.leader.StopWithSavepoint(ctx, id, targetDirectory)
	return v, mc.overtaken(err)
}

// BlockTaskExecutor blocks a TaskExecutor through the leading Dispatcher (see
// dispatcher.StandaloneDispatcher.BlockTaskExecutor): for req.Duration (0: BlocklistItemTimeout)
// the ResourceManager requests no slot of it for any job and every JobMaster gives back its free
// slots there; its running tasks keep running (MARK_BLOCKED) or fail over elsewhere
// (MARK_BLOCKED_AND_EVACUATE_TASKS); at the end instant exactly it gets requests again. It
// returns the entry made. Errors: dispatcher.ErrBlocklistDisabled without
// Config.ResourceBlocklistEnabled, dispatcher.ErrInvalidBlockRequest, ErrNotStarted, ErrClosed,
// ctx's. Flink: FLIP-224's REST blocklist API (not built in Flink's code).
func (mc *MiniCluster) BlockTaskExecutor(ctx context.Context, req dispatcher.BlockRequest) (rpc.BlockedNode, error) {
	if err := mc.usable(); err != nil {
		return rpc.BlockedNode{}, err
	}
	v, err := mc.jm.BlockTaskExecutor(ctx, req)
	return v, mc.overtaken(err)
}

// BlockedTaskExecutors returns the ResourceManager's blocklist, sorted by TaskExecutor.
func (mc *MiniCluster) BlockedTaskExecutors(ctx context.Context) ([]rpc.BlockedNode, error) {
	if err := mc.usable(); err != nil {
		return nil, err
	}
	v, err := mc.rm.BlockedNodes(ctx)
	return v, mc.overtaken(err)
}

// TriggerCheckpoint takes a checkpoint of the running job now, outside the periodic schedule,
// and returns its ID once it completed. Errors as TriggerSavepoint's. Flink:
// MiniCluster.triggerCheckpoint.
func (mc *MiniCluster) TriggerCheckpoint(ctx context.Context, id jobgraph.JobID) (checkpoint.CheckpointID, error) {
	if err := mc.usable(); err != nil {
		return 0, err
	}
	v, err := mc.leader.TriggerCheckpoint(ctx, id)
	return v, mc.overtaken(err)
}

// Run submits g and waits for its result. A job that ends other than FINISHED is not an error
// here: look at the result's Status and RootCause. Errors: those of SubmitJob (ErrNotStarted,
// ErrClosed, a nil or invalid g, a duplicate).
//
// Run owns the job it submitted: when ctx ends first, Run cancels the job, waits up to
// Config.RunCancelTimeout for it to reach a terminal state, and returns ctx's error joined with
// what became of the job — its final status (with the result, CANCELED normally) or that it was
// still not terminal after the bound (with a nil result). Flink's MiniCluster.executeJobBlocking
// leaves the job running instead.
func (mc *MiniCluster) Run(ctx context.Context, g *jobgraph.JobGraph) (*jobgraph.JobResult, error) {
	if err := mc.SubmitJob(ctx, g); err != nil {
		return nil, err
	}
	res, err := mc.RequestJobResult(ctx, g.JobID)
	if err == nil || ctx.Err() == nil {
		return res, err
	}
	return mc.cancelOwned(ctx.Err(), g.JobID)
}

// cancelOwned cancels the job Run submitted once Run's context ended with cause, and waits for
// its result within Config.RunCancelTimeout.
func (mc *MiniCluster) cancelOwned(cause error, id jobgraph.JobID) (*jobgraph.JobResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), mc.cfg.RunCancelTimeout)
	defer cancel()
	cancelErr := mc.CancelJob(ctx, id) // fails when the job is terminal already; the result says
	res, err := mc.RequestJobResult(ctx, id)
	if err != nil {
		return nil, errors.Join(cause, fmt.Errorf("minicluster: job %s not terminal %v after canceling it (%v): %w", id, mc.cfg.RunCancelTimeout, cancelErr, err))
	}
	return res, errors.Join(cause, fmt.Errorf("minicluster: job %s ended %s after Run's context ended", id, res.Status))
}

// SlotPoolStatus returns a snapshot of the slot pool of the job's current JobMaster: allocated,
// free and pending slots, taken on the JobMaster's loop. Errors: ErrJobNotRunning when the job
// has no JobMaster now; ctx's; the JobMaster's when it closes meanwhile.
func (mc *MiniCluster) SlotPoolStatus(ctx context.Context, id jobgraph.JobID) (jobmaster.SlotPoolStatus, error) {
	if err := mc.closedErr(); err != nil {
		return jobmaster.SlotPoolStatus{}, err
	}
	v, err := mc.jm.SlotPoolStatus(ctx, id)
	return v, mc.overtaken(err)
}

// onFatal is the JobManager's FatalErrorHandler (the JobManager records the first fatal error):
// it hands each to Config.FatalErrorHandler, or logs it and closes the cluster on a goroutine of
// its own.
func (mc *MiniCluster) onFatal(err error) {
	if h := mc.cfg.FatalErrorHandler; h != nil {
		h(err)
		return
	}
	mc.log.Error("fatal error: the MiniCluster closes", "err", err)
	go func() { _ = mc.Close() }() // Close waits for the Runner, whose goroutine calls onFatal
}

// fatalErr is the error calls return once a fatal error happened, or nil. The Runner records
// the error before the job it concerns is archived, so a call woken by that archive sees it.
func (mc *MiniCluster) fatalErr() error {
	if mc.jm == nil {
		return nil
	}
	if err := mc.jm.FatalError(); err != nil {
		return fmt.Errorf("minicluster: fatal error: %w", err)
	}
	return nil
}

// Close shuts the cluster down: running jobs end SUSPENDED, then every TaskExecutor the cluster
// started (killed and removed ones included), the ResourceManager and HA services the cluster
// created stop. No goroutine of the cluster is left afterwards. Closing twice returns the first
// Close's error; after a fatal error it returns an error wrapping that.
func (mc *MiniCluster) Close() error {
	mc.mu.Lock()
	if mc.state == closed {
		mc.mu.Unlock()
		<-mc.closed // another Close is under way, or done
		return mc.closeErr
	}
	mc.state = closed
	mc.mu.Unlock()
	defer close(mc.closed)
	mc.closeErr = mc.close()
	return mc.closeErr
}

func (mc *MiniCluster) close() error {
	// The jobs end SUSPENDED before their TaskExecutors go, and the JobManager's HA services
	// outlive the TaskExecutors' leader retrievals.
	err := mc.dispatcher.Close()
	mc.mu.Lock()
	tes := mc.taskExecutors
	mc.taskExecutors = nil
	mc.mu.Unlock()
	for _, te := range tes {
		te.Close()
	}
	mc.closing.Wait()
	err = errors.Join(err, mc.jm.Close())
	return errors.Join(mc.fatalErr(), err)
}
