package dispatcher_test

import (
	"context"
	"fmt"
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
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// heldCall is one call into the blocking HA services, waiting for the test to release it.
type heldCall struct {
	name    string
	release chan struct{}
}

// blockingHA wraps the embedded services: every store call and every leader election Start and
// ConfirmLeadership blocks until the test releases it (or, for the store calls, ctx ends), as a
// slow remote HA store would.
type blockingHA struct {
	*embedded.Services
	calls chan *heldCall
}

func (h *blockingHA) hold(ctx context.Context, name string) error {
	c := &heldCall{name: name, release: make(chan struct{})}
	select {
	case h.calls <- c:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-c.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// next returns the call now waiting, failing the test if none is; the caller releases it.
func (h *blockingHA) next(t *testing.T) *heldCall {
	t.Helper()
	synctest.Wait()
	select {
	case c := <-h.calls:
		return c
	default:
		t.Fatal("no HA call is waiting")
		return nil
	}
}

// release lets the waiting call, which must be name, go on.
func (h *blockingHA) release(t *testing.T, name string) {
	t.Helper()
	c := h.next(t)
	require.Equal(t, name, c.name)
	close(c.release)
	synctest.Wait()
}

func (h *blockingHA) ExecutionPlanStore() ha.ExecutionPlanStore {
	return blockingPlans{h, h.Services.ExecutionPlanStore()}
}
func (h *blockingHA) JobResultStore() ha.JobResultStore {
	return blockingResults{h, h.Services.JobResultStore()}
}
func (h *blockingHA) JobMasterLeaderElection(job jobgraph.JobID) ha.LeaderElection {
	return blockingElection{h, h.Services.JobMasterLeaderElection(job)}
}

type blockingPlans struct {
	h *blockingHA
	ha.ExecutionPlanStore
}

func (s blockingPlans) Put(ctx context.Context, g *jobgraph.JobGraph) error {
	if err := s.h.hold(ctx, "ExecutionPlanStore.Put"); err != nil {
		return err
	}
	return s.ExecutionPlanStore.Put(ctx, g)
}
func (s blockingPlans) Remove(ctx context.Context, id jobgraph.JobID) error {
	if err := s.h.hold(ctx, "ExecutionPlanStore.Remove"); err != nil {
		return err
	}
	return s.ExecutionPlanStore.Remove(ctx, id)
}

type blockingResults struct {
	h *blockingHA
	ha.JobResultStore
}

func (s blockingResults) Get(ctx context.Context, id jobgraph.JobID) (ha.JobResultEntry, error) {
	if err := s.h.hold(ctx, "JobResultStore.Get"); err != nil {
		return ha.JobResultEntry{}, err
	}
	return s.JobResultStore.Get(ctx, id)
}
func (s blockingResults) CreateDirty(ctx context.Context, r jobgraph.JobResult) error {
	if err := s.h.hold(ctx, "JobResultStore.CreateDirty"); err != nil {
		return err
	}
	return s.JobResultStore.CreateDirty(ctx, r)
}
func (s blockingResults) MarkClean(ctx context.Context, id jobgraph.JobID) error {
	if err := s.h.hold(ctx, "JobResultStore.MarkClean"); err != nil {
		return err
	}
	return s.JobResultStore.MarkClean(ctx, id)
}

type blockingElection struct {
	h *blockingHA
	ha.LeaderElection
}

func (e blockingElection) Start(c ha.LeaderContender) error {
	if err := e.h.hold(context.Background(), "LeaderElection.Start"); err != nil {
		return err
	}
	return e.LeaderElection.Start(c)
}
func (e blockingElection) ConfirmLeadership(s ha.SessionID, address string) {
	if e.h.hold(context.Background(), "LeaderElection.ConfirmLeadership") == nil {
		e.LeaderElection.ConfirmLeadership(s, address)
	}
}

// While an HA call is pending — the runner's start in the election, the runner's JobResultStore
// read on its grant, the result written after a cancel — status, list and cancel still answer:
// no main loop waits on the store.
func TestStatusListAndCancelAnswerWhileHAStoreBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &blockingHA{Services: embedded.New(), calls: make(chan *heldCall)}
		jms := make(chan *fakeJobMaster, 4)
		d, err := dispatcher.New(dispatcher.Config{HA: h, JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
			return &fakeFactory{g: g, created: new(atomic.Int32), last: jms}, nil
		})})
		require.NoError(t, err)
		bg := context.Background()
		// answered asks within a second of (virtual) time: a call that waits on the store fails.
		answered := func() context.Context {
			ctx, cancel := context.WithTimeout(bg, time.Second)
			t.Cleanup(cancel)
			return ctx
		}
		g := graph("blocked")
		submitted := make(chan error, 1)
		go func() { submitted <- d.SubmitJob(bg, g) }()
		h.release(t, "JobResultStore.Get")
		h.release(t, "ExecutionPlanStore.Put")

		held := h.next(t)
		require.Equal(t, "LeaderElection.Start", held.name)
		st, err := d.RequestJobStatus(answered(), g.JobID)
		require.NoError(t, err, "status while the runner's election start is pending")
		assert.Equal(t, jobgraph.JobStatusInitializing, st)
		list, err := d.ListJobs(answered())
		require.NoError(t, err, "list while the runner's election start is pending")
		require.Len(t, list, 1)
		assert.Equal(t, rpc.JobStatusMessage{JobID: g.JobID, Name: "blocked", Status: jobgraph.JobStatusInitializing, StartTime: time.Now().UnixMilli()}, list[0])
		close(held.release)
		synctest.Wait()
		require.NoError(t, <-submitted)

		// Granted: the runner reads the JobResultStore before it starts a JobMaster.
		held = h.next(t)
		require.Equal(t, "JobResultStore.Get", held.name)
		st, err = d.RequestJobStatus(answered(), g.JobID)
		require.NoError(t, err, "status while the runner's JobResultStore read is pending")
		assert.Equal(t, jobgraph.JobStatusInitializing, st)
		list, err = d.ListJobs(answered())
		require.NoError(t, err, "list while the runner's JobResultStore read is pending")
		require.Len(t, list, 1)
		assert.Equal(t, jobgraph.JobStatusInitializing, list[0].Status)
		require.NoError(t, d.CancelJob(answered(), g.JobID), "cancel while the runner's JobResultStore read is pending")
		st, err = d.RequestJobStatus(answered(), g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCancelling, st, "the cancel waits for the session's JobMaster")

		// The read comes back: the JobMaster is created and canceled at once. Its leadership
		// confirmation is pending while the Dispatcher learns that the job ended.
		close(held.release)
		held = h.next(t)
		require.Equal(t, "LeaderElection.ConfirmLeadership", held.name)
		st, err = d.RequestJobStatus(answered(), g.JobID)
		require.NoError(t, err, "status while the JobMaster's leadership confirmation is pending")
		assert.Equal(t, jobgraph.JobStatusCanceled, st)
		close(held.release)
		h.release(t, "JobResultStore.CreateDirty")
		h.release(t, "ExecutionPlanStore.Remove")
		h.release(t, "JobResultStore.MarkClean")
		res, err := d.RequestJobResult(answered(), g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		require.Len(t, jms, 1, "one JobMaster, canceled as soon as it existed")
		jm := <-jms
		st, _ = jm.RequestJobStatus(bg)
		assert.Equal(t, jobgraph.JobStatusCanceled, st)

		require.NoError(t, d.Close())
		require.NoError(t, h.Services.Close())
	})
}

