// Package taskexecutor is the in-process TaskExecutor: a slot table, the lifecycle of the tasks
// deployed into its slots, task code registered by name (Invokable, Registry), and the in-memory
// shuffle (Shuffle) that carries records between tasks.
// Flink: org.apache.flink.runtime.taskexecutor.TaskExecutor.
//
// A TaskExecutor keeps its state on its own main loop; each task runs on a goroutine of its own,
// which the TaskExecutor owns and waits for on Close.
package taskexecutor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/gopool"
	"github.com/jobgraph/jobgraph/internal/heartbeat"
	"github.com/jobgraph/jobgraph/internal/mainloop"
	"github.com/jobgraph/jobgraph/internal/registration"
	"github.com/jobgraph/jobgraph/metrics"
	"github.com/jobgraph/jobgraph/rpc"
)

// Errors returned by TaskExecutor methods (errors.Is).
var (
	// ErrClosed: the TaskExecutor was closed. Every error-returning method returns it (wrapped
	// with the TaskExecutor's ResourceID) after Close, in an rpc.UnreachableError
	// (rpc.IsUnreachable): a closed TaskExecutor is gone for its callers, so heartbeat senders
	// count it toward heartbeat.rpc-failure-threshold as they do a killed one's ErrKilled (Flink:
	// an RPC to a stopped endpoint fails with RecipientUnreachableException). It matches
	// rpc.ErrClosed.
	ErrClosed = fmt.Errorf("taskexecutor: %w", rpc.ErrClosed)
	// ErrKilled: the TaskExecutor was killed (Kill) and no longer answers. Its gateway methods
	// return it wrapped in an rpc.UnreachableError (rpc.IsUnreachable), as a transport does for
	// a peer whose process is gone, so heartbeat senders count it toward
	// heartbeat.rpc-failure-threshold.
	ErrKilled = errors.New("taskexecutor: killed")
	// ErrTaskNotFound: no task runs under the execution attempt named. Flink: TaskException
	// "Cannot find task to stop for execution".
	ErrTaskNotFound = errors.New("task not found")
	// ErrSlotNotFound: no slot is allocated under the allocation named, or the slot index is out
	// of range. Flink: TaskSubmissionException / SlotNotFoundException.
	ErrSlotNotFound = errors.New("slot not found")
	// ErrSlotOccupied: the slot asked for is allocated to another allocation.
	// Flink: SlotOccupiedException.
	ErrSlotOccupied = errors.New("slot occupied")
	// ErrUnknownInvokable: a task names task code that is not in the Registry. A task failing
	// this way fails with an *UnknownInvokableError, reported FAILED with a failure that matches
	// ErrUnknownInvokable.
	ErrUnknownInvokable = errors.New("task code not registered")
)

// The sentinels that may travel in a gateway message or a task's failure (see
// jobgraph.RegisterErrorCode), the shuffle's included.
func init() {
	for code, err := range map[string]error{
		"taskexecutor.closed":                       ErrClosed,
		"taskexecutor.killed":                       ErrKilled,
		"taskexecutor.task-not-found":               ErrTaskNotFound,
		"taskexecutor.slot-not-found":               ErrSlotNotFound,
		"taskexecutor.slot-occupied":                ErrSlotOccupied,
		"taskexecutor.unknown-invokable":            ErrUnknownInvokable,
		"taskexecutor.producer-failed":              ErrProducerFailed,
		"taskexecutor.partition-released":           ErrPartitionReleased,
		"taskexecutor.partition-lost":               ErrPartitionLost,
		"taskexecutor.producer-not-in-this-shuffle": ErrProducerNotInThisShuffle,
	} {
		jobgraph.RegisterErrorCode(code, err)
	}
}

// UnknownInvokableError is the failure of a task whose task code (JobVertex.Invokable) is not
// registered on the TaskExecutor it was deployed to. errors.Is(err, ErrUnknownInvokable).
type UnknownInvokableError struct {
	Name         string
	TaskExecutor jobgraph.ResourceID
	// Registered lists the names the TaskExecutor's Registry has, sorted.
	Registered []string
}

func (e *UnknownInvokableError) Error() string {
	reg := "none"
	if n := len(e.Registered); n > 0 {
		const most = 20
		if n > most {
			reg = strings.Join(e.Registered[:most], ", ") + fmt.Sprintf(", … %d more", n-most)
		} else {
			reg = strings.Join(e.Registered, ", ")
		}
	}
	return fmt.Sprintf("task code %q is not registered on TaskExecutor %s (registered: %s)", e.Name, e.TaskExecutor, reg)
}

func (e *UnknownInvokableError) Is(target error) bool { return target == ErrUnknownInvokable }

// DefaultSlotProfile is the profile of each slot when Config.SlotProfile is zero.
var DefaultSlotProfile = jobgraph.ResourceProfile{CPUCores: 1}

// Config configures a TaskExecutor.
type Config struct {
	// ResourceID identifies the TaskExecutor; a random "taskexecutor-…" one when empty.
	// Flink: taskmanager.resource-id.
	ResourceID jobgraph.ResourceID
	// Address is where the TaskExecutor registers in RPC; when empty, its ResourceID's address
	// on RPC (rpc.AddressOf: the ResourceID itself on a LocalService).
	Address string
	// NumSlots is the number of slots (Flink: taskmanager.numberOfTaskSlots, default 1).
	NumSlots int
	// SlotProfile is what each slot offers (DefaultSlotProfile when zero).
	SlotProfile jobgraph.ResourceProfile
	// Registry holds the task code; an empty one when nil (every task then fails).
	Registry *Registry
	// RPC is the transport: the TaskExecutor registers under Address and reaches the
	// ResourceManager and JobMasters through it. Required.
	RPC rpc.Service
	// ResourceManagerAddress is where Start registers the TaskExecutor. When empty (and
	// ResourceManagerRetrieval is nil) the TaskExecutor registers with no ResourceManager (and
	// tells none about freed slots).
	ResourceManagerAddress string
	// ResourceManagerRetrieval, if set, is how the TaskExecutor finds the ResourceManager
	// instead of ResourceManagerAddress (setting both is an error): the leader retrieval of the
	// ResourceManager's election (ha.Services.ResourceManagerLeaderRetrieval), which Start starts
	// and Close stops. On every new leader (address, session) the TaskExecutor drops its
	// connection to the earlier one and registers with the new one, off its main loop, retrying
	// until registered or the leader changes again (cluster.registration.initial-timeout 100 ms
	// doubling to cluster.registration.max-timeout 30 s per attempt, cluster.registration.error-delay
	// 10 s after a failure; see internal/registration; over the in-process *rpc.LocalService an
	// attempt has no timeout, as the ResourceManager there answers from a loop that never
	// waits). Each registration carries the full slot
	// report, so a new leader learns the slots the TaskExecutor holds for running jobs, whose
	// tasks go on undisturbed (Flink sends the report right after registering). The answer to a registration made for an earlier leader is
	// dropped. The ResourceManager must run under that election, its ResourceManagerID being the
	// leader session (resourcemanager.Config.LeaderElection): a registration answered with
	// another ResourceManagerID counts as failed — unless the retrieval names the leader with
	// ha.NoSession (ha.StandaloneLeaderRetrieval, a fixed address), whose answer is taken as it
	// comes. RequestSlot is then fenced by the current
	// leader's session (see RequestSlot). Start does not wait for the registration. A silent
	// ResourceManager (heartbeat.timeout) is registered with again the same way. Flink:
	// TaskExecutor.ResourceManagerLeaderListener, notifyOfNewResourceManagerLeader and its
	// TaskExecutorToResourceManagerConnection. Where we differ: Flink also tells the old leader
	// that the TaskExecutor disconnects; the old leader drops it when it loses leadership.
	ResourceManagerRetrieval ha.LeaderRetrieval
	// Shuffle is the ShuffleEnvironment that carries records between tasks (Flink: the
	// TaskExecutor's ShuffleEnvironment, chosen by shuffle-service-factory.class). A private
	// in-memory *Shuffle when nil; TaskExecutors of one process that exchange records share one.
	Shuffle ShuffleEnvironment
	// Metrics, if not nil, is the registry where every task attempt opens its metric group
	// (metrics.Registry.TaskGroup: job_id, job_name, task_id, task_name, subtask_index,
	// task_attempt_num) for the time it runs, with Flink's task I/O metrics (TaskIOMetricGroup):
	// numRecordsIn and numRecordsOut (counters: records the task code read, barriers excluded,
	// and emitted, a broadcast record once), numRecordsInPerSecond and numRecordsOutPerSecond
	// (meters over them) and backPressuredTimeMsPerSecond (a TimerGauge: ms per second its
	// writers waited for room, see ShuffleIOOwnerContext.BackPressure). The group is closed
	// when the task's goroutine ends, before its final state is reported. Flink: the
	// TaskManager's MetricRegistry and TaskMetricGroup.
	Metrics *metrics.Registry
	// Logger receives the TaskExecutor's logs (slog.Default() when nil).
	Logger *slog.Logger
	// HeartbeatInterval is option heartbeat.interval (default 10 s; 0 means the default). The
	// TaskExecutor only answers heartbeat requests, so it only checks that HeartbeatTimeout is not
	// shorter; pass the values the JobMasters and the ResourceManager use.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout is how long the JobMaster of a job or the ResourceManager may stay silent.
	// A JobMaster silent this long is disconnected: the job's tasks here fail and its slots are
	// freed. A silent ResourceManager is registered with again. Option heartbeat.timeout, default
	// 50 s (0 means the default).
	HeartbeatTimeout time.Duration
	// HeartbeatRPCFailureThreshold is how many heartbeats in a row to a JobMaster (or to the
	// ResourceManager) may fail as unreachable (rpc.IsUnreachable) before it is taken as lost at
	// once, as on a timeout. Option heartbeat.rpc-failure-threshold, default 2 (0 means the
	// default); -1 turns it off; below -1 is an error. The TaskExecutor only sends heartbeats in
	// answer to requests, so this notices a peer that still asks but cannot be answered.
	HeartbeatRPCFailureThreshold int
	// TaskCancellationInterval is option task.cancellation.interval (default 30 s; 0 means the
	// default, negative is an error): while a task that was canceled or failed from outside has
	// not returned, the TaskExecutor logs a warning naming it every interval, the first one
	// interval after the cancellation. Flink's TaskInterrupter also interrupts the task thread
	// each time; a goroutine cannot be interrupted, but every call of the task API already fails
	// once the task is stopped (see Invokable).
	TaskCancellationInterval time.Duration
	// TaskCancellationTimeout is option task.cancellation.timeout (default 180 s; 0 means the
	// default; NoTaskCancellationTimeout, Flink's 0, disables it; other negative values are an
	// error): a task that has not returned this long after it was canceled or failed from
	// outside makes the TaskExecutor fail fatally, as Flink's TaskCancelerWatchDog does — an
	// ERROR log names the task, the TaskExecutor disconnects from the ResourceManager and its
	// JobMasters, its slots and partitions are lost, and the jobs fail over elsewhere. See
	// TaskExecutor.FatalError.
	TaskCancellationTimeout time.Duration
	// FatalErrorHandler, if set, hears the error the TaskExecutor failed fatally with, once, at
	// the moment it failed (FatalError returns the same error from then on): a task stuck past
	// task.cancellation.timeout, its ResourceManager leader retrieval's error, or a panic on its
	// main loop (a *jobgraph.PanicError). It is
	// called on the TaskExecutor's loop goroutine and must not wait for the TaskExecutor (start
	// a goroutine to Close it). cluster.RunTaskExecutor's runner closes itself on it, as Flink's
	// TaskManagerRunner.onFatalError ends the TaskManager process; a MiniCluster leaves its
	// failed TaskExecutors out of TaskExecutors and releases them on Close.
	FatalErrorHandler func(err error)
}

