package dispatcher_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// recordingElection wraps the Dispatcher election: it records every session granted to the
// contender and every confirmation, in order.
type recordingElection struct {
	ha.LeaderElection
	mu     sync.Mutex
	events []string
	grants []ha.SessionID // in the order granted: L1, L2, …
}

func (e *recordingElection) record(ev string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, ev)
}

func (e *recordingElection) log() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.events...)
}

func (e *recordingElection) Start(c ha.LeaderContender) error {
	return e.LeaderElection.Start(recordingContender{e, c})
}

func (e *recordingElection) ConfirmLeadership(s ha.SessionID, address string) {
	e.mu.Lock()
	n := -1
	for i, g := range e.grants {
		if g == s {
			n = i
		}
	}
	e.mu.Unlock()
	e.record("confirm L" + string(rune('1'+n)) + " " + address)
	e.LeaderElection.ConfirmLeadership(s, address)
}

type recordingContender struct {
	e *recordingElection
	ha.LeaderContender
}

func (c recordingContender) GrantLeadership(s ha.SessionID) {
	c.e.mu.Lock()
	c.e.grants = append(c.e.grants, s)
	n := len(c.e.grants)
	c.e.events = append(c.e.events, "grant L"+string(rune('0'+n)))
	c.e.mu.Unlock()
	c.LeaderContender.GrantLeadership(s)
}

func (c recordingContender) RevokeLeadership() {
	c.e.record("revoke")
	c.LeaderContender.RevokeLeadership()
}

// runnerFixture is a Runner over embedded HA services (possibly wrapped) whose JobMasters are
// fakes: each Create counts, and hands the JobMaster to jms.
type runnerFixture struct {
	ha       *embedded.Services
	election *recordingElection
	r        *dispatcher.Runner
	created  atomic.Int32
	jms      chan *fakeJobMaster
}

func newRunnerFixture(t *testing.T, services *embedded.Services, h ha.Services) *runnerFixture {
	t.Helper()
	f := &runnerFixture{ha: services, jms: make(chan *fakeJobMaster, 16),
		election: &recordingElection{LeaderElection: services.DispatcherLeaderElection()}}
	r, err := dispatcher.NewRunner(dispatcher.RunnerConfig{
		Dispatcher: dispatcher.Config{HA: h, JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
			return &fakeFactory{g: g, created: &f.created, last: f.jms}, nil
		})},
		LeaderElection: f.election,
	})
	require.NoError(t, err)
	f.r = r
	return f
}

// stored puts plans into the ExecutionPlanStore as an earlier leader would have.
func stored(t *testing.T, services ha.Services, gs ...*jobgraph.JobGraph) {
	t.Helper()
	for _, g := range gs {
		require.NoError(t, services.ExecutionPlanStore().Put(context.Background(), g))
	}
}

func streaming(name string) *jobgraph.JobGraph {
	g := jobgraph.New(name, jobgraph.Streaming)
	g.AddVertex("v", "noop", 1)
	return g
}

