// Package resourcemanager is jobgraph's ResourceManager: TaskExecutors register with it and report
// their slots, JobMasters register and declare the slots their jobs need, and its slot manager
// matches the two, asking a TaskExecutor to allocate a slot and offer it to the JobMaster.
// It behaves as Flink's StandaloneResourceManager with the DeclarativeSlotManager: the set of
// TaskExecutors is whatever registers; none is ever started or stopped by it.
//
// The ResourceManager is an endpoint: its state lives on one main loop; its gateway methods post
// to that loop and wait. SlotManager, the matching core, is a plain struct driven from the loop.
//
// Under a leader election (Config.LeaderElection) it serves only while it leads, fenced by its
// ResourceManagerID, the leader session: TaskExecutors and JobMasters find it through the
// election's leader retrieval, register with each new leader, and carry the ResourceManagerID
// their registration was answered with on every later call, so calls of an earlier session are
// refused (rpc.ResourceManagerGateway).
package resourcemanager

import (
	"context"
	"errors"
	"fmt"
	"github.com/jobgraph/jobgraph/internal/blocklist"
	"log/slog"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/gopool"
	"github.com/jobgraph/jobgraph/internal/heartbeat"
	"github.com/jobgraph/jobgraph/internal/mainloop"
	"github.com/jobgraph/jobgraph/metrics"
	"github.com/jobgraph/jobgraph/rpc"
)

var (
	// ErrNotRunning is returned by calls made before Start.
	ErrNotRunning = errors.New("resourcemanager: not running")
	// ErrClosed is returned by every method that returns an error once Close was called
	// (Start included), and handed to the done of every rpc.ResourceManagerNotifier call the
	// closed ResourceManager refuses, in an rpc.UnreachableError (rpc.IsUnreachable): a closed
	// ResourceManager is gone for its callers, so heartbeat senders count it toward
	// heartbeat.rpc-failure-threshold, as they do the unknown address a transport answers for it
	// once it is unregistered (Flink: an RPC to a stopped endpoint fails with
	// RecipientUnreachableException). It matches rpc.ErrClosed. The sentinel itself is no such
	// error: a cause that wraps it (an ErrorInfo's) is not unreachable.
	ErrClosed = fmt.Errorf("resourcemanager: %w", rpc.ErrClosed)
	// ErrJobNotRegistered is returned by DeclareRequiredResources for a job whose JobMaster has
	// not registered (or has disconnected).
	ErrJobNotRegistered = errors.New("resourcemanager: no JobMaster registered for job")
	// ErrTaskExecutorNotRegistered is returned by calls naming a TaskExecutor that is not
	// registered (Flink: "Unknown TaskManager registration id").
	ErrTaskExecutorNotRegistered = errors.New("resourcemanager: TaskExecutor not registered")
	// ErrInvalidRequirements is returned for declared requirements that make no sense (a negative
	// count).
	ErrInvalidRequirements = errors.New("resourcemanager: invalid resource requirements")
	// ErrInvalidRegistration is returned for a TaskExecutor or JobMaster registration that lacks
	// its ID or address.
	ErrInvalidRegistration = errors.New("resourcemanager: invalid registration")
	// ErrJobLeaderLostLeadership is the cause a JobMaster is disconnected with
	// (JobMasterGateway.DisconnectResourceManager) when the job's leader retrieval reports that
	// its session lost leadership (Config.HA; Flink: "Job leader lost leadership.").
	ErrJobLeaderLostLeadership = errors.New("resourcemanager: job leader lost leadership")
)

// errClosed is what a closed ResourceManager answers: ErrClosed as an rpc.UnreachableError (see
// ErrClosed). Its main loop's closed error, so every call on the loop answers it.
var errClosed = rpc.Unreachable(ErrClosed)

// The sentinels that may travel in a gateway message (see jobgraph.RegisterErrorCode).
func init() {
	jobgraph.RegisterErrorCode("resourcemanager.not-running", ErrNotRunning)
	jobgraph.RegisterErrorCode("resourcemanager.closed", ErrClosed)
	jobgraph.RegisterErrorCode("resourcemanager.job-not-registered", ErrJobNotRegistered)
	jobgraph.RegisterErrorCode("resourcemanager.task-executor-not-registered", ErrTaskExecutorNotRegistered)
	jobgraph.RegisterErrorCode("resourcemanager.invalid-requirements", ErrInvalidRequirements)
	jobgraph.RegisterErrorCode("resourcemanager.invalid-registration", ErrInvalidRegistration)
	jobgraph.RegisterErrorCode("resourcemanager.job-leader-lost-leadership", ErrJobLeaderLostLeadership)
}

// Defaults for Config.
const (
	// DefaultRequestTimeout is Flink's pekko.ask.timeout, which its slot manager uses as the
	// TaskManager request timeout.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultSlotRequestRetryDelay: see Config.SlotRequestRetryDelay.
	DefaultSlotRequestRetryDelay = time.Second
)

