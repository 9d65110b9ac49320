package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rest"
)

func encode(t *testing.T, g *jobgraph.JobGraph) string {
	t.Helper()
	data, err := json.Marshal(g)
	require.NoError(t, err)
	return string(data)
}

// blockJob is a running one-vertex job of "block" tasks.
func blockJob(name string) *jobgraph.JobGraph {
	g := jobgraph.New(name, jobgraph.Streaming)
	g.AddVertex("block", "block", 1)
	return g
}

// filler is a body of n bytes that counts what was read of it and holds nothing in memory.
type filler struct{ n, read int64 }

func (f *filler) Read(p []byte) (int, error) {
	if f.read >= f.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), f.n-f.read)
	for i := range p[:k] {
		p[i] = ' '
	}
	f.read += k
	return int(k), nil
}

// POST /jobs takes a JobGraph in jobgraph's JSON form and answers 202 with jobUrl; a body past
// rest.server.max-content-length is 413 (with a Content-Length, before reading any of it; without
// one, once the limit is read and no further), malformed JSON and an invalid graph 400 naming the
// problem, a JobID in use 409 — and none of them touches the job already running.
func TestSubmitJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := startCluster(t, minicluster.Config{})
		h := newHandler(t, rest.Config{Dispatcher: mc})
		ctx := context.Background()

		g := blockJob("submitted")
		status, body := do(h, http.MethodPost, "/jobs", encode(t, g))
		require.Equal(t, http.StatusAccepted, status, "%s", body)
		assert.JSONEq(t, `{"jobUrl":"/jobs/`+g.JobID.String()+`"}`, string(body))
		synctest.Wait()
		st, err := mc.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		require.Equal(t, jobgraph.JobStatusRunning, st)
		_, before := getJSON(t, h, "/jobs/"+g.JobID.String())
		startTime := num(path(before, "start-time"))
		require.Equal(t, t0, startTime)

		untouched := func(why string) {
			t.Helper()
			_, v := getJSON(t, h, "/jobs/"+g.JobID.String())
			assert.Equal(t, "RUNNING", path(v, "state"), why)
			assert.Equal(t, startTime, num(path(v, "start-time")), why)
			jobs, err := mc.ListJobs(ctx)
			require.NoError(t, err)
			assert.Len(t, jobs, 1, why)
		}

		// 101 MiB, announced: refused before a byte is read.
		big := &filler{n: 101 << 20}
		req := httptest.NewRequest(http.MethodPost, "/jobs", big)
		req.ContentLength = big.n
		rec := serve(h, req)
		assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
		assert.JSONEq(t, `{"errors":["The request body of 105906176 bytes exceeds the maximum content length of 104857600 bytes (rest.server.max-content-length)."]}`, rec.Body.String())
		assert.Zero(t, big.read)
		untouched("after a 101 MiB body with Content-Length")

		// 101 MiB, chunked: refused once the limit is passed, having read no more than that.
		big = &filler{n: 101 << 20}
		req = httptest.NewRequest(http.MethodPost, "/v1/jobs", big)
		req.ContentLength = -1
		rec = serve(h, req)
		assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
		assert.JSONEq(t, `{"errors":["The request body exceeds the maximum content length of 104857600 bytes (rest.server.max-content-length)."]}`, rec.Body.String())
		assert.LessOrEqual(t, big.read, int64(100<<20)+1, "read no further than the limit")
		untouched("after a chunked 101 MiB body")

		// A smaller limit of the host's.
		small := newHandler(t, rest.Config{Dispatcher: mc, MaxContentLength: 10})
		status, _ = do(small, http.MethodPost, "/jobs", encode(t, blockJob("too big")))
		assert.Equal(t, http.StatusRequestEntityTooLarge, status)

		for _, c := range []struct{ body, want string }{
			{`{"name": "x", "vertices": [`, "Bad request, the body is not a JobGraph in jobgraph's JSON form: jobgraph: decode: unexpected EOF"},
			{`{"name": "x", "colour": "red"}`, `Bad request, the body is not a JobGraph in jobgraph's JSON form: jobgraph: decode: json: unknown field "colour"`},
			{`not json`, "Bad request, the body is not a JobGraph in jobgraph's JSON form: jobgraph: decode: invalid character 'o' in literal null (expecting 'u')"},
			{``, "Bad request, the body is not a JobGraph in jobgraph's JSON form: jobgraph: decode: EOF"},
		} {
			status, body := do(h, http.MethodPost, "/jobs", c.body)
			assert.Equal(t, http.StatusBadRequest, status, c.body)
			assert.JSONEq(t, `{"errors":[`+quote(c.want)+`]}`, string(body), c.body)
		}
		untouched("after malformed bodies")

		invalid := jobgraph.New("invalid", jobgraph.Streaming)
		invalid.AddVertex("v", "block", 0)
		status, body = do(h, http.MethodPost, "/jobs", encode(t, invalid))
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Contains(t, string(body), "parallelism")
		untouched("after an invalid graph")

		dup := blockJob("duplicate")
		dup.JobID = g.JobID
		status, body = do(h, http.MethodPost, "/jobs", encode(t, dup))
		assert.Equal(t, http.StatusConflict, status)
		assert.JSONEq(t, `{"errors":["duplicate job submission: job `+g.JobID.String()+` is already running or being submitted"]}`, string(body))
		untouched("after a duplicate")
		_, v := getJSON(t, h, "/jobs/"+g.JobID.String())
		assert.Equal(t, "submitted", path(v, "name"), "the running job, not the duplicate")

		// A graph without a JobID gets one.
		var anon map[string]any
		require.NoError(t, json.Unmarshal([]byte(encode(t, blockJob("anonymous"))), &anon))
		delete(anon, "jobId")
		data, _ := json.Marshal(anon)
		status, body = do(h, http.MethodPost, "/jobs", string(data))
		require.Equal(t, http.StatusAccepted, status, "%s", body)
		var resp struct{ JobURL string }
		require.NoError(t, json.Unmarshal(body, &resp))
		id, err := jobgraph.ParseJobID(strings.TrimPrefix(resp.JobURL, "/jobs/"))
		require.NoError(t, err)
		synctest.Wait()
		st, err = mc.RequestJobStatus(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, st)
	})
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// PATCH /jobs/:jobid?mode=cancel cancels (202, then CANCELED; again: 202); a job that ended
// otherwise is 409; mode=stop is refused as Flink 1.15+ refuses it; an unknown job is 404.
func TestCancelJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := startCluster(t, minicluster.Config{})
		h := newHandler(t, rest.Config{Dispatcher: mc})
		ctx := context.Background()
		g := blockJob("to cancel")
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		u := "/jobs/" + g.JobID.String()

		status, body := do(h, http.MethodPatch, u+"?mode=stop", "")
		assert.Equal(t, http.StatusBadRequest, status)
		assert.Contains(t, string(body), `The termination mode \"stop\" has been removed.`)
		status, _ = do(h, http.MethodPatch, u+"?mode=later", "")
		assert.Equal(t, http.StatusBadRequest, status)
		st, _ := mc.RequestJobStatus(ctx, g.JobID)
		require.Equal(t, jobgraph.JobStatusRunning, st, "refused requests change nothing")

		status, body = do(h, http.MethodPatch, u+"?mode=cancel", "")
		assert.Equal(t, http.StatusAccepted, status)
		assert.Equal(t, "{}", string(body))
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
		status, _ = do(h, http.MethodPatch, u, "")
		assert.Equal(t, http.StatusAccepted, status, "canceling a CANCELED job again (no mode: cancel)")

		done := jobgraph.New("done", jobgraph.Batch)
		done.AddVertex("v", "finish", 1)
		_, err = mc.Run(ctx, done)
		require.NoError(t, err)
		status, body = do(h, http.MethodPatch, "/jobs/"+done.JobID.String()+"?mode=cancel", "")
		assert.Equal(t, http.StatusConflict, status)
		assert.JSONEq(t, `{"errors":["job already terminated: job `+done.JobID.String()+` ended with status FINISHED"]}`, string(body))

		status, _ = do(h, http.MethodPatch, "/jobs/"+jobgraph.NewJobID().String()+"?mode=cancel", "")
		assert.Equal(t, http.StatusNotFound, status)
	})
}

