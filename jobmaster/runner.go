package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/mainloop"
)

// LeadershipRunner runs one job for the Dispatcher: it takes part in the job's leader election
// and, for each leader session granted, runs a ServiceProcess whose JobMaster is fenced by
// JobMasterID = session. On revocation it closes the process (the job is suspended there) and
// waits for the next grant. Flink: JobMasterServiceLeadershipRunner.
//
// Leadership events are handled on the runner's own main loop, which never waits on I/O or on
// the JobMaster: what they start off the loop runs strictly one after another (the operation
// chain, Flink's sequentialOperation) — a grant's session operation, which reads the
// JobResultStore, creates the session's JobMaster (its ServiceProcess) and confirms leadership
// with its address, in that order on one goroutine, and the close of a revoked session's
// process — and each result is posted back and applied only if it still belongs to the current
// session (its process is still the runner's current one); a session that ended meanwhile stops
// at the next step (its process's context is canceled when it ends).
//
// Methods are safe for concurrent use.
type LeadershipRunner struct {
	factory  JobMasterServiceFactory
	election ha.LeaderElection
	results  ha.JobResultStore
	clock    func() time.Time
	loop     *mainloop.Loop
	loopName loopName        // loop's, formatted only when asked for
	run      func(fn func()) // starts the runner's goroutines (WithGoroutines); nil: go statements
	created  time.Time
	// ctx bounds the runner's store calls; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	// Owned by loop.
	// process is the current session's, from its grant until its revocation (or Close): results
	// of any other are dropped.
	process *ServiceProcess
	ops     mainloop.Chain // the leadership operations, one after another
	leading bool           // granted and not revoked since: a grant then replaces the session
	// cancelRequested: Cancel came while the current leader session had no JobMaster (or before
	// any grant); the JobMaster is canceled as soon as it exists (the process carries the
	// request: ServiceProcess.createdOrCancel). Losing leadership clears it. Flink:
	// hasCurrentLeaderBeenCancelled.
	cancelRequested bool
	finished        bool
	closed          bool

	done   chan struct{}
	result Result // written once, before done is closed

	background sync.WaitGroup // calls the runner makes off its loop; Close waits for them
}

// RunnerOption configures a LeadershipRunner (NewLeadershipRunner).
type RunnerOption func(*LeadershipRunner)

// WithGoroutines has the runner's goroutines — its main loop and its leadership operations (each
// session's, which runs its ServiceProcess, and each close) — started by run, as Config.Goroutines does for a JobMaster's: run(fn)
// runs fn on a goroutine at once, never waiting for another fn to return, and must keep
// accepting functions until the runner's Close has returned. The Dispatcher's default runner
// factory passes it through (dispatcher.LeadershipRunnerFactory); cluster.JobManager gives its
// pool. nil (the default): go statements.
func WithGoroutines(run func(fn func())) RunnerOption {
	return func(r *LeadershipRunner) { r.run = run }
}

// NewLeadershipRunner returns a runner for the factory's job. Start it once; Close it once.
func NewLeadershipRunner(factory JobMasterServiceFactory, election ha.LeaderElection, results ha.JobResultStore, opts ...RunnerOption) *LeadershipRunner {
	ctx, cancel := context.WithCancel(context.Background())
	r := &LeadershipRunner{
		factory:  factory,
		election: election,
		results:  results,
		clock:    time.Now,
		loopName: loopName{"runner-", factory.JobID()},
		created:  time.Now(),
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
	}
	for _, o := range opts {
		o(r)
	}
	r.loop = mainloop.NewNamedOn(r.run, &r.loopName, &closedError{what: "runner of job", job: factory.JobID()})
	r.loop.SetPanicHandler(r.onPanic)
	return r
}

// onPanic is the panic handler of the runner's loop: the runner is broken for good (its calls
// return its closed error wrapping the PanicError), so it completes its result with
// ErrRunnerFailed (the job SUSPENDED), which the Dispatcher makes fatal; its Close still closes
// the JobMaster (Finally). On the dead loop's goroutine: the loop's state is this call's.
func (r *LeadershipRunner) onPanic(perr *jobgraph.PanicError) {
	r.complete(r.sparseResult(jobgraph.JobStatusSuspended, fmt.Errorf("%w: job %s: %w", ErrRunnerFailed, r.JobID(), perr)))
}

