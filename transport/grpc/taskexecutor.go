package grpctransport

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/transport/grpc/internal/pb"
)

// taskExecutorClient is the rpc.TaskExecutorGateway stub Lookup returns for a TaskExecutor
// endpoint.
type taskExecutorClient struct {
	client
	pb pb.TaskExecutorClient
}

var (
	_ rpc.TaskExecutorGateway         = (*taskExecutorClient)(nil)
	_ rpc.ResourceManagerDisconnector = (*taskExecutorClient)(nil)
)

func (c *taskExecutorClient) RequestSlot(ctx context.Context, slot rpc.SlotID, job jobgraph.JobID, allocation jobgraph.AllocationID, profile jobgraph.ResourceProfile, jobMasterAddress string, jobMaster jobgraph.JobMasterID, rm jobgraph.ResourceManagerID) error {
	_, err := c.pb.RequestSlot(c.ctx(ctx), &pb.RequestSlotRequest{Slot: toPBSlotID(slot), JobId: b16(job), AllocationId: b16(allocation),
		Profile: toPBProfile(profile), JobMasterAddress: jobMasterAddress, JobMasterId: b16(jobMaster), ResourceManagerId: b16(rm)})
	if err != nil {
		return c.err(ctx, "RequestSlot", err)
	}
	return nil
}

// SubmitTask sends the descriptor in the rpc package's JSON form (compact input gates). An
// error encoding it is returned before anything is sent.
func (c *taskExecutorClient) SubmitTask(ctx context.Context, token jobgraph.JobMasterID, tdd rpc.TaskDeploymentDescriptor) error {
	data, err := json.Marshal(tdd)
	if err != nil {
		return err
	}
	_, err = c.pb.SubmitTask(c.ctx(ctx), &pb.SubmitTaskRequest{Token: b16(token), TddJson: data})
	if err != nil {
		return c.err(ctx, "SubmitTask", err)
	}
	return nil
}

func (c *taskExecutorClient) SubmitTasks(ctx context.Context, token jobgraph.JobMasterID, tdds []rpc.TaskDeploymentDescriptor) ([]error, error) {
	req := &pb.SubmitTasksRequest{Token: b16(token), TddsJson: make([][]byte, len(tdds))}
	for i := range tdds {
		data, err := json.Marshal(tdds[i])
		if err != nil {
			return nil, err
		}
		req.TddsJson[i] = data
	}
	r, err := c.pb.SubmitTasks(c.ctx(ctx), req)
	if err != nil {
		return nil, c.err(ctx, "SubmitTasks", err)
	}
	if len(r.GetErrs()) == 0 {
		return nil, nil
	}
	errs := make([]error, len(r.GetErrs()))
	for i, e := range r.GetErrs() {
		if e.GetFailed() {
			errs[i] = fromDetail(e.GetError())
		}
	}
	return errs, nil
}

func (c *taskExecutorClient) CancelTask(ctx context.Context, attempt jobgraph.ExecutionAttemptID) error {
	_, err := c.pb.CancelTask(c.ctx(ctx), &pb.CancelTaskRequest{Attempt: toPBAttempt(attempt)})
	if err != nil {
		return c.err(ctx, "CancelTask", err)
	}
	return nil
}

func (c *taskExecutorClient) FreeSlot(ctx context.Context, allocation jobgraph.AllocationID, cause *jobgraph.ErrorInfo) error {
	_, err := c.pb.FreeSlot(c.ctx(ctx), &pb.FreeSlotRequest{AllocationId: b16(allocation), Cause: toPBErrorInfo(cause)})
	if err != nil {
		return c.err(ctx, "FreeSlot", err)
	}
	return nil
}

func (c *taskExecutorClient) ReleasePartitions(ctx context.Context, job jobgraph.JobID, partitions []rpc.ResultPartitionID) error {
	_, err := c.pb.ReleasePartitions(c.ctx(ctx), &pb.ReleasePartitionsRequest{JobId: b16(job), Partitions: toPBResultPartitionIDs(partitions)})
	if err != nil {
		return c.err(ctx, "ReleasePartitions", err)
	}
	return nil
}

func (c *taskExecutorClient) DisconnectJobMaster(ctx context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo) error {
	_, err := c.pb.DisconnectJobMaster(c.ctx(ctx), &pb.TEDisconnectJobMasterRequest{Token: b16(token), JobId: b16(job), Cause: toPBErrorInfo(cause)})
	if err != nil {
		return c.err(ctx, "DisconnectJobMaster", err)
	}
	return nil
}

func (c *taskExecutorClient) HeartbeatFromJobMaster(ctx context.Context, jobMaster jobgraph.ResourceID) error {
	_, err := c.pb.HeartbeatFromJobMaster(c.ctx(ctx), &pb.HeartbeatFromJobMasterRequest{JobMaster: string(jobMaster)})
	if err != nil {
		return c.err(ctx, "HeartbeatFromJobMaster", err)
	}
	return nil
}

