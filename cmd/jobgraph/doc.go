// Command jobgraph is a command line client of a jobgraph cluster's REST endpoint (package rest,
// Flink's REST API v1) with the actions, options and output of Apache Flink's `flink` command
// (CliFrontend, CliFrontendParser):
//
//	jobgraph list [-r|--running] [-s|--scheduled] [-a|--all] [-m host:port]
//	jobgraph run [-d|--detached] [-s|--fromSavepoint DIR] [-n|--allowNonRestoredState] [-m host:port] GRAPH.json
//	jobgraph info GRAPH.json
//	jobgraph cancel [-m host:port] JOBID
//	jobgraph savepoint [-m host:port] JOBID [DIR]
//	jobgraph stop [-p|--savepointPath [DIR]] [-m host:port] JOBID
//
// -m/--jobmanager names the endpoint as host:port (Flink's rest.address and rest.port; default
// localhost:8081; a missing port is 8081; http:// or https:// may lead). Options may come before
// or after the arguments, as Flink's parser allows ("-m h:p", "-mh:p", "--jobmanager h:p",
// "--jobmanager=h:p"); -h/--help prints an action's help.
//
// What each action does, with the REST calls it makes:
//
//   - list: GET /jobs/overview. Prints "Waiting for response...", then Flink's sections: the
//     running jobs (every state not CREATED, INITIALIZING or globally terminal: RUNNING,
//     RESTARTING, SUSPENDED…) under "------------------ Running/Restarting Jobs
//     -------------------", the CREATED and INITIALIZING ones under "-----------------------
//     Scheduled Jobs -----------------------", with -a the FINISHED, CANCELED and FAILED ones
//     under "---------------------- Terminated Jobs -----------------------", each section closed
//     by a line of 62 dashes, one line per job "dd.MM.yyyy HH:mm:ss : <jobid> : <name> (<STATE>)"
//     with its start time in the local time zone (TZ), ordered by start time; an empty running
//     or scheduled section is "No running jobs." or "No scheduled jobs.". Without -r, -s or -a it
//     shows running and scheduled jobs, as Flink does.
//   - run: POST /jobs with the graph's JSON (this library's JobGraph JSON, jobgraph.Decode's
//     form; Flink's client sends a multipart form with a Java-serialized JobGraph and jars), then
//     prints "Job has been submitted with JobID <id>". A graph without "jobId" is given a random
//     one. -s/--fromSavepoint and -n/--allowNonRestoredState set the graph's savepointRestore.
//     Without -d/--detached it then polls GET /jobs/:jobid until the job ends: FINISHED prints
//     Flink's "Program execution finished", "Job with JobID <id> has finished." and "Job Runtime:
//     <ms> ms"; FAILED or CANCELED is an error with the job's root exception
//     (GET /jobs/:jobid/exceptions). An interrupt (SIGINT, SIGTERM) stops the wait and leaves the
//     job running, as Flink's attached client without -sae does.
//   - info: reads and validates GRAPH.json and prints its plan between Flink's "Execution Plan"
//     lines, locally (no endpoint is asked). Where Flink's info runs a jar's main method and
//     prints the StreamGraph's JSON (one node per operator), a GRAPH.json already is a JobGraph:
//     its plan is Flink's JsonPlanGenerator shape, the JSON GET /jobs/:jobid/plan serves once it
//     runs (one node per vertex in topological order: id, parallelism, the vertex name as
//     description, inputs with ship_strategy and exchange).
//   - cancel: PATCH /jobs/:jobid?mode=cancel; prints "Cancelling job <id>." and "Cancelled job
//     <id>.".
//   - savepoint: POST /jobs/:jobid/savepoints ("target-directory" DIR, else the cluster's
//     execution.checkpointing.savepoint-dir, Flink 1's state.savepoints.dir), then polls
//     GET /jobs/:jobid/savepoints/:triggerid (10 ms doubling to 2 s, as Flink's
//     RestClusterClient) until COMPLETED; prints "Savepoint completed. Path: <path>". A
//     failure-cause is an error with its text.
//   - stop: POST /jobs/:jobid/stop ("targetDirectory" from -p/--savepointPath), polled as
//     savepoint; prints "Savepoint completed. Path: <path>". As in Flink, "stop -p JOBID" takes
//     the value of -p as the Job ID and the default directory.
//
// Exit code 0 when the action succeeded, 1 on any error: a wrong command line (the message, then
// a pointer to -h), an unreachable endpoint, an error answer (the HTTP status and the "errors"
// array of Flink's ErrorResponseBody), a failed savepoint or job, a savepoint still in progress
// after client.timeout (60 s; each request has the same bound). Errors go to stderr under
// Flink's "The program finished with the following exception:" banner: Flink's message for the
// action ("Could not cancel job <id>."), then "Caused by: " and the cause.
//
// TLS (the endpoint's security.ssl.rest.*): --tls-ca FILE trusts the PEM CA certificates in FILE
// and connects over https; --tls-cert FILE and --tls-key FILE present a client certificate to an
// endpoint that authenticates its clients (security.ssl.rest.authentication-enabled). An
// https:// address without --tls-ca uses the system's roots.
//
// Where it differs from Flink's CLI: run takes a GRAPH.json and no jar, class or program
// arguments (-c, -C, -p, -py… are unknown options); there is no run-application, checkpoint or
// savepoint -d/--dispose (the REST endpoint serves none of them), no cancel -s/--withSavepoint
// (deprecated in Flink; use stop), no stop -d/--drain (stop-with-savepoint never drains here),
// and no savepoint or stop -detached/-type: savepoints are JSON metadata in Flink's directory
// layout (package checkpoint). Options come only from the command line: no Flink configuration
// file and no -D.
package main
