package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

// reply is one scripted answer of the fake endpoint.
type reply struct {
	status int
	body   string
}

// fakeJM answers the REST calls its routes script ("METHOD /path?query" → answers in turn, the
// last one repeated) and records every request as "METHOD /path?query body". Anything else is
// Flink's 404 with "errors".
type fakeJM struct {
	mu     sync.Mutex
	routes map[string][]reply
	got    []string
}

func (f *fakeJM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Method + " " + r.URL.RequestURI()
	f.mu.Lock()
	f.got = append(f.got, strings.TrimSpace(key+" "+string(body)))
	replies, ok := f.routes[key]
	var rep reply
	if ok {
		rep = replies[0]
		if len(replies) > 1 {
			f.routes[key] = replies[1:]
		}
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"errors":["Not found: `+r.URL.Path+`"]}`)
		return
	}
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
}

func (f *fakeJM) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

// runCLI runs args against srv's address (as -m after the action unless the args name one) with list's
// times in UTC and 1 ms polls, and returns the exit code, stdout and stderr.
func runCLI(t *testing.T, srv *httptest.Server, timeout time.Duration, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	c := &cli{stdout: &stdout, stderr: &stderr, loc: time.UTC, clientTimeout: timeout,
		pollInitial: time.Millisecond, pollMax: 4 * time.Millisecond}
	if srv != nil && !containsOption(args, "-m", "--jobmanager") && len(args) > 0 && findAction(args[0]) != nil {
		args = append([]string{args[0], "-m", srv.Listener.Addr().String()}, args[1:]...)
	}
	code := c.run(t.Context(), args)
	return code, stdout.String(), stderr.String()
}

func containsOption(args []string, names ...string) bool {
	for _, a := range args {
		for _, n := range names {
			if a == n || strings.HasPrefix(a, n+"=") {
				return true
			}
		}
	}
	return false
}

const (
	jobA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	jobB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	jobC = "cccccccccccccccccccccccccccccccc"
	jobD = "dddddddddddddddddddddddddddddddd"
	jobE = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
	jobF = "ffffffffffffffffffffffffffffffff"
)

// banner is what every error other than a wrong command line starts with.
const banner = "\n------------------------------------------------------------\n The program finished with the following exception:\n\n"

const dashes = "--------------------------------------------------------------\n"

// 30.11.2020 16:02:29 UTC and the seconds after it, in ms.
const t0 = 1606752149000

func overview(jobs ...string) reply {
	return reply{200, `{"jobs":[` + strings.Join(jobs, ",") + `]}`}
}

func job(id, name, state string, start int64) string {
	b, _ := json.Marshal(map[string]any{"jid": id, "name": name, "state": state, "start-time": start,
		"end-time": -1, "duration": 5, "last-modification": start, "tasks": map[string]int{"running": 1}})
	return string(b)
}

// Flink's list layout, line for line: the sections, the "No … jobs." lines, the order by start
// time (ties by state name, then the server's order), -r, -s and -a.
func TestList(t *testing.T) {
	// The server's order is not the start order; B and E start at the same instant.
	all := overview(
		job(jobA, "streaming", "RUNNING", t0+2000),
		job(jobB, "restarting job", "RESTARTING", t0+1000),
		job(jobC, "queued", "INITIALIZING", t0+3000),
		job(jobD, "done", "FINISHED", t0),
		job(jobE, "same start", "CANCELLING", t0+1000),
		job(jobF, "created", "CREATED", t0+2500),
	)
	running := "------------------ Running/Restarting Jobs -------------------\n" +
		"30.11.2020 16:02:30 : " + jobE + " : same start (CANCELLING)\n" +
		"30.11.2020 16:02:30 : " + jobB + " : restarting job (RESTARTING)\n" +
		"30.11.2020 16:02:31 : " + jobA + " : streaming (RUNNING)\n" + dashes
	scheduled := "----------------------- Scheduled Jobs -----------------------\n" +
		"30.11.2020 16:02:31 : " + jobF + " : created (CREATED)\n" +
		"30.11.2020 16:02:32 : " + jobC + " : queued (INITIALIZING)\n" + dashes
	terminated := "---------------------- Terminated Jobs -----------------------\n" +
		"30.11.2020 16:02:29 : " + jobD + " : done (FINISHED)\n" + dashes
	tests := []struct {
		name  string
		reply reply
		args  []string
		want  string
	}{
		{"default: running and scheduled", all, []string{"list"}, "Waiting for response...\n" + running + scheduled},
		{"-r", all, []string{"list", "-r"}, "Waiting for response...\n" + running},
		{"--running", all, []string{"list", "--running"}, "Waiting for response...\n" + running},
		{"-s", all, []string{"list", "-s"}, "Waiting for response...\n" + scheduled},
		{"-a", all, []string{"list", "-a"}, "Waiting for response...\n" + running + scheduled + terminated},
		{"-r -s", all, []string{"list", "-r", "-s"}, "Waiting for response...\n" + running + scheduled},
		{"no jobs", overview(), []string{"list"}, "Waiting for response...\nNo running jobs.\nNo scheduled jobs.\n"},
		{"no jobs -a", overview(), []string{"list", "--all"}, "Waiting for response...\nNo running jobs.\nNo scheduled jobs.\n"},
		{"only finished", overview(job(jobD, "done", "FINISHED", t0)), []string{"list"}, "Waiting for response...\nNo running jobs.\nNo scheduled jobs.\n"},
		{"suspended counts as running", overview(job(jobD, "s", "SUSPENDED", t0)), []string{"list", "-r"},
			"Waiting for response...\n------------------ Running/Restarting Jobs -------------------\n" +
				"30.11.2020 16:02:29 : " + jobD + " : s (SUSPENDED)\n" + dashes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeJM{routes: map[string][]reply{"GET /jobs/overview": {tt.reply}}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			code, stdout, stderr := runCLI(t, srv, time.Minute, tt.args...)
			assert.Equal(t, 0, code, stderr)
			assert.Equal(t, tt.want, stdout)
			assert.Empty(t, stderr)
			assert.Equal(t, []string{"GET /jobs/overview"}, f.requests())
		})
	}
}

// list prints start times in the local time zone, as Flink's SimpleDateFormat does.
func TestListLocalTime(t *testing.T) {
	f := &fakeJM{routes: map[string][]reply{"GET /jobs/overview": {overview(job(jobA, "j", "RUNNING", t0))}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var stdout bytes.Buffer
	c := &cli{stdout: &stdout, stderr: io.Discard, loc: time.FixedZone("CET", 3600), clientTimeout: time.Minute}
	require.Equal(t, 0, c.run(t.Context(), []string{"list", "-r", "-m", srv.Listener.Addr().String()}))
	assert.Contains(t, stdout.String(), "\n30.11.2020 17:02:29 : "+jobA+" : j (RUNNING)\n")
}

// Every failure exits 1 and prints the server's "errors" (or why there is no answer) under
// Flink's banner; a wrong command line prints the message and the pointer to -h, and asks
// nothing of the server.
func TestErrors(t *testing.T) {
	notFound := reply{404, `{"errors":["Job ` + jobA + ` not found"]}`}
	tests := []struct {
		name     string
		routes   map[string][]reply
		args     []string
		stdout   string
		stderr   string
		requests []string
	}{
		{name: "list: server error", routes: map[string][]reply{"GET /jobs/overview": {{500, `{"errors":["Internal server error.","<stack trace>"]}`}}},
			args: []string{"list"}, stdout: "Waiting for response...\n",
			stderr:   banner + "Failed to retrieve job list.\nCaused by: GET /jobs/overview: 500 Internal Server Error: Internal server error.\n<stack trace>\n",
			requests: []string{"GET /jobs/overview"}},
		{name: "list: not Flink's error body", routes: map[string][]reply{"GET /jobs/overview": {{502, "bad gateway\n"}}},
			args: []string{"list"}, stdout: "Waiting for response...\n",
			stderr:   banner + "Failed to retrieve job list.\nCaused by: GET /jobs/overview: 502 Bad Gateway: bad gateway\n",
			requests: []string{"GET /jobs/overview"}},
		{name: "list: not JSON", routes: map[string][]reply{"GET /jobs/overview": {{200, "<html>"}}},
			args: []string{"list"}, stdout: "Waiting for response...\n",
			stderr:   banner + "Failed to retrieve job list.\nCaused by: GET /jobs/overview: the answer is not the JSON expected: invalid character '<' looking for beginning of value\n",
			requests: []string{"GET /jobs/overview"}},
		{name: "cancel: unknown job", routes: map[string][]reply{"PATCH /jobs/" + jobA + "?mode=cancel": {notFound}},
			args: []string{"cancel", jobA}, stdout: "Cancelling job " + jobA + ".\n",
			stderr:   banner + "Could not cancel job " + jobA + ".\nCaused by: PATCH /jobs/" + jobA + "?mode=cancel: 404 Not Found: Job " + jobA + " not found\n",
			requests: []string{"PATCH /jobs/" + jobA + "?mode=cancel"}},
		{name: "cancel: bad job ID", args: []string{"cancel", "xyz"},
			stderr: "Cannot parse JobID from \"xyz\": the expected format is 32 hexadecimal characters, e.g. fd72014d4c864993a2e5a9287b4a9c5d.\n\nUse the help option (-h or --help) to get help on the command.\n"},
		{name: "cancel: no job ID", args: []string{"cancel"},
			stderr: "Missing JobID. Specify a JobID to cancel a job.\n\nUse the help option (-h or --help) to get help on the command.\n"},
		{name: "savepoint: no job ID", args: []string{"savepoint"},
			stderr: "Missing JobID. Specify a Job ID to trigger a savepoint.\n\nUse the help option (-h or --help) to get help on the command.\n"},
		{name: "savepoint: unknown job", routes: map[string][]reply{"POST /jobs/" + jobA + "/savepoints": {notFound}},
			args: []string{"savepoint", jobA}, stdout: "Triggering savepoint for job " + jobA + ".\n",
			stderr:   banner + "Failed to trigger a savepoint for the job " + jobA + ".\nCaused by: POST /jobs/" + jobA + "/savepoints: 404 Not Found: Job " + jobA + " not found\n",
			requests: []string{"POST /jobs/" + jobA + "/savepoints {\"cancel-job\":false}"}},
		{name: "savepoint: the operation failed", routes: map[string][]reply{
			"POST /jobs/" + jobA + "/savepoints":   {{202, `{"request-id":"t1"}`}},
			"GET /jobs/" + jobA + "/savepoints/t1": {{200, `{"status":{"id":"IN_PROGRESS"}}`}, {200, `{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"java.lang.Exception","stack-trace":"savepoint: job ` + jobA + ` is FINISHED: not running\n"}}}`}}},
			args: []string{"savepoint", jobA, "/sp"}, stdout: "Triggering savepoint for job " + jobA + ".\nWaiting for response...\n",
			stderr: banner + "Failed to trigger a savepoint for the job " + jobA + ".\nCaused by: savepoint: job " + jobA + " is FINISHED: not running\n",
			requests: []string{"POST /jobs/" + jobA + "/savepoints {\"cancel-job\":false,\"target-directory\":\"/sp\"}",
				"GET /jobs/" + jobA + "/savepoints/t1", "GET /jobs/" + jobA + "/savepoints/t1"}},
		{name: "stop: no job ID", args: []string{"stop", "-p"},
			stderr: "Missing JobID. Specify a Job ID to stop a job.\n\nUse the help option (-h or --help) to get help on the command.\n"},
		{name: "stop: two arguments", args: []string{"stop", jobA, jobB},
			stderr: "Unexpected arguments after the Job ID: [\"" + jobB + "\"].\n\nUse the help option (-h or --help) to get help on the command.\n"},
		{name: "stop: refused", routes: map[string][]reply{"POST /jobs/" + jobA + "/stop": {{409, `{"errors":["job is not running"]}`}}},
			args: []string{"stop", jobA}, stdout: "Suspending job \"" + jobA + "\" with a savepoint.\n",
			stderr:   banner + "Could not stop with a savepoint job \"" + jobA + "\".\nCaused by: POST /jobs/" + jobA + "/stop: 409 Conflict: job is not running\n",
			requests: []string{"POST /jobs/" + jobA + "/stop {\"drain\":false}"}},
		{name: "run: no graph", args: []string{"run"},
			stderr: "Missing GRAPH.json. Specify the job graph file to run.\n\nUse the help option (-h or --help) to get help on the command.\n"},
		{name: "run: program arguments", args: []string{"run", "testdata/wordcount.json", "--input", "x"},
			stderr: "Unexpected arguments after testdata/wordcount.json: [\"--input\" \"x\"] (a job graph takes no program arguments).\n\nUse the help option (-h or --help) to get help on the command.\n"},
		{name: "run: no such file", args: []string{"run", "testdata/nothere.json"},
			stderr: banner + "open testdata/nothere.json: no such file or directory\n"},
		{name: "run: refused", routes: map[string][]reply{"POST /jobs": {{400, `{"errors":["jobgraph: invalid job graph: vertex \"Sink: print\": invokable \"print\" is not registered"]}`}}},
			args:   []string{"run", "-d", "testdata/wordcount.json"},
			stderr: banner + "Failed to submit job 8ae3c1443d44142c861257df1fb2846c.\nCaused by: POST /jobs: 400 Bad Request: jobgraph: invalid job graph: vertex \"Sink: print\": invokable \"print\" is not registered\n"},
		{name: "unknown option", args: []string{"list", "-x"},
			stderr: "Unrecognized option: -x\n\nUse the help option (-h or --help) to get help on the command.\n"},
		{name: "missing -m value", args: []string{"list", "-m"},
			stderr: "Missing argument for option: m\n\nUse the help option (-h or --help) to get help on the command.\n"},
		{name: "unknown action", args: []string{"lst"},
			stderr: "\"lst\" is not a valid action.\n\nValid actions are \"run\", \"info\", \"list\", \"stop\", \"cancel\" or \"savepoint\".\n\nSpecify the help option (-h or --help) to get help on the command.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeJM{routes: tt.routes}
			srv := httptest.NewServer(f)
			defer srv.Close()
			code, stdout, stderr := runCLI(t, srv, time.Minute, tt.args...)
			assert.Equal(t, 1, code)
			assert.Equal(t, tt.stdout, stdout)
			assert.Equal(t, tt.stderr, stderr)
			if tt.requests != nil || tt.routes == nil {
				assert.Equal(t, tt.requests, f.requests())
			}
		})
	}
}

// A closed endpoint: exit 1, the error names the URL asked.
func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	code, stdout, stderr := runCLI(t, nil, time.Minute, "cancel", jobA, "-m", addr)
	assert.Equal(t, 1, code)
	assert.Equal(t, "Cancelling job "+jobA+".\n", stdout)
	assert.True(t, strings.HasPrefix(stderr, banner+"Could not cancel job "+jobA+".\nCaused by: PATCH http://"+addr+"/jobs/"+jobA+"?mode=cancel: dial tcp "+addr+": "), stderr)
}

func TestCancel(t *testing.T) {
	f := &fakeJM{routes: map[string][]reply{"PATCH /jobs/" + jobA + "?mode=cancel": {{202, `{}`}}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	// Upper-case hex is a valid JobID; the CLI asks with Flink's lower-case form.
	code, stdout, stderr := runCLI(t, srv, time.Minute, "cancel", strings.ToUpper(jobA))
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "Cancelling job "+jobA+".\nCancelled job "+jobA+".\n", stdout)
	assert.Equal(t, []string{"PATCH /jobs/" + jobA + "?mode=cancel"}, f.requests())
}

// savepoint triggers, polls until COMPLETED and prints the location as Flink does; a
// savepoint still IN_PROGRESS after client.timeout is an error.
func TestSavepoint(t *testing.T) {
	trigger := "POST /jobs/" + jobA + "/savepoints"
	status := "GET /jobs/" + jobA + "/savepoints/0123456789abcdef0123456789abcdef"
	inProgress := reply{200, `{"status":{"id":"IN_PROGRESS"}}`}
	f := &fakeJM{routes: map[string][]reply{
		trigger: {{202, `{"request-id":"0123456789abcdef0123456789abcdef"}`}},
		status:  {inProgress, inProgress, {200, `{"status":{"id":"COMPLETED"},"operation":{"location":"/sp/savepoint-aaaaaa-0123456789ab"}}`}},
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	code, stdout, stderr := runCLI(t, srv, time.Minute, "savepoint", jobA, "/sp")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "Triggering savepoint for job "+jobA+".\nWaiting for response...\n"+
		"Savepoint completed. Path: /sp/savepoint-aaaaaa-0123456789ab\n"+
		"You can resume your program from this savepoint with the run command.\n", stdout)
	assert.Equal(t, []string{trigger + ` {"cancel-job":false,"target-directory":"/sp"}`, status, status, status}, f.requests())

	t.Run("no directory, extra arguments", func(t *testing.T) {
		f := &fakeJM{routes: map[string][]reply{
			trigger:                               {{202, `{"request-id":"t"}`}},
			"GET /jobs/" + jobA + "/savepoints/t": {{200, `{"status":{"id":"COMPLETED"},"operation":{"location":"/default/savepoint-aaaaaa-0123456789ab"}}`}},
		}}
		srv := httptest.NewServer(f)
		defer srv.Close()
		code, stdout, stderr := runCLI(t, srv, time.Minute, "savepoint", jobA)
		assert.Equal(t, 0, code, stderr)
		assert.Contains(t, stdout, "Savepoint completed. Path: /default/savepoint-aaaaaa-0123456789ab\n")
		assert.Equal(t, trigger+` {"cancel-job":false}`, f.requests()[0])

		code, stdout, _ = runCLI(t, srv, time.Minute, "savepoint", jobA, "/sp", "extra")
		assert.Equal(t, 0, code)
		assert.True(t, strings.HasPrefix(stdout, "Provided more arguments than required. Ignoring not needed arguments.\n"), stdout)
	})

	t.Run("client.timeout", func(t *testing.T) {
		f := &fakeJM{routes: map[string][]reply{trigger: {{202, `{"request-id":"t"}`}}, "GET /jobs/" + jobA + "/savepoints/t": {inProgress}}}
		srv := httptest.NewServer(f)
		defer srv.Close()
		code, _, stderr := runCLI(t, srv, 50*time.Millisecond, "savepoint", jobA)
		assert.Equal(t, 1, code)
		assert.True(t, strings.HasPrefix(stderr, banner+"Failed to trigger a savepoint for the job "+jobA+".\nCaused by: "), stderr)
		assert.Contains(t, stderr, "after 50ms (client.timeout)")
	})
}

// stop: POST /jobs/:jobid/stop with Flink's body, polled like a savepoint; -p's value is the
// directory, or the Job ID when no argument follows.
func TestStop(t *testing.T) {
	status := "GET /jobs/" + jobA + "/savepoints/t"
	done := reply{200, `{"status":{"id":"COMPLETED"},"operation":{"location":"/sp/savepoint-aaaaaa-0123456789ab"}}`}
	tests := []struct {
		args []string
		body string
	}{
		{[]string{"stop", "--savepointPath", "/sp", jobA}, `{"drain":false,"targetDirectory":"/sp"}`},
		{[]string{"stop", jobA, "-p", "/sp"}, `{"drain":false,"targetDirectory":"/sp"}`},
		{[]string{"stop", "-p", jobA}, `{"drain":false}`},
		{[]string{"stop", jobA}, `{"drain":false}`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			f := &fakeJM{routes: map[string][]reply{"POST /jobs/" + jobA + "/stop": {{202, `{"request-id":"t"}`}},
				status: {{200, `{"status":{"id":"IN_PROGRESS"}}`}, done}}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			code, stdout, stderr := runCLI(t, srv, time.Minute, tt.args...)
			assert.Equal(t, 0, code, stderr)
			assert.Equal(t, "Suspending job \""+jobA+"\" with a savepoint.\nSavepoint completed. Path: /sp/savepoint-aaaaaa-0123456789ab\n", stdout)
			assert.Equal(t, []string{"POST /jobs/" + jobA + "/stop " + tt.body, status, status}, f.requests())
		})
	}
}

// run POSTs the graph's JSON, prints the JobID as Flink does, and unless detached waits for
// the end.
func TestRun(t *testing.T) {
	file := "testdata/wordcount.json"
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	g, err := jobgraph.Decode(data)
	require.NoError(t, err)
	id := g.JobID.String()
	accepted := reply{202, `{"jobUrl":"/jobs/` + id + `"}`}

	t.Run("detached", func(t *testing.T) {
		f := &fakeJM{routes: map[string][]reply{"POST /jobs": {accepted}}}
		srv := httptest.NewServer(f)
		defer srv.Close()
		code, stdout, stderr := runCLI(t, srv, time.Minute, "run", "-m", srv.Listener.Addr().String(), "--detached", file)
		assert.Equal(t, 0, code, stderr)
		assert.Equal(t, "Job has been submitted with JobID "+id+"\n", stdout)
		got := f.requests()
		require.Len(t, got, 1)
		sent, err := jobgraph.Decode([]byte(strings.TrimPrefix(got[0], "POST /jobs ")))
		require.NoError(t, err)
		assert.Equal(t, g, sent)
	})

	t.Run("savepoint restore", func(t *testing.T) {
		f := &fakeJM{routes: map[string][]reply{"POST /jobs": {accepted}}}
		srv := httptest.NewServer(f)
		defer srv.Close()
		code, _, stderr := runCLI(t, srv, time.Minute, "run", "-d", "-s", "/sp/savepoint-aaaaaa-0123456789ab", "-n", file)
		assert.Equal(t, 0, code, stderr)
		sent, err := jobgraph.Decode([]byte(strings.TrimPrefix(f.requests()[0], "POST /jobs ")))
		require.NoError(t, err)
		assert.Equal(t, jobgraph.SavepointRestoreSettings{Path: "/sp/savepoint-aaaaaa-0123456789ab", AllowNonRestoredState: true}, sent.SavepointRestore)
	})

	t.Run("a graph without jobId gets one", func(t *testing.T) {
		noID := *g
		noID.JobID = jobgraph.JobID{}
		b, err := json.Marshal(&noID)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "g.json")
		require.NoError(t, os.WriteFile(path, b, 0o600))
		f := &fakeJM{routes: map[string][]reply{"POST /jobs": {{202, `{}`}}}}
		srv := httptest.NewServer(f)
		defer srv.Close()
		code, stdout, stderr := runCLI(t, srv, time.Minute, "run", "-d", path)
		assert.Equal(t, 0, code, stderr)
		sent, err := jobgraph.Decode([]byte(strings.TrimPrefix(f.requests()[0], "POST /jobs ")))
		require.NoError(t, err)
		assert.False(t, sent.JobID.IsZero())
		assert.Equal(t, "Job has been submitted with JobID "+sent.JobID.String()+"\n", stdout)
	})

	t.Run("attached, finished", func(t *testing.T) {
		f := &fakeJM{routes: map[string][]reply{"POST /jobs": {accepted},
			"GET /jobs/" + id: {{200, `{"state":"INITIALIZING","duration":1}`}, {200, `{"state":"RUNNING","duration":2}`}, {200, `{"state":"FINISHED","duration":1234}`}}}}
		srv := httptest.NewServer(f)
		defer srv.Close()
		code, stdout, stderr := runCLI(t, srv, time.Minute, "run", file)
		assert.Equal(t, 0, code, stderr)
		assert.Equal(t, "Job has been submitted with JobID "+id+"\nProgram execution finished\nJob with JobID "+id+" has finished.\nJob Runtime: 1234 ms\n", stdout)
		assert.Len(t, f.requests(), 4)
	})

	t.Run("attached, failed", func(t *testing.T) {
		f := &fakeJM{routes: map[string][]reply{"POST /jobs": {accepted},
			"GET /jobs/" + id:                 {{200, `{"state":"RUNNING"}`}, {200, `{"state":"FAILED","duration":10}`}},
			"GET /jobs/" + id + "/exceptions": {{200, `{"root-exception":"count words (1/2): boom\n","timestamp":1}`}}}}
		srv := httptest.NewServer(f)
		defer srv.Close()
		code, stdout, stderr := runCLI(t, srv, time.Minute, "run", file)
		assert.Equal(t, 1, code)
		assert.Equal(t, "Job has been submitted with JobID "+id+"\n", stdout)
		assert.Equal(t, banner+"Job execution failed: job "+id+" is FAILED.\nCaused by: count words (1/2): boom\n", stderr)
	})

	t.Run("attached, interrupted", func(t *testing.T) {
		f := &fakeJM{routes: map[string][]reply{"POST /jobs": {accepted}, "GET /jobs/" + id: {{200, `{"state":"RUNNING"}`}}}}
		// Interrupt once the CLI is waiting: it polled the job twice.
		polled := make(chan struct{})
		var once sync.Once
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.ServeHTTP(w, r)
			if len(f.requests()) >= 3 {
				once.Do(func() { close(polled) })
			}
		}))
		defer srv.Close()
		ctx, cancel := context.WithCancel(t.Context())
		var stdout, stderr bytes.Buffer
		c := &cli{stdout: &stdout, stderr: &stderr, loc: time.UTC, clientTimeout: time.Minute, pollInitial: time.Millisecond, pollMax: time.Millisecond}
		done := make(chan int)
		go func() { done <- c.run(ctx, []string{"run", "-m", srv.Listener.Addr().String(), file}) }()
		select {
		case <-polled:
		case code := <-done:
			t.Fatalf("run ended before it waited: %d: %s", code, stderr.String())
		}
		cancel()
		assert.Equal(t, 1, <-done)
		assert.Contains(t, stderr.String(), "Stopped waiting for job "+id+", which goes on.\n")
		for _, r := range f.requests() {
			assert.NotContains(t, r, "PATCH", "the job is left running")
		}
	})
}

// info prints the plan of GRAPH.json locally, in Flink's JsonPlanGenerator shape; an invalid
// graph is an error naming what is wrong.
func TestInfo(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, time.Minute, "info", "testdata/wordcount.json")
	require.Equal(t, 0, code, stderr)
	require.True(t, strings.HasPrefix(stdout, "----------------------- Execution Plan -----------------------\n"))
	require.True(t, strings.HasSuffix(stdout, "}\n"+dashes))
	body := strings.TrimSuffix(strings.TrimPrefix(stdout, "----------------------- Execution Plan -----------------------\n"), dashes)
	var p map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &p))
	want := map[string]any{"jid": "8ae3c1443d44142c861257df1fb2846c", "name": "wordcount", "type": "BATCH", "nodes": []any{
		map[string]any{"id": "bc764cd8ddf7a0cff126f51c16239658", "parallelism": 2.0, "operator": "", "operator_strategy": "",
			"description": "Source: read <files>", "optimizer_properties": map[string]any{}},
		map[string]any{"id": "20ba6b65f97481d5570070de90e4e791", "parallelism": 2.0, "operator": "", "operator_strategy": "",
			"description": "count words", "optimizer_properties": map[string]any{}, "inputs": []any{
				map[string]any{"num": 0.0, "id": "bc764cd8ddf7a0cff126f51c16239658", "ship_strategy": "HASH", "exchange": "blocking"}}},
		map[string]any{"id": "b5c8d46f3e7b141acf271f12622e752b", "parallelism": 1.0, "operator": "", "operator_strategy": "",
			"description": "Sink: print", "optimizer_properties": map[string]any{}, "inputs": []any{
				map[string]any{"num": 0.0, "id": "20ba6b65f97481d5570070de90e4e791", "ship_strategy": "REBALANCE", "exchange": "pipelined_bounded"}}},
	}}
	assert.Equal(t, want, p)

	t.Run("invalid", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bad.json")
		require.NoError(t, os.WriteFile(path, []byte(`{"jobId":"8ae3c1443d44142c861257df1fb2846c","name":"x","type":"STREAMING","vertices":[{"id":"bc764cd8ddf7a0cff126f51c16239658","name":"v","parallelism":0,"invokable":"i"}]}`), 0o600))
		code, stdout, stderr := runCLI(t, nil, time.Minute, "info", path)
		assert.Equal(t, 1, code)
		assert.Empty(t, stdout)
		assert.Equal(t, banner+path+": invalid job graph: parallelism: vertex \"v\" (bc764cd8ddf7a0cff126f51c16239658): parallelism 0 is below 1\n", stderr)
	})
	t.Run("malformed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bad.json")
		require.NoError(t, os.WriteFile(path, []byte(`{"name":"x","nmae":"y"}`), 0o600))
		code, _, stderr := runCLI(t, nil, time.Minute, "info", path)
		assert.Equal(t, 1, code)
		assert.Equal(t, banner+path+": jobgraph: decode: json: unknown field \"nmae\"\n", stderr)
	})
}

// Help: no action is exit 1 with the overview; -h alone or after an action is exit 0.
func TestHelp(t *testing.T) {
	code, stdout, _ := runCLI(t, nil, time.Minute)
	assert.Equal(t, 1, code)
	assert.True(t, strings.HasPrefix(stdout, "jobgraph <ACTION> [OPTIONS] [ARGUMENTS]\n"), stdout)
	assert.True(t, strings.HasSuffix(stdout, "Please specify an action.\n"), stdout)
	for _, a := range actions {
		assert.Contains(t, stdout, "\nAction \""+a.name+"\" ")
	}

	code, stdout, _ = runCLI(t, nil, time.Minute, "--help")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stdout, "jobgraph <ACTION> [OPTIONS] [ARGUMENTS]\n"), stdout)

	code, stdout, _ = runCLI(t, nil, time.Minute, "list", "-h")
	assert.Equal(t, 0, code)
	assert.Equal(t, `
