package jobmaster_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/logtest"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// RegisterTaskExecutor makes one trip to the JobMaster's loop: the fencing check before it
// connects to the TaskExecutor is made off the loop (the token never changes; Close sets a flag
// first), the registration itself on it. A stale token is refused without a trip, and so is any
// registration once Close has begun.
func TestRegisterTaskExecutorMakesOneLoopTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newHBEnv(t, jobmaster.Config{})
		before := jobmaster.LoopPosts(e.jm)
		e.addTE("te-1")
		assert.Equal(t, uint64(1), jobmaster.LoopPosts(e.jm)-before, "loop trips of a registration")

		before = jobmaster.LoopPosts(e.jm)
		err := e.gw.RegisterTaskExecutor(e.ctx, jobgraph.NewJobMasterID(), rpc.TaskExecutorRegistration{ResourceID: "te-2", Address: "te-1"})
		require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
		assert.Equal(t, uint64(0), jobmaster.LoopPosts(e.jm)-before, "a stale token makes no trip")

		e.jm.Close()
		err = e.gw.RegisterTaskExecutor(e.ctx, e.token, rpc.TaskExecutorRegistration{ResourceID: "te-2", Address: "te-1"})
		require.ErrorIs(t, err, jobmaster.ErrClosed)
	})
}

// While the JobMaster is not registered with a ResourceManager its requirements go nowhere, so
// nothing is queued on its outbox for them: the registration declares the newest ones, once.
func TestRequirementsWaitForTheRegistrationOffTheOutbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		svc := rpc.NewLocalService()
		s := ha.NewSessionID()
		rm := &hbRM{id: jobgraph.ResourceManagerID(s)}
		require.NoError(t, svc.Register("rm", rm))
		jm, retrieval := newFollowingJobMaster(t, svc, jobgraph.NewJobMasterID())
		synctest.Wait()
		status, err := jm.RequestJobStatus(ctx)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusRunning, status, "its slots are requested")
		assert.Equal(t, uint64(0), jobmaster.OutboxPosts(jm), "nothing on the outbox before a ResourceManager is known")

		retrieval.announce("rm", s)
		synctest.Wait()
		registered, declared, _ := rm.snapshot()
		assert.Equal(t, 1, registered)
		require.Len(t, declared, 1, "declared once, at the registration")
		require.Len(t, declared[0], 1)
		assert.Equal(t, 2, declared[0][0].Count)
		assert.Equal(t, uint64(1), jobmaster.OutboxPosts(jm), "the declaration")
	})
}

// NotifyTaskExecutionState (rpc.TaskExecutionStateNotifier) returns at once, with the JobMaster's
// loop held, and the loop applies the states in the order given, fenced as
// UpdateTaskExecutionState is: done hears nil for the session's token, a *rpc.FencingError for a
// stale one (the state dropped), and once the JobMaster is closed ErrClosed at once.
func TestNotifyTaskExecutionStateQueuesFencedStates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newHBEnv(t, jobmaster.Config{})
		te1 := e.addTE("te-1")
		e.offer(te1, 0, "A")
		require.Equal(t, []string{"src (1/2) @ A"}, te1.deployed(e.names))
		attempt := te1.snapshot().submits[0].ExecutionAttemptID
		n, ok := e.gw.(rpc.TaskExecutionStateNotifier)
		require.True(t, ok, "the in-process JobMaster takes states without its caller waiting")

		var got []error
		record := func(err error) { got = append(got, err) }
		release := jobmaster.HoldLoop(e.jm)
		n.NotifyTaskExecutionState(e.token, rpc.TaskExecutionState{ExecutionAttemptID: attempt, State: jobgraph.ExecutionStateInitializing}, record)
		n.NotifyTaskExecutionState(jobgraph.NewJobMasterID(), rpc.TaskExecutionState{ExecutionAttemptID: attempt, State: jobgraph.ExecutionStateFailed}, record)
		n.NotifyTaskExecutionState(e.token, rpc.TaskExecutionState{ExecutionAttemptID: attempt, State: jobgraph.ExecutionStateRunning}, record)
		assert.Empty(t, got, "nothing applied while the loop is held")
		release()
		synctest.Wait()
		require.Len(t, got, 3)
		assert.NoError(t, got[0])
		assert.ErrorIs(t, got[1], rpc.ErrFencingTokenMismatch)
		assert.NoError(t, got[2])
		a, err := e.jm.RequestJob(e.ctx)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.ExecutionStateRunning, a.JobVertex(e.g.Vertices[0].ID).Subtasks[0].State, "the stale FAILED was dropped")

		e.jm.Close()
		got = nil
		n.NotifyTaskExecutionState(e.token, rpc.TaskExecutionState{ExecutionAttemptID: attempt, State: jobgraph.ExecutionStateFinished}, record)
		require.Len(t, got, 1, "answered at once")
		assert.ErrorIs(t, got[0], jobmaster.ErrClosed)
	})
}

// notifyingRM is an hbRM that also takes declarations and disconnects without its caller
// waiting (rpc.ResourceManagerNotifier, as the in-process ResourceManager): it records them and
// keeps the done callbacks for the test.
type notifyingRM struct {
	*hbRM
	mu           sync.Mutex
	notified     [][]rpc.ResourceRequirement
	disconnected []jobgraph.JobID
	dones        []func(error)
}

