package dispatcher

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
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/mainloop"
	"github.com/jobgraph/jobgraph/rpc"
)

// DefaultAddress is RunnerConfig.Address's default: where the leading Dispatcher is confirmed
// (and registered, with RunnerConfig.RPC).
const DefaultAddress = "dispatcher"

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	// Dispatcher is what every session's StandaloneDispatcher is built from (New's checks
	// apply); the Runner sets its LeaderElection, LeaderSession, RecoveredJobs and
	// RecoveredDirtyResults, which must be unset here.
	Dispatcher Config
	// LeaderElection is the election the Runner takes part in; default
	// Dispatcher.HA.DispatcherLeaderElection().
	LeaderElection ha.LeaderElection
	// Address is confirmed to the election as the leader's address with each session; default
	// DefaultAddress.
	Address string
	// RPC, if set, gets the leading session's Dispatcher registered at Address while it leads
	// (after its recovery, before ConfirmLeadership), and unregistered before it closes, so that
	// a client that learned Address from ha.Services.DispatcherLeaderRetrieval reaches the
	// leader with rpc.Connect[rpc.DispatcherGateway]. Nil: nothing is registered.
	RPC rpc.Service
	// FatalErrorHandler hears what the Runner cannot recover from: the election's error
	// (ha.LeaderContender.HandleError), a failed recovery of a session, a panic on the Runner's
	// main loop (an error wrapping a *jobgraph.PanicError; the Runner then answers every call
	// with ErrClosed wrapping it), and what a session's Dispatcher reports to its
	// Config.FatalErrorHandler (the Runner sets that one; a handler in Dispatcher is not
	// called). It is called on the
	// Runner's goroutines and must not call back into the Runner synchronously. Default: the
	// error is logged at Error level. Flink's FatalErrorHandler terminates the JobManager
	// process; here the host decides (Close the Runner so another process leads, say).
	FatalErrorHandler func(err error)
}

// Runner runs the cluster's Dispatcher under the Dispatcher leader election: for each leader
// session granted it recovers the jobs from the HA stores and runs them in a StandaloneDispatcher
// fenced by that session; on revocation it closes that Dispatcher. Flink: DefaultDispatcherRunner
// with SessionDispatcherLeaderProcess.
//
// # Sessions
//
// On a grant the Runner reads, off its main loop, the ExecutionPlanStore (JobIDs, then Get of each
// job that has no dirty result) and the JobResultStore's DirtyResults, strictly after the previous
// session's Dispatcher has fully closed (its JobMasters included): the work of successive
// sessions runs one after another (Flink's previousDispatcherLeaderProcessTerminationFuture). If
// the session is still the current one when the reads are done, it builds the session's
// StandaloneDispatcher (Config.LeaderElection and LeaderSession set to the session,
// RecoveredJobs to the plans read, RecoveredDirtyResults to the dirty results: each of those jobs
// gets its global cleanup only), registers it on RPC, and confirms the session with Address.
// If the session ended first, nothing is started: no Dispatcher, no runner, no JobMaster, no
// confirmation; the store calls of a session see their context canceled when it ends. A
// recovered plan is not stored again. A failed read or a failed recovered job start goes to
// FatalErrorHandler; the session then has no Dispatcher, and calls answer that error until the
// session ends.
//
// On a revocation (and on HandleError, after which the Runner cannot know whether it still
// leads) the session's Dispatcher is unregistered and closed: its jobs end SUSPENDED and nothing
// of their HA data is cleaned, so the next leader, here or in another process, recovers them.
//
// # Calls
//
// The Runner is a Dispatcher: each call goes to the current session's Dispatcher, waiting
// (within ctx) while that session recovers. Without a current session a call fails at once with
// an error wrapping ErrNotLeader; so does a call that the session's Dispatcher could not answer
// because the session ended meanwhile (its ErrClosed). RequestJobResult of a job that ended
// SUSPENDED because its session ended answers such an error too, not the SUSPENDED result: the
// job is not over, the next leader runs it on, and a Flink client in that place retries against
// the new leader (RestClusterClient) and gets the job's real result. Only Close makes
// RequestJobResult answer SUSPENDED, as StandaloneDispatcher.Close does. AwaitLeadership waits
// for leadership instead; the MiniCluster's methods use it (as Flink's MiniCluster waits for the
// leader's gateway).
//
// The Runner's state lives on its own main loop, which never waits on a store, the election or a
// Dispatcher. Methods are safe for concurrent use. Start it once, Close it once.
type Runner struct {
	cfg      RunnerConfig
	election ha.LeaderElection
	log      *slog.Logger
	loop     *mainloop.Loop

	// leading is the current session's Dispatcher while the Runner is not closed and that
	// session has one, else nil: stored by notify on the loop with every change of those, and
	// cleared when the loop dies. While no election event is pending (pending, see event),
	// leader answers from it without a trip to the loop; a session that ends right after is met
	// as one that ends right after the loop answered.
	leading atomic.Pointer[StandaloneDispatcher]
	pending atomic.Int32

	// Owned by loop.
	current *session       // the session now granted; nil when not leading
	changed chan struct{}  // closed (and replaced) when current changes or gets its Dispatcher
	ops     mainloop.Chain // the sessions' operations, one after another
	closed  bool
	// closing is the Dispatcher of the session Close ended, while it closes: calls made during
	// Close still reach it (a result waiter gets SUSPENDED), as StandaloneDispatcher answers
	// during its own Close.
	closing *StandaloneDispatcher

	fatalMu sync.Mutex
	fatal   error // the first error given to FatalErrorHandler

	background sync.WaitGroup // the sequenced operations; Close waits for them
}

