package grpctransport_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
	"github.com/jobgraph/jobgraph/rpc"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

// call is one call an endpoint received: the method and its arguments after the context.
type call struct {
	method string
	args   []any
}

// recorder records calls and answers err (nil: success).
type recorder struct {
	mu    sync.Mutex
	calls []call
	err   error
}

func (r *recorder) rec(method string, args ...any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{method, args})
	return r.err
}

func (r *recorder) last(t *testing.T) call {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.calls, "no call arrived")
	return r.calls[len(r.calls)-1]
}

// The answers the fakes give.
var (
	answerRMID   = jobgraph.NewResourceManagerID()
	answerStatus = jobgraph.JobStatusRestarting
	answerJobs   = []rpc.JobStatusMessage{{JobID: jobgraph.NewJobID(), Name: "wordcount", Status: jobgraph.JobStatusRunning, StartTime: 1700000000123}}
	answerResult = &jobgraph.JobResult{JobID: jobgraph.NewJobID(), Name: "wordcount", Status: jobgraph.JobStatusFailed,
		Failure: jobgraph.NewErrorInfo(errors.New("boom"), time.Unix(1700000000, 5)), NetRuntime: 1500 * time.Millisecond}
)

type fakeDispatcher struct{ recorder }

func (f *fakeDispatcher) SubmitJob(_ context.Context, g *jobgraph.JobGraph) error {
	return f.rec("SubmitJob", g)
}
func (f *fakeDispatcher) CancelJob(_ context.Context, id jobgraph.JobID) error {
	return f.rec("CancelJob", id)
}
func (f *fakeDispatcher) RequestJobStatus(_ context.Context, id jobgraph.JobID) (jobgraph.JobStatus, error) {
	return answerStatus, f.rec("RequestJobStatus", id)
}
func (f *fakeDispatcher) RequestJobResult(_ context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error) {
	return answerResult, f.rec("RequestJobResult", id)
}
func (f *fakeDispatcher) ListJobs(context.Context) ([]rpc.JobStatusMessage, error) {
	return answerJobs, f.rec("ListJobs")
}
func (f *fakeDispatcher) TriggerSavepoint(_ context.Context, id jobgraph.JobID, dir string) (string, error) {
	return dir + "/savepoint-1", f.rec("TriggerSavepoint", id, dir)
}
func (f *fakeDispatcher) StopWithSavepoint(_ context.Context, id jobgraph.JobID, dir string) (string, error) {
	return dir + "/savepoint-2", f.rec("StopWithSavepoint", id, dir)
}
func (f *fakeDispatcher) TriggerCheckpoint(_ context.Context, id jobgraph.JobID) (checkpoint.CheckpointID, error) {
	return 42, f.rec("TriggerCheckpoint", id)
}

type fakeJobMaster struct{ recorder }

