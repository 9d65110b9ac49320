package metrics_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/metrics"
)

func names(vs []metrics.Value) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Scope.Kind.String()+"/"+v.Name)
	}
	return out
}

// The meter is Flink's MeterView: sampled every 5 s, the rate is the increase over the last 60 s
// divided by 60, the samples not taken yet counting as 0.
func TestMeterRateIsMeterViewOverSixtySeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := metrics.NewRegistry()
		defer reg.Close()
		task := reg.TaskGroup(metrics.Scope{JobID: jobgraph.NewJobID(), TaskName: "src"})
		out := task.Counter("numRecordsOut")
		rate := task.Meter("numRecordsOutPerSecond", out)

		out.Add(600)
		assert.Equal(t, 0.0, rate.Rate(), "no update yet")
		time.Sleep(metrics.UpdateInterval)
		synctest.Wait()
		assert.Equal(t, 10.0, rate.Rate(), "600 in the first 5 s over 60 s")
		assert.Equal(t, int64(600), rate.Count())

		time.Sleep(55 * time.Second) // 12 updates: the 600 are still inside the window
		synctest.Wait()
		assert.Equal(t, 10.0, rate.Rate())
		out.Add(120)
		time.Sleep(metrics.UpdateInterval) // 13th update: the window starts after the 600
		synctest.Wait()
		assert.Equal(t, 2.0, rate.Rate())
		time.Sleep(metrics.MeterTimeSpan)
		synctest.Wait()
		assert.Equal(t, 0.0, rate.Rate(), "nothing in the last 60 s")

		v := reg.Snapshot()
		require.Len(t, v, 2)
		assert.Equal(t, "numRecordsOutPerSecond", v[1].Name)
		assert.Equal(t, metrics.KindMeter, v[1].Kind)
		assert.Equal(t, []metrics.Field{{ID: "numRecordsOutPerSecond", Value: "0.0"}}, v[1].Fields())
		task.Close()
	})
}

// A meter only counts once it is updated by the registry's updater, which runs while a meter is
// registered and stops with the last one: a registry whose groups were all closed arms no timer,
// and the bubble ends with nothing pending.
func TestMeterUpdaterStopsWithTheLastMeter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := metrics.NewRegistry()
		g := reg.TaskGroup(metrics.Scope{JobID: jobgraph.NewJobID()})
		m := g.Meter("m", nil)
		m.MarkEvents(60)
		time.Sleep(metrics.UpdateInterval)
		synctest.Wait()
		assert.Equal(t, 1.0, m.Rate())
		g.Close()
		time.Sleep(metrics.UpdateInterval)
		synctest.Wait()
		// A new meter arms the updater again, in the phase of its registration.
		g2 := reg.TaskGroup(metrics.Scope{JobID: jobgraph.NewJobID()})
		m2 := g2.Meter("m", nil)
		m2.MarkEvents(120)
		time.Sleep(metrics.UpdateInterval - time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, 0.0, m2.Rate())
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, 2.0, m2.Rate())
		assert.Equal(t, 1.0, m.Rate(), "an unregistered meter is no longer updated")
		g2.Close()
		reg.Close()
	})
}

