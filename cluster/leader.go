package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// followLeader is the Dispatcher JobManager.LeaderDispatcher returns (and the MiniCluster's job
// methods call): each call waits until the Runner leads with a recovered Dispatcher, and is made
// again when the answer is that the session ended meanwhile (dispatcher.ErrNotLeader), so it
// follows the leadership of this JobManager's Runner across revocations (Flink's MiniCluster
// waits on its leader gateway retriever the same way). A retried SubmitJob is safe: a submission
// refused with ErrNotLeader kept nothing.
type followLeader struct{ r *dispatcher.Runner }

var _ dispatcher.Dispatcher = followLeader{}

// follow runs call against the current leader until it answers something other than
// ErrNotLeader; ctx bounds every wait. The call is made first and the Runner's leadership awaited
// only after an ErrNotLeader (the Runner's methods answer it at once while it has no session, and
// wait themselves while a session recovers), so a call to a leading Runner costs one round trip
// to its loop, not two.
func follow[T any](ctx context.Context, r *dispatcher.Runner, call func() (T, error)) (T, error) {
	for {
		v, err := call()
		if !errors.Is(err, dispatcher.ErrNotLeader) {
			return v, err
		}
		// Either the Runner has no session, or it still led when asked and its session's
		// Dispatcher answered "not leader": the revocation is on its way to the Runner, and
		// AwaitLeadership waits for the next session once it has arrived.
		if err := r.AwaitLeadership(ctx); err != nil {
			var zero T
			return zero, err
		}
	}
}

func (f followLeader) SubmitJob(ctx context.Context, g *jobgraph.JobGraph) error {
	_, err := follow(ctx, f.r, func() (struct{}, error) { return struct{}{}, f.r.SubmitJob(ctx, g) })
	return err
}

func (f followLeader) CancelJob(ctx context.Context, id jobgraph.JobID) error {
	_, err := follow(ctx, f.r, func() (struct{}, error) { return struct{}{}, f.r.CancelJob(ctx, id) })
	return err
}

func (f followLeader) RequestJobStatus(ctx context.Context, id jobgraph.JobID) (jobgraph.JobStatus, error) {
	return follow(ctx, f.r, func() (jobgraph.JobStatus, error) { return f.r.RequestJobStatus(ctx, id) })
}

func (f followLeader) RequestJobResult(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error) {
	return follow(ctx, f.r, func() (*jobgraph.JobResult, error) { return f.r.RequestJobResult(ctx, id) })
}

func (f followLeader) RequestJob(ctx context.Context, id jobgraph.JobID) (*executiongraph.ArchivedExecutionGraph, error) {
	return follow(ctx, f.r, func() (*executiongraph.ArchivedExecutionGraph, error) { return f.r.RequestJob(ctx, id) })
}

func (f followLeader) ListJobs(ctx context.Context) ([]rpc.JobStatusMessage, error) {
	return follow(ctx, f.r, func() ([]rpc.JobStatusMessage, error) { return f.r.ListJobs(ctx) })
}

func (f followLeader) TriggerSavepoint(ctx context.Context, id jobgraph.JobID, dir string) (string, error) {
	return follow(ctx, f.r, func() (string, error) { return f.r.TriggerSavepoint(ctx, id, dir) })
}

func (f followLeader) StopWithSavepoint(ctx context.Context, id jobgraph.JobID, dir string) (string, error) {
	return follow(ctx, f.r, func() (string, error) { return f.r.StopWithSavepoint(ctx, id, dir) })
}

func (f followLeader) TriggerCheckpoint(ctx context.Context, id jobgraph.JobID) (checkpoint.CheckpointID, error) {
	return follow(ctx, f.r, func() (checkpoint.CheckpointID, error) { return f.r.TriggerCheckpoint(ctx, id) })
}

func (f followLeader) ReportJobClientHeartbeat(ctx context.Context, id jobgraph.JobID, expires time.Time) error {
	_, err := follow(ctx, f.r, func() (struct{}, error) { return struct{}{}, f.r.ReportJobClientHeartbeat(ctx, id, expires) })
	return err
}

// Close is the JobManager's business (JobManager.Close closes the Runner).
func (f followLeader) Close() error { return nil }
