package jobmaster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/internal/mainloop"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/slotpool"
)

// ErrJobMasterClosed is the cause given to tasks and slots when their JobMaster closes.
var ErrJobMasterClosed = errors.New("JobMaster closed")

// Config configures the JobMasters a Factory creates.
type Config struct {
	// RPC resolves addresses; the JobMaster registers itself there. Required.
	RPC rpc.Service
	// ResourceManagerAddress is where the ResourceManager's gateway is registered. Required.
	ResourceManagerAddress string
	// SlotRequestTimeout: option slot.request.timeout, default 300 s (0 means the default).
	SlotRequestTimeout time.Duration
	// IdleSlotTimeout: option slot.idle.timeout, default 50 s (0 means the default).
	IdleSlotTimeout time.Duration
	// SchedulingStrategy: "region" (default) or "vertexwise".
	SchedulingStrategy string
	// RPCTimeout bounds each call the JobMaster makes (Flink's akka.ask.timeout / rpc timeout),
	// default 10 s.
	RPCTimeout time.Duration
	// JobStatusListener, if set, hears every job status transition (on the JobMaster's loop: it
	// must not block).
	JobStatusListener func(job jobgraph.JobID, status jobgraph.JobStatus, at time.Time)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Factory creates the JobMaster of one job for each leader session. Flink: DefaultJobMasterServiceFactory.
type Factory struct {
	cfg Config
	g   *jobgraph.JobGraph
}

var _ ServiceFactory = (*Factory)(nil)

// NewFactory returns a factory for g, which must be valid (the Dispatcher validated it).
func NewFactory(g *jobgraph.JobGraph, cfg Config) (*Factory, error) {
	if cfg.RPC == nil || cfg.ResourceManagerAddress == "" {
		return nil, errors.New("jobmaster: Config.RPC and Config.ResourceManagerAddress are required")
	}
	if cfg.RPCTimeout == 0 {
		cfg.RPCTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Factory{cfg: cfg, g: g}, nil
}

func (f *Factory) JobID() jobgraph.JobID     { return f.g.JobID }
func (f *Factory) JobName() string           { return f.g.Name }
func (f *Factory) JobType() jobgraph.JobType { return f.g.Type }

// Create builds the job's ExecutionGraph, registers the JobMaster under a fresh address, connects
// it to the ResourceManager and starts scheduling. An error means the job cannot run (the
// ExecutionGraph could not be built, the ResourceManager is unreachable).
func (f *Factory) Create(ctx context.Context, token jobgraph.JobMasterID) (Service, error) {
	return start(ctx, f.g, token, f.cfg)
}

// JobMaster runs one job for one leader session: its slot pool and scheduler live on the
// JobMaster's main loop; calls to other endpoints leave the loop through an ordered outbox and
// post their outcome back. Every gateway call is fenced by the session's JobMasterID.
// Flink: org.apache.flink.runtime.jobmaster.JobMaster.
type JobMaster struct {
	cfg        Config
	job        jobgraph.JobID
	token      jobgraph.JobMasterID
	address    string
	resourceID jobgraph.ResourceID
	log        *slog.Logger

	loop   *mainloop.Loop // state
	outbox *mainloop.Loop // outgoing calls, in order

	// Owned by loop.
	pool          *slotpool.Pool
	sched         *scheduler.DefaultScheduler
	rm            rpc.ResourceManagerGateway
	taskExecutors map[jobgraph.ResourceID]rpc.TaskExecutorGateway
	terminal      bool
	closed        bool

	// The newest requirements not yet sent, shared with the outbox.
	declareMu     sync.Mutex
	declareLatest []rpc.ResourceRequirement
	declareQueued bool

	done      chan struct{}
	result    Result
	closeOnce sync.Once
	closedArc *executiongraph.ArchivedExecutionGraph
}

var (
	_ Service              = (*JobMaster)(nil)
	_ rpc.JobMasterGateway = (*JobMaster)(nil)
)

func start(ctx context.Context, g *jobgraph.JobGraph, token jobgraph.JobMasterID, cfg Config) (*JobMaster, error) {
	jm := &JobMaster{
		cfg:           cfg,
		job:           g.JobID,
		token:         token,
		address:       "jobmaster/" + g.JobID.String() + "/" + token.String(),
		resourceID:    jobgraph.ResourceID("jobmaster-" + token.String()[:12]),
		log:           cfg.Logger.With("job", g.JobID),
		loop:          mainloop.New("jobmaster-" + g.JobID.String()),
		outbox:        mainloop.New("jobmaster-outbox-" + g.JobID.String()),
		taskExecutors: make(map[jobgraph.ResourceID]rpc.TaskExecutorGateway),
		done:          make(chan struct{}),
	}
	rm, err := rpc.Connect[rpc.ResourceManagerGateway](ctx, cfg.RPC, cfg.ResourceManagerAddress)
	if err == nil {
		err = jm.loop.Call(ctx, func() error { return jm.setUp(g, rm) })
	}
	if err == nil {
		err = cfg.RPC.Register(jm.address, jm)
	}
	if err == nil {
		err = rm.RegisterJobMaster(ctx, token, jm.resourceID, jm.address, jm.job)
	}
	if err != nil {
		jm.shutDown()
		return nil, err
	}
	jm.loop.Execute(func() {
		if !jm.closed && !jm.terminal {
			jm.sched.StartScheduling()
		}
	})
	return jm, nil
}

// setUp builds the slot pool and the scheduler (and with it the ExecutionGraph). On the loop.
func (jm *JobMaster) setUp(g *jobgraph.JobGraph, rm rpc.ResourceManagerGateway) error {
	jm.rm = rm
	pool, err := slotpool.New(slotpool.Config{
		Timers:                jm.loop,
		SlotRequestTimeout:    jm.cfg.SlotRequestTimeout,
		IdleSlotTimeout:       jm.cfg.IdleSlotTimeout,
		OnRequirementsChanged: jm.declareRequirements,
		OnReturnSlot:          jm.freeSlot,
	})
	if err != nil {
		return err
	}
	jm.pool = pool
	sched, err := scheduler.New(g, pool, deployer{jm}, scheduler.Config{
		SchedulingStrategy: jm.cfg.SchedulingStrategy,
		SlotRequestTimeout: jm.cfg.SlotRequestTimeout,
		Logger:             jm.log,
		JobStatusListener:  jm.cfg.JobStatusListener,
		OnTerminal:         jm.onTerminal,
	})
	if err != nil {
		return err
	}
	jm.sched = sched
	return nil
}

// onTerminal is called by the scheduler, on the loop, when the job is globally terminal.
func (jm *JobMaster) onTerminal(archived *executiongraph.ArchivedExecutionGraph, rootCause error) {
	if jm.terminal {
		return
	}
	jm.terminal = true
	jm.result = Result{Archived: archived, Err: rootCause}
	close(jm.done)
}

// rpcContext bounds one outgoing call.
func (jm *JobMaster) rpcContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), jm.cfg.RPCTimeout)
}

