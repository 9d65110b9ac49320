package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// dispatcherStub implements rpc.DispatcherGateway only.
type dispatcherStub struct{ rpc.DispatcherGateway }

// taskExecutorStub implements rpc.TaskExecutorGateway only.
type taskExecutorStub struct{ rpc.TaskExecutorGateway }

func TestLocalServiceRegisterLookupUnregister(t *testing.T) {
	ctx := context.Background()
	s := rpc.NewLocalService()
	d := &dispatcherStub{}
	te := &taskExecutorStub{}
	require.NoError(t, s.Register("dispatcher", d))
	require.NoError(t, s.Register("taskexecutor-1", te))

	got, err := s.Lookup(ctx, "dispatcher")
	require.NoError(t, err)
	assert.Same(t, d, got)
	got, err = s.Lookup(ctx, "taskexecutor-1")
	require.NoError(t, err)
	assert.Same(t, te, got)

	s.Unregister("dispatcher")
	_, err = s.Lookup(ctx, "dispatcher")
	require.ErrorIs(t, err, rpc.ErrUnknownAddress)
	assert.EqualError(t, err, `rpc: no endpoint at address "dispatcher"`)
	got, err = s.Lookup(ctx, "taskexecutor-1")
	require.NoError(t, err)
	assert.Same(t, te, got, "unregistering one address leaves the others")

	// The address is free again once unregistered; unregistering twice is harmless.
	s.Unregister("dispatcher")
	d2 := &dispatcherStub{}
	require.NoError(t, s.Register("dispatcher", d2))
	got, err = s.Lookup(ctx, "dispatcher")
	require.NoError(t, err)
	assert.Same(t, d2, got)
}

func TestLocalServiceZeroValueIsUsable(t *testing.T) {
	var s rpc.LocalService
	_, err := s.Lookup(context.Background(), "dispatcher")
	require.ErrorIs(t, err, rpc.ErrUnknownAddress)
	s.Unregister("dispatcher")
	d := &dispatcherStub{}
	require.NoError(t, s.Register("dispatcher", d)) // panicked on the nil map before
	got, err := rpc.Connect[rpc.DispatcherGateway](context.Background(), &s, "dispatcher")
	require.NoError(t, err)
	assert.Same(t, d, got)
}

func TestLocalServiceRegisterTakenAddressFailsAndKeepsTheFirst(t *testing.T) {
	s := rpc.NewLocalService()
	first, second := &dispatcherStub{}, &dispatcherStub{}
	require.NoError(t, s.Register("dispatcher", first))
	err := s.Register("dispatcher", second)
	assert.EqualError(t, err, `rpc: address "dispatcher" is already registered`)
	got, err := s.Lookup(context.Background(), "dispatcher")
	require.NoError(t, err)
	assert.Same(t, first, got)
}

func TestLocalServiceLookupUnknownAddress(t *testing.T) {
	s := rpc.NewLocalService()
	got, err := s.Lookup(context.Background(), "nowhere")
	require.ErrorIs(t, err, rpc.ErrUnknownAddress)
	assert.EqualError(t, err, `rpc: no endpoint at address "nowhere"`)
	assert.Nil(t, got)
}

