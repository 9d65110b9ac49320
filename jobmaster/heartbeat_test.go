package jobmaster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// hbFree is one FreeSlot call a fake TaskExecutor received: when (since the test began), which
// slot, and whether it failed.
type hbFree struct {
	At         time.Duration
	Allocation jobgraph.AllocationID
	Failed     bool
}

// hbTE is a fake TaskExecutor. It answers each heartbeat request at once with
// HeartbeatFromTaskExecutor, listing the slots in held, unless it is silent. onFree, if set,
// answers FreeSlot calls (it may block); a freed slot leaves held unless the call failed.
type hbTE struct {
	id    jobgraph.ResourceID
	start time.Time

	mu          sync.Mutex
	jm          rpc.JobMasterGateway
	job         jobgraph.JobID
	silent      bool
	held        []jobgraph.AllocationID
	onFree      func(n int, a jobgraph.AllocationID) error
	frees       []hbFree
	requests    []time.Duration
	submits     []rpc.TaskDeploymentDescriptor
	submitCalls []int            // the number of descriptors of each SubmitTasks call
	failSubmit  map[string]error // by task name: what SubmitTasks answers for it
	disconnects []error
	ckCalls     []string // "trigger 1 src (1/2)#0 @100ms", "confirm …", "abort …"
	failTrigger error    // what TriggerCheckpoint answers
	eventGate   chan struct{}
	eventErr    error
	cancels     []string // the tasks CancelTask was called for, "<task>#<attempt> @<time>"
}

func (f *hbTE) RequestSlot(context.Context, rpc.SlotID, jobgraph.JobID, jobgraph.AllocationID, jobgraph.ResourceProfile, string, jobgraph.JobMasterID, jobgraph.ResourceManagerID) error {
	return errors.New("not used")
}

func (f *hbTE) SubmitTask(_ context.Context, _ jobgraph.JobMasterID, tdd rpc.TaskDeploymentDescriptor) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submits = append(f.submits, tdd)
	return nil
}

func (f *hbTE) SubmitTasks(_ context.Context, _ jobgraph.JobMasterID, tdds []rpc.TaskDeploymentDescriptor) ([]error, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submits = append(f.submits, tdds...)
	f.submitCalls = append(f.submitCalls, len(tdds))
	var errs []error
	for i, tdd := range tdds {
		if err := f.failSubmit[tdd.TaskName]; err != nil {
			if errs == nil {
				errs = make([]error, len(tdds))
			}
			errs[i] = err
		}
	}
	return errs, nil
}

func (f *hbTE) CancelTask(_ context.Context, a jobgraph.ExecutionAttemptID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tdd := range f.submits {
		if tdd.ExecutionAttemptID == a {
			f.cancels = append(f.cancels, fmt.Sprintf("%s#%d @%v", tdd.TaskName, tdd.AttemptNumber, time.Since(f.start)))
		}
	}
	return nil
}

