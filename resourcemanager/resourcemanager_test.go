package resourcemanager

import (
	"cmp"
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
	"github.com/jobgraph/jobgraph/rpc"
)

// slotCall is one RequestSlot a fake TaskExecutor received.
type slotCall struct {
	Slot             rpc.SlotID
	Job              jobgraph.JobID
	Allocation       jobgraph.AllocationID
	Profile          jobgraph.ResourceProfile
	JobMasterAddress string
	JobMasterID      jobgraph.JobMasterID
	RM               jobgraph.ResourceManagerID
}

// fakeTaskExecutor records RequestSlot calls; respond, if set, decides each call's answer.
type fakeTaskExecutor struct {
	mu      sync.Mutex
	calls   []slotCall
	taken   int
	respond func(ctx context.Context, call slotCall, n int) error // n counts calls from 1
}

func (f *fakeTaskExecutor) RequestSlot(ctx context.Context, slot rpc.SlotID, job jobgraph.JobID, allocation jobgraph.AllocationID, profile jobgraph.ResourceProfile, jobMasterAddress string, jobMaster jobgraph.JobMasterID, rm jobgraph.ResourceManagerID) error {
	c := slotCall{slot, job, allocation, profile, jobMasterAddress, jobMaster, rm}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	n, respond := len(f.calls), f.respond
	f.mu.Unlock()
	if respond != nil {
		return respond(ctx, c, n)
	}
	return nil
}

// Calls returns the calls so far, ordered by slot (requests run concurrently, so arrival order
// is not fixed).
func (f *fakeTaskExecutor) Calls() []slotCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.calls)
	slices.SortStableFunc(out, func(a, b slotCall) int { return cmp.Compare(a.Slot.SlotNumber, b.Slot.SlotNumber) })
	return out
}

// Take returns the calls since the last Take, ordered by slot.
func (f *fakeTaskExecutor) Take() []slotCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.calls[f.taken:])
	f.taken = len(f.calls)
	slices.SortStableFunc(out, func(a, b slotCall) int { return cmp.Compare(a.Slot.SlotNumber, b.Slot.SlotNumber) })
	return out
}

func (f *fakeTaskExecutor) SubmitTask(context.Context, jobgraph.JobMasterID, rpc.TaskDeploymentDescriptor) error {
	return nil
}
func (f *fakeTaskExecutor) SubmitTasks(context.Context, jobgraph.JobMasterID, []rpc.TaskDeploymentDescriptor) ([]error, error) {
	return nil, nil
}
func (f *fakeTaskExecutor) CancelTask(context.Context, jobgraph.ExecutionAttemptID) error { return nil }
func (f *fakeTaskExecutor) FreeSlot(context.Context, jobgraph.AllocationID, *jobgraph.ErrorInfo) error {
	return nil
}
func (f *fakeTaskExecutor) ReleasePartitions(context.Context, jobgraph.JobID, []rpc.ResultPartitionID) error {
	return nil
}
func (f *fakeTaskExecutor) DisconnectJobMaster(context.Context, jobgraph.JobMasterID, jobgraph.JobID, *jobgraph.ErrorInfo) error {
	return nil
}
func (f *fakeTaskExecutor) HeartbeatFromJobMaster(context.Context, jobgraph.ResourceID) error {
	return nil
}
func (f *fakeTaskExecutor) HeartbeatFromResourceManager(context.Context, jobgraph.ResourceID) error {
	return nil
}
func (f *fakeTaskExecutor) TriggerCheckpoint(context.Context, jobgraph.JobMasterID, jobgraph.ExecutionAttemptID, checkpoint.CheckpointID, time.Time, checkpoint.CheckpointProperties) error {
	return nil
}
func (f *fakeTaskExecutor) ConfirmCheckpoint(context.Context, jobgraph.JobMasterID, jobgraph.ExecutionAttemptID, checkpoint.CheckpointID, time.Time) error {
	return nil
}
func (f *fakeTaskExecutor) AbortCheckpoint(context.Context, jobgraph.JobMasterID, jobgraph.ExecutionAttemptID, checkpoint.CheckpointID, time.Time) error {
	return nil
}
func (f *fakeTaskExecutor) SendOperatorEventToTask(context.Context, jobgraph.JobMasterID, jobgraph.ExecutionAttemptID, []byte) error {
	return nil
}