// On a grant the Runner recovers every stored plan and runs it (the plans stay stored); a job
// with a dirty result gets its global cleanup only: no JobMaster, plan removed, result marked
// clean. Then it confirms the session with its address.
func TestRunnerRecoversStoredJobsAndCleansUpDirtyOnesOnGrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		services := embedded.New()
		a, b, done := streaming("a"), streaming("b"), streaming("done")
		stored(t, services, a, b, done)
		require.NoError(t, services.JobResultStore().CreateDirty(ctx, jobgraph.JobResult{JobID: done.JobID, Name: "done", Status: jobgraph.JobStatusFinished}))
		f := newRunnerFixture(t, services, services)

		require.NoError(t, f.r.Start())
		synctest.Wait()
		assert.Equal(t, []string{"grant L1", "confirm L1 dispatcher"}, f.election.log())
		assert.Equal(t, int32(2), f.created.Load(), "a and b run, done does not")
		for _, g := range []*jobgraph.JobGraph{a, b} {
			st, err := f.r.RequestJobStatus(ctx, g.JobID)
			require.NoError(t, err)
			assert.Equal(t, jobgraph.JobStatusRunning, st, g.Name)
		}
		ids, err := services.ExecutionPlanStore().JobIDs(ctx)
		require.NoError(t, err)
		assert.ElementsMatch(t, []jobgraph.JobID{a.JobID, b.JobID}, ids, "recovered plans stay; the dirty job's is cleaned")
		entry, err := services.JobResultStore().Get(ctx, done.JobID)
		require.NoError(t, err)
		assert.True(t, entry.Clean)
		res, err := f.r.RequestJobResult(ctx, done.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusFinished, res.Status)
		var dup *dispatcher.DuplicateJobSubmissionError
		require.ErrorAs(t, f.r.SubmitJob(ctx, done), &dup)
		assert.True(t, dup.GloballyTerminated)

		require.NoError(t, f.r.Close())
		ids, err = services.ExecutionPlanStore().JobIDs(ctx)
		require.NoError(t, err)
		assert.Len(t, ids, 2, "Close suspends: nothing of a, b cleaned")
		require.NoError(t, services.Close())
	})
}

// A revocation cancels the store calls of the session's recovery: a recovery held in a store
// that honours its context ends at once, starts nothing, and the next session recovers.
func TestRunnerRevokeCancelsTheRecoveryInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		j := streaming("J")
		stored(t, services, j)
		h := &blockingHA{Services: services, calls: make(chan *heldCall)}
		f := newRunnerFixture(t, services, h)
		require.NoError(t, f.r.Start())
		held := h.next(t)
		require.Equal(t, "ExecutionPlanStore.Get", held.name)

		services.DispatcherElection().Revoke()
		synctest.Wait()
		assert.Equal(t, int32(0), f.created.Load())
		h.release(t, "ExecutionPlanStore.Get") // L2's read: L1's was canceled
		h.release(t, "LeaderElection.Start")   // J's runner joins J's JobMaster election
		assert.Equal(t, []string{"grant L1", "revoke", "grant L2", "confirm L2 dispatcher"}, f.election.log())
		h.release(t, "JobResultStore.Get") // J's runner, granted, checks J is not done
		h.release(t, "LeaderElection.ConfirmLeadership")
		assert.Equal(t, int32(1), f.created.Load())

		require.NoError(t, f.r.Close())
		require.NoError(t, services.Close())
	})
}

// The blocking wrapper's plan Get blocks too (besides Put and Remove), so a recovery can be held.
func (s blockingPlans) Get(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobGraph, error) {
	if err := s.h.hold(ctx, "ExecutionPlanStore.Get"); err != nil {
		return nil, err
	}
	return s.ExecutionPlanStore.Get(ctx, id)
}

// gatedCloseJobMaster is a fake JobMaster whose Close waits for the test.
type gatedCloseJobMaster struct {
	*fakeJobMaster
	gate   chan struct{}
	alive  *aliveCount
	closed chan struct{}
}

func (s *gatedCloseJobMaster) Close() *executiongraph.ArchivedExecutionGraph {
	<-s.gate
	a := s.fakeJobMaster.Close()
	s.alive.add(s.g.JobID, -1)
	close(s.closed)
	return a
}

// aliveCount counts each job's JobMasters alive at once, and the most there ever were.
type aliveCount struct {
	mu    sync.Mutex
	alive map[jobgraph.JobID]int
	most  map[jobgraph.JobID]int
}

func (c *aliveCount) add(job jobgraph.JobID, d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.alive[job] += d
	c.most[job] = max(c.most[job], c.alive[job])
}

type gatedCloseFactory struct {
	*fakeFactory
	gate  chan struct{}
	alive *aliveCount
	jms   chan *gatedCloseJobMaster
}

