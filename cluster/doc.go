// Package cluster holds the process roles of a jobgraph cluster whose parts run in several
// processes, as Flink's do: RunJobManager starts a JobManager — the Dispatcher, the
// ResourceManager and the JobMasters of the jobs, Flink's ClusterEntrypoint — and RunTaskExecutor
// starts a TaskExecutor that finds the ResourceManager, registers its slots and registers again
// with every new leader, Flink's TaskManagerRunner. Each is one call on a host's rpc.Service and
// HA services (or, for a TaskExecutor, the ResourceManager's fixed address); the package is
// transport-agnostic and carries no network code: in one process the roles share an
// rpc.LocalService, across processes the host gives a network rpc.Service (transport/grpc), a
// network shuffle and HA services that every process reaches (ha/file on one machine, ha/etcd).
//
//	jm, err := cluster.RunJobManager(ctx, cluster.JobManagerConfig{RPC: svc, HA: services})
//	if err != nil {
//		return err
//	}
//	te, err := cluster.RunTaskExecutor(ctx, cluster.TaskExecutorConfig{
//		TaskExecutor: taskexecutor.Config{NumSlots: 2, Registry: reg, RPC: svc, Shuffle: shuffle},
//		HA:           services,
//	})
//	if err != nil {
//		return err
//	}
//	res, err := jm.LeaderDispatcher().RequestJobResult(ctx, id) // after SubmitJob
//	...
//	return errors.Join(jm.Wait(), te.Wait()) // once ctx ended
//
// The MiniCluster (package minicluster) is a JobManager of this package plus in-process
// TaskExecutors: both build the JobManager with the same code (NewJobManager).
//
// Goroutines: every role runs its endpoints' main loops and the goroutines they start; Close
// waits for all of them, and ctx ending calls Close on a goroutine of its own
// (context.AfterFunc). Methods are safe for concurrent use.
package cluster