func TestLocalServiceLookupWithEndedContext(t *testing.T) {
	s := rpc.NewLocalService()
	require.NoError(t, s.Register("dispatcher", &dispatcherStub{}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := s.Lookup(ctx, "dispatcher")
	assert.Same(t, context.Canceled, err)
	assert.Nil(t, got)

	_, err = rpc.Connect[rpc.DispatcherGateway](ctx, s, "dispatcher")
	assert.Same(t, context.Canceled, err)
}

func TestConnect(t *testing.T) {
	ctx := context.Background()
	s := rpc.NewLocalService()
	d := &dispatcherStub{}
	require.NoError(t, s.Register("dispatcher", d))

	g, err := rpc.Connect[rpc.DispatcherGateway](ctx, s, "dispatcher")
	require.NoError(t, err)
	assert.Same(t, d, g)

	jm, err := rpc.Connect[rpc.JobMasterGateway](ctx, s, "dispatcher")
	assert.EqualError(t, err, `rpc: endpoint at "dispatcher" is a *rpc_test.dispatcherStub, not the gateway asked for`)
	assert.False(t, errors.Is(err, rpc.ErrUnknownAddress), "a type mismatch is not an unknown address")
	assert.Nil(t, jm)

	te, err := rpc.Connect[rpc.TaskExecutorGateway](ctx, s, "taskexecutor-1")
	require.ErrorIs(t, err, rpc.ErrUnknownAddress)
	assert.EqualError(t, err, `rpc: no endpoint at address "taskexecutor-1"`)
	assert.Nil(t, te)
}

func TestLocalServiceConcurrentUse(t *testing.T) {
	s := rpc.NewLocalService()
	ctx := context.Background()
	const n = 32
	done := make(chan error, n)
	for i := range n {
		go func() {
			addr := fmt.Sprintf("taskexecutor-%d", i)
			if err := s.Register(addr, &taskExecutorStub{}); err != nil {
				done <- err
				return
			}
			_, err := rpc.Connect[rpc.TaskExecutorGateway](ctx, s, addr)
			done <- err
		}()
	}
	for range n {
		require.NoError(t, <-done)
	}
	for i := range n {
		_, err := s.Lookup(ctx, fmt.Sprintf("taskexecutor-%d", i))
		require.NoError(t, err)
	}
}

func TestFencingError(t *testing.T) {
	expected := jobgraph.JobMasterID{0: 0xab, 15: 0x01}
	got := jobgraph.JobMasterID{0: 0xcd, 15: 0x02}
	var err error = &rpc.FencingError{Endpoint: "jobmaster", Expected: expected.String(), Got: got.String()}

	assert.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
	assert.EqualError(t, err, "jobmaster: fencing token mismatch: expected ab000000000000000000000000000001, got cd000000000000000000000000000002")
	assert.Contains(t, err.Error(), expected.String())
	assert.Contains(t, err.Error(), got.String())

	wrapped := fmt.Errorf("update task execution state: %w", err)
	assert.ErrorIs(t, wrapped, rpc.ErrFencingTokenMismatch)
	var fe *rpc.FencingError
	require.ErrorAs(t, wrapped, &fe)
	assert.Equal(t, rpc.FencingError{Endpoint: "jobmaster", Expected: expected.String(), Got: got.String()}, *fe)

	assert.False(t, errors.Is(err, rpc.ErrUnknownAddress))
	assert.False(t, errors.Is(err, errors.New("fencing token mismatch")), "only the sentinel matches")
}

// roundTrip encodes v as JSON and decodes it into a new T.
func roundTrip[T any](t *testing.T, v T) (T, []byte) {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	var out T
	require.NoError(t, json.Unmarshal(data, &out))
	return out, data
}

func TestTaskDeploymentDescriptorJSONRoundTrip(t *testing.T) {
	eg := jobgraph.NewExecutionGraphID()
	upstream := jobgraph.NewJobVertexID()
	vertex := jobgraph.NewJobVertexID()
	in0, in1, out := jobgraph.NewIntermediateDataSetID(), jobgraph.NewIntermediateDataSetID(), jobgraph.NewIntermediateDataSetID()
	producer := func(subtask, attempt int) jobgraph.ExecutionAttemptID {
		return jobgraph.ExecutionAttemptID{ExecutionGraphID: eg, ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: upstream, Subtask: subtask}, AttemptNumber: attempt}
	}
	self := jobgraph.ExecutionAttemptID{ExecutionGraphID: eg, ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: vertex, Subtask: 1}, AttemptNumber: 2}
	tdd := rpc.TaskDeploymentDescriptor{
		JobID:                  jobgraph.NewJobID(),
		ExecutionAttemptID:     self,
		AllocationID:           jobgraph.NewAllocationID(),
		TaskName:               "count (2/3)",
		VertexName:             "count",
		Invokable:              "count-words",
		Config:                 []byte{0, 1, 2, 0xff},
		SubtaskIndex:           1,
		Parallelism:            3,
		MaxParallelism:         128,
		AttemptNumber:          2,
		HasOperatorCoordinator: true,
		ProducedPartitions: []rpc.ResultPartitionDeploymentDescriptor{{
			ResultPartitionID:     rpc.ResultPartitionID{PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: out, PartitionIndex: 1}, ProducerID: self},
			ResultType:            jobgraph.HybridSelective,
			NumberOfSubpartitions: 4,
		}},
		InputGates: []rpc.InputGateDeploymentDescriptor{
			{
				DataSetID:  in0,
				ResultType: jobgraph.Blocking,
				Partitions: []rpc.ResultPartitionID{
					{PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: in0, PartitionIndex: 0}, ProducerID: producer(0, 0)},
					{PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: in0, PartitionIndex: 1}, ProducerID: producer(1, 3)},
				},
				ConsumedSubpartitionIndex: 1,
			},
			{
				DataSetID:                 in1,
				ResultType:                jobgraph.PipelinedBounded, // the zero value must survive too
				Partitions:                []rpc.ResultPartitionID{{PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: in1, PartitionIndex: 0}, ProducerID: producer(0, 1)}},
				ConsumedSubpartitionIndex: 0,
			},
		},
	}
	got, data := roundTrip(t, tdd)
	assert.Equal(t, tdd, got)
	assert.Contains(t, string(data), `"resultType":"HYBRID_SELECTIVE"`)
	assert.Contains(t, string(data), `"resultType":"BLOCKING"`)
	assert.Contains(t, string(data), `"resultType":"PIPELINED_BOUNDED"`)
	assert.Contains(t, string(data), `"jobId":"`+tdd.JobID.String()+`"`)
	assert.Contains(t, string(data), `"config":"AAEC/w=="`)
	assert.Contains(t, string(data), `"hasOperatorCoordinator":true`)

	// Without partitions and gates (a source-and-sink task) those fields are left out.
	bare := rpc.TaskDeploymentDescriptor{JobID: tdd.JobID, TaskName: "v (1/1)", VertexName: "v", Invokable: "noop", Parallelism: 1, MaxParallelism: 128}
	gotBare, data := roundTrip(t, bare)
	assert.Equal(t, bare, gotBare)
	assert.NotContains(t, string(data), "producedPartitions")
	assert.NotContains(t, string(data), "inputGates")
	assert.NotContains(t, string(data), "config")
	assert.NotContains(t, string(data), "hasOperatorCoordinator")
}

