package rest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/rest/web"
	"github.com/jobgraph/jobgraph/rpc"
)

// Dispatcher is what the Handler needs of the Dispatcher: the jobgraph Dispatcher's public
// methods. dispatcher.Dispatcher (and so *dispatcher.StandaloneDispatcher and *dispatcher.Runner)
// and *minicluster.MiniCluster satisfy it. The Handler calls them from request goroutines, with
// the request's context, and never holds a lock meanwhile. Errors are told apart by the error
// codes their sentinels registered (jobgraph.ErrorCodes: "dispatcher.job-not-found",
// "dispatcher.duplicate-job-submission", …), so this package does not import the dispatcher.
// Flink: RestfulGateway / DispatcherGateway as the REST handlers see it.
type Dispatcher interface {
	SubmitJob(ctx context.Context, g *jobgraph.JobGraph) error
	CancelJob(ctx context.Context, id jobgraph.JobID) error
	RequestJobStatus(ctx context.Context, id jobgraph.JobID) (jobgraph.JobStatus, error)
	RequestJob(ctx context.Context, id jobgraph.JobID) (*executiongraph.ArchivedExecutionGraph, error)
	RequestJobResult(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error)
	ListJobs(ctx context.Context) ([]rpc.JobStatusMessage, error)
	TriggerSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (string, error)
	StopWithSavepoint(ctx context.Context, id jobgraph.JobID, targetDirectory string) (string, error)
}

// Cluster is what the Handler needs of the ResourceManager for /overview and /taskmanagers: the
// registered TaskExecutors with their slots. *resourcemanager.ResourceManager and
// *minicluster.MiniCluster satisfy it. Flink: ResourceManagerGateway.requestTaskManagerInfo and
// requestResourceOverview.
type Cluster interface {
	RequestTaskManagerInfo(ctx context.Context) ([]rpc.TaskManagerInfo, error)
}

// Config configures a Handler (New) and the server around it (Start). Zero values take the
// defaults named.
type Config struct {
	// Dispatcher answers every job request. Required.
	Dispatcher Dispatcher
	// Cluster answers /taskmanagers and the TaskExecutor and slot figures of /overview; nil
	// means a cluster without TaskExecutors (empty list, zeros).
	Cluster Cluster
	// Metrics answers /jobs/:jobid/metrics; nil answers an empty list.
	Metrics MetricSource

	// MaxContentLength: rest.server.max-content-length, default 100 MiB
	// (DefaultMaxContentLength). A request body longer than this is refused with 413 before more
	// than this much of it was read.
	MaxContentLength int64
	// Timeout: web.timeout, default 10 min (DefaultTimeout): how long a request waits for the
	// Dispatcher or the cluster before it answers 504.
	Timeout time.Duration
	// AsyncOperationStoreDuration: rest.async.store-duration, default 5 min: how long the result
	// of a completed savepoint or stop operation stays readable.
	AsyncOperationStoreDuration time.Duration
	// RefreshInterval: web.refresh-interval, default 3 s, as /config tells the dashboard.
	RefreshInterval time.Duration
	// AccessControlAllowOrigin: web.access-control-allow-origin. Empty (the default) sends no
	// CORS header; otherwise every answer carries Access-Control-Allow-Origin with this value.
	// Flink's default is "*".
	AccessControlAllowOrigin string
	// Authenticate, if set, runs on every request before anything else; an error answers 401
	// with {"errors": [err.Error()]} and the request goes no further. It runs on the request's
	// goroutine, concurrently with other requests. Flink has no such hook (it relies on SSL
	// client authentication, security.ssl.rest.authentication-enabled); a host plugs in its own
	// (a bearer token, say).
	Authenticate func(*http.Request) error
	// Dashboard serves GET / and /web/...; nil means package rest/web's dashboard. Set
	// NoDashboard to serve none (404).
	Dashboard   http.Handler
	NoDashboard bool
	// Version is what /config and /overview report as flink-version; default "jobgraph".
	Version string
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	// BindAddress: rest.bind-address, default 127.0.0.1 (Start only).
	BindAddress string
	// Port: rest.port, default 8081 (DefaultPort; 0 means the default). AnyPort (-1) listens on
	// a free port, as Flink's rest.bind-port 0 does (Start only).
	Port int
	// TLS, if set, serves HTTPS with it (Start only): Flink's security.ssl.rest.enabled with
	// the key and trust material of security.ssl.rest.keystore / truststore, given as a
	// *tls.Config (ClientAuth for security.ssl.rest.authentication-enabled).
	TLS *tls.Config
}

