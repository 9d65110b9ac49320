// Package dispatcher accepts jobs and runs each under its own JobMasterServiceLeadershipRunner:
// submit (validate, reject duplicates, persist, then run), cancel, status, result, list, and the
// archive of finished jobs. Flink: org.apache.flink.runtime.dispatcher.Dispatcher.
package dispatcher

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/gopool"
	"github.com/jobgraph/jobgraph/internal/mainloop"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/metrics"
	"github.com/jobgraph/jobgraph/rpc"
)

// ErrDuplicateJobSubmission matches every *DuplicateJobSubmissionError.
var ErrDuplicateJobSubmission = errors.New("duplicate job submission")

// ErrJobNotFound is returned for a JobID the Dispatcher does not know. Flink: FlinkJobNotFoundException.
var ErrJobNotFound = errors.New("job not found")

// ErrJobAlreadyTerminated is returned by CancelJob for a job that ended otherwise than CANCELED.
// Flink: FlinkJobTerminatedWithoutCancellationException.
var ErrJobAlreadyTerminated = errors.New("job already terminated")

// ErrClosed is returned by SubmitJob once Close has begun, and by every method that returns an
// error once Close has returned, in an rpc.UnreachableError (rpc.IsUnreachable): a closed
// Dispatcher, which a Runner registers in RPC, is gone for its callers, as the unknown address a
// transport answers for it once it is unregistered is (Flink: an RPC to a stopped endpoint fails
// with RecipientUnreachableException). It matches rpc.ErrClosed. A Runner's own ErrClosed (the
// Runner is no RPC endpoint) is not unreachable, nor is the sentinel itself.
var ErrClosed = fmt.Errorf("dispatcher: %w", rpc.ErrClosed)

// errClosed is what a closed StandaloneDispatcher answers: ErrClosed as an rpc.UnreachableError
// (see ErrClosed). Its main loop's closed error, so every call on the loop answers it.
var errClosed = rpc.Unreachable(ErrClosed)

// ErrNotLeader is matched by the error of a call that needs the Dispatcher's leadership when this
// process does not hold it: a SubmitJob of a StandaloneDispatcher whose Config.LeaderSession is no
// longer the election's, the start of a recovered job then, and every call of a Runner that does
// not lead (see Runner). It matches ha.ErrNotLeader. The client finds the leader through
// ha.Services.DispatcherLeaderRetrieval. Flink answers such a call with the leader gateway
// retriever's "not leader" (the REST handlers' 503, service temporarily unavailable).
var ErrNotLeader = fmt.Errorf("dispatcher: %w", ha.ErrNotLeader)

// The sentinels a DispatcherGateway call may answer (see jobgraph.RegisterErrorCode).
func init() {
	jobgraph.RegisterErrorCode("dispatcher.duplicate-job-submission", ErrDuplicateJobSubmission)
	jobgraph.RegisterErrorCode("dispatcher.job-not-found", ErrJobNotFound)
	jobgraph.RegisterErrorCode("dispatcher.job-already-terminated", ErrJobAlreadyTerminated)
	jobgraph.RegisterErrorCode("dispatcher.closed", ErrClosed)
	jobgraph.RegisterErrorCode("dispatcher.not-leader", ErrNotLeader)
}

// DuplicateJobSubmissionError says a JobID was submitted while a job under it runs (or is being
// submitted), or after a job under it reached a globally terminal state (its result is in the
// JobResultStore). Flink: DuplicateJobSubmissionException.
type DuplicateJobSubmissionError struct {
	JobID jobgraph.JobID
	// GloballyTerminated is true when the earlier job already ended for good.
	GloballyTerminated bool
}

func (e *DuplicateJobSubmissionError) Error() string {
	if e.GloballyTerminated {
		return fmt.Sprintf("duplicate job submission: job %s already reached a globally terminal state", e.JobID)
	}
	return fmt.Sprintf("duplicate job submission: job %s is already running or being submitted", e.JobID)
}

func (e *DuplicateJobSubmissionError) Is(target error) bool {
	return target == ErrDuplicateJobSubmission
}

// Dispatcher is what a host calls to run jobs: the DispatcherGateway (submit, cancel, status,
// result, list), the archived graph of a job, and Close. StandaloneDispatcher is the in-process
// default. Methods are safe for concurrent use from any goroutine. Flink: Dispatcher (the
// DispatcherGateway and RestfulGateway it implements).
type Dispatcher interface {
	rpc.DispatcherGateway
	// RequestJob returns the job's ArchivedExecutionGraph, live while it runs; an error
	// wrapping ErrJobNotFound for a job the Dispatcher does not know or no longer archives.
	RequestJob(ctx context.Context, id jobgraph.JobID) (*executiongraph.ArchivedExecutionGraph, error)
	// Close stops accepting jobs, suspends the running ones and waits for them.
	Close() error
}

// JobManagerRunnerFactory builds the runner of one job the Dispatcher accepted, before the
// graph is persisted: g is the Dispatcher's own copy (valid), services the Dispatcher's HA
// services (the runner's leader election and JobResultStore come from there). It is called off
// the Dispatcher's main loop, may take time, and must not start the job (the Dispatcher calls
// Start). An error rejects the submission and nothing is kept. LeadershipRunnerFactory makes
// the default. Flink: JobManagerRunnerFactory.
type JobManagerRunnerFactory func(g *jobgraph.JobGraph, services ha.Services) (jobmaster.JobManagerRunner, error)

// LeadershipRunnerFactory returns the default JobManagerRunnerFactory: a
// jobmaster.LeadershipRunner in the job's JobMaster leader election, whose JobMasters come from
// the JobMasterServiceFactory jobMasters returns for the graph (jobmaster.NewFactory, say), made
// with opts (jobmaster.WithGoroutines, say). Flink: JobMasterServiceLeadershipRunnerFactory.
func LeadershipRunnerFactory(jobMasters func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error), opts ...jobmaster.RunnerOption) JobManagerRunnerFactory {
	return func(g *jobgraph.JobGraph, services ha.Services) (jobmaster.JobManagerRunner, error) {
		f, err := jobMasters(g)
		if err != nil {
			return nil, err
		}
		if f == nil {
			return nil, errors.New("no JobMasterServiceFactory and no error")
		}
		return jobmaster.NewLeadershipRunner(f, services.JobMasterLeaderElection(g.JobID), services.JobResultStore(), opts...), nil
	}
}