func (f *hbTE) FreeSlot(_ context.Context, a jobgraph.AllocationID, _ *jobgraph.ErrorInfo) error {
	f.mu.Lock()
	hook, n := f.onFree, len(f.frees)+1
	f.mu.Unlock()
	var err error
	if hook != nil {
		err = hook(n, a)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frees = append(f.frees, hbFree{At: time.Since(f.start), Allocation: a, Failed: err != nil})
	if err == nil {
		f.held = slices.DeleteFunc(f.held, func(x jobgraph.AllocationID) bool { return x == a })
	}
	return err
}

func (f *hbTE) ReleasePartitions(context.Context, jobgraph.JobID, []rpc.ResultPartitionID) error {
	return nil
}

func (f *hbTE) DisconnectJobMaster(_ context.Context, _ jobgraph.JobMasterID, _ jobgraph.JobID, cause *jobgraph.ErrorInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.disconnects = append(f.disconnects, cause.Err())
	return nil
}

func (f *hbTE) HeartbeatFromJobMaster(ctx context.Context, _ jobgraph.ResourceID) error {
	f.mu.Lock()
	f.requests = append(f.requests, time.Since(f.start))
	silent, jm := f.silent, f.jm
	report := rpc.AllocatedSlotReport{JobID: f.job, Slots: slices.Clone(f.held)}
	f.mu.Unlock()
	if silent {
		return errors.New("no answer")
	}
	return jm.HeartbeatFromTaskExecutor(ctx, f.id, report)
}

func (f *hbTE) HeartbeatFromResourceManager(context.Context, jobgraph.ResourceID) error { return nil }

func (f *hbTE) TriggerCheckpoint(_ context.Context, _ jobgraph.JobMasterID, a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, _ time.Time, _ checkpoint.CheckpointProperties) error {
	f.recordCheckpointCall("trigger", a, id)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failTrigger
}

func (f *hbTE) ConfirmCheckpoint(_ context.Context, _ jobgraph.JobMasterID, a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, _ time.Time) error {
	f.recordCheckpointCall("confirm", a, id)
	return nil
}

func (f *hbTE) AbortCheckpoint(_ context.Context, _ jobgraph.JobMasterID, a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, _ time.Time) error {
	f.recordCheckpointCall("abort", a, id)
	return nil
}

// SendOperatorEventToTask records "event <event> <task>#<attempt> @<time>" among ckCalls; with
// eventGate set it then waits until eventGate is closed (or ctx ends) before it answers eventErr.
func (f *hbTE) SendOperatorEventToTask(ctx context.Context, _ jobgraph.JobMasterID, a jobgraph.ExecutionAttemptID, event []byte) error {
	f.recordCheckpointCall("event "+string(event), a, -1)
	f.mu.Lock()
	gate, err := f.eventGate, f.eventErr
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

// recordCheckpointCall names a by the task it was deployed as.
func (f *hbTE) recordCheckpointCall(kind string, a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := a.String()
	for _, tdd := range f.submits {
		if tdd.ExecutionAttemptID == a {
			name = fmt.Sprintf("%s#%d", tdd.TaskName, tdd.AttemptNumber)
		}
	}
	if id < 0 { // an operator event
		f.ckCalls = append(f.ckCalls, fmt.Sprintf("%s %s @%v", kind, name, time.Since(f.start)))
		return
	}
	f.ckCalls = append(f.ckCalls, fmt.Sprintf("%s %d %s @%v", kind, id, name, time.Since(f.start)))
}

var _ rpc.TaskExecutorGateway = (*hbTE)(nil)

func (f *hbTE) set(fn func(f *hbTE)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *hbTE) snapshot() hbTE {
	f.mu.Lock()
	defer f.mu.Unlock()
	return hbTE{
		held: slices.Clone(f.held), frees: slices.Clone(f.frees), requests: slices.Clone(f.requests),
		submits: slices.Clone(f.submits), disconnects: slices.Clone(f.disconnects), submitCalls: slices.Clone(f.submitCalls),
		ckCalls: slices.Clone(f.ckCalls), cancels: slices.Clone(f.cancels),
	}
}

// deployed lists "<task name> @ <allocation>" for each SubmitTask, in order.
func (f *hbTE) deployed(names map[jobgraph.AllocationID]string) []string {
	var out []string
	for _, tdd := range f.snapshot().submits {
		out = append(out, tdd.TaskName+" @ "+names[tdd.AllocationID])
	}
	return out
}

// hbRM is a fake ResourceManager recording registrations, declarations and heartbeats.
type hbRM struct {
	id         jobgraph.ResourceManagerID // what RegisterJobMaster answers
	mu         sync.Mutex
	registered []jobgraph.ResourceID
	declared   [][]rpc.ResourceRequirement
	heartbeats []jobgraph.ResourceID
	// deadlines: for each declaration, how long its ctx had left (-1: no deadline).
	deadlines []time.Duration
	// heartbeatErrs are the errors the next HeartbeatFromJobMaster calls fail with, in order;
	// registerErrs those of the next RegisterJobMaster calls (nil: registered).
	heartbeatErrs, registerErrs []error
}

func (r *hbRM) RegisterTaskExecutor(context.Context, rpc.TaskExecutorRegistration) (jobgraph.ResourceManagerID, error) {
	return jobgraph.ResourceManagerID{}, nil
}
func (r *hbRM) SendSlotReport(context.Context, jobgraph.ResourceManagerID, jobgraph.ResourceID, rpc.SlotReport) error {
	return nil
}
func (r *hbRM) NotifySlotAvailable(context.Context, jobgraph.ResourceManagerID, jobgraph.ResourceID, rpc.SlotID, jobgraph.AllocationID) error {
	return nil
}
func (r *hbRM) DisconnectTaskExecutor(context.Context, jobgraph.ResourceManagerID, jobgraph.ResourceID, *jobgraph.ErrorInfo) error {
	return nil
}
func (r *hbRM) RegisterJobMaster(_ context.Context, _ jobgraph.JobMasterID, jm jobgraph.ResourceID, _ string, _ jobgraph.JobID) (jobgraph.ResourceManagerID, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registered = append(r.registered, jm)
	if len(r.registerErrs) > 0 {
		err := r.registerErrs[0]
		r.registerErrs = r.registerErrs[1:]
		if err != nil {
			return jobgraph.ResourceManagerID{}, err
		}
	}
	return r.id, nil
}
func (r *hbRM) DeclareRequiredResources(ctx context.Context, rm jobgraph.ResourceManagerID, _ jobgraph.JobMasterID, reqs rpc.ResourceRequirements) error {
	if rm != r.id {
		return &rpc.FencingError{Endpoint: "fake ResourceManager", Expected: r.id.String(), Got: rm.String()}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.declared = append(r.declared, reqs.Requirements)
	left := time.Duration(-1)
	if d, ok := ctx.Deadline(); ok {
		left = time.Until(d)
	}
	r.deadlines = append(r.deadlines, left)
	return nil
}
func (r *hbRM) DisconnectJobMaster(context.Context, jobgraph.ResourceManagerID, jobgraph.JobMasterID, jobgraph.JobID, *jobgraph.ErrorInfo) error {
	return nil
}
func (r *hbRM) HeartbeatFromTaskExecutor(context.Context, jobgraph.ResourceManagerID, jobgraph.ResourceID, rpc.SlotReport) error {
	return nil
}
func (r *hbRM) HeartbeatFromJobMaster(_ context.Context, rm jobgraph.ResourceManagerID, jm jobgraph.ResourceID) error {
	if rm != r.id {
		return &rpc.FencingError{Endpoint: "fake ResourceManager", Expected: r.id.String(), Got: rm.String()}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heartbeats = append(r.heartbeats, jm)
	if len(r.heartbeatErrs) > 0 {
		err := r.heartbeatErrs[0]
		r.heartbeatErrs = r.heartbeatErrs[1:]
		return err
	}
	return nil
}

// hbEnv is a JobMaster for src (2 subtasks) → BLOCKING → sink (2 subtasks) with a fake
// ResourceManager and fake TaskExecutors on an in-process Service. Build it in a synctest bubble.
type hbEnv struct {
	t     *testing.T
	ctx   context.Context
	start time.Time
	svc   *rpc.LocalService
	rm    *hbRM
	g     *jobgraph.JobGraph
	jm    jobmaster.JobMaster
	gw    rpc.JobMasterGateway
	token jobgraph.JobMasterID
	// names maps the allocations the test offered to short names ("A", "B", …).
	names map[jobgraph.AllocationID]string
}

func newHBEnv(t *testing.T, cfg jobmaster.Config) *hbEnv {
	t.Helper()
	g := jobgraph.New("src-sink", jobgraph.Batch)
	src := g.AddVertex("src", "noop", 2)
	sink := g.AddVertex("sink", "noop", 2)
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Blocking)
	return newHBEnvFor(t, cfg, g)
}

// newHBEnvFor is newHBEnv for the job g.
func newHBEnvFor(t *testing.T, cfg jobmaster.Config, g *jobgraph.JobGraph) *hbEnv {
	t.Helper()
	e := &hbEnv{t: t, ctx: context.Background(), start: time.Now(), svc: rpc.NewLocalService(), rm: &hbRM{id: jobgraph.NewResourceManagerID()},
		token: jobgraph.NewJobMasterID(), names: map[jobgraph.AllocationID]string{}, g: g}
	require.NoError(t, e.svc.Register("rm", e.rm))
	cfg.RPC, cfg.ResourceManagerAddress = e.svc, "rm"
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	f, err := jobmaster.NewFactory(e.g, cfg)
	require.NoError(t, err)
	e.jm, err = f.Create(e.ctx, e.token)
	require.NoError(t, err)
	t.Cleanup(func() { e.jm.Close() })
	e.gw = e.jm.Gateway()
	synctest.Wait()
	return e
}

// addTE serves a fake TaskExecutor under its ResourceID and registers it with the JobMaster.
func (e *hbEnv) addTE(id jobgraph.ResourceID) *hbTE {
	e.t.Helper()
	te := &hbTE{id: id, start: e.start, jm: e.gw, job: e.g.JobID}
	require.NoError(e.t, e.svc.Register(string(id), te))
	require.NoError(e.t, e.gw.RegisterTaskExecutor(e.ctx, e.token, rpc.TaskExecutorRegistration{ResourceID: id, Address: string(id)}))
	return te
}

// offer offers te's slot index as allocation name; the JobMaster must accept it.
func (e *hbEnv) offer(te *hbTE, index int, name string) jobgraph.AllocationID {
	e.t.Helper()
	a := jobgraph.NewAllocationID()
	e.names[a] = name
	o := rpc.SlotOffer{AllocationID: a, SlotIndex: index}
	accepted, err := e.gw.OfferSlots(e.ctx, e.token, te.id, []rpc.SlotOffer{o})
	require.NoError(e.t, err)
	require.Equal(e.t, []rpc.SlotOffer{o}, accepted)
	te.set(func(f *hbTE) { f.held = append(f.held, a) })
	synctest.Wait()
	return a
}

// report tells the JobMaster the task deployed as taskName on te reached state.
func (e *hbEnv) report(te *hbTE, taskName string, state jobgraph.ExecutionState) {
	e.t.Helper()
	for _, tdd := range te.snapshot().submits {
		if tdd.TaskName == taskName {
			applied, err := e.gw.UpdateTaskExecutionState(e.ctx, e.token, rpc.TaskExecutionState{ExecutionAttemptID: tdd.ExecutionAttemptID, State: state})
			require.NoError(e.t, err)
			require.True(e.t, applied)
			synctest.Wait()
			return
		}
	}
	e.t.Fatalf("%s was not deployed to %s", taskName, te.id)
}

func (e *hbEnv) status() jobgraph.JobStatus {
	e.t.Helper()
	st, err := e.jm.RequestJobStatus(e.ctx)
	require.NoError(e.t, err)
	return st
}

func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// runSources deploys src (1/2) on te-1 slot A and src (2/2) on te-2 slot B, both RUNNING.
func (e *hbEnv) runSources() (te1, te2 *hbTE) {
	e.t.Helper()
	te1, te2 = e.addTE("te-1"), e.addTE("te-2")
	e.offer(te1, 0, "A")
	e.offer(te2, 0, "B")
	require.Equal(e.t, []string{"src (1/2) @ A"}, te1.deployed(e.names))
	require.Equal(e.t, []string{"src (2/2) @ B"}, te2.deployed(e.names))
	e.report(te1, "src (1/2)", jobgraph.ExecutionStateRunning)
	e.report(te2, "src (2/2)", jobgraph.ExecutionStateRunning)
	return te1, te2
}

func TestFreeSlotFailureReturnsTheSlotToThePoolWhileItsTaskExecutorIsRegistered(t *testing.T) {
	for _, registered := range []bool{true, false} {
		name := map[bool]string{true: "registered", false: "disconnected"}[registered]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newHBEnv(t, jobmaster.Config{IdleSlotTimeout: 2500 * time.Millisecond, HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second})
				te1, te2 := e.runSources()

				// FreeSlot on te-1 blocks until the test lets it fail.
				release := make(chan struct{})
				te1.set(func(f *hbTE) {
					f.onFree = func(int, jobgraph.AllocationID) error { <-release; return errors.New("TaskExecutor unreachable") }
				})
				// src (1/2) finishes: the job no longer needs slot A, which goes back to te-1 after
				// slot.idle.timeout (2.5 s: between two heartbeats).
				e.report(te1, "src (1/2)", jobgraph.ExecutionStateFinished)
				advance(2500*time.Millisecond - time.Nanosecond)
				assert.Empty(t, te1.snapshot().frees)
				advance(time.Nanosecond) // FreeSlot(A) is in flight now

				if !registered {
					require.NoError(t, e.gw.DisconnectTaskExecutor(e.ctx, e.token, "te-1", rpc.Failure(errors.New("te-1 went away"))))
				}
				// src (2/2) finishes: both sink subtasks need a slot; B serves one, the other waits.
				e.report(te2, "src (2/2)", jobgraph.ExecutionStateFinished)
				close(release)
				synctest.Wait()
				a := te1.snapshot().frees
				require.Len(t, a, 1)
				assert.Equal(t, "A", e.names[a[0].Allocation])
				assert.True(t, a[0].Failed)

				if registered {
					// te-1 is still registered: A is back in the pool, and the waiting sink takes it.
					assert.Equal(t, []string{"src (1/2) @ A", "sink (2/2) @ A"}, te1.deployed(e.names))
					assert.Equal(t, []string{"src (2/2) @ B", "sink (1/2) @ B"}, te2.deployed(e.names))
					return
				}
				// te-1 is gone: A is dropped for good and the second sink waits for another slot.
				assert.Equal(t, []string{"src (1/2) @ A"}, te1.deployed(e.names))
				assert.Equal(t, []string{"src (2/2) @ B", "sink (1/2) @ B"}, te2.deployed(e.names))
				e.offer(te2, 1, "C")
				assert.Equal(t, []string{"src (2/2) @ B", "sink (1/2) @ B", "sink (2/2) @ C"}, te2.deployed(e.names))
				assert.Equal(t, []string{"src (1/2) @ A"}, te1.deployed(e.names))
			})
		})
	}
}