// TaskExecutor runs tasks in its slots. It implements rpc.TaskExecutorGateway; its methods are
// safe for concurrent use. Create it with New, then Start; Close it when done.
type TaskExecutor struct {
	id       jobgraph.ResourceID
	address  string
	profile  jobgraph.ResourceProfile
	registry *Registry
	rpc      rpc.Service
	rmAddr   string
	// rmRetrieval is Config.ResourceManagerRetrieval; rmConn (loop-owned) the registration with
	// the leader it names. Both nil with a fixed ResourceManagerAddress.
	rmRetrieval ha.LeaderRetrieval
	rmConn      *registration.Connection[rpc.ResourceManagerGateway]
	retrieving  atomic.Bool // rmRetrieval was started
	shuffle     ShuffleEnvironment
	metrics     *metrics.Registry
	log         *slog.Logger

	loop *mainloop.Loop
	// ctx lives until Close or Kill; RPCs made off the loop and every task's context derive from it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// wg counts the goroutines the TaskExecutor starts (tasks, RPCs off the loop). Add is only
	// called on the loop, so it never races with the Wait in Close (which follows loop.Close).
	wg sync.WaitGroup
	// workers are the goroutines spawn runs the RPCs off the loop on, kept for the next call
	// (slot offers and freed-slot notices come with every job); closed by Close after wg.
	workers gopool.Pool

	started    atomic.Bool
	registered atomic.Bool // under address in rpc
	killed     atomic.Bool
	// fatal is the error the TaskExecutor failed fatally with (set before killed).
	fatal   atomic.Pointer[error]
	onFatal func(error) // Config.FatalErrorHandler

	cancelInterval time.Duration // task.cancellation.interval
	cancelTimeout  time.Duration // task.cancellation.timeout; ≤ 0: no watchdog
	closeOnce      sync.Once
	closing        atomic.Bool // Close was called (Closed)

	// State below is owned by the loop.
	slots       []slot
	allocations map[jobgraph.AllocationID]int // slot index
	jobs        map[jobgraph.JobID]*jobConnection
	tasks       map[jobgraph.ExecutionAttemptID]*task
	// reporting holds, by job, the tasks that have returned and left their slot but whose final
	// state is still on its way to the JobMaster: they stay in the job's
	// ExecutionDeploymentReport until that call has returned (see rpc.ExecutionDeploymentReport).
	reporting map[jobgraph.ExecutionAttemptID]jobgraph.JobID
	rm        rpc.ResourceManagerGateway
	rmID      jobgraph.ResourceManagerID
	// freedUnannounced are the slots freed while no ResourceManager was registered with (a
	// leader change in progress): the registration under way may carry a slot report built
	// before they were freed, so the new leader is told of each once registered.
	freedUnannounced []freedSlot
	// jmHeartbeats monitors the JobMaster of each job whose connection is registered, by job: the
	// gateway names a JobMaster only by a ResourceID the TaskExecutor is never told, so it counts
	// a JobMaster alive when it takes a heartbeat (see HeartbeatFromJobMaster). rmHeartbeats
	// monitors the ResourceManager, by address, once registered; rmAnswering is set while a
	// heartbeat to it is in flight.
	jmHeartbeats *heartbeat.Manager[jobgraph.JobID]
	rmHeartbeats *heartbeat.Manager[string]
	rmAnswering  bool
	// rmWaiters are closed when the TaskExecutor next registers with a ResourceManager
	// (WaitRegistered).
	rmWaiters []chan struct{}
}

var (
	_ rpc.TaskExecutorGateway         = (*TaskExecutor)(nil)
	_ rpc.TaskExecutorNotifier        = (*TaskExecutor)(nil)
	_ rpc.ResourceManagerDisconnector = (*TaskExecutor)(nil)
)

type slotState uint8

const (
	slotFree      slotState = iota
	slotAllocated           // allocated, offered (or about to be) to the JobMaster
	slotActive              // accepted by the JobMaster
	slotReleasing           // freed while tasks still run in it; free once they have returned
)

var slotStateNames = [...]string{"free", "allocated", "active", "releasing"}

func (s slotState) String() string { return slotStateNames[s] }

type slot struct {
	state      slotState
	allocation jobgraph.AllocationID
	job        jobgraph.JobID
	profile    jobgraph.ResourceProfile
	tasks      map[jobgraph.ExecutionAttemptID]*task
}

// jobConnection is what the TaskExecutor knows of a job's JobMaster: where it is, its current
// fencing token, and the slot offers waiting to be sent to it. Flink: JobTable.Connection.
type jobConnection struct {
	job        jobgraph.JobID
	address    string
	token      jobgraph.JobMasterID
	gateway    rpc.JobMasterGateway // nil until connected
	registered bool                 // RegisterTaskExecutor succeeded with token
	pending    []rpc.SlotOffer
	offering   bool // an OfferSlots round is in flight
	answering  bool // a heartbeat to the JobMaster is in flight
	// answered is closed once the heartbeat in flight (answering) has reached the JobMaster;
	// SubmitTask answers only after that (see heldBackBy).
	answered chan struct{}
}