// Config configures a Dispatcher.
type Config struct {
	// HA provides the stores and the per-job leader elections. Required.
	HA ha.Services
	// JobManagerRunnerFactory builds each accepted job's runner. Required: usually
	// LeadershipRunnerFactory(jobmaster factory), or a host's own.
	JobManagerRunnerFactory JobManagerRunnerFactory
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// JobStoreExpiration: jobstore.expiration-time, default 1 h (DefaultJobStoreExpiration; 0
	// means the default). A job that reached a globally terminal state leaves the archive this long
	// after it was archived; a negative value keeps archived jobs until JobStoreMaxCapacity evicts
	// them (never, if that is unlimited too). See Dispatcher for what is answered afterwards.
	JobStoreExpiration time.Duration
	// JobStoreMaxCapacity: jobstore.max-capacity, default unlimited (Flink: Integer.MAX_VALUE;
	// 0 means unlimited, negative is an error). Archiving one job more than this evicts the
	// archived job archived the longest ago.
	JobStoreMaxCapacity int

	// LeaderElection and LeaderSession fence the Dispatcher by a leader session of the cluster's
	// Dispatcher election (Flink: the DispatcherId): with LeaderElection set, New checks
	// LeaderElection.HasLeadership(LeaderSession) before it starts each recovered job, and
	// SubmitJob before it touches a store and again before it starts the job's runner; a check
	// that fails is an error wrapping ErrNotLeader. nil (the default) means no fencing: the
	// Dispatcher runs as if it always led, as before issue 12. A Runner sets both for each
	// session's Dispatcher.
	LeaderElection ha.LeaderElection
	LeaderSession  ha.SessionID
	// RecoveredJobs are the plans a new leader read from the ExecutionPlanStore: New starts each
	// under a runner from JobManagerRunnerFactory, in order, before it returns, without storing
	// it again. A plan whose job is in RecoveredDirtyResults is not started. Each must be valid
	// (jobgraph.JobGraph.Validate) with a JobID of its own. The Dispatcher keeps its own copies.
	// Flink: the recovered JobGraphs of the DispatcherBootstrap.
	RecoveredJobs []*jobgraph.JobGraph
	// RecoveredDirtyResults are the JobResultStore's dirty entries a new leader read: each job
	// reached a globally terminal state under an earlier leader, whose cleanup did not complete.
	// New starts each job's global cleanup (never the job); the job is answered from the
	// JobResultStore meanwhile and afterwards. Flink: Dispatcher's recoveredDirtyJobs.
	RecoveredDirtyResults []jobgraph.JobResult

	// The retry strategy of a globally terminated job's dirty JobResult write and of each of its
	// global cleanup steps (see StandaloneDispatcher, "Cleanup"), Flink's cleanup-strategy
	// exponential-delay: the first retry after CleanupExponentialDelayInitialBackoff
	// (cleanup-strategy.exponential-delay.initial-backoff, default 1 s; 0 means the default),
	// each next delay doubled up to CleanupExponentialDelayMaxBackoff
	// (cleanup-strategy.exponential-delay.max-backoff, default 1 h; 0 means the default), at
	// most CleanupExponentialDelayAttempts retries (cleanup-strategy.exponential-delay.attempts,
	// default infinite; 0 means infinite). Negative values, and a max below the initial backoff,
	// are ErrInvalidConfig. Flink's other strategies (fixed-delay, none) are not offered.
	CleanupExponentialDelayInitialBackoff time.Duration
	CleanupExponentialDelayMaxBackoff     time.Duration
	CleanupExponentialDelayAttempts       int

	// ParallelismOverrides is the cluster's pipeline.jobvertex-parallelism-overrides (Flink's
	// PipelineOptions.PARALLELISM_OVERRIDES, default none): the parallelism to run a vertex with,
	// by vertex ID, for every job submitted to this Dispatcher that has the vertex. A job's own
	// jobgraph.JobGraph.ParallelismOverrides take precedence for the vertices they name. SubmitJob
	// applies them (see there); recovered jobs are not changed again (their stored plan has them
	// applied already), as Flink applies them on submission only. A value below 1 is
	// ErrInvalidConfig, naming the vertex. The Dispatcher keeps its own copy.
	ParallelismOverrides map[jobgraph.JobVertexID]int

	// ClientAlivenessCheckInterval: $internal.dispatcher.client-aliveness-check.interval, default
	// 1 min (DefaultClientAlivenessCheckInterval; 0 means the default, negative is
	// ErrInvalidConfig): how often the Dispatcher looks for jobs whose client's heartbeats
	// expired (see ReportJobClientHeartbeat). Flink: Dispatcher.CLIENT_ALIVENESS_CHECK_DURATION.
	ClientAlivenessCheckInterval time.Duration
	// Blocklist is where BlockTaskExecutor sends its entries: the cluster's ResourceManager (the
	// MiniCluster passes its own). nil means the blocklist is disabled: BlockTaskExecutor then
	// fails with ErrBlocklistDisabled. Flink: cluster.resource-blocklist.enabled (FLIP-224),
	// default false, with the ResourceManager's BlocklistHandler behind it.
	Blocklist BlocklistOperations
	// BlocklistItemTimeout is how long BlockTaskExecutor blocks when the request names no
	// duration. Option cluster.resource-blocklist.item.timeout (FLIP-224), default 1 h (0 means
	// the default).
	BlocklistItemTimeout time.Duration
	// BlocklistAction is the block action of a request that names none: rpc.BlockActionMarkBlocked
	// ("" means it) or rpc.BlockActionMarkBlockedAndEvacuateTasks. Option
	// cluster.resource-blocklist.action (ours, after FLIP-224's actions).
	BlocklistAction rpc.BlockAction
	// Metrics, if not nil, is where the Dispatcher registers numRunningJobs (an int64 gauge: the
	// jobs whose JobManagerRunner runs, from its start until it reported the job's outcome) in a
	// group of the jobmanager scope it closes on Close; the loop publishes it after every closure.
	// Pass the same registry as jobmaster.Config.Metrics. Flink: Dispatcher's
	// registerDispatcherMetrics (the JobManagerRunnerRegistry's size).
	Metrics *metrics.Registry

	// FatalErrorHandler hears what the Dispatcher cannot recover from (Flink's
	// FatalErrorHandler): a globally terminated job whose dirty JobResult cannot be written —
	// the store's error matches ha.ErrUnrecoverable, or the cleanup-strategy's attempts ran out
	// — since neither running the job again nor cleaning it up is safe then; a recovered job
	// whose JobMaster failed to initialize (the runner's error matches
	// jobmaster.ErrJobInitialization) and a runner that failed (jobmaster.ErrRunnerFailed: its
	// leader election's error, a JobResultStore read at a grant, a panic on its loop), either
	// then cleaned up only locally, so its plan stays in the ExecutionPlanStore for the next
	// leader to recover (Flink: Dispatcher.handleJobManagerRunnerResult, jobManagerRunnerFailed
	// and jobMasterFailed); and a panic on the Dispatcher's main loop, as an error wrapping a
	// *jobgraph.PanicError, after which every call returns ErrClosed wrapping it. It is called
	// once per such error, synchronously on the Dispatcher's goroutine that met it (before the
	// job is archived), and must not call back into the Dispatcher synchronously (Close it from
	// another goroutine). Default (nil): the error is logged at Error level. A Runner passes its
	// own (see RunnerConfig.FatalErrorHandler); a MiniCluster's closes the cluster. Flink ends
	// the JobManager process.
	FatalErrorHandler func(err error)
}

// DefaultJobStoreExpiration is Flink's jobstore.expiration-time default (3600 s).
const DefaultJobStoreExpiration = time.Hour