// JobID is the job the runner runs.
func (r *LeadershipRunner) JobID() jobgraph.JobID { return r.factory.JobID() }

// Start joins the job's leader election. It is called off the Dispatcher's loop.
func (r *LeadershipRunner) Start() error { return r.election.Start(r) }

// Done is closed when the runner has its Result: the job reached a globally terminal state, its
// initialization failed, or the runner was closed (SUSPENDED).
func (r *LeadershipRunner) Done() <-chan struct{} { return r.done }

// Result returns the outcome; valid once Done is closed.
func (r *LeadershipRunner) Result() Result {
	<-r.done
	return r.result
}

// GrantLeadership implements ha.LeaderContender.
func (r *LeadershipRunner) GrantLeadership(session ha.SessionID) {
	r.loop.Execute(func() { r.onGrant(session) })
}

// RevokeLeadership implements ha.LeaderContender.
func (r *LeadershipRunner) RevokeLeadership() { r.loop.Execute(r.onRevoke) }

// HandleError implements ha.LeaderContender: an election failure fails the runner (Result.Err
// matching ErrRunnerFailed, the job SUSPENDED), which the Dispatcher makes fatal. Flink:
// JobMasterServiceLeadershipRunner.handleError, which calls the FatalErrorHandler.
func (r *LeadershipRunner) HandleError(err error) {
	r.loop.Execute(func() {
		r.complete(r.sparseResult(jobgraph.JobStatusSuspended, fmt.Errorf("%w: job %s: its leader election failed: %w", ErrRunnerFailed, r.JobID(), err)))
	})
}

// sequence runs op off the loop once every operation sequenced before it has finished. On the
// loop.
func (r *LeadershipRunner) sequence(op func()) { r.ops.ThenOn(r.run, &r.background, op) }

// onGrant starts a session: once the operations before it (the previous session's close) have
// finished, its session operation reads the JobResultStore and, if the job is not there, creates
// the session's JobMaster and confirms leadership (runSession). On the loop.
func (r *LeadershipRunner) onGrant(session ha.SessionID) {
	if r.finished || r.closed {
		return
	}
	if r.leading { // a grant without revoke in between: the old session ends first
		r.onRevoke()
	}
	r.leading = true
	p := newServiceProcess(r.factory, jobgraph.JobMasterID(session), r)
	p.cancelPending = r.cancelRequested // a cancel before this session's JobMaster exists
	r.process = p
	r.sequence(func() { r.runSession(p) })
}

// runSession is a session's leadership operation, in the chain: the JobResultStore read, then
// the JobMaster's creation by p (whose processCreated confirms leadership), then p's wait for
// the job's end. Each step runs only while the session is current (sessionCurrent); the read's
// answer, when it is not "not found", is applied on the loop (sessionNotStarted). Flink:
// JobMasterServiceLeadershipRunner's grant: the JobResultStore check, then
// startJobMasterServiceProcessAsync and confirmLeadership, in one sequential operation.
func (r *LeadershipRunner) runSession(p *ServiceProcess) {
	if !r.sessionCurrent(p) { // revoked, replaced or closed while earlier operations ran
		close(p.exited)
		return
	}
	_, err := r.results.Get(r.ctx, r.JobID())
	if !errors.Is(err, ha.ErrNotFound) {
		close(p.exited)
		r.loop.Execute(func() { r.sessionNotStarted(p, err) })
		return
	}
	if !r.sessionCurrent(p) { // the answer of a session that ended meanwhile is dropped
		close(p.exited)
		return
	}
	p.started = r.clock()
	p.run()
}

