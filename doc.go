// Package jobgraph is the model every part of the jobgraph library shares: the JobGraph a host
// program builds and submits, and the identifiers, states and settings the runtime passes around.
//
// jobgraph schedules and runs job graphs the way Apache Flink's JobManager does — Dispatcher,
// JobMaster, scheduler, ExecutionGraph, slot pool, region failover, restart strategies — embedded
// in a Go program. This package holds:
//
//   - JobGraph, JobVertex, IntermediateDataSet and JobEdge, with a builder (New, AddVertex,
//     Connect) and Validate, which returns a *ValidationError naming the vertex or edge and the
//     rule it broke;
//   - the identifiers (JobID, JobVertexID, IntermediateDataSetID, AllocationID, JobMasterID,
//     ExecutionAttemptID…), printed and parsed as Flink prints them (32 hex characters);
//   - JobStatus and ExecutionState, with their legal transitions as data;
//   - DistributionPattern, ResultPartitionType, ResourceProfile, and the checkpointing, savepoint,
//     restart-strategy and failover-strategy settings under Flink's option names and defaults;
//   - the JSON form that HA stores persist (Decode reads it back exactly).
//
// A host program builds a graph like this:
//
//	g := jobgraph.New("wordcount", jobgraph.Batch)
//	src := g.AddVertex("source", "read-files", 4)
//	cnt := g.AddVertex("count", "count-words", 4)
//	g.Connect(src, cnt, jobgraph.AllToAll, jobgraph.Blocking)
//	if err := g.Validate(); err != nil {
//		return err // a *ValidationError
//	}
//
// AddVertex puts every vertex in the slot-sharing group "default" (DefaultSlotSharingGroup), as
// Flink's DataStream API does, so this job needs 4 slots, not 8; WithoutSlotSharingGroup opts a
// vertex out. Validate also refuses a data set no vertex of the graph reads (what Connect to a
// vertex of another graph leaves) and names longer than MaxNameLength; error messages cut long
// names with Truncate.
//
// Package executiongraph expands a JobGraph into the ExecutionGraph the scheduler runs: one
// ExecutionVertex per subtask, partitions and their consumers grouped so that an ALL_TO_ALL edge
// costs O(producers + consumers), and the pipelined regions. docs/ARCHITECTURE.md describes the
// whole library.
package jobgraph