// StandaloneDispatcher is the default Dispatcher: it runs every submitted job in this process,
// each under the JobManagerRunner its factory builds. Its state lives on its own main loop; every method is safe for
// concurrent use; it implements Dispatcher and so rpc.DispatcherGateway. Flink: StandaloneDispatcher.
//
// # The archive (Flink's ExecutionGraphInfoStore, "job store")
//
// A job that ended is archived: its JobResult and ArchivedExecutionGraph. A job that reached a
// globally terminal state (FINISHED, FAILED, CANCELED) and whose result is in the JobResultStore
// stays archived for Config.JobStoreExpiration after it was archived, and at most
// Config.JobStoreMaxCapacity such jobs are kept: archiving one more evicts the one archived
// first (Flink's Guava cache evicts roughly the least recently used; this is exact and FIFO).
// Two kinds of archived jobs are kept until the Dispatcher closes, outside both bounds, because
// the JobResultStore cannot answer for them: SUSPENDED jobs (suspended by Close) and jobs whose
// result was not written to the JobResultStore (its retries ran out, or Close stopped them).
//
// Once a job has left the archive the Dispatcher answers from the JobResultStore (as it does for a
// job that ended under an earlier Dispatcher): RequestJobStatus and RequestJobResult return the
// stored result's status and result (without RootCause, which is not persisted; Failure is
// kept), CancelJob answers as for an archived job, SubmitJob of the JobID is a
// *DuplicateJobSubmissionError with GloballyTerminated set, and RequestJob returns an error
// wrapping ErrJobNotFound saying the archive expired. ListJobs lists only jobs that are running
// or still archived. Flink answers all but the resubmission with FlinkJobNotFoundException.
//
// # Cleanup
//
// When a job reaches a globally terminal state (FINISHED, FAILED, CANCELED) its runner is closed
// (the local cleanup) and its dirty JobResult is written to the JobResultStore, retried until it
// succeeds; then its global cleanup runs: the job's checkpoints and checkpoint ID counter discarded
// through HA.CheckpointRecoveryFactory() (kept when CheckpointingSettings.RetainOnCancellation
// holds and the job did not finish), its plan removed from the ExecutionPlanStore,
// HA.CleanupJobData; only once each of those succeeded is the entry marked clean, and then the job
// is archived (RequestJobResult answers from there; RequestJobStatus answers the final status all
// along). Nothing of HA is cleaned before the dirty entry exists, so a crash anywhere leaves the
// job either unrecorded with everything a new leader needs to run it again, or recorded dirty for
// the new leader to finish cleaning; a job with an entry never runs again. The dirty write and each
// step are retried on their own under Flink's cleanup-strategy exponential-delay
// (Config.CleanupExponentialDelayInitialBackoff, …MaxBackoff, …Attempts: 1 s doubling to 1 h,
// unlimited), on the job's watcher goroutine, never on the Dispatcher's loop. A SUSPENDED job is
// cleaned up locally only (nothing of HA), and so is every job of a closing Dispatcher: Close stops
// a cleanup under way, leaving its entry dirty (the job is archived then as recorded). A rejected
// submission removes only what it wrote itself, and a duplicate writes nothing. Flink: Dispatcher
// with DispatcherResourceCleanerFactory's ResourceCleaners (DefaultResourceCleaner,
// CheckpointResourcesCleanup); Flink runs the global steps concurrently, we run them in the order
// above so that the plan, which says what happens to the checkpoints, outlives that decision.
//
// # Terminating jobs
//
// Never do two runners of one JobID exist at once. A job whose runner ends SUSPENDED (a host's
// runner may end so on its own; the default LeadershipRunner only when closed) while the
// Dispatcher does not close frees its JobID at once, but its runner's Close and its archiving
// (the local cleanup) still run: a SubmitJob of the JobID meanwhile reserves it, and then waits,
// off the Dispatcher's loop, until the old job is archived before it reads the JobResultStore,
// builds the new runner and persists the plan; its ctx and Close end the wait (with ctx's error,
// or ErrClosed). Meanwhile the JobID answers INITIALIZING, a second submission of it is a
// duplicate, and RequestJobResult waits for the new job; the old job's waiters get SUSPENDED.
// Flink: Dispatcher.waitForTerminatingJob over jobManagerRunnerTerminationFutures. A globally
// terminated job keeps its JobID until it is archived: a resubmission is a
// *DuplicateJobSubmissionError, with GloballyTerminated set once its dirty JobResult is written
// (Flink: JobResultStore.hasJobResultEntry), unset before (Flink: the runner still registered).
// Recovery never meets a terminating runner: a Runner builds a session's Dispatcher, and so
// starts the recovered jobs, only once the previous session's Dispatcher closed every runner
// (Flink's DefaultDispatcherRunner waits for the previous DispatcherLeaderProcess the same way).
//
// # Memory
//
// With the defaults a finished one-vertex job costs about 1.65 KB of archive until
// jobstore.expiration-time passes, and its clean JobResultStore entry whatever that store keeps
// (ha/embedded: about 210 B for ever, unless embedded.Options.MaxCleanResults bounds it). A job
// gone from both is answered with ErrJobNotFound and its JobID may be submitted again. The
// README's "Memory per finished job" has the numbers and BenchmarkFinishedJobMemory measures them.
type StandaloneDispatcher struct {
	cfg        Config
	log        *slog.Logger
	loop       *mainloop.Loop
	expiration time.Duration // < 0: never
	capacity   int           // 0: unlimited
	// retryStrategy is the cleanup-strategy of the dirty write and the global cleanup steps.
	retryStrategy cleanupRetry

	// Owned by loop.
	jobs map[jobgraph.JobID]*job
	// terminating holds the jobs whose runner ended not globally terminal (SUSPENDED) while
	// the Dispatcher does not close, from that moment until they are archived (the runner's
	// Close and the local cleanup): their JobID is free for a new submission, which waits for
	// the old job's archived channel before it builds its runner. Flink's
	// jobManagerRunnerTerminationFutures.
	terminating map[jobgraph.JobID]*job
	archive     map[jobgraph.JobID]*archivedJob
	bounded     *list.List // of jobgraph.JobID: the archived jobs subject to expiry and capacity, oldest first
	armed       bool       // an expiry timer is scheduled, for no later than the oldest bounded job's expiry
	closing     bool
	// closingFlag is closing, stored with it (Close): for persistAndRun's check off the loop.
	closingFlag atomic.Bool
	// clientExpiry is when each watched job's client expires: the jobs submitted with an
	// InitialClientHeartbeatTimeout, while they run (see ReportJobClientHeartbeat).
	clientExpiry     map[jobgraph.JobID]time.Time
	clientCheckArmed bool // the aliveness check is scheduled
	clientCheckEvery time.Duration

	metrics *metrics.Group // Config.Metrics' group; nil without

	submitting sync.WaitGroup // submissions past their reservation; Close waits for them
	watchers   sync.WaitGroup
	// workers run what goWatch starts, kept for the next job's watch; closed after watchers.
	workers gopool.Pool
	// stopped ends the store calls of submissions and cleanups in flight; Close cancels it.
	stopped context.Context
	stop    context.CancelFunc
}

type job struct {
	name      string
	plan      *jobgraph.JobGraph // the Dispatcher's copy: its global cleanup reads the checkpoint settings
	submitted time.Time
	runner    jobmaster.JobManagerRunner // nil while the graph is being persisted
	archived  chan struct{}              // closed once the job is in the archive
	final     *archivedJob               // written before archived is closed
	// ended is the job's outcome once its runner reported it, while the result is being
	// recorded and cleaned up (the runner is closed by then); set on the loop.
	ended *archivedJob
	// recorded: the job's dirty JobResult is in the JobResultStore (its global cleanup runs);
	// set by the watch once the write returned, read on the loop (no trip to the loop to set it).
	// A resubmission is then a globally terminated duplicate, as Flink's Dispatcher finds the
	// entry with JobResultStore.hasJobResultEntry.
	recorded atomic.Bool
	// after is the archived channel of the previous job of this JobID, still terminating when
	// this submission reserved the ID (see StandaloneDispatcher, "Terminating jobs"); nil if none.
	after <-chan struct{}
	// recovered: the job came from Config.RecoveredJobs, not from SubmitJob.
	recovered bool
}

type archivedJob struct {
	result *jobgraph.JobResult
	graph  *executiongraph.ArchivedExecutionGraph
	// recorded: the result is in the JobResultStore, which answers for the job once it leaves
	// the archive.
	recorded  bool
	submitted time.Time // when SubmitJob accepted it: the job's INITIALIZING timestamp
	// Owned by the loop: when the job was archived, and its element of Dispatcher.bounded (nil if
	// the job is kept outside the bounds).
	at   time.Time
	elem *list.Element
}

