package rest_test

import (
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/metrics"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rest"
)

// vertexWant is what a test expects of one job vertex.
type vertexWant struct {
	name               string
	parallelism        int
	status             string
	start, end, length int64 // ms after t0 (-1: none); length is the duration
}

// jobWant is what a test expects of one of the four jobs of startJobs.
type jobWant struct {
	g                  *jobgraph.JobGraph
	state              string
	start, end, length int64 // ms after t0 (end -1: none)
	vertices           []vertexWant
	tasks              map[string]int // subtasks per state (lower case), with "total"
	checkpoints        int64          // completed checkpoints
}

func wants(j jobs) []jobWant {
	return []jobWant{
		{g: j.running, state: "RUNNING", start: 0, end: -1, length: 5000,
			vertices: []vertexWant{{"src", 2, "RUNNING", 0, -1, 5000}, {"sink", 1, "RUNNING", 0, -1, 5000}},
			tasks:    map[string]int{"running": 3, "total": 3}, checkpoints: 1},
		{g: j.finished, state: "FINISHED", start: 1000, end: 1100, length: 100,
			vertices: []vertexWant{{"a", 2, "FINISHED", 1000, 1100, 100}, {"b", 1, "FINISHED", 1000, 1000, 0}},
			tasks:    map[string]int{"finished": 3, "total": 3}, checkpoints: 1},
		{g: j.failed, state: "FAILED", start: 2000, end: 2000, length: 0,
			vertices: []vertexWant{{"fail", 1, "FAILED", 2000, 2000, 0}},
			tasks:    map[string]int{"failed": 1, "total": 1}},
		{g: j.canceled, state: "CANCELED", start: 3000, end: 4000, length: 1000,
			vertices: []vertexWant{{"block", 1, "CANCELED", 3000, 4000, 1000}},
			tasks:    map[string]int{"canceled": 1, "total": 1}},
	}
}

// at is t0+ms, or -1 for -1.
func at(ms int64) int64 {
	if ms < 0 {
		return -1
	}
	return t0 + ms
}

var executionStates = []string{"CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RUNNING", "FINISHED", "CANCELING", "CANCELED", "FAILED", "RECONCILING"}

// stateMap is every execution state with its count in m (0 if absent), keys in upper or lower
// case as Flink's endpoint writes them.
func stateMap(m map[string]int, lower bool) obj {
	out := obj{}
	for _, s := range executionStates {
		k := s
		if lower {
			k = toLower(s)
		}
		out[k] = float64(m[toLower(s)])
	}
	if lower {
		out["total"] = float64(m["total"])
	}
	return out
}

func toLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

var (
	jobDetailsKeys = sorted("jid", "name", "isStoppable", "state", "job-type", "start-time", "end-time", "duration",
		"maxParallelism", "now", "timestamps", "vertices", "status-counts", "plan", "pending-operators")
	jobVertexKeys = sorted("id", "name", "maxParallelism", "parallelism", "status", "start-time", "end-time",
		"duration", "tasks", "metrics")
	ioMetricsKeys = sorted("read-bytes", "read-bytes-complete", "write-bytes", "write-bytes-complete",
		"read-records", "read-records-complete", "write-records", "write-records-complete")
	overviewJobKeys = sorted("jid", "name", "start-time", "end-time", "duration", "state", "last-modification", "tasks")
	planKeys        = sorted("jid", "name", "type", "nodes")
	planNodeKeys    = sorted("id", "parallelism", "operator", "operator_strategy", "description", "optimizer_properties")
	planInputKeys   = sorted("num", "id", "ship_strategy", "exchange")
	subtaskKeys     = sorted("subtask", "status", "attempt", "host", "start-time", "end-time", "duration",
		"metrics", "taskmanager-id", "start_time")
	checkpointingKeys = sorted("counts", "summary", "latest", "history")
	countsKeys        = sorted("restored", "total", "in_progress", "completed", "failed")
	latestKeys        = sorted("completed", "savepoint", "failed", "restored")
	completedKeys     = sorted("className", "id", "status", "is_savepoint", "savepointFormat", "trigger_timestamp",
		"latest_ack_timestamp", "checkpointed_size", "state_size", "end_to_end_duration", "alignment_buffered",
		"processed_data", "persisted_data", "num_subtasks", "num_acknowledged_subtasks", "checkpoint_type", "tasks",
		"external_path", "discarded")
	checkpointConfigKeys = sorted("mode", "interval", "timeout", "min_pause", "max_concurrent", "externalization",
		"state_backend", "checkpoint_storage", "unaligned_checkpoints", "tolerable_failed_checkpoints",
		"aligned_checkpoint_timeout", "checkpoints_after_tasks_finish", "state_changelog_enabled",
		"changelog_periodic_materialization_interval", "changelog_storage")
	exceptionsKeys    = sorted("root-exception", "timestamp", "all-exceptions", "truncated", "exceptionHistory")
	rootExceptionKeys = sorted("exceptionName", "stacktrace", "timestamp", "taskName", "location", "taskManagerId",
		"failureLabels", "concurrentExceptions")
	accumulatorsKeys = sorted("job-accumulators", "user-task-accumulators", "serialized-user-task-accumulators")
)

