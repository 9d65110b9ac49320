package grpctransport

import (
	"context"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/transport/grpc/internal/pb"
)

// resourceManagerClient is the rpc.ResourceManagerGateway stub Lookup returns for a
// ResourceManager endpoint.
type resourceManagerClient struct {
	client
	pb pb.ResourceManagerClient
}

var _ rpc.ResourceManagerGateway = (*resourceManagerClient)(nil)

func (c *resourceManagerClient) rmID(method string, r *pb.ResourceManagerIDReply) (jobgraph.ResourceManagerID, error) {
	var d dec
	id := id16[jobgraph.ResourceManagerID](&d, "resourceManagerId", r.GetResourceManagerId())
	if d.err != nil {
		return id, d.reply(method, c.address)
	}
	return id, nil
}

func (c *resourceManagerClient) RegisterTaskExecutor(ctx context.Context, registration rpc.TaskExecutorRegistration) (jobgraph.ResourceManagerID, error) {
	r, err := c.pb.RegisterTaskExecutor(c.ctx(ctx), &pb.RMRegisterTaskExecutorRequest{Registration: toPBRegistration(registration)})
	if err != nil {
		return jobgraph.ResourceManagerID{}, c.err(ctx, "RegisterTaskExecutor", err)
	}
	return c.rmID("RegisterTaskExecutor", r)
}

func (c *resourceManagerClient) SendSlotReport(ctx context.Context, rm jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, report rpc.SlotReport) error {
	_, err := c.pb.SendSlotReport(c.ctx(ctx), &pb.SendSlotReportRequest{ResourceManagerId: b16(rm), TaskExecutor: string(taskExecutor), Report: toPBSlotReport(report)})
	if err != nil {
		return c.err(ctx, "SendSlotReport", err)
	}
	return nil
}

func (c *resourceManagerClient) NotifySlotAvailable(ctx context.Context, rm jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, slot rpc.SlotID, allocation jobgraph.AllocationID) error {
	_, err := c.pb.NotifySlotAvailable(c.ctx(ctx), &pb.NotifySlotAvailableRequest{ResourceManagerId: b16(rm), TaskExecutor: string(taskExecutor),
		Slot: toPBSlotID(slot), AllocationId: b16(allocation)})
	if err != nil {
		return c.err(ctx, "NotifySlotAvailable", err)
	}
	return nil
}

func (c *resourceManagerClient) DisconnectTaskExecutor(ctx context.Context, rm jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, cause *jobgraph.ErrorInfo) error {
	_, err := c.pb.DisconnectTaskExecutor(c.ctx(ctx), &pb.RMDisconnectTaskExecutorRequest{ResourceManagerId: b16(rm), TaskExecutor: string(taskExecutor), Cause: toPBErrorInfo(cause)})
	if err != nil {
		return c.err(ctx, "DisconnectTaskExecutor", err)
	}
	return nil
}

func (c *resourceManagerClient) RegisterJobMaster(ctx context.Context, token jobgraph.JobMasterID, jobMaster jobgraph.ResourceID, address string, job jobgraph.JobID) (jobgraph.ResourceManagerID, error) {
	r, err := c.pb.RegisterJobMaster(c.ctx(ctx), &pb.RegisterJobMasterRequest{Token: b16(token), JobMaster: string(jobMaster), Address: address, JobId: b16(job)})
	if err != nil {
		return jobgraph.ResourceManagerID{}, c.err(ctx, "RegisterJobMaster", err)
	}
	return c.rmID("RegisterJobMaster", r)
}

func (c *resourceManagerClient) DeclareRequiredResources(ctx context.Context, rm jobgraph.ResourceManagerID, token jobgraph.JobMasterID, requirements rpc.ResourceRequirements) error {
	_, err := c.pb.DeclareRequiredResources(c.ctx(ctx), &pb.DeclareRequiredResourcesRequest{ResourceManagerId: b16(rm), Token: b16(token), Requirements: toPBRequirements(requirements)})
	if err != nil {
		return c.err(ctx, "DeclareRequiredResources", err)
	}
	return nil
}

func (c *resourceManagerClient) DisconnectJobMaster(ctx context.Context, rm jobgraph.ResourceManagerID, token jobgraph.JobMasterID, job jobgraph.JobID, cause *jobgraph.ErrorInfo) error {
	_, err := c.pb.DisconnectJobMaster(c.ctx(ctx), &pb.RMDisconnectJobMasterRequest{ResourceManagerId: b16(rm), Token: b16(token), JobId: b16(job), Cause: toPBErrorInfo(cause)})
	if err != nil {
		return c.err(ctx, "DisconnectJobMaster", err)
	}
	return nil
}

func (c *resourceManagerClient) HeartbeatFromTaskExecutor(ctx context.Context, rm jobgraph.ResourceManagerID, taskExecutor jobgraph.ResourceID, report rpc.SlotReport) error {
	_, err := c.pb.HeartbeatFromTaskExecutor(c.ctx(ctx), &pb.RMHeartbeatFromTaskExecutorRequest{ResourceManagerId: b16(rm), TaskExecutor: string(taskExecutor), Report: toPBSlotReport(report)})
	if err != nil {
		return c.err(ctx, "HeartbeatFromTaskExecutor", err)
	}
	return nil
}