func (n *notifyingRM) NotifyRequiredResources(_ jobgraph.ResourceManagerID, _ jobgraph.JobMasterID, reqs rpc.ResourceRequirements, done func(error)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notified = append(n.notified, reqs.Requirements)
	n.dones = append(n.dones, done)
}

func (n *notifyingRM) NotifyJobMasterDisconnected(_ jobgraph.ResourceManagerID, _ jobgraph.JobMasterID, job jobgraph.JobID, _ *jobgraph.ErrorInfo, done func(error)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.disconnected = append(n.disconnected, job)
	if done != nil {
		n.dones = append(n.dones, done)
	}
}

// A JobMaster whose ResourceManager's gateway is an rpc.ResourceManagerNotifier sends its
// declarations and its disconnect through it, never waiting for an answer: Close returns with
// none given. A declaration the ResourceManager refuses is logged, as one refused by
// DeclareRequiredResources is.
func TestDeclarationsAndDisconnectGoThroughTheNotifier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		svc := rpc.NewLocalService()
		rm := &notifyingRM{hbRM: &hbRM{id: jobgraph.NewResourceManagerID()}}
		require.NoError(t, svc.Register("rm", rm))
		logger, logged := logtest.NewRecorder(slog.LevelWarn)
		g := jobgraph.New("one", jobgraph.Batch)
		g.AddVertex("v", "noop", 2)
		f, err := jobmaster.NewFactory(g, jobmaster.Config{RPC: svc, ResourceManagerAddress: "rm", Logger: logger})
		require.NoError(t, err)
		jm, err := f.Create(ctx, jobgraph.NewJobMasterID())
		require.NoError(t, err)
		defer jm.Close()
		synctest.Wait()
		rm.mu.Lock()
		notified, dones := slices.Clone(rm.notified), slices.Clone(rm.dones)
		rm.mu.Unlock()
		// The two subtasks are two regions, each its own slot request: the outbox may send the
		// first declaration (one slot) before the second request joins it, so there are one or
		// two notifications, and the last asks for both slots.
		require.NotEmpty(t, notified)
		require.LessOrEqual(t, len(notified), 2)
		assert.Equal(t, 2, notified[len(notified)-1][0].Count, "the latest declaration asks for both slots")
		_, declared, _ := rm.snapshot()
		assert.Empty(t, declared, "no DeclareRequiredResources call")
		dones[0](assert.AnError)
		synctest.Wait()
		require.Len(t, logged(), 1)
		assert.Equal(t, "declaring resource requirements failed", logged()[0].Msg)

		jm.Close()
		rm.mu.Lock()
		defer rm.mu.Unlock()
		assert.Equal(t, []jobgraph.JobID{g.JobID}, rm.disconnected)
	})
}

// notifyingTE is an hbTE that also takes FreeSlot and DisconnectJobMaster without its caller
// waiting (rpc.TaskExecutorNotifier, as the in-process TaskExecutor): it records them and keeps
// the done callbacks for the test.
type notifyingTE struct {
	*hbTE
	mu           sync.Mutex
	freed        []jobgraph.AllocationID
	disconnected []jobgraph.JobID
	dones        []func(error)
}

func (n *notifyingTE) NotifyRequestSlot(rpc.SlotID, jobgraph.JobID, jobgraph.AllocationID, jobgraph.ResourceProfile, string, jobgraph.JobMasterID, jobgraph.ResourceManagerID, func(error)) {
}

func (n *notifyingTE) NotifyFreeSlot(a jobgraph.AllocationID, _ *jobgraph.ErrorInfo, done func(error)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.freed = append(n.freed, a)
	n.dones = append(n.dones, done)
}

func (n *notifyingTE) NotifyDisconnectJobMaster(_ jobgraph.JobMasterID, job jobgraph.JobID, _ *jobgraph.ErrorInfo, done func(error)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.disconnected = append(n.disconnected, job)
}

// A JobMaster frees slots at and disconnects from a TaskExecutor whose gateway is an
// rpc.TaskExecutorNotifier through it, never waiting for the answer: Close returns with none
// given, FreeSlot and DisconnectJobMaster were not called, and an error handed to a free's done
// afterwards changes nothing of the closed JobMaster.
func TestFreeSlotAndDisconnectGoThroughTheNotifier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newHBEnv(t, jobmaster.Config{})
		te := &notifyingTE{hbTE: &hbTE{id: "te-1", start: e.start, jm: e.gw, job: e.g.JobID}}
		require.NoError(t, e.svc.Register("te-1", te))
		require.NoError(t, e.gw.RegisterTaskExecutor(e.ctx, e.token, rpc.TaskExecutorRegistration{ResourceID: "te-1", Address: "te-1"}))
		a := e.offer(te.hbTE, 0, "A")
		require.Equal(t, []string{"src (1/2) @ A"}, te.deployed(e.names))

		e.jm.Close()
		te.mu.Lock()
		defer te.mu.Unlock()
		assert.Equal(t, []jobgraph.AllocationID{a}, te.freed)
		assert.Equal(t, []jobgraph.JobID{e.g.JobID}, te.disconnected)
		snap := te.snapshot()
		assert.Empty(t, snap.frees, "no FreeSlot call")
		assert.Empty(t, snap.disconnects, "no DisconnectJobMaster call")
		require.Len(t, te.dones, 1)
		te.dones[0](assert.AnError) // the answer comes after the JobMaster closed: dropped
	})
}
