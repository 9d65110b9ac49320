package jobmaster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/scheduler"
)

// savepointScheduler is a host's SchedulerNG that takes savepoints: it records each request and
// answers with answer (hold: never).
type savepointScheduler struct {
	fakeScheduler
	path string
	err  error
	hold bool
	// startAs, if set, is the status StartScheduling leaves the job in.
	startAs jobgraph.JobStatus
}

func (s *savepointScheduler) StartScheduling() {
	s.fakeScheduler.StartScheduling()
	if s.startAs != 0 {
		s.status = s.startAs
	}
}

var _ scheduler.SavepointTrigger = (*savepointScheduler)(nil)

func (s *savepointScheduler) TriggerSavepoint(dir string, timeout time.Duration, done func(string, error)) {
	s.calls = append(s.calls, fmt.Sprintf("TriggerSavepoint %q %v", dir, timeout))
	if !s.hold {
		done(s.path, s.err)
	}
}

// StopWithSavepoint ends the job FINISHED and then answers, in one loop task, as the
// DefaultScheduler does.
func (s *savepointScheduler) StopWithSavepoint(dir string, timeout time.Duration, done func(string, error)) {
	s.calls = append(s.calls, fmt.Sprintf("StopWithSavepoint %q %v", dir, timeout))
	s.status = jobgraph.JobStatusFinished
	s.cfg.OnTerminal(s.archive(), nil)
	done(s.path, nil)
}

func (s *savepointScheduler) TriggerCheckpoint(done func(checkpoint.CheckpointID, error)) {
	s.calls = append(s.calls, "TriggerCheckpoint")
	done(4, nil)
}

func newSavepointEnv(t *testing.T, sched *savepointScheduler, cfg jobmaster.Config) (*hbEnv, jobmaster.SavepointGateway) {
	t.Helper()
	cfg.SchedulerFactory = func(g *jobgraph.JobGraph, _ scheduler.SlotPool, _ scheduler.Deployer, c scheduler.Config) (scheduler.SchedulerNG, error) {
		sched.g, sched.cfg, sched.status = g, c, jobgraph.JobStatusCreated
		return sched, nil
	}
	e := newHBEnv(t, cfg)
	g, ok := e.jm.(jobmaster.SavepointGateway)
	require.True(t, ok, "DefaultJobMaster is a SavepointGateway")
	return e, g
}

// The JobMaster hands savepoint, stop-with-savepoint and checkpoint requests to its scheduler on
// its loop and returns what the scheduler answers: the path, the ID, or the error wrapped with
// the job; stop-with-savepoint returns once the job is FINISHED.
func TestJobMasterSavepointsGoToTheScheduler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sched := &savepointScheduler{path: "/sp/savepoint-abcdef-000000000001"}
		e, g := newSavepointEnv(t, sched, jobmaster.Config{SavepointDirectory: "/default-sp"})
		assert.Equal(t, "/default-sp", sched.cfg.SavepointDirectory, "execution.checkpointing.savepoint-dir reaches the scheduler")

		path, err := g.TriggerSavepoint(e.ctx, "/sp")
		require.NoError(t, err)
		assert.Equal(t, "/sp/savepoint-abcdef-000000000001", path)
		id, err := g.TriggerCheckpoint(e.ctx)
		require.NoError(t, err)
		assert.Equal(t, checkpoint.CheckpointID(4), id)

		sched.err = &checkpoint.CheckpointError{Reason: checkpoint.CheckpointExpired, CheckpointID: 3}
		_, err = g.TriggerSavepoint(e.ctx, "")
		assert.EqualError(t, err, "jobmaster: job "+e.g.JobID.String()+": savepoint: checkpoint 3: Checkpoint expired before completing.")
		var timeout interface{ Timeout() bool }
		require.ErrorAs(t, err, &timeout)
		assert.True(t, timeout.Timeout())
		assert.ErrorIs(t, err, checkpoint.CheckpointExpired)

		path, err = g.StopWithSavepoint(e.ctx, "/sp")
		require.NoError(t, err)
		assert.Equal(t, "/sp/savepoint-abcdef-000000000001", path)
		select {
		case <-e.jm.Done():
		default:
			t.Fatal("stop-with-savepoint returned before the job was FINISHED")
		}
		assert.Equal(t, jobgraph.JobStatusFinished, e.jm.Result().Archived.Status)
		assert.Equal(t, []string{"StartScheduling", `TriggerSavepoint "/sp" 0s`, "TriggerCheckpoint", `TriggerSavepoint "" 0s`, `StopWithSavepoint "/sp" 0s`}, sched.calls)

		_, err = g.TriggerSavepoint(e.ctx, "/sp")
		assert.ErrorIs(t, err, jobmaster.ErrJobNotRunning)
		assert.EqualError(t, err, "jobmaster: job "+e.g.JobID.String()+": savepoint: job is not RUNNING (it is FINISHED)")
	})
}

