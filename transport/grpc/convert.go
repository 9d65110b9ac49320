package grpctransport

import (
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/transport/grpc/internal/pb"
)

// Conversions between the rpc package's plain-data messages and their protobuf form. Encoding
// never fails; decoding collects the first malformed field in a dec. Empty lists and maps decode
// as nil.

// dec collects the first decoding error.
type dec struct{ err error }

func (d *dec) failf(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

// status is the error a server answers a malformed request with.
func (d *dec) status() error {
	return status.Errorf(codes.InvalidArgument, "grpctransport: malformed request: %v", d.err)
}

// reply is the error a client returns for a malformed answer.
func (d *dec) reply(method, address string) error {
	return fmt.Errorf("grpctransport: malformed answer to %s from %q: %w", method, address, d.err)
}

// id16 decodes a 16-byte ID; empty bytes are the zero ID.
func id16[T ~[16]byte](d *dec, field string, b []byte) T {
	var id T
	switch len(b) {
	case 0:
	case 16:
		copy(id[:], b)
	default:
		d.failf("%s: %d bytes, want 16", field, len(b))
	}
	return id
}

// b16 encodes a 16-byte ID (the zero ID as no bytes).
func b16[T ~[16]byte](id T) []byte {
	if id == (T{}) {
		return nil
	}
	b := make([]byte, 16)
	copy(b, id[:])
	return b
}

func (d *dec) int(field string, v int64) int {
	if int64(int(v)) != v {
		d.failf("%s: %d out of range", field, v)
	}
	return int(v)
}

func (d *dec) uint8(field string, v uint32) uint8 {
	if v > 255 {
		d.failf("%s: %d out of range", field, v)
	}
	return uint8(v)
}

func (d *dec) json(field string, data []byte, v any) {
	if d.err != nil {
		return
	}
	if err := json.Unmarshal(data, v); err != nil {
		d.failf("%s: %v", field, err)
	}
}

// ---- IDs ----

func toPBAttempt(a jobgraph.ExecutionAttemptID) *pb.ExecutionAttemptID {
	return &pb.ExecutionAttemptID{ExecutionGraphId: b16(a.ExecutionGraphID), JobVertexId: b16(a.ExecutionVertexID.JobVertexID),
		Subtask: int64(a.ExecutionVertexID.Subtask), AttemptNumber: int64(a.AttemptNumber)}
}

func (d *dec) attempt(a *pb.ExecutionAttemptID) jobgraph.ExecutionAttemptID {
	return jobgraph.ExecutionAttemptID{
		ExecutionGraphID: id16[jobgraph.ExecutionGraphID](d, "executionGraphId", a.GetExecutionGraphId()),
		ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: id16[jobgraph.JobVertexID](d, "jobVertexId", a.GetJobVertexId()),
			Subtask: d.int("subtask", a.GetSubtask())},
		AttemptNumber: d.int("attemptNumber", a.GetAttemptNumber()),
	}
}

func toPBAttempts(as []jobgraph.ExecutionAttemptID) []*pb.ExecutionAttemptID {
	if len(as) == 0 {
		return nil
	}
	out := make([]*pb.ExecutionAttemptID, len(as))
	for i, a := range as {
		out[i] = toPBAttempt(a)
	}
	return out
}

func (d *dec) attempts(as []*pb.ExecutionAttemptID) []jobgraph.ExecutionAttemptID {
	if len(as) == 0 {
		return nil
	}
	out := make([]jobgraph.ExecutionAttemptID, len(as))
	for i, a := range as {
		out[i] = d.attempt(a)
	}
	return out
}

func toPBPartitionID(p jobgraph.IntermediateResultPartitionID) *pb.PartitionID {
	return &pb.PartitionID{DataSetId: b16(p.IntermediateDataSetID), PartitionIndex: int64(p.PartitionIndex)}
}

func (d *dec) partitionID(p *pb.PartitionID) jobgraph.IntermediateResultPartitionID {
	return jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: id16[jobgraph.IntermediateDataSetID](d, "dataSetId", p.GetDataSetId()),
		PartitionIndex: d.int("partitionIndex", p.GetPartitionIndex())}
}