// ListJobs copies what it reads of a job on the Dispatcher's loop: listing while jobs are being
// submitted (their runner set on the loop) is no data race under -race.
func TestListJobsWhileSubmitting(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 10 {
			if _, err := f.d.ListJobs(ctx); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := range 10 {
		require.NoError(t, f.d.SubmitJob(ctx, graph(fmt.Sprintf("job %d", i))))
	}
	<-done
	list, err := f.d.ListJobs(ctx)
	require.NoError(t, err)
	assert.Len(t, list, 10)
}

// Close does not wait on a stuck store: a submission whose Put is pending fails with ErrClosed
// once Close began, and nothing of it is kept.
func TestCloseEndsASubmissionWaitingOnTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &blockingHA{Services: embedded.New(), calls: make(chan *heldCall)}
		jms := make(chan *fakeJobMaster, 4)
		d, err := dispatcher.New(dispatcher.Config{HA: h, JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
			return &fakeFactory{g: g, created: new(atomic.Int32), last: jms}, nil
		})})
		require.NoError(t, err)
		g := graph("stuck")
		submitted := make(chan error, 1)
		go func() { submitted <- d.SubmitJob(context.Background(), g) }()
		h.release(t, "JobResultStore.Get")
		held := h.next(t)
		require.Equal(t, "ExecutionPlanStore.Put", held.name) // never released
		closed := make(chan error, 1)
		go func() { closed <- d.Close() }()
		synctest.Wait()
		err = <-submitted
		require.ErrorIs(t, err, dispatcher.ErrClosed)
		require.ErrorIs(t, err, context.Canceled)
		require.NoError(t, <-closed)
		_, err = h.Services.ExecutionPlanStore().Get(context.Background(), g.JobID)
		require.ErrorIs(t, err, ha.ErrNotFound)
		assert.Empty(t, jms, "no JobMaster was created")
		require.NoError(t, h.Services.Close())
	})
}
