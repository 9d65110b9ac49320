package rest_test

import (
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/metrics"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/resourcemanager"
	"github.com/jobgraph/jobgraph/rest"
)

// What the Handler consumes is satisfied by the library's own types.
var (
	_ rest.Dispatcher   = (*minicluster.MiniCluster)(nil)
	_ rest.Dispatcher   = (dispatcher.Dispatcher)(nil)
	_ rest.Dispatcher   = (*dispatcher.StandaloneDispatcher)(nil)
	_ rest.Dispatcher   = (*dispatcher.Runner)(nil)
	_ rest.Cluster      = (*minicluster.MiniCluster)(nil)
	_ rest.Cluster      = (*resourcemanager.ResourceManager)(nil)
	_ rest.MetricSource = (*metrics.Registry)(nil)
)
