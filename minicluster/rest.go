package minicluster

import (
	"context"

	"github.com/jobgraph/jobgraph/rpc"
)

// ListJobs lists the running and archived jobs; see dispatcher.StandaloneDispatcher.ListJobs.
// Like the cluster's other job methods it waits for the Dispatcher's leadership and follows it.
// Errors: ErrNotStarted, ErrClosed, ctx's. Flink: MiniCluster.listJobs.
func (mc *MiniCluster) ListJobs(ctx context.Context) ([]rpc.JobStatusMessage, error) {
	if err := mc.usable(); err != nil {
		return nil, err
	}
	v, err := mc.leader.ListJobs(ctx)
	return v, mc.overtaken(err)
}

// RequestTaskManagerInfo returns the TaskExecutors registered with the cluster's ResourceManager,
// with their slots and resources; see resourcemanager.ResourceManager.RequestTaskManagerInfo.
// Errors: ErrNotStarted, ErrClosed, the ResourceManager's (an error wrapping ha.ErrNotLeader
// while it does not lead), ctx's. Flink: ResourceManagerGateway.requestTaskManagerInfo, which the
// REST endpoint's /taskmanagers asks.
func (mc *MiniCluster) RequestTaskManagerInfo(ctx context.Context) ([]rpc.TaskManagerInfo, error) {
	if err := mc.usable(); err != nil {
		return nil, err
	}
	v, err := mc.rm.RequestTaskManagerInfo(ctx)
	return v, mc.overtaken(err)
}