func TestSnapshotOrderScopesAndVariables(t *testing.T) {
	reg := metrics.NewRegistry()
	jobID, err := jobgraph.ParseJobID("0123456789abcdef0123456789abcdef")
	require.NoError(t, err)
	vertex, err := jobgraph.ParseJobVertexID("fedcba9876543210fedcba9876543210")
	require.NoError(t, err)
	task := reg.TaskGroup(metrics.Scope{JobID: jobID, JobName: "j", TaskID: vertex, TaskName: "map", SubtaskIndex: 1, AttemptNumber: 2})
	task.Counter("numRecordsIn").Add(7)
	job := reg.JobGroup(jobID, "j")
	job.Gauge("uptime", func() int64 { return 42 })
	job.FloatGauge("ratio", func() float64 { return 0.5 })
	cluster := reg.JobManagerGroup()
	cluster.Gauge("numRunningJobs", func() int64 { return 1 })
	other := reg.JobGroup(jobgraph.NewJobID(), "other")
	other.Gauge("uptime", func() int64 { return 1 })

	all := reg.Snapshot()
	require.Len(t, all, 5)
	assert.Equal(t, metrics.ScopeJobManager, all[0].Scope.Kind)
	assert.Nil(t, all[0].Scope.Variables())
	assert.Equal(t, []metrics.Variable{
		{Key: "job_id", Value: "0123456789abcdef0123456789abcdef"}, {Key: "job_name", Value: "j"},
		{Key: "task_id", Value: "fedcba9876543210fedcba9876543210"}, {Key: "task_name", Value: "map"},
		{Key: "subtask_index", Value: "1"}, {Key: "task_attempt_num", Value: "2"},
	}, all[4].Scope.Variables())
	assert.Equal(t, int64(7), all[4].Int)

	jm := reg.JobMetrics(jobID)
	assert.Equal(t, []string{"jobmanager.job/ratio", "jobmanager.job/uptime"}, names(jm))
	assert.Equal(t, []metrics.Field{{ID: "ratio", Value: "0.5"}}, jm[0].Fields())
	assert.Equal(t, []metrics.Field{{ID: "uptime", Value: "42"}}, jm[1].Fields())
	assert.Equal(t, []string{"taskmanager.job.task/numRecordsIn"}, names(reg.TaskMetrics(jobID, vertex)))
	assert.Empty(t, reg.TaskMetrics(jobID, jobgraph.NewJobVertexID()))
	assert.Empty(t, reg.JobMetrics(jobgraph.NewJobID()))
	assert.Equal(t, "<host>.jobmanager.<job_name>", metrics.ScopeJob.Format())
}

// A job's next JobMaster replaces the metrics of the previous one; the previous one's Close then
// removes only what it still owns.
func TestNewestRegistrationWinsAndOldCloseKeepsIt(t *testing.T) {
	reg := metrics.NewRegistry()
	jobID := jobgraph.NewJobID()
	old := reg.JobGroup(jobID, "j")
	old.Gauge("uptime", func() int64 { return 1 })
	old.Gauge("numRestarts", func() int64 { return 5 })
	next := reg.JobGroup(jobID, "j")
	next.Gauge("uptime", func() int64 { return 2 })
	old.Close()
	v := reg.JobMetrics(jobID)
	require.Len(t, v, 1)
	assert.Equal(t, "uptime", v[0].Name)
	assert.Equal(t, int64(2), v[0].Int)
	next.Close()
	assert.Empty(t, reg.Snapshot())
	next.Gauge("late", func() int64 { return 3 }) // after Close: not registered
	assert.Empty(t, reg.Snapshot())
}

// A set of gauges registers each name as Gauge would: each reads value(its index), a bad name is
// refused on its own (the others registered), a name another group registers later replaces
// that one only, Close removes the rest, and a set after Close registers nothing.
func TestGaugeSetRegistersEachNameOnItsOwn(t *testing.T) {
	reg := metrics.NewRegistry()
	jobID := jobgraph.NewJobID()
	g := reg.JobGroup(jobID, "j")
	g.Gauges([]string{"a", "bad name", "c"}, func(i int) int64 { return int64(10 + i) })
	read := func() map[string]int64 {
		out := map[string]int64{}
		for _, v := range reg.JobMetrics(jobID) {
			assert.Equal(t, metrics.KindGauge, v.Kind)
			out[v.Name] = v.Int
		}
		return out
	}
	assert.Equal(t, map[string]int64{"a": 10, "c": 12}, read())
	err := g.Err()
	require.Error(t, err)
	assert.True(t, errors.Is(err, metrics.ErrInvalidName))
	assert.Contains(t, err.Error(), `"bad name"`)

	next := reg.JobGroup(jobID, "j")
	next.Gauge("c", func() int64 { return 7 })
	assert.Equal(t, map[string]int64{"a": 10, "c": 7}, read())
	g.Close()
	assert.Equal(t, map[string]int64{"c": 7}, read())
	next.Close()
	assert.Empty(t, reg.Snapshot())
	assert.Equal(t, 0, metrics.ScopesHeld(reg))
	assert.Equal(t, 0, metrics.JobsIndexed(reg))

	g.Gauges([]string{"late"}, func(int) int64 { return 1 }) // after Close: not registered
	assert.Empty(t, reg.Snapshot())

	nilFn := reg.JobManagerGroup()
	nilFn.Gauges([]string{"x", "y"}, nil)
	assert.Empty(t, reg.Snapshot())
	assert.True(t, errors.Is(nilFn.Err(), metrics.ErrNilGauge))
	assert.Contains(t, nilFn.Err().Error(), `"y"`)

	var none *metrics.Group
	none.Gauges([]string{"x"}, func(int) int64 { return 1 })
}