func TestSlotTheJobNoLongerNeedsIsFreedAgainAtTheNextHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newHBEnv(t, jobmaster.Config{IdleSlotTimeout: 2500 * time.Millisecond, HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second})
		te1, _ := e.runSources()
		// The first FreeSlot fails; the slot is offered to the pool again, which does not need it
		// (only src (2/2) still runs). te-1 keeps listing it in its heartbeats, so the next one,
		// at 3 s, frees it again.
		te1.set(func(f *hbTE) {
			f.onFree = func(n int, _ jobgraph.AllocationID) error {
				if n == 1 {
					return errors.New("TaskExecutor busy")
				}
				return nil
			}
		})
		e.report(te1, "src (1/2)", jobgraph.ExecutionStateFinished)
		advance(time.Minute)
		got := te1.snapshot()
		require.Len(t, got.frees, 2)
		for _, f := range got.frees {
			assert.Equal(t, "A", e.names[f.Allocation])
		}
		assert.Equal(t, []hbFree{{2500 * time.Millisecond, got.frees[0].Allocation, true}, {3 * time.Second, got.frees[0].Allocation, false}}, got.frees)
		assert.Empty(t, got.held)
		assert.Equal(t, jobgraph.JobStatusRunning, e.status())
	})
}

func TestSilentTaskExecutorIsDisconnectedAfterExactlyTheHeartbeatTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newHBEnv(t, jobmaster.Config{HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second})
		te1, te2 := e.runSources()
		e.report(te1, "src (1/2)", jobgraph.ExecutionStateFinished)

		// te-2 answers the requests at 1 s and 2 s, sends a heartbeat of its own at 2.5 s, and
		// falls silent.
		advance(2500 * time.Millisecond)
		require.NoError(t, e.gw.HeartbeatFromTaskExecutor(e.ctx, "te-2", rpc.AllocatedSlotReport{JobID: e.g.JobID}))
		te2.set(func(f *hbTE) { f.silent = true })
		advance(5*time.Second - time.Nanosecond)
		assert.Equal(t, jobgraph.JobStatusRunning, e.status())
		assert.Empty(t, te2.snapshot().disconnects)

		advance(time.Nanosecond) // 7.5 s
		select {
		case <-e.jm.Done():
		default:
			t.Fatal("the job did not end at 7.5 s")
		}
		res := e.jm.Result()
		assert.Equal(t, jobgraph.JobStatusFailed, res.Archived.Status)
		require.Error(t, res.Err)
		assert.ErrorIs(t, res.Err, jobmaster.ErrHeartbeatTimeout)
		assert.Contains(t, res.Err.Error(), "heartbeat of TaskExecutor te-2 timed out after 5s")
		assert.ErrorIs(t, res.Err, rpc.ErrHeartbeatTimeout)
		var timeout *rpc.HeartbeatTimeoutError // a type a user can name, outside the internal packages
		require.ErrorAs(t, res.Err, &timeout)
		assert.Equal(t, rpc.HeartbeatTimeoutError{Target: "TaskExecutor te-2", Timeout: 5 * time.Second}, *timeout)
		assert.Equal(t, 7500*time.Millisecond, res.Archived.StatusTimestamps[jobgraph.JobStatusFailed].Sub(e.start))
		src := res.Archived.JobVertices[0].Subtasks
		assert.Equal(t, jobgraph.ExecutionStateFinished, src[0].State)
		assert.Equal(t, jobgraph.ExecutionStateFailed, src[1].State)
		assert.Contains(t, src[1].FailureMessage, "heartbeat of TaskExecutor te-2 timed out after 5s")

		// Heartbeats were requested every second; te-2 is told to drop the job, and from now on
		// its heartbeats are refused while te-1's are taken.
		got := te2.snapshot()
		assert.Equal(t, []time.Duration{1 * time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 5 * time.Second, 6 * time.Second, 7 * time.Second}, got.requests)
		require.Len(t, got.disconnects, 1)
		assert.ErrorIs(t, got.disconnects[0], jobmaster.ErrHeartbeatTimeout)
		err := e.gw.HeartbeatFromTaskExecutor(e.ctx, "te-2", rpc.AllocatedSlotReport{JobID: e.g.JobID})
		assert.ErrorIs(t, err, jobmaster.ErrUnknownTaskExecutor)
		assert.NoError(t, e.gw.HeartbeatFromTaskExecutor(e.ctx, "te-1", rpc.AllocatedSlotReport{JobID: e.g.JobID}))
		advance(time.Minute)
		assert.Len(t, te2.snapshot().requests, 7, "no more requests to a disconnected TaskExecutor")
		assert.Len(t, te1.snapshot().requests, 67, "te-1 still answers: requests at 1 s, 2 s, …, 67 s")
	})
}

