// Package minicluster runs a whole jobgraph cluster in one process: a Dispatcher, a
// ResourceManager, N TaskExecutors with M slots each, in-memory HA services and the in-process
// RPC service. It is the embedded default a host program or a test starts with.
// Flink: org.apache.flink.runtime.minicluster.MiniCluster.
//
//	mc, err := minicluster.New(minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: 2, Registry: reg})
//	if err != nil { ... }
//	if err := mc.Start(ctx); err != nil { ... }
//	defer mc.Close()
//	res, err := mc.Run(ctx, g) // submit and wait for the JobResult
package minicluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/internal/heartbeat"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/resourcemanager"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Config configures a MiniCluster. Zero values take the defaults named.
type Config struct {
	// TaskExecutors is the number of TaskExecutors, default 1.
	// Flink: minicluster.number-of-taskmanagers.
	TaskExecutors int
	// SlotsPerTaskExecutor is the number of slots of each, default 1.
	// Flink: taskmanager.numberOfTaskSlots.
	SlotsPerTaskExecutor int
	// SlotProfile is the ResourceProfile of every slot; the zero value offers UNKNOWN slots,
	// which serve any request.
	SlotProfile jobgraph.ResourceProfile
	// Registry holds the task code every TaskExecutor runs. Required.
	Registry *taskexecutor.Registry
	// SlotRequestTimeout: slot.request.timeout, default 300 s.
	SlotRequestTimeout time.Duration
	// IdleSlotTimeout: slot.idle.timeout, default 50 s.
	IdleSlotTimeout time.Duration
	// SchedulingStrategy: "region" (default) or "vertexwise".
	SchedulingStrategy string
	// HeartbeatInterval: heartbeat.interval, default 10 s: how often the ResourceManager and each
	// JobMaster ask the TaskExecutors (and the ResourceManager the JobMasters) for a heartbeat.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout: heartbeat.timeout, default 50 s: a TaskExecutor silent this long (killed,
	// say) is dropped by the ResourceManager and by every JobMaster, whose tasks on it fail; it
	// must not be shorter than HeartbeatInterval.
	HeartbeatTimeout time.Duration
	// JobStatusListener, if set, hears every job status transition of every job. It runs on the
	// job's JobMaster loop and must not block.
	JobStatusListener func(job jobgraph.JobID, status jobgraph.JobStatus, at time.Time)
	// ExecutionStateListener, if set, hears every state every execution attempt enters after
	// CREATED. It runs on the job's JobMaster loop and must not block.
	ExecutionStateListener func(attempt jobgraph.ExecutionAttemptID, state jobgraph.ExecutionState)
	// ExceptionHistorySize: web.exception-history-size, default 16.
	ExceptionHistorySize int
	// JobStoreExpiration: jobstore.expiration-time, default 1 h; negative: never. See
	// dispatcher.Config.JobStoreExpiration.
	JobStoreExpiration time.Duration
	// JobStoreMaxCapacity: jobstore.max-capacity, default (0) unlimited. See
	// dispatcher.Config.JobStoreMaxCapacity.
	JobStoreMaxCapacity int
	// Logger defaults to a logger that discards everything.
	Logger *slog.Logger
}

const resourceManagerAddress = "resourcemanager"

// MiniCluster is a cluster in one process. Create it with New, Start it, Close it once; methods
// are safe for concurrent use after Start.
type MiniCluster struct {
	cfg           Config
	log           *slog.Logger
	rpc           *rpc.LocalService
	ha            *embedded.Services
	shuffle       *taskexecutor.Shuffle
	rm            *resourcemanager.ResourceManager
	taskExecutors []*taskexecutor.TaskExecutor
	dispatcher    *dispatcher.StandaloneDispatcher
}

