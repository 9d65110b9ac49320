package resourcemanager

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/internal/heartbeat"
	"github.com/jobgraph/jobgraph/rpc"
)

// hbTaskExecutor is a fake TaskExecutor that answers the ResourceManager's heartbeat requests at
// once with its slot report, until it is silent. It records when the requests came.
type hbTaskExecutor struct {
	*fakeTaskExecutor
	id    jobgraph.ResourceID
	rm    rpc.ResourceManagerGateway
	rmID  jobgraph.ResourceManagerID
	start time.Time

	hmu      sync.Mutex
	silent   bool
	report   rpc.SlotReport
	requests []time.Duration
}

func (f *hbTaskExecutor) HeartbeatFromResourceManager(ctx context.Context, rm jobgraph.ResourceID) error {
	f.hmu.Lock()
	f.requests = append(f.requests, time.Since(f.start))
	silent, r := f.silent, f.report
	f.hmu.Unlock()
	if silent {
		return errors.New("no answer")
	}
	return f.rm.HeartbeatFromTaskExecutor(ctx, f.rmID, f.id, r)
}

func (f *hbTaskExecutor) beat(t *testing.T) {
	t.Helper()
	f.hmu.Lock()
	r := f.report
	f.hmu.Unlock()
	require.NoError(t, f.rm.HeartbeatFromTaskExecutor(t.Context(), f.rmID, f.id, r))
}

func (f *hbTaskExecutor) set(fn func(*hbTaskExecutor)) {
	f.hmu.Lock()
	defer f.hmu.Unlock()
	fn(f)
}

func (f *hbTaskExecutor) requestTimes() []time.Duration {
	f.hmu.Lock()
	defer f.hmu.Unlock()
	return slices.Clone(f.requests)
}

// hbJobMaster is a fake JobMaster that answers heartbeat requests until it is silent, and records
// the requests and DisconnectResourceManager calls.
type hbJobMaster struct {
	id    jobgraph.ResourceID
	rm    rpc.ResourceManagerGateway
	rmID  jobgraph.ResourceManagerID
	start time.Time

	mu          sync.Mutex
	silent      bool
	requests    []time.Duration
	disconnects []hbDisconnect
}

type hbDisconnect struct {
	At    time.Duration
	Token jobgraph.JobMasterID
	RM    jobgraph.ResourceManagerID
	Cause error
}

func (f *hbJobMaster) UpdateTaskExecutionState(context.Context, jobgraph.JobMasterID, rpc.TaskExecutionState) (bool, error) {
	return false, nil
}
func (f *hbJobMaster) RegisterTaskExecutor(context.Context, jobgraph.JobMasterID, rpc.TaskExecutorRegistration) error {
	return nil
}
func (f *hbJobMaster) OfferSlots(context.Context, jobgraph.JobMasterID, jobgraph.ResourceID, []rpc.SlotOffer) ([]rpc.SlotOffer, error) {
	return nil, nil
}
func (f *hbJobMaster) FailSlot(context.Context, jobgraph.JobMasterID, jobgraph.ResourceID, jobgraph.AllocationID, *jobgraph.ErrorInfo) error {
	return nil
}
func (f *hbJobMaster) DisconnectTaskExecutor(context.Context, jobgraph.JobMasterID, jobgraph.ResourceID, *jobgraph.ErrorInfo) error {
	return nil
}
func (f *hbJobMaster) DisconnectResourceManager(_ context.Context, token jobgraph.JobMasterID, rm jobgraph.ResourceManagerID, cause *jobgraph.ErrorInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.disconnects = append(f.disconnects, hbDisconnect{time.Since(f.start), token, rm, cause.Err()})
	return nil
}
func (f *hbJobMaster) HeartbeatFromTaskExecutor(context.Context, jobgraph.ResourceID, rpc.AllocatedSlotReport) error {
	return nil
}
func (f *hbJobMaster) HeartbeatFromResourceManager(ctx context.Context, _ jobgraph.ResourceID) error {
	f.mu.Lock()
	f.requests = append(f.requests, time.Since(f.start))
	silent := f.silent
	f.mu.Unlock()
	if silent {
		return errors.New("no answer")
	}
	return f.rm.HeartbeatFromJobMaster(ctx, f.rmID, f.id)
}