// New validates cfg and starts the TaskExecutor's loop. Call Start to register it.
func New(cfg Config) (*TaskExecutor, error) {
	if cfg.RPC == nil {
		return nil, errors.New("taskexecutor: Config.RPC is required")
	}
	if cfg.ResourceManagerAddress != "" && cfg.ResourceManagerRetrieval != nil {
		return nil, errors.New("taskexecutor: set Config.ResourceManagerAddress or Config.ResourceManagerRetrieval, not both")
	}
	if cfg.NumSlots < 0 {
		return nil, fmt.Errorf("taskexecutor: Config.NumSlots is %d; want at least 1", cfg.NumSlots)
	}
	if cfg.NumSlots == 0 {
		cfg.NumSlots = 1
	}
	if cfg.SlotProfile.IsUnknown() {
		cfg.SlotProfile = DefaultSlotProfile
	}
	if err := validProfile(cfg.SlotProfile); err != nil {
		return nil, fmt.Errorf("taskexecutor: Config.SlotProfile: %w", err)
	}
	if cfg.ResourceID == "" {
		cfg.ResourceID = jobgraph.NewResourceID("taskexecutor")
	}
	if cfg.Address == "" {
		cfg.Address = rpc.AddressOf(cfg.RPC, string(cfg.ResourceID))
	}
	if cfg.Registry == nil {
		cfg.Registry = NewRegistry()
	}
	if cfg.Shuffle == nil {
		cfg.Shuffle = NewShuffle(ShuffleConfig{})
	}

	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if _, _, err := heartbeat.Resolve(cfg.HeartbeatInterval, cfg.HeartbeatTimeout); err != nil {
		return nil, fmt.Errorf("taskexecutor: %w", err)
	}
	if _, err := heartbeat.ResolveRPCFailureThreshold(cfg.HeartbeatRPCFailureThreshold); err != nil {
		return nil, fmt.Errorf("taskexecutor: %w", err)
	}
	cancelInterval, cancelTimeout, err := resolveCancellation(cfg.TaskCancellationInterval, cfg.TaskCancellationTimeout)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	if s, ok := cfg.Shuffle.(*Shuffle); ok {
		s.attach(cfg.ResourceID) // its readers can tell a producer of another process (checkProducers)
	}
	te := &TaskExecutor{
		id:          cfg.ResourceID,
		address:     cfg.Address,
		profile:     cfg.SlotProfile,
		registry:    cfg.Registry,
		rpc:         cfg.RPC,
		rmAddr:      cfg.ResourceManagerAddress,
		rmRetrieval: cfg.ResourceManagerRetrieval,
		shuffle:     cfg.Shuffle,
		metrics:     cfg.Metrics,
		log:         cfg.Logger.With("taskExecutor", string(cfg.ResourceID)),
		loop:        mainloop.NewWithClosedError("taskexecutor "+string(cfg.ResourceID), closedError(cfg.ResourceID)),
		ctx:         ctx,
		cancel:      cancel,
		slots:       make([]slot, cfg.NumSlots),
		allocations: make(map[jobgraph.AllocationID]int),
		jobs:        make(map[jobgraph.JobID]*jobConnection),
		tasks:       make(map[jobgraph.ExecutionAttemptID]*task),
		reporting:   make(map[jobgraph.ExecutionAttemptID]jobgraph.JobID),

		cancelInterval: cancelInterval,
		cancelTimeout:  cancelTimeout,
		onFatal:        cfg.FatalErrorHandler,
	}
	te.loop.SetPanicHandler(te.onPanic)
	// Receivers only: the JobMasters and the ResourceManager send the requests.
	te.jmHeartbeats, err = heartbeat.New(heartbeat.Config[jobgraph.JobID]{
		Timers: te.loop, Interval: cfg.HeartbeatInterval, Timeout: cfg.HeartbeatTimeout,
		RPCFailureThreshold: cfg.HeartbeatRPCFailureThreshold,
		OnTimeout:           te.jobMasterHeartbeatTimedOut,
		OnUnreachable:       te.jobMasterUnreachable,
	})
	if err == nil {
		te.rmHeartbeats, err = heartbeat.New(heartbeat.Config[string]{
			Timers: te.loop, Interval: cfg.HeartbeatInterval, Timeout: cfg.HeartbeatTimeout,
			RPCFailureThreshold: cfg.HeartbeatRPCFailureThreshold,
			OnTimeout:           te.resourceManagerHeartbeatTimedOut,
			OnUnreachable:       te.resourceManagerUnreachable,
		})
	}
	if err != nil {
		te.loop.Close()
		cancel(errShutdown)
		return nil, fmt.Errorf("taskexecutor: %w", err)
	}
	if te.rmRetrieval != nil {
		_, inProcess := te.rpc.(*rpc.LocalService)
		te.rmConn = registration.New(registration.Config[rpc.ResourceManagerGateway]{
			Loop:       te.loop,
			Context:    te.ctx,
			Unbounded:  inProcess, // no timer per attempt over the LocalService
			Go:         te.spawn,
			Attempt:    te.registrationAttempt,
			Registered: te.registeredWithResourceManager,
			Failed: func(err error, retryIn time.Duration) {
				te.log.Warn("registering with the ResourceManager failed", "address", te.rmAddr, "retryIn", retryIn, "error", err)
			},
		})
	}
	return te, nil
}

func validProfile(p jobgraph.ResourceProfile) error {
	if p.CPUCores < 0 || p.TaskHeapMemory < 0 || p.TaskOffHeapMemory < 0 || p.ManagedMemory < 0 || p.NetworkMemory < 0 {
		return fmt.Errorf("negative resource in %v", p)
	}
	return nil
}

// ResourceID returns the TaskExecutor's ResourceID.
func (te *TaskExecutor) ResourceID() jobgraph.ResourceID { return te.id }

// Address returns where the TaskExecutor registers in RPC.
func (te *TaskExecutor) Address() string { return te.address }

// Shuffle returns the shuffle the TaskExecutor's tasks read and write.
func (te *TaskExecutor) Shuffle() ShuffleEnvironment { return te.shuffle }

// Start registers the TaskExecutor under its address, then with the ResourceManager, reporting
// all its slots free. It may be called once.
func (te *TaskExecutor) Start(ctx context.Context) error {
	if err := te.alive(); err != nil {
		return err
	}
	if !te.started.CompareAndSwap(false, true) {
		return fmt.Errorf("TaskExecutor %s: already started", te.id)
	}
	if err := te.alive(); err != nil {
		return err
	}
	if err := te.rpc.Register(te.address, te); err != nil {
		return fmt.Errorf("TaskExecutor %s: %w", te.id, err)
	}
	te.registered.Store(true)
	if te.rmRetrieval != nil {
		// Off the loop: starting may do I/O, and may call the listener at once.
		if err := te.rmRetrieval.Start(rmLeaderListener{te}); err != nil {
			return fmt.Errorf("TaskExecutor %s: starting the ResourceManager's leader retrieval: %w", te.id, err)
		}
		te.retrieving.Store(true)
		return nil
	}
	if te.rmAddr == "" {
		return nil
	}
	rm, err := rpc.Connect[rpc.ResourceManagerGateway](ctx, te.rpc, te.rmAddr)
	if err != nil {
		return fmt.Errorf("TaskExecutor %s: connecting to the ResourceManager: %w", te.id, err)
	}
	reg, err := mainloop.Submit(ctx, te.loop, func() (rpc.TaskExecutorRegistration, error) {
		te.rm = rm
		return te.registration(), nil
	})
	if err != nil {
		return err
	}
	rmID, err := rm.RegisterTaskExecutor(ctx, reg)
	if err != nil {
		return fmt.Errorf("TaskExecutor %s: registering with the ResourceManager: %w", te.id, err)
	}
	return te.call(ctx, func() error {
		te.rmID = rmID
		te.rmHeartbeats.Monitor(te.rmAddr)
		te.wakeRegistrationWaiters()
		return nil
	})
}

// rmLeaderListener hears the ResourceManager's leader retrieval and posts what it learns to the
// loop. Flink: TaskExecutor.ResourceManagerLeaderListener.
type rmLeaderListener struct{ te *TaskExecutor }

func (l rmLeaderListener) NotifyLeaderAddress(address string, session ha.SessionID) {
	l.te.loop.Execute(func() { l.te.newResourceManagerLeader(address, session) })
}

// HandleError makes the TaskExecutor fail fatally (Flink: the TaskExecutor's
// ResourceManagerLeaderListener.handleError calls onFatalError): it could no longer find a
// ResourceManager.
func (l rmLeaderListener) HandleError(err error) {
	te := l.te
	cause := fmt.Errorf("TaskExecutor %s: the ResourceManager's leader retrieval failed: %w", te.id, err)
	te.log.Error("the ResourceManager's leader retrieval failed; the TaskExecutor fails fatally", "error", err)
	te.loop.Execute(func() { te.failWith(cause) }) // nothing when closed already
}

// newResourceManagerLeader drops the connection to the earlier ResourceManager leader and
// registers with the new one (none when address is empty). Flink:
// TaskExecutor.notifyOfNewResourceManagerLeader. On the loop.
func (te *TaskExecutor) newResourceManagerLeader(address string, session ha.SessionID) {
	if te.killed.Load() {
		return
	}
	oldAddress := te.rmAddr
	if !te.rmConn.NewLeader(address, session) {
		return
	}
	te.log.Info("new ResourceManager leader", "address", address, "resourceManagerID", jobgraph.ResourceManagerID(session))
	te.rmHeartbeats.Unmonitor(oldAddress)
	te.rm, te.rmID, te.rmAddr = nil, jobgraph.ResourceManagerID{}, address
}

// registrationAttempt is one registration with the ResourceManager leader at address: the
// registration is built now, on the loop, and sent by the returned call, off the loop.
func (te *TaskExecutor) registrationAttempt(address string) func(context.Context) (rpc.ResourceManagerGateway, jobgraph.ResourceManagerID, error) {
	reg, svc := te.registration(), te.rpc
	return func(ctx context.Context) (rpc.ResourceManagerGateway, jobgraph.ResourceManagerID, error) {
		if te.killed.Load() {
			return nil, jobgraph.ResourceManagerID{}, ErrKilled
		}
		gw, err := rpc.Connect[rpc.ResourceManagerGateway](ctx, svc, address)
		if err != nil {
			return nil, jobgraph.ResourceManagerID{}, fmt.Errorf("connecting to the ResourceManager at %q: %w", address, err)
		}
		id, err := gw.RegisterTaskExecutor(ctx, reg)
		return gw, id, err
	}
}

