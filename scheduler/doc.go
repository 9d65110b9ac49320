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
// releasable. When every execution FINISHED the job is FINISHED. A failed execution, a failed
// deployment, a slot request that timed out or a global failure goes to the failure handler; in
// this version nothing is restarted: the job goes FAILING, every other execution is canceled, and
// the job is FAILED once they all are terminal.
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
