// Package rest is the JobManager seen from outside: an http.Handler over a Dispatcher (and the
// cluster's ResourceManager, for TaskExecutors and slots) that serves Flink's REST API v1 — the
// paths, query parameters, status codes and JSON field names of apache/flink's
// docs/static/generated/rest_v1_dispatcher.yml — and the live dashboard of package rest/web.
// Flink: DispatcherRestEndpoint with its handlers (JobsOverviewHandler, JobDetailsHandler,
// JobSubmitHandler, SavepointHandlers, …).
//
//	h, err := rest.New(rest.Config{Dispatcher: mc, Cluster: mc, Metrics: mc.Metrics()})
//	if err != nil {
//		return err
//	}
//	defer h.Close()
//	http.Handle("/", h) // or rest.Start(cfg) to listen on rest.bind-address:rest.port
//
// Without Metrics, /jobs/:jobid/metrics answers an empty list: pass the registry the cluster
// reports to (MiniCluster.Metrics, or the one given as minicluster.Config.Metrics).
//
// # Endpoints
//
// Every path is served at the root and again below "/v1", as Flink serves them:
//
//	GET   /config                                      DashboardConfiguration
//	GET   /overview                                    ClusterOverviewWithVersion
//	GET   /jobs                                        JobIdsWithStatusOverview
//	POST  /jobs                                        submit a JobGraph (see below): 202 JobSubmitResponseBody
//	GET   /jobs/overview                               MultipleJobsDetails
//	GET   /jobs/:jobid                                 JobDetailsInfo
//	PATCH /jobs/:jobid?mode=cancel                     cancel: 202
//	GET   /jobs/:jobid/status                          JobStatusInfo
//	GET   /jobs/:jobid/plan                            JobPlanInfo
//	GET   /jobs/:jobid/exceptions[?maxExceptions=n]    JobExceptionsInfoWithHistory
//	GET   /jobs/:jobid/accumulators                    JobAccumulatorsInfo
//	GET   /jobs/:jobid/vertices/:vertexid              JobVertexDetailsInfo
//	GET   /jobs/:jobid/checkpoints                     CheckpointingStatistics
//	GET   /jobs/:jobid/checkpoints/config              CheckpointConfigInfo
//	GET   /jobs/:jobid/checkpoints/details/:checkpointid  CheckpointStatistics
//	GET   /jobs/:jobid/metrics[?get=a,b]               metrics of the job's scope
//	POST  /jobs/:jobid/savepoints                      trigger a savepoint: 202 TriggerResponse
//	GET   /jobs/:jobid/savepoints/:triggerid           AsynchronousOperationResult
//	POST  /jobs/:jobid/stop                            stop with a savepoint: 202 TriggerResponse
//	GET   /taskmanagers                                TaskManagersInfo
//	GET   /taskmanagers/:taskmanagerid                 TaskManagerDetailsInfo
//	GET   /  and  /web/...                             the dashboard (package rest/web)
//
// Only POST and PATCH change anything. Times are Unix milliseconds, -1 where Flink writes -1
// (an end time of a job still running, a start of a subtask never deployed).
//
// # Errors
//
// An error answers Flink's ErrorResponseBody, {"errors": ["…"]}, with Flink's status: 400 for a
// bad request (a malformed ID, body or query parameter; the message names what is wrong), 401
// when Config.Authenticate refuses the request, 404 for an unknown path, job, vertex, checkpoint,
// trigger or TaskExecutor, 405 for a method the path does not take (with an Allow header), 409
// for a submission whose JobID is taken and a cancel of a job that ended otherwise, 413 for a
// body past rest.server.max-content-length, 503 while the Dispatcher does not lead or is closed,
// 504 when web.timeout passed, 500 otherwise. A rejected request changes nothing: a refused
// submission leaves the job running under that ID as it was.
//
// # Submitting a job
//
// POST /jobs takes a JobGraph in this library's JSON form (jobgraph.Decode: the encoding/json
// form of jobgraph.JobGraph, with task code named by Invokable), as the request body with any
// content type. Flink's JobSubmitHandler takes a multipart form instead, whose "request" part
// names a file part holding a Java-serialized JobGraph and the jars to ship with it; there is no
// jar and no Java serialization here, the task code is already registered on the TaskExecutors.
// A graph without a JobID gets a fresh one. It answers 202 with {"jobUrl": "/jobs/<jobid>"} once
// the Dispatcher accepted the job (persisted and started it).
//
// # Asynchronous operations
//
// A savepoint (POST /jobs/:jobid/savepoints, body SavepointTriggerRequestBody:
// "target-directory", "cancel-job", "triggerId") and a stop-with-savepoint (POST
// /jobs/:jobid/stop, body StopWithSavepointRequestBody: "targetDirectory", "drain",
// "triggerId") answer 202 {"request-id": "<32 hex digits>"} at once and run on a goroutine the
// Handler owns. GET /jobs/:jobid/savepoints/:triggerid answers {"status": {"id": "IN_PROGRESS"}}
// until it ended, then {"status": {"id": "COMPLETED"}, "operation": {"location": "<path>"}} or
// {"status": {"id": "COMPLETED"}, "operation": {"failure-cause": {"class": …, "stack-trace":
// "<the error's text>"}}}, for rest.async.store-duration after it completed (Flink's
// CompletedOperationCache). A triggerId the client gives makes the trigger idempotent: the same
// ID again answers the same operation and starts nothing. Handler.Close cancels the operations'
// contexts and waits for their goroutines.
//
// # Where we differ from Flink
//
// No CORS header unless Config.AccessControlAllowOrigin is set (Flink's
// web.access-control-allow-origin defaults to "*"). A failure-cause carries the Go error's text
// and its first registered error code (jobgraph.ErrorCodes) as "class", not a serialized Java
// throwable. Go errors have no class and no stack trace: an exception history entry's
// exceptionName and stacktrace both carry the error's text. The JSON plan has no operator
// description or optimizer properties beyond the vertex name; an edge's ship_strategy is the
// JobEdge's ShipStrategy, or FORWARD (POINTWISE) / REBALANCE (ALL_TO_ALL) when the graph named
// none. IO metrics (read-bytes, write-records, …) are 0 with their *-complete flags false: the
// archive does not carry them. stop's "drain" (MAX_WATERMARK before the savepoint) is refused:
// there are no watermarks. PATCH mode=stop is refused as Flink 1.15+ refuses it.
//
// # Concurrency
//
// A Handler is safe for concurrent use. It calls the Dispatcher and the Cluster only through
// their public methods (which post to their main loops and wait for the answer there), with the
// request's context bounded by web.timeout, so a request never runs on and never blocks a main
// loop; a request that waits holds up only its own goroutine.
package rest