// send runs call in the outbox, in order with every other outgoing call.
func (jm *JobMaster) send(call func(ctx context.Context) error, onError func(err error)) {
	jm.outbox.Execute(func() {
		ctx, cancel := jm.rpcContext()
		defer cancel()
		if err := call(ctx); err != nil && onError != nil {
			jm.loop.Execute(func() { onError(err) })
		}
	})
}

// declareRequirements sends the pool's requirements to the ResourceManager. Declarations replace
// each other, so only the latest one matters: a burst of changes (one per slot request) becomes
// one call with the newest list, as Flink's DeclareResourceRequirementServiceConnectionManager does.
func (jm *JobMaster) declareRequirements(reqs []rpc.ResourceRequirement) {
	jm.declareMu.Lock()
	jm.declareLatest = reqs
	queued := jm.declareQueued
	jm.declareQueued = true
	jm.declareMu.Unlock()
	if queued {
		return
	}
	rm := jm.rm
	jm.send(func(ctx context.Context) error {
		jm.declareMu.Lock()
		reqs := jm.declareLatest
		jm.declareQueued = false
		jm.declareMu.Unlock()
		msg := rpc.ResourceRequirements{JobID: jm.job, TargetAddress: jm.address, Requirements: reqs}
		return rm.DeclareRequiredResources(ctx, jm.token, msg)
	}, func(err error) { jm.log.Warn("declaring resource requirements failed", "err", err) })
}

func (jm *JobMaster) freeSlot(slot slotpool.AllocatedSlot, cause error) {
	te, ok := jm.taskExecutors[slot.TaskExecutor]
	if !ok {
		return
	}
	jm.send(func(ctx context.Context) error { return te.FreeSlot(ctx, slot.AllocationID, cause) }, nil)
}