func TestJobMasterAnswersTheResourceManagerAndRegistersAgainWhenDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newHBEnv(t, jobmaster.Config{})
		require.NoError(t, e.gw.HeartbeatFromResourceManager(e.ctx, "rm"))
		synctest.Wait()
		e.rm.mu.Lock()
		heartbeats, registered, declared := slices.Clone(e.rm.heartbeats), slices.Clone(e.rm.registered), len(e.rm.declared)
		e.rm.mu.Unlock()
		require.Len(t, heartbeats, 1)
		assert.True(t, strings.HasPrefix(string(heartbeats[0]), "jobmaster-"), heartbeats[0])
		assert.Equal(t, heartbeats, registered, "the heartbeat names the JobMaster as it registered")
		require.NotZero(t, declared)

		// A disconnect from another ResourceManager (an earlier leader's, say) is fenced off: the
		// JobMaster neither registers again nor declares.
		err := e.gw.DisconnectResourceManager(e.ctx, e.token, jobgraph.NewResourceManagerID(), rpc.Failure(errors.New("heartbeat timed out")))
		require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
		synctest.Wait()
		e.rm.mu.Lock()
		assert.Equal(t, registered, e.rm.registered, "no registration after a stale disconnect")
		assert.Len(t, e.rm.declared, declared, "no declaration after a stale disconnect")
		e.rm.mu.Unlock()

		// The ResourceManager dropped the JobMaster (and the job's requirements): the JobMaster
		// registers again and declares its requirements anew.
		err = e.gw.DisconnectResourceManager(e.ctx, e.token, e.rm.id, rpc.Failure(errors.New("heartbeat timed out")))
		require.NoError(t, err)
		synctest.Wait()
		e.rm.mu.Lock()
		defer e.rm.mu.Unlock()
		assert.Equal(t, []jobgraph.ResourceID{registered[0], registered[0]}, e.rm.registered)
		require.Len(t, e.rm.declared, declared+1)
		assert.Equal(t, []rpc.ResourceRequirement{{Count: 2}}, e.rm.declared[declared-1], "before")
		assert.Equal(t, []rpc.ResourceRequirement{{Count: 2}}, e.rm.declared[declared], "declared again")

		_, err = jobmaster.NewFactory(e.g, jobmaster.Config{RPC: e.svc, ResourceManagerAddress: "rm", HeartbeatInterval: time.Minute})
		assert.EqualError(t, err, "jobmaster: invalid configuration: heartbeat: heartbeat.timeout 50s is shorter than heartbeat.interval 1m0s")
	})
}