func toPBResultPartitionIDs(ps []rpc.ResultPartitionID) []*pb.ResultPartitionID {
	if len(ps) == 0 {
		return nil
	}
	out := make([]*pb.ResultPartitionID, len(ps))
	for i, p := range ps {
		out[i] = &pb.ResultPartitionID{Partition: toPBPartitionID(p.PartitionID), Producer: toPBAttempt(p.ProducerID)}
	}
	return out
}

func (d *dec) resultPartitionIDs(ps []*pb.ResultPartitionID) []rpc.ResultPartitionID {
	if len(ps) == 0 {
		return nil
	}
	out := make([]rpc.ResultPartitionID, len(ps))
	for i, p := range ps {
		out[i] = rpc.ResultPartitionID{PartitionID: d.partitionID(p.GetPartition()), ProducerID: d.attempt(p.GetProducer())}
	}
	return out
}

func toPBAllocations(as []jobgraph.AllocationID) [][]byte {
	if len(as) == 0 {
		return nil
	}
	out := make([][]byte, len(as))
	for i, a := range as {
		out[i] = b16(a)
	}
	return out
}

func (d *dec) allocations(as [][]byte) []jobgraph.AllocationID {
	if len(as) == 0 {
		return nil
	}
	out := make([]jobgraph.AllocationID, len(as))
	for i, a := range as {
		out[i] = id16[jobgraph.AllocationID](d, "allocationId", a)
	}
	return out
}

// ---- resources and slots ----

func toPBProfile(p jobgraph.ResourceProfile) *pb.ResourceProfile {
	if p.IsUnknown() {
		return nil
	}
	return &pb.ResourceProfile{CpuCores: p.CPUCores, TaskHeapMemory: p.TaskHeapMemory, TaskOffHeapMemory: p.TaskOffHeapMemory,
		ManagedMemory: p.ManagedMemory, NetworkMemory: p.NetworkMemory}
}

func fromPBProfile(p *pb.ResourceProfile) jobgraph.ResourceProfile {
	return jobgraph.ResourceProfile{CPUCores: p.GetCpuCores(), TaskHeapMemory: p.GetTaskHeapMemory(), TaskOffHeapMemory: p.GetTaskOffHeapMemory(),
		ManagedMemory: p.GetManagedMemory(), NetworkMemory: p.GetNetworkMemory()}
}

func toPBSlotID(s rpc.SlotID) *pb.SlotID {
	return &pb.SlotID{ResourceId: string(s.ResourceID), SlotNumber: int64(s.SlotNumber)}
}

func (d *dec) slotID(s *pb.SlotID) rpc.SlotID {
	return rpc.SlotID{ResourceID: jobgraph.ResourceID(s.GetResourceId()), SlotNumber: d.int("slotNumber", s.GetSlotNumber())}
}

func toPBSlotReport(r rpc.SlotReport) *pb.SlotReport {
	out := &pb.SlotReport{}
	if len(r.Slots) > 0 {
		out.Slots = make([]*pb.SlotStatus, len(r.Slots))
		for i, s := range r.Slots {
			out.Slots[i] = &pb.SlotStatus{SlotId: toPBSlotID(s.SlotID), ResourceProfile: toPBProfile(s.ResourceProfile),
				AllocationId: b16(s.AllocationID), JobId: b16(s.JobID)}
		}
	}
	return out
}

func (d *dec) slotReport(r *pb.SlotReport) rpc.SlotReport {
	var out rpc.SlotReport
	if len(r.GetSlots()) > 0 {
		out.Slots = make([]rpc.SlotStatus, len(r.GetSlots()))
		for i, s := range r.GetSlots() {
			out.Slots[i] = rpc.SlotStatus{SlotID: d.slotID(s.GetSlotId()), ResourceProfile: fromPBProfile(s.GetResourceProfile()),
				AllocationID: id16[jobgraph.AllocationID](d, "allocationId", s.GetAllocationId()), JobID: id16[jobgraph.JobID](d, "jobId", s.GetJobId())}
		}
	}
	return out
}