func (f gatedCloseFactory) Create(ctx context.Context, token jobgraph.JobMasterID) (jobmaster.JobMaster, error) {
	jm, err := f.fakeFactory.Create(ctx, token)
	if err != nil {
		return nil, err
	}
	<-f.fakeFactory.last
	f.alive.add(f.g.JobID, 1)
	s := &gatedCloseJobMaster{fakeJobMaster: jm.(*fakeJobMaster), gate: f.gate, alive: f.alive, closed: make(chan struct{})}
	f.jms <- s
	return s, nil
}

// A Runner that does not lead answers ErrNotLeader (matching ha.ErrNotLeader) at once; when the
// leader leaves the election it takes over and recovers the jobs.
func TestStandbyRunnerAnswersNotLeaderAndTakesOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		services := embedded.New()
		leader := newRunnerFixture(t, services, services)
		standby := newRunnerFixture(t, services, services)
		require.NoError(t, leader.r.Start())
		require.NoError(t, standby.r.Start())
		synctest.Wait()
		j := streaming("J")
		require.NoError(t, leader.r.SubmitJob(ctx, j))

		err := standby.r.SubmitJob(ctx, streaming("elsewhere"))
		require.ErrorIs(t, err, dispatcher.ErrNotLeader)
		require.ErrorIs(t, err, ha.ErrNotLeader)
		assert.Equal(t, []string{"ha.not-leader", "dispatcher.not-leader"}, jobgraph.ErrorCodes(err), "in the order registered")
		_, err = standby.r.RequestJobStatus(ctx, j.JobID)
		require.ErrorIs(t, err, dispatcher.ErrNotLeader)
		_, err = standby.r.ListJobs(ctx)
		require.ErrorIs(t, err, dispatcher.ErrNotLeader)

		require.NoError(t, leader.r.Close())
		synctest.Wait()
		assert.Equal(t, int32(1), standby.created.Load(), "the standby recovered J")
		st, err := standby.r.RequestJobStatus(ctx, j.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, st)
		require.NoError(t, standby.r.Close())
		require.NoError(t, services.Close())
	})
}

// RequestJobResult of a job whose session ended answers ErrNotLeader, not SUSPENDED: the job goes
// on under the next leader, where the result is asked again. Close answers SUSPENDED.
func TestRunnerJobResultAcrossARevocationAndAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		services := embedded.New()
		f := newRunnerFixture(t, services, services)
		require.NoError(t, f.r.Start())
		require.NoError(t, f.r.AwaitLeadership(ctx))
		j := streaming("J")
		require.NoError(t, f.r.SubmitJob(ctx, j))
		<-f.jms
		pending := make(chan error, 1)
		go func() {
			_, err := f.r.RequestJobResult(ctx, j.JobID)
			pending <- err
		}()
		synctest.Wait()
		services.DispatcherElection().Revoke()
		synctest.Wait()
		err := <-pending
		require.ErrorIs(t, err, dispatcher.ErrNotLeader)
		assert.Contains(t, err.Error(), "suspended")
		<-f.jms // recovered under L2

		type answer struct {
			res *jobgraph.JobResult
			err error
		}
		last := make(chan answer, 1)
		go func() {
			res, err := f.r.RequestJobResult(ctx, j.JobID)
			last <- answer{res, err}
		}()
		synctest.Wait()
		require.NoError(t, f.r.Close())
		a := <-last
		require.NoError(t, a.err)
		assert.Equal(t, jobgraph.JobStatusSuspended, a.res.Status)
		_, err = f.r.RequestJobStatus(ctx, j.JobID)
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		_, err = services.ExecutionPlanStore().Get(ctx, j.JobID)
		require.NoError(t, err, "kept for the next leader")
		_, err = services.JobResultStore().Get(ctx, j.JobID)
		require.ErrorIs(t, err, ha.ErrNotFound)
		require.NoError(t, services.Close())
	})
}