// registrations is how many times the JobMaster registered with e's ResourceManager and how
// many declarations it made.
func (e *hbEnv) registrations() (registered, declared int) {
	e.rm.mu.Lock()
	defer e.rm.mu.Unlock()
	return len(e.rm.registered), len(e.rm.declared)
}

func TestJobMasterRegistersAgainWhenTheResourceManagerHeartbeatTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// heartbeat.timeout 50 s (the default): the ResourceManager asks at 10, 20 and 30 s.
		e := newHBEnv(t, jobmaster.Config{})
		registered, declared := e.registrations()
		require.Equal(t, 1, registered)
		for range 3 {
			advance(10 * time.Second)
			require.NoError(t, e.gw.HeartbeatFromResourceManager(e.ctx, "rm"))
			synctest.Wait()
		}
		advance(50*time.Second - time.Millisecond) // 79.999 s: 50 s after the last request, less 1 ms
		r, d := e.registrations()
		assert.Equal(t, []int{1, declared}, []int{r, d}, "not yet")
		advance(time.Millisecond) // 80 s
		r, d = e.registrations()
		assert.Equal(t, []int{2, declared + 1}, []int{r, d}, "registered again at 80 s and declared anew")

		// Monitored again from the new registration on: silent for 50 s more, registered a third time.
		advance(50*time.Second - time.Millisecond)
		r, _ = e.registrations()
		assert.Equal(t, 2, r)
		advance(time.Millisecond)
		r, _ = e.registrations()
		assert.Equal(t, 3, r)
	})
}