// Every GET endpoint of a job answers a RUNNING, a FINISHED, a FAILED and a CANCELED job with
// the fields Flink's spec names and the values of the jobs startJobs ran (virtual time, so the
// timestamps are exact); an unknown job is 404 with errors, a malformed job ID 400.
func TestJobEndpointsAnswerEveryJobState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := startCluster(t, minicluster.Config{})
		reg := metrics.NewRegistry()
		defer reg.Close()
		h := newHandler(t, rest.Config{Dispatcher: mc, Cluster: mc, Metrics: reg})
		j := startJobs(t, mc)
		jg := reg.JobGroup(j.running.JobID, "running")
		jg.Counter("numRestarts").Add(2)
		jg.Gauge("uptime", func() int64 { return 5000 })
		defer jg.Close()
		all := wants(j)
		url := func(w jobWant, suffix string) string { return "/jobs/" + w.g.JobID.String() + suffix }
		// t.Run is not allowed in a bubble: each endpoint's table runs in order, named in the log.
		run := func(name string, f func(t *testing.T)) {
			t.Log(name)
			f(t)
		}

		run("GET /jobs/:jobid", func(t *testing.T) {
			for _, w := range all {
				status, v := getJSON(t, h, url(w, ""))
				require.Equal(t, http.StatusOK, status, w.state)
				assert.Equal(t, jobDetailsKeys, keys(v), w.state)
				assert.Equal(t, w.g.JobID.String(), path(v, "jid"))
				assert.Equal(t, w.g.Name, path(v, "name"))
				assert.Equal(t, w.state, path(v, "state"))
				assert.Equal(t, "STREAMING", path(v, "job-type"))
				assert.Equal(t, at(w.start), num(path(v, "start-time")), w.state)
				assert.Equal(t, at(w.end), num(path(v, "end-time")), w.state)
				assert.Equal(t, w.length, num(path(v, "duration")), w.state)
				assert.Equal(t, t0+5000, num(path(v, "now")))
				assert.Equal(t, at(w.start), num(path(v, "timestamps", "INITIALIZING")), w.state)
				assert.Equal(t, at(w.start), num(path(v, "timestamps", "RUNNING")), w.state)
				if w.end >= 0 {
					assert.Equal(t, at(w.end), num(path(v, "timestamps", w.state)), w.state)
				}
				assert.Len(t, path(v, "timestamps"), 11)
				require.Len(t, path(v, "vertices"), len(w.vertices))
				counts := map[string]int{}
				for i, vw := range w.vertices {
					vx := path(v, "vertices", i)
					assert.Equal(t, jobVertexKeys, keys(vx))
					assert.Equal(t, w.g.Vertices[i].ID.String(), path(vx, "id"))
					assert.Equal(t, vw.name, path(vx, "name"))
					assert.EqualValues(t, vw.parallelism, path(vx, "parallelism"))
					assert.EqualValues(t, 128, path(vx, "maxParallelism"))
					assert.Equal(t, vw.status, path(vx, "status"))
					assert.Equal(t, at(vw.start), num(path(vx, "start-time")), vw.name)
					assert.Equal(t, at(vw.end), num(path(vx, "end-time")), vw.name)
					assert.Equal(t, vw.length, num(path(vx, "duration")), vw.name)
					assert.Equal(t, stateMap(map[string]int{toLower(vw.status): vw.parallelism}, false), path(vx, "tasks"))
					assert.Equal(t, ioMetricsKeys, keys(path(vx, "metrics")))
					counts[toLower(vw.status)]++
				}
				assert.Equal(t, stateMap(counts, false), path(v, "status-counts"))
				assert.Equal(t, planKeys, keys(path(v, "plan")))
			}
		})

		run("GET /jobs/:jobid/status", func(t *testing.T) {
			for _, w := range all {
				status, v := getJSON(t, h, url(w, "/status"))
				require.Equal(t, http.StatusOK, status)
				assert.Equal(t, obj{"status": w.state}, v)
			}
		})

		run("GET /jobs/overview", func(t *testing.T) {
			status, v := getJSON(t, h, "/jobs/overview")
			require.Equal(t, http.StatusOK, status)
			assert.Equal(t, sorted("jobs"), keys(v))
			got := map[string]any{}
			for _, d := range path(v, "jobs").([]any) {
				assert.Equal(t, overviewJobKeys, keys(d))
				got[path(d, "jid").(string)] = d
			}
			require.Len(t, got, 4)
			for _, w := range all {
				d := got[w.g.JobID.String()]
				assert.Equal(t, w.g.Name, path(d, "name"))
				assert.Equal(t, w.state, path(d, "state"))
				assert.Equal(t, at(w.start), num(path(d, "start-time")), w.state)
				assert.Equal(t, at(w.end), num(path(d, "end-time")), w.state)
				assert.Equal(t, w.length, num(path(d, "duration")), w.state)
				last := w.end
				if last < 0 {
					last = w.start
				}
				assert.Equal(t, at(last), num(path(d, "last-modification")), w.state)
				assert.Equal(t, stateMap(w.tasks, true), path(d, "tasks"), w.state)
			}
		})

		run("GET /jobs", func(t *testing.T) {
			status, v := getJSON(t, h, "/jobs")
			require.Equal(t, http.StatusOK, status)
			got := map[string]any{}
			for _, e := range path(v, "jobs").([]any) {
				assert.Equal(t, sorted("id", "status"), keys(e))
				got[path(e, "id").(string)] = path(e, "status")
			}
			want := map[string]any{}
			for _, w := range all {
				want[w.g.JobID.String()] = w.state
			}
			assert.Equal(t, want, got)
		})

		run("GET /jobs/:jobid/plan", func(t *testing.T) {
			for _, w := range all {
				status, v := getJSON(t, h, url(w, "/plan"))
				require.Equal(t, http.StatusOK, status)
				assert.Equal(t, sorted("plan"), keys(v))
				p := path(v, "plan")
				assert.Equal(t, planKeys, keys(p))
				assert.Equal(t, w.g.JobID.String(), path(p, "jid"))
				assert.Equal(t, w.g.Name, path(p, "name"))
				assert.Equal(t, "STREAMING", path(p, "type"))
				require.Len(t, path(p, "nodes"), len(w.vertices))
				for i, vw := range w.vertices {
					n := path(p, "nodes", i)
					nk := planNodeKeys
					if i > 0 {
						nk = sorted(append([]string{"inputs"}, planNodeKeys...)...)
					}
					assert.Equal(t, nk, keys(n))
					assert.Equal(t, w.g.Vertices[i].ID.String(), path(n, "id"))
					assert.Equal(t, vw.name, path(n, "description"))
					assert.EqualValues(t, vw.parallelism, path(n, "parallelism"))
				}
			}
			_, v := getJSON(t, h, url(all[0], "/plan"))
			in := path(v, "plan", "nodes", 1, "inputs", 0)
			assert.Equal(t, planInputKeys, keys(in))
			assert.Equal(t, obj{"num": 0.0, "id": j.running.Vertices[0].ID.String(), "ship_strategy": "REBALANCE", "exchange": "pipelined_bounded"}, in)
			_, v = getJSON(t, h, url(all[1], "/plan"))
			assert.Equal(t, obj{"num": 0.0, "id": j.finished.Vertices[0].ID.String(), "ship_strategy": "HASH", "exchange": "pipelined_bounded"},
				path(v, "plan", "nodes", 1, "inputs", 0))
		})

		run("GET /jobs/:jobid/vertices/:vertexid", func(t *testing.T) {
			for _, w := range all {
				for i, vw := range w.vertices {
					status, v := getJSON(t, h, url(w, "/vertices/"+w.g.Vertices[i].ID.String()))
					require.Equal(t, http.StatusOK, status)
					assert.Equal(t, sorted("id", "name", "parallelism", "maxParallelism", "now", "subtasks"), keys(v))
					assert.Equal(t, vw.name, path(v, "name"))
					assert.Equal(t, t0+5000, num(path(v, "now")))
					require.Len(t, path(v, "subtasks"), vw.parallelism)
					for k := range vw.parallelism {
						s := path(v, "subtasks", k)
						wantKeys := subtaskKeys
						if vw.status == "FAILED" {
							wantKeys = sorted(append([]string{"failure-cause"}, subtaskKeys...)...)
						}
						assert.Equal(t, wantKeys, keys(s), vw.name)
						assert.EqualValues(t, k, path(s, "subtask"))
						assert.Equal(t, vw.status, path(s, "status"), vw.name)
						assert.EqualValues(t, 0, path(s, "attempt"))
						assert.Regexp(t, "^taskexecutor-[01]$", path(s, "host"))
						assert.Equal(t, path(s, "host"), path(s, "taskmanager-id"))
						assert.Equal(t, at(vw.start), num(path(s, "start-time")), vw.name)
					}
				}
			}
			status, v := getJSON(t, h, url(all[0], "/vertices/"+jobgraph.NewJobVertexID().String()))
			assert.Equal(t, http.StatusNotFound, status)
			assert.Equal(t, sorted("errors"), keys(v))
			status, _ = getJSON(t, h, url(all[0], "/vertices/nope"))
			assert.Equal(t, http.StatusBadRequest, status)
		})

		run("GET /jobs/:jobid/exceptions", func(t *testing.T) {
			for _, w := range all {
				status, v := getJSON(t, h, url(w, "/exceptions"))
				require.Equal(t, http.StatusOK, status)
				assert.Equal(t, exceptionsKeys, keys(v), w.state)
				if w.state != "FAILED" {
					assert.Nil(t, path(v, "root-exception"), w.state)
					assert.Equal(t, obj{"entries": []any{}, "truncated": false}, path(v, "exceptionHistory"), w.state)
					continue
				}
				msg := "task fail (1/1) (attempt 0) on " + path(v, "all-exceptions", 0, "location").(string) + " failed: boom"
				assert.Equal(t, msg, path(v, "root-exception"))
				assert.Equal(t, t0+2000, num(path(v, "timestamp")))
				e := path(v, "exceptionHistory", "entries", 0)
				assert.Equal(t, rootExceptionKeys, keys(e))
				assert.Equal(t, msg, path(e, "exceptionName"))
				assert.Equal(t, "fail (1/1)", path(e, "taskName"))
				assert.Equal(t, t0+2000, num(path(e, "timestamp")))
				assert.Equal(t, []any{}, path(e, "concurrentExceptions"))
				assert.Len(t, path(v, "exceptionHistory", "entries"), 1)
				assert.Equal(t, false, path(v, "exceptionHistory", "truncated"))

				_, v = getJSON(t, h, url(w, "/exceptions?maxExceptions=0"))
				assert.Equal(t, obj{"entries": []any{}, "truncated": true}, path(v, "exceptionHistory"))
				status, _ = getJSON(t, h, url(w, "/exceptions?maxExceptions=x"))
				assert.Equal(t, http.StatusBadRequest, status)
			}
		})

		run("GET /jobs/:jobid/accumulators", func(t *testing.T) {
			for _, w := range all {
				status, v := getJSON(t, h, url(w, "/accumulators"))
				require.Equal(t, http.StatusOK, status)
				assert.Equal(t, accumulatorsKeys, keys(v))
				want := []any{}
				if w.state == "FINISHED" {
					want = []any{obj{"name": "records", "type": "IntCounter", "value": "3"}}
				}
				assert.Equal(t, want, path(v, "user-task-accumulators"), w.state)
			}
		})

		run("GET /jobs/:jobid/checkpoints", func(t *testing.T) {
			for _, w := range all {
				status, v := getJSON(t, h, url(w, "/checkpoints"))
				require.Equal(t, http.StatusOK, status)
				assert.Equal(t, checkpointingKeys, keys(v))
				assert.Equal(t, countsKeys, keys(path(v, "counts")))
				assert.Equal(t, latestKeys, keys(path(v, "latest")))
				assert.Equal(t, float64(w.checkpoints), path(v, "counts", "completed"), w.state)
				assert.Equal(t, float64(w.checkpoints), path(v, "counts", "total"), w.state)
				assert.Len(t, path(v, "history"), int(w.checkpoints))
				if w.checkpoints == 0 {
					assert.Nil(t, path(v, "latest", "completed"))
					continue
				}
				c := path(v, "latest", "completed")
				assert.Equal(t, completedKeys, keys(c))
				assert.Equal(t, "completed", path(c, "className"))
				assert.Equal(t, 1.0, path(c, "id"))
				assert.Equal(t, "COMPLETED", path(c, "status"))
				assert.Equal(t, "CHECKPOINT", path(c, "checkpoint_type"))
				assert.Equal(t, path(v, "history", 0), c)
			}
			_, v := getJSON(t, h, url(all[0], "/checkpoints"))
			c := path(v, "latest", "completed")
			assert.Equal(t, t0, num(path(c, "trigger_timestamp")))
			assert.Equal(t, t0+100, num(path(c, "latest_ack_timestamp")))
			assert.Equal(t, int64(100), num(path(c, "end_to_end_duration")))
			assert.Equal(t, 3.0, path(c, "num_acknowledged_subtasks"))
			assert.Len(t, path(c, "tasks"), 2)
			assert.Equal(t, 100.0, path(v, "summary", "end_to_end_duration", "max"))
			_, v = getJSON(t, h, url(all[1], "/checkpoints"))
			c = path(v, "latest", "completed")
			assert.Equal(t, t0+1100, num(path(c, "trigger_timestamp")), "the final checkpoint, one interval after the start")
			assert.Equal(t, 2.0, path(c, "num_subtasks"), "a's 2 subtasks; b finished before")
		})

		run("GET /jobs/:jobid/checkpoints/details/:checkpointid", func(t *testing.T) {
			for _, w := range all {
				status, v := getJSON(t, h, url(w, "/checkpoints/details/1"))
				if w.checkpoints == 0 {
					assert.Equal(t, http.StatusNotFound, status, w.state)
					assert.Equal(t, obj{"errors": []any{"Could not find checkpoint statistics for checkpoint 1."}}, v)
					continue
				}
				require.Equal(t, http.StatusOK, status, w.state)
				assert.Equal(t, completedKeys, keys(v))
				assert.Equal(t, 1.0, path(v, "id"))
				_, latest := getJSON(t, h, url(w, "/checkpoints"))
				assert.Equal(t, path(latest, "latest", "completed"), v)
			}
			status, _ := getJSON(t, h, url(all[0], "/checkpoints/details/x"))
			assert.Equal(t, http.StatusBadRequest, status)
		})

		run("GET /jobs/:jobid/checkpoints/config", func(t *testing.T) {
			for _, w := range all {
				status, v := getJSON(t, h, url(w, "/checkpoints/config"))
				require.Equal(t, http.StatusOK, status)
				assert.Equal(t, checkpointConfigKeys, keys(v))
				interval := 3600000.0
				if w.state == "FINISHED" {
					interval = 100
				}
				assert.Equal(t, interval, path(v, "interval"), w.state)
				assert.Equal(t, 600000.0, path(v, "timeout"))
				assert.Equal(t, "EXACTLY_ONCE", path(v, "mode"))
				assert.Equal(t, 1.0, path(v, "max_concurrent"))
				assert.Equal(t, obj{"enabled": false, "delete_on_cancellation": true}, path(v, "externalization"))
			}
		})

		run("GET /jobs/:jobid/metrics", func(t *testing.T) {
			for _, w := range all {
				status, v := getJSON(t, h, url(w, "/metrics"))
				require.Equal(t, http.StatusOK, status)
				want := []any{}
				if w.state == "RUNNING" {
					want = []any{obj{"id": "numRestarts"}, obj{"id": "uptime"}}
				}
				assert.Equal(t, want, v, w.state)
			}
			_, v := getJSON(t, h, url(all[0], "/metrics?get=uptime,nope,numRestarts"))
			assert.Equal(t, []any{obj{"id": "uptime", "value": "5000"}, obj{"id": "numRestarts", "value": "2"}}, v)
		})

		run("unknown job", func(t *testing.T) {
			unknown := "/jobs/" + jobgraph.NewJobID().String()
			for _, suffix := range []string{"", "/status", "/plan", "/exceptions", "/accumulators", "/checkpoints",
				"/checkpoints/config", "/checkpoints/details/1", "/metrics", "/vertices/" + j.running.Vertices[0].ID.String()} {
				status, v := getJSON(t, h, unknown+suffix)
				assert.Equal(t, http.StatusNotFound, status, suffix)
				assert.Equal(t, sorted("errors"), keys(v), suffix)
				assert.Contains(t, path(v, "errors", 0), "job not found", suffix)
				status, v = getJSON(t, h, "/jobs/not-a-job-id"+suffix)
				assert.Equal(t, http.StatusBadRequest, status, suffix)
				assert.Contains(t, path(v, "errors", 0), `job ID "not-a-job-id"`, suffix)
			}
		})
	})
}
