package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/ha/file"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// appProcess is one JobManager process of an application: a Dispatcher on HA services that
// outlive it, counting the JobMasters its runner factory creates.
type appProcess struct {
	d       *dispatcher.StandaloneDispatcher
	created atomic.Int32
	jms     chan *fakeJobMaster
}

func startProcess(t *testing.T, services ha.Services) *appProcess {
	p := &appProcess{jms: make(chan *fakeJobMaster, 16)}
	d, err := dispatcher.New(dispatcher.Config{HA: services, JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
		return &fakeFactory{g: g, created: &p.created, last: p.jms}, nil
	})})
	require.NoError(t, err)
	p.d = d
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return p
}

// jobMasters takes the n JobMasters created next, by job name.
func (p *appProcess) jobMasters(t *testing.T, n int) map[string]*fakeJobMaster {
	t.Helper()
	out := make(map[string]*fakeJobMaster, n)
	for range n {
		jm := <-p.jms
		out[jm.g.Name] = jm
	}
	synctest.Wait()
	require.Empty(t, p.jms, "no JobMaster beyond the %d expected", n)
	return out
}

type appRun struct {
	results []*jobgraph.JobResult
	err     error
}

func runApplication(ctx context.Context, d dispatcher.Dispatcher, jobs ...*jobgraph.JobGraph) chan appRun {
	done := make(chan appRun, 1)
	go func() {
		res, err := dispatcher.RunApplication(ctx, d, jobs)
		done <- appRun{res, err}
	}()
	return done
}

func statuses(results []*jobgraph.JobResult) []string {
	out := make([]string, len(results))
	for i, r := range results {
		if r == nil {
			out[i] = "<nil>"
			continue
		}
		out[i] = fmt.Sprintf("%s %s", r.Name, r.Status)
	}
	return out
}

func jobIDs(results []*jobgraph.JobResult) []jobgraph.JobID {
	out := make([]jobgraph.JobID, len(results))
	for i, r := range results {
		out[i] = r.JobID
	}
	return out
}

func TestRunApplicationRunsEveryJobAndReportsTheResultsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		p := startProcess(t, services)
		first, second, third := graph("first"), graph("second"), graph("third")
		run := runApplication(context.Background(), p.d, first, second, third)
		jms := p.jobMasters(t, 3)

		// They end in the reverse order; the application waits for the last.
		jms["third"].end(jobgraph.JobStatusCanceled)
		jms["second"].end(jobgraph.JobStatusFailed)
		synctest.Wait()
		assert.Empty(t, run, "two of three jobs ended")
		jms["first"].end(jobgraph.JobStatusFinished)
		got := <-run
		require.NoError(t, got.err, "a FAILED or CANCELED job is a result, not an error")
		assert.Equal(t, []string{"first FINISHED", "second FAILED", "third CANCELED"}, statuses(got.results))
		assert.Equal(t, []jobgraph.JobID{first.JobID, second.JobID, third.JobID}, jobIDs(got.results))
		assert.Equal(t, int32(3), p.created.Load())
		for _, r := range got.results {
			entry, err := services.JobResultStore().Get(context.Background(), r.JobID)
			require.NoError(t, err)
			assert.Equal(t, r.Status, entry.Result.Status)
			assert.True(t, entry.Clean)
		}
	})
}

// The application run again over the same HA services after all its jobs finished (a restarted
// process): every job is a globally terminated duplicate, reported with its result from the
// JobResultStore, and no JobMaster is created.
func TestRunApplicationAgainReportsEveryJobFromTheJobResultStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		extract, load := graph("extract"), graph("load")
		p1 := startProcess(t, services)
		run := runApplication(context.Background(), p1.d, extract, load)
		for _, jm := range p1.jobMasters(t, 2) {
			jm.end(jobgraph.JobStatusFinished)
		}
		first := <-run
		require.NoError(t, first.err)
		require.NoError(t, p1.d.Close())

		p2 := startProcess(t, services)
		again := <-runApplication(context.Background(), p2.d, extract, load)
		require.NoError(t, again.err)
		assert.Equal(t, []string{"extract FINISHED", "load FINISHED"}, statuses(again.results))
		assert.Equal(t, []jobgraph.JobID{extract.JobID, load.JobID}, jobIDs(again.results))
		assert.Equal(t, int32(0), p2.created.Load(), "no JobMaster for a job that ended in an earlier run")
		for i, r := range again.results {
			entry, err := services.JobResultStore().Get(context.Background(), r.JobID)
			require.NoError(t, err)
			assert.Equal(t, entry.Result, *r, "job %d is reported with the JobResultStore's result", i)
			assert.Equal(t, first.results[i].NetRuntime, r.NetRuntime)
		}
		ids, err := services.ExecutionPlanStore().JobIDs(context.Background())
		require.NoError(t, err)
		assert.Empty(t, ids, "nothing submitted again")
	})
}

