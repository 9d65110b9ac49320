// Package checkpoint is the core of checkpoints and savepoints, following Flink's
// org.apache.flink.runtime.checkpoint: the CheckpointCoordinator, PendingCheckpoint,
// CompletedCheckpoint, the CheckpointFailureManager, the CompletedCheckpointStore and
// CheckpointIDCounter (interfaces, each with an in-memory and a file-based implementation), the
// CheckpointStatsTracker, and savepoint storage: SavepointStorage (default FileSavepointStorage,
// Flink's layout: a directory savepoint-<job prefix>-<random> holding a _metadata file) and
// LoadSavepoint, which reads one back (Flink's Checkpoints.loadCheckpointMetadata).
//
// What task code and host programs use: StateHandle (a subtask's snapshot: OperatorState for
// list state redistributed round robin, KeyedState by key group, opaque Data), CheckpointID,
// LoadSavepoint (read a savepoint or retained checkpoint back), CompletedCheckpoint and
// CheckpointingStatistics (on executiongraph.ArchivedExecutionGraph.CheckpointStatistics), and
// the CheckpointRecoveryFactory a jobmaster.Config takes. The coordinator, pending checkpoints,
// the failure manager and the TaskGateway are for scheduler implementers. State is matched to
// vertices by JobVertexID: a job that restores another job's snapshot gives its vertices the
// same IDs.
//
// The coordinator is a plain struct driven from one goroutine, its owner's main loop (the
// JobMaster's, through the scheduler): no locks, no goroutines of its own, no I/O. Time comes from the injected Timers
// and Clock; tasks are reached through TaskGateway; the job is failed through FailJobCallback;
// store and ID counter calls, which may block on disk, run through the injected IOExecutor, which
// runs them off the loop and brings their result back to it (InlineExecutor runs them in place,
// for in-memory stores and tests).
//
// The scheduler (package scheduler) creates and drives a job's coordinator on the JobMaster's
// loop; the messages here (AcknowledgeCheckpoint, DeclineCheckpoint) travel in rpc's gateway
// calls. CheckpointRecoveryFactory gives each job its store and counter; AssignStates is Flink's
// StateAssignmentOperation, with key groups and operator-state redistribution from
// checkpoint/keygroup.
package checkpoint
