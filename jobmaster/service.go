// Package jobmaster runs one job: the JobMaster (slot pool, scheduler, connections to the
// ResourceManager and TaskExecutors) and the layers that give it leadership —
// JobMasterServiceFactory, JobMasterServiceProcess and JobMasterServiceLeadershipRunner — as
// Flink's org.apache.flink.runtime.jobmaster package does.
//
//	Dispatcher ──▶ LeadershipRunner (one per job; follows the job's leader election)
//	                 └─▶ ServiceProcess (one per leader session)
//	                       └─▶ JobMasterService (created by the ServiceFactory; fenced by JobMasterID = session)
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

// ErrJobAlreadyDone is the failure of a runner that was granted leadership for a job the
// JobResultStore already holds: another leader finished it. Flink: JobAlreadyDoneException.
var ErrJobAlreadyDone = errors.New("job already done")

// Service is a running JobMaster as its process sees it. Flink: JobMasterService.
type Service interface {
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
	// slots returned. It returns the archived graph as of the end.
	Close() *executiongraph.ArchivedExecutionGraph
}

// ServiceFactory creates the JobMaster of one leader session. Create may take time (building the
// ExecutionGraph); it is called off every main loop and should honour ctx.
// Flink: JobMasterServiceFactory.
type ServiceFactory interface {
	// Create builds and starts a JobMaster fenced by token. An error fails the job's
	// initialization (the runner ends FAILED with an error matching ErrJobInitialization).
	Create(ctx context.Context, token jobgraph.JobMasterID) (Service, error)
	// JobID and JobName say which job the factory serves.
	JobID() jobgraph.JobID
	JobName() string
	JobType() jobgraph.JobType
}

// Result is how a runner ended: an archived graph (FINISHED, FAILED, CANCELED or SUSPENDED),
// whose FailureCause says why when it failed. Flink: JobManagerRunnerResult.
type Result struct {
	Archived *executiongraph.ArchivedExecutionGraph
	// Err is the root cause as an error value when the job failed (ErrJobInitialization or
	// ErrJobAlreadyDone wrapped, or the task failure); nil otherwise.
	Err error
}

func initializationError(job jobgraph.JobID, cause error) error {
	return fmt.Errorf("%w: job %s: %w", ErrJobInitialization, job, cause)
}