var _ rpc.TaskExecutorGateway = (*fakeTaskExecutor)(nil)

// env is a started ResourceManager on an in-process Service. Build it inside a synctest bubble.
type env struct {
	t   *testing.T
	ctx context.Context
	svc *rpc.LocalService
	rm  *ResourceManager
	gw  rpc.ResourceManagerGateway // the ResourceManager as RPC hands it out
}

func newEnv(t *testing.T, configure ...func(*Config)) *env {
	t.Helper()
	svc := rpc.NewLocalService()
	cfg := Config{ResourceID: "rm", Address: "rm-address", RPC: svc, Logger: discard}
	for _, c := range configure {
		c(&cfg)
	}
	rm, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rm.Close()) })
	require.NoError(t, rm.Start(t.Context()))
	gw, err := rpc.Connect[rpc.ResourceManagerGateway](t.Context(), svc, "rm-address")
	require.NoError(t, err)
	return &env{t: t, ctx: t.Context(), svc: svc, rm: rm, gw: gw}
}

// addTaskExecutor serves a fake TaskExecutor at "te/<id>" and registers it with free slots of the
// given profiles.
func (e *env) addTaskExecutor(id jobgraph.ResourceID, profiles ...jobgraph.ResourceProfile) *fakeTaskExecutor {
	e.t.Helper()
	te := &fakeTaskExecutor{}
	addr := "te/" + string(id)
	require.NoError(e.t, e.svc.Register(addr, te))
	rmID, err := e.gw.RegisterTaskExecutor(e.ctx, rpc.TaskExecutorRegistration{ResourceID: id, Address: addr, SlotReport: report(id, profiles...)})
	require.NoError(e.t, err)
	assert.Equal(e.t, e.rm.ResourceManagerID(), rmID)
	return te
}

func (e *env) addJob(address string) (jobgraph.JobID, jobgraph.JobMasterID) {
	e.t.Helper()
	job, token := jobgraph.NewJobID(), jobgraph.NewJobMasterID()
	rmID, err := e.gw.RegisterJobMaster(e.ctx, token, jobgraph.ResourceID("jm-"+address), address, job)
	require.NoError(e.t, err)
	assert.Equal(e.t, e.rm.ResourceManagerID(), rmID, "RegisterJobMaster answers the ResourceManagerID")
	return job, token
}

func (e *env) declare(job jobgraph.JobID, token jobgraph.JobMasterID, reqs ...rpc.ResourceRequirement) error {
	return e.gw.DeclareRequiredResources(e.ctx, e.rm.ResourceManagerID(), token, rpc.ResourceRequirements{JobID: job, Requirements: reqs})
}

func TestRequestsSlotsForDeclaredRequirements(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		te := e.addTaskExecutor("te-1", cpu(1), cpu(1))
		assert.Equal(t, 1, e.rm.NumRegisteredTaskExecutors())
		assert.Equal(t, 2, e.rm.NumFreeSlots())
		job, token := e.addJob("jm-address")

		require.NoError(t, e.declare(job, token, req(unknown, 2)))
		synctest.Wait()
		calls := te.Calls()
		require.Len(t, calls, 2)
		for i, c := range calls {
			assert.Equal(t, sid("te-1", i), c.Slot)
			assert.Equal(t, job, c.Job)
			assert.Equal(t, unknown, c.Profile)
			assert.Equal(t, "jm-address", c.JobMasterAddress)
			assert.Equal(t, token, c.JobMasterID)
			assert.Equal(t, e.rm.ResourceManagerID(), c.RM)
			assert.False(t, c.Allocation.IsZero())
		}
		assert.NotEqual(t, calls[0].Allocation, calls[1].Allocation)
		assert.Equal(t, 0, e.rm.NumFreeSlots())
		assert.Equal(t, 0, e.rm.NumPendingSlots())
		assert.Equal(t, 2, e.rm.NumAllocatedSlots())
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 2)}, e.rm.Requirements(job))
		slots := e.rm.Slots()
		require.Len(t, slots, 2)
		assert.Equal(t, calls[0].Allocation, slots[0].Allocation)
		assert.Equal(t, calls[1].Allocation, slots[1].Allocation)

		// The same declaration again asks for nothing more.
		require.NoError(t, e.declare(job, token, req(unknown, 2)))
		synctest.Wait()
		assert.Len(t, te.Calls(), 2)
		assert.Nil(t, e.rm.MissingResources(job))
	})
}