// Defaults of Config.
const (
	DefaultMaxContentLength            = 100 << 20
	DefaultTimeout                     = 10 * time.Minute
	DefaultAsyncOperationStoreDuration = 5 * time.Minute
	DefaultRefreshInterval             = 3 * time.Second
	DefaultBindAddress                 = "127.0.0.1"
	DefaultPort                        = 8081
	// AnyPort as Config.Port listens on a free port.
	AnyPort = -1
)

// ErrInvalidConfig is matched by New's and Start's error for a Config they refuse; the message
// names the field.
var ErrInvalidConfig = errors.New("rest: invalid configuration")

// Handler serves Flink's REST API v1 over a Dispatcher; see the package doc for the endpoints.
// Create it with New; Close it once done (it owns the goroutines of savepoint and stop
// operations). Safe for concurrent use.
type Handler struct {
	cfg       Config
	log       *slog.Logger
	dashboard http.Handler

	ops    *operations
	graphs graphs

	overviewMu sync.Mutex
	overview   map[overviewKey][]byte // the encoded details of globally terminated jobs, which no longer change
}

// New returns a Handler. Errors: ErrInvalidConfig for a missing Dispatcher or a negative limit.
func New(cfg Config) (*Handler, error) {
	switch {
	case cfg.Dispatcher == nil:
		return nil, fmt.Errorf("%w: Config.Dispatcher is required", ErrInvalidConfig)
	case cfg.MaxContentLength < 0:
		return nil, fmt.Errorf("%w: rest.server.max-content-length (Config.MaxContentLength) %d is negative", ErrInvalidConfig, cfg.MaxContentLength)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("%w: web.timeout (Config.Timeout) %v is negative", ErrInvalidConfig, cfg.Timeout)
	case cfg.AsyncOperationStoreDuration < 0:
		return nil, fmt.Errorf("%w: rest.async.store-duration (Config.AsyncOperationStoreDuration) %v is negative", ErrInvalidConfig, cfg.AsyncOperationStoreDuration)
	case cfg.RefreshInterval < 0:
		return nil, fmt.Errorf("%w: web.refresh-interval (Config.RefreshInterval) %v is negative", ErrInvalidConfig, cfg.RefreshInterval)
	}
	if cfg.MaxContentLength == 0 {
		cfg.MaxContentLength = DefaultMaxContentLength
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.AsyncOperationStoreDuration == 0 {
		cfg.AsyncOperationStoreDuration = DefaultAsyncOperationStoreDuration
	}
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = DefaultRefreshInterval
	}
	if cfg.Version == "" {
		cfg.Version = "jobgraph"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &Handler{cfg: cfg, log: cfg.Logger.With("component", "rest"), overview: map[overviewKey][]byte{}}
	h.ops = newOperations(cfg.AsyncOperationStoreDuration)
	switch {
	case cfg.NoDashboard:
	case cfg.Dashboard != nil:
		h.dashboard = cfg.Dashboard
	default:
		h.dashboard = web.Handler()
	}
	return h, nil
}

// Close cancels the context of every savepoint and stop operation still running (the savepoint
// itself carries on in its JobMaster, as the Dispatcher's TriggerSavepoint says) and waits for
// their goroutines; requests arriving afterwards that would start one answer 503. It does not
// close the Dispatcher. Safe to call more than once.
func (h *Handler) Close() error {
	h.ops.close()
	return nil
}

// route is one endpoint: a method and a path pattern whose ":name" segments are parameters.
type route struct {
	method  string
	pattern []string
	serve   func(h *Handler, w http.ResponseWriter, r *http.Request, p params)
}

// params are a matched route's path parameters.
type params map[string]string

var routes = []route{
	{http.MethodGet, split("/config"), (*Handler).getConfig},
	{http.MethodGet, split("/overview"), (*Handler).getOverview},
	{http.MethodGet, split("/jobs"), (*Handler).getJobs},
	{http.MethodPost, split("/jobs"), (*Handler).postJobs},
	{http.MethodGet, split("/jobs/overview"), (*Handler).getJobsOverview},
	{http.MethodGet, split("/jobs/:jobid"), (*Handler).getJob},
	{http.MethodPatch, split("/jobs/:jobid"), (*Handler).patchJob},
	{http.MethodGet, split("/jobs/:jobid/status"), (*Handler).getJobStatus},
	{http.MethodGet, split("/jobs/:jobid/plan"), (*Handler).getJobPlan},
	{http.MethodGet, split("/jobs/:jobid/exceptions"), (*Handler).getJobExceptions},
	{http.MethodGet, split("/jobs/:jobid/accumulators"), (*Handler).getJobAccumulators},
	{http.MethodGet, split("/jobs/:jobid/vertices/:vertexid"), (*Handler).getJobVertex},
	{http.MethodGet, split("/jobs/:jobid/checkpoints"), (*Handler).getCheckpoints},
	{http.MethodGet, split("/jobs/:jobid/checkpoints/config"), (*Handler).getCheckpointConfig},
	{http.MethodGet, split("/jobs/:jobid/checkpoints/details/:checkpointid"), (*Handler).getCheckpointDetails},
	{http.MethodGet, split("/jobs/:jobid/metrics"), (*Handler).getJobMetrics},
	{http.MethodPost, split("/jobs/:jobid/savepoints"), (*Handler).postSavepoint},
	{http.MethodGet, split("/jobs/:jobid/savepoints/:triggerid"), (*Handler).getSavepoint},
	{http.MethodPost, split("/jobs/:jobid/stop"), (*Handler).postStop},
	{http.MethodGet, split("/taskmanagers"), (*Handler).getTaskManagers},
	{http.MethodGet, split("/taskmanagers/:taskmanagerid"), (*Handler).getTaskManager},
}

func split(path string) []string { return strings.Split(strings.Trim(path, "/"), "/") }

// match matches the segments of a path against a pattern; literal segments win over parameters
// by the order of routes (/jobs/overview is listed before /jobs/:jobid).
func match(pattern, segs []string) (params, bool) {
	if len(pattern) != len(segs) {
		return nil, false
	}
	var p params
	for i, s := range pattern {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			if segs[i] == "" {
				return nil, false
			}
			if p == nil {
				p = params{}
			}
			p[name] = segs[i]
			continue
		}
		if s != segs[i] {
			return nil, false
		}
	}
	return p, true
}