// New checks cfg and builds the cluster's components; nothing runs until Start.
func New(cfg Config) (*MiniCluster, error) {
	if cfg.Registry == nil {
		return nil, errors.New("minicluster: Config.Registry is required (the task code TaskExecutors run)")
	}
	if cfg.TaskExecutors < 0 || cfg.SlotsPerTaskExecutor < 0 {
		return nil, fmt.Errorf("minicluster: %d TaskExecutors × %d slots: negative", cfg.TaskExecutors, cfg.SlotsPerTaskExecutor)
	}
	if _, _, err := heartbeat.Resolve(cfg.HeartbeatInterval, cfg.HeartbeatTimeout); err != nil {
		return nil, fmt.Errorf("minicluster: %w", err)
	}
	cfg.TaskExecutors = max(cfg.TaskExecutors, 1)
	cfg.SlotsPerTaskExecutor = max(cfg.SlotsPerTaskExecutor, 1)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mc := &MiniCluster{cfg: cfg, log: log, rpc: rpc.NewLocalService(), ha: embedded.New(), shuffle: taskexecutor.NewShuffle(taskexecutor.ShuffleConfig{})}
	rm, err := resourcemanager.New(resourcemanager.Config{
		Address:           resourceManagerAddress,
		RPC:               mc.rpc,
		Logger:            log,
		HeartbeatInterval: cfg.HeartbeatInterval,
		HeartbeatTimeout:  cfg.HeartbeatTimeout,
	})
	if err != nil {
		return nil, err
	}
	mc.rm = rm
	for i := range cfg.TaskExecutors {
		te, err := taskexecutor.New(taskexecutor.Config{
			ResourceID:             jobgraph.ResourceID(fmt.Sprintf("taskexecutor-%d", i)),
			Address:                fmt.Sprintf("taskexecutor-%d", i),
			NumSlots:               cfg.SlotsPerTaskExecutor,
			SlotProfile:            cfg.SlotProfile,
			Registry:               cfg.Registry,
			RPC:                    mc.rpc,
			ResourceManagerAddress: resourceManagerAddress,
			Shuffle:                mc.shuffle,
			Logger:                 log,
			HeartbeatInterval:      cfg.HeartbeatInterval,
			HeartbeatTimeout:       cfg.HeartbeatTimeout,
		})
		if err != nil {
			return nil, err
		}
		mc.taskExecutors = append(mc.taskExecutors, te)
	}
	jmConfig := jobmaster.Config{
		RPC:                    mc.rpc,
		ResourceManagerAddress: resourceManagerAddress,
		SlotRequestTimeout:     cfg.SlotRequestTimeout,
		IdleSlotTimeout:        cfg.IdleSlotTimeout,
		SchedulingStrategy:     cfg.SchedulingStrategy,
		JobStatusListener:      cfg.JobStatusListener,
		ExecutionStateListener: cfg.ExecutionStateListener,
		ExceptionHistorySize:   cfg.ExceptionHistorySize,
		Logger:                 log,
		HeartbeatInterval:      cfg.HeartbeatInterval,
		HeartbeatTimeout:       cfg.HeartbeatTimeout,
	}
	d, err := dispatcher.New(dispatcher.Config{
		HA:                  mc.ha,
		Logger:              log,
		JobStoreExpiration:  cfg.JobStoreExpiration,
		JobStoreMaxCapacity: cfg.JobStoreMaxCapacity,
		JobManagerRunnerFactory: dispatcher.LeadershipRunnerFactory(func(g *jobgraph.JobGraph) (jobmaster.JobMasterServiceFactory, error) {
			return jobmaster.NewFactory(g, jmConfig)
		}),
	})
	if err != nil {
		return nil, err
	}
	mc.dispatcher = d
	return mc, nil
}

// Start starts the ResourceManager and the TaskExecutors (which register with it).
func (mc *MiniCluster) Start(ctx context.Context) error {
	if err := mc.rm.Start(ctx); err != nil {
		return fmt.Errorf("minicluster: starting the ResourceManager: %w", err)
	}
	for _, te := range mc.taskExecutors {
		if err := te.Start(ctx); err != nil {
			return fmt.Errorf("minicluster: starting a TaskExecutor: %w", err)
		}
	}
	return nil
}

// Dispatcher returns the cluster's Dispatcher.
func (mc *MiniCluster) Dispatcher() *dispatcher.StandaloneDispatcher { return mc.dispatcher }

// ResourceManager returns the cluster's ResourceManager.
func (mc *MiniCluster) ResourceManager() *resourcemanager.ResourceManager { return mc.rm }

// TaskExecutors returns the cluster's TaskExecutors (to kill one in a test, say).
func (mc *MiniCluster) TaskExecutors() []*taskexecutor.TaskExecutor { return mc.taskExecutors }

// RPC returns the cluster's in-process RPC service, where every endpoint is registered.
func (mc *MiniCluster) RPC() *rpc.LocalService { return mc.rpc }

// HA returns the cluster's in-memory HA services.
func (mc *MiniCluster) HA() *embedded.Services { return mc.ha }

// SubmitJob submits g to the Dispatcher; see dispatcher.Dispatcher.SubmitJob for the errors.
func (mc *MiniCluster) SubmitJob(ctx context.Context, g *jobgraph.JobGraph) error {
	return mc.dispatcher.SubmitJob(ctx, g)
}

// RequestJobResult waits for the job's result; see dispatcher.Dispatcher.RequestJobResult.
func (mc *MiniCluster) RequestJobResult(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error) {
	return mc.dispatcher.RequestJobResult(ctx, id)
}

// RequestJob returns the job's ArchivedExecutionGraph.
func (mc *MiniCluster) RequestJob(ctx context.Context, id jobgraph.JobID) (*executiongraph.ArchivedExecutionGraph, error) {
	return mc.dispatcher.RequestJob(ctx, id)
}

// CancelJob cancels the job; see dispatcher.Dispatcher.CancelJob.
func (mc *MiniCluster) CancelJob(ctx context.Context, id jobgraph.JobID) error {
	return mc.dispatcher.CancelJob(ctx, id)
}

// RequestJobStatus returns the job's status.
func (mc *MiniCluster) RequestJobStatus(ctx context.Context, id jobgraph.JobID) (jobgraph.JobStatus, error) {
	return mc.dispatcher.RequestJobStatus(ctx, id)
}

// Run submits g and waits for its result (or ctx). A job that ends other than FINISHED is not an
// error here: look at the result's Status and RootCause.
func (mc *MiniCluster) Run(ctx context.Context, g *jobgraph.JobGraph) (*jobgraph.JobResult, error) {
	if err := mc.SubmitJob(ctx, g); err != nil {
		return nil, err
	}
	return mc.RequestJobResult(ctx, g.JobID)
}

// Close shuts the cluster down: running jobs end SUSPENDED, then the TaskExecutors, the
// ResourceManager and the HA services stop. No goroutine of the cluster is left afterwards.
func (mc *MiniCluster) Close() error {
	err := mc.dispatcher.Close()
	for _, te := range mc.taskExecutors {
		te.Close()
	}
	mc.rm.Close()
	return errors.Join(err, mc.ha.Close())
}