// The process dies while one job of the application finished and the other still runs: the
// finished one is reported from the JobResultStore, the other — kept in the ExecutionPlanStore —
// runs exactly once under the next process.
func TestRunApplicationAfterARestartRunsOnlyTheUnfinishedJobOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		done, pending := graph("done"), graph("pending")
		p1 := startProcess(t, services)
		run := runApplication(context.Background(), p1.d, done, pending)
		jms := p1.jobMasters(t, 2)
		jms["done"].end(jobgraph.JobStatusFinished)
		_, err := p1.d.RequestJobResult(context.Background(), done.JobID)
		require.NoError(t, err)
		// The application asks for "pending"'s result once it has "done"'s: it waits for it
		// before the process goes away (a Close before that ask answers it ErrClosed, with no
		// result, as RunApplication's doc says; that raced the Close under load).
		synctest.Wait()
		require.NoError(t, p1.d.Close()) // the process goes away: "pending" is SUSPENDED
		interrupted := <-run
		require.ErrorIs(t, interrupted.err, dispatcher.ErrApplicationSuspended)
		assert.EqualError(t, interrupted.err, fmt.Sprintf("dispatcher: application suspended: job 1 (%s, \"pending\") ended SUSPENDED before it reached a globally terminal state; running the application again resumes it", pending.JobID))
		assert.Equal(t, []string{"done FINISHED", "pending SUSPENDED"}, statuses(interrupted.results))
		ids, err := services.ExecutionPlanStore().JobIDs(context.Background())
		require.NoError(t, err)
		assert.Equal(t, []jobgraph.JobID{pending.JobID}, ids, "the unfinished job's plan is kept")

		p2 := startProcess(t, services)
		run = runApplication(context.Background(), p2.d, done, pending)
		jms = p2.jobMasters(t, 1)
		require.Contains(t, jms, "pending")
		assert.Empty(t, run)
		jms["pending"].end(jobgraph.JobStatusFinished)
		got := <-run
		require.NoError(t, got.err)
		assert.Equal(t, []string{"done FINISHED", "pending FINISHED"}, statuses(got.results))
		assert.Equal(t, int32(1), p2.created.Load(), "the unfinished job ran once, the finished one not again")
		assert.Equal(t, int32(2), p1.created.Load(), "the first process ran both until it went away")
	})
}

// A job of the application that already runs under the Dispatcher (a new leader recovered it
// from the ExecutionPlanStore) is a duplicate that is not globally terminated: it is waited for,
// not submitted again.
func TestRunApplicationWaitsForAJobThatRunsAlready(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		p := startProcess(t, services)
		recovered, fresh := graph("recovered"), graph("fresh")
		require.NoError(t, p.d.SubmitJob(context.Background(), recovered))
		running := p.jobMasters(t, 1)["recovered"]

		run := runApplication(context.Background(), p.d, recovered, fresh)
		jms := p.jobMasters(t, 1)
		require.Contains(t, jms, "fresh")
		assert.Equal(t, int32(2), p.created.Load(), "one JobMaster per job")
		jms["fresh"].end(jobgraph.JobStatusFinished)
		synctest.Wait()
		assert.Empty(t, run, "the recovered job still runs")
		running.end(jobgraph.JobStatusFinished)
		got := <-run
		require.NoError(t, got.err)
		assert.Equal(t, []string{"recovered FINISHED", "fresh FINISHED"}, statuses(got.results))
		assert.Equal(t, int32(2), p.created.Load())
	})
}