// session is one leader session granted to the Runner.
type session struct {
	id ha.SessionID
	// ctx bounds the session's store calls; canceled when the session ends.
	ctx    context.Context
	cancel context.CancelFunc
	// Set on the loop: the session's Dispatcher once recovered, or why it has none.
	dispatcher *StandaloneDispatcher
	err        error
}

var _ Dispatcher = (*Runner)(nil)
var _ ha.LeaderContender = (*Runner)(nil)

// NewRunner checks cfg and returns a Runner that takes no part in the election until Start.
// Errors: ErrInvalidConfig for what New refuses in cfg.Dispatcher, and for recovery or fencing
// fields set there.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	d := cfg.Dispatcher
	if err := d.validate(); err != nil {
		return nil, err
	}
	switch {
	case d.LeaderElection != nil:
		return nil, fmt.Errorf("%w: RunnerConfig.Dispatcher.LeaderElection is set by the Runner; use RunnerConfig.LeaderElection", ErrInvalidConfig)
	case d.LeaderSession != ha.SessionID{}:
		return nil, fmt.Errorf("%w: RunnerConfig.Dispatcher.LeaderSession is set by the Runner", ErrInvalidConfig)
	case len(d.RecoveredJobs) > 0 || len(d.RecoveredDirtyResults) > 0:
		return nil, fmt.Errorf("%w: RunnerConfig.Dispatcher.RecoveredJobs and RecoveredDirtyResults are read from the HA stores by the Runner", ErrInvalidConfig)
	}
	if cfg.LeaderElection == nil {
		cfg.LeaderElection = d.HA.DispatcherLeaderElection()
	}
	if cfg.Address == "" {
		cfg.Address = DefaultAddress
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	r := &Runner{
		cfg:      cfg,
		election: cfg.LeaderElection,
		log:      log,
		loop:     mainloop.NewWithClosedError("dispatcher-runner", ErrClosed),
		changed:  make(chan struct{}),
	}
	r.loop.SetPanicHandler(func(err *jobgraph.PanicError) {
		r.leading.Store(nil) // the calls meet the dead loop's error, as before it died they met its answers
		r.log.Error("the Dispatcher runner's main loop panicked", "panic", err.Value, "stack", string(err.Stack))
		r.reportFatal(fmt.Errorf("dispatcher: %w", err))
	})
	return r, nil
}