func (c *taskExecutorClient) HeartbeatFromResourceManager(ctx context.Context, rm jobgraph.ResourceID) error {
	_, err := c.pb.HeartbeatFromResourceManager(c.ctx(ctx), &pb.HeartbeatFromResourceManagerRequest{ResourceManager: string(rm)})
	if err != nil {
		return c.err(ctx, "HeartbeatFromResourceManager", err)
	}
	return nil
}

func (c *taskExecutorClient) TriggerCheckpoint(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, timestamp time.Time, props checkpoint.CheckpointProperties) error {
	_, err := c.pb.TriggerCheckpoint(c.ctx(ctx), &pb.TriggerCheckpointRequest{Token: b16(token), Attempt: toPBAttempt(attempt), CheckpointId: int64(id),
		TimestampUnixNanos: unixNanos(timestamp), SnapshotType: int64(props.Type)})
	if err != nil {
		return c.err(ctx, "TriggerCheckpoint", err)
	}
	return nil
}

func (c *taskExecutorClient) ConfirmCheckpoint(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, timestamp time.Time) error {
	_, err := c.pb.ConfirmCheckpoint(c.ctx(ctx), &pb.CheckpointNotificationRequest{Token: b16(token), Attempt: toPBAttempt(attempt), CheckpointId: int64(id), TimestampUnixNanos: unixNanos(timestamp)})
	if err != nil {
		return c.err(ctx, "ConfirmCheckpoint", err)
	}
	return nil
}

func (c *taskExecutorClient) AbortCheckpoint(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, timestamp time.Time) error {
	_, err := c.pb.AbortCheckpoint(c.ctx(ctx), &pb.CheckpointNotificationRequest{Token: b16(token), Attempt: toPBAttempt(attempt), CheckpointId: int64(id), TimestampUnixNanos: unixNanos(timestamp)})
	if err != nil {
		return c.err(ctx, "AbortCheckpoint", err)
	}
	return nil
}

// SendOperatorEventToTask carries a coordinator's event to a task. It returns once the
// TaskExecutor's SendOperatorEventToTask returned there, with its answer: calls of one stub
// made one after another arrive in that order (each waits for the one before).
func (c *taskExecutorClient) SendOperatorEventToTask(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, event []byte) error {
	_, err := c.pb.SendOperatorEventToTask(c.ctx(ctx), &pb.OperatorEventRequest{Token: b16(token), Attempt: toPBAttempt(attempt), Event: event})
	if err != nil {
		return c.err(ctx, "SendOperatorEventToTask", err)
	}
	return nil
}

// DisconnectResourceManager carries the ResourceManager's disconnect (rpc.ResourceManagerDisconnector)
// to the TaskExecutor. A TaskExecutor whose gateway does not implement it answers
// codes.Unimplemented, which comes back as an error (the ResourceManager only logs it).
func (c *taskExecutorClient) DisconnectResourceManager(ctx context.Context, rm jobgraph.ResourceManagerID, cause *jobgraph.ErrorInfo) error {
	_, err := c.pb.DisconnectResourceManager(c.ctx(ctx), &pb.TEDisconnectResourceManagerRequest{ResourceManagerId: b16(rm), Cause: toPBErrorInfo(cause)})
	if err != nil {
		return c.err(ctx, "DisconnectResourceManager", err)
	}
	return nil
}

// taskExecutorServer serves the TaskExecutor service.
type taskExecutorServer struct {
	pb.UnimplementedTaskExecutorServer
	s *Service
}

func (x taskExecutorServer) gw(ctx context.Context) (rpc.TaskExecutorGateway, error) {
	return gateway[rpc.TaskExecutorGateway](ctx, x.s, kindTaskExecutor)
}

func (x taskExecutorServer) RequestSlot(ctx context.Context, req *pb.RequestSlotRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	slot := d.slotID(req.GetSlot())
	job := id16[jobgraph.JobID](&d, "jobId", req.GetJobId())
	allocation := id16[jobgraph.AllocationID](&d, "allocationId", req.GetAllocationId())
	jm := id16[jobgraph.JobMasterID](&d, "jobMasterId", req.GetJobMasterId())
	rm := id16[jobgraph.ResourceManagerID](&d, "resourceManagerId", req.GetResourceManagerId())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.RequestSlot(ctx, slot, job, allocation, fromPBProfile(req.GetProfile()), req.GetJobMasterAddress(), jm, rm))
}

func (x taskExecutorServer) SubmitTask(ctx context.Context, req *pb.SubmitTaskRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	var tdd rpc.TaskDeploymentDescriptor
	d.json("tdd", req.GetTddJson(), &tdd)
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.SubmitTask(ctx, token, tdd))
}

func (x taskExecutorServer) SubmitTasks(ctx context.Context, req *pb.SubmitTasksRequest) (*pb.SubmitTasksReply, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	tdds := make([]rpc.TaskDeploymentDescriptor, len(req.GetTddsJson()))
	for i, data := range req.GetTddsJson() {
		d.json("tdds", data, &tdds[i])
	}
	if d.err != nil {
		return nil, d.status()
	}
	errs, err := gw.SubmitTasks(ctx, token, tdds)
	if err != nil {
		return nil, toStatus(err)
	}
	reply := &pb.SubmitTasksReply{}
	if errs != nil {
		reply.Errs = make([]*pb.ErrorOrNil, len(errs))
		for i, e := range errs {
			reply.Errs[i] = &pb.ErrorOrNil{}
			if e != nil {
				reply.Errs[i] = &pb.ErrorOrNil{Failed: true, Error: errorDetail(e)}
			}
		}
	}
	return reply, nil
}