func (f *fakeJobMaster) UpdateTaskExecutionState(_ context.Context, token jobgraph.JobMasterID, s rpc.TaskExecutionState) (bool, error) {
	return true, f.rec("UpdateTaskExecutionState", token, s)
}
func (f *fakeJobMaster) RegisterTaskExecutor(_ context.Context, token jobgraph.JobMasterID, r rpc.TaskExecutorRegistration) error {
	return f.rec("RegisterTaskExecutor", token, r)
}
func (f *fakeJobMaster) OfferSlots(_ context.Context, token jobgraph.JobMasterID, te jobgraph.ResourceID, offers []rpc.SlotOffer) ([]rpc.SlotOffer, error) {
	return offers[:1], f.rec("OfferSlots", token, te, offers)
}
func (f *fakeJobMaster) FailSlot(_ context.Context, token jobgraph.JobMasterID, te jobgraph.ResourceID, a jobgraph.AllocationID, cause *jobgraph.ErrorInfo) error {
	return f.rec("FailSlot", token, te, a, cause)
}
func (f *fakeJobMaster) DisconnectTaskExecutor(_ context.Context, token jobgraph.JobMasterID, te jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error {
	return f.rec("DisconnectTaskExecutor", token, te, cause)
}
func (f *fakeJobMaster) DisconnectResourceManager(_ context.Context, token jobgraph.JobMasterID, rm jobgraph.ResourceManagerID, cause *jobgraph.ErrorInfo) error {
	return f.rec("DisconnectResourceManager", token, rm, cause)
}
func (f *fakeJobMaster) HeartbeatFromTaskExecutor(_ context.Context, te jobgraph.ResourceID, r rpc.AllocatedSlotReport) error {
	return f.rec("HeartbeatFromTaskExecutor", te, r)
}
func (f *fakeJobMaster) HeartbeatFromResourceManager(_ context.Context, rm jobgraph.ResourceID) error {
	return f.rec("HeartbeatFromResourceManager", rm)
}
func (f *fakeJobMaster) AcknowledgeCheckpoint(_ context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, ack checkpoint.AcknowledgeCheckpoint) error {
	return f.rec("AcknowledgeCheckpoint", token, job, ack)
}
func (f *fakeJobMaster) DeclineCheckpoint(_ context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, d checkpoint.DeclineCheckpoint) error {
	return f.rec("DeclineCheckpoint", token, job, d)
}
func (f *fakeJobMaster) SendOperatorEventToCoordinator(_ context.Context, token jobgraph.JobMasterID, a jobgraph.ExecutionAttemptID, event []byte) error {
	return f.rec("SendOperatorEventToCoordinator", token, a, event)
}

type fakeResourceManager struct{ recorder }

func (f *fakeResourceManager) RegisterTaskExecutor(_ context.Context, r rpc.TaskExecutorRegistration) (jobgraph.ResourceManagerID, error) {
	return answerRMID, f.rec("RegisterTaskExecutor", r)
}
func (f *fakeResourceManager) SendSlotReport(_ context.Context, rm jobgraph.ResourceManagerID, te jobgraph.ResourceID, r rpc.SlotReport) error {
	return f.rec("SendSlotReport", rm, te, r)
}
func (f *fakeResourceManager) NotifySlotAvailable(_ context.Context, rm jobgraph.ResourceManagerID, te jobgraph.ResourceID, slot rpc.SlotID, a jobgraph.AllocationID) error {
	return f.rec("NotifySlotAvailable", rm, te, slot, a)
}
func (f *fakeResourceManager) DisconnectTaskExecutor(_ context.Context, rm jobgraph.ResourceManagerID, te jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error {
	return f.rec("DisconnectTaskExecutor", rm, te, cause)
}
func (f *fakeResourceManager) RegisterJobMaster(_ context.Context, token jobgraph.JobMasterID, jm jobgraph.ResourceID, address string, job jobgraph.JobID) (jobgraph.ResourceManagerID, error) {
	return answerRMID, f.rec("RegisterJobMaster", token, jm, address, job)
}
func (f *fakeResourceManager) DeclareRequiredResources(_ context.Context, rm jobgraph.ResourceManagerID, token jobgraph.JobMasterID, r rpc.ResourceRequirements) error {
	return f.rec("DeclareRequiredResources", rm, token, r)
}
func (f *fakeResourceManager) DisconnectJobMaster(_ context.Context, rm jobgraph.ResourceManagerID, token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo) error {
	return f.rec("DisconnectJobMaster", rm, token, job, cause)
}
func (f *fakeResourceManager) HeartbeatFromTaskExecutor(_ context.Context, rm jobgraph.ResourceManagerID, te jobgraph.ResourceID, r rpc.SlotReport) error {
	return f.rec("HeartbeatFromTaskExecutor", rm, te, r)
}
func (f *fakeResourceManager) HeartbeatFromJobMaster(_ context.Context, rm jobgraph.ResourceManagerID, jm jobgraph.ResourceID) error {
	return f.rec("HeartbeatFromJobMaster", rm, jm)
}

type fakeTaskExecutor struct {
	recorder
	submitErrs []error
}

func (f *fakeTaskExecutor) RequestSlot(_ context.Context, slot rpc.SlotID, job jobgraph.JobID, a jobgraph.AllocationID, p jobgraph.ResourceProfile, jmAddress string, jm jobgraph.JobMasterID, rm jobgraph.ResourceManagerID) error {
	return f.rec("RequestSlot", slot, job, a, p, jmAddress, jm, rm)
}
func (f *fakeTaskExecutor) SubmitTask(_ context.Context, token jobgraph.JobMasterID, tdd rpc.TaskDeploymentDescriptor) error {
	return f.rec("SubmitTask", token, tdd)
}
func (f *fakeTaskExecutor) SubmitTasks(_ context.Context, token jobgraph.JobMasterID, tdds []rpc.TaskDeploymentDescriptor) ([]error, error) {
	return f.submitErrs, f.rec("SubmitTasks", token, tdds)
}
func (f *fakeTaskExecutor) CancelTask(_ context.Context, a jobgraph.ExecutionAttemptID) error {
	return f.rec("CancelTask", a)
}
func (f *fakeTaskExecutor) FreeSlot(_ context.Context, a jobgraph.AllocationID, cause *jobgraph.ErrorInfo) error {
	return f.rec("FreeSlot", a, cause)
}
func (f *fakeTaskExecutor) ReleasePartitions(_ context.Context, job jobgraph.JobID, ps []rpc.ResultPartitionID) error {
	return f.rec("ReleasePartitions", job, ps)
}
func (f *fakeTaskExecutor) DisconnectJobMaster(_ context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo) error {
	return f.rec("DisconnectJobMaster", token, job, cause)
}
func (f *fakeTaskExecutor) HeartbeatFromJobMaster(_ context.Context, jm jobgraph.ResourceID) error {
	return f.rec("HeartbeatFromJobMaster", jm)
}
func (f *fakeTaskExecutor) HeartbeatFromResourceManager(_ context.Context, rm jobgraph.ResourceID) error {
	return f.rec("HeartbeatFromResourceManager", rm)
}
func (f *fakeTaskExecutor) TriggerCheckpoint(_ context.Context, token jobgraph.JobMasterID, a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, ts time.Time, props checkpoint.CheckpointProperties) error {
	return f.rec("TriggerCheckpoint", token, a, id, ts, props)
}
func (f *fakeTaskExecutor) ConfirmCheckpoint(_ context.Context, token jobgraph.JobMasterID, a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, ts time.Time) error {
	return f.rec("ConfirmCheckpoint", token, a, id, ts)
}
func (f *fakeTaskExecutor) AbortCheckpoint(_ context.Context, token jobgraph.JobMasterID, a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, ts time.Time) error {
	return f.rec("AbortCheckpoint", token, a, id, ts)
}
func (f *fakeTaskExecutor) SendOperatorEventToTask(_ context.Context, token jobgraph.JobMasterID, a jobgraph.ExecutionAttemptID, event []byte) error {
	return f.rec("SendOperatorEventToTask", token, a, event)
}

var (
	_ rpc.DispatcherGateway      = (*fakeDispatcher)(nil)
	_ rpc.JobMasterGateway       = (*fakeJobMaster)(nil)
	_ rpc.ResourceManagerGateway = (*fakeResourceManager)(nil)
	_ rpc.TaskExecutorGateway    = (*fakeTaskExecutor)(nil)
)

// connect serves ep on a Service of its own (the server) and returns a stub of G from another
// Service (the client), so every call crosses a real loopback connection between two Services.
func connect[G any](t *testing.T, ep any) G {
	t.Helper()
	server := newService(t, grpctransport.Options{})
	t.Cleanup(func() { assert.NoError(t, server.Close()) })
	client := newService(t, grpctransport.Options{})
	t.Cleanup(func() { assert.NoError(t, client.Close()) })
	require.NoError(t, server.Register("endpoint", ep))
	g, err := rpc.Connect[G](t.Context(), client, server.Address("endpoint"))
	require.NoError(t, err)
	return g
}

// Values with every field set, to see each cross.
func attempt(subtask, n int) jobgraph.ExecutionAttemptID {
	return jobgraph.ExecutionAttemptID{ExecutionGraphID: jobgraph.NewExecutionGraphID(),
		ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: jobgraph.NewJobVertexID(), Subtask: subtask}, AttemptNumber: n}
}

var profile = jobgraph.ResourceProfile{CPUCores: 1.5, TaskHeapMemory: 1 << 30, TaskOffHeapMemory: 2 << 20, ManagedMemory: 3 << 20, NetworkMemory: 4 << 20}

func cause() *jobgraph.ErrorInfo {
	p := jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: jobgraph.NewIntermediateDataSetID(), PartitionIndex: 3}
	info := jobgraph.NewErrorInfo(fmt.Errorf("lost: %w", &rpc.HeartbeatTimeoutError{Target: "TaskExecutor te-1", Timeout: time.Minute}), time.Unix(1700000000, 789))
	info.UnavailablePartition = &p
	return info
}

