package rest

import (
	"net/http"
	"slices"
	"strings"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/metrics"
)

// MetricSource is what the Handler needs of the metric registry: the current metrics of a job's
// scope (those its JobMaster registered: uptime, numRestarts, …). *metrics.Registry satisfies
// it; it is read on the request's goroutine and must not block.
type MetricSource interface {
	JobMetrics(jobID jobgraph.JobID) []metrics.Value
}

// metric is Flink's Metric of a MetricCollectionResponseBody, which Flink writes as a bare JSON
// array: without ?get the ids only, with it the ids and their values as text.
type metric struct {
	ID    string  `json:"id"`
	Value *string `json:"value,omitempty"`
}

// getJobMetrics answers the job's metrics: without "get" the name of every one available, with
// "get=a,b" those of a and b the job has, with their values (a histogram as Flink's fields
// name_min, name_p99, …). Unknown names are left out, as Flink leaves them out. An unknown job is
// 404; without Config.Metrics the list is empty.
func (h *Handler) getJobMetrics(w http.ResponseWriter, r *http.Request, p params) {
	id, ok := jobID(w, p)
	if !ok {
		return
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	if _, err := h.cfg.Dispatcher.RequestJobStatus(ctx, id); err != nil {
		h.fail(w, r, err)
		return
	}
	var fields []metrics.Field
	if h.cfg.Metrics != nil {
		for _, v := range h.cfg.Metrics.JobMetrics(id) {
			fields = append(fields, v.Fields()...)
		}
	}
	out := []metric{}
	get := r.URL.Query().Get("get")
	if get == "" {
		for _, f := range fields {
			out = append(out, metric{ID: f.ID})
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	for _, name := range strings.Split(get, ",") {
		name = strings.TrimSpace(name)
		if i := slices.IndexFunc(fields, func(f metrics.Field) bool { return f.ID == name }); i >= 0 {
			v := fields[i].Value
			out = append(out, metric{ID: name, Value: &v})
		}
	}
	writeJSON(w, http.StatusOK, out)
}