var (
	_ Dispatcher            = (*StandaloneDispatcher)(nil)
	_ rpc.DispatcherGateway = (*StandaloneDispatcher)(nil)
)

// ErrInvalidConfig is matched (errors.Is) by New's error for a Config it refuses; the message
// names the field and Flink's option key. The JobMaster's options (scheduling strategy,
// slot.request.timeout, …) live in jobmaster.Config, which jobmaster.Config.Validate checks.
var ErrInvalidConfig = errors.New("dispatcher: invalid configuration")

// New returns a Dispatcher; it serves calls at once. With Config.RecoveredJobs and
// Config.RecoveredDirtyResults it first starts the recovered jobs and the cleanups (see there) on
// the caller's goroutine. Errors: ErrInvalidConfig for a missing HA or JobManagerRunnerFactory, a
// negative JobStoreMaxCapacity, or a nil, invalid or repeated recovered plan; an error wrapping
// ErrNotLeader when the fencing check before a recovered job fails; the runner factory's or the
// runner's Start error for a recovered job. On an error every recovered job New started is
// closed again (SUSPENDED: its plan, checkpoints and HA data stay for the next leader) and no
// cleanup is left running.
func New(cfg Config) (*StandaloneDispatcher, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d := newDispatcher(cfg)
	if err := d.recover(); err != nil {
		_ = d.Close()
		return nil, err
	}
	return d, nil
}

// validate checks cfg as New does.
func (cfg *Config) validate() error {
	switch {
	case cfg.HA == nil:
		return fmt.Errorf("%w: Config.HA is required", ErrInvalidConfig)
	case cfg.JobManagerRunnerFactory == nil:
		return fmt.Errorf("%w: Config.JobManagerRunnerFactory is required", ErrInvalidConfig)
	case cfg.JobStoreMaxCapacity < 0:
		return fmt.Errorf("%w: JobStoreMaxCapacity (jobstore.max-capacity) is %d, negative (0 means unlimited)", ErrInvalidConfig, cfg.JobStoreMaxCapacity)
	case cfg.ClientAlivenessCheckInterval < 0:
		return fmt.Errorf("%w: ClientAlivenessCheckInterval ($internal.dispatcher.client-aliveness-check.interval) is %v, negative (0 means the default, 1 min)", ErrInvalidConfig, cfg.ClientAlivenessCheckInterval)
	case cfg.BlocklistItemTimeout < 0:
		return fmt.Errorf("%w: BlocklistItemTimeout (cluster.resource-blocklist.item.timeout) is %v, negative", ErrInvalidConfig, cfg.BlocklistItemTimeout)
	case !cfg.BlocklistAction.Valid():
		return fmt.Errorf("%w: BlocklistAction (cluster.resource-blocklist.action) is %q; want %q or %q", ErrInvalidConfig, cfg.BlocklistAction, rpc.BlockActionMarkBlocked, rpc.BlockActionMarkBlockedAndEvacuateTasks)
	}
	if _, err := resolveCleanupRetry(*cfg); err != nil {
		return err
	}
	for _, id := range slices.SortedFunc(maps.Keys(cfg.ParallelismOverrides), func(a, b jobgraph.JobVertexID) int { return slices.Compare(a[:], b[:]) }) {
		if p := cfg.ParallelismOverrides[id]; p < 1 {
			return fmt.Errorf("%w: ParallelismOverrides (pipeline.jobvertex-parallelism-overrides) gives vertex %s parallelism %d, below 1", ErrInvalidConfig, id, p)
		}
	}
	cfg.ParallelismOverrides = maps.Clone(cfg.ParallelismOverrides)
	seen := make(map[jobgraph.JobID]bool, len(cfg.RecoveredJobs))
	for i, g := range cfg.RecoveredJobs {
		if g == nil {
			return fmt.Errorf("%w: Config.RecoveredJobs[%d] is nil", ErrInvalidConfig, i)
		}
		if err := g.Validate(); err != nil {
			return fmt.Errorf("%w: Config.RecoveredJobs[%d] (job %s): %w", ErrInvalidConfig, i, g.JobID, err)
		}
		if seen[g.JobID] {
			return fmt.Errorf("%w: Config.RecoveredJobs[%d]: job %s is recovered twice", ErrInvalidConfig, i, g.JobID)
		}
		seen[g.JobID] = true
	}
	return nil
}

func newDispatcher(cfg Config) *StandaloneDispatcher {
	retryStrategy, _ := resolveCleanupRetry(cfg) // validate checked it
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	expiration := cfg.JobStoreExpiration
	if expiration == 0 {
		expiration = DefaultJobStoreExpiration
	}
	stopped, stop := context.WithCancel(context.Background())
	d := &StandaloneDispatcher{
		stopped:     stopped,
		stop:        stop,
		cfg:         cfg,
		log:         log,
		loop:        mainloop.NewWithClosedError("dispatcher", errClosed),
		expiration:  expiration,
		capacity:    cfg.JobStoreMaxCapacity,
		jobs:        make(map[jobgraph.JobID]*job),
		terminating: make(map[jobgraph.JobID]*job),

		clientExpiry:     make(map[jobgraph.JobID]time.Time),
		clientCheckEvery: cmp.Or(cfg.ClientAlivenessCheckInterval, DefaultClientAlivenessCheckInterval),
		archive:          make(map[jobgraph.JobID]*archivedJob),
		bounded:          list.New(),

		retryStrategy: retryStrategy,
	}
	d.loop.SetPanicHandler(func(err *jobgraph.PanicError) {
		d.log.Error("the Dispatcher's main loop panicked", "panic", err.Value, "stack", string(err.Stack))
		d.fatal(fmt.Errorf("dispatcher: %w", err))
	})
	d.registerMetrics(cfg.Metrics)
	return d
}

// fatal reports an unrecoverable error to Config.FatalErrorHandler, or logs it; off the loop.
func (d *StandaloneDispatcher) fatal(err error) {
	if h := d.cfg.FatalErrorHandler; h != nil {
		h(err)
		return
	}
	d.log.Error("fatal error of the Dispatcher", "err", err)
}

// leads is the fencing check (Config.LeaderElection); off the loop: the election may take time.
func (d *StandaloneDispatcher) leads(what string, id jobgraph.JobID) error {
	if e := d.cfg.LeaderElection; e != nil && !e.HasLeadership(d.cfg.LeaderSession) {
		return fmt.Errorf("%w: %s job %s: leader session %s is over", ErrNotLeader, what, id, d.cfg.LeaderSession)
	}
	return nil
}

// recover starts the cleanups of Config.RecoveredDirtyResults and then the jobs of
// Config.RecoveredJobs; New calls it before anyone else can reach the Dispatcher.
func (d *StandaloneDispatcher) recover() error {
	dirty := make(map[jobgraph.JobID]bool, len(d.cfg.RecoveredDirtyResults))
	for _, r := range d.cfg.RecoveredDirtyResults {
		dirty[r.JobID] = true
		// The job is answered from its JobResultStore entry (lookup) during and after its
		// cleanup; Close waits for the cleanup, and cancels its store calls.
		d.goWatch(func() {
			d.log.Info("recovered the dirty result of a job: cleaning it up", "job", r.JobID, "status", r.Status)
			d.cleanUpGlobally(&r, nil) // the plan, if still stored, says what happens to the checkpoints
		})
	}
	for _, g := range d.cfg.RecoveredJobs {
		if dirty[g.JobID] {
			d.log.Info("recovered job has a dirty result: cleaned up, not run", "job", g.JobID)
			continue
		}
		if err := d.runRecovered(g); err != nil {
			return err
		}
	}
	return nil
}

