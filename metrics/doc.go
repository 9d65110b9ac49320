// Package metrics is jobgraph's metric registry: counters, gauges, meters and histograms grouped
// per scope, under the names Flink's runtime gives them, with no dependency past the standard
// library and the root package. Reporters (the REST endpoint's `/jobs/:jobid/metrics`, the
// OpenTelemetry bridge in the module `github.com/jobgraph/jobgraph/metrics/otel`) read it through
// Registry.Snapshot, Registry.JobMetrics and Registry.TaskMetrics.
//
// # Flink's model, and ours
//
// Flink: org.apache.flink.metrics.{Counter, Gauge, Meter, Histogram, MetricGroup} and
// org.apache.flink.runtime.metrics.{MetricRegistryImpl, groups.*, scope.ScopeFormats}. A
// [Registry] is the MetricRegistry; a [Group] is a MetricGroup of one of three scopes:
//
//   - [ScopeJobManager]: the cluster (Flink's JobManagerMetricGroup, scope format
//     `metrics.scope.jm` = "<host>.jobmanager"); no variables.
//   - [ScopeJob]: one job on the JobManager (JobManagerJobMetricGroup, `metrics.scope.jm-job` =
//     "<host>.jobmanager.<job_name>"); variables job_id and job_name.
//   - [ScopeTask]: one attempt of one subtask (TaskMetricGroup, `metrics.scope.task` =
//     "<host>.taskmanager.<tm_id>.<job_name>.<task_name>.<subtask_index>"); variables job_id,
//     job_name, task_id (the JobVertexID, as Flink's <task_id>), task_name, subtask_index and
//     task_attempt_num.
//
// Variables use Flink's names without the angle brackets (see the Var* constants). Where we
// differ from Flink:
//
//   - No host or tm_id variable and no scope format strings: a metric is identified by its scope,
//     its variables and its name; [ScopeKind.Format] gives Flink's scope format for reporters that
//     want a dotted identifier.
//   - No operator scope and no user-defined subgroups (MetricGroup.addGroup).
//   - Gauges are int64 or float64 ([Group.Gauge], [Group.FloatGauge]); Flink's Gauge<T> takes
//     any T.
//   - A name registered twice in one scope keeps the newest metric (Flink keeps the first and logs
//     a name collision), so a job's next JobMaster (a new leader session) replaces the metrics of
//     the previous one even while that one is still closing; closing the old group removes only
//     the metrics it still owns.
//
// # Reading never waits on an endpoint
//
// Counters are atomics; a meter and a histogram keep their values under their own lock; a gauge
// is a function that the reader's goroutine calls, so it must read only values its owner
// publishes atomically (the JobMaster, ResourceManager and Dispatcher publish what their main loop
// owns after every change, see their Config.Metrics). The registry's lock is never held while a
// gauge runs.
//
// # Lifetime
//
// A Group lives until its Close; a job's and a task's groups are closed when the JobMaster or the
// task ends, so a registry that saw a thousand jobs holds only the metrics of those still running.
// Meters are updated every 5 s ([UpdateInterval], Flink's MetricRegistryImpl view updater) by a
// timer the registry arms with the first registered meter and drops at the first tick that finds
// none (a meter registered before that tick is first updated in the old timer's phase, possibly
// sooner than 5 s); [Registry.Close] stops it for good.
//
// # Nil groups
//
// Every Group method works on a nil *Group: the metric is created and works but is registered
// nowhere (a meter on it is never updated and its rate stays 0). A component given no Registry
// (its Config.Metrics nil) thus needs no special case; [Registry] methods on a nil *Registry give
// nil groups.
package metrics