func slotReport() rpc.SlotReport {
	return rpc.SlotReport{Slots: []rpc.SlotStatus{
		{SlotID: rpc.SlotID{ResourceID: "te-1", SlotNumber: 0}, ResourceProfile: profile},
		{SlotID: rpc.SlotID{ResourceID: "te-1", SlotNumber: 1}, ResourceProfile: profile, AllocationID: jobgraph.NewAllocationID(), JobID: jobgraph.NewJobID()},
	}}
}

func registration() rpc.TaskExecutorRegistration {
	return rpc.TaskExecutorRegistration{ResourceID: "te-1", Address: "127.0.0.1:1234/te-1", TotalResource: profile,
		DefaultSlotResource: jobgraph.ResourceProfile{CPUCores: 0.75}, SlotReport: slotReport()}
}

func accumulators() map[string]jobgraph.SerializedAccumulator {
	return map[string]jobgraph.SerializedAccumulator{
		"lines":  {Kind: "LongCounter", Value: json.RawMessage(`12345`)},
		"broken": {Kind: "IntCounter", Failure: jobgraph.NewErrorInfo(jobgraph.ErrAccumulatorTypeMismatch, time.Time{})},
	}
}

func tdd(job jobgraph.JobID) rpc.TaskDeploymentDescriptor {
	producer := attempt(0, 2)
	ds := jobgraph.NewIntermediateDataSetID()
	part := rpc.ResultPartitionID{PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: ds, PartitionIndex: 0}, ProducerID: producer}
	self := attempt(1, 3)
	return rpc.TaskDeploymentDescriptor{JobID: job, JobName: "wordcount", ExecutionAttemptID: self, AllocationID: jobgraph.NewAllocationID(),
		TaskName: "count (2/4)", VertexName: "count", Invokable: "count-words", Config: []byte{1, 2, 3}, SubtaskIndex: 1, Parallelism: 4,
		MaxParallelism: 128, AttemptNumber: 3,
		ProducedPartitions: []rpc.ResultPartitionDeploymentDescriptor{{ResultPartitionID: rpc.ResultPartitionID{
			PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: jobgraph.NewIntermediateDataSetID(), PartitionIndex: 1}, ProducerID: self},
			ResultType: jobgraph.Blocking, NumberOfSubpartitions: 2}},
		InputGates: []rpc.InputGateDeploymentDescriptor{{DataSetID: ds, ResultType: jobgraph.Pipelined, Partitions: []rpc.ResultPartitionID{part},
			ConsumedSubpartitionIndex: 1, ShuffleDescriptors: []rpc.ShuffleDescriptor{{ResultPartitionID: part, ProducerLocation: "te-2", Data: []byte("127.0.0.1:9")}}}},
		CheckpointingEnabled: true, HasCheckpointCoordinator: true,
		TaskRestore: &rpc.TaskRestore{CheckpointID: 7, State: checkpoint.StateHandle{Data: []byte("state"), Size: 5}},
	}
}