func TestJobsShareTaskExecutors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		te := e.addTaskExecutor("te-1", cpu(1), cpu(1))
		jobA, tokenA := e.addJob("jm-a")
		jobB, tokenB := e.addJob("jm-b")
		jobC, tokenC := e.addJob("jm-c")

		require.NoError(t, e.declare(jobA, tokenA, req(unknown, 1)))
		require.NoError(t, e.declare(jobB, tokenB, req(unknown, 1)))
		synctest.Wait()
		calls := te.Calls()
		require.Len(t, calls, 2)
		assert.Equal(t, []jobgraph.JobID{jobA, jobB}, []jobgraph.JobID{calls[0].Job, calls[1].Job})
		assert.Equal(t, []string{"jm-a", "jm-b"}, []string{calls[0].JobMasterAddress, calls[1].JobMasterAddress})

		// A third slot is needed; none is free.
		require.NoError(t, e.declare(jobC, tokenC, req(unknown, 1)))
		synctest.Wait()
		assert.Len(t, te.Calls(), 2)
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, e.rm.MissingResources(jobC))

		// Job A finishes: its JobMaster goes away, but the slot stays until the TaskExecutor frees it.
		require.NoError(t, e.gw.DisconnectJobMaster(e.ctx, e.rm.ResourceManagerID(), tokenA, jobA, rpc.Failure(errors.New("finished"))))
		synctest.Wait()
		assert.Len(t, te.Calls(), 2)
		assert.Nil(t, e.rm.Requirements(jobA))
		assert.Equal(t, 2, e.rm.NumAllocatedSlots())

		// A stale notice (another allocation) frees nothing.
		require.NoError(t, e.gw.NotifySlotAvailable(e.ctx, e.rm.ResourceManagerID(), "te-1", calls[0].Slot, jobgraph.NewAllocationID()))
		synctest.Wait()
		assert.Len(t, te.Calls(), 2)

		te.Take()
		require.NoError(t, e.gw.NotifySlotAvailable(e.ctx, e.rm.ResourceManagerID(), "te-1", calls[0].Slot, calls[0].Allocation))
		synctest.Wait()
		calls = te.Take()
		require.Len(t, calls, 1)
		assert.Equal(t, sid("te-1", 0), calls[0].Slot)
		assert.Equal(t, jobC, calls[0].Job)
		assert.Equal(t, tokenC, calls[0].JobMasterID)
		assert.Equal(t, "jm-c", calls[0].JobMasterAddress)
		assert.Nil(t, e.rm.MissingResources(jobC))
		assert.Equal(t, 2, e.rm.NumAllocatedSlots())
	})
}

func TestProfileMatching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		te := e.addTaskExecutor("te-1", cpu(1), cpu(1))
		job, token := e.addJob("jm")

		require.NoError(t, e.declare(job, token, req(cpu(2), 1)))
		synctest.Wait()
		assert.Empty(t, te.Calls())
		assert.Equal(t, 2, e.rm.NumFreeSlots())
		assert.Equal(t, []rpc.ResourceRequirement{req(cpu(2), 1)}, e.rm.MissingResources(job))

		require.NoError(t, e.declare(job, token, req(unknown, 1)))
		synctest.Wait()
		calls := te.Calls()
		require.Len(t, calls, 1)
		assert.Equal(t, sid("te-1", 0), calls[0].Slot)
		assert.Equal(t, unknown, calls[0].Profile)
		assert.Equal(t, 1, e.rm.NumFreeSlots())
	})
}

func TestDeclareRequiredResourcesIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		te := e.addTaskExecutor("te-1", cpu(1))
		job, token := e.addJob("jm")

		stale := jobgraph.NewJobMasterID()
		err := e.declare(job, stale, req(unknown, 1))
		require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
		var fe *rpc.FencingError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, token.String(), fe.Expected)
		assert.Equal(t, stale.String(), fe.Got)
		assert.Nil(t, e.rm.Requirements(job))

		// A new leader registers: the old token is refused, the new one accepted.
		newToken := jobgraph.NewJobMasterID()
		require.NoError(t, second(e.gw.RegisterJobMaster(e.ctx, newToken, "jm-2", "jm-2", job)))
		assert.ErrorIs(t, e.declare(job, token, req(unknown, 1)), rpc.ErrFencingTokenMismatch)
		require.NoError(t, e.declare(job, newToken, req(unknown, 1)))
		synctest.Wait()
		calls := te.Calls()
		require.Len(t, calls, 1)
		assert.Equal(t, newToken, calls[0].JobMasterID)
		assert.Equal(t, "jm-2", calls[0].JobMasterAddress)

		// The old leader's disconnect is refused and drops nothing of the new one.
		err = e.gw.DisconnectJobMaster(e.ctx, e.rm.ResourceManagerID(), token, job, rpc.Failure(errors.New("old leader closing")))
		require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, newToken.String(), fe.Expected)
		assert.Equal(t, token.String(), fe.Got)
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, e.rm.Requirements(job), "the new leader's requirements stay")
		require.NoError(t, e.declare(job, newToken, req(unknown, 1)), "the new leader is still registered")

		// Unregistered job, disconnected job, negative count.
		assert.ErrorIs(t, e.declare(jobgraph.NewJobID(), token, req(unknown, 1)), ErrJobNotRegistered)
		assert.ErrorIs(t, e.declare(job, newToken, req(unknown, -1)), ErrInvalidRequirements)
		require.NoError(t, e.gw.DisconnectJobMaster(e.ctx, e.rm.ResourceManagerID(), newToken, job, nil))
		assert.ErrorIs(t, e.declare(job, newToken, req(unknown, 1)), ErrJobNotRegistered)
	})
}

func TestFailedSlotRequestFreesSlotAndRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		te := e.addTaskExecutor("te-1", cpu(1))
		te.respond = func(_ context.Context, _ slotCall, n int) error {
			if n == 1 {
				return errors.New("refused")
			}
			return nil
		}
		job, token := e.addJob("jm")
		start := time.Now()

		require.NoError(t, e.declare(job, token, req(unknown, 1)))
		synctest.Wait()
		require.Len(t, te.Calls(), 1)
		assert.Equal(t, 1, e.rm.NumFreeSlots(), "the slot is free again")
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, e.rm.MissingResources(job))

		// Matching runs again DefaultSlotRequestRetryDelay later.
		time.Sleep(DefaultSlotRequestRetryDelay - time.Nanosecond)
		synctest.Wait()
		assert.Len(t, te.Calls(), 1)
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		calls := te.Calls()
		require.Len(t, calls, 2)
		assert.Equal(t, DefaultSlotRequestRetryDelay, time.Since(start))
		assert.Equal(t, calls[0].Slot, calls[1].Slot)
		assert.NotEqual(t, calls[0].Allocation, calls[1].Allocation)
		assert.Equal(t, 1, e.rm.NumAllocatedSlots())
		assert.Nil(t, e.rm.MissingResources(job))
	})
}

func TestFailedSlotRequestSlotServesAnotherJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		te := e.addTaskExecutor("te-1", cpu(1))
		te.respond = func(_ context.Context, _ slotCall, n int) error {
			if n == 1 {
				return errors.New("refused")
			}
			return nil
		}
		jobA, tokenA := e.addJob("jm-a")
		jobB, tokenB := e.addJob("jm-b")
		require.NoError(t, e.declare(jobA, tokenA, req(unknown, 1)))
		synctest.Wait()
		require.Len(t, te.Calls(), 1)

		// Before the retry, job A no longer needs the slot and job B declares: B gets it at once.
		require.NoError(t, e.declare(jobA, tokenA))
		require.NoError(t, e.declare(jobB, tokenB, req(unknown, 1)))
		synctest.Wait()
		calls := te.Calls()
		require.Len(t, calls, 2)
		assert.Equal(t, jobB, calls[1].Job)
		assert.Equal(t, "jm-b", calls[1].JobMasterAddress)
		assert.Equal(t, 1, e.rm.NumAllocatedSlots())

		// The retry finds nothing to do.
		time.Sleep(DefaultSlotRequestRetryDelay)
		synctest.Wait()
		assert.Len(t, te.Calls(), 2)
	})
}

// otherService is an rpc.Service that is not the in-process *rpc.LocalService (as a network
// transport is not), over one.
type otherService struct{ *rpc.LocalService }

// overAnotherService makes the ResourceManager's Service an otherService over the env's
// LocalService.
func overAnotherService(c *Config) { c.RPC = otherService{c.RPC.(*rpc.LocalService)} }

