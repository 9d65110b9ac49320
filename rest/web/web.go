// Package web is jobgraph's live dashboard: a single page of plain HTML, CSS and vanilla
// JavaScript, embedded with go:embed, that reads only Flink's REST API v1 JSON (the paths and
// field names of apache/flink's rest_v1_dispatcher.yml, as package rest serves them) through
// relative URLs, so it works wherever it is mounted. It follows Flink's web dashboard
// (flink-runtime-web) in what it shows, not in how it is built: no front-end build step, no
// script, style sheet or font fetched from elsewhere.
package web

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Handler serves the dashboard: GET (and HEAD) of "/" answers index.html and "/web/<file>" the
// embedded assets (Content-Type by file extension); anything else is 404, other methods 405.
// It holds no state and is safe for concurrent use; every call returns a new handler over the
// same embedded files. Mount it at the root of the REST handler's mux (rest mounts it at
// "GET /{$}" and "/web/"), or below a prefix with http.StripPrefix: the page fetches its assets
// and the REST API with relative URLs. The page routes with the URL fragment ("#/jobs/<id>"), so
// the server serves only "/".
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic("rest/web: embedded static directory missing: " + err.Error()) // broken build only
	}
	files := http.StripPrefix("/web/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		switch {
		case r.URL.Path == "/" || r.URL.Path == "/index.html":
			serveIndex(w, r, sub)
		case len(r.URL.Path) > len("/web/") && r.URL.Path[:len("/web/")] == "/web/" && r.URL.Path != "/web/index.html":
			files.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

func serveIndex(w http.ResponseWriter, r *http.Request, sub fs.FS) {
	b, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		http.Error(w, "index.html missing", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b)
}