func TestDispatcherGatewayRoundTrip(t *testing.T) {
	f := &fakeDispatcher{}
	gw := connect[rpc.DispatcherGateway](t, f)
	ctx := t.Context()
	job := jobgraph.NewJobID()

	g := jobgraph.New("wordcount", jobgraph.Batch)
	src := g.AddVertex("source", "read-files", 4)
	cnt := g.AddVertex("count", "count-words", 2)
	g.Connect(src, cnt, jobgraph.AllToAll, jobgraph.Blocking)
	require.NoError(t, gw.SubmitJob(ctx, g))
	got := f.last(t)
	require.Equal(t, "SubmitJob", got.method)
	want, err := json.Marshal(g)
	require.NoError(t, err)
	have, err := json.Marshal(got.args[0])
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(have), "the JobGraph arrives whole")

	require.NoError(t, gw.SubmitJob(ctx, nil))
	assert.Equal(t, call{"SubmitJob", []any{(*jobgraph.JobGraph)(nil)}}, f.last(t), "a nil graph arrives nil")

	require.NoError(t, gw.CancelJob(ctx, job))
	assert.Equal(t, call{"CancelJob", []any{job}}, f.last(t))

	st, err := gw.RequestJobStatus(ctx, job)
	require.NoError(t, err)
	assert.Equal(t, answerStatus, st)
	assert.Equal(t, call{"RequestJobStatus", []any{job}}, f.last(t))

	res, err := gw.RequestJobResult(ctx, job)
	require.NoError(t, err)
	wantRes, _ := json.Marshal(answerResult)
	haveRes, _ := json.Marshal(res)
	assert.JSONEq(t, string(wantRes), string(haveRes))
	assert.Equal(t, answerResult.Failure.Message, res.Failure.Message)

	jobs, err := gw.ListJobs(ctx)
	require.NoError(t, err)
	assert.Equal(t, answerJobs, jobs)

	path, err := gw.TriggerSavepoint(ctx, job, "/tmp/sp")
	require.NoError(t, err)
	assert.Equal(t, "/tmp/sp/savepoint-1", path)
	assert.Equal(t, call{"TriggerSavepoint", []any{job, "/tmp/sp"}}, f.last(t))

	path, err = gw.StopWithSavepoint(ctx, job, "/tmp/sp")
	require.NoError(t, err)
	assert.Equal(t, "/tmp/sp/savepoint-2", path)
	assert.Equal(t, call{"StopWithSavepoint", []any{job, "/tmp/sp"}}, f.last(t))

	id, err := gw.TriggerCheckpoint(ctx, job)
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(42), id)
	assert.Equal(t, call{"TriggerCheckpoint", []any{job}}, f.last(t))
}

