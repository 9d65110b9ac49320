// Package scheduler is a JobMaster's scheduler: Flink's SchedulerNG as the DefaultScheduler, with
// the PipelinedRegionSchedulingStrategy (default) or the VertexwiseSchedulingStrategy, the
// slot-sharing execution slot allocator, the TaskDeploymentDescriptor factory, the region-based
// partition release strategy and the failover hook. Flink: org.apache.flink.runtime.scheduler.
//
// # One job
//
// New expands the JobGraph into an ExecutionGraph (job status CREATED). StartScheduling moves the
// job to RUNNING and asks the strategy for the first vertices to run. The strategy hands them to
// the scheduler in bulks (one pipelined region, or one vertex, per bulk); for each bulk the
// scheduler puts the executions into SCHEDULED, gets one shared slot per execution slot sharing
// group from the slot pool, and once every slot of the bulk is there, moves each execution to
// DEPLOYING and hands its TaskDeploymentDescriptor to the Deployer. TaskExecutors report state
// changes through UpdateTaskExecutionState; FINISHED executions make blocking partitions
// consumable (the strategy schedules their consumers) and, once their consumers are done,
// releasable. When every execution FINISHED the job is FINISHED.
//
// # Failures
//
// A failed execution, a failed deployment, a lost slot, a slot request that timed out
// (slotpool.ErrNoResourceAvailable) or a global failure goes to the failure handler (Flink's
// ExecutionFailureHandler): the restart strategy (the JobGraph's RestartStrategy resolved with its
// Checkpointing: none, fixed-delay, failure-rate, exponential-delay) records the failure and says
// whether the job may restart and after what backoff; the failover strategy (region or full) picks
// the vertices to restart. If the job may not restart, it goes FAILING, every execution is
// canceled, and it is FAILED once they all are terminal. Otherwise the vertices wait for the
// restart (the job is RESTARTING while any vertex waits), their executions are canceled, and once
// the backoff elapsed on Config.Timers and every canceled execution is terminal, the vertices a
// newer failover did not take over are reset and scheduled again. Each failure that starts a
// restart attempt (or ends the job) is an exception history entry; failures merged into the same
// attempt, and failures of tasks canceled for it, are grouped under it as concurrent exceptions.
//
// # Concurrency
//
// A DefaultScheduler is a plain struct owned by its JobMaster's main loop: no locks, no
// goroutines, no I/O. Every method must be called from that loop, and so must the slot pool it
// uses (the pool's callbacks run on the loop, and the scheduler relies on that). Side effects go
// through the Deployer, whose methods must return promptly and must not call back into the
// scheduler synchronously: the JobMaster does the RPC off the loop and posts the outcome back
// (UpdateTaskExecutionState, OnDeployFailed).
package scheduler