func (f *hbJobMaster) AcknowledgeCheckpoint(context.Context, jobgraph.JobMasterID, jobgraph.JobID, checkpoint.AcknowledgeCheckpoint) error {
	return nil
}

func (f *hbJobMaster) DeclineCheckpoint(context.Context, jobgraph.JobMasterID, jobgraph.JobID, checkpoint.DeclineCheckpoint) error {
	return nil
}

func (f *hbJobMaster) SendOperatorEventToCoordinator(context.Context, jobgraph.JobMasterID, jobgraph.ExecutionAttemptID, []byte) error {
	return nil
}

func (f *hbJobMaster) state() (requests []time.Duration, disconnects []hbDisconnect) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests), slices.Clone(f.disconnects)
}

var _ rpc.JobMasterGateway = (*hbJobMaster)(nil)

// heartbeats1s5s configures heartbeat.interval 1 s and heartbeat.timeout 5 s.
func heartbeats1s5s(c *Config) { c.HeartbeatInterval, c.HeartbeatTimeout = time.Second, 5*time.Second }

// addAnsweringTaskExecutor registers a fake TaskExecutor at "te/<id>" with one free slot per
// profile; it answers heartbeats with that report.
func (e *env) addAnsweringTaskExecutor(id jobgraph.ResourceID, start time.Time, profiles ...jobgraph.ResourceProfile) *hbTaskExecutor {
	e.t.Helper()
	te := &hbTaskExecutor{fakeTaskExecutor: &fakeTaskExecutor{}, id: id, rm: e.gw, rmID: e.rm.ResourceManagerID(), start: start, report: report(id, profiles...)}
	addr := "te/" + string(id)
	require.NoError(e.t, e.svc.Register(addr, te))
	_, err := e.gw.RegisterTaskExecutor(e.ctx, rpc.TaskExecutorRegistration{ResourceID: id, Address: addr, SlotReport: te.report})
	require.NoError(e.t, err)
	return te
}

// addAnsweringJob registers a fake JobMaster at address for a new job.
func (e *env) addAnsweringJob(address string, start time.Time) (*hbJobMaster, jobgraph.JobID, jobgraph.JobMasterID) {
	e.t.Helper()
	jm := &hbJobMaster{id: jobgraph.ResourceID("jm-" + address), rm: e.gw, rmID: e.rm.ResourceManagerID(), start: start}
	require.NoError(e.t, e.svc.Register(address, jm))
	job, token := e.addJob(address)
	return jm, job, token
}

func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func seconds(from, to int) []time.Duration {
	var out []time.Duration
	for s := from; s <= to; s++ {
		out = append(out, time.Duration(s)*time.Second)
	}
	return out
}