func TestJobMasterGatewayRoundTrip(t *testing.T) {
	f := &fakeJobMaster{}
	gw := connect[rpc.JobMasterGateway](t, f)
	ctx := t.Context()
	token, job, a := jobgraph.NewJobMasterID(), jobgraph.NewJobID(), attempt(2, 1)

	state := rpc.TaskExecutionState{ExecutionAttemptID: a, State: jobgraph.ExecutionStateFailed, Failure: cause(), Accumulators: accumulators()}
	ok, err := gw.UpdateTaskExecutionState(ctx, token, state)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, call{"UpdateTaskExecutionState", []any{token, state}}, f.last(t))

	reg := registration()
	require.NoError(t, gw.RegisterTaskExecutor(ctx, token, reg))
	assert.Equal(t, call{"RegisterTaskExecutor", []any{token, reg}}, f.last(t))

	offers := []rpc.SlotOffer{{AllocationID: jobgraph.NewAllocationID(), SlotIndex: 1, ResourceProfile: profile}, {AllocationID: jobgraph.NewAllocationID(), SlotIndex: 2}}
	accepted, err := gw.OfferSlots(ctx, token, "te-1", offers)
	require.NoError(t, err)
	assert.Equal(t, offers[:1], accepted)
	assert.Equal(t, call{"OfferSlots", []any{token, jobgraph.ResourceID("te-1"), offers}}, f.last(t))

	alloc, c := jobgraph.NewAllocationID(), cause()
	require.NoError(t, gw.FailSlot(ctx, token, "te-1", alloc, c))
	assert.Equal(t, call{"FailSlot", []any{token, jobgraph.ResourceID("te-1"), alloc, c}}, f.last(t))
	require.NoError(t, gw.FailSlot(ctx, token, "te-1", alloc, nil))
	assert.Equal(t, call{"FailSlot", []any{token, jobgraph.ResourceID("te-1"), alloc, (*jobgraph.ErrorInfo)(nil)}}, f.last(t), "a nil cause arrives nil")

	require.NoError(t, gw.DisconnectTaskExecutor(ctx, token, "te-1", c))
	assert.Equal(t, call{"DisconnectTaskExecutor", []any{token, jobgraph.ResourceID("te-1"), c}}, f.last(t))

	rm := jobgraph.NewResourceManagerID()
	require.NoError(t, gw.DisconnectResourceManager(ctx, token, rm, c))
	assert.Equal(t, call{"DisconnectResourceManager", []any{token, rm, c}}, f.last(t))

	report := rpc.AllocatedSlotReport{JobID: job, Slots: []jobgraph.AllocationID{alloc, jobgraph.NewAllocationID()},
		Accumulators:              []rpc.AccumulatorSnapshot{{JobID: job, ExecutionAttemptID: a, Accumulators: accumulators()}},
		ExecutionDeploymentReport: &rpc.ExecutionDeploymentReport{Executions: []jobgraph.ExecutionAttemptID{a, attempt(0, 0)}}}
	require.NoError(t, gw.HeartbeatFromTaskExecutor(ctx, "te-1", report))
	assert.Equal(t, call{"HeartbeatFromTaskExecutor", []any{jobgraph.ResourceID("te-1"), report}}, f.last(t))
	require.NoError(t, gw.HeartbeatFromTaskExecutor(ctx, "te-1", rpc.AllocatedSlotReport{JobID: job}))
	assert.Equal(t, call{"HeartbeatFromTaskExecutor", []any{jobgraph.ResourceID("te-1"), rpc.AllocatedSlotReport{JobID: job}}}, f.last(t),
		"no ExecutionDeploymentReport stays none")

	require.NoError(t, gw.HeartbeatFromResourceManager(ctx, "rm-1"))
	assert.Equal(t, call{"HeartbeatFromResourceManager", []any{jobgraph.ResourceID("rm-1")}}, f.last(t))

	ack := checkpoint.AcknowledgeCheckpoint{Attempt: a, CheckpointID: 9, State: checkpoint.StateHandle{Data: []byte("d"), Files: []string{"/cp/1"}, Size: 77,
		OperatorState: keygroup.OperatorState[[]byte]{"offsets": {Mode: keygroup.Union, Elements: [][]byte{[]byte("o1"), []byte("o2")}}},
		KeyedState:    &keygroup.KeyGroupsState[[]byte]{Range: keygroup.KeyGroupRange{Start: 0, End: 63}, Groups: map[int][]byte{3: []byte("k3")}}}}
	require.NoError(t, gw.AcknowledgeCheckpoint(ctx, token, job, ack))
	assert.Equal(t, call{"AcknowledgeCheckpoint", []any{token, job, ack}}, f.last(t))

	decline := checkpoint.DeclineCheckpoint{Attempt: a, CheckpointID: 9, Reason: checkpoint.CheckpointDeclinedTaskNotReady, Message: "not ready"}
	require.NoError(t, gw.DeclineCheckpoint(ctx, token, job, decline))
	assert.Equal(t, call{"DeclineCheckpoint", []any{token, job, decline}}, f.last(t))

	require.NoError(t, gw.SendOperatorEventToCoordinator(ctx, token, a, []byte("split-request")))
	assert.Equal(t, call{"SendOperatorEventToCoordinator", []any{token, a, []byte("split-request")}}, f.last(t))
}