// Start joins the election; the Runner may be granted leadership at once (on another goroutine).
// Errors: the election's Start error; ErrClosed after Close.
func (r *Runner) Start() error {
	closed, err := mainloop.Submit(context.Background(), r.loop, func() (bool, error) { return r.closed, nil })
	if err != nil {
		return err
	}
	if closed {
		return ErrClosed
	}
	return r.election.Start(r)
}

// GrantLeadership implements ha.LeaderContender.
func (r *Runner) GrantLeadership(id ha.SessionID) {
	r.event(func() { r.onGrant(id) })
}

// RevokeLeadership implements ha.LeaderContender.
func (r *Runner) RevokeLeadership() {
	r.event(func() {
		if s := r.current; s != nil {
			r.log.Info("Dispatcher leadership revoked: closing the session's Dispatcher", "session", s.id)
		}
		r.endSession()
	})
}

// HandleError implements ha.LeaderContender: the error goes to FatalErrorHandler and the current
// session ends as on a revocation, since the Runner can no longer know that it leads.
func (r *Runner) HandleError(err error) {
	r.event(func() {
		if r.closed {
			return
		}
		r.endSession()
		r.reportFatal(fmt.Errorf("dispatcher: the Dispatcher leader election failed: %w", err))
	})
}

// event posts an election event to the loop, counted in pending until it has run: while one is
// pending leader asks the loop, so a call made after the event was delivered sees its effect, as
// a call queued behind it on the loop does.
func (r *Runner) event(fn func()) {
	r.pending.Add(1)
	if !r.loop.Execute(func() {
		defer r.pending.Add(-1)
		fn()
	}) {
		r.pending.Add(-1)
	}
}

// reportFatal records err and hands it to FatalErrorHandler, off the loop. On the loop, or on a
// goroutine of a session's Dispatcher before that Dispatcher's Close returned (so before Close
// waits for r.background): err is recorded before reportFatal returns.
func (r *Runner) reportFatal(err error) {
	r.fatalMu.Lock()
	if r.fatal == nil {
		r.fatal = err
	}
	r.fatalMu.Unlock()
	if h := r.cfg.FatalErrorHandler; h != nil {
		r.background.Go(func() { h(err) })
		return
	}
	r.log.Error("fatal error of the Dispatcher runner", "err", err)
}

// FatalError returns the first error the Runner gave FatalErrorHandler, or nil.
func (r *Runner) FatalError() error {
	r.fatalMu.Lock()
	defer r.fatalMu.Unlock()
	return r.fatal
}

// notify wakes everyone waiting for the session to change. On the loop.
func (r *Runner) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
	var d *StandaloneDispatcher
	if !r.closed && r.current != nil {
		d = r.current.dispatcher
	}
	r.leading.Store(d)
}

// sequence runs op off the loop once every operation sequenced before it has finished. On the
// loop.
func (r *Runner) sequence(op func()) { r.ops.Then(&r.background, op) }

// onGrant starts a session: the previous one ends, and the new one's recovery is sequenced after
// its close. On the loop.
func (r *Runner) onGrant(id ha.SessionID) {
	if r.closed {
		return
	}
	r.endSession() // a grant without a revocation in between: the old session ends first
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{id: id, ctx: ctx, cancel: cancel}
	r.current = s
	r.notify()
	r.log.Info("Dispatcher leadership granted: recovering the jobs", "session", id)
	r.sequence(func() { r.recoverSession(s) })
}

// endSession detaches the current session and closes its Dispatcher in the operation chain; a
// session still recovering sees that it is no longer current and starts nothing. On the loop.
func (r *Runner) endSession() {
	s := r.current
	if s == nil {
		return
	}
	r.current = nil
	s.cancel()
	r.notify()
	if d := s.dispatcher; d != nil {
		r.sequence(func() { r.closeDispatcher(d) })
	}
}