func TestSilentTaskExecutorIsUnregisteredAfterExactlyTheHeartbeatTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		e := newEnv(t, heartbeats1s5s)
		te1 := e.addAnsweringTaskExecutor("te-1", start, cpu(1))
		te2 := e.addAnsweringTaskExecutor("te-2", start, cpu(1))
		_, job, token := e.addAnsweringJob("jm", start)
		require.NoError(t, e.declare(job, token, req(unknown, 2)))
		synctest.Wait()
		require.Len(t, te1.Calls(), 1)
		require.Len(t, te2.Calls(), 1)
		// The TaskExecutors report what they hold; the view stays as it is.
		te1.set(func(f *hbTaskExecutor) {
			f.report.Slots[0].JobID, f.report.Slots[0].AllocationID = job, f.Calls()[0].Allocation
		})
		te2.set(func(f *hbTaskExecutor) {
			f.report.Slots[0].JobID, f.report.Slots[0].AllocationID = job, f.Calls()[0].Allocation
		})

		// te-2 answers the requests at 1 s and 2 s, sends a heartbeat of its own at 2.5 s and
		// falls silent: it is unregistered at 7.5 s.
		advance(2500 * time.Millisecond)
		te2.beat(t)
		te2.set(func(f *hbTaskExecutor) { f.silent = true })
		advance(5*time.Second - time.Nanosecond)
		assert.Equal(t, 2, e.rm.NumRegisteredTaskExecutors())
		assert.Equal(t, 2, e.rm.NumAllocatedSlots())
		advance(time.Nanosecond)
		assert.Equal(t, 1, e.rm.NumRegisteredTaskExecutors())
		assert.Equal(t, []SlotInfo{{SlotID: sid("te-1", 0), Profile: cpu(1), State: SlotAllocated, Job: job, Allocation: te1.Calls()[0].Allocation}}, e.rm.Slots())
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, e.rm.MissingResources(job), "te-2's slot is no longer counted")
		assert.Equal(t, seconds(1, 7), te2.requestTimes())

		// Its slots are not handed out again; no more requests go to it; te-1 stays.
		advance(time.Minute)
		assert.Len(t, te2.Calls(), 1)
		assert.Equal(t, seconds(1, 7), te2.requestTimes())
		assert.Equal(t, seconds(1, 67), te1.requestTimes())
		assert.Equal(t, 1, e.rm.NumRegisteredTaskExecutors())

		// Registering again brings it back.
		te2.set(func(f *hbTaskExecutor) { f.silent = false })
		_, err := e.gw.RegisterTaskExecutor(e.ctx, rpc.TaskExecutorRegistration{ResourceID: "te-2", Address: "te/te-2", SlotReport: report("te-2", cpu(1))})
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, 2, e.rm.NumRegisteredTaskExecutors())
		assert.Len(t, te2.Calls(), 2, "te-2's slot is requested for the job again")
	})
}

func TestTaskExecutorHeartbeatCarriesItsSlotReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		e := newEnv(t, heartbeats1s5s)
		te := e.addAnsweringTaskExecutor("te-1", start, cpu(1), cpu(1))
		other, alloc := jobgraph.NewJobID(), jobgraph.NewAllocationID()
		te.set(func(f *hbTaskExecutor) { f.report.Slots[1].JobID, f.report.Slots[1].AllocationID = other, alloc })
		advance(time.Second - time.Nanosecond)
		assert.Equal(t, 2, e.rm.NumFreeSlots())
		advance(time.Nanosecond)
		assert.Equal(t, 1, e.rm.NumFreeSlots())
		assert.Equal(t, SlotInfo{SlotID: sid("te-1", 1), Profile: cpu(1), State: SlotAllocated, Job: other, Allocation: alloc}, e.rm.Slots()[1])

		// Heartbeats from TaskExecutors the ResourceManager does not know change nothing.
		require.NoError(t, e.gw.HeartbeatFromTaskExecutor(e.ctx, e.rm.ResourceManagerID(), "te-x", report("te-x", cpu(1))))
		assert.Equal(t, 1, e.rm.NumRegisteredTaskExecutors())
		assert.Equal(t, 2, e.rm.NumRegisteredSlots())
	})
}