// Over a Service other than the in-process LocalService a RequestSlot that gets no answer ends
// at RequestTimeout, and the slot is requested again.
func TestSlotRequestTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.SlotRequestRetryDelay = -1 }, overAnotherService)
		te := e.addTaskExecutor("te-1", cpu(1))
		te.respond = func(ctx context.Context, _ slotCall, n int) error {
			if n == 1 {
				<-ctx.Done() // never answers
				return ctx.Err()
			}
			return nil
		}
		job, token := e.addJob("jm")
		start := time.Now()
		require.NoError(t, e.declare(job, token, req(unknown, 1)))
		synctest.Wait()
		assert.Equal(t, 1, e.rm.NumPendingSlots())

		time.Sleep(DefaultRequestTimeout - time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, 1, e.rm.NumPendingSlots())
		assert.Len(t, te.Calls(), 1)

		// At the timeout the slot is free again and, with no retry delay, requested at once.
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, DefaultRequestTimeout, time.Since(start))
		assert.Len(t, te.Calls(), 2)
		assert.Equal(t, 1, e.rm.NumAllocatedSlots())
	})
}

// The ResourceManager's RequestSlot carries RequestTimeout as its deadline over any Service but
// the in-process LocalService, where it carries none (no timer per call; Close still ends it).
func TestSlotRequestDeadlineOnlyOffTheLocalService(t *testing.T) {
	for _, tc := range []struct {
		name      string
		configure func(*Config)
		want      time.Duration
	}{
		{"LocalService", func(*Config) {}, -1},
		{"another Service", overAnotherService, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, func(c *Config) { c.RequestTimeout = 3 * time.Second }, tc.configure)
				te := e.addTaskExecutor("te-1", cpu(1))
				left := make(chan time.Duration, 1)
				te.respond = func(ctx context.Context, _ slotCall, _ int) error {
					d, ok := ctx.Deadline()
					if !ok {
						left <- -1
					} else {
						left <- time.Until(d)
					}
					return nil
				}
				job, token := e.addJob("jm")
				require.NoError(t, e.declare(job, token, req(unknown, 1)))
				synctest.Wait()
				assert.Equal(t, tc.want, <-left, "time left of the request's deadline (-1: none)")
				assert.Equal(t, 1, e.rm.NumAllocatedSlots())
			})
		})
	}
}

func TestDisconnectTaskExecutorRemovesItsSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		te1 := e.addTaskExecutor("te-1", cpu(1), cpu(1))
		te2 := e.addTaskExecutor("te-2", cpu(1))
		job, token := e.addJob("jm")
		require.NoError(t, e.declare(job, token, req(unknown, 2)))
		synctest.Wait()
		require.Len(t, te1.Calls(), 2)
		assert.Empty(t, te2.Calls())
		assert.Equal(t, 3, e.rm.NumRegisteredSlots())

		require.NoError(t, e.gw.DisconnectTaskExecutor(e.ctx, e.rm.ResourceManagerID(), "te-1", rpc.Failure(errors.New("lost"))))
		synctest.Wait()
		assert.Equal(t, 1, e.rm.NumRegisteredTaskExecutors())
		assert.Equal(t, 1, e.rm.NumRegisteredSlots())
		// The job lost both slots; the one slot left is requested for it, one requirement-check
		// delay after the job's last requests (all of this happens at 0 s; a TaskExecutor lost
		// later than that is replaced at once).
		start := time.Now()
		time.Sleep(DefaultRequirementCheckDelay - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, te2.Calls())
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 2)}, e.rm.MissingResources(job))
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, DefaultRequirementCheckDelay, time.Since(start))
		calls := te2.Calls()
		require.Len(t, calls, 1)
		assert.Equal(t, sid("te-2", 0), calls[0].Slot)
		assert.Equal(t, job, calls[0].Job)
		assert.Equal(t, []rpc.ResourceRequirement{req(unknown, 1)}, e.rm.MissingResources(job))
		assert.Equal(t, 0, e.rm.NumFreeSlots())

		// Calls about the gone TaskExecutor fail, disconnecting it again is harmless.
		assert.ErrorIs(t, e.gw.SendSlotReport(e.ctx, e.rm.ResourceManagerID(), "te-1", report("te-1", cpu(1))), ErrTaskExecutorNotRegistered)
		assert.ErrorIs(t, e.gw.NotifySlotAvailable(e.ctx, e.rm.ResourceManagerID(), "te-1", sid("te-1", 0), jobgraph.NewAllocationID()), ErrTaskExecutorNotRegistered)
		require.NoError(t, e.gw.DisconnectTaskExecutor(e.ctx, e.rm.ResourceManagerID(), "te-1", nil))
		assert.Len(t, te1.Calls(), 2)
	})
}

