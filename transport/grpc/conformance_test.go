package grpctransport_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/rpc/rpctest"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

var quiet = slog.New(slog.DiscardHandler)

func newService(t *testing.T, opts grpctransport.Options) *grpctransport.Service {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	s, err := grpctransport.New(opts)
	require.NoError(t, err)
	return s
}

// The gRPC Service passes the rpc conformance suite over real loopback sockets: every call of
// the suite goes through gRPC, also to the Service's own endpoints.
func TestConformance(t *testing.T) {
	rpctest.TestService(t, func(t *testing.T) rpc.Service { return newService(t, grpctransport.Options{}) })
}
