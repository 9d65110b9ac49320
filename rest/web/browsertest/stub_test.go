package browsertest

// A stand-in for package rest until it lands: just the JSON the dashboard reads, in Flink's
// field names, from a MiniCluster and the submitted JobGraphs. Replaced by rest's handler.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rest/web"
)

type stub struct {
	mc     *minicluster.MiniCluster
	mu     sync.Mutex
	graphs map[jobgraph.JobID]*jobgraph.JobGraph
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

func (s *stub) handler() http.Handler {
	mux := http.NewServeMux()
	w := web.Handler()
	mux.Handle("GET /{$}", w)
	mux.Handle("/web/", w)
	js := func(rw http.ResponseWriter, v any) {
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(v)
	}
	job := func(rw http.ResponseWriter, r *http.Request) (*jobgraph.JobGraph, bool) {
		id, err := jobgraph.ParseJobID(r.PathValue("jobid"))
		s.mu.Lock()
		g := s.graphs[id]
		s.mu.Unlock()
		if err != nil || g == nil {
			rw.WriteHeader(404)
			js(rw, map[string]any{"errors": []string{"Job could not be found."}})
			return nil, false
		}
		return g, true
	}
	mux.HandleFunc("GET /jobs/{jobid}", func(rw http.ResponseWriter, r *http.Request) {
		g, ok := job(rw, r)
		if !ok {
			return
		}
		a, err := s.mc.RequestJob(r.Context(), g.JobID)
		if err != nil {
			rw.WriteHeader(500)
			js(rw, map[string]any{"errors": []string{err.Error()}})
			return
		}
		var vs []map[string]any
		for _, v := range a.JobVertices {
			tasks := map[string]int{}
			for st, n := range v.StateCounts {
				tasks[st.String()] = n
			}
			vs = append(vs, map[string]any{"id": v.ID.String(), "name": v.Name, "parallelism": v.Parallelism,
				"maxParallelism": v.MaxParallelism, "status": v.AggregateState.String(), "tasks": tasks})
		}
		var start time.Time
		for _, ts := range a.StatusTimestamps {
			if start.IsZero() || ts.Before(start) {
				start = ts
			}
		}
		js(rw, map[string]any{"jid": g.JobID.String(), "name": a.JobName, "state": a.Status.String(),
			"start-time": ms(start), "duration": time.Since(start).Milliseconds(), "vertices": vs})
	})
	mux.HandleFunc("GET /jobs/{jobid}/plan", func(rw http.ResponseWriter, r *http.Request) {
		g, ok := job(rw, r)
		if !ok {
			return
		}
		prod := g.Producers()
		var nodes []map[string]any
		for _, v := range g.Vertices {
			var in []map[string]any
			for i, e := range v.Inputs {
				in = append(in, map[string]any{"num": i, "id": prod[e.Source].ID.String(), "ship_strategy": e.ShipStrategy, "exchange": "pipelined_bounded"})
			}
			nodes = append(nodes, map[string]any{"id": v.ID.String(), "parallelism": v.Parallelism, "operator": "", "description": v.Name, "inputs": in})
		}
		js(rw, map[string]any{"plan": map[string]any{"jid": g.JobID.String(), "name": g.Name, "type": "STREAMING", "nodes": nodes}})
	})
	mux.HandleFunc("GET /jobs/{jobid}/vertices/{vertexid}", func(rw http.ResponseWriter, r *http.Request) {
		g, ok := job(rw, r)
		if !ok {
			return
		}
		a, err := s.mc.RequestJob(r.Context(), g.JobID)
		if err != nil {
			rw.WriteHeader(500)
			return
		}
		for _, v := range a.JobVertices {
			if v.ID.String() != r.PathValue("vertexid") {
				continue
			}
			subs := make([]map[string]any, len(v.Subtasks))
			for i, st := range v.Subtasks {
				start := st.StateTimestamps[jobgraph.ExecutionStateDeploying]
				subs[i] = map[string]any{"subtask": st.Subtask, "status": st.State.String(), "attempt": st.AttemptNumber,
					"host": "localhost", "taskmanager-id": st.Location.String(), "start-time": ms(start), "duration": -1}
			}
			js(rw, map[string]any{"id": v.ID.String(), "name": v.Name, "parallelism": v.Parallelism, "subtasks": subs})
			return
		}
		rw.WriteHeader(404)
	})
	mux.HandleFunc("GET /jobs/{jobid}/exceptions", func(rw http.ResponseWriter, r *http.Request) {
		js(rw, map[string]any{"exceptionHistory": map[string]any{"entries": []any{}, "truncated": false}})
	})
	mux.HandleFunc("GET /jobs/{jobid}/checkpoints", func(rw http.ResponseWriter, r *http.Request) {
		rw.WriteHeader(404)
		js(rw, map[string]any{"errors": []string{"Checkpointing is not enabled for this job."}})
	})
	mux.HandleFunc("GET /jobs/{jobid}/accumulators", func(rw http.ResponseWriter, r *http.Request) {
		js(rw, map[string]any{"job-accumulators": []any{}, "user-task-accumulators": []any{}})
	})
	mux.HandleFunc("PATCH /jobs/{jobid}", func(rw http.ResponseWriter, r *http.Request) {
		g, ok := job(rw, r)
		if !ok {
			return
		}
		if !strings.EqualFold(r.URL.Query().Get("mode"), "cancel") {
			rw.WriteHeader(400)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if err := s.mc.CancelJob(ctx, g.JobID); err != nil {
			rw.WriteHeader(500)
			return
		}
		rw.WriteHeader(202)
		js(rw, map[string]any{})
	})
	return mux
}