// ServeHTTP authenticates the request, then routes it: the REST paths at the root and below
// /v1, the dashboard at / and /web/, 404 or 405 with Flink's error body otherwise.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = r.WithContext(context.WithValue(r.Context(), arrivalKey{}, h.graphs.arrival()))
	if o := h.cfg.AccessControlAllowOrigin; o != "" {
		w.Header().Set("Access-Control-Allow-Origin", o)
	}
	if h.cfg.Authenticate != nil {
		if err := h.cfg.Authenticate(r); err != nil {
			writeError(w, http.StatusUnauthorized, err.Error())
			return
		}
	}
	path := r.URL.Path
	if rest, ok := strings.CutPrefix(path, "/v1"); ok && (rest == "" || rest[0] == '/') {
		path = rest
	} else if h.dashboard != nil && (path == "/" || strings.HasPrefix(path, "/web/")) {
		h.dashboard.ServeHTTP(w, r)
		return
	}
	segs := split(path)
	var allowed []string
	for _, rt := range routes {
		p, ok := match(rt.pattern, segs)
		if !ok {
			continue
		}
		if rt.method == r.Method || (rt.method == http.MethodGet && r.Method == http.MethodHead) {
			for k, v := range p {
				if u, err := url.PathUnescape(v); err == nil {
					p[k] = u
				}
			}
			rt.serve(h, w, r, p)
			return
		}
		allowed = append(allowed, rt.method)
	}
	if len(allowed) > 0 {
		slices.Sort(allowed)
		w.Header().Set("Allow", strings.Join(slices.Compact(allowed), ", "))
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("Request method %s is not allowed for %s (allowed: %s).", r.Method, r.URL.Path, strings.Join(allowed, ", ")))
		return
	}
	writeError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
}

