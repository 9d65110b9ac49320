// Package jobmaster runs one job: the JobMaster (slot pool, scheduler, connections to the
// ResourceManager and TaskExecutors) and the layers that give it leadership —
// JobMasterServiceFactory, JobMasterServiceProcess and JobMasterServiceLeadershipRunner — as
// Flink's org.apache.flink.runtime.jobmaster package does.
//
//	Dispatcher ──▶ JobManagerRunner (one per job; default LeadershipRunner, which follows the job's leader election)
//	                 └─▶ ServiceProcess (one per leader session)
//	                       └─▶ JobMaster (created by the JobMasterServiceFactory; fenced by JobMasterID = session;
//	                             default DefaultJobMaster, whose SchedulerNG comes from Config.SchedulerFactory)
//
// Each layer is an interface a host can substitute: the Dispatcher takes a factory of
// JobManagerRunners, a LeadershipRunner takes a JobMasterServiceFactory of JobMasters, and the
// DefaultJobMaster takes a scheduler.SchedulerNGFactory.
package jobmaster

import (
	"context"
	"errors"
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// ErrJobInitialization matches failures to create a job's JobMaster (the ExecutionGraph could not
// be built, say). Flink: JobInitializationException.
var ErrJobInitialization = errors.New("job initialization failed")

// ErrRunnerFailed matches the Result.Err of a LeadershipRunner that cannot go on for a reason of
// this process, not of the job: its leader election failed (HandleError), the JobResultStore
// could not be read when it was granted leadership, or its main loop panicked (the error then
// wraps a *jobgraph.PanicError). The job is not over: Result.Archived is SUSPENDED, and the
// Dispatcher reports the error to its FatalErrorHandler and cleans the job up only locally, so
// the next leader recovers it. Flink: the JobManagerRunner's result future completing
// exceptionally, which Dispatcher.jobManagerRunnerFailed makes fatal (jobMasterFailed).
var ErrRunnerFailed = errors.New("job manager runner failed")

// ErrJobAlreadyDone is the failure of a runner that was granted leadership for a job the
// JobResultStore already holds: another leader finished it. Flink: JobAlreadyDoneException.
var ErrJobAlreadyDone = errors.New("job already done")

// JobMaster is a running JobMaster of one leader session, as its ServiceProcess and runner see
// it; DefaultJobMaster is the in-process default, and a host may bring its own through a
// JobMasterServiceFactory. Methods are safe for concurrent use. Address, Gateway and Done must
// not block (the runner's loop calls Address); the others are called off the runner's loop and
// may wait on the JobMaster's. Flink: JobMasterService (with the
// JobMaster's RestfulGateway methods).
type JobMaster interface {
	// Address resolves to Gateway through the rpc.Service.
	Address() string
	Gateway() rpc.JobMasterGateway
	// Done is closed when the job reached a globally terminal state; Result then returns the
	// final archived graph and root cause. A JobMaster that is closed first never closes Done.
	Done() <-chan struct{}
	Result() Result
	// Cancel asks the job to cancel.
	Cancel(ctx context.Context) error
	// RequestJobStatus and RequestJob observe the job.
	RequestJobStatus(ctx context.Context) (jobgraph.JobStatus, error)
	RequestJob(ctx context.Context) (*executiongraph.ArchivedExecutionGraph, error)
	// Close stops the JobMaster: a job not yet terminal is SUSPENDED, its tasks canceled, its
	// slots returned. It returns the archived graph as of the end — the one endpoint whose Close
	// is not io.Closer's `Close() error`, because its process reports that graph as the job's
	// outcome (a SUSPENDED job's result) and closing cannot fail. Afterwards every method that
	// returns an error returns ErrClosed.
	Close() *executiongraph.ArchivedExecutionGraph
}

// JobMasterServiceFactory creates the JobMaster of one leader session. Create may take time
// (building the ExecutionGraph); it is called off every main loop and should honour ctx. Factory
// is the default. Flink: JobMasterServiceFactory.
type JobMasterServiceFactory interface {
	// Create builds and starts a JobMaster fenced by token. An error fails the job's
	// initialization (the runner ends FAILED with an error matching ErrJobInitialization).
	Create(ctx context.Context, token jobgraph.JobMasterID) (JobMaster, error)
	// JobID and JobName say which job the factory serves.
	JobID() jobgraph.JobID
	JobName() string
	JobType() jobgraph.JobType
}

// JobManagerRunner runs one job for the Dispatcher, from submission to its Result: the
// Dispatcher creates one per accepted JobGraph through its Config.JobManagerRunnerFactory, calls
// Start once, asks it for status, the archived graph and cancellation while it runs, waits on
// Done, reads Result, and calls Close once. LeadershipRunner is the default. Methods are safe for
// concurrent use and are called off the Dispatcher's main loop (they may wait, for a leader
// election or a JobMaster). Flink: JobManagerRunner.
type JobManagerRunner interface {
	// Start begins running the job (the default joins the job's leader election). An error
	// means the job did not start; the Dispatcher then closes the runner.
	Start() error
	// JobID is the job the runner runs.
	JobID() jobgraph.JobID
	// Done is closed once Result is final: the job reached a globally terminal state, its
	// initialization failed, or the runner was closed (SUSPENDED).
	Done() <-chan struct{}
	// Result blocks until Done and returns the outcome.
	Result() Result
	// Cancel asks the job to cancel.
	Cancel(ctx context.Context) error
	// RequestJobStatus and RequestJob observe the job: INITIALIZING until a JobMaster runs it,
	// the final status and graph once done.
	RequestJobStatus(ctx context.Context) (jobgraph.JobStatus, error)
	RequestJob(ctx context.Context) (*executiongraph.ArchivedExecutionGraph, error)
	// Close stops the runner (a job not done ends SUSPENDED) and waits for everything it
	// started; Done is closed afterwards.
	Close()
}

var _ JobManagerRunner = (*LeadershipRunner)(nil)

// Result is how a runner ended: an archived graph (FINISHED, FAILED, CANCELED or SUSPENDED),
// whose FailureCause says why when it failed. Flink: JobManagerRunnerResult.
type Result struct {
	Archived *executiongraph.ArchivedExecutionGraph
	// Err is the root cause as an error value when the job failed (ErrJobInitialization or
	// ErrJobAlreadyDone wrapped, or the task failure), or why the runner failed
	// (ErrRunnerFailed wrapped, with Archived SUSPENDED); nil otherwise.
	Err error
}

func initializationError(job jobgraph.JobID, cause error) error {
	return fmt.Errorf("%w: job %s: %w", ErrJobInitialization, job, cause)
}