// The election's error goes to FatalErrorHandler and ends the session as a revocation does: its
// jobs are suspended, nothing cleaned; FatalError returns it.
func TestRunnerElectionErrorIsFatalAndEndsTheSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		services := embedded.New()
		fatal := make(chan error, 1)
		var created atomic.Int32
		jms := make(chan *fakeJobMaster, 4)
		r, err := dispatcher.NewRunner(dispatcher.RunnerConfig{Dispatcher: dispatcher.Config{HA: services,
			JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
				return &fakeFactory{g: g, created: &created, last: jms}, nil
			})},
			FatalErrorHandler: func(err error) { fatal <- err }})
		require.NoError(t, err)
		require.NoError(t, r.Start())
		require.NoError(t, r.AwaitLeadership(ctx))
		j := streaming("J")
		require.NoError(t, r.SubmitJob(ctx, j))
		jm := <-jms
		boom := errors.New("lost the coordination service")
		r.HandleError(boom)
		synctest.Wait()
		err = <-fatal
		require.ErrorIs(t, err, boom)
		assert.Equal(t, err, r.FatalError())
		st, _ := jm.RequestJobStatus(ctx)
		assert.Equal(t, jobgraph.JobStatusSuspended, st)
		_, err = r.RequestJobStatus(ctx, j.JobID)
		require.ErrorIs(t, err, dispatcher.ErrNotLeader)
		_, err = services.ExecutionPlanStore().Get(ctx, j.JobID)
		require.NoError(t, err)
		require.NoError(t, r.Close())
		require.NoError(t, services.Close())
	})
}

// failingResults is a JobResultStore whose DirtyResults fails.
type failingResultsHA struct{ *embedded.Services }

type failingResults struct{ ha.JobResultStore }

func (failingResults) DirtyResults(context.Context) ([]jobgraph.JobResult, error) {
	return nil, errors.New("disk on fire")
}
func (h failingResultsHA) JobResultStore() ha.JobResultStore {
	return failingResults{h.Services.JobResultStore()}
}

// A recovery whose store read fails is fatal: FatalErrorHandler hears it, no leadership is
// confirmed, and calls answer the error.
func TestRunnerFailedRecoveryIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		services := embedded.New()
		f := newRunnerFixture(t, services, failingResultsHA{services})
		require.NoError(t, f.r.Start())
		synctest.Wait()
		err := f.r.FatalError()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "disk on fire")
		_, callErr := f.r.ListJobs(ctx)
		assert.Equal(t, err, callErr)
		assert.Equal(t, err, f.r.AwaitLeadership(ctx))
		assert.Equal(t, []string{"grant L1"}, f.election.log(), "not confirmed")
		require.NoError(t, f.r.Close())
		require.NoError(t, services.Close())
	})
}

// With RunnerConfig.RPC the leading session's Dispatcher is registered at the address confirmed,
// and unregistered when the session ends; the next session registers its own.
func TestRunnerRegistersTheLeadingDispatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		services := embedded.New()
		svc := rpc.NewLocalService()
		var created atomic.Int32
		jms := make(chan *fakeJobMaster, 4)
		r, err := dispatcher.NewRunner(dispatcher.RunnerConfig{Dispatcher: dispatcher.Config{HA: services,
			JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
				return &fakeFactory{g: g, created: &created, last: jms}, nil
			})},
			RPC: svc, Address: "dispatcher-0"})
		require.NoError(t, err)
		_, err = rpc.Connect[rpc.DispatcherGateway](ctx, svc, "dispatcher-0")
		require.ErrorIs(t, err, rpc.ErrUnknownAddress)
		require.NoError(t, r.Start())
		synctest.Wait()
		gw, err := rpc.Connect[rpc.DispatcherGateway](ctx, svc, "dispatcher-0")
		require.NoError(t, err)
		j := streaming("J")
		require.NoError(t, gw.SubmitJob(ctx, j))

		services.DispatcherElection().Revoke()
		synctest.Wait()
		_, err = gw.RequestJobStatus(ctx, j.JobID)
		require.ErrorIs(t, err, dispatcher.ErrClosed, "the old session's gateway is closed")
		gw, err = rpc.Connect[rpc.DispatcherGateway](ctx, svc, "dispatcher-0")
		require.NoError(t, err)
		st, err := gw.RequestJobStatus(ctx, j.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, st)

		require.NoError(t, r.Close())
		_, err = rpc.Connect[rpc.DispatcherGateway](ctx, svc, "dispatcher-0")
		require.ErrorIs(t, err, rpc.ErrUnknownAddress)
		require.NoError(t, svc.Close())
		require.NoError(t, services.Close())
	})
}

