package grpctransport_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

// fencedJobMaster answers FailSlot after checking its token, and records nothing.
type fencedJobMaster struct {
	fakeJobMaster
	token jobgraph.JobMasterID
}

func (f *fencedJobMaster) FailSlot(_ context.Context, token jobgraph.JobMasterID, _ jobgraph.ResourceID, _ jobgraph.AllocationID, _ *jobgraph.ErrorInfo) error {
	if token != f.token {
		return &rpc.FencingError{Endpoint: "bench", Expected: f.token.String(), Got: token.String()}
	}
	return nil
}

// BenchmarkFencedCall is one round trip of a small fenced call (JobMasterGateway.FailSlot with a
// nil cause) from one Service to an endpoint on another over loopback gRPC, in plaintext and with
// mutual TLS (the handshake is made once, before the loop), against the same call through
// rpc.LocalService (a method call).
func BenchmarkFencedCall(b *testing.B) {
	ep := &fencedJobMaster{token: jobgraph.NewJobMasterID()}
	allocation := jobgraph.NewAllocationID()
	run := func(b *testing.B, gw rpc.JobMasterGateway) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := gw.FailSlot(ctx, ep.token, "te-1", allocation, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	remote := func(b *testing.B, server, client grpctransport.Options) {
		server.Logger, client.Logger = quiet, quiet
		s, err := grpctransport.New(server)
		require.NoError(b, err)
		defer s.Close()
		c, err := grpctransport.New(client)
		require.NoError(b, err)
		defer c.Close()
		require.NoError(b, s.Register("jobmaster", ep))
		gw, err := rpc.Connect[rpc.JobMasterGateway](context.Background(), c, s.Address("jobmaster"))
		require.NoError(b, err)
		run(b, gw)
	}
	b.Run("grpc", func(b *testing.B) { remote(b, grpctransport.Options{}, grpctransport.Options{}) })
	b.Run("grpc-mtls", func(b *testing.B) {
		ca := newCA(b, "cluster CA")
		serverCert, _, _ := ca.issue(b, "jobmanager")
		clientCert, _, _ := ca.issue(b, "taskexecutor")
		remote(b, grpctransport.Options{TLS: &grpctransport.TLSOptions{Enabled: true, Certificate: serverCert, CAs: ca.pool}},
			grpctransport.Options{TLS: &grpctransport.TLSOptions{Enabled: true, Certificate: clientCert, CAs: ca.pool}})
	})
	b.Run("local", func(b *testing.B) {
		s := rpc.NewLocalService()
		defer s.Close()
		require.NoError(b, s.Register("jobmaster", ep))
		gw, err := rpc.Connect[rpc.JobMasterGateway](context.Background(), s, "jobmaster")
		require.NoError(b, err)
		run(b, gw)
	})
}
