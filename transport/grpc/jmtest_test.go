package grpctransport_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/jobmaster/jmtest"
	"github.com/jobgraph/jobgraph/rpc"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

// The gRPC client of a JobMasterGateway does not implement rpc.TaskExecutionStateNotifier (its
// callers wait for UpdateTaskExecutionState): the JobMaster suite, run against an in-process
// JobMaster reached through the client over loopback, passes with every case logging that it
// was not applicable.
func TestJobMasterNotifierSuiteNotApplicable(t *testing.T) {
	jmtest.TestJobMaster(t, func(t *testing.T, env jmtest.Env) jmtest.JobMaster {
		f, err := jobmaster.NewFactory(env.JobGraph, jobmaster.Config{RPC: env.RPC, ResourceManagerAddress: env.ResourceManagerAddress, Logger: quiet})
		require.NoError(t, err)
		jm, err := f.Create(t.Context(), env.JobMasterID)
		require.NoError(t, err)
		svc := newService(t, grpctransport.Options{})
		t.Cleanup(func() { require.NoError(t, svc.Close()) })
		require.NoError(t, svc.Register("jobmaster", jm.Gateway()))
		gw, err := rpc.Connect[rpc.JobMasterGateway](t.Context(), svc, svc.Address("jobmaster"))
		require.NoError(t, err)
		_, notifier := gw.(rpc.TaskExecutionStateNotifier)
		require.False(t, notifier, "the client stub waits for every call")
		return jmtest.JobMaster{Gateway: gw, RequestJobStatus: jm.RequestJobStatus, Close: func() { jm.Close() }, ErrClosed: jobmaster.ErrClosed}
	})
}