// registeredWithResourceManager makes the current leader the TaskExecutor's ResourceManager:
// it is monitored for heartbeats and slot notices go to it. Its registration carried the full
// slot report, built on the loop when the attempt started. Where we differ: Flink registers
// without slots and sends the slot report next (establishResourceManagerConnection); ours is the
// registration's, because a second report built at registration time could reach the
// ResourceManager after it allocated a slot here and free that slot there again. On the loop.
func (te *TaskExecutor) registeredWithResourceManager(gw rpc.ResourceManagerGateway, id jobgraph.ResourceManagerID) {
	if te.killed.Load() {
		return
	}
	te.rm, te.rmID = gw, id
	te.rmHeartbeats.Monitor(te.rmAddr)
	te.log.Info("registered with the ResourceManager", "address", te.rmAddr, "resourceManagerID", id)
	// A slot freed while the registration was under way may be listed as allocated in its
	// report: without this notice the new leader would hold it for the old allocation until
	// the next heartbeat's slot report (heartbeat.interval), and a job waiting for it would
	// wait that long. The notice names the allocation, so the ResourceManager ignores it for a
	// slot it has allocated anew meanwhile (and for one the report listed free).
	for _, f := range te.freedUnannounced {
		te.announceFreeSlot(gw, id, f.n, f.allocation)
	}
	te.freedUnannounced = nil
	te.wakeRegistrationWaiters()
}

// wakeRegistrationWaiters releases the WaitRegistered calls waiting. On the loop.
func (te *TaskExecutor) wakeRegistrationWaiters() {
	for _, w := range te.rmWaiters {
		close(w)
	}
	te.rmWaiters = nil
}

// WaitRegistered returns the ResourceManagerID of the ResourceManager the TaskExecutor is
// registered with, once it is (at once if it is now): with Config.ResourceManagerRetrieval,
// the current leader's. Errors: ctx's, and ErrClosed or ErrKilled. With neither a
// ResourceManagerAddress nor a retrieval it waits until ctx ends. Safe on any goroutine.
func (te *TaskExecutor) WaitRegistered(ctx context.Context) (jobgraph.ResourceManagerID, error) {
	for {
		type state struct {
			id   jobgraph.ResourceManagerID
			wait chan struct{}
		}
		st, err := mainloop.Submit(ctx, te.loop, func() (state, error) {
			if err := te.alive(); err != nil {
				return state{}, err
			}
			if te.rm != nil && !te.rmID.IsZero() {
				return state{id: te.rmID}, nil
			}
			w := make(chan struct{})
			te.rmWaiters = append(te.rmWaiters, w)
			return state{wait: w}, nil
		})
		if err != nil || st.wait == nil {
			return st.id, err
		}
		select {
		case <-st.wait:
		case <-ctx.Done():
			return jobgraph.ResourceManagerID{}, ctx.Err()
		case <-te.loop.Done():
			return jobgraph.ResourceManagerID{}, te.alive()
		}
	}
}

// registration is what the TaskExecutor registers with the ResourceManager. On the loop.
func (te *TaskExecutor) registration() rpc.TaskExecutorRegistration {
	total := jobgraph.ResourceProfile{}
	for range te.slots {
		total = total.Merge(te.profile)
	}
	return rpc.TaskExecutorRegistration{
		ResourceID:          te.id,
		Address:             te.address,
		TotalResource:       total,
		DefaultSlotResource: te.profile,
		SlotReport:          te.slotReport(),
	}
}

// Close cancels the running tasks (without reporting them), waits for their goroutines and every
// other goroutine the TaskExecutor started, unregisters it, stops its loop and drops the
// partitions it produced from the shuffle. Closing twice is harmless. It returns nil: the error
// is io.Closer's, as on every endpoint (the JobMaster's Close returns its final archive instead).
// Afterwards every method that returns an error returns ErrClosed.
func (te *TaskExecutor) Close() error {
	te.closing.Store(true)
	te.closeOnce.Do(func() {
		if te.retrieving.Load() {
			if err := te.rmRetrieval.Stop(); err != nil {
				te.log.Warn("stopping the ResourceManager's leader retrieval failed", "error", err)
			}
		}
		if te.registered.Load() {
			te.rpc.Unregister(te.address)
		}
		te.cancel(errShutdown)
		te.loop.Close()
		te.wg.Wait()
		te.workers.Close()
		te.shuffle.ReleaseAllOf(te.id)
	})
	return nil
}

// Kill makes the TaskExecutor behave as if its process died: from now on every gateway method
// fails with ErrKilled, running tasks are canceled without reporting anything, no further calls
// go to the ResourceManager or JobMasters, and the partitions it produced are lost. Close it
// afterwards to wait for its goroutines.
func (te *TaskExecutor) Kill() { te.die(errKilledStop) }

// Killed reports whether the TaskExecutor is dead: killed (Kill) or failed fatally (FatalError
// is not nil), so that it no longer answers; a closed one that was neither is not. Safe anywhere.
// Flink has no such accessor: there a dead TaskManager's process is gone.
func (te *TaskExecutor) Killed() bool { return te.killed.Load() || te.fatal.Load() != nil }

// Closed reports whether Close was called: the TaskExecutor takes no more calls (they fail with
// ErrClosed) and is going away, or gone. Safe anywhere.
func (te *TaskExecutor) Closed() bool { return te.closing.Load() }

// die is Kill, with why as the cause the tasks are stopped with. It reports false when the
// TaskExecutor was dead already. Safe anywhere.
func (te *TaskExecutor) die(why *stopReason) bool {
	if !te.killed.CompareAndSwap(false, true) {
		return false
	}
	te.cancel(why)
	te.shuffle.ReleaseAllOf(te.id)
	te.loop.Execute(func() {
		te.jmHeartbeats.Stop()
		te.rmHeartbeats.Stop()
		if te.rmConn != nil {
			te.rmConn.Close()
		}
	})
	return true
}

// CrashTask makes the running task of attempt fail with err, as if its task code had returned it.
// It fails with ErrTaskNotFound when no such task runs.
func (te *TaskExecutor) CrashTask(attempt jobgraph.ExecutionAttemptID, err error) error {
	if err == nil {
		err = errors.New("task crashed")
	}
	return te.call(context.Background(), func() error {
		t := te.tasks[attempt]
		if t == nil {
			return fmt.Errorf("TaskExecutor %s: cannot crash execution %s: %w", te.id, attempt, ErrTaskNotFound)
		}
		te.stopTask(t, &stopReason{kind: stopFail, err: err})
		return nil
	})
}

// SlotReport returns the state of every slot.
func (te *TaskExecutor) SlotReport(ctx context.Context) (rpc.SlotReport, error) {
	if err := te.alive(); err != nil {
		return rpc.SlotReport{}, err
	}
	r, err := mainloop.Submit(ctx, te.loop, func() (rpc.SlotReport, error) { return te.slotReport(), nil })
	return r, err
}

// slotReport runs on the loop.
func (te *TaskExecutor) slotReport() rpc.SlotReport {
	r := rpc.SlotReport{Slots: make([]rpc.SlotStatus, len(te.slots))}
	for i, s := range te.slots {
		st := rpc.SlotStatus{SlotID: rpc.SlotID{ResourceID: te.id, SlotNumber: i}, ResourceProfile: te.profile}
		if s.state != slotFree {
			st.AllocationID, st.JobID = s.allocation, s.job
		}
		r.Slots[i] = st
	}
	return r
}

func (te *TaskExecutor) alive() error {
	if te.killed.Load() {
		if err := te.fatal.Load(); err != nil {
			return rpc.Unreachable(fmt.Errorf("TaskExecutor %s: %w: %w", te.id, ErrFailed, *err))
		}
		return rpc.Unreachable(fmt.Errorf("TaskExecutor %s: %w", te.id, ErrKilled))
	}
	select {
	case <-te.loop.Done():
		return closedError(te.id)
	default:
		return nil
	}
}

// closedError is what the methods of closed TaskExecutor id return: ErrClosed naming it, as an
// rpc.UnreachableError (see ErrClosed).
func closedError(id jobgraph.ResourceID) error {
	return rpc.Unreachable(fmt.Errorf("TaskExecutor %s: %w", id, ErrClosed))
}

// call runs fn on the loop unless the TaskExecutor is killed or closed.
func (te *TaskExecutor) call(ctx context.Context, fn func() error) error {
	if err := te.alive(); err != nil {
		return err
	}
	// A closed loop answers with the TaskExecutor's closed error (see New).
	return te.loop.Call(ctx, func() error {
		if err := te.alive(); err != nil {
			return err
		}
		return fn()
	})
}

// notify is call without waiting: fn's error (or why the TaskExecutor refused the call) goes to
// done, if not nil, on the loop, or at once when the TaskExecutor takes no call (killed, closed).
func (te *TaskExecutor) notify(fn func() error, done func(err error)) {
	if done == nil {
		done = func(error) {}
	}
	if err := te.alive(); err != nil {
		done(err)
		return
	}
	if !te.loop.Execute(func() {
		if err := te.alive(); err != nil {
			done(err)
			return
		}
		done(fn())
	}) {
		err := te.loop.Err() // the panic the loop died of, as call returns it
		if err == nil {
			err = te.alive() // killed meanwhile
		}
		if err == nil {
			// Closed (the loop's own closed error, see New): alive does not say so until the
			// loop's goroutine has run what was queued before.
			err = closedError(te.id)
		}
		done(err)
	}
}

// spawn runs fn on a goroutine the TaskExecutor owns (an idle one of workers, or a new one).
// Only on the loop.
func (te *TaskExecutor) spawn(fn func()) {
	te.wg.Add(1)
	te.workers.Go(func() {
		defer te.wg.Done()
		fn()
	})
}