Action "list" lists running and scheduled jobs.

  Syntax: list [OPTIONS]
  "list" action options:
     -h,--help                     Show the help message for the CLI Frontend or the action.
     -r,--running                  Show only running programs and their JobIDs
     -s,--scheduled                Show only scheduled programs and their JobIDs
     -a,--all                      Show all programs and their JobIDs
     -m,--jobmanager <host:port>   Address of the JobManager's REST endpoint to which to connect (default localhost:8081).
        --tls-ca <file>            PEM CA certificates that sign the REST endpoint's TLS certificate (security.ssl.rest.*); connects over https.
        --tls-cert <file>          PEM client certificate, for an endpoint that authenticates its clients (with --tls-key).
        --tls-key <file>           PEM key of --tls-cert.
`, stdout)
}

// --tls-ca makes the CLI speak https and trust the endpoint's CA; without it a TLS endpoint is
// not reached.
func TestTLS(t *testing.T) {
	f := &fakeJM{routes: map[string][]reply{"GET /jobs/overview": {overview()}}}
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake of the plain-http attempt fails
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))

	code, stdout, stderr := runCLI(t, srv, time.Minute, "list", "--tls-ca", ca)
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "Waiting for response...\nNo running jobs.\nNo scheduled jobs.\n", stdout)

	code, _, stderr = runCLI(t, srv, time.Minute, "list")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "Caused by: GET /jobs/overview: 400 Bad Request: Client sent an HTTP request to an HTTPS server.")

	code, _, stderr = runCLI(t, srv, time.Minute, "list", "--tls-ca", filepath.Join(t.TempDir(), "none.pem"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--tls-ca: open ")

	code, _, stderr = runCLI(t, srv, time.Minute, "list", "--tls-ca", "testdata/wordcount.json")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--tls-ca testdata/wordcount.json: no PEM certificate in it")

	code, _, stderr = runCLI(t, srv, time.Minute, "list", "--tls-cert", ca)
	assert.Equal(t, 1, code)
	assert.Equal(t, "--tls-cert and --tls-key go together\n\nUse the help option (-h or --help) to get help on the command.\n", stderr)
}