// deployer carries the scheduler's side effects out through the outbox.
type deployer struct{ jm *JobMaster }

func (d deployer) Deploy(tdd rpc.TaskDeploymentDescriptor, slot slotpool.AllocatedSlot) {
	jm := d.jm
	te, ok := jm.taskExecutors[slot.TaskExecutor]
	if !ok {
		err := fmt.Errorf("TaskExecutor %s is not connected", slot.TaskExecutor)
		jm.loop.Execute(func() { jm.sched.OnDeployFailed(tdd.ExecutionAttemptID, err) })
		return
	}
	jm.send(func(ctx context.Context) error { return te.SubmitTask(ctx, jm.token, tdd) },
		func(err error) {
			jm.sched.OnDeployFailed(tdd.ExecutionAttemptID, fmt.Errorf("deploying %s to %s: %w", tdd.TaskName, slot.TaskExecutor, err))
		})
}

func (d deployer) CancelTask(attempt jobgraph.ExecutionAttemptID, location jobgraph.ResourceID) {
	if te, ok := d.jm.taskExecutors[location]; ok {
		d.jm.send(func(ctx context.Context) error { return te.CancelTask(ctx, attempt) }, nil)
	}
}

func (d deployer) ReleasePartitions(location jobgraph.ResourceID, partitions []rpc.ResultPartitionID) {
	if te, ok := d.jm.taskExecutors[location]; ok {
		job := d.jm.job
		d.jm.send(func(ctx context.Context) error { return te.ReleasePartitions(ctx, job, partitions) }, nil)
	}
}

// fenced runs fn on the loop if token is the session's.
func (jm *JobMaster) fenced(ctx context.Context, token jobgraph.JobMasterID, fn func() error) error {
	if token != jm.token {
		return &rpc.FencingError{Endpoint: "JobMaster " + jm.address, Expected: jm.token.String(), Got: token.String()}
	}
	return jm.loop.Call(ctx, func() error {
		if jm.closed {
			return fmt.Errorf("jobmaster: job %s: %w", jm.job, ErrJobMasterClosed)
		}
		return fn()
	})
}

// UpdateTaskExecutionState implements rpc.JobMasterGateway.
func (jm *JobMaster) UpdateTaskExecutionState(ctx context.Context, token jobgraph.JobMasterID, state rpc.TaskExecutionState) (bool, error) {
	var applied bool
	err := jm.fenced(ctx, token, func() error {
		applied = jm.sched.UpdateTaskExecutionState(state)
		return nil
	})
	return applied, err
}

// RegisterTaskExecutor implements rpc.JobMasterGateway.
func (jm *JobMaster) RegisterTaskExecutor(ctx context.Context, token jobgraph.JobMasterID, reg rpc.TaskExecutorRegistration) error {
	if token != jm.token {
		return jm.fenced(ctx, token, nil)
	}
	te, err := rpc.Connect[rpc.TaskExecutorGateway](ctx, jm.cfg.RPC, reg.Address)
	if err != nil {
		return fmt.Errorf("jobmaster: connecting TaskExecutor %s: %w", reg.ResourceID, err)
	}
	return jm.fenced(ctx, token, func() error {
		jm.taskExecutors[reg.ResourceID] = te
		return nil
	})
}

// OfferSlots implements rpc.JobMasterGateway.
func (jm *JobMaster) OfferSlots(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, offers []rpc.SlotOffer) ([]rpc.SlotOffer, error) {
	var accepted []rpc.SlotOffer
	err := jm.fenced(ctx, token, func() error {
		if _, ok := jm.taskExecutors[taskExecutor]; !ok {
			return fmt.Errorf("jobmaster: job %s: TaskExecutor %s offered slots before registering", jm.job, taskExecutor)
		}
		accepted = jm.pool.OfferSlots(taskExecutor, offers)
		return nil
	})
	return accepted, err
}

// FailSlot implements rpc.JobMasterGateway.
func (jm *JobMaster) FailSlot(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, allocation jobgraph.AllocationID, cause error) error {
	return jm.fenced(ctx, token, func() error {
		if err := jm.pool.ReleaseSlot(allocation, cause); err != nil {
			jm.log.Debug("FailSlot for a slot the pool does not hold", "allocation", allocation, "err", err)
		}
		return nil
	})
}