// RequestSlot allocates slot for job and offers it to the job's JobMaster. Asking again for the
// same slot and allocation is a no-op; a slot allocated to another allocation fails with
// ErrSlotOccupied. A request whose rm is not the ResourceManagerID the TaskExecutor registered
// with fails with an *rpc.FencingError (rpc.ErrFencingTokenMismatch) and allocates nothing; one
// arriving before the registration's answer adopts rm. With Config.ResourceManagerRetrieval the
// request is fenced by the current leader's session instead (registered yet or not): rm must be
// the session the retrieval last named, and while it names no leader every request fails so; a
// retrieval naming ha.NoSession (a fixed address, ha.StandaloneLeaderRetrieval) fences as a
// fixed ResourceManagerAddress does. The offer happens off the loop: a slot the JobMaster
// declines (or that cannot be offered) is freed again and the ResourceManager told.
func (te *TaskExecutor) RequestSlot(ctx context.Context, slotID rpc.SlotID, job jobgraph.JobID, allocation jobgraph.AllocationID, profile jobgraph.ResourceProfile, jobMasterAddress string, jobMaster jobgraph.JobMasterID, rm jobgraph.ResourceManagerID) error {
	return te.call(ctx, func() error { return te.requestSlot(slotID, job, allocation, profile, jobMasterAddress, jobMaster, rm) })
}

// NotifyRequestSlot implements rpc.TaskExecutorNotifier: RequestSlot without waiting.
func (te *TaskExecutor) NotifyRequestSlot(slotID rpc.SlotID, job jobgraph.JobID, allocation jobgraph.AllocationID, profile jobgraph.ResourceProfile, jobMasterAddress string, jobMaster jobgraph.JobMasterID, rm jobgraph.ResourceManagerID, done func(err error)) {
	te.notify(func() error { return te.requestSlot(slotID, job, allocation, profile, jobMasterAddress, jobMaster, rm) }, done)
}

// requestSlot is RequestSlot on the loop.
func (te *TaskExecutor) requestSlot(slotID rpc.SlotID, job jobgraph.JobID, allocation jobgraph.AllocationID, profile jobgraph.ResourceProfile, jobMasterAddress string, jobMaster jobgraph.JobMasterID, rm jobgraph.ResourceManagerID) error {
	if slotID.ResourceID != te.id {
		return fmt.Errorf("TaskExecutor %s: asked for slot %d of TaskExecutor %s: %w", te.id, slotID.SlotNumber, slotID.ResourceID, ErrSlotNotFound)
	}
	if err := te.fenceResourceManager(rm); err != nil {
		return err
	}
	n := slotID.SlotNumber
	if n < 0 || n >= len(te.slots) {
		return fmt.Errorf("TaskExecutor %s: slot %d out of range [0, %d): %w", te.id, n, len(te.slots), ErrSlotNotFound)
	}
	s := &te.slots[n]
	if s.state != slotFree {
		if s.allocation == allocation && s.job == job && s.state != slotReleasing {
			return nil
		}
		return fmt.Errorf("TaskExecutor %s: slot %d is %s for allocation %s of job %s, cannot allocate it to %s: %w",
			te.id, n, s.state, s.allocation, s.job, allocation, ErrSlotOccupied)
	}
	if other, dup := te.allocations[allocation]; dup {
		return fmt.Errorf("TaskExecutor %s: allocation %s already has slot %d, cannot also take slot %d: %w", te.id, allocation, other, n, ErrSlotOccupied)
	}
	if !te.profile.IsMatching(profile) {
		return fmt.Errorf("TaskExecutor %s: slot %d offers %v, less than the %v asked for", te.id, n, te.profile, profile)
	}
	*s = slot{state: slotAllocated, allocation: allocation, job: job, profile: profile,
		tasks: make(map[jobgraph.ExecutionAttemptID]*task)}
	te.allocations[allocation] = n
	if te.rmID.IsZero() && te.rmConn == nil {
		// The request raced ahead of RegisterTaskExecutor's answer: its token is the one
		// registration returns.
		te.rmID = rm
	}
	jc := te.jobs[job]
	if jc == nil {
		jc = &jobConnection{job: job}
		te.jobs[job] = jc
	}
	if jc.address != jobMasterAddress || jc.token != jobMaster {
		// A new JobMaster leader (or the first): connect and register afresh.
		jc.address, jc.token, jc.gateway, jc.registered = jobMasterAddress, jobMaster, nil, false
		te.jmHeartbeats.Unmonitor(job)
	}
	jc.pending = append(jc.pending, rpc.SlotOffer{AllocationID: allocation, SlotIndex: n, ResourceProfile: profile})
	te.offerSlots(jc)
	return nil
}

// fenceResourceManager checks the ResourceManagerID a RequestSlot carries; see RequestSlot. On
// the loop.
func (te *TaskExecutor) fenceResourceManager(rm jobgraph.ResourceManagerID) error {
	// At a fixed address (and from a retrieval naming ha.NoSession) the fence is the ID the
	// registration was answered with, and a request before that answer adopts rm.
	expected, strict := te.rmID, !te.rmID.IsZero()
	if te.rmConn != nil {
		address, session := te.rmConn.Leader()
		if address == "" {
			return &rpc.FencingError{Endpoint: "TaskExecutor " + string(te.id) + " (ResourceManagerID)", Expected: "none (no ResourceManager leader known)", Got: rm.String()}
		}
		if session != ha.NoSession {
			expected, strict = jobgraph.ResourceManagerID(session), true
		}
	}
	if strict && rm != expected {
		return &rpc.FencingError{Endpoint: "TaskExecutor " + string(te.id) + " (ResourceManagerID)", Expected: expected.String(), Got: rm.String()}
	}
	return nil
}

// offerSlots sends jc's pending offers in one OfferSlots round, unless one is in flight (its
// completion sends the rest). On the loop.
func (te *TaskExecutor) offerSlots(jc *jobConnection) {
	if jc.offering || te.killed.Load() {
		return
	}
	offers := jc.pending[:0:0]
	for _, o := range jc.pending {
		if s := te.slots[o.SlotIndex]; s.state == slotAllocated && s.allocation == o.AllocationID {
			offers = append(offers, o)
		}
	}
	jc.pending = nil
	if len(offers) == 0 {
		return
	}
	jc.offering = true
	address, token, gw, registered := jc.address, jc.token, jc.gateway, jc.registered
	te.spawn(func() {
		accepted, gw, err := te.sendOffers(address, token, gw, registered, offers)
		te.loop.Execute(func() { te.offered(jc, token, gw, offers, accepted, err) })
	})
}

// sendOffers runs off the loop.
func (te *TaskExecutor) sendOffers(address string, token jobgraph.JobMasterID, gw rpc.JobMasterGateway, registered bool, offers []rpc.SlotOffer) ([]rpc.SlotOffer, rpc.JobMasterGateway, error) {
	var err error
	if gw == nil {
		gw, err = rpc.Connect[rpc.JobMasterGateway](te.ctx, te.rpc, address)
		if err != nil {
			return nil, nil, fmt.Errorf("connecting to the JobMaster at %q: %w", address, err)
		}
	}
	if !registered {
		err = gw.RegisterTaskExecutor(te.ctx, token, rpc.TaskExecutorRegistration{
			ResourceID: te.id, Address: te.address, DefaultSlotResource: te.profile,
		})
		if err != nil {
			return nil, gw, fmt.Errorf("registering with the JobMaster at %q: %w", address, err)
		}
	}
	accepted, err := gw.OfferSlots(te.ctx, token, te.id, offers)
	if err != nil {
		return nil, gw, fmt.Errorf("offering slots to the JobMaster at %q: %w", address, err)
	}
	return accepted, gw, nil
}

// offered applies the JobMaster's answer to an offer round. On the loop.
func (te *TaskExecutor) offered(jc *jobConnection, token jobgraph.JobMasterID, gw rpc.JobMasterGateway, offers, accepted []rpc.SlotOffer, err error) {
	jc.offering = false
	if te.killed.Load() {
		return
	}
	current := te.jobs[jc.job] == jc
	if current && jc.token != token {
		// The job got a new JobMaster meanwhile: offer these slots to it instead.
		jc.pending = append(jc.pending, offers...)
		te.offerSlots(jc)
		return
	}
	if current && err == nil {
		jc.gateway, jc.registered = gw, true
		te.jmHeartbeats.Monitor(jc.job) // it answered: that counts as a heartbeat
	}
	if err != nil {
		te.log.Warn("slot offer failed; freeing the slots", "job", jc.job.String(), "error", err)
	}
	ok := make(map[jobgraph.AllocationID]bool, len(accepted))
	for _, o := range accepted {
		ok[o.AllocationID] = true
	}
	for _, o := range offers {
		s := &te.slots[o.SlotIndex]
		if s.allocation != o.AllocationID || s.state != slotAllocated {
			continue // freed meanwhile
		}
		if err == nil && ok[o.AllocationID] {
			s.state = slotActive
			continue
		}
		te.freeSlot(o.SlotIndex, nil)
	}
	if te.jobs[jc.job] == jc {
		te.offerSlots(jc)
		if !jc.offering && !te.hasSlotsOf(jc.job) {
			te.forgetJob(jc.job)
		}
	}
}