func (x taskExecutorServer) CancelTask(ctx context.Context, req *pb.CancelTaskRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	attempt := d.attempt(req.GetAttempt())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.CancelTask(ctx, attempt))
}

func (x taskExecutorServer) FreeSlot(ctx context.Context, req *pb.FreeSlotRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	allocation := id16[jobgraph.AllocationID](&d, "allocationId", req.GetAllocationId())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.FreeSlot(ctx, allocation, fromPBErrorInfo(req.GetCause())))
}

func (x taskExecutorServer) ReleasePartitions(ctx context.Context, req *pb.ReleasePartitionsRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	job := id16[jobgraph.JobID](&d, "jobId", req.GetJobId())
	partitions := d.resultPartitionIDs(req.GetPartitions())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.ReleasePartitions(ctx, job, partitions))
}

func (x taskExecutorServer) DisconnectJobMaster(ctx context.Context, req *pb.TEDisconnectJobMasterRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	job := id16[jobgraph.JobID](&d, "jobId", req.GetJobId())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.DisconnectJobMaster(ctx, token, job, fromPBErrorInfo(req.GetCause())))
}

func (x taskExecutorServer) HeartbeatFromJobMaster(ctx context.Context, req *pb.HeartbeatFromJobMasterRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	return answer(gw.HeartbeatFromJobMaster(ctx, jobgraph.ResourceID(req.GetJobMaster())))
}

func (x taskExecutorServer) HeartbeatFromResourceManager(ctx context.Context, req *pb.HeartbeatFromResourceManagerRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	return answer(gw.HeartbeatFromResourceManager(ctx, jobgraph.ResourceID(req.GetResourceManager())))
}

func (x taskExecutorServer) TriggerCheckpoint(ctx context.Context, req *pb.TriggerCheckpointRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	attempt := d.attempt(req.GetAttempt())
	props := checkpoint.CheckpointProperties{Type: checkpoint.SnapshotType(d.int("snapshotType", req.GetSnapshotType()))}
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.TriggerCheckpoint(ctx, token, attempt, checkpoint.CheckpointID(req.GetCheckpointId()), fromUnixNanos(req.GetTimestampUnixNanos()), props))
}

func (x taskExecutorServer) checkpointNotification(ctx context.Context, req *pb.CheckpointNotificationRequest,
	call func(rpc.TaskExecutorGateway, jobgraph.JobMasterID, jobgraph.ExecutionAttemptID, checkpoint.CheckpointID, time.Time) error) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	attempt := d.attempt(req.GetAttempt())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(call(gw, token, attempt, checkpoint.CheckpointID(req.GetCheckpointId()), fromUnixNanos(req.GetTimestampUnixNanos())))
}

func (x taskExecutorServer) ConfirmCheckpoint(ctx context.Context, req *pb.CheckpointNotificationRequest) (*pb.Empty, error) {
	return x.checkpointNotification(ctx, req, func(gw rpc.TaskExecutorGateway, token jobgraph.JobMasterID, a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, ts time.Time) error {
		return gw.ConfirmCheckpoint(ctx, token, a, id, ts)
	})
}

func (x taskExecutorServer) AbortCheckpoint(ctx context.Context, req *pb.CheckpointNotificationRequest) (*pb.Empty, error) {
	return x.checkpointNotification(ctx, req, func(gw rpc.TaskExecutorGateway, token jobgraph.JobMasterID, a jobgraph.ExecutionAttemptID, id checkpoint.CheckpointID, ts time.Time) error {
		return gw.AbortCheckpoint(ctx, token, a, id, ts)
	})
}

func (x taskExecutorServer) SendOperatorEventToTask(ctx context.Context, req *pb.OperatorEventRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	attempt := d.attempt(req.GetAttempt())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.SendOperatorEventToTask(ctx, token, attempt, req.GetEvent()))
}

// DisconnectResourceManager forwards the disconnect to the TaskExecutor when its gateway
// implements rpc.ResourceManagerDisconnector, and answers codes.Unimplemented otherwise.
func (x taskExecutorServer) DisconnectResourceManager(ctx context.Context, req *pb.TEDisconnectResourceManagerRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := gw.(rpc.ResourceManagerDisconnector)
	if !ok {
		return x.UnimplementedTaskExecutorServer.DisconnectResourceManager(ctx, req)
	}
	var dc dec
	rm := id16[jobgraph.ResourceManagerID](&dc, "resourceManagerId", req.GetResourceManagerId())
	if dc.err != nil {
		return nil, dc.status()
	}
	return answer(d.DisconnectResourceManager(ctx, rm, fromPBErrorInfo(req.GetCause())))
}
