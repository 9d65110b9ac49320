package taskexecutor

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/rpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Deterministic IDs: the last byte is n.
func jobID(n byte) jobgraph.JobID { var id jobgraph.JobID; id[15] = n; return id }
func allocID(n byte) jobgraph.AllocationID {
	var id jobgraph.AllocationID
	id[15] = n
	return id
}
func jmToken(n byte) jobgraph.JobMasterID { var id jobgraph.JobMasterID; id[15] = n; return id }
func rmToken(n byte) jobgraph.ResourceManagerID {
	var id jobgraph.ResourceManagerID
	id[15] = n
	return id
}
func dataSet(n byte) jobgraph.IntermediateDataSetID {
	var id jobgraph.IntermediateDataSetID
	id[15] = n
	return id
}

// attemptID is subtask sub, attempt a, of vertex v.
func attemptID(v byte, sub, a int) jobgraph.ExecutionAttemptID {
	var vid jobgraph.JobVertexID
	vid[15] = v
	return jobgraph.ExecutionAttemptID{
		ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: vid, Subtask: sub},
		AttemptNumber:     a,
	}
}

// partID is partition idx of data set ds, produced by attempt.
func partID(ds byte, idx int, producer jobgraph.ExecutionAttemptID) rpc.ResultPartitionID {
	return rpc.ResultPartitionID{
		PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: dataSet(ds), PartitionIndex: idx},
		ProducerID:  producer,
	}
}

var discard = slog.New(slog.DiscardHandler)

// offerCall is one OfferSlots call the fake JobMaster received.
type offerCall struct {
	Token        jobgraph.JobMasterID
	TaskExecutor jobgraph.ResourceID
	Offers       []rpc.SlotOffer
}

type registerCall struct {
	Token        jobgraph.JobMasterID
	Registration rpc.TaskExecutorRegistration
}

type stateCall struct {
	Token jobgraph.JobMasterID
	State rpc.TaskExecutionState
}

// fakeJobMaster records what TaskExecutors tell it. It accepts every offer unless decline says
// otherwise, and answers UpdateTaskExecutionState with true.
type fakeJobMaster struct {
	mu       sync.Mutex
	decline  map[jobgraph.AllocationID]bool
	offerErr error
	// offerHook, when set, runs in OfferSlots after the offer is recorded, without the lock.
	offerHook func()
	// stateHook, when set, runs in UpdateTaskExecutionState after the state is recorded.
	stateHook func(rpc.TaskExecutionState)
	registers []registerCall
	offers    []offerCall
	states    []stateCall
	acks      []ackCall
	declines  []declineCall
	// events are the operator events received; eventErr, when set, is every such call's answer.
	events   []eventCall
	eventErr error
}

// eventCall is one SendOperatorEventToCoordinator call the fake JobMaster received.
type eventCall struct {
	Token   jobgraph.JobMasterID
	Attempt jobgraph.ExecutionAttemptID
	Event   string
}

func (f *fakeJobMaster) SendOperatorEventToCoordinator(_ context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, event []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, eventCall{token, attempt, string(event)})
	return f.eventErr
}

func (f *fakeJobMaster) UpdateTaskExecutionState(ctx context.Context, token jobgraph.JobMasterID, state rpc.TaskExecutionState) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states = append(f.states, stateCall{token, state})
	if hook := f.stateHook; hook != nil {
		f.mu.Unlock()
		hook(state)
		f.mu.Lock()
	}
	return true, nil
}

func (f *fakeJobMaster) RegisterTaskExecutor(ctx context.Context, token jobgraph.JobMasterID, registration rpc.TaskExecutorRegistration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registers = append(f.registers, registerCall{token, registration})
	return nil
}

func (f *fakeJobMaster) OfferSlots(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, offers []rpc.SlotOffer) ([]rpc.SlotOffer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offers = append(f.offers, offerCall{token, taskExecutor, offers})
	if hook := f.offerHook; hook != nil {
		f.mu.Unlock()
		hook()
		f.mu.Lock()
	}
	if f.offerErr != nil {
		return nil, f.offerErr
	}
	var accepted []rpc.SlotOffer
	for _, o := range offers {
		if !f.decline[o.AllocationID] {
			accepted = append(accepted, o)
		}
	}
	return accepted, nil
}