// runRecovered starts a recovered job's runner; its plan is in the ExecutionPlanStore already.
func (d *StandaloneDispatcher) runRecovered(g *jobgraph.JobGraph) error {
	g, err := g.Clone()
	if err != nil {
		return fmt.Errorf("dispatcher: copy the recovered job graph: %w", err)
	}
	id := g.JobID
	if err := d.leads("recovering", id); err != nil {
		return err
	}
	runner, err := d.cfg.JobManagerRunnerFactory(g, d.cfg.HA)
	if err != nil {
		return fmt.Errorf("dispatcher: recovered job %s: creating its JobManagerRunner: %w", id, err)
	}
	if runner == nil {
		return fmt.Errorf("dispatcher: recovered job %s: Config.JobManagerRunnerFactory returned no runner and no error", id)
	}
	if err := runner.Start(); err != nil {
		runner.Close()
		return fmt.Errorf("dispatcher: recovered job %s: starting its runner: %w", id, err)
	}
	entry := &job{name: g.Name, plan: g, submitted: time.Now(), archived: make(chan struct{}), recovered: true}
	return d.loop.Call(context.Background(), func() error {
		entry.runner = runner
		d.jobs[id] = entry
		d.goWatch(func() { d.watch(id, entry, runner) })
		d.watchClient(id, g.InitialClientHeartbeatTimeout)
		d.log.Info("job recovered", "job", id, "name", g.Name)
		return nil
	})
}

// SubmitJob applies the parallelism overrides to its copy of g, validates it, rejects a
// duplicate, persists it to the ExecutionPlanStore and then starts the job's runner; it returns
// once the job runs (not when it ends). Parallelism overrides (pipeline.jobvertex-parallelism-overrides,
// Flink's Dispatcher.applyParallelismOverrides): each vertex that g.ParallelismOverrides or
// else Config.ParallelismOverrides names runs with that parallelism, and the plan stored, the
// JobMaster's ExecutionGraph and the archived graph have it; an override is validated as any
// parallelism is (above the vertex's max parallelism is a *jobgraph.ValidationError naming the
// vertex, in an error that names the override). Errors: a nil g or the
// *jobgraph.ValidationError (both match jobgraph.ErrInvalidJobGraph); a
// *DuplicateJobSubmissionError (GloballyTerminated when the JobResultStore has the job);
// ErrClosed; an error wrapping ErrNotLeader when the Dispatcher is fenced (Config.LeaderElection)
// and its session is over, checked before the first store call and again before the runner
// starts; a runner factory or store failure. On any error nothing is kept and a job
// already running under the ID is untouched. The Dispatcher keeps its own copy of g.
//
// Only the reservation of the JobID and the bookkeeping run on the Dispatcher's loop; the store
// calls, the runner's creation and its Start run on the caller's goroutine.
func (d *StandaloneDispatcher) SubmitJob(ctx context.Context, g *jobgraph.JobGraph) error {
	if g == nil {
		return fmt.Errorf("dispatcher: SubmitJob: %w: the job graph is nil", jobgraph.ErrInvalidJobGraph)
	}
	c, err := g.Clone()
	if err != nil {
		if verr := g.Validate(); verr != nil {
			return verr
		}
		return fmt.Errorf("dispatcher: copy job graph: %w", err)
	}
	g = c
	if err := d.applyParallelismOverrides(g); err != nil {
		return err
	}
	id := g.JobID
	// Reserve the JobID on the loop: of concurrent submissions exactly one gets here.
	entry := &job{name: g.Name, plan: g, submitted: time.Now(), archived: make(chan struct{})}
	if err := d.loop.Call(ctx, func() error {
		if d.closing {
			return errClosed
		}
		d.expire(time.Now())
		if j, running := d.jobs[id]; running {
			return &DuplicateJobSubmissionError{JobID: id, GloballyTerminated: j.recorded.Load()}
		}
		if a, done := d.archive[id]; done && a.result.Status.IsGloballyTerminal() {
			return &DuplicateJobSubmissionError{JobID: id, GloballyTerminated: true}
		}
		if old, ok := d.terminating[id]; ok {
			entry.after = old.archived
		}
		d.jobs[id] = entry
		d.submitting.Add(1) // Close waits for the rest of this submission
		return nil
	}); err != nil {
		return err
	}
	defer d.submitting.Done()
	// Close ends the submission's store calls too, so that it never waits on a stuck store.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(d.stopped, cancel)()
	if err := d.persistAndRun(ctx, g, entry); err != nil {
		if d.stopped.Err() != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w: job %s: %w", errClosed, id, err)
		}
		d.loop.Execute(func() {
			if d.jobs[id] == entry {
				delete(d.jobs, id)
			}
		})
		return err
	}
	return nil
}

// applyParallelismOverrides sets the parallelism of every vertex of g (the Dispatcher's copy)
// that Config.ParallelismOverrides or g.ParallelismOverrides name, the job's winning, and then
// validates g. An override that makes the graph invalid (above the vertex's max parallelism, say)
// is returned as the *jobgraph.ValidationError, naming the vertex, wrapped in a message that
// names the override and where it came from. Flink: Dispatcher.applyParallelismOverrides.
func (d *StandaloneDispatcher) applyParallelismOverrides(g *jobgraph.JobGraph) error {
	type applied struct {
		from     string
		old, new int
	}
	var changed map[*jobgraph.JobVertex]applied
	for _, v := range g.Vertices {
		if v == nil {
			continue // Validate names it below
		}
		from := "the job's"
		p, ok := g.ParallelismOverrides[v.ID]
		if !ok {
			from = "the cluster's"
			p, ok = d.cfg.ParallelismOverrides[v.ID]
		}
		if !ok || p == v.Parallelism {
			continue
		}
		if changed == nil {
			changed = make(map[*jobgraph.JobVertex]applied)
		}
		changed[v] = applied{from: from, old: v.Parallelism, new: p}
		d.log.Info("changing a job vertex's parallelism (pipeline.jobvertex-parallelism-overrides)",
			"job", g.JobID, "vertex", v.ID, "name", jobgraph.Truncate(v.Name), "from", v.Parallelism, "to", p, "override", from)
		v.Parallelism = p
	}
	err := g.Validate()
	var verr *jobgraph.ValidationError
	if err == nil || !errors.As(err, &verr) {
		return err
	}
	for v, a := range changed {
		if v.ID == verr.Vertex {
			return fmt.Errorf("dispatcher: job %s: %s pipeline.jobvertex-parallelism-overrides set vertex %q (%s) from parallelism %d to %d: %w",
				g.JobID, a.from, jobgraph.Truncate(v.Name), v.ID, a.old, a.new, err)
		}
	}
	return err
}