func TestJobMasterRegistersAgainWhenTheResourceManagerIsUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// heartbeat.rpc-failure-threshold 2 (the default): two answers in a row that find the
		// ResourceManager unreachable, and the JobMaster registers again at once.
		e := newHBEnv(t, jobmaster.Config{})
		gone := rpc.Unreachable(errors.New("connection refused"))
		e.rm.mu.Lock()
		e.rm.heartbeatErrs = []error{gone, nil, gone, errors.New("answered with an error"), gone}
		e.rm.mu.Unlock()
		heartbeat := func() int {
			t.Helper()
			require.NoError(t, e.gw.HeartbeatFromResourceManager(e.ctx, "rm"))
			synctest.Wait()
			r, _ := e.registrations()
			return r
		}
		assert.Equal(t, 1, heartbeat(), "unreachable once")
		assert.Equal(t, 1, heartbeat(), "a success starts the count over")
		assert.Equal(t, 1, heartbeat(), "unreachable once")
		assert.Equal(t, 1, heartbeat(), "an error the ResourceManager answered with counts for nothing")
		assert.Equal(t, 2, heartbeat(), "unreachable twice with no success between: registered again")
		assert.Equal(t, 2, heartbeat(), "answered fine")
	})
}

func TestJobMasterTriesTheRegistrationAgainUntilItSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// With a fixed ResourceManager address: silent for 50 s, the JobMaster registers again;
		// the ResourceManager refuses twice, and the JobMaster tries again every
		// cluster.registration.error-delay (10 s) until it is registered, then declares.
		e := newHBEnv(t, jobmaster.Config{})
		_, declared := e.registrations()
		e.rm.mu.Lock()
		e.rm.registerErrs = []error{errors.New("busy"), errors.New("busy")}
		e.rm.mu.Unlock()
		advance(50 * time.Second)
		r, d := e.registrations()
		assert.Equal(t, []int{2, declared}, []int{r, d}, "at 50 s: refused")
		advance(10*time.Second - time.Millisecond)
		r, _ = e.registrations()
		assert.Equal(t, 2, r, "not before the error delay")
		advance(time.Millisecond)
		r, d = e.registrations()
		assert.Equal(t, []int{3, declared}, []int{r, d}, "at 60 s: refused again")
		advance(10 * time.Second)
		r, d = e.registrations()
		assert.Equal(t, []int{4, declared + 1}, []int{r, d}, "at 70 s: registered, and declared")
		advance(49 * time.Second)
		r, _ = e.registrations()
		assert.Equal(t, 4, r, "monitored again from 70 s on, no retry timer left")
		advance(time.Second)
		r, _ = e.registrations()
		assert.Equal(t, 5, r, "silent from 70 s to 120 s")
	})
}