// closeDispatcher unregisters and closes a session's Dispatcher; in the operation chain.
func (r *Runner) closeDispatcher(d *StandaloneDispatcher) {
	if r.cfg.RPC != nil {
		r.cfg.RPC.Unregister(r.cfg.Address)
	}
	if err := d.Close(); err != nil {
		r.log.Warn("closing the Dispatcher of an ended session", "err", err)
	}
}

// recoverSession reads the stores and builds the session's Dispatcher if the session is still
// current; in the operation chain, so after the previous session's Dispatcher has closed.
func (r *Runner) recoverSession(s *session) {
	if s.ctx.Err() != nil {
		return // ended before its turn
	}
	plans, dirty, err := r.read(s.ctx)
	if err == nil && !r.isCurrent(s) {
		r.log.Info("Dispatcher leadership ended during recovery: nothing started", "session", s.id)
		return
	}
	var d *StandaloneDispatcher
	if err == nil {
		cfg := r.cfg.Dispatcher
		cfg.LeaderElection, cfg.LeaderSession = r.election, s.id
		cfg.FatalErrorHandler = r.reportFatal
		cfg.RecoveredJobs, cfg.RecoveredDirtyResults = plans, dirty
		d, err = New(cfg)
	}
	if err != nil {
		if s.ctx.Err() != nil || errors.Is(err, ErrNotLeader) {
			r.log.Info("Dispatcher leadership ended during recovery: nothing started", "session", s.id, "err", err)
			return
		}
		err = fmt.Errorf("dispatcher: recovering the jobs of leader session %s: %w", s.id, err)
		r.loop.Execute(func() {
			if r.current == s {
				s.err = err
				r.notify()
				r.reportFatal(err)
			}
		})
		return
	}
	installed, _ := mainloop.Submit(context.Background(), r.loop, func() (bool, error) {
		if r.current != s {
			return false, nil
		}
		s.dispatcher = d
		r.notify()
		return true, nil
	})
	if !installed {
		// Ended while the Dispatcher was built: it closes here, before the chain goes on.
		if err := d.Close(); err != nil {
			r.log.Warn("closing the Dispatcher of an ended session", "err", err)
		}
		return
	}
	if r.cfg.RPC != nil {
		if err := r.cfg.RPC.Register(r.cfg.Address, d); err != nil {
			r.log.Warn("registering the leading Dispatcher on the RPC service", "address", r.cfg.Address, "err", err)
		}
	}
	// The election ignores a confirmation of a session that is no longer current.
	r.election.ConfirmLeadership(s.id, r.cfg.Address)
	r.log.Info("Dispatcher leadership confirmed", "session", s.id, "address", r.cfg.Address,
		"recovered", len(plans), "dirty", len(dirty))
}

// isCurrent reports whether s is still the current session (false once the loop closed).
func (r *Runner) isCurrent(s *session) bool {
	ok, _ := mainloop.Submit(context.Background(), r.loop, func() (bool, error) { return r.current == s, nil })
	return ok
}

// read returns the stored plans of the jobs without a dirty result, and the dirty results.
func (r *Runner) read(ctx context.Context) ([]*jobgraph.JobGraph, []jobgraph.JobResult, error) {
	h := r.cfg.Dispatcher.HA
	dirty, err := h.JobResultStore().DirtyResults(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the JobResultStore's dirty results: %w", err)
	}
	done := make(map[jobgraph.JobID]bool, len(dirty))
	for _, res := range dirty {
		done[res.JobID] = true
	}
	ids, err := h.ExecutionPlanStore().JobIDs(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the ExecutionPlanStore: %w", err)
	}
	plans := make([]*jobgraph.JobGraph, 0, len(ids))
	for _, id := range ids {
		if done[id] {
			continue // cleanup only
		}
		g, err := h.ExecutionPlanStore().Get(ctx, id)
		if errors.Is(err, ha.ErrNotFound) {
			continue // removed since it was listed: its job reached a terminal state
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading the plan of job %s: %w", id, err)
		}
		plans = append(plans, g)
	}
	return plans, dirty, nil
}