func (c *resourceManagerClient) HeartbeatFromJobMaster(ctx context.Context, rm jobgraph.ResourceManagerID, jobMaster jobgraph.ResourceID) error {
	_, err := c.pb.HeartbeatFromJobMaster(c.ctx(ctx), &pb.RMHeartbeatFromJobMasterRequest{ResourceManagerId: b16(rm), JobMaster: string(jobMaster)})
	if err != nil {
		return c.err(ctx, "HeartbeatFromJobMaster", err)
	}
	return nil
}

// resourceManagerServer serves the ResourceManager service.
type resourceManagerServer struct {
	pb.UnimplementedResourceManagerServer
	s *Service
}

func (x resourceManagerServer) gw(ctx context.Context) (rpc.ResourceManagerGateway, error) {
	return gateway[rpc.ResourceManagerGateway](ctx, x.s, kindResourceManager)
}

func rmIDReply(id jobgraph.ResourceManagerID, err error) (*pb.ResourceManagerIDReply, error) {
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.ResourceManagerIDReply{ResourceManagerId: b16(id)}, nil
}

func (x resourceManagerServer) RegisterTaskExecutor(ctx context.Context, req *pb.RMRegisterTaskExecutorRequest) (*pb.ResourceManagerIDReply, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	reg := d.registration(req.GetRegistration())
	if d.err != nil {
		return nil, d.status()
	}
	return rmIDReply(gw.RegisterTaskExecutor(ctx, reg))
}

func (x resourceManagerServer) SendSlotReport(ctx context.Context, req *pb.SendSlotReportRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	rm := id16[jobgraph.ResourceManagerID](&d, "resourceManagerId", req.GetResourceManagerId())
	report := d.slotReport(req.GetReport())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.SendSlotReport(ctx, rm, jobgraph.ResourceID(req.GetTaskExecutor()), report))
}

func (x resourceManagerServer) NotifySlotAvailable(ctx context.Context, req *pb.NotifySlotAvailableRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	rm := id16[jobgraph.ResourceManagerID](&d, "resourceManagerId", req.GetResourceManagerId())
	slot := d.slotID(req.GetSlot())
	allocation := id16[jobgraph.AllocationID](&d, "allocationId", req.GetAllocationId())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.NotifySlotAvailable(ctx, rm, jobgraph.ResourceID(req.GetTaskExecutor()), slot, allocation))
}

func (x resourceManagerServer) DisconnectTaskExecutor(ctx context.Context, req *pb.RMDisconnectTaskExecutorRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	rm := id16[jobgraph.ResourceManagerID](&d, "resourceManagerId", req.GetResourceManagerId())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.DisconnectTaskExecutor(ctx, rm, jobgraph.ResourceID(req.GetTaskExecutor()), fromPBErrorInfo(req.GetCause())))
}

func (x resourceManagerServer) RegisterJobMaster(ctx context.Context, req *pb.RegisterJobMasterRequest) (*pb.ResourceManagerIDReply, error) {
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
	return rmIDReply(gw.RegisterJobMaster(ctx, token, jobgraph.ResourceID(req.GetJobMaster()), req.GetAddress(), job))
}

func (x resourceManagerServer) DeclareRequiredResources(ctx context.Context, req *pb.DeclareRequiredResourcesRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	rm := id16[jobgraph.ResourceManagerID](&d, "resourceManagerId", req.GetResourceManagerId())
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	reqs := d.requirements(req.GetRequirements())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.DeclareRequiredResources(ctx, rm, token, reqs))
}

func (x resourceManagerServer) DisconnectJobMaster(ctx context.Context, req *pb.RMDisconnectJobMasterRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	rm := id16[jobgraph.ResourceManagerID](&d, "resourceManagerId", req.GetResourceManagerId())
	token := id16[jobgraph.JobMasterID](&d, "token", req.GetToken())
	job := id16[jobgraph.JobID](&d, "jobId", req.GetJobId())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.DisconnectJobMaster(ctx, rm, token, job, fromPBErrorInfo(req.GetCause())))
}

func (x resourceManagerServer) HeartbeatFromTaskExecutor(ctx context.Context, req *pb.RMHeartbeatFromTaskExecutorRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	rm := id16[jobgraph.ResourceManagerID](&d, "resourceManagerId", req.GetResourceManagerId())
	report := d.slotReport(req.GetReport())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.HeartbeatFromTaskExecutor(ctx, rm, jobgraph.ResourceID(req.GetTaskExecutor()), report))
}

func (x resourceManagerServer) HeartbeatFromJobMaster(ctx context.Context, req *pb.RMHeartbeatFromJobMasterRequest) (*pb.Empty, error) {
	gw, err := x.gw(ctx)
	if err != nil {
		return nil, err
	}
	var d dec
	rm := id16[jobgraph.ResourceManagerID](&d, "resourceManagerId", req.GetResourceManagerId())
	if d.err != nil {
		return nil, d.status()
	}
	return answer(gw.HeartbeatFromJobMaster(ctx, rm, jobgraph.ResourceID(req.GetJobMaster())))
}
