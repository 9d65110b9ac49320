package grpctransport

import (
	"context"
	"encoding/json"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/transport/grpc/internal/pb"
)

// jobMasterClient is the rpc.JobMasterGateway stub Lookup returns for a JobMaster endpoint.
type jobMasterClient struct {
	client
	pb pb.JobMasterClient
}

var _ rpc.JobMasterGateway = (*jobMasterClient)(nil)

func (c *jobMasterClient) UpdateTaskExecutionState(ctx context.Context, token jobgraph.JobMasterID, state rpc.TaskExecutionState) (bool, error) {
	r, err := c.pb.UpdateTaskExecutionState(c.ctx(ctx), &pb.UpdateTaskExecutionStateRequest{Token: b16(token), State: toPBTaskExecutionState(state)})
	if err != nil {
		return false, c.err(ctx, "UpdateTaskExecutionState", err)
	}
	return r.GetValue(), nil
}

func (c *jobMasterClient) RegisterTaskExecutor(ctx context.Context, token jobgraph.JobMasterID, registration rpc.TaskExecutorRegistration) error {
	_, err := c.pb.RegisterTaskExecutor(c.ctx(ctx), &pb.JMRegisterTaskExecutorRequest{Token: b16(token), Registration: toPBRegistration(registration)})
	if err != nil {
		return c.err(ctx, "RegisterTaskExecutor", err)
	}
	return nil
}

func (c *jobMasterClient) OfferSlots(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, offers []rpc.SlotOffer) ([]rpc.SlotOffer, error) {
	r, err := c.pb.OfferSlots(c.ctx(ctx), &pb.OfferSlotsRequest{Token: b16(token), TaskExecutor: string(taskExecutor), Offers: toPBOffers(offers)})
	if err != nil {
		return nil, c.err(ctx, "OfferSlots", err)
	}
	var d dec
	accepted := d.offers(r.GetAccepted())
	if d.err != nil {
		return nil, d.reply("OfferSlots", c.address)
	}
	return accepted, nil
}

func (c *jobMasterClient) FailSlot(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, allocation jobgraph.AllocationID, cause *jobgraph.ErrorInfo) error {
	_, err := c.pb.FailSlot(c.ctx(ctx), &pb.FailSlotRequest{Token: b16(token), TaskExecutor: string(taskExecutor), AllocationId: b16(allocation), Cause: toPBErrorInfo(cause)})
	if err != nil {
		return c.err(ctx, "FailSlot", err)
	}
	return nil
}

func (c *jobMasterClient) DisconnectTaskExecutor(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error {
	_, err := c.pb.DisconnectTaskExecutor(c.ctx(ctx), &pb.JMDisconnectTaskExecutorRequest{Token: b16(token), TaskExecutor: string(taskExecutor), Cause: toPBErrorInfo(cause)})
	if err != nil {
		return c.err(ctx, "DisconnectTaskExecutor", err)
	}
	return nil
}

func (c *jobMasterClient) DisconnectResourceManager(ctx context.Context, token jobgraph.JobMasterID, rm jobgraph.ResourceManagerID, cause *jobgraph.ErrorInfo) error {
	_, err := c.pb.DisconnectResourceManager(c.ctx(ctx), &pb.DisconnectResourceManagerRequest{Token: b16(token), ResourceManagerId: b16(rm), Cause: toPBErrorInfo(cause)})
	if err != nil {
		return c.err(ctx, "DisconnectResourceManager", err)
	}
	return nil
}

func (c *jobMasterClient) HeartbeatFromTaskExecutor(ctx context.Context, taskExecutor jobgraph.ResourceID, report rpc.AllocatedSlotReport) error {
	_, err := c.pb.HeartbeatFromTaskExecutor(c.ctx(ctx), &pb.JMHeartbeatFromTaskExecutorRequest{TaskExecutor: string(taskExecutor), Report: toPBAllocatedSlotReport(report)})
	if err != nil {
		return c.err(ctx, "HeartbeatFromTaskExecutor", err)
	}
	return nil
}

func (c *jobMasterClient) HeartbeatFromResourceManager(ctx context.Context, rm jobgraph.ResourceID) error {
	_, err := c.pb.HeartbeatFromResourceManager(c.ctx(ctx), &pb.HeartbeatFromResourceManagerRequest{ResourceManager: string(rm)})
	if err != nil {
		return c.err(ctx, "HeartbeatFromResourceManager", err)
	}
	return nil
}

func (c *jobMasterClient) AcknowledgeCheckpoint(ctx context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, ack checkpoint.AcknowledgeCheckpoint) error {
	state, err := json.Marshal(ack.State)
	if err != nil {
		return err
	}
	_, err = c.pb.AcknowledgeCheckpoint(c.ctx(ctx), &pb.AcknowledgeCheckpointRequest{Token: b16(token), JobId: b16(job),
		Attempt: toPBAttempt(ack.Attempt), CheckpointId: int64(ack.CheckpointID), StateJson: state})
	if err != nil {
		return c.err(ctx, "AcknowledgeCheckpoint", err)
	}
	return nil
}

func (c *jobMasterClient) DeclineCheckpoint(ctx context.Context, token jobgraph.JobMasterID, job jobgraph.JobID, decline checkpoint.DeclineCheckpoint) error {
	_, err := c.pb.DeclineCheckpoint(c.ctx(ctx), &pb.DeclineCheckpointRequest{Token: b16(token), JobId: b16(job),
		Attempt: toPBAttempt(decline.Attempt), CheckpointId: int64(decline.CheckpointID), Reason: int64(decline.Reason), Message: decline.Message})
	if err != nil {
		return c.err(ctx, "DeclineCheckpoint", err)
	}
	return nil
}

func (c *jobMasterClient) SendOperatorEventToCoordinator(ctx context.Context, token jobgraph.JobMasterID, attempt jobgraph.ExecutionAttemptID, event []byte) error {
	_, err := c.pb.SendOperatorEventToCoordinator(c.ctx(ctx), &pb.OperatorEventRequest{Token: b16(token), Attempt: toPBAttempt(attempt), Event: event})
	if err != nil {
		return c.err(ctx, "SendOperatorEventToCoordinator", err)
	}
	return nil
}

// jobMasterServer serves the JobMaster service: each call goes to the rpc.JobMasterGateway
// registered under the name the call carries, with its fencing token unchanged.
type jobMasterServer struct {
	pb.UnimplementedJobMasterServer
	s *Service
}

func (x jobMasterServer) gw(ctx context.Context) (rpc.JobMasterGateway, error) {
	return gateway[rpc.JobMasterGateway](ctx, x.s, kindJobMaster)
}

var empty = &pb.Empty{}

// answer is a server's reply to a call that returns only an error.
func answer(err error) (*pb.Empty, error) {
	if err != nil {
		return nil, toStatus(err)
	}
	return empty, nil
}

func (x jobMasterServer) UpdateTaskExecutionState(ctx context.Context, req *pb.UpdateTaskExecutionStateRequest) (*pb.BoolReply, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	state := d.taskExecutionState(req.GetState())
	if d.err != nil {
		return nil, d.status()
	}
	ok, err := gw.UpdateTaskExecutionState(ctx, token, state)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.BoolReply{Value: ok}, nil
}

func (x jobMasterServer) RegisterTaskExecutor(ctx context.Context, req *pb.JMRegisterTaskExecutorRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	reg := d.registration(req.GetRegistration())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.RegisterTaskExecutor(ctx, token, reg))
}