// notLeading is an election in which the session asked about never leads.
type notLeading struct{ ha.LeaderElection }

func (notLeading) HasLeadership(ha.SessionID) bool { return false }

// The session's Dispatcher is fenced: with its session over, New starts no recovered job (no
// runner is created) and SubmitJob stores nothing.
func TestDispatcherFencedBySessionStartsAndAcceptsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		services := embedded.New()
		runners := 0
		cfg := dispatcher.Config{HA: services, LeaderElection: notLeading{services.DispatcherLeaderElection()}, LeaderSession: ha.NewSessionID(),
			JobManagerRunnerFactory: func(g *jobgraph.JobGraph, s ha.Services) (jobmaster.JobManagerRunner, error) {
				runners++
				return nil, errors.New("not reached")
			},
			RecoveredJobs: []*jobgraph.JobGraph{streaming("recovered")}}
		_, err := dispatcher.New(cfg)
		require.ErrorIs(t, err, dispatcher.ErrNotLeader)
		assert.Equal(t, 0, runners)

		cfg.RecoveredJobs = nil
		d, err := dispatcher.New(cfg)
		require.NoError(t, err)
		g := streaming("late")
		require.ErrorIs(t, d.SubmitJob(ctx, g), dispatcher.ErrNotLeader)
		assert.Equal(t, 0, runners)
		_, err = services.ExecutionPlanStore().Get(ctx, g.JobID)
		require.ErrorIs(t, err, ha.ErrNotFound)
		_, err = d.RequestJobStatus(ctx, g.JobID)
		require.ErrorIs(t, err, dispatcher.ErrJobNotFound)
		require.NoError(t, d.Close())
		require.NoError(t, services.Close())
	})
}

// New refuses bad recovery input naming it, and NewRunner refuses the fields it sets itself.
func TestRecoveryConfigIsChecked(t *testing.T) {
	services := embedded.New()
	defer services.Close()
	runners := dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
		return nil, errors.New("not reached")
	})
	bad := streaming("bad")
	bad.Vertices[0].Parallelism = 0
	twice := streaming("twice")
	for name, tc := range map[string]struct {
		jobs []*jobgraph.JobGraph
		want string
	}{
		"nil":     {[]*jobgraph.JobGraph{nil}, "Config.RecoveredJobs[0] is nil"},
		"invalid": {[]*jobgraph.JobGraph{bad}, "Config.RecoveredJobs[0] (job " + bad.JobID.String() + ")"},
		"twice":   {[]*jobgraph.JobGraph{twice, twice}, "Config.RecoveredJobs[1]: job " + twice.JobID.String() + " is recovered twice"},
	} {
		_, err := dispatcher.New(dispatcher.Config{HA: services, JobManagerRunnerFactory: runners, RecoveredJobs: tc.jobs})
		require.ErrorIs(t, err, dispatcher.ErrInvalidConfig, name)
		assert.Contains(t, err.Error(), tc.want, name)
	}
	_, err := dispatcher.New(dispatcher.Config{HA: services, JobManagerRunnerFactory: runners, RecoveredJobs: []*jobgraph.JobGraph{bad}})
	require.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph)

	for name, cfg := range map[string]dispatcher.Config{
		"election": {HA: services, JobManagerRunnerFactory: runners, LeaderElection: services.DispatcherLeaderElection()},
		"session":  {HA: services, JobManagerRunnerFactory: runners, LeaderSession: ha.NewSessionID()},
		"jobs":     {HA: services, JobManagerRunnerFactory: runners, RecoveredJobs: []*jobgraph.JobGraph{twice}},
		"dirty":    {HA: services, JobManagerRunnerFactory: runners, RecoveredDirtyResults: []jobgraph.JobResult{{JobID: twice.JobID}}},
		"no HA":    {JobManagerRunnerFactory: runners},
	} {
		_, err := dispatcher.NewRunner(dispatcher.RunnerConfig{Dispatcher: cfg})
		require.ErrorIs(t, err, dispatcher.ErrInvalidConfig, name)
	}
}