// Config configures a ResourceManager.
type Config struct {
	// ResourceID identifies the ResourceManager in heartbeats; empty means a random one.
	ResourceID jobgraph.ResourceID
	// Address is where Start registers the ResourceManager in RPC. Required.
	Address string
	// RPC resolves TaskExecutor addresses and serves the ResourceManager. Required.
	RPC rpc.Service
	// Logger receives the ResourceManager's logs; nil means slog.Default().
	Logger *slog.Logger
	// HA, if set, is where the ResourceManager follows the leader of each job whose JobMaster
	// registers (HA.JobMasterLeaderRetrieval), so that a JobMaster of a stale session cannot
	// replace the job's leader (see RegisterJobMaster), and a registered JobMaster whose session
	// lost leadership is disconnected at once (ErrJobLeaderLostLeadership); Flink's
	// JobLeaderIdService. A job is followed from its first registration until its JobMaster
	// disconnects or times out. Nil: the latest registration wins. The ResourceManager never
	// closes it.
	HA ha.Services
	// LeaderElection, if set, is the ResourceManager's leader election (Flink: the
	// ResourceManager is a LeaderContender, its ResourceManagerServiceImpl): Start registers the
	// ResourceManager in RPC and starts the election, and the ResourceManager serves only while
	// it leads. Until it is granted leadership, and after leadership was revoked, every call that
	// returns an error (registrations, slot reports, slot notices, declarations, disconnects)
	// fails with an error wrapping ha.ErrNotLeader, and heartbeats are dropped. On a grant of
	// session S the ResourceManagerID becomes S (the fencing token of the session, as Flink's
	// ResourceManagerId.fromUuid), and the ResourceManager confirms its leadership with
	// Config.Address, off its main loop. On a revoke it drops every TaskExecutor and JobMaster
	// registration and everything its slot manager knows (Flink: clearStateAsync, the slot
	// manager suspended), and stops following the jobs' leaders; TaskExecutors and JobMasters
	// register with the next leader they retrieve (taskexecutor.Config.ResourceManagerRetrieval,
	// jobmaster.Config.ResourceManagerRetrieval), the TaskExecutors with their slot reports, so a
	// running job keeps its slots. As in Flink (clearStateInternal), neither a revoke nor Close
	// tells the TaskExecutors and JobMasters: they learn it from their leader retrieval. Close
	// closes the election. Nil: the ResourceManager leads from
	// Start with a random ResourceManagerID, as before.
	LeaderElection ha.LeaderElection
	// FatalErrorHandler hears what the ResourceManager cannot recover from: its leader
	// election's error (ha.LeaderContender.HandleError), after which it cannot know whether it
	// leads, called on the election's goroutine; the error of a job's JobMaster leader retrieval
	// (with HA: Flink's JobLeaderIdActions.handleError), on the retrieval's goroutine; and a panic on its main loop — a broken
	// invariant of the slot manager, or a bug — as an error wrapping a *jobgraph.PanicError,
	// called on the dead loop's goroutine, after which every call returns ErrClosed wrapping
	// that error. It must not call back into the ResourceManager synchronously (Close it from
	// another goroutine). Default (nil): the error is logged at Error level. Flink:
	// ResourceManagerServiceImpl.handleError and the RpcEndpoint's FatalErrorHandler.
	FatalErrorHandler func(err error)
	// RequestTimeout bounds one RequestSlot call to a TaskExecutor; the slot is free again when
	// it expires. It bounds the heartbeat requests and the disconnect notices the
	// ResourceManager sends too. Flink: pekko.ask.timeout (slot manager's
	// taskManagerRequestTimeout), default 10 s; zero means the default. Where we differ: over the
	// in-process *rpc.LocalService these calls carry no deadline (only Close ends them), since
	// the TaskExecutors and JobMasters there answer from main loops that never wait (a closed
	// one at once, with its ErrClosed), so a timer per call would bound nothing; a host's own
	// endpoint registered on a LocalService must answer the same way.
	RequestTimeout time.Duration
	// SlotRequestRetryDelay is how long after a failed RequestSlot the ResourceManager matches
	// requirements again (other events — a slot report, a freed slot, a new declaration — match
	// at once regardless). Flink retries with the requirement-check delay; we wait longer so
	// that a TaskExecutor that keeps refusing a slot (one whose view is out of date until its next
	// slot report) does not keep the main loop busy. No Flink option; zero means
	// DefaultSlotRequestRetryDelay, a negative value retries at once.
	SlotRequestRetryDelay time.Duration
	// RequirementCheckDelay is the least time between two rounds of slot requests for a job that
	// loses a slot it was sent (its JobMaster declined the offer and the TaskExecutor freed it, or
	// the TaskExecutor is gone): such a job is matched again once that long has passed since its
	// last round, by one timer on the main loop shared by all held jobs; every other match is
	// made at once. Option slotmanager.requirement-check.delay, default 50 ms
	// (DefaultRequirementCheckDelay; zero means the default); a negative value never holds a job
	// back, as Flink does for 0 or less. Without it a JobMaster that declines the offered slots
	// makes the ResourceManager request them again at the same instant, forever. Where we differ
	// from Flink, which delays every check: see SlotManagerConfig.RequirementCheckDelay. A failed
	// RequestSlot does not hold its job back; SlotRequestRetryDelay decides.
	RequirementCheckDelay time.Duration
	// HeartbeatInterval is how often the ResourceManager asks each registered TaskExecutor and
	// JobMaster for a heartbeat. Option heartbeat.interval, default 10 s (0 means the default).
	HeartbeatInterval time.Duration
	// HeartbeatTimeout is how long a registered TaskExecutor or JobMaster may stay silent. A
	// silent TaskExecutor is unregistered, so its slots are no longer handed out, and told
	// (rpc.ResourceManagerDisconnector, when its gateway has it) in case it is still there; a silent
	// JobMaster is disconnected: its job's requirements are cleared, and the JobMaster is told
	// (JobMasterGateway.DisconnectResourceManager) in case it is still there. Option
	// heartbeat.timeout, default 50 s (0 means the default); not shorter than HeartbeatInterval.
	HeartbeatTimeout time.Duration
	// HeartbeatRPCFailureThreshold is how many heartbeat requests to a TaskExecutor or JobMaster
	// in a row may fail as unreachable (rpc.IsUnreachable: killed, its process gone) before it
	// is dropped at once, as on a timeout, with an *rpc.HeartbeatTargetUnreachableError. Option
	// heartbeat.rpc-failure-threshold, default 2 (0 means the default); -1 turns it off; below
	// -1 is an error.
	HeartbeatRPCFailureThreshold int
	// Metrics, if not nil, is where the ResourceManager registers the cluster's metrics, in a
	// group of the jobmanager scope (metrics.Registry.JobManagerGroup) it closes on Close, all
	// int64 gauges under Flink's names: numRegisteredTaskManagers (TaskExecutors registered),
	// taskSlotsTotal (their slots) and taskSlotsAvailable (those free: neither allocated nor
	// pending), published by the loop after every closure it runs. A ResourceManager that does
	// not lead has none registered, so it shows 0s. Flink: ResourceManager.registerMetrics and
	// the SlotManager's metrics (ResourceManagerMetricGroup).
	Metrics *metrics.Registry
}

type taskExecutorRegistration struct {
	address      string
	gateway      rpc.TaskExecutorGateway
	heartbeating bool // a heartbeat request is in flight
	// total is the resource it registered with; lastHeartbeat when it registered or last
	// answered a heartbeat (RequestTaskManagerInfo reports both).
	total         jobgraph.ResourceProfile
	lastHeartbeat time.Time
}

// jobMasterRegistration is a registered JobMaster as the heartbeats need it; keyed by its
// ResourceID. The gateway is connected on the first heartbeat request.
type jobMasterRegistration struct {
	job          jobgraph.JobID
	token        jobgraph.JobMasterID
	address      string
	gateway      rpc.JobMasterGateway
	heartbeating bool // a heartbeat request is in flight
}

// ResourceManager is the in-process ResourceManager endpoint. It implements
// rpc.ResourceManagerGateway; all methods are safe for concurrent use. Create it with New, then
// Start it; Close it once done.
type ResourceManager struct {
	cfg  Config
	log  *slog.Logger
	loop *mainloop.Loop

	// ctx bounds RequestSlot calls in flight; canceled by Close. wg counts them.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// inProcess: Config.RPC is the in-process *rpc.LocalService, so requestContext arms no
	// timer (see Config.RequestTimeout).
	inProcess bool
	// workers run what spawn starts, kept for the next call (a slot request and a job leader's
	// retrieval to stop come with every job); closed after wg in Close.
	workers gopool.Pool

	// lifeMu guards started, closed, registered, electing (Config.LeaderElection was started)
	// and publicID (the copy of id read off the loop).
	// It is never held while calling out — into the loop or the rpc.Service — so a Register
	// that blocks (a host's Service does I/O) holds up neither Close nor ResourceManagerID.
	lifeMu     sync.Mutex
	started    bool
	closed     bool
	registered bool
	electing   bool
	publicID   jobgraph.ResourceManagerID

	// Owned by the loop. running: Start ran. leading: the ResourceManager serves, under the
	// fencing token id (zero while it does not lead); always with running when there is no
	// Config.LeaderElection.
	running        bool
	leading        bool
	id             jobgraph.ResourceManagerID
	sm             *SlotManager
	metrics        *rmMetrics // nil without Config.Metrics
	taskExecutors  map[jobgraph.ResourceID]*taskExecutorRegistration
	retryScheduled bool
	// Heartbeats: the ResourceManager requests them from every registered TaskExecutor and
	// JobMaster (Flink: its two HeartbeatManagerSenders).
	teHeartbeats *heartbeat.Manager[jobgraph.ResourceID]
	jmHeartbeats *heartbeat.Manager[jobgraph.ResourceID]
	jobMasters   map[jobgraph.ResourceID]*jobMasterRegistration
	// blocked is the cluster's blocklist (see AddNewBlockedNodes); unblockAt/cancelUnblock the
	// timer that removes the earliest entry at its end.
	blocked       blocklist.Tracker
	unblockAt     time.Time
	cancelUnblock func() bool

	// leaders follows the jobs' leaders when Config.HA is set; nil otherwise. Safe off the loop.
	leaders *jobLeaders
}

var (
	_ rpc.ResourceManagerGateway  = (*ResourceManager)(nil)
	_ rpc.ResourceManagerNotifier = (*ResourceManager)(nil)
)