func (x jobMasterServer) OfferSlots(ctx context.Context, req *pb.OfferSlotsRequest) (*pb.OfferSlotsReply, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	offers := d.offers(req.GetOffers())
	if d.err != nil {
		return nil, d.status()
	}
	accepted, err := gw.OfferSlots(ctx, token, jobgraph.ResourceID(req.GetTaskExecutor()), offers)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.OfferSlotsReply{Accepted: toPBOffers(accepted)}, nil
}

func (x jobMasterServer) FailSlot(ctx context.Context, req *pb.FailSlotRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	allocation := id16[jobgraph.AllocationID](&d, "allocationId", req.GetAllocationId())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.FailSlot(ctx, token, jobgraph.ResourceID(req.GetTaskExecutor()), allocation, fromPBErrorInfo(req.GetCause())))
}

func (x jobMasterServer) DisconnectTaskExecutor(ctx context.Context, req *pb.JMDisconnectTaskExecutorRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.DisconnectTaskExecutor(ctx, token, jobgraph.ResourceID(req.GetTaskExecutor()), fromPBErrorInfo(req.GetCause())))
}

func (x jobMasterServer) DisconnectResourceManager(ctx context.Context, req *pb.DisconnectResourceManagerRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	rm := id16[jobgraph.ResourceManagerID](&d, "resourceManagerId", req.GetResourceManagerId())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.DisconnectResourceManager(ctx, token, rm, fromPBErrorInfo(req.GetCause())))
}

func (x jobMasterServer) HeartbeatFromTaskExecutor(ctx context.Context, req *pb.JMHeartbeatFromTaskExecutorRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	report := d.allocatedSlotReport(req.GetReport())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.HeartbeatFromTaskExecutor(ctx, jobgraph.ResourceID(req.GetTaskExecutor()), report))
}

func (x jobMasterServer) HeartbeatFromResourceManager(ctx context.Context, req *pb.HeartbeatFromResourceManagerRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	return answer(gw.HeartbeatFromResourceManager(ctx, jobgraph.ResourceID(req.GetResourceManager())))
}

func (x jobMasterServer) AcknowledgeCheckpoint(ctx context.Context, req *pb.AcknowledgeCheckpointRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	job := id16[jobgraph.JobID](&d, "jobId", req.GetJobId())
	ack := checkpoint.AcknowledgeCheckpoint{Attempt: d.attempt(req.GetAttempt()), CheckpointID: checkpoint.CheckpointID(req.GetCheckpointId())}
	d.json("state", req.GetStateJson(), &ack.State)
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.AcknowledgeCheckpoint(ctx, token, job, ack))
}

func (x jobMasterServer) DeclineCheckpoint(ctx context.Context, req *pb.DeclineCheckpointRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	job := id16[jobgraph.JobID](&d, "jobId", req.GetJobId())
	decline := checkpoint.DeclineCheckpoint{Attempt: d.attempt(req.GetAttempt()), CheckpointID: checkpoint.CheckpointID(req.GetCheckpointId()),
		Reason: checkpoint.CheckpointFailureReason(d.int("reason", req.GetReason())), Message: req.GetMessage()}
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.DeclineCheckpoint(ctx, token, job, decline))
}

func (x jobMasterServer) SendOperatorEventToCoordinator(ctx context.Context, req *pb.OperatorEventRequest) (*pb.Empty, error) {
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
	return answer(gw.SendOperatorEventToCoordinator(ctx, token, attempt, req.GetEvent()))
}
