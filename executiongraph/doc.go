// Package executiongraph holds the ExecutionGraph: the parallel, per-subtask form of a JobGraph
// that a JobMaster's scheduler runs. Flink: org.apache.flink.runtime.executiongraph.
//
// Build expands every JobVertex into an ExecutionJobVertex with one ExecutionVertex per subtask,
// every IntermediateDataSet into an IntermediateResult with one IntermediateResultPartition per
// producer subtask, and every JobEdge into ConsumedPartitionGroups and ConsumerVertexGroups (as
// Flink's EdgeManagerBuildUtil does), so that an ALL_TO_ALL edge costs O(producers + consumers)
// in memory and time, never O(producers × consumers). It then computes the pipelined regions
// (Flink's SchedulingPipelinedRegionComputeUtil) in time linear in vertices plus group sizes.
//
// Each ExecutionVertex runs one Execution (attempt) at a time; the state machines of the job
// (jobgraph.JobStatus) and of each attempt (jobgraph.ExecutionState) follow the transition tables
// of package jobgraph, and any other transition is refused with an error matching
// ErrIllegalTransition. Transitions keep the graph's counters (finished vertices, per-state counts
// per job vertex, unfinished partitions per ConsumedPartitionGroup) up to date, so that nothing
// needs to scan the graph to answer "is everything finished?" or "is this input consumable?".
//
// # Concurrency
//
// An ExecutionGraph is a plain data structure owned by its JobMaster's main loop: it has no locks,
// starts no goroutines and does no I/O. Every method must be called from that one goroutine.
// Time comes from the clock given with WithClock (time.Now by default), the ExecutionGraphID from
// WithExecutionGraphID (random by default), and a sparse archive's instants from the arguments of
// NewSparseArchivedExecutionGraph: nothing here reads a clock or draws a random value past those,
// so the same JobGraph, options and calls give the same ArchivedExecutionGraph, byte for byte.
//
// # Memory layout
//
// The subtasks of a job vertex live in one slice ([]ExecutionVertex), their first attempts in
// another ([]Execution), the partitions of a result in a third; groups are allocated in bulk per
// edge. A group is a contiguous range of one result's partitions (or of one job vertex's
// subtasks), stored as {result, start, end}, never as a list. Pointers handed out point into those
// slices and stay valid for the life of the graph. Slices returned by accessors are views into the
// graph's own storage: callers must not modify them.
package executiongraph