// sessionCurrent reports, off the loop, whether p's session has not ended: its process was not
// stopped (revocation, a replacing grant, Close: each cancels p's context on the loop) and the
// runner has no result yet. A session that ends right after the check is stopped by what ended
// it, as it would be had the check come a moment earlier.
func (r *LeadershipRunner) sessionCurrent(p *ServiceProcess) bool {
	if p.ctx.Err() != nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// sessionNotStarted applies a JobResultStore answer that starts no JobMaster, unless p's session
// is gone (revoked, replaced, closed): the job is in the store (another leader finished it), or
// whether it is there is unknown. On the loop.
func (r *LeadershipRunner) sessionNotStarted(p *ServiceProcess, err error) {
	if p != r.process || r.finished || r.closed {
		return
	}
	if err == nil {
		r.complete(r.sparseResult(jobgraph.JobStatusFailed, fmt.Errorf("%w: job %s is in the JobResultStore", ErrJobAlreadyDone, r.JobID())))
		return
	}
	// Whether the job is done is unknown: not a failure of the job, the runner's. Flink: the
	// runner's result future completes exceptionally, and the Dispatcher fails fatally.
	r.complete(r.sparseResult(jobgraph.JobStatusSuspended, fmt.Errorf("%w: job %s: reading the JobResultStore: %w", ErrRunnerFailed, r.JobID(), err)))
}

// onRevoke ends the session: its process is stopped, results still on their way are dropped,
// and a cancel that had not reached a JobMaster yet is forgotten (the status is INITIALIZING
// again), as Flink's stopJobMasterServiceProcess clears hasCurrentLeaderBeenCancelled. On the
// loop.
func (r *LeadershipRunner) onRevoke() {
	r.leading = false
	r.cancelRequested = false
	r.stopProcess()
}

// stopProcess detaches the current process, cancels its context at once (a JobMaster being
// created stops, and its session operation, which the close waits for, ends) and closes it off
// the loop, in the operation chain. On the loop.
func (r *LeadershipRunner) stopProcess() {
	p := r.process
	if p == nil {
		return
	}
	r.process = nil
	p.cancel()
	r.sequence(func() { p.Close() })
}

// currentJobMaster is the current process's JobMaster once its factory returned it, before
// processCreated has marked it created (createdJobMaster): the JobMaster starts scheduling as it is created,
// so its tasks may already run while that notice is on its way, and status and job queries must
// not answer INITIALIZING then. nil without a process or before the JobMaster exists. On the loop.
func (r *LeadershipRunner) currentJobMaster() JobMaster {
	if r.process == nil {
		return nil
	}
	return r.process.JobMaster()
}

// createdJobMaster is the current process's JobMaster once processCreated marked it created:
// from then on the runner's calls go to it. nil before, or without a process. On the loop.
func (r *LeadershipRunner) createdJobMaster() JobMaster {
	if r.process == nil {
		return nil
	}
	return r.process.createdJobMaster()
}

// processCreated is called by the process's goroutine, the session operation (runSession),
// once its JobMaster exists and schedules, without a trip to the loop: the process marks it
// created (the runner's calls go to it from then on), a cancel that came before is handed to it
// at once, and leadership is confirmed with its address right here, next in the session
// operation — unless the session ended meanwhile (the election ignores a confirmation for a
// session that is no longer current anyway). The cancel runs on this goroutine, so a close of
// the process, which waits for it, closes a JobMaster that was canceled already; and before the
// confirmation, which may wait on the election's store.
func (r *LeadershipRunner) processCreated(p *ServiceProcess, svc JobMaster) {
	cancel := p.markCreated()
	if !r.sessionCurrent(p) {
		return
	}
	if cancel {
		_ = svc.Cancel(context.Background())
	}
	r.election.ConfirmLeadership(ha.SessionID(p.Token()), svc.Address())
}

// processDone is called by the process's goroutine.
func (r *LeadershipRunner) processDone(p *ServiceProcess, res Result) {
	r.loop.Execute(func() {
		if p != r.process {
			return
		}
		r.complete(res)
	})
}

func (r *LeadershipRunner) complete(res Result) {
	if r.finished {
		return
	}
	r.finished = true
	r.result = res
	close(r.done)
}

func (r *LeadershipRunner) sparseResult(status jobgraph.JobStatus, err error) Result {
	return Result{
		Archived: executiongraph.NewSparseArchivedExecutionGraph(r.JobID(), r.factory.JobName(), r.factory.JobType(), status, err, r.created, r.clock()),
		Err:      err,
	}
}

// Cancel asks the job to cancel. Once the current leader session's JobMaster exists the call is
// forwarded to it and returns its answer. Before then — no leadership yet, the JobResultStore
// being read on a grant, the JobMaster being created — Cancel records the request and returns
// nil: the job reports CANCELLING and its JobMaster is canceled as soon as it exists. Losing
// leadership before that drops the request: the job reports INITIALIZING again and runs under the
// next leader unless canceled again. A job already done is left alone (nil). Flink:
// JobMasterServiceLeadershipRunner.cancel with hasCurrentLeaderBeenCancelled; where we differ,
// Flink's cancel future waits for the JobMaster and fails ("Cancellation failed") when leadership
// is lost first, while ours never waits for leadership.
func (r *LeadershipRunner) Cancel(ctx context.Context) error {
	svc, err := mainloop.Submit(ctx, r.loop, func() (JobMaster, error) {
		if r.finished {
			return nil, nil
		}
		if p := r.process; p != nil {
			if svc := p.createdOrCancel(); svc != nil {
				return svc, nil
			}
		}
		r.cancelRequested = true
		return nil, nil
	})
	if err != nil || svc == nil {
		return err
	}
	return svc.Cancel(ctx)
}

// RequestJobStatus returns the job's status: the JobMaster's once it exists; INITIALIZING
// before (CANCELLING when a cancel is pending); the final status once done.
func (r *LeadershipRunner) RequestJobStatus(ctx context.Context) (jobgraph.JobStatus, error) {
	type snap struct {
		svc    JobMaster
		status jobgraph.JobStatus
	}
	s, err := mainloop.Submit(ctx, r.loop, func() (snap, error) {
		switch {
		case r.finished:
			return snap{status: r.result.Archived.Status}, nil
		case r.createdJobMaster() != nil:
			return snap{svc: r.createdJobMaster()}, nil
		case r.cancelRequested:
			return snap{status: jobgraph.JobStatusCancelling}, nil
		}
		if jm := r.currentJobMaster(); jm != nil {
			return snap{svc: jm}, nil
		}
		return snap{status: jobgraph.JobStatusInitializing}, nil
	})
	if err != nil {
		return 0, err
	}
	if s.svc != nil {
		return s.svc.RequestJobStatus(ctx)
	}
	return s.status, nil
}

// RequestJob returns the archived graph: the JobMaster's current one, a sparse one while
// initializing, or the final one.
func (r *LeadershipRunner) RequestJob(ctx context.Context) (*executiongraph.ArchivedExecutionGraph, error) {
	type snap struct {
		svc JobMaster
		a   *executiongraph.ArchivedExecutionGraph
	}
	s, err := mainloop.Submit(ctx, r.loop, func() (snap, error) {
		switch {
		case r.finished:
			return snap{a: r.result.Archived}, nil
		case r.createdJobMaster() != nil:
			return snap{svc: r.createdJobMaster()}, nil
		}
		status := jobgraph.JobStatusCancelling
		if !r.cancelRequested {
			if jm := r.currentJobMaster(); jm != nil {
				return snap{svc: jm}, nil
			}
			status = jobgraph.JobStatusInitializing
		}
		return snap{a: executiongraph.NewSparseArchivedExecutionGraph(r.JobID(), r.factory.JobName(), r.factory.JobType(), status, nil, r.created, r.clock())}, nil
	})
	if err != nil {
		return nil, err
	}
	if s.svc != nil {
		return s.svc.RequestJob(ctx)
	}
	return s.a, nil
}

// Close stops the runner: it leaves the election, closes the JobMaster (a job not yet done is
// SUSPENDED) and completes the result if it was not complete. It waits for everything it
// started; store calls still pending see their context canceled. Call it off the runner's loop
// (the Dispatcher calls it from its own goroutines).
func (r *LeadershipRunner) Close() {
	var p *ServiceProcess
	closing, finished := false, false
	// Finally: after a panic ended the loop, the JobMaster is still closed and the result still
	// completed, so whoever waits on Done (the Dispatcher) is released.
	r.loop.Finally(func() {
		if r.closed {
			return
		}
		r.closed, closing, finished = true, true, r.finished
		p = r.process
		r.process = nil
	})
	r.cancel()
	if closing {
		// Closing the JobMaster waits for its loop, so it happens here, off the runner's.
		var archived *executiongraph.ArchivedExecutionGraph
		if p != nil {
			archived = p.Close()
		}
		if !finished { // a runner with its result keeps it: no second trip to the loop
			r.loop.Finally(func() {
				if !r.finished {
					if archived != nil && archived.Status.IsTerminal() {
						r.complete(Result{Archived: archived})
					} else {
						r.complete(r.sparseResult(jobgraph.JobStatusSuspended, nil))
					}
				}
			})
		}
	}
	// The loop closes before the runner leaves the election: the revocation that leaving may
	// deliver would find nothing to stop (closed is set, the process detached), so it is not
	// posted at all.
	r.loop.Close()
	_ = r.election.Close()
	r.background.Wait()
}