func TestSilentJobMasterIsDisconnectedAfterExactlyTheHeartbeatTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		e := newEnv(t, heartbeats1s5s)
		e.addAnsweringTaskExecutor("te-1", start, cpu(1), cpu(1))
		jm, job, token := e.addAnsweringJob("jm-1", start)
		require.NoError(t, e.declare(job, token, req(unknown, 1)))
		synctest.Wait()

		advance(2500 * time.Millisecond)
		require.NoError(t, e.gw.HeartbeatFromJobMaster(e.ctx, e.rm.ResourceManagerID(), "jm-jm-1"))
		jm.mu.Lock()
		jm.silent = true
		jm.mu.Unlock()
		advance(5*time.Second - time.Nanosecond)
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, e.rm.Requirements(job))
		_, disconnects := jm.state()
		assert.Empty(t, disconnects)

		advance(time.Nanosecond) // 7.5 s
		assert.Nil(t, e.rm.Requirements(job), "the job's requirements are cleared")
		assert.ErrorIs(t, e.declare(job, token, req(unknown, 2)), ErrJobNotRegistered)
		assert.Equal(t, 1, e.rm.NumAllocatedSlots(), "the job's slot stays until its TaskExecutor frees it")
		requests, disconnects := jm.state()
		assert.Equal(t, seconds(1, 7), requests)
		require.Len(t, disconnects, 1)
		d := disconnects[0]
		assert.Equal(t, 7500*time.Millisecond, d.At)
		assert.Equal(t, token, d.Token)
		assert.Equal(t, e.rm.ResourceManagerID(), d.RM)
		assert.ErrorIs(t, d.Cause, heartbeat.ErrTimeout)
		assert.EqualError(t, d.Cause, "heartbeat of JobMaster jm-jm-1 of job "+job.String()+" timed out after 5s")

		// The JobMaster registers again (as a live one does when told): it is monitored again.
		advance(time.Minute)
		requests, _ = jm.state()
		assert.Len(t, requests, 7)
		jm.mu.Lock()
		jm.silent = false
		jm.mu.Unlock()
		require.NoError(t, second(e.gw.RegisterJobMaster(e.ctx, token, "jm-jm-1", "jm-1", job)))
		require.NoError(t, e.declare(job, token, req(unknown, 2)))
		advance(time.Minute)
		requests, disconnects = jm.state()
		assert.Len(t, requests, 67)
		assert.Len(t, disconnects, 1)
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 2)}, e.rm.Requirements(job))
	})
}

func TestDisconnectedOrReplacedJobMasterIsNoLongerMonitored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		e := newEnv(t, heartbeats1s5s)
		old, job, token := e.addAnsweringJob("jm-1", start)
		gone, job2, token2 := e.addAnsweringJob("jm-2", start)
		advance(1500 * time.Millisecond)

		// A new leader of job 1 registers under another ResourceID; job 2 is disconnected.
		next := &hbJobMaster{id: "jm-jm-3", rm: e.gw, rmID: e.rm.ResourceManagerID(), start: start}
		require.NoError(t, e.svc.Register("jm-3", next))
		require.NoError(t, second(e.gw.RegisterJobMaster(e.ctx, jobgraph.NewJobMasterID(), "jm-jm-3", "jm-3", job)))
		require.NoError(t, e.gw.DisconnectJobMaster(e.ctx, e.rm.ResourceManagerID(), token2, job2, rpc.Failure(errors.New("job done"))))
		old.mu.Lock()
		old.silent = true
		old.mu.Unlock()
		advance(time.Minute)

		oldRequests, oldDisconnects := old.state()
		goneRequests, goneDisconnects := gone.state()
		nextRequests, _ := next.state()
		assert.Equal(t, seconds(1, 1), oldRequests)
		assert.Empty(t, oldDisconnects, "the replaced JobMaster is not timed out")
		assert.Equal(t, seconds(1, 1), goneRequests)
		assert.Empty(t, goneDisconnects)
		assert.Len(t, nextRequests, 60)
		_, ok := jobMasterOf(e, job)
		assert.True(t, ok)
		assert.Equal(t, []rpc.ResourceRequirement(nil), e.rm.Requirements(job), "the new leader has not declared yet")
		assert.ErrorIs(t, e.declare(job, token, req(unknown, 1)), rpc.ErrFencingTokenMismatch, "the old leader's token is stale")
	})
}

func jobMasterOf(e *env, job jobgraph.JobID) (JobMasterInfo, bool) { return e.rm.JobMaster(job) }

func TestHeartbeatConfigurationIsChecked(t *testing.T) {
	_, err := New(Config{Address: "rm", RPC: rpc.NewLocalService(), HeartbeatInterval: 10 * time.Second, HeartbeatTimeout: 9 * time.Second})
	assert.EqualError(t, err, "resourcemanager: heartbeat: heartbeat.timeout 9s is shorter than heartbeat.interval 10s")
	_, err = New(Config{Address: "rm", RPC: rpc.NewLocalService(), HeartbeatRPCFailureThreshold: -2})
	assert.EqualError(t, err, "resourcemanager: heartbeat: heartbeat.rpc-failure-threshold -2: want a positive number of failed heartbeat RPCs, or -1 to turn the detection off")
}