func TestJobMasterSavepointErrors(t *testing.T) {
	t.Run("scheduler without savepoints", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newHBEnv(t, jobmaster.Config{SchedulerFactory: func(g *jobgraph.JobGraph, _ scheduler.SlotPool, _ scheduler.Deployer, c scheduler.Config) (scheduler.SchedulerNG, error) {
				return &fakeScheduler{g: g, cfg: c, status: jobgraph.JobStatusCreated}, nil
			}})
			_, err := e.jm.(jobmaster.SavepointGateway).StopWithSavepoint(e.ctx, "/sp")
			assert.ErrorIs(t, err, errors.ErrUnsupported)
			assert.ErrorContains(t, err, "stop-with-savepoint: the scheduler (*jobmaster_test.fakeScheduler) takes no savepoints or checkpoints")
		})
	})
	t.Run("not running", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sched := &savepointScheduler{startAs: jobgraph.JobStatusRestarting}
			e, g := newSavepointEnv(t, sched, jobmaster.Config{})
			_, err := g.TriggerCheckpoint(e.ctx)
			assert.ErrorIs(t, err, jobmaster.ErrJobNotRunning)
			assert.ErrorContains(t, err, "checkpoint: job is not RUNNING (it is RESTARTING)")
			assert.Equal(t, []string{"StartScheduling"}, sched.calls, "the scheduler is not asked")
		})
	})
	t.Run("ctx ends first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e, g := newSavepointEnv(t, &savepointScheduler{hold: true}, jobmaster.Config{})
			ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
			defer cancel()
			start := time.Now()
			_, err := g.TriggerSavepoint(ctx, "/sp")
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, time.Minute, time.Since(start))
		})
	})
	t.Run("closed while waiting, and after", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e, g := newSavepointEnv(t, &savepointScheduler{hold: true}, jobmaster.Config{})
			errs := make(chan error, 1)
			go func() {
				_, err := g.TriggerSavepoint(e.ctx, "/sp")
				errs <- err
			}()
			synctest.Wait()
			e.jm.Close()
			err := <-errs
			assert.ErrorIs(t, err, jobmaster.ErrClosed)
			_, err = g.TriggerSavepoint(e.ctx, "/sp")
			assert.ErrorIs(t, err, jobmaster.ErrClosed)
		})
	})
}

// The runner answers savepoint requests itself while no JobMaster runs the job (INITIALIZING, a
// cancel pending) and once the job ended, and hands them to a JobMaster that has them; one
// without them is unsupported.
func TestLeadershipRunnerSavepointRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, newFakeFactory())
		release := f.factory.hold(1)
		require.NoError(t, f.runner.Start())
		synctest.Wait()
		_, err := f.runner.TriggerSavepoint(context.Background(), "/sp")
		assert.ErrorIs(t, err, jobmaster.ErrJobNotRunning)
		assert.EqualError(t, err, "jobmaster: job "+f.factory.JobID().String()+": savepoint: job is not RUNNING (it is INITIALIZING)")
		release()
		jm := <-f.factory.created
		synctest.Wait()

		_, err = f.runner.StopWithSavepoint(context.Background(), "/sp")
		assert.ErrorIs(t, err, errors.ErrUnsupported)
		assert.ErrorContains(t, err, "stop-with-savepoint: its JobMaster (*jobmaster_test.fakeJobMaster) takes no savepoints or checkpoints")

		jm.end(jobgraph.JobStatusFinished)
		<-f.runner.Done()
		_, err = f.runner.TriggerCheckpoint(context.Background())
		assert.ErrorIs(t, err, jobmaster.ErrJobNotRunning)
		assert.ErrorContains(t, err, "checkpoint: job is not RUNNING (it ended FINISHED)")
	})
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, newFakeFactory())
		release := f.factory.hold(1)
		require.NoError(t, f.runner.Start())
		synctest.Wait()
		require.NoError(t, f.runner.Cancel(context.Background()))
		_, err := f.runner.TriggerSavepoint(context.Background(), "/sp")
		assert.ErrorIs(t, err, jobmaster.ErrJobNotRunning)
		assert.ErrorContains(t, err, "(it is CANCELLING)")
		release()
	})
}