func TestTaskExecutionStateJSONKeepsFailureAndItsSentinels(t *testing.T) {
	attempt := jobgraph.ExecutionAttemptID{ExecutionGraphID: jobgraph.NewExecutionGraphID(), ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: jobgraph.NewJobVertexID(), Subtask: 3}, AttemptNumber: 1}
	cause := fmt.Errorf("disk full: %w", &rpc.FencingError{Endpoint: "JobMaster x", Expected: "a", Got: "b"})
	state := rpc.TaskExecutionState{ExecutionAttemptID: attempt, State: jobgraph.ExecutionStateFailed, Failure: rpc.Failure(cause)}

	got, data := roundTrip(t, state)
	want := rpc.TaskExecutionState{ExecutionAttemptID: attempt, State: jobgraph.ExecutionStateFailed,
		Failure: &jobgraph.ErrorInfo{Message: "disk full: JobMaster x: fencing token mismatch: expected a, got b", Codes: []string{"rpc.fencing-token-mismatch"}}}
	assert.Equal(t, want, got)
	assert.Contains(t, string(data), `"state":"FAILED"`)
	assert.Contains(t, string(data), `"failure":{"message":"disk full: JobMaster x: fencing token mismatch: expected a, got b","codes":["rpc.fencing-token-mismatch"]}`)
	far := got.Failure.Err()
	assert.ErrorIs(t, far, rpc.ErrFencingTokenMismatch, "the sentinel matches on the far side")
	assert.NotErrorIs(t, far, rpc.ErrUnknownAddress)
	assert.EqualError(t, far, cause.Error())

	running := rpc.TaskExecutionState{ExecutionAttemptID: attempt, State: jobgraph.ExecutionStateRunning}
	gotRunning, data := roundTrip(t, running)
	assert.Equal(t, running, gotRunning)
	assert.NotContains(t, string(data), "failure")
	assert.NotContains(t, string(data), "accumulators")

	finished := rpc.TaskExecutionState{ExecutionAttemptID: attempt, State: jobgraph.ExecutionStateFinished,
		Accumulators: map[string]jobgraph.SerializedAccumulator{
			"n":   {Kind: "IntCounter", Value: json.RawMessage(`10`)},
			"bad": {Kind: "test.Max", Failure: &jobgraph.ErrorInfo{Message: "encoding the test.Max: boom"}},
		}}
	gotFinished, data := roundTrip(t, finished)
	assert.Equal(t, finished, gotFinished)
	assert.Contains(t, string(data), `"accumulators":{"bad":{"kind":"test.Max","failure":{"message":"encoding the test.Max: boom"}},"n":{"kind":"IntCounter","value":10}}`)
}

