package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// TaskExecutorConfig configures RunTaskExecutor: the TaskExecutor itself, and how it finds the
// ResourceManager — through HA's leader retrieval (HA) or at a fixed address
// (ResourceManagerAddress), exactly one of them.
type TaskExecutorConfig struct {
	// TaskExecutor is the TaskExecutor's own configuration (taskexecutor.Config): its ResourceID
	// (taskmanager.resource-id) and Address on TaskExecutor.RPC (required: the transport it is
	// reached on and reaches the JobManager through), NumSlots (taskmanager.numberOfTaskSlots),
	// SlotProfile, Registry (the task code: every TaskExecutor of a cluster registers the same
	// names), Shuffle, Metrics, Logger, HeartbeatInterval, HeartbeatTimeout and
	// HeartbeatRPCFailureThreshold (heartbeat.interval, heartbeat.timeout and
	// heartbeat.rpc-failure-threshold: give it the JobManager's) and the task.cancellation.* options. Its
	// ResourceManagerAddress and ResourceManagerRetrieval must stay empty: RunTaskExecutor sets
	// the one that HA or ResourceManagerAddress below says.
	//
	// Shuffle: the default (nil) is a private in-memory *taskexecutor.Shuffle, which only the
	// tasks of this one TaskExecutor can read: TaskExecutors of one process that exchange
	// records share one *taskexecutor.Shuffle (as the MiniCluster's do), and TaskExecutors in
	// different processes need a network shuffle (transport/grpc/netshuffle) and the matching
	// ShuffleMaster on the JobManager (JobManagerConfig.ShuffleMaster).
	TaskExecutor taskexecutor.Config
	// HA, if set, is how the TaskExecutor finds the ResourceManager: it follows
	// HA.ResourceManagerLeaderRetrieval() and registers with every new leader (with its full slot
	// report, so running tasks keep their slots), retrying until registered (the
	// cluster.registration.* timing; see taskexecutor.Config.ResourceManagerRetrieval). It may be
	// started before any JobManager: it registers once a ResourceManager leads. In another
	// process than the JobManager's this is a client of a shared backend (ha/file on one
	// machine, ha/etcd). RunTaskExecutor never closes it. Flink: high-availability.type with
	// the TaskManager's ResourceManager leader retriever.
	HA ha.Services
	// ResourceManagerAddress, if set instead of HA, is the ResourceManager's fixed address on
	// TaskExecutor.RPC (Flink: jobmanager.rpc.address and jobmanager.rpc.port without HA,
	// StandaloneLeaderRetrievalService): the TaskExecutor registers with whatever ResourceManager
	// answers there, retrying until one does, and registers again when its heartbeats stop
	// (heartbeat.timeout), so it also finds a ResourceManager that took the address over.
	ResourceManagerAddress string
}