func (f *fakeJobMaster) FailSlot(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, allocation jobgraph.AllocationID, cause *jobgraph.ErrorInfo) error {
	return nil
}

func (f *fakeJobMaster) DisconnectTaskExecutor(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error {
	return nil
}

func (f *fakeJobMaster) DisconnectResourceManager(ctx context.Context, token jobgraph.JobMasterID, rm jobgraph.ResourceManagerID, cause *jobgraph.ErrorInfo) error {
	return nil
}

func (f *fakeJobMaster) HeartbeatFromTaskExecutor(ctx context.Context, taskExecutor jobgraph.ResourceID, report rpc.AllocatedSlotReport) error {
	return nil
}

func (f *fakeJobMaster) HeartbeatFromResourceManager(ctx context.Context, rm jobgraph.ResourceID) error {
	return nil
}

func (f *fakeJobMaster) AcknowledgeCheckpoint(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.JobID, ack checkpoint.AcknowledgeCheckpoint) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acks = append(f.acks, ackCall{token, ack})
	return nil
}

func (f *fakeJobMaster) DeclineCheckpoint(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.JobID, d checkpoint.DeclineCheckpoint) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.declines = append(f.declines, declineCall{token, d})
	return nil
}

type ackCall struct {
	Token jobgraph.JobMasterID
	Ack   checkpoint.AcknowledgeCheckpoint
}

type declineCall struct {
	Token   jobgraph.JobMasterID
	Decline checkpoint.DeclineCheckpoint
}

// ackedStates returns, for checkpoint id, each acknowledging attempt's state Data as a string.
func (f *fakeJobMaster) ackedStates(id checkpoint.CheckpointID) map[jobgraph.ExecutionAttemptID]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[jobgraph.ExecutionAttemptID]string{}
	for _, a := range f.acks {
		if a.Ack.CheckpointID == id {
			out[a.Ack.Attempt] = string(a.Ack.State.Data)
		}
	}
	return out
}

func (f *fakeJobMaster) declined() []declineCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]declineCall(nil), f.declines...)
}

func (f *fakeJobMaster) numAcks() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.acks)
}

// statesOf returns the states reported for attempt, in order.
func (f *fakeJobMaster) statesOf(attempt jobgraph.ExecutionAttemptID) []jobgraph.ExecutionState {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []jobgraph.ExecutionState
	for _, s := range f.states {
		if s.State.ExecutionAttemptID == attempt {
			out = append(out, s.State.State)
		}
	}
	return out
}

// lastState returns the last report for attempt.
func (f *fakeJobMaster) lastState(t *testing.T, attempt jobgraph.ExecutionAttemptID) stateCall {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.states) - 1; i >= 0; i-- {
		if f.states[i].State.ExecutionAttemptID == attempt {
			return f.states[i]
		}
	}
	t.Fatalf("no state reported for %s", attempt)
	return stateCall{}
}

func (f *fakeJobMaster) numStates() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.states)
}

type notifyCall struct {
	TaskExecutor jobgraph.ResourceID
	Slot         rpc.SlotID
	Allocation   jobgraph.AllocationID
}

// fakeResourceManager records registrations and freed slots.
type fakeResourceManager struct {
	mu        sync.Mutex
	id        jobgraph.ResourceManagerID
	registers []rpc.TaskExecutorRegistration
	notified  []notifyCall
}

func (f *fakeResourceManager) RegisterTaskExecutor(ctx context.Context, registration rpc.TaskExecutorRegistration) (jobgraph.ResourceManagerID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registers = append(f.registers, registration)
	return f.id, nil
}

func (f *fakeResourceManager) SendSlotReport(ctx context.Context, rm jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, report rpc.SlotReport) error {
	return nil
}