func TestSendSlotReportReplacesView(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		te := e.addTaskExecutor("te-1", cpu(1), cpu(1))
		job, token := e.addJob("jm")
		other := jobgraph.NewJobID()

		// Slot 0 is taken by another job, slot 1 removed, slot 2 added.
		rep := rpc.SlotReport{Slots: []rpc.SlotStatus{
			{SlotID: sid("te-1", 0), ResourceProfile: cpu(1), JobID: other, AllocationID: jobgraph.NewAllocationID()},
			{SlotID: sid("te-1", 2), ResourceProfile: cpu(2)},
		}}
		require.NoError(t, e.gw.SendSlotReport(e.ctx, e.rm.ResourceManagerID(), "te-1", rep))
		assert.Equal(t, 2, e.rm.NumRegisteredSlots())
		assert.Equal(t, 1, e.rm.NumFreeSlots())
		assert.Equal(t, 1, e.rm.NumAllocatedSlots())

		require.NoError(t, e.declare(job, token, req(unknown, 2)))
		synctest.Wait()
		calls := te.Calls()
		require.Len(t, calls, 1)
		assert.Equal(t, sid("te-1", 2), calls[0].Slot)

		// The other job's slot is reported free: it goes to our job.
		te.Take()
		rep.Slots[0].JobID, rep.Slots[0].AllocationID = jobgraph.JobID{}, jobgraph.AllocationID{}
		rep.Slots[1].JobID, rep.Slots[1].AllocationID = job, calls[0].Allocation
		require.NoError(t, e.gw.SendSlotReport(e.ctx, e.rm.ResourceManagerID(), "te-1", rep))
		synctest.Wait()
		calls = te.Take()
		require.Len(t, calls, 1)
		assert.Equal(t, sid("te-1", 0), calls[0].Slot)
		assert.Equal(t, job, calls[0].Job)
		assert.Equal(t, 2, e.rm.NumAllocatedSlots())
	})
}

func TestRegisterTaskExecutor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		_, err := e.gw.RegisterTaskExecutor(e.ctx, rpc.TaskExecutorRegistration{ResourceID: "te-x", Address: "nowhere"})
		assert.ErrorIs(t, err, rpc.ErrUnknownAddress)
		_, err = e.gw.RegisterTaskExecutor(e.ctx, rpc.TaskExecutorRegistration{ResourceID: "te-x"})
		assert.ErrorIs(t, err, ErrInvalidRegistration)
		assert.Equal(t, 0, e.rm.NumRegisteredTaskExecutors())

		te := e.addTaskExecutor("te-1", cpu(1), cpu(1))
		job, token := e.addJob("jm")
		require.NoError(t, e.declare(job, token, req(unknown, 1)))
		synctest.Wait()
		require.Len(t, te.Calls(), 1)

		// The TaskExecutor restarts and registers again with one free slot: its old view is dropped,
		// the job's slot is requested from the new registration — one requirement-check delay
		// after the job's last request, at 0 s, as the restart came in the same instant.
		_, err = e.gw.RegisterTaskExecutor(e.ctx, rpc.TaskExecutorRegistration{ResourceID: "te-1", Address: "te/te-1", SlotReport: report("te-1", cpu(1))})
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, 1, e.rm.NumRegisteredTaskExecutors())
		assert.Equal(t, 1, e.rm.NumRegisteredSlots())
		assert.Len(t, te.Calls(), 1)
		time.Sleep(DefaultRequirementCheckDelay)
		synctest.Wait()
		calls := te.Calls()
		require.Len(t, calls, 2)
		assert.Equal(t, sid("te-1", 0), calls[1].Slot)
		assert.NotEqual(t, calls[0].Allocation, calls[1].Allocation)
	})
}

func TestLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := rpc.NewLocalService()
		_, err := New(Config{RPC: svc})
		assert.Error(t, err)
		_, err = New(Config{Address: "rm"})
		assert.Error(t, err)

		rm, err := New(Config{Address: "rm", RPC: svc, Logger: discard})
		require.NoError(t, err)
		assert.NotEmpty(t, rm.ResourceID())
		assert.True(t, rm.ResourceManagerID().IsZero())
		_, err = svc.Lookup(t.Context(), "rm")
		assert.ErrorIs(t, err, rpc.ErrUnknownAddress, "not registered before Start")
		assert.ErrorIs(t, rm.DisconnectJobMaster(t.Context(), rm.ResourceManagerID(), jobgraph.NewJobMasterID(), jobgraph.NewJobID(), nil), ErrNotRunning, "before Start")

		require.NoError(t, rm.Start(t.Context()))
		assert.Error(t, rm.Start(t.Context()), "second Start")
		assert.False(t, rm.ResourceManagerID().IsZero())
		ep, err := svc.Lookup(t.Context(), "rm")
		require.NoError(t, err)
		assert.Same(t, rm, ep)

		// A slot request hangs; Close cancels it and waits for it.
		te := &fakeTaskExecutor{respond: func(ctx context.Context, _ slotCall, _ int) error {
			<-ctx.Done()
			return ctx.Err()
		}}
		require.NoError(t, svc.Register("te", te))
		_, err = rm.RegisterTaskExecutor(t.Context(), rpc.TaskExecutorRegistration{ResourceID: "te", Address: "te", SlotReport: report("te", cpu(1))})
		require.NoError(t, err)
		job, token := jobgraph.NewJobID(), jobgraph.NewJobMasterID()
		require.NoError(t, second(rm.RegisterJobMaster(t.Context(), token, "jm", "jm", job)))
		require.NoError(t, rm.DeclareRequiredResources(t.Context(), rm.ResourceManagerID(), token, rpc.ResourceRequirements{JobID: job, Requirements: []rpc.ResourceRequirement{req(unknown, 1)}}))
		synctest.Wait()
		require.Len(t, te.Calls(), 1)
		start := time.Now()
		require.NoError(t, rm.Close())
		assert.Zero(t, time.Since(start), "Close does not wait for the request timeout")
		require.NoError(t, rm.Close())

		_, err = svc.Lookup(t.Context(), "rm")
		assert.ErrorIs(t, err, rpc.ErrUnknownAddress, "unregistered by Close")
		assert.Equal(t, 0, rm.NumRegisteredTaskExecutors())
	})
}