// A bearer-token hook: without the token every request is 401 with errors and changes nothing
// (a PATCH cancel leaves the job RUNNING, a POST /jobs submits nothing); with it they work.
func TestAuthenticateRefusesRequestsWithoutTheToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := startCluster(t, minicluster.Config{})
		errNoToken := errors.New("missing or wrong bearer token")
		h := newHandler(t, rest.Config{Dispatcher: mc, Authenticate: func(r *http.Request) error {
			if r.Header.Get("Authorization") != "Bearer s3cret" {
				return errNoToken
			}
			return nil
		}})
		ctx := context.Background()
		g := blockJob("guarded")
		require.NoError(t, mc.SubmitJob(ctx, g))
		synctest.Wait()
		u := "/jobs/" + g.JobID.String()

		send := func(method, target, body, token string) *httptest.ResponseRecorder {
			var r io.Reader
			if body != "" {
				r = strings.NewReader(body)
			}
			req := httptest.NewRequest(method, target, r)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			return serve(h, req)
		}
		for _, token := range []string{"", "wrong"} {
			for _, c := range []struct{ method, target, body string }{
				{http.MethodPatch, u + "?mode=cancel", ""},
				{http.MethodPost, "/jobs", encode(t, blockJob("sneaked in"))},
				{http.MethodPost, u + "/savepoints", `{"target-directory":"/tmp"}`},
				{http.MethodGet, u, ""},
				{http.MethodGet, "/", ""},
			} {
				rec := send(c.method, c.target, c.body, token)
				assert.Equal(t, http.StatusUnauthorized, rec.Code, c.method+" "+c.target)
				assert.JSONEq(t, `{"errors":["missing or wrong bearer token"]}`, rec.Body.String())
			}
		}
		synctest.Wait()
		st, err := mc.RequestJobStatus(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusRunning, st, "the cancel without the token changed nothing")
		jobs, err := mc.ListJobs(ctx)
		require.NoError(t, err)
		assert.Len(t, jobs, 1, "nothing was submitted")

		rec := send(http.MethodGet, u+"/status", "", "s3cret")
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.JSONEq(t, `{"status":"RUNNING"}`, rec.Body.String())
		rec = send(http.MethodPatch, u+"?mode=cancel", "", "s3cret")
		assert.Equal(t, http.StatusAccepted, rec.Code)
		res, err := mc.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, jobgraph.JobStatusCanceled, res.Status)
	})
}

// No CORS header unless web.access-control-allow-origin is configured; then on every answer,
// errors included.
func TestCORSHeaderOnlyWhenConfigured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := startCluster(t, minicluster.Config{})
		plain := newHandler(t, rest.Config{Dispatcher: mc})
		cors := newHandler(t, rest.Config{Dispatcher: mc, AccessControlAllowOrigin: "https://ui.example"})
		for _, target := range []string{"/jobs", "/nope", "/jobs/" + jobgraph.NewJobID().String()} {
			rec := serve(plain, httptest.NewRequest(http.MethodGet, target, nil))
			_, has := rec.Header()["Access-Control-Allow-Origin"]
			assert.False(t, has, target)
			rec = serve(cors, httptest.NewRequest(http.MethodGet, target, nil))
			assert.Equal(t, "https://ui.example", rec.Header().Get("Access-Control-Allow-Origin"), target)
		}
	})
}