// A call made while Close closes the session's Dispatcher still reaches that Dispatcher, as a
// call during StandaloneDispatcher.Close does: a result asked for then is SUSPENDED. Once Close
// returned, calls answer ErrClosed.
func TestRunnerCallDuringCloseReachesTheClosingDispatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		services := embedded.New()
		j := streaming("J")
		stored(t, services, j)
		var created atomic.Int32
		alive := &aliveCount{alive: map[jobgraph.JobID]int{}, most: map[jobgraph.JobID]int{}}
		gate := make(chan struct{})
		jms := make(chan *gatedCloseJobMaster, 1)
		r, err := dispatcher.NewRunner(dispatcher.RunnerConfig{Dispatcher: dispatcher.Config{HA: services,
			JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
				return gatedCloseFactory{&fakeFactory{g: g, created: &created, last: make(chan *fakeJobMaster, 1)}, gate, alive, jms}, nil
			})}})
		require.NoError(t, err)
		require.NoError(t, r.Start())
		synctest.Wait()
		<-jms
		closed := make(chan error, 1)
		go func() { closed <- r.Close() }()
		synctest.Wait()
		require.Empty(t, closed, "Close waits for J's JobMaster")
		type answer struct {
			res *jobgraph.JobResult
			err error
		}
		asked := make(chan answer, 1)
		go func() {
			res, err := r.RequestJobResult(ctx, j.JobID)
			asked <- answer{res, err}
		}()
		synctest.Wait()
		close(gate)
		require.NoError(t, <-closed)
		a := <-asked
		require.NoError(t, a.err)
		assert.Equal(t, jobgraph.JobStatusSuspended, a.res.Status)
		_, err = r.RequestJobResult(ctx, j.JobID)
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		assert.Equal(t, int32(1), created.Load(), "one JobMaster was created")
		assert.Equal(t, map[jobgraph.JobID]int{j.JobID: 1}, alive.most, "at most one JobMaster of J was alive at once")
		assert.Equal(t, map[jobgraph.JobID]int{j.JobID: 0}, alive.alive, "J's JobMaster was closed")
		require.NoError(t, services.Close())
	})
}

// A call to a leading Runner reaches its session's Dispatcher without waiting for the Runner's
// loop (held here); a call made once a revocation was delivered, still unprocessed behind the
// held loop, waits for it and answers ErrNotLeader, as a call queued behind it on the loop would.
func TestRunnerCallsSkipTheLoopUntilAnElectionEventIsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		services := embedded.New()
		f := newRunnerFixture(t, services, services)
		require.NoError(t, f.r.Start())
		synctest.Wait()
		j := streaming("J")
		require.NoError(t, f.r.SubmitJob(ctx, j))
		synctest.Wait() // the job settles: its status cannot move between the two requests below

		want, err := f.r.RequestJobStatus(ctx, j.JobID)
		require.NoError(t, err)
		release := dispatcher.HoldRunnerLoop(f.r)
		st, err := f.r.RequestJobStatus(ctx, j.JobID)
		require.NoError(t, err, "answered while the Runner's loop is held")
		assert.Equal(t, want, st)

		f.r.RevokeLeadership() // delivered, not yet processed
		answered := make(chan error, 1)
		go func() {
			_, err := f.r.RequestJobStatus(ctx, j.JobID)
			answered <- err
		}()
		synctest.Wait()
		assert.Empty(t, answered, "the call waits for the pending revocation")
		release()
		require.ErrorIs(t, <-answered, dispatcher.ErrNotLeader)
		require.NoError(t, f.r.Close())
		require.NoError(t, services.Close())
	})
}
