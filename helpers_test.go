package jobgraph_test

import (
	"math"
	"time"

	"github.com/jobgraph/jobgraph"
)

// Deterministic IDs: the last byte is n, every other byte zero.
func jid(n byte) jobgraph.JobID       { var id jobgraph.JobID; id[15] = n; return id }
func vid(n byte) jobgraph.JobVertexID { var id jobgraph.JobVertexID; id[15] = n; return id }
func dsid(n byte) jobgraph.IntermediateDataSetID {
	var id jobgraph.IntermediateDataSetID
	id[15] = n
	return id
}

func edge(src jobgraph.IntermediateDataSetID, target jobgraph.JobVertexID, p jobgraph.DistributionPattern, ship string) *jobgraph.JobEdge {
	return &jobgraph.JobEdge{Source: src, Target: target, DistributionPattern: p, ShipStrategy: ship}
}

// richGraph returns a valid graph with every field set: checkpointing, savepoint, restart and
// failover settings, configs, resources, slot-sharing and co-location groups, vertices with
// several inputs and outputs, every ResultPartitionType and both distribution patterns.
// IDs are fixed, so the graph (and its JSON) is the same on every call.
//
//	src ─ds1 PIPELINED_BOUNDED──▶ map ─ds4 BLOCKING_PERSISTENT───▶ sink
//	    ─ds2 PIPELINED──────────▶     ─ds5 PIPELINED_APPROXIMATE─▶
//	    ─ds3 BLOCKING──▶ side ─ds6 HYBRID_FULL───────────────────▶
//	                          ─ds7 HYBRID_SELECTIVE──────────────▶
func richGraph() *jobgraph.JobGraph {
	return &jobgraph.JobGraph{
		JobID: jid(1),
		Name:  "rich job ✓",
		Type:  jobgraph.Streaming,
		Vertices: []*jobgraph.JobVertex{
			{
				ID: vid(10), Name: "src", Parallelism: 4, MaxParallelism: 128, Invokable: "source",
				Config:              []byte{0, 1, 2, 0xff},
				OperatorCoordinator: "split-enumerator", OperatorCoordinatorConfig: []byte(`{"splits":100}`),
				Resources: jobgraph.ResourceProfile{CPUCores: 0.5, TaskHeapMemory: 256 * jobgraph.MiB,
					TaskOffHeapMemory: 64 * jobgraph.MiB, ManagedMemory: 128 * jobgraph.MiB, NetworkMemory: 32 * jobgraph.MiB},
				SlotSharingGroup: "default",
				Results: []*jobgraph.IntermediateDataSet{
					{ID: dsid(1), ResultType: jobgraph.PipelinedBounded, RecordCodec: "json"},
					{ID: dsid(2), ResultType: jobgraph.Pipelined},
					{ID: dsid(3), ResultType: jobgraph.Blocking},
				},
			},
			{
				ID: vid(11), Name: "map", Parallelism: 4, Invokable: "map", Config: []byte(`{"fn":"upper"}`),
				Resources:        jobgraph.ResourceProfile{CPUCores: 1.7},
				SlotSharingGroup: "default", CoLocationGroup: "iteration",
				Inputs: []*jobgraph.JobEdge{
					edge(dsid(1), vid(11), jobgraph.AllToAll, "REBALANCE"),
					edge(dsid(2), vid(11), jobgraph.Pointwise, "FORWARD"),
				},
				Results: []*jobgraph.IntermediateDataSet{
					{ID: dsid(4), ResultType: jobgraph.BlockingPersistent},
					{ID: dsid(5), ResultType: jobgraph.PipelinedApproximate},
				},
			},
			{
				ID: vid(12), Name: "side", Parallelism: 4, Invokable: "side",
				SlotSharingGroup: "default", CoLocationGroup: "iteration",
				Inputs: []*jobgraph.JobEdge{edge(dsid(3), vid(12), jobgraph.Pointwise, "")},
				Results: []*jobgraph.IntermediateDataSet{
					{ID: dsid(6), ResultType: jobgraph.HybridFull},
					{ID: dsid(7), ResultType: jobgraph.HybridSelective},
				},
			},
			{
				ID: vid(13), Name: "sink", Parallelism: 2, Invokable: "sink", Config: []byte("sink-config"),
				Resources:        jobgraph.ResourceProfile{ManagedMemory: 100 * jobgraph.MiB},
				SlotSharingGroup: "sinks",
				Inputs: []*jobgraph.JobEdge{
					edge(dsid(4), vid(13), jobgraph.AllToAll, "HASH"),
					edge(dsid(5), vid(13), jobgraph.Pointwise, "RESCALE"),
					edge(dsid(6), vid(13), jobgraph.AllToAll, "BROADCAST"),
					edge(dsid(7), vid(13), jobgraph.Pointwise, "FORWARD"),
				},
			},
		},
		Checkpointing: jobgraph.CheckpointingSettings{
			Interval: 10 * time.Second, Timeout: 2 * time.Minute, MinPauseBetweenCheckpoints: 500 * time.Millisecond,
			MaxConcurrentCheckpoints: 2, TolerableFailedCheckpoints: 3, RetainOnCancellation: true,
			NumRetained: 4, Unaligned: true,
		},
		SavepointRestore: jobgraph.SavepointRestoreSettings{
			Path: "file:///savepoints/sp-1", AllowNonRestoredState: true, RestoreMode: jobgraph.Claim,
		},
		RestartStrategy: jobgraph.RestartStrategyConfig{
			Type:               jobgraph.RestartStrategyExponentialDelay,
			FixedDelayAttempts: 3, FixedDelay: 2 * time.Second,
			FailureRateMaxFailuresPerInterval: 5, FailureRateInterval: 5 * time.Minute, FailureRateDelay: 3 * time.Second,
			ExponentialDelayInitialBackoff: 250 * time.Millisecond, ExponentialDelayMaxBackoff: 30 * time.Second,
			ExponentialDelayBackoffMultiplier: 2.5, ExponentialDelayResetBackoffThreshold: 45 * time.Minute,
			ExponentialDelayJitterFactor: 0.25, ExponentialDelayAttemptsBeforeResetBackoff: math.MaxInt,
		},
		FailoverStrategy: jobgraph.FailoverFull,
	}
}
