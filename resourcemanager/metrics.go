package resourcemanager

import (
	"sync/atomic"

	"github.com/jobgraph/jobgraph/metrics"
)

// rmMetrics are the values behind the ResourceManager's cluster metrics (Config.Metrics), stored
// by its loop after every closure it runs and read by the gauges on any goroutine.
type rmMetrics struct {
	group                     *metrics.Group
	taskManagers, free, slots atomic.Int64
}

// registerMetrics opens the ResourceManager's group of the cluster scope and registers Flink's
// ResourceManager and SlotManager metrics there; the loop publishes their values after every
// closure (mainloop.Loop.SetAfterEach). Called in New, before anything else runs on the loop.
func (rm *ResourceManager) registerMetrics(reg *metrics.Registry) {
	if reg == nil {
		return
	}
	m := &rmMetrics{group: reg.JobManagerGroup()}
	rm.metrics = m
	m.group.Gauge("numRegisteredTaskManagers", m.taskManagers.Load)
	m.group.Gauge("taskSlotsAvailable", m.free.Load)
	m.group.Gauge("taskSlotsTotal", m.slots.Load)
	rm.loop.SetAfterEach(func() {
		m.taskManagers.Store(int64(len(rm.taskExecutors)))
		m.free.Store(int64(rm.sm.NumFreeSlots()))
		m.slots.Store(int64(rm.sm.NumRegisteredSlots()))
	})
}

// close removes the metrics; after the loop closed.
func (m *rmMetrics) close() {
	if m != nil {
		m.group.Close()
	}
}