func TestResourceManagerGatewayRoundTrip(t *testing.T) {
	f := &fakeResourceManager{}
	gw := connect[rpc.ResourceManagerGateway](t, f)
	ctx := t.Context()
	rm, token, job := jobgraph.NewResourceManagerID(), jobgraph.NewJobMasterID(), jobgraph.NewJobID()

	reg := registration()
	id, err := gw.RegisterTaskExecutor(ctx, reg)
	require.NoError(t, err)
	assert.Equal(t, answerRMID, id)
	assert.Equal(t, call{"RegisterTaskExecutor", []any{reg}}, f.last(t))

	report := slotReport()
	require.NoError(t, gw.SendSlotReport(ctx, rm, "te-1", report))
	assert.Equal(t, call{"SendSlotReport", []any{rm, jobgraph.ResourceID("te-1"), report}}, f.last(t))

	slot, alloc := rpc.SlotID{ResourceID: "te-1", SlotNumber: 3}, jobgraph.NewAllocationID()
	require.NoError(t, gw.NotifySlotAvailable(ctx, rm, "te-1", slot, alloc))
	assert.Equal(t, call{"NotifySlotAvailable", []any{rm, jobgraph.ResourceID("te-1"), slot, alloc}}, f.last(t))

	c := cause()
	require.NoError(t, gw.DisconnectTaskExecutor(ctx, rm, "te-1", c))
	assert.Equal(t, call{"DisconnectTaskExecutor", []any{rm, jobgraph.ResourceID("te-1"), c}}, f.last(t))

	id, err = gw.RegisterJobMaster(ctx, token, "jm-1", "127.0.0.1:1/jm-1", job)
	require.NoError(t, err)
	assert.Equal(t, answerRMID, id)
	assert.Equal(t, call{"RegisterJobMaster", []any{token, jobgraph.ResourceID("jm-1"), "127.0.0.1:1/jm-1", job}}, f.last(t))

	reqs := rpc.ResourceRequirements{JobID: job, TargetAddress: "127.0.0.1:1/jm-1", Requirements: []rpc.ResourceRequirement{{Profile: profile, Count: 4}, {Count: 2}}}
	require.NoError(t, gw.DeclareRequiredResources(ctx, rm, token, reqs))
	assert.Equal(t, call{"DeclareRequiredResources", []any{rm, token, reqs}}, f.last(t))

	require.NoError(t, gw.DisconnectJobMaster(ctx, rm, token, job, c))
	assert.Equal(t, call{"DisconnectJobMaster", []any{rm, token, job, c}}, f.last(t))

	require.NoError(t, gw.HeartbeatFromTaskExecutor(ctx, rm, "te-1", report))
	assert.Equal(t, call{"HeartbeatFromTaskExecutor", []any{rm, jobgraph.ResourceID("te-1"), report}}, f.last(t))

	require.NoError(t, gw.HeartbeatFromJobMaster(ctx, rm, "jm-1"))
	assert.Equal(t, call{"HeartbeatFromJobMaster", []any{rm, jobgraph.ResourceID("jm-1")}}, f.last(t))
}