// An application RunApplication cannot run is refused before any job is submitted.
func TestRunApplicationRefusesBadInputAndSubmitsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		p := startProcess(t, services)
		ctx := context.Background()
		a, b := graph("a"), graph("b")
		invalid := graph("invalid")
		invalid.Vertices[0].Parallelism = 0
		twin := graph("twin")
		twin.JobID = a.JobID

		_, err := dispatcher.RunApplication(ctx, p.d, nil)
		require.ErrorIs(t, err, dispatcher.ErrInvalidApplication)
		assert.EqualError(t, err, "dispatcher: invalid application: no jobs (Flink: the application contains no execute() calls)")

		_, err = dispatcher.RunApplication(ctx, p.d, []*jobgraph.JobGraph{a, nil})
		require.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph)
		assert.EqualError(t, err, "dispatcher: application: job 1: invalid job graph: the job graph is nil")

		_, err = dispatcher.RunApplication(ctx, p.d, []*jobgraph.JobGraph{a, b, invalid})
		var verr *jobgraph.ValidationError
		require.ErrorAs(t, err, &verr)
		assert.Equal(t, jobgraph.RuleParallelism, verr.Rule)
		assert.Contains(t, err.Error(), fmt.Sprintf("dispatcher: application: job 2 (%s, \"invalid\"): ", invalid.JobID))

		_, err = dispatcher.RunApplication(ctx, p.d, []*jobgraph.JobGraph{a, b, twin})
		require.ErrorIs(t, err, dispatcher.ErrInvalidApplication)
		assert.EqualError(t, err, fmt.Sprintf("dispatcher: invalid application: job 2 (%s, \"twin\") has the JobID of job 0 (\"a\")", a.JobID))

		synctest.Wait()
		list, err := p.d.ListJobs(ctx)
		require.NoError(t, err)
		assert.Empty(t, list, "nothing was submitted")
		assert.Equal(t, int32(0), p.created.Load())
	})
}

// A submission that fails (here: the Dispatcher is closed) ends the application with that error.
func TestRunApplicationOnAClosedDispatcherFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		p := startProcess(t, services)
		require.NoError(t, p.d.Close())
		g := graph("late")
		res, err := dispatcher.RunApplication(context.Background(), p.d, []*jobgraph.JobGraph{g})
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		assert.Nil(t, res)
		assert.Contains(t, err.Error(), fmt.Sprintf("dispatcher: application: submitting job 0 (%s, \"late\"): ", g.JobID))
	})
}

// ctx ending while a job runs returns what is known, with ctx's error; the job keeps running.
func TestRunApplicationReturnsWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		p := startProcess(t, services)
		quick, slow := graph("quick"), graph("slow")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		run := runApplication(ctx, p.d, quick, slow)
		p.jobMasters(t, 2)["quick"].end(jobgraph.JobStatusFinished)
		got := <-run
		require.ErrorIs(t, got.err, context.DeadlineExceeded)
		assert.Equal(t, []string{"quick FINISHED", "<nil>"}, statuses(got.results))
		status, err := p.d.RequestJobStatus(context.Background(), slow.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, status, "the job keeps running")
	})
}

// forgetfulDispatcher says a job ended in an earlier run and then no longer knows its result, as
// when the JobResultStore dropped the job's clean entry in between.
type forgetfulDispatcher struct {
	dispatcher.Dispatcher
	done jobgraph.JobID
}

func (f forgetfulDispatcher) SubmitJob(ctx context.Context, g *jobgraph.JobGraph) error {
	if g.JobID == f.done {
		return &dispatcher.DuplicateJobSubmissionError{JobID: g.JobID, GloballyTerminated: true}
	}
	return f.Dispatcher.SubmitJob(ctx, g)
}

func (f forgetfulDispatcher) RequestJobResult(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error) {
	if id == f.done {
		return nil, fmt.Errorf("%w: %s", dispatcher.ErrJobNotFound, id)
	}
	return f.Dispatcher.RequestJobResult(ctx, id)
}