// New returns a ResourceManager that is not started yet. It fails without Address or RPC.
func New(cfg Config) (*ResourceManager, error) {
	if cfg.Address == "" {
		return nil, errors.New("resourcemanager: Config.Address is required")
	}
	if cfg.RPC == nil {
		return nil, errors.New("resourcemanager: Config.RPC is required")
	}
	if cfg.ResourceID == "" {
		cfg.ResourceID = jobgraph.NewResourceID("resourcemanager")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.SlotRequestRetryDelay == 0 {
		cfg.SlotRequestRetryDelay = DefaultSlotRequestRetryDelay
	}
	if _, _, err := heartbeat.Resolve(cfg.HeartbeatInterval, cfg.HeartbeatTimeout); err != nil {
		return nil, fmt.Errorf("resourcemanager: %w", err)
	}
	if _, err := heartbeat.ResolveRPCFailureThreshold(cfg.HeartbeatRPCFailureThreshold); err != nil {
		return nil, fmt.Errorf("resourcemanager: %w", err)
	}
	rm := &ResourceManager{
		cfg:           cfg,
		log:           cfg.Logger.With("component", "resourcemanager", "address", cfg.Address),
		loop:          mainloop.NewWithClosedError("resourcemanager "+cfg.Address, errClosed),
		taskExecutors: make(map[jobgraph.ResourceID]*taskExecutorRegistration),
		jobMasters:    make(map[jobgraph.ResourceID]*jobMasterRegistration),
	}
	_, rm.inProcess = cfg.RPC.(*rpc.LocalService)
	rm.loop.SetPanicHandler(rm.onPanic)
	var err error
	rm.teHeartbeats, err = heartbeat.New(heartbeat.Config[jobgraph.ResourceID]{
		Timers: rm.loop, Interval: cfg.HeartbeatInterval, Timeout: cfg.HeartbeatTimeout,
		RPCFailureThreshold: cfg.HeartbeatRPCFailureThreshold,
		RequestHeartbeat:    rm.requestTaskExecutorHeartbeat,
		OnTimeout:           rm.taskExecutorHeartbeatTimedOut,
		OnUnreachable:       rm.taskExecutorUnreachable,
	})
	if err == nil {
		rm.jmHeartbeats, err = heartbeat.New(heartbeat.Config[jobgraph.ResourceID]{
			Timers: rm.loop, Interval: cfg.HeartbeatInterval, Timeout: cfg.HeartbeatTimeout,
			RPCFailureThreshold: cfg.HeartbeatRPCFailureThreshold,
			RequestHeartbeat:    rm.requestJobMasterHeartbeat,
			OnTimeout:           rm.jobMasterHeartbeatTimedOut,
			OnUnreachable:       rm.jobMasterUnreachable,
		})
	}
	if err != nil {
		rm.loop.Close()
		return nil, fmt.Errorf("resourcemanager: %w", err)
	}
	rm.ctx, rm.cancel = context.WithCancel(context.Background())
	if cfg.HA != nil {
		rm.leaders = newJobLeaders(cfg.HA, rm.log, func(job jobgraph.JobID, old jobgraph.JobMasterID) {
			rm.loop.Execute(func() { rm.jobLeaderLostLeadership(job, old) })
		}, rm.fatal)
	}
	rm.sm, err = NewSlotManagerWithConfig(SlotManagerConfig{
		Allocator:             SlotAllocatorFunc(rm.requestSlot),
		Logger:                rm.log,
		RequirementCheckDelay: cfg.RequirementCheckDelay,
		Timers:                rm.loop,
		IsBlockedTaskExecutor: rm.blocked.IsBlocked, // read on the loop only
	})
	if err != nil {
		rm.cancel()
		rm.loop.Close()
		return nil, err
	}
	rm.registerMetrics(cfg.Metrics)
	return rm, nil
}

// Start creates the ResourceManager's fencing token (its ResourceManagerID) and registers it in
// RPC under Config.Address, where TaskExecutors and JobMasters reach it. With
// Config.LeaderElection it registers in RPC and then starts the election instead: the
// ResourceManagerID is the session it is granted (see Config.LeaderElection), and Start fails,
// unregistered again, when the election cannot start. It fails with ErrClosed
// after Close (also when Close ran while Start was registering: Start then unregisters again),
// and once it succeeded, or while another Start runs, with an "already started" error; after a
// failed Start it may be called again.
func (rm *ResourceManager) Start(ctx context.Context) error {
	rm.lifeMu.Lock()
	switch {
	case rm.closed:
		rm.lifeMu.Unlock()
		return errClosed
	case rm.started:
		rm.lifeMu.Unlock()
		return errors.New("resourcemanager: already started")
	}
	rm.started = true
	rm.lifeMu.Unlock()
	failed := func(err error) error {
		rm.lifeMu.Lock()
		rm.started = false
		rm.lifeMu.Unlock()
		return err
	}

	// No lock from here on: both calls may block.
	election := rm.cfg.LeaderElection
	id := jobgraph.NewResourceManagerID()
	if election != nil {
		id = jobgraph.ResourceManagerID{} // the session granted is the token
	}
	if err := rm.call(ctx, func() error {
		rm.running = true
		if election == nil {
			rm.id, rm.leading = id, true
		}
		return nil
	}); err != nil {
		return failed(err)
	}
	if err := rm.cfg.RPC.Register(rm.cfg.Address, rm); err != nil {
		// Best effort: the loop may already be gone if ctx ended; then nothing runs anyway.
		rm.loop.Execute(func() { rm.running = false })
		return failed(fmt.Errorf("resourcemanager: register at %q: %w", rm.cfg.Address, err))
	}
	rm.lifeMu.Lock()
	closed := rm.closed
	if !closed {
		rm.registered, rm.publicID = true, id
	}
	rm.lifeMu.Unlock()
	if closed {
		// Close ran while Register did and found nothing registered to undo: undo it here.
		rm.cfg.RPC.Unregister(rm.cfg.Address)
		return errClosed
	}
	if election != nil {
		// Off the loop, and outside lifeMu: starting may do I/O, and may grant at once.
		if err := election.Start(leaderContender{rm}); err != nil {
			rm.lifeMu.Lock()
			undo := rm.registered
			rm.registered = false
			rm.lifeMu.Unlock()
			if undo {
				rm.cfg.RPC.Unregister(rm.cfg.Address)
			}
			rm.loop.Execute(func() { rm.running = false })
			return failed(fmt.Errorf("resourcemanager: start the leader election: %w", err))
		}
		rm.lifeMu.Lock()
		rm.electing = true
		rm.lifeMu.Unlock()
		rm.log.Info("ResourceManager started; waiting for leadership", "resourceID", rm.cfg.ResourceID)
		return nil
	}
	rm.log.Info("ResourceManager started", "resourceManagerID", id, "resourceID", rm.cfg.ResourceID)
	return nil
}

// leaderContender is the ResourceManager as its election's ha.LeaderContender: each callback is
// posted to the main loop, in the order the election made them.
type leaderContender struct{ rm *ResourceManager }

func (c leaderContender) GrantLeadership(session ha.SessionID) {
	c.rm.loop.Execute(func() { c.rm.grantLeadership(session) })
}

func (c leaderContender) RevokeLeadership() { c.rm.loop.Execute(c.rm.revokeLeadership) }

func (c leaderContender) HandleError(err error) {
	c.rm.fatal(fmt.Errorf("resourcemanager: the ResourceManager's leader election failed: %w", err))
}

// onPanic is the panic handler of the main loop: a broken invariant of the slot manager (or a
// bug) leaves the ResourceManager serving nothing — every call returns ErrClosed wrapping the
// *jobgraph.PanicError — and is fatal. On the dead loop's goroutine, before Close can return.
func (rm *ResourceManager) onPanic(err *jobgraph.PanicError) {
	rm.log.Error("the ResourceManager's main loop panicked", "panic", err.Value, "stack", string(err.Stack))
	rm.fatal(fmt.Errorf("resourcemanager: %w", err))
}

// fatal hands err to Config.FatalErrorHandler, or logs it.
func (rm *ResourceManager) fatal(err error) {
	if h := rm.cfg.FatalErrorHandler; h != nil {
		h(err)
		return
	}
	rm.log.Error("fatal error of the ResourceManager", "err", err)
}

// grantLeadership makes the ResourceManager lead under session: its ResourceManagerID becomes
// session, and it confirms its leadership with its address off the loop (the election may do
// I/O), so TaskExecutors and JobMasters retrieve it and register. Flink:
// ResourceManagerServiceImpl.grantLeadership / startNewLeaderResourceManager. On the loop.
func (rm *ResourceManager) grantLeadership(session ha.SessionID) {
	if !rm.running || rm.ctx.Err() != nil {
		return
	}
	if rm.leading {
		// Granted again without a revoke in between: the earlier session ended all the same.
		rm.revokeLeadership()
	}
	id := jobgraph.ResourceManagerID(session)
	rm.id, rm.leading = id, true
	rm.setPublicID(id)
	rm.log.Info("ResourceManager granted leadership", "resourceManagerID", id)
	election, address := rm.cfg.LeaderElection, rm.cfg.Address
	rm.spawn(func() { election.ConfirmLeadership(session, address) })
}

// revokeLeadership ends the leader session: the ResourceManager refuses every call until it is
// granted leadership again, and forgets every TaskExecutor, JobMaster, slot and requirement of
// the session (Flink: ResourceManager.clearStateAsync, its slot manager suspended). Answers to
// requests of the session that come back later are dropped (see slotRequestDone). On the loop.
func (rm *ResourceManager) revokeLeadership() {
	if !rm.leading {
		return
	}
	old := rm.id
	rm.id, rm.leading = jobgraph.ResourceManagerID{}, false
	rm.setPublicID(jobgraph.ResourceManagerID{})
	rm.log.Info("ResourceManager lost leadership; dropping every registration", "resourceManagerID", old,
		"taskExecutors", len(rm.taskExecutors), "jobs", rm.sm.NumJobs())
	for id := range rm.taskExecutors {
		rm.teHeartbeats.Unmonitor(id)
	}
	clear(rm.taskExecutors)
	for id := range rm.jobMasters {
		rm.jmHeartbeats.Unmonitor(id)
	}
	clear(rm.jobMasters)
	rm.clearBlocklist()
	rm.sm.Suspend()
	if rm.leaders != nil {
		rm.leaders.forgetJobs(rm.spawn)
	}
}

func (rm *ResourceManager) setPublicID(id jobgraph.ResourceManagerID) {
	rm.lifeMu.Lock()
	rm.publicID = id
	rm.lifeMu.Unlock()
}

// Close unregisters the ResourceManager from RPC, cancels the slot requests in flight, stops the
// main loop and waits for every goroutine it started. Calls made afterwards fail with ErrClosed.
// Closing twice is harmless. It does not wait for a Start still registering (that Start
// unregisters and fails with ErrClosed). It returns nil: the error is io.Closer's, as on every
// endpoint (the JobMaster's Close returns its final archive instead).
func (rm *ResourceManager) Close() error {
	rm.lifeMu.Lock()
	if rm.closed {
		rm.lifeMu.Unlock()
		return nil
	}
	rm.closed = true
	registered, electing := rm.registered, rm.electing
	rm.registered, rm.electing = false, false
	rm.lifeMu.Unlock()

	if electing {
		// Off the loop: closing may do I/O. Its revoke, if it comes before the loop closes, is
		// applied; the loop's end drops everything anyway.
		if err := rm.cfg.LeaderElection.Close(); err != nil {
			rm.log.Warn("closing the ResourceManager's leader election failed", "err", err)
		}
	}
	if registered {
		rm.cfg.RPC.Unregister(rm.cfg.Address)
	}
	rm.cancel()
	rm.loop.Close() // no closure runs after this, so no new slot request starts
	rm.wg.Wait()
	rm.workers.Close()
	rm.metrics.close()
	if rm.leaders != nil {
		rm.leaders.forgetAll()
	}
	return nil
}

// ResourceManagerID returns the fencing token Start created; zero before Start. With
// Config.LeaderElection: the current leader session's, zero while the ResourceManager does not
// lead.
func (rm *ResourceManager) ResourceManagerID() jobgraph.ResourceManagerID {
	rm.lifeMu.Lock()
	defer rm.lifeMu.Unlock()
	return rm.publicID
}

// ResourceID returns the ResourceManager's ResourceID.
func (rm *ResourceManager) ResourceID() jobgraph.ResourceID { return rm.cfg.ResourceID }

// Address returns the address the ResourceManager registers under.
func (rm *ResourceManager) Address() string { return rm.cfg.Address }

// call runs fn on the loop; a closed loop answers ErrClosed (see New).
func (rm *ResourceManager) call(ctx context.Context, fn func() error) error {
	return rm.loop.Call(ctx, fn)
}

// submit runs fn on rm's loop; a closed loop answers ErrClosed (see New).
func submit[T any](ctx context.Context, rm *ResourceManager, fn func() (T, error)) (T, error) {
	return mainloop.Submit(ctx, rm.loop, fn)
}

// closedErr returns the closed error (errClosed) once Close was called. Off the loop.
func (rm *ResourceManager) closedErr() error {
	if err := rm.loop.Err(); err != nil {
		return err // ErrClosed wrapping the PanicError the loop died of (onPanic)
	}
	rm.lifeMu.Lock()
	defer rm.lifeMu.Unlock()
	if rm.closed {
		return errClosed
	}
	return nil
}

// checkRunning returns ErrNotRunning before Start, and an error wrapping ha.ErrNotLeader while
// the ResourceManager does not lead (Config.LeaderElection). Called on the loop.
func (rm *ResourceManager) checkRunning() error {
	if !rm.running {
		return ErrNotRunning
	}
	if !rm.leading {
		return fmt.Errorf("resourcemanager %s: %w", rm.cfg.Address, ha.ErrNotLeader)
	}
	return nil
}

// fenced is checkRunning, then the fencing check of a call that carries the ResourceManagerID
// its caller's registration was answered with: another one than the current leader session's
// (a registration of an earlier session) is a *rpc.FencingError. On the loop.
func (rm *ResourceManager) fenced(token jobgraph.ResourceManagerID) error {
	if err := rm.checkRunning(); err != nil {
		return err
	}
	if token != rm.id {
		return &rpc.FencingError{Endpoint: "ResourceManager " + rm.cfg.Address, Expected: rm.id.String(), Got: token.String()}
	}
	return nil
}

// ---------------------------------------------------------------------------------------------
// TaskExecutors

// RegisterTaskExecutor connects to the TaskExecutor's gateway at registration.Address, registers
// it with its slot report and returns the ResourceManagerID. A TaskExecutor registering again
// under the same ResourceID replaces its earlier registration (whose slots are dropped first), as
// Flink's ResourceManager does.
func (rm *ResourceManager) RegisterTaskExecutor(ctx context.Context, registration rpc.TaskExecutorRegistration) (jobgraph.ResourceManagerID, error) {
	if err := rm.closedErr(); err != nil {
		return jobgraph.ResourceManagerID{}, err
	}
	if registration.ResourceID == "" || registration.Address == "" {
		return jobgraph.ResourceManagerID{}, fmt.Errorf("%w: TaskExecutor registration needs a ResourceID and an Address", ErrInvalidRegistration)
	}
	// Connect off the loop: with a remote Service this may take a while.
	gw, err := rpc.Connect[rpc.TaskExecutorGateway](ctx, rm.cfg.RPC, registration.Address)
	if err != nil {
		return jobgraph.ResourceManagerID{}, fmt.Errorf("resourcemanager: connect to TaskExecutor %s: %w", registration.ResourceID, err)
	}
	return submit(ctx, rm, func() (jobgraph.ResourceManagerID, error) {
		if err := rm.checkRunning(); err != nil {
			return jobgraph.ResourceManagerID{}, err
		}
		id := registration.ResourceID
		if old, ok := rm.taskExecutors[id]; ok {
			rm.log.Info("replacing the registration of TaskExecutor", "taskExecutor", id, "oldAddress", old.address, "address", registration.Address)
			delete(rm.taskExecutors, id)
			rm.sm.UnregisterTaskExecutor(id)
		}
		rm.taskExecutors[id] = &taskExecutorRegistration{address: registration.Address, gateway: gw,
			total: registration.TotalResource, lastHeartbeat: time.Now()}
		rm.log.Info("registered TaskExecutor", "taskExecutor", id, "taskExecutorAddress", registration.Address, "slots", len(registration.SlotReport.Slots))
		rm.sm.RegisterTaskExecutor(id, registration.SlotReport)
		rm.teHeartbeats.Monitor(id)
		return rm.id, nil
	})
}

// SendSlotReport replaces what the ResourceManager knows of the TaskExecutor's slots (see
// SlotManager.ReportSlotStatus). Fails with ErrTaskExecutorNotRegistered for an unknown one, and
// with an *rpc.FencingError when token is not the current ResourceManagerID (a report of a
// registration with an earlier leader session).
func (rm *ResourceManager) SendSlotReport(ctx context.Context, token jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, report rpc.SlotReport) error {
	return rm.call(ctx, func() error {
		if err := rm.fenced(token); err != nil {
			return err
		}
		if !rm.sm.ReportSlotStatus(taskExecutor, report) {
			return fmt.Errorf("%w: %s", ErrTaskExecutorNotRegistered, taskExecutor)
		}
		return nil
	})
}

// NotifySlotAvailable marks the slot free again if it is still held by allocation, and matches
// waiting requirements with it (a job that lost the slot less than Config.RequirementCheckDelay
// after it was sent it waits for the rest of that delay). A notice for a slot that moved on to another allocation is
// ignored. Fails with ErrTaskExecutorNotRegistered for an unknown TaskExecutor, and with an
// *rpc.FencingError for a token of an earlier leader session, as SendSlotReport.
func (rm *ResourceManager) NotifySlotAvailable(ctx context.Context, token jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, slot rpc.SlotID, allocation jobgraph.AllocationID) error {
	return rm.call(ctx, func() error {
		if err := rm.fenced(token); err != nil {
			return err
		}
		if _, ok := rm.taskExecutors[taskExecutor]; !ok {
			return fmt.Errorf("%w: %s", ErrTaskExecutorNotRegistered, taskExecutor)
		}
		if slot.ResourceID != taskExecutor {
			rm.log.Warn("TaskExecutor announced a slot that is not its own; ignoring it", "taskExecutor", taskExecutor, "slot", slot)
			return nil
		}
		rm.sm.FreeSlot(slot, allocation)
		return nil
	})
}

// DisconnectTaskExecutor drops the TaskExecutor and its slots; the requirements they served are
// matched elsewhere. Unknown TaskExecutors are ignored. Fenced by token as SendSlotReport, so
// the disconnect of an earlier session's registration cannot drop the current one.
func (rm *ResourceManager) DisconnectTaskExecutor(ctx context.Context, token jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error {
	return rm.call(ctx, func() error {
		if err := rm.fenced(token); err != nil {
			return err
		}
		if _, ok := rm.taskExecutors[taskExecutor]; !ok {
			rm.log.Debug("disconnect of an unknown TaskExecutor", "taskExecutor", taskExecutor, "cause", cause.Err())
			return nil
		}
		rm.log.Info("disconnecting TaskExecutor", "taskExecutor", taskExecutor, "cause", cause.Err())
		rm.unregisterTaskExecutor(taskExecutor)
		return nil
	})
}

// unregisterTaskExecutor forgets a registered TaskExecutor and its slots and stops monitoring it.
// On the loop.
func (rm *ResourceManager) unregisterTaskExecutor(id jobgraph.ResourceID) {
	delete(rm.taskExecutors, id)
	rm.teHeartbeats.Unmonitor(id)
	rm.sm.UnregisterTaskExecutor(id)
}

// ---------------------------------------------------------------------------------------------
// JobMasters

// RegisterJobMaster records the JobMaster of job: its fencing token, ResourceID and the address
// slots are offered at. A registration with a new token replaces the earlier JobMaster and clears
// the job's requirements until the new one declares. It returns the ResourceManagerID, which
// fences DisconnectResourceManager on the JobMaster.
//
// With Config.HA, the token is checked against the job's leader as the job's leader retrieval
// reports it (Flink's ResourceManager.registerJobMaster with its JobLeaderIdService): a session
// that was the job's confirmed leader and lost leadership, or any session other than the
// confirmed leader while that leader is the registered JobMaster, is refused with a
// *rpc.FencingError (rpc.ErrFencingTokenMismatch) and changes nothing. Where we differ: Flink
// waits until the leader is known and refuses every other session; our JobMaster registers before
// its leadership is confirmed (and does not retry a refused registration), so while no leader is
// confirmed a session not seen losing leadership registers. It fails when the job's leader
// retrieval cannot start. Without Config.HA the latest registration wins.
func (rm *ResourceManager) RegisterJobMaster(ctx context.Context, token jobgraph.JobMasterID, jobMaster jobgraph.ResourceID, address string, job jobgraph.JobID) (jobgraph.ResourceManagerID, error) {
	if err := rm.closedErr(); err != nil {
		return jobgraph.ResourceManagerID{}, err
	}
	if job.IsZero() || address == "" {
		return jobgraph.ResourceManagerID{}, fmt.Errorf("%w: JobMaster registration needs a JobID and an address", ErrInvalidRegistration)
	}
	if rm.leaders != nil {
		// Off the loop: starting a retrieval may do I/O.
		if err := rm.leaders.follow(job); err != nil {
			return jobgraph.ResourceManagerID{}, err
		}
	}
	return submit(ctx, rm, func() (jobgraph.ResourceManagerID, error) {
		if err := rm.checkRunning(); err != nil {
			if _, ok := rm.sm.JobMaster(job); !ok {
				rm.forgetJobLeader(job) // followed above for nothing
			}
			return jobgraph.ResourceManagerID{}, err
		}
		old, ok := rm.sm.JobMaster(job)
		if rm.leaders != nil {
			// Checked on the loop, against what the retrieval said by now: a leader change seen
			// between follow and here counts.
			if expected, stale := rm.leaders.stale(job, token, old.ID); stale {
				rm.log.Info("refusing the registration of a JobMaster of a stale session", "job", job, "jobMasterID", token, "leader", expected)
				return jobgraph.ResourceManagerID{}, &rpc.FencingError{
					Endpoint: fmt.Sprintf("ResourceManager %s (leader of job %s)", rm.cfg.Address, job),
					Expected: expected.String(),
					Got:      token.String(),
				}
			}
		}
		if ok && old.ID != token {
			if rm.log.Enabled(context.Background(), slog.LevelInfo) { // no arguments made unless logged
				rm.log.Info("replacing the JobMaster of job", "job", job, "oldJobMasterID", old.ID, "jobMasterID", token)
			}
		} else if !ok {
			if rm.log.Enabled(context.Background(), slog.LevelInfo) { // no arguments made unless logged
				rm.log.Info("registered JobMaster", "job", job, "jobMasterID", token, "address", address)
			}
		}
		if ok && old.ResourceID != jobMaster {
			rm.forgetJobMaster(old.ResourceID)
		}
		rm.sm.RegisterJob(job, JobMasterInfo{ID: token, ResourceID: jobMaster, Address: address})
		if jobMaster != "" {
			if reg := rm.jobMasters[jobMaster]; reg != nil && reg.job != job {
				// The same JobMaster registers another job: the earlier one is no longer watched.
				rm.log.Warn("JobMaster registered for another job; no longer monitoring the earlier one", "jobMaster", jobMaster, "job", job, "earlierJob", reg.job)
			}
			reg := &jobMasterRegistration{job: job, token: token, address: address}
			rm.jobMasters[jobMaster] = reg
			rm.jmHeartbeats.Monitor(jobMaster)
			rm.tellJobMaster(reg, rm.blocked.All()) // Flink: registerBlocklistListener
		}
		return rm.id, nil
	})
}

// DeclareRequiredResources replaces the job's requirements and matches them. It fails with
// ErrJobNotRegistered when no JobMaster is registered for the job, with a *rpc.FencingError
// (errors.Is rpc.ErrFencingTokenMismatch) when token is not the registered JobMaster's or rmToken
// is not the current ResourceManagerID (a declaration of a registration with an earlier leader
// session), and with ErrInvalidRequirements for a negative count.
func (rm *ResourceManager) DeclareRequiredResources(ctx context.Context, rmToken jobgraph.ResourceManagerID, token jobgraph.JobMasterID, requirements rpc.ResourceRequirements) error {
	return rm.call(ctx, func() error { return rm.declareRequiredResources(rmToken, token, requirements) })
}

// NotifyRequiredResources implements rpc.ResourceManagerNotifier: DeclareRequiredResources
// queued on the loop without waiting for it.
func (rm *ResourceManager) NotifyRequiredResources(rmToken jobgraph.ResourceManagerID, token jobgraph.JobMasterID, requirements rpc.ResourceRequirements, done func(err error)) {
	// A closed loop answers ErrClosed (wrapping the panic it died of), as call returns it.
	rm.loop.Notify(func() error { return rm.declareRequiredResources(rmToken, token, requirements) }, done)
}

func (rm *ResourceManager) declareRequiredResources(rmToken jobgraph.ResourceManagerID, token jobgraph.JobMasterID, requirements rpc.ResourceRequirements) error {
	if err := rm.fenced(rmToken); err != nil {
		return err
	}
	job := requirements.JobID
	jm, ok := rm.sm.JobMaster(job)
	if !ok {
		return fmt.Errorf("%w: %s", ErrJobNotRegistered, job)
	}
	if err := rm.fenceJobMaster(job, jm, token); err != nil {
		return err
	}
	return rm.sm.DeclareRequirements(job, requirements.Requirements, requirements.TargetAddress)
}

// fenceJobMaster returns an *rpc.FencingError unless token is the JobMasterID of jm, the job's
// registered JobMaster.
func (rm *ResourceManager) fenceJobMaster(job jobgraph.JobID, jm JobMasterInfo, token jobgraph.JobMasterID) error {
	if jm.ID == token {
		return nil
	}
	return &rpc.FencingError{
		Endpoint: fmt.Sprintf("ResourceManager %s (JobMaster of job %s)", rm.cfg.Address, job),
		Expected: jm.ID.String(),
		Got:      token.String(),
	}
}

// DisconnectJobMaster clears the job's requirements and forgets its JobMaster. Slots allocated to
// the job stay so until their TaskExecutors free them. Unknown jobs are ignored. Fenced: when the
// job's registered JobMaster has another JobMasterID than token (a newer session registered), or
// rmToken is not the current ResourceManagerID, it fails with an *rpc.FencingError
// (rpc.ErrFencingTokenMismatch) and changes nothing.
func (rm *ResourceManager) DisconnectJobMaster(ctx context.Context, rmToken jobgraph.ResourceManagerID, token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo) error {
	return rm.call(ctx, func() error { return rm.disconnectJobMaster(rmToken, token, job, cause) })
}

// NotifyJobMasterDisconnected implements rpc.ResourceManagerNotifier: DisconnectJobMaster queued
// on the loop without waiting for it.
func (rm *ResourceManager) NotifyJobMasterDisconnected(rmToken jobgraph.ResourceManagerID, token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo, done func(err error)) {
	rm.loop.Notify(func() error { return rm.disconnectJobMaster(rmToken, token, job, cause) }, done)
}

func (rm *ResourceManager) disconnectJobMaster(rmToken jobgraph.ResourceManagerID, token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo) error {
	if err := rm.fenced(rmToken); err != nil {
		return err
	}
	jm, ok := rm.sm.JobMaster(job)
	if !ok {
		return nil
	}
	if err := rm.fenceJobMaster(job, jm, token); err != nil {
		return err
	}
	rm.forgetJobMaster(jm.ResourceID)
	if rm.sm.UnregisterJob(job) {
		if rm.log.Enabled(context.Background(), slog.LevelInfo) { // no arguments made unless logged
			rm.log.Info("disconnected JobMaster", "job", job, "cause", cause.Err())
		}
	}
	rm.forgetJobLeader(job)
	return nil
}

// jobLeaderLostLeadership disconnects job's registered JobMaster if its session is old, which
// the job's leader retrieval reported losing leadership: its requirements are cleared (its slots
// stay until their TaskExecutors free them), it is no longer monitored, and it is told
// (DisconnectResourceManager with ErrJobLeaderLostLeadership). The job's leader is still
// followed, so old stays refused. A JobMaster of another session is left alone (the new leader
// registered first). Flink: ResourceManager.jobLeaderLostLeadership. On the loop.
func (rm *ResourceManager) jobLeaderLostLeadership(job jobgraph.JobID, old jobgraph.JobMasterID) {
	jm, ok := rm.sm.JobMaster(job)
	if !rm.leading || !ok || jm.ID != old {
		return
	}
	cause := fmt.Errorf("%w: JobMaster %s of job %s (session %s)", ErrJobLeaderLostLeadership, jm.ResourceID, job, old)
	rm.log.Info("the JobMaster's session lost leadership; disconnecting it", "job", job, "jobMasterID", old, "jobMaster", jm.ResourceID)
	reg := rm.jobMasters[jm.ResourceID]
	if reg == nil || reg.job != job {
		reg = &jobMasterRegistration{job: job, token: old, address: jm.Address}
	}
	if jm.ResourceID != "" {
		rm.forgetJobMaster(jm.ResourceID)
	}
	rm.sm.UnregisterJob(job)
	rmID := rm.id
	rm.callJobMaster(reg, func(ctx context.Context, gw rpc.JobMasterGateway) error {
		return gw.DisconnectResourceManager(ctx, old, rmID, rpc.Failure(cause))
	}, func(_ rpc.JobMasterGateway, err error) {
		if err != nil && rm.ctx.Err() == nil {
			rm.log.Debug("telling a JobMaster that lost leadership failed", "job", job, "err", err)
		}
	})
}

// forgetJobLeader stops following job's leader once it has no JobMaster, the retrieval stopped
// off the loop. On the loop.
func (rm *ResourceManager) forgetJobLeader(job jobgraph.JobID) {
	if rm.leaders != nil {
		rm.leaders.forget(job, rm.spawn)
	}
}

// forgetJobMaster stops monitoring the JobMaster jobMaster. On the loop.
func (rm *ResourceManager) forgetJobMaster(jobMaster jobgraph.ResourceID) {
	delete(rm.jobMasters, jobMaster)
	rm.jmHeartbeats.Unmonitor(jobMaster)
}

// ---------------------------------------------------------------------------------------------
// Heartbeats

// HeartbeatFromTaskExecutor takes a registered TaskExecutor's heartbeat (its answer to
// HeartbeatFromResourceManager): its heartbeat timeout starts over and its slot report replaces
// what the ResourceManager knows of its slots, as SendSlotReport does (Flink:
// ResourceManager.TaskManagerHeartbeatListener.reportPayload). A heartbeat is a one-way message:
// one from an unknown TaskExecutor, or to a ResourceManager that is not running or does not
// lead, is dropped and nil returned; one whose token is not the current ResourceManagerID (of a
// registration with an earlier leader session) is not applied and fails with an
// *rpc.FencingError; a closed ResourceManager answers ErrClosed.
func (rm *ResourceManager) HeartbeatFromTaskExecutor(ctx context.Context, token jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, report rpc.SlotReport) error {
	return heartbeatErr(rm.call(ctx, func() error {
		if err := rm.fenced(token); err != nil {
			return err
		}
		if rm.teHeartbeats.ReceiveHeartbeat(taskExecutor) {
			if reg := rm.taskExecutors[taskExecutor]; reg != nil {
				reg.lastHeartbeat = time.Now()
			}
			rm.sm.ReportSlotStatus(taskExecutor, report)
		}
		return nil
	}))
}

// HeartbeatFromJobMaster takes a registered JobMaster's heartbeat (its answer to
// HeartbeatFromResourceManager): its heartbeat timeout starts over. Like HeartbeatFromTaskExecutor,
// it drops what it cannot use and returns nil, fails with an *rpc.FencingError for a token of an
// earlier leader session, and with ErrClosed once closed.
func (rm *ResourceManager) HeartbeatFromJobMaster(ctx context.Context, token jobgraph.ResourceManagerID, jobMaster jobgraph.ResourceID) error {
	return heartbeatErr(rm.call(ctx, func() error {
		if err := rm.fenced(token); err != nil {
			return err
		}
		rm.jmHeartbeats.ReceiveHeartbeat(jobMaster)
		return nil
	}))
}

// heartbeatErr keeps ErrClosed and fencing errors and drops every other error of a one-way
// message (ErrNotRunning, not leading).
func heartbeatErr(err error) error {
	if errors.Is(err, ErrClosed) || errors.Is(err, rpc.ErrFencingTokenMismatch) {
		return err
	}
	return nil
}

// requestTaskExecutorHeartbeat asks a registered TaskExecutor for a heartbeat, off the loop; at
// most one request per TaskExecutor is in flight. Its result goes to report. On the loop.
func (rm *ResourceManager) requestTaskExecutorHeartbeat(id jobgraph.ResourceID, report func(error)) {
	reg := rm.taskExecutors[id]
	if reg == nil || reg.heartbeating {
		return
	}
	reg.heartbeating = true
	gw, from := reg.gateway, rm.cfg.ResourceID
	rm.spawn(func() {
		ctx, cancel := rm.requestContext()
		err := gw.HeartbeatFromResourceManager(ctx, from)
		cancel()
		rm.loop.Execute(func() {
			reg.heartbeating = false
			if err != nil && rm.ctx.Err() == nil {
				rm.log.Debug("heartbeat request to a TaskExecutor failed", "taskExecutor", id, "err", err)
			}
			report(err)
		})
	})
}

// taskExecutorHeartbeatTimedOut unregisters a TaskExecutor silent for heartbeat.timeout: its slots
// are no longer handed out, and the requirements they served are matched elsewhere; the
// TaskExecutor is told (see dropTaskExecutor). Flink:
// ResourceManager.TaskManagerHeartbeatListener.notifyHeartbeatTimeout. On the loop.
func (rm *ResourceManager) taskExecutorHeartbeatTimedOut(id jobgraph.ResourceID) {
	reg, ok := rm.taskExecutors[id]
	if !ok || !rm.leading {
		return
	}
	cause := &heartbeat.TimeoutError{Target: "TaskExecutor " + string(id), Timeout: rm.teHeartbeats.Timeout()}
	rm.log.Warn("TaskExecutor heartbeat timed out; unregistering it", "taskExecutor", id, "cause", cause)
	rm.dropTaskExecutor(id, reg, cause)
}

// taskExecutorUnreachable unregisters a TaskExecutor whose last heartbeat.rpc-failure-threshold
// heartbeat requests failed as unreachable, as a timeout does, and tells it. Flink:
// ResourceManager.TaskManagerHeartbeatListener.notifyTargetUnreachable. On the loop.
func (rm *ResourceManager) taskExecutorUnreachable(id jobgraph.ResourceID, last error) {
	reg, ok := rm.taskExecutors[id]
	if !ok || !rm.leading {
		return
	}
	cause := &heartbeat.UnreachableError{Target: "TaskExecutor " + string(id), Failures: rm.teHeartbeats.RPCFailureThreshold(), LastFailure: last.Error()}
	rm.log.Warn("TaskExecutor unreachable; unregistering it", "taskExecutor", id, "cause", cause)
	rm.dropTaskExecutor(id, reg, cause)
}

// dropTaskExecutor unregisters the TaskExecutor id (reg) the heartbeats lost and, when its
// gateway implements rpc.ResourceManagerDisconnector, tells it with cause under the current
// ResourceManagerID, off the loop and best-effort (a failure is logged at debug), so one still
// running registers again at once instead of after its own heartbeat.timeout. A gateway without
// it is not told. Flink: ResourceManager.closeTaskManagerConnection, which calls
// TaskExecutorGateway.disconnectResourceManager. On the loop.
func (rm *ResourceManager) dropTaskExecutor(id jobgraph.ResourceID, reg *taskExecutorRegistration, cause error) {
	rm.unregisterTaskExecutor(id)
	d, ok := reg.gateway.(rpc.ResourceManagerDisconnector)
	if !ok {
		return
	}
	rmID, info := rm.id, rpc.Failure(cause)
	rm.spawn(func() {
		ctx, cancel := rm.requestContext()
		err := d.DisconnectResourceManager(ctx, rmID, info)
		cancel()
		if err != nil && rm.ctx.Err() == nil {
			rm.log.Debug("telling a lost TaskExecutor failed", "taskExecutor", id, "err", err)
		}
	})
}

// requestJobMasterHeartbeat asks a registered JobMaster for a heartbeat, off the loop,
// connecting to its address first if need be; at most one request per JobMaster is in flight. On
// the loop. Its result goes to report.
func (rm *ResourceManager) requestJobMasterHeartbeat(id jobgraph.ResourceID, report func(error)) {
	reg := rm.jobMasters[id]
	if reg == nil || reg.heartbeating {
		return
	}
	reg.heartbeating = true
	from := rm.cfg.ResourceID
	rm.callJobMaster(reg, func(ctx context.Context, gw rpc.JobMasterGateway) error {
		return gw.HeartbeatFromResourceManager(ctx, from)
	}, func(gw rpc.JobMasterGateway, err error) {
		rm.loop.Execute(func() {
			reg.heartbeating = false
			if reg.gateway == nil {
				reg.gateway = gw
			}
			if err != nil && rm.ctx.Err() == nil {
				rm.log.Debug("heartbeat request to a JobMaster failed", "jobMaster", id, "job", reg.job, "err", err)
			}
			report(err)
		})
	})
}

// requestContext bounds one outgoing call by Config.RequestTimeout and Close; over the
// in-process LocalService by Close only, with no timer (see Config.RequestTimeout). On any
// goroutine.
func (rm *ResourceManager) requestContext() (context.Context, context.CancelFunc) {
	if rm.inProcess {
		return rm.ctx, func() {}
	}
	return context.WithTimeout(rm.ctx, rm.cfg.RequestTimeout)
}

// spawn runs fn on a goroutine the ResourceManager owns (an idle one of workers, or a new one),
// which Close waits for. On the loop.
func (rm *ResourceManager) spawn(fn func()) {
	rm.wg.Add(1)
	rm.workers.Go(func() {
		defer rm.wg.Done()
		fn()
	})
}

// callJobMaster runs call against reg's JobMaster on a goroutine the ResourceManager owns, bounded
// by the request timeout, connecting to its address first when no gateway is known yet; done then
// gets the gateway (nil if connecting failed) and call's error, off the loop. On the loop.
func (rm *ResourceManager) callJobMaster(reg *jobMasterRegistration, call func(context.Context, rpc.JobMasterGateway) error, done func(rpc.JobMasterGateway, error)) {
	gw, address := reg.gateway, reg.address
	rm.spawn(func() {
		ctx, cancel := rm.requestContext()
		defer cancel()
		var err error
		if gw == nil {
			gw, err = rpc.Connect[rpc.JobMasterGateway](ctx, rm.cfg.RPC, address)
		}
		if err == nil {
			err = call(ctx, gw)
		}
		done(gw, err)
	})
}

// jobMasterHeartbeatTimedOut disconnects a JobMaster silent for heartbeat.timeout: its job's
// requirements are cleared (the job's slots stay until their TaskExecutors free them), and the
// JobMaster is told, so that one still alive registers again. Flink:
// ResourceManager.JobManagerHeartbeatListener.notifyHeartbeatTimeout. On the loop.
func (rm *ResourceManager) jobMasterHeartbeatTimedOut(id jobgraph.ResourceID) {
	reg := rm.jobMasters[id]
	if reg == nil || !rm.leading {
		return
	}
	cause := &heartbeat.TimeoutError{Target: fmt.Sprintf("JobMaster %s of job %s", id, reg.job), Timeout: rm.jmHeartbeats.Timeout()}
	rm.log.Warn("JobMaster heartbeat timed out; disconnecting it", "jobMaster", id, "job", reg.job, "cause", cause)
	rm.dropJobMaster(id, reg, cause)
}

// jobMasterUnreachable disconnects a JobMaster whose last heartbeat.rpc-failure-threshold
// heartbeat requests failed as unreachable, as a timeout does. Flink:
// ResourceManager.JobManagerHeartbeatListener.notifyTargetUnreachable. On the loop.
func (rm *ResourceManager) jobMasterUnreachable(id jobgraph.ResourceID, last error) {
	reg := rm.jobMasters[id]
	if reg == nil || !rm.leading {
		return
	}
	cause := &heartbeat.UnreachableError{Target: fmt.Sprintf("JobMaster %s of job %s", id, reg.job), Failures: rm.jmHeartbeats.RPCFailureThreshold(), LastFailure: last.Error()}
	rm.log.Warn("JobMaster unreachable; disconnecting it", "jobMaster", id, "job", reg.job, "cause", cause)
	rm.dropJobMaster(id, reg, cause)
}

// dropJobMaster disconnects the registered JobMaster id (reg) the heartbeats lost: its job's
// requirements are cleared and the JobMaster is told, with cause. On the loop.
func (rm *ResourceManager) dropJobMaster(id jobgraph.ResourceID, reg *jobMasterRegistration, cause error) {
	delete(rm.jobMasters, id)
	if jm, ok := rm.sm.JobMaster(reg.job); ok && jm.ResourceID == id {
		rm.sm.UnregisterJob(reg.job)
		rm.forgetJobLeader(reg.job)
	}
	token, rmID := reg.token, rm.id
	rm.callJobMaster(reg, func(ctx context.Context, gw rpc.JobMasterGateway) error {
		return gw.DisconnectResourceManager(ctx, token, rmID, rpc.Failure(cause))
	}, func(_ rpc.JobMasterGateway, err error) {
		if err != nil && rm.ctx.Err() == nil {
			rm.log.Debug("telling a lost JobMaster failed", "jobMaster", id, "err", err)
		}
	})
}

// ---------------------------------------------------------------------------------------------
// Slot requests

// requestSlot is the SlotAllocator: it asks the TaskExecutor for the slot off the loop and posts
// the answer back. Runs on the loop.
func (rm *ResourceManager) requestSlot(req SlotRequest) {
	te, ok := rm.taskExecutors[req.Slot.ResourceID]
	if !ok {
		panic(fmt.Sprintf("resourcemanager: slot manager requested slot %v of unregistered TaskExecutor", req.Slot))
	}
	gw, rmID := te.gateway, rm.id
	if n, ok := gw.(rpc.TaskExecutorNotifier); ok { // the in-process TaskExecutor: no goroutine, no wait
		n.NotifyRequestSlot(req.Slot, req.Job, req.Allocation, req.Profile, req.JobMasterAddress, req.JobMasterID, rmID, func(err error) {
			rm.loop.Execute(func() { rm.slotRequestDone(req, rmID, err) })
		})
		return
	}
	rm.spawn(func() {
		ctx, cancel := rm.requestContext()
		err := gw.RequestSlot(ctx, req.Slot, req.Job, req.Allocation, req.Profile, req.JobMasterAddress, req.JobMasterID, rmID)
		cancel()
		rm.loop.Execute(func() { rm.slotRequestDone(req, rmID, err) })
	})
}

// slotRequestDone applies the answer to a RequestSlot made under the fencing token rmID; the
// answer to one of an earlier leader session is dropped. On the loop.
func (rm *ResourceManager) slotRequestDone(req SlotRequest, rmID jobgraph.ResourceManagerID, err error) {
	if !rm.leading || rmID != rm.id {
		rm.log.Debug("dropping the answer to a slot request of an earlier leader session", "slot", req.Slot, "resourceManagerID", rmID)
		return
	}
	if !rm.sm.CompleteAllocation(req.Slot, req.Allocation, err) || rm.retryScheduled {
		return
	}
	if rm.cfg.SlotRequestRetryDelay < 0 {
		rm.sm.CheckResourceRequirements()
		return
	}
	rm.retryScheduled = true
	rm.loop.Schedule(rm.cfg.SlotRequestRetryDelay, func() {
		rm.retryScheduled = false
		rm.sm.CheckResourceRequirements()
	})
}

// ---------------------------------------------------------------------------------------------
// Observation (for tests and status pages). Each reads the state on the loop; after Close they
// return zero values.

// NumRegisteredTaskExecutors returns how many TaskExecutors are registered.
func (rm *ResourceManager) NumRegisteredTaskExecutors() int {
	return observe(rm, (*SlotManager).NumRegisteredTaskExecutors)
}

// NumRegisteredSlots returns how many slots the registered TaskExecutors have.
func (rm *ResourceManager) NumRegisteredSlots() int {
	return observe(rm, (*SlotManager).NumRegisteredSlots)
}

// NumFreeSlots returns how many slots are free.
func (rm *ResourceManager) NumFreeSlots() int { return observe(rm, (*SlotManager).NumFreeSlots) }

// NumPendingSlots returns how many slots have a RequestSlot in flight.
func (rm *ResourceManager) NumPendingSlots() int { return observe(rm, (*SlotManager).NumPendingSlots) }

// NumAllocatedSlots returns how many slots are allocated (confirmed by their TaskExecutor, or
// reported allocated); slots with a request in flight are not counted.
func (rm *ResourceManager) NumAllocatedSlots() int {
	return observe(rm, (*SlotManager).NumAllocatedSlots)
}

// Requirements returns the job's declared requirements, one line per profile in matching order
// (specific profiles, larger first, UNKNOWN last); nil for an unknown job.
func (rm *ResourceManager) Requirements(job jobgraph.JobID) []rpc.ResourceRequirement {
	return observe(rm, func(sm *SlotManager) []rpc.ResourceRequirement { return sm.Requirements(job) })
}

// MissingResources returns what the job's pending and allocated slots do not cover of its
// requirements; nil when nothing is missing.
func (rm *ResourceManager) MissingResources(job jobgraph.JobID) []rpc.ResourceRequirement {
	return observe(rm, func(sm *SlotManager) []rpc.ResourceRequirement { return sm.MissingResources(job) })
}

// JobMaster returns the JobMaster registered for job (its JobMasterID, ResourceID and address),
// and false when none is.
func (rm *ResourceManager) JobMaster(job jobgraph.JobID) (JobMasterInfo, bool) {
	type found struct {
		jm JobMasterInfo
		ok bool
	}
	f := observe(rm, func(sm *SlotManager) found { jm, ok := sm.JobMaster(job); return found{jm, ok} })
	return f.jm, f.ok
}

// Slots lists every slot the ResourceManager tracks (see SlotManager.Slots).
func (rm *ResourceManager) Slots() []SlotInfo { return observe(rm, (*SlotManager).Slots) }

func observe[T any](rm *ResourceManager, fn func(*SlotManager) T) T {
	v, _ := mainloop.Submit(context.Background(), rm.loop, func() (T, error) { return fn(rm.sm), nil })
	return v
}
