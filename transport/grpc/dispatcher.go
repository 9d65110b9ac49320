package grpctransport

import (
	"context"
	"encoding/json"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/transport/grpc/internal/pb"
)

// dispatcherClient is the rpc.DispatcherGateway stub Lookup returns for a Dispatcher endpoint.
type dispatcherClient struct {
	client
	pb pb.DispatcherClient
}

var _ rpc.DispatcherGateway = (*dispatcherClient)(nil)

// SubmitJob sends g in jobgraph's JSON codec; a nil g travels as nil, so the Dispatcher
// answers its own error for it. An error encoding g (a NaN in a field) is returned before
// anything is sent.
func (c *dispatcherClient) SubmitJob(ctx context.Context, g *jobgraph.JobGraph) error {
	var data []byte
	if g != nil {
		var err error
		if data, err = json.Marshal(g); err != nil {
			return err
		}
	}
	_, err := c.pb.SubmitJob(c.ctx(ctx), &pb.SubmitJobRequest{JobGraphJson: data})
	if err != nil {
		return c.err(ctx, "SubmitJob", err)
	}
	return nil
}

func (c *dispatcherClient) CancelJob(ctx context.Context, id jobgraph.JobID) error {
	_, err := c.pb.CancelJob(c.ctx(ctx), &pb.JobIDRequest{JobId: b16(id)})
	if err != nil {
		return c.err(ctx, "CancelJob", err)
	}
	return nil
}

func (c *dispatcherClient) RequestJobStatus(ctx context.Context, id jobgraph.JobID) (jobgraph.JobStatus, error) {
	r, err := c.pb.RequestJobStatus(c.ctx(ctx), &pb.JobIDRequest{JobId: b16(id)})
	if err != nil {
		return 0, c.err(ctx, "RequestJobStatus", err)
	}
	var d dec
	st := jobgraph.JobStatus(d.uint8("status", r.GetStatus()))
	if d.err != nil {
		return 0, d.reply("RequestJobStatus", c.address)
	}
	return st, nil
}

func (c *dispatcherClient) RequestJobResult(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error) {
	r, err := c.pb.RequestJobResult(c.ctx(ctx), &pb.JobIDRequest{JobId: b16(id)})
	if err != nil {
		return nil, c.err(ctx, "RequestJobResult", err)
	}
	if len(r.GetJobResultJson()) == 0 {
		return nil, nil
	}
	var d dec
	res := new(jobgraph.JobResult)
	d.json("jobResult", r.GetJobResultJson(), res)
	if d.err != nil {
		return nil, d.reply("RequestJobResult", c.address)
	}
	return res, nil
}

func (c *dispatcherClient) ListJobs(ctx context.Context) ([]rpc.JobStatusMessage, error) {
	r, err := c.pb.ListJobs(c.ctx(ctx), empty)
	if err != nil {
		return nil, c.err(ctx, "ListJobs", err)
	}
	var d dec
	jobs := d.jobStatusMessages(r.GetJobs())
	if d.err != nil {
		return nil, d.reply("ListJobs", c.address)
	}
	return jobs, nil
}

func (c *dispatcherClient) TriggerSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (string, error) {
	r, err := c.pb.TriggerSavepoint(c.ctx(ctx), &pb.SavepointRequest{JobId: b16(id), TargetDirectory: targetDirectory})
	if err != nil {
		return "", c.err(ctx, "TriggerSavepoint", err)
	}
	return r.GetPath(), nil
}

func (c *dispatcherClient) StopWithSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (string, error) {
	r, err := c.pb.StopWithSavepoint(c.ctx(ctx), &pb.SavepointRequest{JobId: b16(id), TargetDirectory: targetDirectory})
	if err != nil {
		return "", c.err(ctx, "StopWithSavepoint", err)
	}
	return r.GetPath(), nil
}

func (c *dispatcherClient) TriggerCheckpoint(ctx context.Context, id jobgraph.JobID) (checkpoint.CheckpointID, error) {
	r, err := c.pb.TriggerCheckpoint(c.ctx(ctx), &pb.JobIDRequest{JobId: b16(id)})
	if err != nil {
		return 0, c.err(ctx, "TriggerCheckpoint", err)
	}
	return checkpoint.CheckpointID(r.GetCheckpointId()), nil
}