func TestTaskExecutorGatewayRoundTrip(t *testing.T) {
	f := &fakeTaskExecutor{}
	gw := connect[rpc.TaskExecutorGateway](t, f)
	ctx := t.Context()
	rm, token, job, a := jobgraph.NewResourceManagerID(), jobgraph.NewJobMasterID(), jobgraph.NewJobID(), attempt(1, 4)

	slot, alloc := rpc.SlotID{ResourceID: "te-1", SlotNumber: 1}, jobgraph.NewAllocationID()
	require.NoError(t, gw.RequestSlot(ctx, slot, job, alloc, profile, "127.0.0.1:1/jm-1", token, rm))
	assert.Equal(t, call{"RequestSlot", []any{slot, job, alloc, profile, "127.0.0.1:1/jm-1", token, rm}}, f.last(t))

	d := tdd(job)
	require.NoError(t, gw.SubmitTask(ctx, token, d))
	assert.Equal(t, call{"SubmitTask", []any{token, d}}, f.last(t), "the descriptor arrives whole")

	d2 := tdd(job)
	errs, err := gw.SubmitTasks(ctx, token, []rpc.TaskDeploymentDescriptor{d, d2})
	require.NoError(t, err)
	assert.Nil(t, errs, "all started")
	assert.Equal(t, call{"SubmitTasks", []any{token, []rpc.TaskDeploymentDescriptor{d, d2}}}, f.last(t))
	f.submitErrs = []error{nil, &rpc.FencingError{Endpoint: "te-1", Expected: "a", Got: "b"}}
	errs, err = gw.SubmitTasks(ctx, token, []rpc.TaskDeploymentDescriptor{d, d2})
	require.NoError(t, err)
	require.Len(t, errs, 2)
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], rpc.ErrFencingTokenMismatch)
	var fe *rpc.FencingError
	require.ErrorAs(t, errs[1], &fe)
	assert.Equal(t, rpc.FencingError{Endpoint: "te-1", Expected: "a", Got: "b"}, *fe)

	require.NoError(t, gw.CancelTask(ctx, a))
	assert.Equal(t, call{"CancelTask", []any{a}}, f.last(t))

	c := cause()
	require.NoError(t, gw.FreeSlot(ctx, alloc, c))
	assert.Equal(t, call{"FreeSlot", []any{alloc, c}}, f.last(t))

	ps := []rpc.ResultPartitionID{d.InputGates[0].Partitions[0], d.ProducedPartitions[0].ResultPartitionID}
	require.NoError(t, gw.ReleasePartitions(ctx, job, ps))
	assert.Equal(t, call{"ReleasePartitions", []any{job, ps}}, f.last(t))

	require.NoError(t, gw.DisconnectJobMaster(ctx, token, job, c))
	assert.Equal(t, call{"DisconnectJobMaster", []any{token, job, c}}, f.last(t))

	require.NoError(t, gw.HeartbeatFromJobMaster(ctx, "jm-1"))
	assert.Equal(t, call{"HeartbeatFromJobMaster", []any{jobgraph.ResourceID("jm-1")}}, f.last(t))
	require.NoError(t, gw.HeartbeatFromResourceManager(ctx, "rm-1"))
	assert.Equal(t, call{"HeartbeatFromResourceManager", []any{jobgraph.ResourceID("rm-1")}}, f.last(t))

	ts := time.Unix(1700000000, 987654321)
	props := checkpoint.CheckpointPropertiesFor(checkpoint.SyncSavepoint)
	require.NoError(t, gw.TriggerCheckpoint(ctx, token, a, 11, ts, props))
	assert.Equal(t, call{"TriggerCheckpoint", []any{token, a, checkpoint.CheckpointID(11), ts, props}}, f.last(t))
	require.NoError(t, gw.ConfirmCheckpoint(ctx, token, a, 11, ts))
	assert.Equal(t, call{"ConfirmCheckpoint", []any{token, a, checkpoint.CheckpointID(11), ts}}, f.last(t))
	require.NoError(t, gw.AbortCheckpoint(ctx, token, a, 12, ts))
	assert.Equal(t, call{"AbortCheckpoint", []any{token, a, checkpoint.CheckpointID(12), ts}}, f.last(t))

	require.NoError(t, gw.SendOperatorEventToTask(ctx, token, a, []byte("split-1")))
	assert.Equal(t, call{"SendOperatorEventToTask", []any{token, a, []byte("split-1")}}, f.last(t))
}