// After Close every method that returns an error — every rpc.ResourceManagerGateway method, the
// blocklist's and Start — returns ErrClosed (and rpc.ErrClosed), whatever its arguments, and so
// does the done of each refused rpc.ResourceManagerNotifier call; nothing internal leaks. It is
// an rpc.UnreachableError: a closed ResourceManager is gone for its callers, as it is over a
// transport that unregistered it (Flink: an RPC to a stopped endpoint fails with
// RecipientUnreachableException), so heartbeats count it toward heartbeat.rpc-failure-threshold.
func TestEveryMethodAfterCloseReturnsErrClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.addTaskExecutor("te-1", cpu(1))
		job, token := e.addJob("jm")
		require.NoError(t, e.rm.Close())

		ctx := t.Context()
		notified := func(notify func(done func(error))) func() error {
			return func() error {
				heard := make(chan error, 2)
				notify(func(err error) { heard <- err })
				synctest.Wait()
				require.Len(t, heard, 1, "done called once")
				return <-heard
			}
		}
		for _, m := range []struct {
			name string
			call func() error
		}{
			{"Start", func() error { return e.rm.Start(ctx) }},
			{"RegisterTaskExecutor", func() error {
				_, err := e.rm.RegisterTaskExecutor(ctx, rpc.TaskExecutorRegistration{ResourceID: "te-2", Address: "nowhere"})
				return err
			}},
			{"SendSlotReport", func() error { return e.rm.SendSlotReport(ctx, e.rm.ResourceManagerID(), "te-1", rpc.SlotReport{}) }},
			{"NotifySlotAvailable", func() error {
				return e.rm.NotifySlotAvailable(ctx, e.rm.ResourceManagerID(), "te-1", sid("te-1", 0), jobgraph.NewAllocationID())
			}},
			{"DisconnectTaskExecutor", func() error { return e.rm.DisconnectTaskExecutor(ctx, e.rm.ResourceManagerID(), "te-1", nil) }},
			{"RegisterJobMaster", func() error {
				_, err := e.rm.RegisterJobMaster(ctx, token, "jm-2", "jm-2", job)
				return err
			}},
			{"DeclareRequiredResources", func() error { return e.declare(job, token, req(unknown, 1)) }},
			{"NotifyRequiredResources", notified(func(done func(error)) {
				e.rm.NotifyRequiredResources(e.rm.ResourceManagerID(), token, rpc.ResourceRequirements{JobID: job, Requirements: []rpc.ResourceRequirement{req(unknown, 1)}}, done)
			})},
			{"DisconnectJobMaster", func() error { return e.rm.DisconnectJobMaster(ctx, e.rm.ResourceManagerID(), token, job, nil) }},
			{"NotifyJobMasterDisconnected", notified(func(done func(error)) {
				e.rm.NotifyJobMasterDisconnected(e.rm.ResourceManagerID(), token, job, nil, done)
			})},
			{"HeartbeatFromTaskExecutor", func() error {
				return e.rm.HeartbeatFromTaskExecutor(ctx, e.rm.ResourceManagerID(), "te-1", rpc.SlotReport{})
			}},
			{"HeartbeatFromJobMaster", func() error { return e.rm.HeartbeatFromJobMaster(ctx, e.rm.ResourceManagerID(), "jm-jm") }},
			{"NotifyNewBlockedNodes", func() error { return e.rm.NotifyNewBlockedNodes(ctx, e.rm.ResourceManagerID(), nil) }},
			{"AddNewBlockedNodes", func() error { return e.rm.AddNewBlockedNodes(ctx, nil) }},
			{"BlockedNodes", func() error {
				_, err := e.rm.BlockedNodes(ctx)
				return err
			}},
			{"RequestTaskManagerInfo", func() error {
				_, err := e.rm.RequestTaskManagerInfo(ctx)
				return err
			}},
		} {
			err := m.call()
			assert.ErrorIs(t, err, ErrClosed, m.name)
			assert.ErrorIs(t, err, rpc.ErrClosed, m.name)
			assert.EqualError(t, err, "resourcemanager: closed", m.name)
			assert.True(t, rpc.IsUnreachable(err), "a closed ResourceManager is gone: %s", m.name)
		}
		assert.False(t, rpc.IsUnreachable(ErrClosed), "the sentinel itself is no call's answer")
	})
}

// blockingService is an rpc.Service whose Register blocks until released, as a host's Service
// doing I/O may.
type blockingService struct {
	*rpc.LocalService
	entered, release chan struct{}
}

func (s *blockingService) Register(address string, endpoint any) error {
	close(s.entered)
	<-s.release
	return s.LocalService.Register(address, endpoint)
}

// No lock is held while Start calls out: with Register blocked, ResourceManagerID and Close
// answer; the Start that finds the ResourceManager closed once Register returns unregisters
// again and fails with ErrClosed. (Before, Start held lifeMu across Register, and both waited.)
func TestLifecycleCallsProceedWhileRegisterBlocks(t *testing.T) {
	svc := &blockingService{LocalService: rpc.NewLocalService(), entered: make(chan struct{}), release: make(chan struct{})}
	rm, err := New(Config{Address: "rm", RPC: svc, Logger: discard})
	require.NoError(t, err)
	started := make(chan error, 1)
	go func() { started <- rm.Start(context.Background()) }()
	<-svc.entered

	answered := make(chan struct{})
	go func() {
		assert.True(t, rm.ResourceManagerID().IsZero(), "not started yet")
		assert.ErrorContains(t, rm.Start(context.Background()), "already started", "a second Start while the first runs")
		assert.NoError(t, rm.Close())
		close(answered)
	}()
	select {
	case <-answered:
	case <-time.After(10 * time.Second): // a bound for the failure, not a wait for success
		close(svc.release)
		<-started
		t.Fatal("ResourceManagerID, Start or Close waited for the blocked Register")
	}
	close(svc.release)
	err = <-started
	assert.ErrorIs(t, err, ErrClosed, "Close ran while Start registered")
	_, err = svc.Lookup(context.Background(), "rm")
	assert.ErrorIs(t, err, rpc.ErrUnknownAddress, "the late registration is undone")
}

// second returns the error of a call that also returns a value.
func second[T any](_ T, err error) error { return err }