// leader returns the current session's Dispatcher, waiting within ctx while it recovers; with
// await, also while the Runner has no session. Errors: ErrNotLeader (without await), the
// session's recovery error, ErrClosed, ctx's.
func (r *Runner) leader(ctx context.Context, await bool) (*StandaloneDispatcher, error) {
	type snap struct {
		d       *StandaloneDispatcher
		changed chan struct{}
	}
	if r.pending.Load() == 0 { // before leading: an event delivered before this call is seen
		if d := r.leading.Load(); d != nil {
			return d, nil
		}
	}
	for {
		s, err := mainloop.Submit(ctx, r.loop, func() (snap, error) {
			switch {
			case r.closed && r.closing != nil:
				return snap{d: r.closing}, nil
			case r.closed:
				return snap{}, ErrClosed
			case r.current == nil && !await:
				return snap{}, fmt.Errorf("%w: this process does not hold the Dispatcher's leadership", ErrNotLeader)
			case r.current != nil && r.current.dispatcher != nil:
				return snap{d: r.current.dispatcher}, nil
			case r.current != nil && r.current.err != nil:
				return snap{}, r.current.err
			}
			return snap{changed: r.changed}, nil
		})
		if err != nil {
			return nil, err
		}
		if s.d != nil {
			return s.d, nil
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			if await {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("dispatcher: waiting for the recovery of the leader session: %w", ctx.Err())
		}
	}
}

// AwaitLeadership waits until this Runner leads with a recovered Dispatcher, or ctx ends.
// Errors: ctx's; ErrClosed; the current session's recovery error.
func (r *Runner) AwaitLeadership(ctx context.Context) error {
	_, err := r.leader(ctx, true)
	return err
}

// deposed maps the error of a call that the session's Dispatcher d could not answer because it
// closed with its session to one wrapping ErrNotLeader; other errors pass.
func (r *Runner) deposed(err error) error {
	if err == nil || !errors.Is(err, ErrClosed) || errors.Is(err, ErrNotLeader) {
		return err
	}
	closed, lerr := mainloop.Submit(context.Background(), r.loop, func() (bool, error) { return r.closed, nil })
	if lerr != nil || closed {
		return err
	}
	return fmt.Errorf("%w: the leader session ended during the call (%v)", ErrNotLeader, err)
}

// SubmitJob submits g to the leading session's Dispatcher; see StandaloneDispatcher.SubmitJob.
// Errors also: ErrNotLeader (see Runner), ErrClosed.
func (r *Runner) SubmitJob(ctx context.Context, g *jobgraph.JobGraph) error {
	d, err := r.leader(ctx, false)
	if err != nil {
		return err
	}
	return r.deposed(d.SubmitJob(ctx, g))
}

// ReportJobClientHeartbeat tells the leading session's Dispatcher that the job's client is
// alive until expires; see StandaloneDispatcher.ReportJobClientHeartbeat. Errors also:
// ErrNotLeader (see Runner), ErrClosed.
func (r *Runner) ReportJobClientHeartbeat(ctx context.Context, id jobgraph.JobID, expires time.Time) error {
	d, err := r.leader(ctx, false)
	if err != nil {
		return err
	}
	return r.deposed(d.ReportJobClientHeartbeat(ctx, id, expires))
}

// CancelJob cancels the job on the leading session's Dispatcher; see StandaloneDispatcher.CancelJob.
func (r *Runner) CancelJob(ctx context.Context, id jobgraph.JobID) error {
	d, err := r.leader(ctx, false)
	if err != nil {
		return err
	}
	return r.deposed(d.CancelJob(ctx, id))
}

// RequestJobStatus asks the leading session's Dispatcher; see StandaloneDispatcher.RequestJobStatus.
func (r *Runner) RequestJobStatus(ctx context.Context, id jobgraph.JobID) (jobgraph.JobStatus, error) {
	d, err := r.leader(ctx, false)
	if err != nil {
		return 0, err
	}
	st, err := d.RequestJobStatus(ctx, id)
	return st, r.deposed(err)
}

// RequestJob asks the leading session's Dispatcher; see StandaloneDispatcher.RequestJob.
func (r *Runner) RequestJob(ctx context.Context, id jobgraph.JobID) (*executiongraph.ArchivedExecutionGraph, error) {
	d, err := r.leader(ctx, false)
	if err != nil {
		return nil, err
	}
	a, err := d.RequestJob(ctx, id)
	return a, r.deposed(err)
}

// RequestJobResult waits for the job's result on the leading session's Dispatcher; see
// StandaloneDispatcher.RequestJobResult. A job suspended because the session ended answers an
// error wrapping ErrNotLeader, not its SUSPENDED result (see Runner); after Close, SUSPENDED.
func (r *Runner) RequestJobResult(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error) {
	d, err := r.leader(ctx, false)
	if err != nil {
		return nil, err
	}
	res, err := d.RequestJobResult(ctx, id)
	if err != nil {
		return nil, r.deposed(err)
	}
	if res.Status == jobgraph.JobStatusSuspended {
		closed, lerr := mainloop.Submit(context.Background(), r.loop, func() (bool, error) { return r.closed, nil })
		if lerr == nil && !closed {
			return nil, fmt.Errorf("%w: job %s was suspended: its leader session ended, and the next leader runs it on", ErrNotLeader, id)
		}
	}
	return res, nil
}

// ListJobs lists the leading session Dispatcher's jobs; see StandaloneDispatcher.ListJobs.
func (r *Runner) ListJobs(ctx context.Context) ([]rpc.JobStatusMessage, error) {
	d, err := r.leader(ctx, false)
	if err != nil {
		return nil, err
	}
	l, err := d.ListJobs(ctx)
	return l, r.deposed(err)
}

// TriggerSavepoint asks the leading session's Dispatcher; see StandaloneDispatcher.TriggerSavepoint.
func (r *Runner) TriggerSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (string, error) {
	d, err := r.leader(ctx, false)
	if err != nil {
		return "", err
	}
	p, err := d.TriggerSavepoint(ctx, id, targetDirectory)
	return p, r.deposed(err)
}

// StopWithSavepoint asks the leading session's Dispatcher; see StandaloneDispatcher.StopWithSavepoint.
func (r *Runner) StopWithSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (string, error) {
	d, err := r.leader(ctx, false)
	if err != nil {
		return "", err
	}
	p, err := d.StopWithSavepoint(ctx, id, targetDirectory)
	return p, r.deposed(err)
}

// TriggerCheckpoint asks the leading session's Dispatcher; see StandaloneDispatcher.TriggerCheckpoint.
func (r *Runner) TriggerCheckpoint(ctx context.Context, id jobgraph.JobID) (checkpoint.CheckpointID, error) {
	d, err := r.leader(ctx, false)
	if err != nil {
		return 0, err
	}
	c, err := d.TriggerCheckpoint(ctx, id)
	return c, r.deposed(err)
}

// Close ends the current session as a revocation does (its jobs end SUSPENDED, and pending
// RequestJobResult calls return that, as do those made while that Dispatcher closes), waits
// until its Dispatcher has closed, then leaves the election, so that the next leader (a standby
// in this process, say) starts only once this one's JobMasters have stopped. It waits for
// everything the Runner started. Calls fail with ErrClosed once it returned. Closing twice
// returns nil.
func (r *Runner) Close() error {
	var ops <-chan struct{}
	// Finally: after a panic ended the loop, the session's Dispatcher is still closed.
	r.loop.Finally(func() {
		if r.closed {
			return
		}
		r.closed = true
		if s := r.current; s != nil {
			r.closing = s.dispatcher
		}
		r.endSession()
		r.notify()
		ops = r.ops.Tail()
	})
	if ops == nil {
		return nil
	}
	<-ops
	r.loop.Finally(func() { r.closing = nil })
	err := r.election.Close()
	r.background.Wait()
	r.loop.Close()
	return err
}