// ctx is the request's context bounded by web.timeout.
func (h *Handler) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), h.cfg.Timeout)
}

// errorBody is Flink's ErrorResponseBody.
type errorBody struct {
	Errors []string `json:"errors"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Errors: []string{msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status, data = http.StatusInternalServerError, []byte(`{"errors":["encoding the answer: `+jsonEscape(err.Error())+`"]}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// Error codes (jobgraph.ErrorCodes) the Handler turns into HTTP statuses.
const (
	codeJobNotFound        = "dispatcher.job-not-found"
	codeDuplicate          = "dispatcher.duplicate-job-submission"
	codeAlreadyTerminated  = "dispatcher.job-already-terminated"
	codeDispatcherClosed   = "dispatcher.closed"
	codeNotLeader          = "ha.not-leader"
	codeMiniClusterClosed  = "minicluster.closed"
	codeMiniClusterNoStart = "minicluster.not-started"
	codeRPCClosed          = "rpc.closed"
)

// statusOf is the HTTP status of an error the Dispatcher or the cluster answered.
func statusOf(err error) int {
	switch {
	case errors.Is(err, jobgraph.ErrInvalidJobGraph):
		return http.StatusBadRequest
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	codes := jobgraph.ErrorCodes(err)
	has := func(c string) bool { return slices.Contains(codes, c) }
	switch {
	case has(codeJobNotFound):
		return http.StatusNotFound
	case has(codeDuplicate), has(codeAlreadyTerminated):
		return http.StatusConflict
	case has(codeNotLeader), has(codeDispatcherClosed), has(codeMiniClusterClosed), has(codeMiniClusterNoStart), has(codeRPCClosed):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// fail answers err with its status.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	if status == http.StatusInternalServerError {
		h.log.Warn("REST request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	writeError(w, status, err.Error())
}

// jobID parses the :jobid parameter, answering 400 for a malformed one.
func jobID(w http.ResponseWriter, p params) (jobgraph.JobID, bool) {
	id, err := jobgraph.ParseJobID(p["jobid"])
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: job ID %q: %v", p["jobid"], err))
		return id, false
	}
	return id, true
}

// job answers the job's archived graph, or writes the error and returns nil.
func (h *Handler) job(w http.ResponseWriter, r *http.Request, p params) *executiongraph.ArchivedExecutionGraph {
	id, ok := jobID(w, p)
	if !ok {
		return nil
	}
	ctx, cancel := h.ctx(r)
	defer cancel()
	a, err := h.requestJob(ctx, r, id)
	if err != nil {
		h.fail(w, r, err)
		return nil
	}
	return a
}

// arrivalKey is the context key of a request's arrival (graphs.arrival).
type arrivalKey struct{}

// requestJob asks the Dispatcher for the job's graph, joining a call in flight that started
// after r arrived (see graphs).
func (h *Handler) requestJob(ctx context.Context, r *http.Request, id jobgraph.JobID) (*executiongraph.ArchivedExecutionGraph, error) {
	arrived, _ := r.Context().Value(arrivalKey{}).(uint64)
	return h.graphs.request(ctx, h.cfg.Dispatcher, id, arrived)
}

// millis is t in Unix milliseconds, or -1 for the zero time.
func millis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}