func TestOtherMessagesJSONRoundTrip(t *testing.T) {
	job := jobgraph.NewJobID()
	te := jobgraph.ResourceID("taskexecutor-1")
	profile := jobgraph.ResourceProfile{CPUCores: 1.5, TaskHeapMemory: 512 * jobgraph.MiB, ManagedMemory: jobgraph.GiB}
	alloc := jobgraph.NewAllocationID()
	report := rpc.SlotReport{Slots: []rpc.SlotStatus{
		{SlotID: rpc.SlotID{ResourceID: te, SlotNumber: 0}, ResourceProfile: profile, AllocationID: alloc, JobID: job},
		{SlotID: rpc.SlotID{ResourceID: te, SlotNumber: 1}, ResourceProfile: profile},
	}}
	for name, check := range map[string]func(t *testing.T){
		"SlotReport": func(t *testing.T) { got, _ := roundTrip(t, report); assert.Equal(t, report, got) },
		"TaskExecutorRegistration": func(t *testing.T) {
			reg := rpc.TaskExecutorRegistration{ResourceID: te, Address: "taskexecutor/1", TotalResource: profile.Merge(profile), DefaultSlotResource: profile, SlotReport: report}
			got, _ := roundTrip(t, reg)
			assert.Equal(t, reg, got)
		},
		"ResourceRequirements": func(t *testing.T) {
			req := rpc.ResourceRequirements{JobID: job, TargetAddress: "jobmaster/1", Requirements: []rpc.ResourceRequirement{{Profile: profile, Count: 3}, {Count: 2}}}
			got, _ := roundTrip(t, req)
			assert.Equal(t, req, got)
		},
		"SlotOffer": func(t *testing.T) {
			offers := []rpc.SlotOffer{{AllocationID: alloc, SlotIndex: 1, ResourceProfile: profile}}
			got, _ := roundTrip(t, offers)
			assert.Equal(t, offers, got)
		},
		"JobStatusMessage": func(t *testing.T) {
			m := rpc.JobStatusMessage{JobID: job, Name: "wordcount", Status: jobgraph.JobStatusRunning, StartTime: 1_700_000_000_123}
			got, data := roundTrip(t, m)
			assert.Equal(t, m, got)
			assert.Contains(t, string(data), `"status":"RUNNING"`)
		},
		"AllocatedSlotReport": func(t *testing.T) {
			r := rpc.AllocatedSlotReport{JobID: job, Slots: []jobgraph.AllocationID{alloc, jobgraph.NewAllocationID()}}
			got, data := roundTrip(t, r)
			assert.Equal(t, r, got)
			assert.NotContains(t, string(data), "accumulators")
		},
		"AllocatedSlotReport with accumulators": func(t *testing.T) {
			attempt := jobgraph.ExecutionAttemptID{ExecutionGraphID: jobgraph.NewExecutionGraphID(), ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: jobgraph.NewJobVertexID(), Subtask: 2}}
			r := rpc.AllocatedSlotReport{JobID: job, Slots: []jobgraph.AllocationID{alloc}, Accumulators: []rpc.AccumulatorSnapshot{{
				JobID: job, ExecutionAttemptID: attempt,
				Accumulators: map[string]jobgraph.SerializedAccumulator{
					"words": {Kind: "LongCounter", Value: json.RawMessage(`123`)},
					"names": {Kind: "ListAccumulator", Value: json.RawMessage(`["a","b"]`)},
				},
			}}}
			got, data := roundTrip(t, r)
			assert.Equal(t, r, got)
			assert.Contains(t, string(data), `"words":{"kind":"LongCounter","value":123}`)
		},
	} {
		t.Run(name, check)
	}
}

// addressed is a Service whose endpoints are reached under "host:1/<name>".
type addressed struct{ *rpc.LocalService }

func (addressed) Address(name string) string { return "host:1/" + name }

// AddressOf is the name itself on the LocalService and the Service's own address on an
// Addresser.
func TestAddressOf(t *testing.T) {
	assert.Equal(t, "jobmaster/a/b", rpc.AddressOf(rpc.NewLocalService(), "jobmaster/a/b"))
	assert.Equal(t, "host:1/jobmaster/a/b", rpc.AddressOf(addressed{rpc.NewLocalService()}, "jobmaster/a/b"))
}
