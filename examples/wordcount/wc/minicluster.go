package wc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// MiniClusterOptions configure RunOnMiniCluster: the cluster's shape, the job's options and the
// listeners that watch it.
type MiniClusterOptions struct {
	// TaskExecutors and SlotsPerTaskExecutor are the MiniCluster's (minicluster.Config: 1 when
	// 0, negative is an error); the job needs as many slots in all as its parallelism (one
	// slot-sharing group).
	TaskExecutors        int
	SlotsPerTaskExecutor int
	// Job is the job's options (BuildJobWith).
	Job JobOptions
	// Prepare, when not nil, is called with the built job before it is submitted: the host may
	// change it (its RestartStrategy) and keep what it needs of it (its vertices' IDs and names).
	Prepare func(g *jobgraph.JobGraph)
	// JobStatusListener and ExecutionStateListener, when not nil, are the MiniCluster's
	// (minicluster.Config): called from the cluster's goroutines, they must not block.
	JobStatusListener      func(job jobgraph.JobID, status jobgraph.JobStatus, at time.Time)
	ExecutionStateListener func(attempt jobgraph.ExecutionAttemptID, state jobgraph.ExecutionState)
}

// RunOnMiniCluster runs the word count over files on a fresh in-process MiniCluster, as
// examples/wordcount does: the job of BuildJobWith(files, opts.Job) with every vertex in the
// slot-sharing group "default" (as Flink's DataStream API puts them, so the job needs as many
// slots as its parallelism), the task code of Register and the source's coordinator
// (RegisterCoordinator). It starts the cluster, runs the job to its end (minicluster.Run),
// reads its archived ExecutionGraph and closes the cluster, and returns the job's result (a job
// that FAILED or was CANCELED is a result, not an error) and the archive. Errors: the job's
// options (BuildJobWith's), the cluster's configuration or start, ctx ending, the cluster's
// Close. Any goroutine may call it; the cluster is its own.
func RunOnMiniCluster(ctx context.Context, files []InputFile, opts MiniClusterOptions) (_ *jobgraph.JobResult, _ *executiongraph.ArchivedExecutionGraph, err error) {
	reg := taskexecutor.NewRegistry()
	Register(reg)
	coordinators := coordination.NewRegistry()
	if err := RegisterCoordinator(coordinators); err != nil {
		return nil, nil, err
	}
	g, err := BuildJobWith(files, opts.Job)
	if err != nil {
		return nil, nil, err
	}
	for _, v := range g.Vertices {
		v.SlotSharingGroup = "default"
	}
	if opts.Prepare != nil {
		opts.Prepare(g)
	}
	mc, err := minicluster.New(minicluster.Config{
		TaskExecutors:          opts.TaskExecutors,
		SlotsPerTaskExecutor:   opts.SlotsPerTaskExecutor,
		Registry:               reg,
		OperatorCoordinators:   coordinators,
		JobStatusListener:      opts.JobStatusListener,
		ExecutionStateListener: opts.ExecutionStateListener,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("wc: %w", err)
	}
	if err := mc.Start(ctx); err != nil {
		return nil, nil, errors.Join(err, mc.Close())
	}
	defer func() { err = errors.Join(err, mc.Close()) }()
	res, err := mc.Run(ctx, g)
	if err != nil {
		return nil, nil, err
	}
	archived, err := mc.RequestJob(ctx, g.JobID)
	if err != nil {
		return nil, nil, err
	}
	return res, archived, nil
}
