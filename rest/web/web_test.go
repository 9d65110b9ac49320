package web_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jobgraph/jobgraph/rest/web"
)

func TestHandlerServesIndexAndAssets(t *testing.T) {
	h := web.Handler()
	cases := []struct {
		method, path string
		status       int
		ctype        string
		contains     string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", `<script src="web/dashboard.js"></script>`},
		{"GET", "/web/dashboard.js", 200, "text/javascript; charset=utf-8", `"use strict";`},
		{"GET", "/web/dashboard.css", 200, "text/css; charset=utf-8", "body {"},
		{"HEAD", "/", 200, "text/html; charset=utf-8", ""},
		{"GET", "/web/missing.js", 404, "", ""},
		{"GET", "/web/", 404, "", ""},
		{"GET", "/jobs", 404, "", ""},
		{"POST", "/", 405, "", ""},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
			res := rec.Result()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != c.status {
				t.Fatalf("status %d, want %d (body %q)", res.StatusCode, c.status, body)
			}
			if c.ctype != "" && res.Header.Get("Content-Type") != c.ctype {
				t.Errorf("Content-Type %q, want %q", res.Header.Get("Content-Type"), c.ctype)
			}
			if c.contains != "" && !strings.Contains(string(body), c.contains) {
				t.Errorf("body does not contain %q:\n%s", c.contains, body)
			}
			if c.method == "HEAD" && len(body) != 0 {
				t.Errorf("HEAD answered a body of %d bytes", len(body))
			}
			if c.status == 405 && res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q", res.Header.Get("Allow"))
			}
		})
	}
}

// TestPageFetchesNothingFromElsewhere asserts the embedded page references no absolute URL: every
// script, style sheet and API call is relative, so it works mounted anywhere and offline.
func TestPageFetchesNothingFromElsewhere(t *testing.T) {
	h := web.Handler()
	for _, p := range []string{"/", "/web/dashboard.js", "/web/dashboard.css"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		// The SVG namespace is a name, not a fetch.
		body := strings.ReplaceAll(rec.Body.String(), "http://www.w3.org/2000/svg", "")
		for _, bad := range []string{"http://", "https://", "//cdn", `src="/`, `href="/`, `fetch("/`} {
			if strings.Contains(body, bad) {
				t.Errorf("%s contains %q", p, bad)
			}
		}
	}
}
