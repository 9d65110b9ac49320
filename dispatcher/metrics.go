package dispatcher

import (
	"sync/atomic"

	"github.com/jobgraph/jobgraph/metrics"
)

// registerMetrics opens the Dispatcher's group of the cluster scope with numRunningJobs (see
// Config.Metrics); the loop publishes it after every closure. Called by newDispatcher.
func (d *StandaloneDispatcher) registerMetrics(reg *metrics.Registry) {
	if reg == nil {
		return
	}
	d.metrics = reg.JobManagerGroup()
	var running atomic.Int64
	d.metrics.Gauge("numRunningJobs", running.Load)
	d.loop.SetAfterEach(func() {
		n := 0
		for _, j := range d.jobs {
			if j.runner != nil && j.ended == nil {
				n++
			}
		}
		running.Store(int64(n))
	})
}