func toPBRegistration(r rpc.TaskExecutorRegistration) *pb.TaskExecutorRegistration {
	return &pb.TaskExecutorRegistration{ResourceId: string(r.ResourceID), Address: r.Address, TotalResource: toPBProfile(r.TotalResource),
		DefaultSlotResource: toPBProfile(r.DefaultSlotResource), SlotReport: toPBSlotReport(r.SlotReport)}
}

func (d *dec) registration(r *pb.TaskExecutorRegistration) rpc.TaskExecutorRegistration {
	return rpc.TaskExecutorRegistration{ResourceID: jobgraph.ResourceID(r.GetResourceId()), Address: r.GetAddress(),
		TotalResource: fromPBProfile(r.GetTotalResource()), DefaultSlotResource: fromPBProfile(r.GetDefaultSlotResource()),
		SlotReport: d.slotReport(r.GetSlotReport())}
}

func toPBOffers(os []rpc.SlotOffer) []*pb.SlotOffer {
	if len(os) == 0 {
		return nil
	}
	out := make([]*pb.SlotOffer, len(os))
	for i, o := range os {
		out[i] = &pb.SlotOffer{AllocationId: b16(o.AllocationID), SlotIndex: int64(o.SlotIndex), ResourceProfile: toPBProfile(o.ResourceProfile)}
	}
	return out
}

func (d *dec) offers(os []*pb.SlotOffer) []rpc.SlotOffer {
	if len(os) == 0 {
		return nil
	}
	out := make([]rpc.SlotOffer, len(os))
	for i, o := range os {
		out[i] = rpc.SlotOffer{AllocationID: id16[jobgraph.AllocationID](d, "allocationId", o.GetAllocationId()),
			SlotIndex: d.int("slotIndex", o.GetSlotIndex()), ResourceProfile: fromPBProfile(o.GetResourceProfile())}
	}
	return out
}

func toPBRequirements(r rpc.ResourceRequirements) *pb.ResourceRequirements {
	out := &pb.ResourceRequirements{JobId: b16(r.JobID), TargetAddress: r.TargetAddress}
	if len(r.Requirements) > 0 {
		out.Requirements = make([]*pb.ResourceRequirement, len(r.Requirements))
		for i, q := range r.Requirements {
			out.Requirements[i] = &pb.ResourceRequirement{Profile: toPBProfile(q.Profile), Count: int64(q.Count)}
		}
	}
	return out
}

func (d *dec) requirements(r *pb.ResourceRequirements) rpc.ResourceRequirements {
	out := rpc.ResourceRequirements{JobID: id16[jobgraph.JobID](d, "jobId", r.GetJobId()), TargetAddress: r.GetTargetAddress()}
	if len(r.GetRequirements()) > 0 {
		out.Requirements = make([]rpc.ResourceRequirement, len(r.GetRequirements()))
		for i, q := range r.GetRequirements() {
			out.Requirements[i] = rpc.ResourceRequirement{Profile: fromPBProfile(q.GetProfile()), Count: d.int("count", q.GetCount())}
		}
	}
	return out
}

// ---- task states, accumulators, heartbeats ----

func toPBAccumulators(m map[string]jobgraph.SerializedAccumulator) map[string]*pb.SerializedAccumulator {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]*pb.SerializedAccumulator, len(m))
	for k, a := range m {
		out[k] = &pb.SerializedAccumulator{Kind: a.Kind, Value: a.Value, Failure: toPBErrorInfo(a.Failure)}
	}
	return out
}

func fromPBAccumulators(m map[string]*pb.SerializedAccumulator) map[string]jobgraph.SerializedAccumulator {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]jobgraph.SerializedAccumulator, len(m))
	for k, a := range m {
		sa := jobgraph.SerializedAccumulator{Kind: a.GetKind(), Failure: fromPBErrorInfo(a.GetFailure())}
		if len(a.GetValue()) > 0 {
			sa.Value = json.RawMessage(a.GetValue())
		}
		out[k] = sa
	}
	return out
}

