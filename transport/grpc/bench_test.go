package grpctransport_test

import (
	"context"
	"fmt"
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

// BenchmarkSubmitTasks deploys the 100 consumers of a 100 × 100 ALL_TO_ALL edge onto one
// TaskExecutor in one SubmitTasks call, as a JobMaster deploys to one TaskExecutor: each
// descriptor reads 100 partitions (in the compact partitionRange form on the wire) and produces
// one. The endpoint only counts them.
func BenchmarkSubmitTasks(b *testing.B) {
	const n = 100
	job, eg, producer := jobgraph.NewJobID(), jobgraph.NewExecutionGraphID(), jobgraph.NewJobVertexID()
	ds, consumer := jobgraph.NewIntermediateDataSetID(), jobgraph.NewJobVertexID()
	parts := make([]rpc.ResultPartitionID, n)
	for i := range parts {
		parts[i] = rpc.ResultPartitionID{PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: ds, PartitionIndex: i},
			ProducerID: jobgraph.ExecutionAttemptID{ExecutionGraphID: eg, ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: producer, Subtask: i}}}
	}
	tdds := make([]rpc.TaskDeploymentDescriptor, n)
	for i := range tdds {
		self := jobgraph.ExecutionAttemptID{ExecutionGraphID: eg, ExecutionVertexID: jobgraph.ExecutionVertexID{JobVertexID: consumer, Subtask: i}}
		tdds[i] = rpc.TaskDeploymentDescriptor{JobID: job, JobName: "bench", ExecutionAttemptID: self, AllocationID: jobgraph.NewAllocationID(),
			TaskName: fmt.Sprintf("sink (%d/%d)", i+1, n), VertexName: "sink", Invokable: "sink", SubtaskIndex: i, Parallelism: n, MaxParallelism: 128,
			ProducedPartitions: []rpc.ResultPartitionDeploymentDescriptor{{ResultPartitionID: rpc.ResultPartitionID{
				PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: jobgraph.NewIntermediateDataSetID(), PartitionIndex: i}, ProducerID: self},
				ResultType: jobgraph.Blocking, NumberOfSubpartitions: 1}},
			InputGates: []rpc.InputGateDeploymentDescriptor{{DataSetID: ds, ResultType: jobgraph.Blocking, Partitions: parts, ConsumedSubpartitionIndex: i}}}
	}
	server, err := grpctransport.New(grpctransport.Options{Logger: quiet})
	require.NoError(b, err)
	defer server.Close()
	client, err := grpctransport.New(grpctransport.Options{Logger: quiet})
	require.NoError(b, err)
	defer client.Close()
	te := &fakeTaskExecutor{}
	require.NoError(b, server.Register("taskexecutor", te))
	gw, err := rpc.Connect[rpc.TaskExecutorGateway](context.Background(), client, server.Address("taskexecutor"))
	require.NoError(b, err)
	token := jobgraph.NewJobMasterID()
	b.ReportAllocs()
	for b.Loop() {
		errs, err := gw.SubmitTasks(context.Background(), token, tdds)
		if err != nil || errs != nil {
			b.Fatal(err, errs)
		}
		te.mu.Lock()
		te.calls = te.calls[:0]
		te.mu.Unlock()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/n, "µs/task")
}
