// Package checkpoint is the core of checkpoints and savepoints, following Flink's
// org.apache.flink.runtime.checkpoint: the CheckpointCoordinator, PendingCheckpoint,
// CompletedCheckpoint, the CheckpointFailureManager, the CompletedCheckpointStore and
// CheckpointIDCounter (interfaces, each with an in-memory and a file-based implementation), the
// CheckpointStatsTracker, and savepoint storage: SavepointStorage (default FileSavepointStorage,
// Flink's layout: a directory savepoint-<job prefix>-<random> holding a _metadata file) and
// LoadSavepoint, which reads one back (Flink's Checkpoints.loadCheckpointMetadata).
//
// The coordinator is a plain struct driven from one goroutine, its owner's main loop (later the
// JobMaster's): no locks, no goroutines of its own, no I/O. Time comes from the injected Timers
// and Clock; tasks are reached through TaskGateway; the job is failed through FailJobCallback;
// store and ID counter calls, which may block on disk, run through the injected IOExecutor, which
// runs them off the loop and brings their result back to it (InlineExecutor runs them in place,
// for in-memory stores and tests).
//
// Not wired yet: nothing in the module imports this package. The JobMaster's loop, the
// TaskExecutor's snapshot and restore hooks, barriers and restore on failover come later; the
// messages here (AcknowledgeCheckpoint, DeclineCheckpoint) are plain data ready to travel in
// rpc messages. Key groups and operator-state redistribution live in checkpoint/keygroup.
package checkpoint
