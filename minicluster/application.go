package minicluster

import (
	"context"
	"errors"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
)

// RunApplication runs the cluster in application mode: it runs jobs on the cluster's Dispatcher
// with dispatcher.RunApplication — every job to a globally terminal state, none of them twice,
// one result per job in jobs' order — and then closes the cluster, whatever the outcome, as
// Flink's application cluster shuts down once its application completed
// (ApplicationDispatcherBootstrap, Dispatcher.shutDownCluster). Session mode (SubmitJob, Run) is
// the default; a cluster used for RunApplication is closed afterwards.
//
// With HA services that outlive the cluster (Config.HA) a second cluster running the same
// application finishes what the first left: jobs the JobResultStore has are reported with their
// stored result and not run again, the others run. Errors: ErrNotStarted before Start (the
// cluster is not closed then) and ErrClosed after Close; dispatcher.RunApplication's, joined
// with Close's.
func (mc *MiniCluster) RunApplication(ctx context.Context, jobs []*jobgraph.JobGraph) ([]*jobgraph.JobResult, error) {
	if err := mc.usable(); err != nil {
		return nil, err
	}
	results, err := dispatcher.RunApplication(ctx, mc.leader, jobs)
	return results, errors.Join(err, mc.Close())
}