// persistAndRun runs a reserved submission to its end, off the loop.
func (d *StandaloneDispatcher) persistAndRun(ctx context.Context, g *jobgraph.JobGraph, entry *job) error {
	id := g.JobID
	if entry.after != nil {
		d.log.Info("waiting for the previous job of the JobID to terminate before the submission goes on", "job", id)
		select {
		case <-entry.after:
		case <-ctx.Done():
			return fmt.Errorf("dispatcher: job %s: waiting for the previous JobManagerRunner of the JobID to terminate: %w", id, ctx.Err())
		}
	}
	if err := d.leads("submitting", id); err != nil {
		return err
	}
	if _, err := d.cfg.HA.JobResultStore().Get(ctx, id); err == nil {
		return &DuplicateJobSubmissionError{JobID: id, GloballyTerminated: true}
	} else if !errors.Is(err, ha.ErrNotFound) {
		return fmt.Errorf("dispatcher: job %s: reading the JobResultStore: %w", id, err)
	}
	runner, err := d.cfg.JobManagerRunnerFactory(g, d.cfg.HA)
	if err != nil {
		return fmt.Errorf("dispatcher: job %s: creating its JobManagerRunner: %w", id, err)
	}
	if runner == nil {
		return fmt.Errorf("dispatcher: job %s: Config.JobManagerRunnerFactory returned no runner and no error", id)
	}
	if err := d.cfg.HA.ExecutionPlanStore().Put(ctx, g); err != nil {
		runner.Close()
		return fmt.Errorf("dispatcher: job %s: persisting the job graph: %w", id, err)
	}
	// undo drops what this submission persisted; it never touches another job's data.
	undo := func() {
		runner.Close()
		if err := d.cfg.HA.ExecutionPlanStore().Remove(context.Background(), id); err != nil {
			d.log.Warn("removing the job graph of a rejected submission failed", "job", id, "err", err)
		}
	}
	// Off the loop: closingFlag is stored with closing, and a loop that died of a panic has its
	// Err; either way nothing more of this submission may start.
	if d.closingFlag.Load() || d.loop.Err() != nil {
		undo()
		return errClosed
	}
	// The session may have ended while the plan was stored. In this process the next leader
	// recovers only once this Dispatcher has closed, so the removal races with no recovery. A
	// backend shared with other processes refuses the removal once another leads (ErrNotLeader);
	// the plan then stays, and that leader may run the job although this call failed.
	if err := d.leads("submitting", id); err != nil {
		undo()
		return err
	}
	if err := runner.Start(); err != nil {
		undo()
		return fmt.Errorf("dispatcher: job %s: starting its runner: %w", id, err)
	}
	// Close waits for this submission before it collects the runners on the loop, so the
	// runner is closed with the others even if Close began meanwhile: the closure below is
	// queued before this submission is done, and so runs before Close's collection (and before
	// any call made after SubmitJob returned). Posted without waiting for it: the caller goes
	// on at once.
	if !d.loop.Execute(func() {
		entry.runner = runner
		d.goWatch(func() { d.watch(id, entry, runner) })
		d.watchClient(id, g.InitialClientHeartbeatTimeout)
		d.log.Info("job submitted", "job", id, "name", g.Name)
	}) {
		undo() // the loop died of a panic meanwhile: nothing would ever close the runner
		return errClosed
	}
	return nil
}

// goWatch runs fn on a goroutine of the Dispatcher's (an idle one of workers, or a new one),
// counted by watchers.
func (d *StandaloneDispatcher) goWatch(fn func()) {
	d.watchers.Add(1)
	d.workers.Go(func() {
		defer d.watchers.Done()
		fn()
	})
}

// watch waits for the runner's result, records it, cleans the job up and archives it. It runs on
// a goroutine of its own: the store calls and retries of the cleanup never hold up the loop.
func (d *StandaloneDispatcher) watch(id jobgraph.JobID, entry *job, runner jobmaster.JobManagerRunner) {
	res := runner.Result()
	a := withInitializing(res.Archived, entry.submitted)
	result := &jobgraph.JobResult{
		JobID:            id,
		Name:             entry.name,
		Status:           a.Status,
		Failure:          a.FailureCause,
		ExceptionHistory: a.ExceptionHistory,
		Accumulators:     jobgraph.CloneAccumulators(a.Accumulators),
		RootCause:        res.Err,
	}
	if end := a.StatusTimestamp(a.Status); !end.IsZero() && end.After(entry.submitted) {
		result.NetRuntime = end.Sub(entry.submitted)
	}
	// A recovered job whose JobMaster could not be created is not over: its plan was good
	// enough once, so the failure is this process's (a store, a coordinator, a bug), and another
	// leader may run it. Fatal, and cleaned up only locally, so the plan stays for the next
	// leader's recovery. Flink: Dispatcher.handleJobManagerRunnerResult → jobManagerRunnerFailed.
	recoveryFailed := entry.recovered && errors.Is(res.Err, jobmaster.ErrJobInitialization)
	// A runner that failed (its election, the JobResultStore read at a grant, its loop's panic)
	// ends the job SUSPENDED: fatal, cleaned up locally only (Flink: jobManagerRunnerFailed).
	runnerFailed := errors.Is(res.Err, jobmaster.ErrRunnerFailed)
	globally := a.Status.IsGloballyTerminal() && !recoveryFailed && !runnerFailed
	// From here on the job is answered from its outcome, not from the runner, which closes:
	// every lookup the loop runs after this closure does. Posted without waiting for it: a
	// lookup the loop ran before it got the runner, whose caller may then call it while it
	// closes, exactly as when this waited for the closure to run.
	d.loop.Execute(func() {
		entry.ended = &archivedJob{result: result, graph: a, submitted: entry.submitted}
		if !globally && !d.closing && d.jobs[id] == entry {
			// Its JobID is free again; a new submission waits until this one is archived.
			delete(d.jobs, id)
			d.terminating[id] = entry
		}
	})
	runner.Close() // the local cleanup
	// Dirty first, then the global cleanup, then clean: a crash in between leaves a dirty entry
	// that the next leader's recovery cleans up, and the job never runs again. SUSPENDED (and a
	// closing Dispatcher) cleans nothing of HA.
	recorded := false
	// The handler hears these before the job is archived (see below).
	switch {
	case recoveryFailed:
		d.fatal(fmt.Errorf("dispatcher: recovered job %s: its JobMaster failed to initialize; the job is cleaned up locally only and stays in the ExecutionPlanStore for the next leader: %w", id, res.Err))
	case runnerFailed:
		d.fatal(fmt.Errorf("dispatcher: job %s: its JobManagerRunner failed; the job is cleaned up locally only and stays in the ExecutionPlanStore for the next leader: %w", id, res.Err))
	}
	if globally {
		var fatal error
		recorded, fatal = d.recordGloballyTerminated(result)
		if fatal != nil {
			// Flink: "couldn't be marked as pre-cleanup finished in JobResultStore", fatal. The
			// handler hears it before the job is archived, so a waiter woken by the archive
			// finds it reported.
			d.fatal(fmt.Errorf("dispatcher: job %s reached %s but its result could not be written to the JobResultStore: %w", id, result.Status, fatal))
		}
	}
	if recorded {
		entry.recorded.Store(true)
	}
	if globally && !recorded {
		d.log.Info("the job result was not written to the JobResultStore; the job stays archived until the Dispatcher closes and nothing of it is cleaned", "job", id, "status", result.Status)
	}
	if recorded {
		d.cleanUpGlobally(result, entry.plan) // until it succeeded, gave up or Close stopped it
	}
	entry.final = &archivedJob{result: result, graph: a, recorded: recorded, submitted: entry.submitted}
	posted := d.loop.Execute(func() {
		d.store(id, entry.final)
		if d.jobs[id] == entry {
			delete(d.jobs, id)
		}
		if d.terminating[id] == entry {
			delete(d.terminating, id)
		}
		close(entry.archived) // a submission of the JobID waiting for it goes on
		d.log.Info("job ended", "job", id, "status", result.Status)
	})
	if !posted {
		// The loop died of a panic (a plain Close waits for the watchers before it closes the
		// loop): nothing archives the job any more, but whoever waits for it is released.
		close(entry.archived)
	}
}