func TestRunApplicationReportsAnEarlierJobWhoseResultIsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		p := startProcess(t, services)
		gone, next := graph("gone"), graph("next")
		run := runApplication(context.Background(), forgetfulDispatcher{p.d, gone.JobID}, gone, next)
		p.jobMasters(t, 1)["next"].end(jobgraph.JobStatusFinished)
		got := <-run
		require.ErrorIs(t, got.err, dispatcher.ErrJobNotFound)
		assert.False(t, errors.Is(got.err, dispatcher.ErrApplicationSuspended))
		assert.EqualError(t, got.err, fmt.Sprintf("dispatcher: application: job 0 (%s, \"gone\") reached a globally terminal state in an earlier run, and its result is no longer known: job not found: %s", gone.JobID, gone.JobID))
		assert.Equal(t, []string{"<nil>", "next FINISHED"}, statuses(got.results), "the other jobs are still reported")
		assert.Equal(t, int32(1), p.created.Load())
	})
}

// leaderSessions is a Dispatcher under leader election, as a host sees it: while it leads, its
// calls go to the session's Dispatcher; without a session, and for a job the end of the session
// suspended (or whose session's Dispatcher closed during the call), they fail with
// ha.ErrNotLeader, as dispatcher.Runner's do; AwaitLeadership waits for the next session.
type leaderSessions struct {
	dispatcher.Dispatcher // nil: only the methods below are used

	mu      sync.Mutex
	current *dispatcher.StandaloneDispatcher // nil while not leading
	leading chan struct{}                    // closed while leading
	awaits  int                              // AwaitLeadership calls
}

func newLeaderSessions() *leaderSessions { return &leaderSessions{leading: make(chan struct{})} }

func (s *leaderSessions) grant(d *dispatcher.StandaloneDispatcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current = d
	close(s.leading)
}

// revoke ends the session: its Dispatcher closes and its running jobs are SUSPENDED.
func (s *leaderSessions) revoke(t *testing.T) {
	s.mu.Lock()
	d := s.current
	s.current, s.leading = nil, make(chan struct{})
	s.mu.Unlock()
	require.NoError(t, d.Close())
}

func (s *leaderSessions) session() (*dispatcher.StandaloneDispatcher, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil {
		return nil, fmt.Errorf("not leading: %w", ha.ErrNotLeader)
	}
	return s.current, nil
}

func (s *leaderSessions) AwaitLeadership(ctx context.Context) error {
	s.mu.Lock()
	s.awaits++
	leading := s.leading
	s.mu.Unlock()
	select {
	case <-leading:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *leaderSessions) SubmitJob(ctx context.Context, g *jobgraph.JobGraph) error {
	d, err := s.session()
	if err != nil {
		return err
	}
	return d.SubmitJob(ctx, g)
}

func (s *leaderSessions) RequestJobResult(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error) {
	d, err := s.session()
	if err != nil {
		return nil, err
	}
	res, err := d.RequestJobResult(ctx, id)
	if errors.Is(err, dispatcher.ErrClosed) || err == nil && res.Status == jobgraph.JobStatusSuspended {
		return nil, fmt.Errorf("the leader session ended under job %s: %w", id, ha.ErrNotLeader)
	}
	return res, err
}

// On a Dispatcher under leader election the application runs only while it leads: it waits for
// leadership, and when the session ends under it, it waits for the next one and runs on there —
// the job that finished is reported from the JobResultStore, the other runs to its end once more
// under the new session, and nothing runs twice within one.
func TestRunApplicationRunsOnUnderTheNextLeaderSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		s := newLeaderSessions()
		done, pending := graph("done"), graph("pending")
		run := runApplication(context.Background(), s, done, pending)
		synctest.Wait()
		assert.Empty(t, run, "waiting for leadership")

		p1 := startProcess(t, services)
		s.grant(p1.d)
		jms := p1.jobMasters(t, 2)
		jms["done"].end(jobgraph.JobStatusFinished)
		_, err := p1.d.RequestJobResult(context.Background(), done.JobID)
		require.NoError(t, err)
		s.revoke(t) // "pending" is SUSPENDED with the session
		synctest.Wait()
		assert.Empty(t, run, "waiting for the next leadership")

		p2 := startProcess(t, services)
		s.grant(p2.d)
		jms = p2.jobMasters(t, 1)
		require.Contains(t, jms, "pending")
		jms["pending"].end(jobgraph.JobStatusFinished)
		got := <-run
		require.NoError(t, got.err)
		assert.Equal(t, []string{"done FINISHED", "pending FINISHED"}, statuses(got.results))
		assert.Equal(t, int32(2), p1.created.Load())
		assert.Equal(t, int32(1), p2.created.Load(), "under the new session only the unfinished job runs")
		assert.Equal(t, 2, s.awaits, "once before each run")
	})
}