// TaskExecutorRunner is one running TaskExecutor, the TaskExecutor process role. Flink:
// TaskManagerRunner. Its methods are safe for concurrent use.
type TaskExecutorRunner struct {
	te        *taskexecutor.TaskExecutor
	mu        sync.Mutex
	stopOnCtx func() bool // under mu
	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// RunTaskExecutor creates a TaskExecutor from cfg, registers it on its rpc.Service and starts
// looking for the ResourceManager (HA's leader retrieval, or the fixed address); it returns
// without waiting for the registration (TaskExecutor().WaitRegistered waits). The TaskExecutor
// runs until ctx ends or Close is called; Wait waits for that. Errors: a *ConfigError
// (ErrInvalidConfig) for neither or both of HA and ResourceManagerAddress, or for a
// TaskExecutor.ResourceManagerAddress or ResourceManagerRetrieval set; taskexecutor.New's (no
// RPC, bad slots or durations); Start's (the Address taken on the rpc.Service); nothing is left
// running then. Flink: TaskManagerRunner.runTaskManager.
func RunTaskExecutor(ctx context.Context, cfg TaskExecutorConfig) (*TaskExecutorRunner, error) {
	tc := cfg.TaskExecutor
	switch {
	case tc.ResourceManagerAddress != "" || tc.ResourceManagerRetrieval != nil:
		return nil, &ConfigError{errors.New("TaskExecutor.ResourceManagerAddress and TaskExecutor.ResourceManagerRetrieval must be empty: set TaskExecutorConfig.HA or TaskExecutorConfig.ResourceManagerAddress")}
	case cfg.HA == nil && cfg.ResourceManagerAddress == "":
		return nil, &ConfigError{errors.New("neither HA nor ResourceManagerAddress (jobmanager.rpc.address) is set: the TaskExecutor could not find the ResourceManager")}
	case cfg.HA != nil && cfg.ResourceManagerAddress != "":
		return nil, &ConfigError{errors.New("set HA or ResourceManagerAddress (jobmanager.rpc.address), not both")}
	}
	if cfg.HA != nil {
		tc.ResourceManagerRetrieval = cfg.HA.ResourceManagerLeaderRetrieval()
	} else {
		tc.ResourceManagerRetrieval = ha.NewStandaloneLeaderRetrieval(cfg.ResourceManagerAddress)
	}
	r := &TaskExecutorRunner{closed: make(chan struct{}), stopOnCtx: func() bool { return false }}
	// A fatal error ends the runner, as Flink's TaskManagerRunner.onFatalError ends the
	// process; the host's own handler hears it first. Close waits for the TaskExecutor, whose
	// loop calls this: it runs on a goroutine of its own.
	hostHandler := tc.FatalErrorHandler
	tc.FatalErrorHandler = func(err error) {
		if hostHandler != nil {
			hostHandler(err)
		}
		go func() { _ = r.Close() }()
	}
	te, err := taskexecutor.New(tc)
	if err != nil {
		return nil, err
	}
	r.te = te
	if err := te.Start(ctx); err != nil {
		return nil, errors.Join(err, te.Close())
	}
	stop := context.AfterFunc(ctx, func() { _ = r.Close() })
	r.mu.Lock()
	r.stopOnCtx = stop
	r.mu.Unlock()
	return r, nil
}

// TaskExecutor returns the running TaskExecutor (its ResourceID, WaitRegistered, SlotReport…).
func (r *TaskExecutorRunner) TaskExecutor() *taskexecutor.TaskExecutor { return r.te }

// Close stops the TaskExecutor (taskexecutor.TaskExecutor.Close: its tasks are canceled without
// reporting, its leader retrieval stopped, it leaves the rpc.Service) and waits for every
// goroutine it started. The JobManager notices it when its heartbeats stop (heartbeat.timeout);
// a closed TaskExecutor answers that it is closed, which is not unreachable, so
// heartbeat.rpc-failure-threshold does not shorten that (it does for a process that ended, or a
// killed TaskExecutor). Closing twice returns the first Close's error. Flink:
// TaskManagerRunner.closeAsync.
func (r *TaskExecutorRunner) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		stop := r.stopOnCtx
		r.mu.Unlock()
		stop()
		r.closeErr = r.te.Close()
		close(r.closed)
	})
	<-r.closed
	return r.closeErr
}

// Wait blocks until the TaskExecutor has closed (Close, RunTaskExecutor's ctx ending, or the
// TaskExecutor failing fatally, which closes the runner) and returns why it ended: an error
// wrapping its fatal error (taskexecutor.TaskExecutor.FatalError: a task that would not return
// within task.cancellation.timeout, a panic on its main loop) if it failed so, else Close's.
// Safe on any goroutine, any number of times.
func (r *TaskExecutorRunner) Wait() error {
	<-r.closed
	if err := r.te.FatalError(); err != nil {
		return errors.Join(fmt.Errorf("cluster: TaskExecutor %s failed fatally: %w", r.te.ResourceID(), err), r.closeErr)
	}
	return r.closeErr
}

// Done is closed once the TaskExecutor has closed.
func (r *TaskExecutorRunner) Done() <-chan struct{} { return r.closed }