// withInitializing returns a with the INITIALIZING timestamp set to submitted (a JobMaster's
// graph starts at CREATED and has none): the job was INITIALIZING from its submission, as
// Flink's ExecutionGraph records with the Dispatcher's initialization timestamp. a is not changed.
func withInitializing(a *executiongraph.ArchivedExecutionGraph, submitted time.Time) *executiongraph.ArchivedExecutionGraph {
	if t, ok := a.StatusTimestamps[jobgraph.JobStatusInitializing]; ok && t.Equal(submitted) {
		return a
	}
	cp := *a
	cp.StatusTimestamps = maps.Clone(a.StatusTimestamps)
	if cp.StatusTimestamps == nil {
		cp.StatusTimestamps = make(map[jobgraph.JobStatus]time.Time, 1)
	}
	cp.StatusTimestamps[jobgraph.JobStatusInitializing] = submitted
	return &cp
}

// store archives a job; on the loop. A job the JobResultStore answers for once it is gone is
// bounded: it expires and counts towards the capacity. Others stay until Close.
func (d *StandaloneDispatcher) store(id jobgraph.JobID, a *archivedJob) {
	now := time.Now()
	d.expire(now)
	if old, ok := d.archive[id]; ok {
		d.evict(id, old)
	}
	a.at = now
	d.archive[id] = a
	if !a.recorded { // SUSPENDED, or the JobResultStore write failed
		return
	}
	a.elem = d.bounded.PushBack(id)
	for d.capacity > 0 && d.bounded.Len() > d.capacity {
		oldest := d.bounded.Front().Value.(jobgraph.JobID)
		d.log.Debug("archived job evicted: jobstore.max-capacity reached", "job", oldest, "capacity", d.capacity)
		d.evict(oldest, d.archive[oldest])
	}
	d.arm(now)
}

// evict removes an archived job; on the loop.
func (d *StandaloneDispatcher) evict(id jobgraph.JobID, a *archivedJob) {
	delete(d.archive, id)
	if a.elem != nil {
		d.bounded.Remove(a.elem)
		a.elem = nil
	}
}

// expire evicts the bounded jobs archived at least the expiration before now; on the loop. The
// expiration is the same for all, so they expire in the order they were archived. The expiry
// timer calls it; so does every read of the archive, which then never sees an expired job whose
// timer closure is still queued behind it.
func (d *StandaloneDispatcher) expire(now time.Time) {
	if d.expiration < 0 {
		return
	}
	for e := d.bounded.Front(); e != nil; e = d.bounded.Front() {
		id := e.Value.(jobgraph.JobID)
		a := d.archive[id]
		if now.Before(a.at.Add(d.expiration)) {
			return
		}
		d.log.Debug("archived job expired: jobstore.expiration-time passed", "job", id, "archived", a.at)
		d.evict(id, a)
	}
}

// arm schedules the expiry of the oldest bounded job, unless a timer that fires no later is
// already scheduled; on the loop. A timer that finds nothing expired (its job was evicted by
// capacity meanwhile) re-arms for the new oldest job.
func (d *StandaloneDispatcher) arm(now time.Time) {
	if d.armed || d.expiration < 0 || d.bounded.Len() == 0 {
		return
	}
	oldest := d.archive[d.bounded.Front().Value.(jobgraph.JobID)]
	d.armed = true
	d.loop.Schedule(oldest.at.Add(d.expiration).Sub(now), func() {
		d.armed = false
		now := time.Now()
		d.expire(now)
		d.arm(now)
	})
}

type lookup struct {
	runner   jobmaster.JobManagerRunner
	archived *archivedJob
	job      *job // the running job, when not archived
	// ended is the outcome of a job whose runner is done and whose result is being recorded:
	// status, cancel and the graph are answered from it; RequestJobResult waits for the archive.
	ended *archivedJob
	// stored is the JobResultStore's result of a job neither running nor archived (expired from
	// the archive, or ended under an earlier Dispatcher).
	stored *jobgraph.JobResult
}

// lookup finds the job running, archived, or else in the JobResultStore (read off the loop), or
// returns an error wrapping ErrJobNotFound.
func (d *StandaloneDispatcher) lookup(ctx context.Context, id jobgraph.JobID) (lookup, error) {
	l, err := mainloop.Submit(ctx, d.loop, func() (lookup, error) {
		d.expire(time.Now())
		// The current job of the JobID first: a job resubmitted after its predecessor ended
		// SUSPENDED is answered for itself, not from the predecessor's archive.
		if j, ok := d.jobs[id]; ok {
			if j.ended != nil {
				return lookup{ended: j.ended, job: j}, nil
			}
			return lookup{runner: j.runner, job: j}, nil
		}
		if j, ok := d.terminating[id]; ok {
			return lookup{ended: j.ended, job: j}, nil
		}
		if a, ok := d.archive[id]; ok {
			return lookup{archived: a}, nil
		}
		return lookup{}, nil
	})
	if err != nil || l.archived != nil || l.job != nil {
		return l, err
	}
	entry, err := d.cfg.HA.JobResultStore().Get(ctx, id)
	switch {
	case errors.Is(err, ha.ErrNotFound):
		return lookup{}, fmt.Errorf("%w: %s", ErrJobNotFound, id)
	case err != nil:
		return lookup{}, fmt.Errorf("dispatcher: job %s is not archived; reading the JobResultStore: %w", id, err)
	}
	return lookup{stored: &entry.Result}, nil
}

// result is the final result of a job that ended (archived, being recorded, or in the
// JobResultStore), else nil.
func (l lookup) result() *jobgraph.JobResult {
	switch {
	case l.archived != nil:
		return l.archived.result
	case l.ended != nil:
		return l.ended.result
	}
	return l.stored
}

// CancelJob cancels a running job (CANCELLING, then CANCELED). It is a no-op for a CANCELED
// job and fails with ErrJobAlreadyTerminated for a job that ended otherwise, and with
// ErrJobNotFound for an unknown JobID. A job no longer archived is answered from the
// JobResultStore; a job that ends while it is being canceled (its runner answers that it
// closed) from its outcome, as RequestJobStatus does.
func (d *StandaloneDispatcher) CancelJob(ctx context.Context, id jobgraph.JobID) error {
	_, err := answerJob(ctx, d, id, func(l lookup) (struct{}, error) {
		switch {
		case l.result() != nil:
			if status := l.result().Status; status != jobgraph.JobStatusCanceled {
				return struct{}{}, fmt.Errorf("%w: job %s ended with status %s", ErrJobAlreadyTerminated, id, status)
			}
			return struct{}{}, nil
		case l.runner == nil:
			return struct{}{}, fmt.Errorf("dispatcher: job %s is still being submitted; cancel it once SubmitJob returned", id)
		}
		return struct{}{}, l.runner.Cancel(ctx)
	})
	return err
}

// RequestJobStatus returns the job's current status, or ErrJobNotFound. A job no longer
// archived is answered from the JobResultStore.
func (d *StandaloneDispatcher) RequestJobStatus(ctx context.Context, id jobgraph.JobID) (jobgraph.JobStatus, error) {
	return answerJob(ctx, d, id, func(l lookup) (jobgraph.JobStatus, error) {
		switch {
		case l.result() != nil:
			return l.result().Status, nil
		case l.runner == nil:
			return jobgraph.JobStatusInitializing, nil
		}
		return l.runner.RequestJobStatus(ctx)
	})
}

// answerJob looks job id up and returns answer's reply to the lookup: from the job's outcome, or
// from its runner. A runner that answers that it closed (jobmaster.ErrClosed, its own or its
// JobMaster's) closed after the lookup gave it out: the job ended in between. The watch records
// a job's outcome before it closes its runner, so answerJob looks the job up once more and
// answers from that; a runner closed for another reason (the Dispatcher closing) is given out
// again and its closed error returned. So answer may run twice for one call, on the runner the
// second lookup found (the same one, closed, or one whose JobMaster closed and was replaced in a
// new leader session): CancelJob, RequestJobStatus, RequestJob and the savepoint triggers, none
// of which the closed JobMaster carried out.
func answerJob[T any](ctx context.Context, d *StandaloneDispatcher, id jobgraph.JobID, answer func(l lookup) (T, error)) (T, error) {
	l, err := d.lookup(ctx, id)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := answer(l)
	if l.runner == nil || !errors.Is(err, jobmaster.ErrClosed) {
		return v, err
	}
	if l, err = d.lookup(ctx, id); err != nil {
		var zero T
		return zero, err
	}
	return answer(l)
}