func (f *fakeResourceManager) NotifySlotAvailable(ctx context.Context, rm jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, slot rpc.SlotID, allocation jobgraph.AllocationID) error {
	if rm != f.id {
		return &rpc.FencingError{Endpoint: "fake ResourceManager", Expected: f.id.String(), Got: rm.String()}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notified = append(f.notified, notifyCall{taskExecutor, slot, allocation})
	return nil
}

func (f *fakeResourceManager) DisconnectTaskExecutor(ctx context.Context, rm jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error {
	return nil
}

func (f *fakeResourceManager) RegisterJobMaster(ctx context.Context, token jobgraph.JobMasterID, jobMaster jobgraph.ResourceID, address string, job jobgraph.JobID) (jobgraph.ResourceManagerID, error) {
	return f.id, nil
}

func (f *fakeResourceManager) DeclareRequiredResources(ctx context.Context, rm jobgraph.ResourceManagerID, token jobgraph.JobMasterID, requirements rpc.ResourceRequirements) error {
	return nil
}

func (f *fakeResourceManager) DisconnectJobMaster(ctx context.Context, rm jobgraph.ResourceManagerID, token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo) error {
	return nil
}

func (f *fakeResourceManager) HeartbeatFromTaskExecutor(ctx context.Context, rm jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, report rpc.SlotReport) error {
	return nil
}

func (f *fakeResourceManager) HeartbeatFromJobMaster(ctx context.Context, rm jobgraph.ResourceManagerID, jobMaster jobgraph.ResourceID) error {
	return nil
}

func (f *fakeResourceManager) notifications() []notifyCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]notifyCall(nil), f.notified...)
}

var (
	_ rpc.JobMasterGateway       = (*fakeJobMaster)(nil)
	_ rpc.ResourceManagerGateway = (*fakeResourceManager)(nil)
)

const (
	jmAddr = "jobmaster-1"
	rmAddr = "resourcemanager"
)

// cluster is a LocalService with a fake JobMaster and ResourceManager, and TaskExecutors.
type cluster struct {
	t       *testing.T
	svc     *rpc.LocalService
	jm      *fakeJobMaster
	rm      *fakeResourceManager
	reg     *Registry
	shuffle *Shuffle
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{
		t:       t,
		svc:     rpc.NewLocalService(),
		jm:      &fakeJobMaster{decline: map[jobgraph.AllocationID]bool{}},
		rm:      &fakeResourceManager{id: rmToken(9)},
		reg:     NewRegistry(),
		shuffle: NewShuffle(ShuffleConfig{}),
	}
	require.NoError(t, c.svc.Register(jmAddr, c.jm))
	require.NoError(t, c.svc.Register(rmAddr, c.rm))
	return c
}

// startTE starts TaskExecutor te-<n> with slots slots; it is closed when the test ends.
func (c *cluster) startTE(n, slots int) *TaskExecutor {
	c.t.Helper()
	te, err := New(Config{
		ResourceID:             jobgraph.ResourceID(fmt.Sprintf("te-%d", n)),
		Address:                fmt.Sprintf("taskexecutor-%d", n),
		NumSlots:               slots,
		Registry:               c.reg,
		RPC:                    c.svc,
		ResourceManagerAddress: rmAddr,
		Shuffle:                c.shuffle,
		Logger:                 discard,
	})
	require.NoError(c.t, err)
	c.t.Cleanup(func() { require.NoError(c.t, te.Close()) })
	require.NoError(c.t, te.Start(context.Background()))
	return te
}

// allocate asks te for slot n under allocation a for job 1, offered to the JobMaster with token 1.
func (c *cluster) allocate(te *TaskExecutor, n int, a jobgraph.AllocationID) {
	c.t.Helper()
	err := te.RequestSlot(context.Background(), rpc.SlotID{ResourceID: te.ResourceID(), SlotNumber: n}, jobID(1), a,
		jobgraph.ResourceProfile{CPUCores: 0.5}, jmAddr, jmToken(1), rmToken(9))
	require.NoError(c.t, err)
}

// tdd describes subtask sub of vertex v running task code name in allocation a.
func tdd(v byte, sub int, name string, a jobgraph.AllocationID) rpc.TaskDeploymentDescriptor {
	return rpc.TaskDeploymentDescriptor{
		JobID:              jobID(1),
		ExecutionAttemptID: attemptID(v, sub, 0),
		AllocationID:       a,
		TaskName:           fmt.Sprintf("v%d (%d/2)", v, sub+1),
		VertexName:         fmt.Sprintf("v%d", v),
		Invokable:          name,
		SubtaskIndex:       sub,
		Parallelism:        2,
		MaxParallelism:     128,
	}
}