// dispatcherServer serves the Dispatcher service.
type dispatcherServer struct {
	pb.UnimplementedDispatcherServer
	s *Service
}

// call decodes the job ID of req and hands the Dispatcher and the ID to f.
func (x dispatcherServer) gw(ctx context.Context, jobID []byte) (rpc.DispatcherGateway, jobgraph.JobID, error) {
	gw, err := gateway[rpc.DispatcherGateway](ctx, x.s, kindDispatcher)
	if err != nil {
		return nil, jobgraph.JobID{}, err
	}
	var d dec
	id := id16[jobgraph.JobID](&d, "jobId", jobID)
	if d.err != nil {
		return nil, id, d.status()
	}
	return gw, id, nil
}

func (x dispatcherServer) SubmitJob(ctx context.Context, req *pb.SubmitJobRequest) (*pb.Empty, error) {
	gw, err := gateway[rpc.DispatcherGateway](ctx, x.s, kindDispatcher)
	if err != nil {
		return nil, err
	}
	var g *jobgraph.JobGraph
	if data := req.GetJobGraphJson(); len(data) > 0 {
		if g, err = jobgraph.Decode(data); err != nil {
			return nil, toStatus(err)
		}
	}
	return answer(gw.SubmitJob(ctx, g))
}

func (x dispatcherServer) CancelJob(ctx context.Context, req *pb.JobIDRequest) (*pb.Empty, error) {
	gw, id, err := x.gw(ctx, req.GetJobId())
	if err != nil {
		return nil, err
	}
	return answer(gw.CancelJob(ctx, id))
}

func (x dispatcherServer) RequestJobStatus(ctx context.Context, req *pb.JobIDRequest) (*pb.JobStatusReply, error) {
	gw, id, err := x.gw(ctx, req.GetJobId())
	if err != nil {
		return nil, err
	}
	st, err := gw.RequestJobStatus(ctx, id)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.JobStatusReply{Status: uint32(st)}, nil
}

func (x dispatcherServer) RequestJobResult(ctx context.Context, req *pb.JobIDRequest) (*pb.JobResultReply, error) {
	gw, id, err := x.gw(ctx, req.GetJobId())
	if err != nil {
		return nil, err
	}
	res, err := gw.RequestJobResult(ctx, id)
	if err != nil {
		return nil, toStatus(err)
	}
	if res == nil {
		return &pb.JobResultReply{}, nil
	}
	data, err := json.Marshal(res)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.JobResultReply{JobResultJson: data}, nil
}

func (x dispatcherServer) ListJobs(ctx context.Context, _ *pb.Empty) (*pb.ListJobsReply, error) {
	gw, err := gateway[rpc.DispatcherGateway](ctx, x.s, kindDispatcher)
	if err != nil {
		return nil, err
	}
	jobs, err := gw.ListJobs(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.ListJobsReply{Jobs: toPBJobStatusMessages(jobs)}, nil
}

func (x dispatcherServer) TriggerSavepoint(ctx context.Context, req *pb.SavepointRequest) (*pb.PathReply, error) {
	gw, id, err := x.gw(ctx, req.GetJobId())
	if err != nil {
		return nil, err
	}
	path, err := gw.TriggerSavepoint(ctx, id, req.GetTargetDirectory())
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.PathReply{Path: path}, nil
}

func (x dispatcherServer) StopWithSavepoint(ctx context.Context, req *pb.SavepointRequest) (*pb.PathReply, error) {
	gw, id, err := x.gw(ctx, req.GetJobId())
	if err != nil {
		return nil, err
	}
	path, err := gw.StopWithSavepoint(ctx, id, req.GetTargetDirectory())
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.PathReply{Path: path}, nil
}

func (x dispatcherServer) TriggerCheckpoint(ctx context.Context, req *pb.JobIDRequest) (*pb.CheckpointIDReply, error) {
	gw, id, err := x.gw(ctx, req.GetJobId())
	if err != nil {
		return nil, err
	}
	cp, err := gw.TriggerCheckpoint(ctx, id)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.CheckpointIDReply{CheckpointId: int64(cp)}, nil
}