// RequestJob returns the job's ArchivedExecutionGraph (a live snapshot while it runs, with the
// INITIALIZING timestamp of its submission, as the archive of an ended job has it), or
// ErrJobNotFound: for an unknown JobID, and for a job whose graph is not in this Dispatcher's
// job store though the JobResultStore has its result: it expired (jobstore.expiration-time or
// jobstore.max-capacity), or the job ended under an earlier Dispatcher (the job store is held in
// memory, per Dispatcher, as Flink's MemoryExecutionGraphInfoStore).
// A job that ends while it is asked (its runner answers that it closed) is answered from its
// outcome, as RequestJobStatus does.
func (d *StandaloneDispatcher) RequestJob(ctx context.Context, id jobgraph.JobID) (*executiongraph.ArchivedExecutionGraph, error) {
	return answerJob(ctx, d, id, func(l lookup) (*executiongraph.ArchivedExecutionGraph, error) {
		switch {
		case l.archived != nil:
			return l.archived.graph, nil
		case l.ended != nil:
			return l.ended.graph, nil
		case l.stored != nil:
			return nil, fmt.Errorf("%w: job %s ended with status %s, and its archived execution graph is not in this Dispatcher's job store: it expired (jobstore.expiration-time, jobstore.max-capacity), or the job ended under an earlier Dispatcher, whose job store was its own",
				ErrJobNotFound, id, l.stored.Status)
		case l.runner == nil:
			return nil, fmt.Errorf("dispatcher: job %s is still being submitted", id)
		}
		a, err := l.runner.RequestJob(ctx)
		if err != nil || a == nil {
			return a, err
		}
		return withInitializing(a, l.job.submitted), nil
	})
}

// RequestJobResult waits until the job has ended and been archived, or ctx ends, and returns
// its result; ErrJobNotFound for an unknown JobID. A globally terminated job is archived once its
// global cleanup ended (see "Cleanup"): a cleanup that retries keeps RequestJobResult waiting,
// as the seed design's "marks it clean, archives the ExecutionGraph" says; Flink answers as soon
// as the job ended. Jobs still running when the Dispatcher closes
// end SUSPENDED. A job no longer archived is answered from the JobResultStore: the result as
// stored, without RootCause.
func (d *StandaloneDispatcher) RequestJobResult(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error) {
	l, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if l.ended == nil {
		if r := l.result(); r != nil {
			return r, nil
		}
	}
	select {
	case <-l.job.archived:
		return l.job.final.result, nil
	case <-d.loop.Done():
		if err := d.loop.Err(); err != nil {
			return nil, err // the Dispatcher's loop died of a panic: ErrClosed wrapping it
		}
		<-l.job.archived // a plain Close archives every job before its loop ends
		return l.job.final.result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ListJobs lists running and archived jobs, sorted by submission order of the running ones, then
// the archived ones by JobID. StartTime is when SubmitJob accepted the job (its INITIALIZING
// timestamp), in Unix milliseconds. Jobs that left the archive (see StandaloneDispatcher) are
// not listed, even though the JobResultStore still answers for them. The running jobs' statuses
// are asked of their runners off the Dispatcher's loop; a job that ends meanwhile (its runner
// answers that it closed) is listed with its outcome, as RequestJobStatus answers it, not failed
// with the runner's closed error. Errors: ErrClosed once the Dispatcher closed, ctx's.
func (d *StandaloneDispatcher) ListJobs(ctx context.Context) ([]rpc.JobStatusMessage, error) {
	type running struct {
		id        jobgraph.JobID
		name      string
		submitted time.Time
		runner    jobmaster.JobManagerRunner // nil while being submitted or once ended
		status    jobgraph.JobStatus         // without a runner
	}
	var live []running
	var out []rpc.JobStatusMessage
	if err := d.loop.Call(ctx, func() error {
		d.expire(time.Now())
		// Everything ListJobs reads of a job is copied here, on the loop that writes it.
		for id, j := range d.jobs {
			r := running{id: id, name: j.name, submitted: j.submitted, runner: j.runner, status: jobgraph.JobStatusInitializing}
			if j.ended != nil {
				r.runner, r.status = nil, j.ended.result.Status
			}
			live = append(live, r)
		}
		for id, j := range d.terminating {
			if _, resubmitted := d.jobs[id]; !resubmitted {
				live = append(live, running{id: id, name: j.name, submitted: j.submitted, status: j.ended.result.Status})
			}
		}
		for id, a := range d.archive {
			_, current := d.jobs[id]
			if _, ended := d.terminating[id]; current || ended {
				continue // the job now under the JobID is listed instead
			}
			out = append(out, rpc.JobStatusMessage{JobID: id, Name: a.result.Name, Status: a.result.Status,
				StartTime: a.submitted.UnixMilli()})
		}
		return nil
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b rpc.JobStatusMessage) int { return slices.Compare(a.JobID[:], b.JobID[:]) })
	slices.SortFunc(live, func(a, b running) int { return a.submitted.Compare(b.submitted) })
	msgs := make([]rpc.JobStatusMessage, 0, len(live)+len(out))
	for _, r := range live {
		status := r.status
		if r.runner != nil {
			s, err := r.runner.RequestJobStatus(ctx)
			if errors.Is(err, jobmaster.ErrClosed) {
				// The job ended after the snapshot above and its runner closed: it is listed
				// with its outcome, as RequestJobStatus answers then, not with the runner's error.
				s, err = d.RequestJobStatus(ctx, r.id)
				if errors.Is(err, ErrJobNotFound) {
					continue // gone from the archive meanwhile, as a listing taken now would not have it
				}
			}
			if err != nil {
				return nil, err
			}
			status = s
		}
		msgs = append(msgs, rpc.JobStatusMessage{JobID: r.id, Name: r.name, Status: status, StartTime: r.submitted.UnixMilli()})
	}
	return append(msgs, out...), nil
}

// Close stops accepting jobs, closes every runner — jobs not yet ended are SUSPENDED, and pending
// RequestJobResult calls return that — and waits for everything the Dispatcher started.
// Persisted graphs of suspended jobs stay in the ExecutionPlanStore for recovery. Store calls
// still in flight see their context canceled: a submission waiting on the store fails with
// ErrClosed, and a cleanup (one waiting between retries too) stops and leaves the job's
// JobResultStore entry dirty for recovery. Close does not wait for a retry's backoff.
func (d *StandaloneDispatcher) Close() error {
	var runners []jobmaster.JobManagerRunner
	// Finally: after a panic ended the loop, the runners are still closed.
	d.loop.Finally(func() { d.closing = true; d.closingFlag.Store(true) })
	d.stop()
	// Submissions past their reservation either give up (they see closing) or finish starting
	// their runner; either way their runner is known once they are done.
	d.submitting.Wait()
	d.loop.Finally(func() {
		for _, j := range d.jobs {
			if j.runner != nil {
				runners = append(runners, j.runner)
			}
		}
	})
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(r.Close)
	}
	wg.Wait()
	d.watchers.Wait()
	d.workers.Close()
	d.loop.Close()
	d.metrics.Close()
	return nil
}