// freeSlot frees slot n, first stopping its tasks with why (canceled when nil); with tasks still
// running the slot is released once they have returned. The ResourceManager is told. On the loop.
func (te *TaskExecutor) freeSlot(n int, why *stopReason) {
	s := &te.slots[n]
	if s.state == slotFree {
		return
	}
	if len(s.tasks) > 0 {
		if why == nil {
			why = &stopReason{kind: stopCancel}
		}
		for _, t := range s.tasks {
			te.stopTask(t, why)
		}
		s.state = slotReleasing
		return
	}
	allocation, job := s.allocation, s.job
	*s = slot{}
	delete(te.allocations, allocation)
	if jc := te.jobs[job]; jc != nil && !jc.offering && !te.hasSlotsOf(job) {
		te.forgetJob(job)
	}
	if te.killed.Load() {
		return
	}
	if te.rm == nil {
		te.freedUnannounced = append(te.freedUnannounced, freedSlot{n, allocation})
		return
	}
	te.announceFreeSlot(te.rm, te.rmID, n, allocation)
}

// freedSlot is a slot freed while no ResourceManager was registered with, and the allocation
// that held it.
type freedSlot struct {
	n          int
	allocation jobgraph.AllocationID
}

// announceFreeSlot tells rm, off the loop, that slot n is no longer held by allocation.
func (te *TaskExecutor) announceFreeSlot(rm rpc.ResourceManagerGateway, rmID jobgraph.ResourceManagerID, n int, allocation jobgraph.AllocationID) {
	slotID := rpc.SlotID{ResourceID: te.id, SlotNumber: n}
	te.spawn(func() {
		if err := rm.NotifySlotAvailable(te.ctx, rmID, te.id, slotID, allocation); err != nil && te.ctx.Err() == nil {
			te.log.Warn("telling the ResourceManager about a free slot failed", "slot", n, "error", err)
		}
	})
}

// forgetJob drops the job's JobMaster connection and stops monitoring that JobMaster. On the loop.
func (te *TaskExecutor) forgetJob(job jobgraph.JobID) {
	delete(te.jobs, job)
	te.jmHeartbeats.Unmonitor(job)
}

func (te *TaskExecutor) hasSlotsOf(job jobgraph.JobID) bool {
	for _, s := range te.slots {
		if s.state != slotFree && s.job == job {
			return true
		}
	}
	return false
}

// SubmitTask starts the execution tdd describes in the slot of tdd.AllocationID. It fails with
// ErrSlotNotFound when no slot is allocated to tdd's job under that allocation, and with an
// rpc.ErrFencingTokenMismatch error when token is not the JobMasterID the slot was offered to.
// Task code missing from the Registry is not an error here: the task is reported FAILED.
//
// It answers only once a heartbeat to the job's JobMaster that was in flight when the task
// started has been delivered: that heartbeat's ExecutionDeploymentReport, taken before the task
// was there, must not reach the JobMaster after it counts the task as deployed (it would fail
// the task as a lost deployment). Flink gets this order from its RPC; see
// rpc.ExecutionDeploymentReport. ctx bounds that wait too (its error is then returned, though
// the task started).
func (te *TaskExecutor) SubmitTask(ctx context.Context, token jobgraph.JobMasterID, tdd rpc.TaskDeploymentDescriptor) error {
	var held <-chan struct{}
	err := te.call(ctx, func() error {
		if err := te.submit(token, tdd); err != nil {
			return err
		}
		held = te.heldBackBy(tdd.JobID)
		return nil
	})
	if err != nil {
		return err
	}
	return waitHeldBack(ctx, held)
}

// heldBackBy returns the channel closed once the heartbeat to the job's JobMaster now in flight
// has been delivered, or nil when none is. On the loop.
func (te *TaskExecutor) heldBackBy(job jobgraph.JobID) <-chan struct{} {
	if jc := te.jobs[job]; jc != nil && jc.answering {
		return jc.answered
	}
	return nil
}