func TestBadNamesAreReportedNotRegistered(t *testing.T) {
	reg := metrics.NewRegistry()
	g := reg.JobManagerGroup()
	c := g.Counter("")
	c.Inc()
	assert.Equal(t, int64(1), c.Count(), "a refused counter still works")
	g.Counter("has space")
	g.Gauge("noFunc", nil)
	g.Counter(strings.Repeat("x", 257))
	g.Counter("ok.name_1-x")
	err := g.Err()
	require.Error(t, err)
	assert.True(t, errors.Is(err, metrics.ErrInvalidName))
	assert.True(t, errors.Is(err, metrics.ErrNilGauge))
	assert.Contains(t, err.Error(), `"has space"`)
	assert.Contains(t, err.Error(), `"noFunc"`)
	assert.Equal(t, []string{"jobmanager/ok.name_1-x"}, names(reg.Snapshot()))
}

func TestNilRegistryAndGroupWork(t *testing.T) {
	var reg *metrics.Registry
	g := reg.JobGroup(jobgraph.NewJobID(), "j")
	assert.Nil(t, g)
	c := g.Counter("numRecordsOut")
	c.Add(3)
	assert.Equal(t, int64(3), c.Count())
	g.Gauge("uptime", func() int64 { return 1 })
	m := g.Meter("rate", c)
	assert.Equal(t, int64(3), m.Count())
	g.Histogram("h", 0).Update(1)
	assert.NoError(t, g.Err())
	g.Close()
	assert.Nil(t, reg.Snapshot())
	assert.Nil(t, reg.JobMetrics(jobgraph.NewJobID()))
	reg.Close()
}

func TestHistogramStatisticsAsFlinks(t *testing.T) {
	reg := metrics.NewRegistry()
	g := reg.JobManagerGroup()
	h := g.Histogram("latency", 100)
	for i := int64(1); i <= 100; i++ {
		h.Update(i)
	}
	s := h.Statistics()
	assert.Equal(t, int64(100), s.Count)
	assert.Equal(t, int64(1), s.Min)
	assert.Equal(t, int64(100), s.Max)
	assert.Equal(t, 50.5, s.Mean)
	assert.InDelta(t, 29.011491975882016, s.StdDev, 1e-12)
	assert.Equal(t, 50.5, s.Quantile(0.5))           // position 50.5
	assert.InDelta(t, 99.99, s.Quantile(0.99), 1e-9) // position 99.99
	assert.Equal(t, 100.0, s.Quantile(0.999))        // position ≥ n: the max
	assert.Equal(t, 1.0, s.Quantile(0.001))          // position < 1: the min

	w := g.Histogram("window", 4)
	for i := int64(1); i <= 6; i++ {
		w.Update(i)
	}
	ws := w.Statistics()
	assert.Equal(t, int64(6), ws.Count)
	assert.Equal(t, 4, ws.Size)
	assert.Equal(t, int64(3), ws.Min)
	assert.Equal(t, 4.5, ws.Mean)

	v := reg.Snapshot()
	require.Len(t, v, 2)
	f := v[0].Fields()
	require.Len(t, f, 11)
	assert.Equal(t, metrics.Field{ID: "latency_min", Value: "1"}, f[0])
	assert.Equal(t, metrics.Field{ID: "latency_max", Value: "100"}, f[1])
	assert.Equal(t, metrics.Field{ID: "latency_mean", Value: "50.5"}, f[2])
	assert.Equal(t, metrics.Field{ID: "latency_median", Value: "50.5"}, f[3])
	assert.Equal(t, "latency_p999", f[10].ID)
	assert.Equal(t, metrics.HistogramStatistics{}.Quantile(0.5), 0.0)
}

func TestFieldsPrintFloatsAsJava(t *testing.T) {
	for f, want := range map[float64]string{0: "0.0", 10: "10.0", 0.25: "0.25", 1e7: "1.0E7", 1.5e-4: "1.5E-4", 123456.5: "123456.5"} {
		v := metrics.Value{Name: "x", Kind: metrics.KindGauge, Float: f, IsFloat: true}
		assert.Equal(t, want, v.Fields()[0].Value, "%v", f)
	}
}

