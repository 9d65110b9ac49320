package scheduler

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/metrics"
)

// jobMetrics are the values behind the job's metrics (Config.Metrics), published by the
// scheduler on its owner's loop after every change, read by the gauges on any goroutine.
type jobMetrics struct {
	clock    func() time.Time
	status   atomic.Pointer[statusView]
	restarts atomic.Int64
}

// statusView is the job status as the gauges see it: replaced whole on every transition, so a
// reader never pairs a status with another status's timestamp.
type statusView struct {
	status  jobgraph.JobStatus
	entered time.Time // when the job entered status
	running time.Time // the latest entry into RUNNING; zero if none
	down    time.Time // the latest entry into FAILING or RESTARTING; zero if none
}

// jobGaugeNames are the names of the job's gauges, registered as one set (metrics.Group.Gauges):
// uptime, downtime, numRestarts, then the <status>Time gauges (runningTime…) of every status
// that is neither terminal nor RECONCILING, in JobStatus order; gaugeStatus[i] is the status of
// the <status>Time gauge jobGaugeNames[i]. Made once rather than for every job.
var jobGaugeNames, gaugeStatus = func() (names []string, status []jobgraph.JobStatus) {
	names = []string{"uptime", "downtime", "numRestarts"}
	status = make([]jobgraph.JobStatus, len(names))
	for st := range jobgraph.JobStatus(jobgraph.NumJobStatuses) {
		if st.IsTerminal() || st == jobgraph.JobStatusReconciling {
			continue
		}
		names = append(names, strings.ToLower(st.String())+"Time")
		status = append(status, st)
	}
	return names, status
}()

// The indexes of the first gauges of jobGaugeNames.
const (
	gaugeUptime = iota
	gaugeDowntime
	gaugeNumRestarts
)

// registerJobMetrics registers the job's metrics on g under Flink's names (SchedulerBase's
// registerJobMetrics with JobStatusMetrics at its default, CURRENT_TIME, and
// CheckpointStatsTracker's metrics; see Config.Metrics). On the owner's loop, in New.
func (s *DefaultScheduler) registerJobMetrics(g *metrics.Group) {
	if g == nil {
		return
	}
	m := &jobMetrics{clock: s.cfg.Clock}
	m.status.Store(&statusView{status: s.graph.State(), entered: s.graph.StatusTimestamp(s.graph.State())})
	s.metrics = m
	g.Gauges(jobGaugeNames, m.gauge)
	if s.ck == nil {
		// A job without checkpoints shows Flink's values of a tracker that saw none.
		checkpoint.RegisterNoCheckpointMetrics(g)
	}
}

// gauge reads the gauge jobGaugeNames[i]. On any goroutine.
func (m *jobMetrics) gauge(i int) int64 {
	switch i {
	case gaugeUptime:
		return m.uptime()
	case gaugeDowntime:
		return m.downtime()
	case gaugeNumRestarts:
		return m.restarts.Load()
	}
	return m.timeIn(gaugeStatus[i])
}

// publishStatus records that the job entered st at at. On the owner's loop.
func (m *jobMetrics) publishStatus(st jobgraph.JobStatus, at time.Time) {
	if m == nil {
		return
	}
	v := *m.status.Load()
	v.status, v.entered = st, at
	switch st {
	case jobgraph.JobStatusRunning:
		v.running = at
	case jobgraph.JobStatusFailing, jobgraph.JobStatusRestarting:
		v.down = at
	}
	m.status.Store(&v)
}

// countRestart counts one restart attempt. On the owner's loop.
func (m *jobMetrics) countRestart() {
	if m != nil {
		m.restarts.Add(1)
	}
}

func sinceMillis(now, t time.Time) int64 { return max(now.Sub(t).Milliseconds(), 0) }

// uptime is Flink's UpTimeGauge: ms since the job entered RUNNING while it runs, -1 once it is
// terminal (globally, or suspended on this JobMaster), else 0.
func (m *jobMetrics) uptime() int64 {
	v := m.status.Load()
	switch {
	case v.status == jobgraph.JobStatusRunning:
		return sinceMillis(m.clock(), v.entered)
	case v.status.IsTerminal():
		return -1
	}
	return 0
}

// downtime is Flink's DownTimeGauge: -1 once terminal; ms since the job entered FAILING or
// RESTARTING if it has not been RUNNING since, else 0.
func (m *jobMetrics) downtime() int64 {
	v := m.status.Load()
	switch {
	case v.status.IsTerminal():
		return -1
	case v.down.IsZero() || !v.down.After(v.running):
		return 0
	}
	return sinceMillis(m.clock(), v.down)
}

// timeIn is JobStatusMetrics' current-time gauge of st ("<status>Time"): ms since the job entered
// st while it is in st, else 0.
func (m *jobMetrics) timeIn(st jobgraph.JobStatus) int64 {
	v := m.status.Load()
	if v.status != st {
		return 0
	}
	return sinceMillis(m.clock(), v.entered)
}