// A Dispatcher that cannot wait for leadership gets one run: its not-leader error is returned.
func TestRunApplicationOnADispatcherThatDoesNotLeadFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := graph("nowhere")
		res, err := dispatcher.RunApplication(context.Background(), foreverFollower{}, []*jobgraph.JobGraph{g})
		require.ErrorIs(t, err, ha.ErrNotLeader)
		assert.Nil(t, res)
		assert.EqualError(t, err, fmt.Sprintf("dispatcher: application: submitting job 0 (%s, \"nowhere\"): %v", g.JobID, ha.ErrNotLeader))
	})
}

type foreverFollower struct{ dispatcher.Dispatcher }

func (foreverFollower) SubmitJob(context.Context, *jobgraph.JobGraph) error { return ha.ErrNotLeader }

// runnerProcess is one JobManager process running the Dispatcher under the Dispatcher leader
// election (dispatcher.Runner), counting the JobMasters its runner factory creates.
type runnerProcess struct {
	r       *dispatcher.Runner
	created atomic.Int32
	jms     chan *fakeJobMaster
}

func startRunnerProcess(t *testing.T, services ha.Services) *runnerProcess {
	p := &runnerProcess{jms: make(chan *fakeJobMaster, 16)}
	r, err := dispatcher.NewRunner(dispatcher.RunnerConfig{Dispatcher: dispatcher.Config{HA: services,
		JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
			return &fakeFactory{g: g, created: &p.created, last: p.jms}, nil
		})}})
	require.NoError(t, err)
	require.NoError(t, r.Start())
	p.r = r
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return p
}

func (p *runnerProcess) jobMasters(t *testing.T, n int) map[string]*fakeJobMaster {
	return (&appProcess{jms: p.jms}).jobMasters(t, n)
}

// On the Dispatcher run under leader election, a restarted process's new leader recovers the
// unfinished job from the ExecutionPlanStore before the application resubmits it: the
// resubmission is a duplicate of a running job, waited for; the finished job is reported from
// the JobResultStore. Each job has one JobMaster per process that ran it.
func TestRunApplicationOnTheDispatcherRunnerAfterARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		done, pending := graph("done"), graph("pending")
		p1 := startRunnerProcess(t, services)
		run := runApplication(context.Background(), p1.r, done, pending)
		jms := p1.jobMasters(t, 2)
		jms["done"].end(jobgraph.JobStatusFinished)
		_, err := p1.r.RequestJobResult(context.Background(), done.JobID)
		require.NoError(t, err)
		synctest.Wait()                  // the application waits for "pending"
		require.NoError(t, p1.r.Close()) // the process goes away
		interrupted := <-run
		require.ErrorIs(t, interrupted.err, dispatcher.ErrApplicationSuspended)
		assert.Equal(t, []string{"done FINISHED", "pending SUSPENDED"}, statuses(interrupted.results))

		p2 := startRunnerProcess(t, services)
		jms = p2.jobMasters(t, 1) // recovered on the grant, before the application runs
		require.Contains(t, jms, "pending")
		run = runApplication(context.Background(), p2.r, done, pending)
		synctest.Wait()
		assert.Empty(t, run)
		jms["pending"].end(jobgraph.JobStatusFinished)
		got := <-run
		require.NoError(t, got.err)
		assert.Equal(t, []string{"done FINISHED", "pending FINISHED"}, statuses(got.results))
		assert.Equal(t, int32(1), p2.created.Load(), "the recovered job was not submitted again")
	})
}