// DisconnectTaskExecutor implements rpc.JobMasterGateway.
func (jm *JobMaster) DisconnectTaskExecutor(ctx context.Context, token jobgraph.JobMasterID, taskExecutor jobgraph.ResourceID, cause error) error {
	return jm.fenced(ctx, token, func() error {
		// Forget the TaskExecutor first: its slots are gone with it, so freeSlot sends nothing there.
		delete(jm.taskExecutors, taskExecutor)
		jm.pool.ReleaseSlots(taskExecutor, cause)
		return nil
	})
}

// DisconnectResourceManager implements rpc.JobMasterGateway.
func (jm *JobMaster) DisconnectResourceManager(ctx context.Context, token jobgraph.JobMasterID, rm jobgraph.ResourceManagerID, cause error) error {
	return jm.fenced(ctx, token, func() error {
		jm.log.Warn("ResourceManager disconnected", "cause", cause)
		return nil
	})
}

// HeartbeatFromTaskExecutor implements rpc.JobMasterGateway (heartbeats come with failover).
func (jm *JobMaster) HeartbeatFromTaskExecutor(ctx context.Context, taskExecutor jobgraph.ResourceID, report rpc.AllocatedSlotReport) error {
	return nil
}

// HeartbeatFromResourceManager implements rpc.JobMasterGateway (heartbeats come with failover).
func (jm *JobMaster) HeartbeatFromResourceManager(ctx context.Context, rm jobgraph.ResourceID) error {
	return nil
}

// Address implements Service.
func (jm *JobMaster) Address() string { return jm.address }

// Gateway implements Service.
func (jm *JobMaster) Gateway() rpc.JobMasterGateway { return jm }

// Done implements Service.
func (jm *JobMaster) Done() <-chan struct{} { return jm.done }

// Result implements Service; valid once Done is closed.
func (jm *JobMaster) Result() Result {
	<-jm.done
	return jm.result
}

// Cancel implements Service: the job goes CANCELLING, then CANCELED once its tasks are.
func (jm *JobMaster) Cancel(ctx context.Context) error {
	return jm.loop.Call(ctx, func() error {
		if !jm.closed {
			jm.sched.Cancel()
		}
		return nil
	})
}

// RequestJobStatus implements Service.
func (jm *JobMaster) RequestJobStatus(ctx context.Context) (jobgraph.JobStatus, error) {
	return mainloop.Submit(ctx, jm.loop, func() (jobgraph.JobStatus, error) { return jm.sched.JobStatus(), nil })
}

// RequestJob implements Service.
func (jm *JobMaster) RequestJob(ctx context.Context) (*executiongraph.ArchivedExecutionGraph, error) {
	return mainloop.Submit(ctx, jm.loop, func() (*executiongraph.ArchivedExecutionGraph, error) {
		return jm.sched.Archive(), nil
	})
}

// Close implements Service: a job not yet terminal is SUSPENDED and its tasks canceled; every
// slot goes back to its TaskExecutor and the ResourceManager forgets the job. It waits for the
// outgoing calls already queued and returns the final archived graph.
func (jm *JobMaster) Close() *executiongraph.ArchivedExecutionGraph {
	jm.closeOnce.Do(func() {
		_ = jm.loop.Call(context.Background(), func() error {
			jm.closed = true
			if jm.sched == nil {
				return nil
			}
			if !jm.terminal {
				jm.sched.Suspend(fmt.Errorf("job %s: %w", jm.job, ErrJobMasterClosed))
			}
			jm.closedArc = jm.sched.Archive()
			jm.pool.Close()
			// After the slots are freed, each TaskExecutor forgets the job: what is left of its
			// partitions there is dropped. Flink: JobMaster.disconnectTaskManager on stop.
			cause := fmt.Errorf("job %s: %w", jm.job, ErrJobMasterClosed)
			for _, te := range jm.taskExecutors {
				jm.send(func(ctx context.Context) error { return te.DisconnectJobMaster(ctx, jm.job, cause) }, nil)
			}
			if rm := jm.rm; rm != nil {
				job := jm.job
				jm.send(func(ctx context.Context) error {
					return rm.DisconnectJobMaster(ctx, job, fmt.Errorf("job %s: %w", job, ErrJobMasterClosed))
				}, nil)
			}
			return nil
		})
		jm.shutDown()
	})
	return jm.closedArc
}

func (jm *JobMaster) shutDown() {
	jm.cfg.RPC.Unregister(jm.address)
	jm.loop.Close()
	jm.outbox.Close()
}