// A registry that saw 1,000 jobs, each with task groups and meters, holds nothing once they all
// ended.
func TestGroupsOfAThousandEndedJobsLeaveNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := metrics.NewRegistry()
		defer reg.Close()
		cluster := reg.JobManagerGroup()
		cluster.Gauge("numRunningJobs", func() int64 { return 0 })
		for i := range 1000 {
			jobID := jobgraph.NewJobID()
			job := reg.JobGroup(jobID, "job")
			job.Gauge("uptime", func() int64 { return int64(i) })
			var tasks []*metrics.Group
			for s := range 2 {
				tg := reg.TaskGroup(metrics.Scope{JobID: jobID, JobName: "job", TaskID: jobgraph.NewJobVertexID(), SubtaskIndex: s})
				c := tg.Counter("numRecordsOut")
				tg.Meter("numRecordsOutPerSecond", c)
				tasks = append(tasks, tg)
			}
			require.Len(t, reg.JobMetrics(jobID), 1)
			for _, tg := range tasks {
				tg.Close()
			}
			job.Close()
			assert.Empty(t, reg.JobMetrics(jobID))
		}
		assert.Equal(t, []string{"jobmanager/numRunningJobs"}, names(reg.Snapshot()))
		assert.Equal(t, 1, metrics.ScopesHeld(reg), "only the cluster scope is held")
		assert.Equal(t, 0, metrics.JobsIndexed(reg))
		assert.Equal(t, 0, metrics.MetersHeld(reg))
		cluster.Close()
		assert.Equal(t, 0, metrics.ScopesHeld(reg))
	})
}

// Run with -race: registering, closing, incrementing and reading from many goroutines at once.
func TestConcurrentUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := metrics.NewRegistry()
		defer reg.Close()
		jobID := jobgraph.NewJobID()
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 200 {
					g := reg.TaskGroup(metrics.Scope{JobID: jobID, SubtaskIndex: w, AttemptNumber: i})
					c := g.Counter("numRecordsIn")
					g.Meter("numRecordsInPerSecond", c)
					g.Histogram("h", 8).Update(int64(i))
					c.Inc()
					_ = reg.Snapshot()
					_ = reg.JobMetrics(jobID)
					g.Close()
				}
			})
		}
		wg.Go(func() {
			for range 20 {
				time.Sleep(metrics.UpdateInterval)
			}
		})
		wg.Wait()
		assert.Empty(t, reg.Snapshot())
	})
}

// The TimerGauge is Flink's: the time measured within each 5 s update interval, in ms per second,
// a wait going on at an update counting up to it.
func TestTimerGaugeIsMillisecondsPerSecondOfTheLastInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := metrics.NewRegistry()
		defer reg.Close()
		g := reg.TaskGroup(metrics.Scope{JobID: jobgraph.NewJobID()})
		bp := g.TimerGauge("backPressuredTimeMsPerSecond")
		time.Sleep(time.Second)
		bp.MarkStart()
		time.Sleep(2 * time.Second)
		bp.MarkEnd()
		time.Sleep(2 * time.Second) // the update at 5 s
		synctest.Wait()
		assert.Equal(t, int64(400), bp.Value(), "2 s of 5")
		time.Sleep(time.Second)
		bp.MarkStart() // at 6 s, still going on at the update at 10 s
		bp.MarkStart() // no effect
		time.Sleep(4 * time.Second)
		synctest.Wait()
		assert.Equal(t, int64(800), bp.Value(), "4 s of 5")
		time.Sleep(2 * time.Second)
		bp.MarkEnd() // at 12 s
		bp.MarkEnd() // no effect
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Equal(t, int64(400), bp.Value(), "the 2 s after the update at 10 s")
		time.Sleep(metrics.UpdateInterval)
		synctest.Wait()
		assert.Equal(t, int64(0), bp.Value())
		v := reg.Snapshot()
		require.Len(t, v, 1)
		assert.Equal(t, metrics.KindGauge, v[0].Kind)
		var nilTimer *metrics.TimerGauge
		nilTimer.MarkStart()
		nilTimer.MarkEnd()
		g.Close()
	})
}