// The Dispatcher's leadership moves to a new session while the application runs: the new
// session recovers the unfinished job, and the application runs on under it.
func TestRunApplicationOnTheDispatcherRunnerAcrossALeadershipChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		done, pending := graph("done"), graph("pending")
		p := startRunnerProcess(t, services)
		run := runApplication(context.Background(), p.r, done, pending)
		jms := p.jobMasters(t, 2)
		jms["done"].end(jobgraph.JobStatusFinished)
		_, err := p.r.RequestJobResult(context.Background(), done.JobID)
		require.NoError(t, err)

		services.DispatcherElection().Revoke() // revoked, then granted a new session
		recovered := p.jobMasters(t, 1)
		require.Contains(t, recovered, "pending")
		synctest.Wait()
		assert.Empty(t, run, "the application runs on under the new session")
		st, _ := jms["pending"].RequestJobStatus(context.Background())
		assert.Equal(t, jobgraph.JobStatusSuspended, st, "the old session's JobMaster was closed")
		recovered["pending"].end(jobgraph.JobStatusFinished)
		got := <-run
		require.NoError(t, got.err)
		assert.Equal(t, []string{"done FINISHED", "pending FINISHED"}, statuses(got.results))
		assert.Equal(t, int32(3), p.created.Load(), "two in the first session, the recovered one in the second")
	})
}

// closingDispatcher closed after the application's submissions: its RequestJobResult answers
// ErrClosed.
type closingDispatcher struct {
	*dispatcher.StandaloneDispatcher
}

func (c closingDispatcher) RequestJobResult(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error) {
	if err := c.StandaloneDispatcher.Close(); err != nil {
		return nil, err
	}
	return c.StandaloneDispatcher.RequestJobResult(ctx, id)
}

// A Dispatcher that closes under the application, whether it answers the waiting call with the
// job's SUSPENDED result or, closed already, with ErrClosed: the application was suspended.
func TestRunApplicationOnADispatcherThatClosedIsSuspended(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		services := embedded.New()
		defer services.Close()
		p := startProcess(t, services)
		g := graph("cut short")
		res, err := dispatcher.RunApplication(context.Background(), closingDispatcher{p.d}, []*jobgraph.JobGraph{g})
		require.ErrorIs(t, err, dispatcher.ErrApplicationSuspended)
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		assert.EqualError(t, err, fmt.Sprintf("dispatcher: application suspended: job 0 (%s, \"cut short\"): the Dispatcher closed before the job reached a globally terminal state (dispatcher: closed); running the application again resumes it", g.JobID))
		assert.Equal(t, []string{"<nil>"}, statuses(res))
		ids, err := services.ExecutionPlanStore().JobIDs(context.Background())
		require.NoError(t, err)
		assert.Equal(t, []jobgraph.JobID{g.JobID}, ids, "kept for the next run")
	})
}

// The restart on ha/file, where it is a restart for real: the second process opens its own
// client over the directory the first one left. The finished job is reported from the
// directory's JobResultStore, the unfinished one recovered from its plan file and run once.
func TestRunApplicationOnHAFileAfterARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		done, pending := graph("done"), graph("pending")
		services1, err := file.New(file.Options{Dir: dir})
		require.NoError(t, err)
		p1 := startRunnerProcess(t, services1)
		run := runApplication(context.Background(), p1.r, done, pending)
		jms := p1.jobMasters(t, 2)
		jms["done"].end(jobgraph.JobStatusFinished)
		_, err = p1.r.RequestJobResult(context.Background(), done.JobID)
		require.NoError(t, err)
		synctest.Wait()
		require.NoError(t, p1.r.Close())
		require.NoError(t, services1.Close()) // the process is gone
		interrupted := <-run
		require.ErrorIs(t, interrupted.err, dispatcher.ErrApplicationSuspended)
		assert.Equal(t, []string{"done FINISHED", "pending SUSPENDED"}, statuses(interrupted.results))

		services2, err := file.New(file.Options{Dir: dir})
		require.NoError(t, err)
		defer services2.Close()
		p2 := startRunnerProcess(t, services2)
		run = runApplication(context.Background(), p2.r, done, pending)
		jms = p2.jobMasters(t, 1)
		require.Contains(t, jms, "pending")
		jms["pending"].end(jobgraph.JobStatusFinished)
		got := <-run
		require.NoError(t, got.err)
		assert.Equal(t, []string{"done FINISHED", "pending FINISHED"}, statuses(got.results))
		assert.Equal(t, int32(1), p2.created.Load())
		entry, err := services2.JobResultStore().Get(context.Background(), done.JobID)
		require.NoError(t, err)
		assert.Equal(t, entry.Result, *got.results[0], "reported as the first process stored it")
		require.NoError(t, p2.r.Close())
	})
}