// waitHeldBack waits until held is closed (nil: at once) or ctx ends.
func waitHeldBack(ctx context.Context, held <-chan struct{}) error {
	if held == nil {
		return nil
	}
	select {
	case <-held:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SubmitTasks implements rpc.TaskExecutorGateway: each descriptor in order as SubmitTask, on one
// pass of the main loop; errs[i] is the error SubmitTask(tdds[i]) would have returned (errs is nil
// when all started). err is the TaskExecutor's closed error or ctx's, and then none started —
// or ctx ended while the answer waited for a heartbeat in flight, as SubmitTask's does.
func (te *TaskExecutor) SubmitTasks(ctx context.Context, token jobgraph.JobMasterID, tdds []rpc.TaskDeploymentDescriptor) ([]error, error) {
	var errs []error
	var held []<-chan struct{}
	err := te.call(ctx, func() error {
		for i, tdd := range tdds {
			if err := te.submit(token, tdd); err != nil {
				if errs == nil {
					errs = make([]error, len(tdds))
				}
				errs[i] = err
			} else if h := te.heldBackBy(tdd.JobID); h != nil && !slices.Contains(held, h) {
				held = append(held, h)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, h := range held {
		if err := waitHeldBack(ctx, h); err != nil {
			return nil, err
		}
	}
	return errs, nil
}

// submit starts the execution of tdd; see SubmitTask. On the loop.
func (te *TaskExecutor) submit(token jobgraph.JobMasterID, tdd rpc.TaskDeploymentDescriptor) error {
	n, ok := te.allocations[tdd.AllocationID]
	if !ok {
		return fmt.Errorf("TaskExecutor %s: cannot deploy %s: no slot allocated for allocation %s: %w",
			te.id, tdd.TaskName, tdd.AllocationID, ErrSlotNotFound)
	}
	s := &te.slots[n]
	if s.job != tdd.JobID {
		return fmt.Errorf("TaskExecutor %s: cannot deploy %s: slot %d (allocation %s) belongs to job %s, not %s: %w",
			te.id, tdd.TaskName, n, tdd.AllocationID, s.job, tdd.JobID, ErrSlotNotFound)
	}
	if s.state == slotReleasing {
		return fmt.Errorf("TaskExecutor %s: cannot deploy %s: slot %d (allocation %s) is being freed: %w",
			te.id, tdd.TaskName, n, tdd.AllocationID, ErrSlotNotFound)
	}
	jc := te.jobs[tdd.JobID]
	if jc == nil || jc.token != token {
		expected := "none"
		if jc != nil {
			expected = jc.token.String()
		}
		return &rpc.FencingError{Endpoint: "TaskExecutor " + string(te.id), Expected: expected, Got: token.String()}
	}
	if _, dup := te.tasks[tdd.ExecutionAttemptID]; dup {
		return fmt.Errorf("TaskExecutor %s: execution %s already runs here", te.id, tdd.ExecutionAttemptID)
	}
	t := te.newTask(tdd, jc, n)
	s.state = slotActive
	s.tasks[tdd.ExecutionAttemptID] = t
	te.tasks[tdd.ExecutionAttemptID] = t
	te.spawnTask(t)
	return nil
}

// taskDone forgets a task whose goroutine has reported its final state. On the loop.
func (te *TaskExecutor) taskDone(t *task) {
	if te.tasks[t.attempt] == t {
		delete(te.tasks, t.attempt)
	}
	s := &te.slots[t.slot]
	if s.allocation != t.allocation || s.tasks[t.attempt] != t {
		return
	}
	delete(s.tasks, t.attempt)
	if s.state == slotReleasing && len(s.tasks) == 0 {
		te.freeSlot(t.slot, nil)
	}
}

// CancelTask cancels a running execution; it is reported CANCELED once its task code has
// returned. It fails with ErrTaskNotFound when no such execution runs here (Flink answers the
// same way), which a JobMaster may ignore for an execution it already knows is terminal.
func (te *TaskExecutor) CancelTask(ctx context.Context, attempt jobgraph.ExecutionAttemptID) error {
	return te.call(ctx, func() error {
		t := te.tasks[attempt]
		if t == nil {
			return fmt.Errorf("TaskExecutor %s: cannot cancel execution %s: %w", te.id, attempt, ErrTaskNotFound)
		}
		te.stopTask(t, &stopReason{kind: stopCancel})
		return nil
	})
}

// FreeSlot frees the slot of allocation: its tasks are canceled (and reported CANCELED), and
// once they have returned the slot is free and the ResourceManager told. An unknown allocation
// is not an error (the slot is free already).
func (te *TaskExecutor) FreeSlot(ctx context.Context, allocation jobgraph.AllocationID, cause *jobgraph.ErrorInfo) error {
	return te.call(ctx, func() error { return te.freeAllocation(allocation, cause) })
}

// NotifyFreeSlot implements rpc.TaskExecutorNotifier: FreeSlot without waiting.
func (te *TaskExecutor) NotifyFreeSlot(allocation jobgraph.AllocationID, cause *jobgraph.ErrorInfo, done func(err error)) {
	te.notify(func() error { return te.freeAllocation(allocation, cause) }, done)
}

// freeAllocation is FreeSlot on the loop.
func (te *TaskExecutor) freeAllocation(allocation jobgraph.AllocationID, cause *jobgraph.ErrorInfo) error {
	n, ok := te.allocations[allocation]
	if !ok {
		return nil
	}
	if te.log.Enabled(context.Background(), slog.LevelDebug) { // no arguments made unless logged
		te.log.Debug("freeing slot", "slot", n, "allocation", allocation.String(), "cause", cause.Err())
	}
	te.freeSlot(n, nil)
	return nil
}

// ReleasePartitions drops the job's partitions named from the shuffle.
func (te *TaskExecutor) ReleasePartitions(ctx context.Context, job jobgraph.JobID, partitions []rpc.ResultPartitionID) error {
	if err := te.alive(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	te.shuffle.ReleasePartitionsLocally(partitions...)
	return nil
}

// DisconnectJobMaster drops the job's JobMaster: the job's tasks fail with cause (reported
// FAILED, as far as the JobMaster still listens), its slots are freed, and the partitions the job
// produced here are released, except finished BLOCKING_PERSISTENT ones. Fenced: when the job's
// slots were requested for another JobMasterID than token (a newer leader session), it fails with
// an *rpc.FencingError (rpc.ErrFencingTokenMismatch) and changes nothing.
func (te *TaskExecutor) DisconnectJobMaster(ctx context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo) error {
	return te.call(ctx, func() error { return te.fencedDisconnectJobMaster(token, job, cause) })
}

// NotifyDisconnectJobMaster implements rpc.TaskExecutorNotifier: DisconnectJobMaster without
// waiting.
func (te *TaskExecutor) NotifyDisconnectJobMaster(token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo, done func(err error)) {
	te.notify(func() error { return te.fencedDisconnectJobMaster(token, job, cause) }, done)
}

// fencedDisconnectJobMaster is DisconnectJobMaster on the loop.
func (te *TaskExecutor) fencedDisconnectJobMaster(token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo) error {
	if jc := te.jobs[job]; jc != nil && jc.token != token {
		return &rpc.FencingError{Endpoint: "TaskExecutor " + string(te.id) + " (job " + job.String() + ")", Expected: jc.token.String(), Got: token.String()}
	}
	te.disconnectJobMaster(job, cause.Err())
	return nil
}

// disconnectJobMaster is DisconnectJobMaster on the loop.
func (te *TaskExecutor) disconnectJobMaster(job jobgraph.JobID, cause error) {
	if cause == nil {
		cause = errors.New("no cause given")
	}
	var why *stopReason // made for the first slot of the job still held (usually none is)
	for n := range te.slots {
		if s := &te.slots[n]; s.state != slotFree && s.job == job {
			if why == nil {
				why = &stopReason{kind: stopFail, err: fmt.Errorf("JobMaster of job %s disconnected from TaskExecutor %s: %w", job, te.id, cause)}
			}
			te.freeSlot(n, why)
		}
	}
	te.forgetJob(job)
	te.shuffle.ReleaseJobPartitions(job, te.id)
}

// HeartbeatFromJobMaster answers a JobMaster's heartbeat request. The request names the JobMaster
// only by its ResourceID, which the TaskExecutor does not learn when it connects, so it answers
// every JobMaster it is registered with — those of the jobs it holds slots for — each with
// JobMasterGateway.HeartbeatFromTaskExecutor and the AllocatedSlotReport of its job (the slots
// the JobMaster accepted, the accumulator snapshots of the job's tasks here, and its
// ExecutionDeploymentReport: the job's attempts here, including those whose final state is
// still being delivered; see rpc.ExecutionDeploymentReport). A JobMaster
// that takes the heartbeat counts as alive; one that has not for heartbeat.timeout is
// disconnected (see jobMasterHeartbeatTimedOut). At most one heartbeat
// per JobMaster is in flight. Flink: HeartbeatManagerImpl.requestHeartbeat on the TaskExecutor's
// JobManager heartbeat manager.
func (te *TaskExecutor) HeartbeatFromJobMaster(ctx context.Context, jobMaster jobgraph.ResourceID) error {
	return te.call(ctx, func() error {
		for _, jc := range te.jobs {
			te.heartbeatJobMaster(jc)
		}
		return nil
	})
}

// heartbeatJobMaster sends a heartbeat to jc's JobMaster, off the loop. On the loop.
func (te *TaskExecutor) heartbeatJobMaster(jc *jobConnection) {
	if !jc.registered || jc.gateway == nil || jc.answering {
		return
	}
	report := rpc.AllocatedSlotReport{JobID: jc.job}
	deployed := &rpc.ExecutionDeploymentReport{Executions: []jobgraph.ExecutionAttemptID{}}
	var tasks []*task
	for _, s := range te.slots {
		if s.state == slotActive && s.job == jc.job {
			report.Slots = append(report.Slots, s.allocation)
		}
		if s.state != slotFree && s.job == jc.job {
			for _, t := range s.tasks {
				tasks = append(tasks, t)
				deployed.Executions = append(deployed.Executions, t.attempt)
			}
		}
	}
	for attempt, job := range te.reporting {
		if job == jc.job {
			deployed.Executions = append(deployed.Executions, attempt)
		}
	}
	report.ExecutionDeploymentReport = deployed
	jc.answering = true
	answered := make(chan struct{})
	jc.answered = answered
	// SubmitTask's answers wait for this (see SubmitTask); a killed TaskExecutor never calls.
	closeAnswered := sync.OnceFunc(func() { close(answered) })
	gw, token, timeout := jc.gateway, jc.token, te.jmHeartbeats.Timeout()
	result := te.jmHeartbeats.TrackRPC(jc.job)
	te.callAside(timeout, func(ctx context.Context) error {
		defer closeAnswered()
		// The accumulators are encoded here, off the loop: that is the task's own code.
		report.Accumulators = accumulatorReport(jc.job, tasks)
		return gw.HeartbeatFromTaskExecutor(ctx, te.id, report)
	}, func(err error) {
		closeAnswered()
		jc.answering = false
		current := te.jobs[jc.job] == jc && jc.token == token && !te.killed.Load()
		if err == nil && current {
			te.jmHeartbeats.ReceiveHeartbeat(jc.job)
		} else if err != nil && te.ctx.Err() == nil {
			te.log.Debug("heartbeat to a JobMaster failed", "job", jc.job.String(), "error", err)
		}
		if current {
			result(err) // an unreachable JobMaster counts toward heartbeat.rpc-failure-threshold
		}
	})
}

// accumulatorReport returns the accumulator snapshots of the job's tasks that added
// accumulators (Flink: TaskExecutor's JobManagerHeartbeatListener building an AccumulatorReport).
// Off the loop.
func accumulatorReport(job jobgraph.JobID, tasks []*task) []rpc.AccumulatorSnapshot {
	var out []rpc.AccumulatorSnapshot
	for _, t := range tasks {
		if accs := t.accs.Snapshot(); accs != nil {
			out = append(out, rpc.AccumulatorSnapshot{JobID: job, ExecutionAttemptID: t.attempt, Accumulators: accs})
		}
	}
	return out
}

// callAside runs call off the loop, bounded by timeout (ErrKilled without calling once the
// TaskExecutor was killed), and then done on the loop with its error. On the loop.
func (te *TaskExecutor) callAside(timeout time.Duration, call func(context.Context) error, done func(error)) {
	te.spawn(func() {
		err := ErrKilled
		if !te.killed.Load() {
			ctx, cancel := context.WithTimeout(te.ctx, timeout)
			err = call(ctx)
			cancel()
		}
		te.loop.Execute(func() { done(err) })
	})
}

// jobMasterHeartbeatTimedOut disconnects the job whose JobMaster has not taken a heartbeat for
// heartbeat.timeout: its tasks fail, its slots are freed. Flink: TaskExecutor's
// JobManagerHeartbeatListener.notifyHeartbeatTimeout. On the loop.
func (te *TaskExecutor) jobMasterHeartbeatTimedOut(job jobgraph.JobID) {
	if te.killed.Load() {
		return
	}
	cause := &heartbeat.TimeoutError{Target: "the JobMaster of job " + job.String(), Timeout: te.jmHeartbeats.Timeout()}
	te.log.Warn("JobMaster heartbeat timed out; disconnecting the job", "job", job.String(), "cause", cause)
	te.disconnectJobMaster(job, cause)
}

// jobMasterUnreachable disconnects the job whose last heartbeat.rpc-failure-threshold heartbeats
// to its JobMaster failed as unreachable, as a timeout does. Flink: TaskExecutor's
// JobManagerHeartbeatListener.notifyTargetUnreachable. On the loop.
func (te *TaskExecutor) jobMasterUnreachable(job jobgraph.JobID, last error) {
	if te.killed.Load() {
		return
	}
	cause := &heartbeat.UnreachableError{Target: "the JobMaster of job " + job.String(), Failures: te.jmHeartbeats.RPCFailureThreshold(), LastFailure: last.Error()}
	te.log.Warn("JobMaster unreachable; disconnecting the job", "job", job.String(), "cause", cause)
	te.disconnectJobMaster(job, cause)
}

// HeartbeatFromResourceManager answers the ResourceManager's heartbeat request: the
// ResourceManager's heartbeat timeout starts over, and the TaskExecutor sends its slot report with
// ResourceManagerGateway.HeartbeatFromTaskExecutor (one at a time).
func (te *TaskExecutor) HeartbeatFromResourceManager(ctx context.Context, rm jobgraph.ResourceID) error {
	return te.call(ctx, func() error {
		te.rmHeartbeats.ReceiveHeartbeat(te.rmAddr)
		gw := te.rm
		if gw == nil || te.rmAnswering {
			return nil
		}
		te.rmAnswering = true
		report, timeout, rmID := te.slotReport(), te.rmHeartbeats.Timeout(), te.rmID
		result := te.rmHeartbeats.TrackRPC(te.rmAddr)
		te.callAside(timeout, func(ctx context.Context) error {
			return gw.HeartbeatFromTaskExecutor(ctx, rmID, te.id, report)
		}, func(err error) {
			te.rmAnswering = false
			if err != nil && te.ctx.Err() == nil {
				te.log.Debug("heartbeat to the ResourceManager failed", "error", err)
			}
			if te.rm == gw && !te.killed.Load() {
				result(err) // an unreachable ResourceManager counts toward heartbeat.rpc-failure-threshold
			}
		})
		return nil
	})
}

// resourceManagerHeartbeatTimedOut registers with the ResourceManager again: it has not asked
// for a heartbeat for heartbeat.timeout, so it is gone or has dropped this TaskExecutor. Whatever
// the outcome, the ResourceManager is monitored again, so a failed attempt is repeated after
// another heartbeat.timeout. Flink: TaskExecutor.reconnectToResourceManager. On the loop.
func (te *TaskExecutor) resourceManagerHeartbeatTimedOut(string) {
	te.reconnectResourceManager("ResourceManager heartbeat timed out; registering again", "timeout", te.rmHeartbeats.Timeout())
}

// resourceManagerUnreachable registers with the ResourceManager again, as a timeout does, once
// the last heartbeat.rpc-failure-threshold heartbeats to it failed as unreachable. Flink:
// TaskExecutor's ResourceManagerHeartbeatListener.notifyTargetUnreachable. On the loop.
func (te *TaskExecutor) resourceManagerUnreachable(_ string, last error) {
	te.reconnectResourceManager("ResourceManager unreachable; registering again", "failures", te.rmHeartbeats.RPCFailureThreshold(), "last", last)
}

// DisconnectResourceManager implements rpc.ResourceManagerDisconnector: the ResourceManager
// whose ResourceManagerID is rm has dropped this TaskExecutor (its heartbeat timed out there, or
// was found unreachable). If rm is the ResourceManagerID the current registration was answered
// with, the TaskExecutor stops monitoring that ResourceManager and registers with it again at
// once, as after its own heartbeat timeout (the same path: with Config.ResourceManagerRetrieval
// through the retrying registration with the current leader, at a fixed address with the same
// gateway), logging cause; otherwise — an earlier ResourceManager's disconnect, or no
// registration answered (one under way) — it fails with an *rpc.FencingError
// (rpc.ErrFencingTokenMismatch) and changes nothing. A killed TaskExecutor answers ErrKilled, a
// closed one ErrClosed (both unreachable). It returns once the loop took the disconnect, not when
// the registration is answered. Flink: TaskExecutor.disconnectResourceManager, which reconnects
// on every disconnect while it runs; see rpc.ResourceManagerDisconnector for where we differ.
func (te *TaskExecutor) DisconnectResourceManager(ctx context.Context, rm jobgraph.ResourceManagerID, cause *jobgraph.ErrorInfo) error {
	return te.call(ctx, func() error {
		registered := te.rm != nil && !te.rmID.IsZero()
		if !registered || rm != te.rmID {
			expected := te.rmID.String()
			if !registered {
				expected = "none (no registration answered)"
			}
			return &rpc.FencingError{Endpoint: "TaskExecutor " + string(te.id) + " (ResourceManagerID)", Expected: expected, Got: rm.String()}
		}
		te.rmHeartbeats.Unmonitor(te.rmAddr) // monitored again once registered
		te.reconnectResourceManager("the ResourceManager dropped this TaskExecutor; registering again", "cause", cause.Err())
		return nil
	})
}

// reconnectResourceManager registers with the ResourceManager again, after logging msg with
// args (see resourceManagerHeartbeatTimedOut). On the loop.
func (te *TaskExecutor) reconnectResourceManager(msg string, args ...any) {
	rm := te.rm
	if te.killed.Load() || rm == nil {
		return
	}
	if te.rmConn != nil {
		te.log.Warn(msg, append(args, "address", te.rmAddr)...)
		te.rm, te.rmID = nil, jobgraph.ResourceManagerID{}
		te.rmConn.Reconnect()
		return
	}
	te.log.Warn(msg, args...)
	reg, timeout := te.registration(), te.rmHeartbeats.Timeout()
	te.spawn(func() {
		ctx, cancel := context.WithTimeout(te.ctx, timeout)
		rmID, err := rm.RegisterTaskExecutor(ctx, reg)
		cancel()
		te.loop.Execute(func() {
			if te.killed.Load() {
				return
			}
			if err != nil {
				te.log.Warn("registering with the ResourceManager again failed", "error", err)
			} else {
				te.rmID = rmID
				te.wakeRegistrationWaiters()
			}
			te.rmHeartbeats.Monitor(te.rmAddr)
		})
	})
}

// TriggerCheckpoint implements rpc.TaskExecutorGateway: the trigger is queued for the task of
// attempt, which takes the checkpoint inside its next Emit or Broadcast (a task without inputs)
// or, once every input ended, inside its next read (see CheckpointHandler); a task with inputs
// that have not ended declines it (CheckpointDeclinedTaskNotReady): it takes checkpoints when
// their barriers arrive. An attempt that does not run here gets a DeclineCheckpoint with
// CheckpointDeclinedTaskNotReady, sent off the loop, and is not an error. token must be the
// JobMasterID of the attempt's job (or, for an unknown attempt, of a job with slots here);
// otherwise it fails with an *rpc.FencingError (rpc.ErrFencingTokenMismatch) and changes
// nothing. Flink: TaskExecutor.triggerCheckpoint.
func (te *TaskExecutor) TriggerCheckpoint(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, timestamp time.Time, props checkpoint.CheckpointProperties) error {
	return te.call(ctx, func() error {
		t, jc, err := te.checkpointTarget(token, attempt)
		if err != nil {
			return err
		}
		if t == nil || t.stopped() != nil {
			te.declineAside(jc, checkpoint.DeclineCheckpoint{Attempt: attempt, CheckpointID: id,
				Reason:  checkpoint.CheckpointDeclinedTaskNotReady,
				Message: fmt.Sprintf("execution %s does not run on TaskExecutor %s", attempt, te.id)})
			return nil
		}
		t.mail.post(mail{kind: mailTrigger, barrier: CheckpointBarrier{ID: id, Timestamp: timestamp, Properties: props}})
		return nil
	})
}

// ConfirmCheckpoint implements rpc.TaskExecutorGateway: the confirmation is queued for the task
// of attempt, whose CheckpointHandler.NotifyCheckpointComplete runs inside its next read or
// write, or while it waits for input. Unknown attempts are ignored; fencing as TriggerCheckpoint.
// Flink: TaskExecutor.confirmCheckpoint.
func (te *TaskExecutor) ConfirmCheckpoint(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, timestamp time.Time) error {
	return te.notifyCheckpoint(ctx, token, attempt, mail{kind: mailConfirm, barrier: CheckpointBarrier{ID: id, Timestamp: timestamp}})
}

// AbortCheckpoint implements rpc.TaskExecutorGateway: as ConfirmCheckpoint, for
// NotifyCheckpointAborted; a task aligning checkpoint id stops aligning it, and one waiting for
// the outcome of stop-with-savepoint savepoint id goes on. Flink: TaskExecutor.abortCheckpoint.
func (te *TaskExecutor) AbortCheckpoint(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, timestamp time.Time) error {
	return te.notifyCheckpoint(ctx, token, attempt, mail{kind: mailAbort, barrier: CheckpointBarrier{ID: id, Timestamp: timestamp}})
}

func (te *TaskExecutor) notifyCheckpoint(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, m mail) error {
	return te.call(ctx, func() error {
		t, _, err := te.checkpointTarget(token, attempt)
		if err == nil && t != nil {
			t.mail.post(m)
		}
		return err
	})
}

// checkpointTarget returns the task of attempt, if it runs here, and the connection of its job,
// fenced by token; for an unknown attempt, the connection of the job whose JobMasterID token is.
// On the loop.
func (te *TaskExecutor) checkpointTarget(token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID) (*task, *jobConnection, error) {
	if t := te.tasks[attempt]; t != nil {
		jc := te.jobs[t.tdd.JobID]
		if jc == nil || jc.token != token || t.token != token {
			expected := "none"
			if jc != nil {
				expected = jc.token.String()
			}
			return nil, nil, &rpc.FencingError{Endpoint: "TaskExecutor " + string(te.id) + " (job " + t.tdd.JobID.String() + ")", Expected: expected, Got: token.String()}
		}
		return t, jc, nil
	}
	for _, jc := range te.jobs {
		if jc.token == token {
			return nil, jc, nil
		}
	}
	return nil, nil, &rpc.FencingError{Endpoint: "TaskExecutor " + string(te.id), Expected: "the JobMasterID of a job with slots here", Got: token.String()}
}

// declineAside sends d to jc's JobMaster off the loop. On the loop.
func (te *TaskExecutor) declineAside(jc *jobConnection, d checkpoint.DeclineCheckpoint) {
	job, address, token, gw := jc.job, jc.address, jc.token, jc.gateway
	te.spawn(func() {
		if te.killed.Load() {
			return
		}
		if gw == nil {
			var err error
			if gw, err = rpc.Connect[rpc.JobMasterGateway](te.ctx, te.rpc, address); err != nil {
				te.log.Warn("cannot reach the JobMaster to decline a checkpoint", "job", job.String(), "error", err)
				return
			}
		}
		if err := gw.DeclineCheckpoint(te.ctx, token, job, d); err != nil && te.ctx.Err() == nil {
			te.log.Warn("declining a checkpoint failed", "job", job.String(), "checkpoint", d.CheckpointID.String(), "error", err)
		}
	})
}
