package grpctransport_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/resourcemanager"
	"github.com/jobgraph/jobgraph/resourcemanager/rmtest"
	"github.com/jobgraph/jobgraph/rpc"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

// The gRPC client of a ResourceManagerGateway does not implement rpc.ResourceManagerNotifier
// (its callers wait for DeclareRequiredResources and DisconnectJobMaster): the ResourceManager
// suite, run against an in-process ResourceManager reached through the client over loopback,
// passes with every case logging that it was not applicable.
func TestResourceManagerNotifierSuiteNotApplicable(t *testing.T) {
	rmtest.TestResourceManager(t, func(t *testing.T, env rmtest.Env) rmtest.ResourceManager {
		rm, err := resourcemanager.New(resourcemanager.Config{ResourceID: "rm", Address: "rm", RPC: env.RPC, Logger: quiet})
		require.NoError(t, err)
		require.NoError(t, rm.Start(t.Context()))
		svc := newService(t, grpctransport.Options{})
		t.Cleanup(func() { require.NoError(t, svc.Close()) })
		require.NoError(t, svc.Register("resourcemanager", rm))
		gw, err := rpc.Connect[rpc.ResourceManagerGateway](t.Context(), svc, svc.Address("resourcemanager"))
		require.NoError(t, err)
		_, notifier := gw.(rpc.ResourceManagerNotifier)
		require.False(t, notifier, "the client stub waits for every call")
		return rmtest.ResourceManager{Gateway: gw, Close: func() { assert.NoError(t, rm.Close()) }, ErrClosed: resourcemanager.ErrClosed}
	})
}