func toPBTaskExecutionState(s rpc.TaskExecutionState) *pb.TaskExecutionState {
	return &pb.TaskExecutionState{ExecutionAttemptId: toPBAttempt(s.ExecutionAttemptID), State: uint32(s.State),
		Failure: toPBErrorInfo(s.Failure), Accumulators: toPBAccumulators(s.Accumulators)}
}

func (d *dec) taskExecutionState(s *pb.TaskExecutionState) rpc.TaskExecutionState {
	return rpc.TaskExecutionState{ExecutionAttemptID: d.attempt(s.GetExecutionAttemptId()),
		State: jobgraph.ExecutionState(d.uint8("state", s.GetState())), Failure: fromPBErrorInfo(s.GetFailure()),
		Accumulators: fromPBAccumulators(s.GetAccumulators())}
}

func toPBAllocatedSlotReport(r rpc.AllocatedSlotReport) *pb.AllocatedSlotReport {
	out := &pb.AllocatedSlotReport{JobId: b16(r.JobID), Slots: toPBAllocations(r.Slots)}
	if len(r.Accumulators) > 0 {
		out.Accumulators = make([]*pb.AccumulatorSnapshot, len(r.Accumulators))
		for i, a := range r.Accumulators {
			out.Accumulators[i] = &pb.AccumulatorSnapshot{JobId: b16(a.JobID), ExecutionAttemptId: toPBAttempt(a.ExecutionAttemptID),
				Accumulators: toPBAccumulators(a.Accumulators)}
		}
	}
	if r.ExecutionDeploymentReport != nil {
		out.ExecutionDeploymentReport = &pb.ExecutionDeploymentReport{Executions: toPBAttempts(r.ExecutionDeploymentReport.Executions)}
	}
	return out
}

func (d *dec) allocatedSlotReport(r *pb.AllocatedSlotReport) rpc.AllocatedSlotReport {
	out := rpc.AllocatedSlotReport{JobID: id16[jobgraph.JobID](d, "jobId", r.GetJobId()), Slots: d.allocations(r.GetSlots())}
	if len(r.GetAccumulators()) > 0 {
		out.Accumulators = make([]rpc.AccumulatorSnapshot, len(r.GetAccumulators()))
		for i, a := range r.GetAccumulators() {
			out.Accumulators[i] = rpc.AccumulatorSnapshot{JobID: id16[jobgraph.JobID](d, "jobId", a.GetJobId()),
				ExecutionAttemptID: d.attempt(a.GetExecutionAttemptId()), Accumulators: fromPBAccumulators(a.GetAccumulators())}
		}
	}
	if e := r.GetExecutionDeploymentReport(); e != nil {
		out.ExecutionDeploymentReport = &rpc.ExecutionDeploymentReport{Executions: d.attempts(e.GetExecutions())}
	}
	return out
}

func toPBJobStatusMessages(js []rpc.JobStatusMessage) []*pb.JobStatusMessage {
	if len(js) == 0 {
		return nil
	}
	out := make([]*pb.JobStatusMessage, len(js))
	for i, j := range js {
		out[i] = &pb.JobStatusMessage{JobId: b16(j.JobID), Name: j.Name, Status: uint32(j.Status), StartTime: j.StartTime}
	}
	return out
}

func (d *dec) jobStatusMessages(js []*pb.JobStatusMessage) []rpc.JobStatusMessage {
	if len(js) == 0 {
		return nil
	}
	out := make([]rpc.JobStatusMessage, len(js))
	for i, j := range js {
		out[i] = rpc.JobStatusMessage{JobID: id16[jobgraph.JobID](d, "jobId", j.GetJobId()), Name: j.GetName(),
			Status: jobgraph.JobStatus(d.uint8("status", j.GetStatus())), StartTime: j.GetStartTime()}
	}
	return out
}
