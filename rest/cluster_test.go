package rest_test

import (
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rest"
)

var (
	taskManagerKeys = sorted("id", "path", "dataPort", "jmxPort", "timeSinceLastHeartbeat", "slotsNumber", "freeSlots",
		"totalResource", "freeResource", "hardware", "memoryConfiguration", "blocked")
	resourceKeys = sorted("cpuCores", "taskHeapMemory", "taskOffHeapMemory", "managedMemory", "networkMemory", "extendedResources")
)

// /overview, /config and /taskmanagers answer the cluster of startJobs: 2 TaskExecutors of 2
// slots, the running job holding 2 slots of taskexecutor-0, one job per state; both at the root
// and below /v1.
func TestClusterEndpoints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := startCluster(t, minicluster.Config{})
		h := newHandler(t, rest.Config{Dispatcher: mc, Cluster: mc})
		j := startJobs(t, mc)

		for _, prefix := range []string{"", "/v1"} {
			status, v := getJSON(t, h, prefix+"/overview")
			require.Equal(t, http.StatusOK, status)
			assert.Equal(t, obj{"taskmanagers": 2.0, "slots-total": 4.0, "slots-available": 2.0, "jobs-running": 1.0,
				"jobs-finished": 1.0, "jobs-cancelled": 1.0, "jobs-failed": 1.0, "flink-version": "jobgraph", "flink-commit": ""}, v)

			status, v = getJSON(t, h, prefix+"/config")
			require.Equal(t, http.StatusOK, status)
			assert.Equal(t, obj{"refresh-interval": 3000.0, "timezone-name": "UTC", "timezone-offset": 0.0, "flink-version": "jobgraph",
				"flink-revision": "", "features": obj{"web-submit": false, "web-cancel": true, "web-rescale": false, "web-history": false}}, v)

			status, v = getJSON(t, h, prefix+"/taskmanagers")
			require.Equal(t, http.StatusOK, status)
			tms := path(v, "taskmanagers").([]any)
			require.Len(t, tms, 2)
			for i, tm := range tms {
				assert.Equal(t, taskManagerKeys, keys(tm))
				assert.Equal(t, []string{"taskexecutor-0", "taskexecutor-1"}[i], path(tm, "id"))
				assert.Equal(t, path(tm, "id"), path(tm, "path"))
				assert.Equal(t, 2.0, path(tm, "slotsNumber"))
				assert.Equal(t, []float64{0, 2}[i], path(tm, "freeSlots"))
				assert.Equal(t, t0, num(path(tm, "timeSinceLastHeartbeat")), "registered at t0, no heartbeat within 10 s")
				assert.Equal(t, resourceKeys, keys(path(tm, "totalResource")))
				assert.Equal(t, resourceKeys, keys(path(tm, "freeResource")))
			}

			status, v = getJSON(t, h, prefix+"/taskmanagers/taskexecutor-0")
			require.Equal(t, http.StatusOK, status)
			assert.Equal(t, sorted(append([]string{"allocatedSlots", "metrics"}, taskManagerKeys...)...), keys(v))
			slots := path(v, "allocatedSlots").([]any)
			require.Len(t, slots, 2)
			for _, s := range slots {
				assert.Equal(t, j.running.JobID.String(), path(s, "jobId"))
				assert.Equal(t, resourceKeys, keys(path(s, "resource")))
			}
			status, v = getJSON(t, h, prefix+"/taskmanagers/nope")
			assert.Equal(t, http.StatusNotFound, status)
			assert.Equal(t, obj{"errors": []any{"Could not find TaskManager nope."}}, v)
		}
	})
}

// Without a Cluster the figures are zero and the list empty.
func TestClusterEndpointsWithoutCluster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := startCluster(t, minicluster.Config{})
		h := newHandler(t, rest.Config{Dispatcher: mc})
		_, v := getJSON(t, h, "/overview")
		assert.Equal(t, 0.0, path(v, "taskmanagers"))
		assert.Equal(t, 0.0, path(v, "slots-total"))
		_, v = getJSON(t, h, "/taskmanagers")
		assert.Equal(t, obj{"taskmanagers": []any{}}, v)
	})
}

// An unknown path is 404, a known path with another method 405 with Allow, both with Flink's
// error body; HEAD is served like GET.
func TestUnknownPathAndWrongMethod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := startCluster(t, minicluster.Config{})
		h := newHandler(t, rest.Config{Dispatcher: mc, NoDashboard: true})
		for _, p := range []string{"/nope", "/v1/nope", "/jobs/a/b/c/d/e", "/", "/v2/jobs"} {
			status, v := getJSON(t, h, p)
			assert.Equal(t, http.StatusNotFound, status, p)
			assert.Equal(t, obj{"errors": []any{"Not found: " + p}}, v, p)
		}
		for _, c := range []struct{ method, path, allow string }{
			{http.MethodDelete, "/jobs", "GET, POST"},
			{http.MethodPost, "/overview", "GET"},
			{http.MethodPut, "/v1/jobs/00000000000000000000000000000001", "GET, PATCH"},
			{http.MethodGet, "/jobs/00000000000000000000000000000001/stop", "POST"},
		} {
			req := httptestRequest(c.method, c.path)
			rec := serve(h, req)
			assert.Equal(t, http.StatusMethodNotAllowed, rec.Code, c.path)
			assert.Equal(t, c.allow, rec.Header().Get("Allow"), c.path)
			assert.Contains(t, rec.Body.String(), `{"errors":["Request method `+c.method, c.path)
		}
		rec := serve(h, httptestRequest(http.MethodHead, "/jobs"))
		assert.Equal(t, http.StatusOK, rec.Code)
	})
}
