package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jobgraph/jobgraph"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const (
	// defaultPort is Flink's rest.port default.
	defaultPort = "8081"
	// defaultJobManager is where the CLI connects without -m: Flink's rest.address (localhost in
	// the client's default configuration) and rest.port.
	defaultJobManager = "localhost:" + defaultPort
	// defaultClientTimeout is Flink's client.timeout: how long one request, and a savepoint's
	// wait for its result, may take.
	defaultClientTimeout = 60 * time.Second
)

// run runs the command line args (the action first, then its options and arguments) and returns
// the exit code: 0 when the action succeeded, 1 on any error (a wrong command line, an
// unreachable JobManager, an error answer, whose "errors" it prints, a failed savepoint or job).
// Output goes to stdout, errors to stderr. ctx ends the wait of run and savepoint early (an
// interrupted wait is an error; the job is left as it is, as Flink's client leaves it).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr, loc: time.Local, clientTimeout: defaultClientTimeout,
		pollInitial: 10 * time.Millisecond, pollMax: 2 * time.Second}
	return c.run(ctx, args)
}

// cli is one run of the command, with what tests change.
type cli struct {
	stdout, stderr       io.Writer
	transport            http.RoundTripper // nil: a transport of the run's own
	loc                  *time.Location    // list's start times (Flink: the JVM's default time zone)
	clientTimeout        time.Duration
	pollInitial, pollMax time.Duration
}

// action is one of Flink's CLI actions.
type action struct {
	name, syntax, purpose string
	opts                  []option // besides the general ones
	stopAtNonOption       bool     // options end at the first argument (run, info)
	remote                bool     // talks to the JobManager
	do                    func(c *cli, ctx context.Context, p parsed, cl *client) error
}

var (
	helpOption = option{short: "h", long: "help", help: "Show the help message for the CLI Frontend or the action."}
	jmOption   = option{short: "m", long: "jobmanager", arg: "host:port",
		help: "Address of the JobManager's REST endpoint to which to connect (default " + defaultJobManager + ")."}
	tlsOptions = []option{
		{long: "tls-ca", arg: "file", help: "PEM CA certificates that sign the REST endpoint's TLS certificate (security.ssl.rest.*); connects over https."},
		{long: "tls-cert", arg: "file", help: "PEM client certificate, for an endpoint that authenticates its clients (with --tls-key)."},
		{long: "tls-key", arg: "file", help: "PEM key of --tls-cert."},
	}
)

var actions = []action{
	{name: "run", syntax: "run [OPTIONS] <GRAPH.json>", purpose: "submits a job graph (this library's JobGraph JSON) and, unless detached, waits for its end.",
		opts: []option{
			{short: "d", long: "detached", help: "If present, runs the job in detached mode: returns once it was submitted."},
			{short: "s", long: "fromSavepoint", arg: "savepointPath", help: "Path to a savepoint to restore the job from (execution.savepoint.path)."},
			{short: "n", long: "allowNonRestoredState", help: "Allow to skip savepoint state that cannot be restored (execution.savepoint.ignore-unclaimed-state)."},
		}, stopAtNonOption: true, remote: true, do: (*cli).runJob},
	{name: "info", syntax: "info [OPTIONS] <GRAPH.json>", purpose: "shows the plan of a job graph (JSON), as GET /jobs/:jobid/plan would serve it.",
		stopAtNonOption: true, do: (*cli).info},
	{name: "list", syntax: "list [OPTIONS]", purpose: "lists running and scheduled jobs.",
		opts: []option{
			{short: "r", long: "running", help: "Show only running programs and their JobIDs"},
			{short: "s", long: "scheduled", help: "Show only scheduled programs and their JobIDs"},
			{short: "a", long: "all", help: "Show all programs and their JobIDs"},
		}, remote: true, do: (*cli).list},
	{name: "stop", syntax: "stop [OPTIONS] <Job ID>", purpose: "stops a running job with a savepoint (streaming jobs only).",
		opts: []option{
			{short: "p", long: "savepointPath", arg: "savepointPath", optionalArg: true,
				help: "Path to the savepoint's directory. If no directory is specified, the configured default will be used (execution.checkpointing.savepoint-dir)."},
		}, remote: true, do: (*cli).stop},
	{name: "cancel", syntax: "cancel [OPTIONS] <Job ID>", purpose: "cancels a running job.", remote: true, do: (*cli).cancel},
	{name: "savepoint", syntax: "savepoint [OPTIONS] <Job ID> [<target directory>]", purpose: "triggers a savepoint for a running job.",
		remote: true, do: (*cli).savepoint},
}

func findAction(name string) *action {
	for i := range actions {
		if actions[i].name == name {
			return &actions[i]
		}
	}
	return nil
}

func (a *action) options() []option {
	opts := append([]option{helpOption}, a.opts...)
	return append(append(opts, jmOption), tlsOptions...)
}

func (c *cli) run(ctx context.Context, args []string) int {
	if len(args) < 1 {
		c.printHelp()
		fmt.Fprintln(c.stdout, "Please specify an action.")
		return 1
	}
	switch args[0] {
	case "-h", "--help":
		c.printHelp()
		return 0
	}
	a := findAction(args[0])
	if a == nil {
		fmt.Fprintf(c.stderr, "%q is not a valid action.\n\n", args[0])
		fmt.Fprintln(c.stderr, "Valid actions are \"run\", \"info\", \"list\", \"stop\", \"cancel\" or \"savepoint\".")
		fmt.Fprintln(c.stderr, "\nSpecify the help option (-h or --help) to get help on the command.")
		return 1
	}
	p, err := parseOptions(a.options(), args[1:], a.stopAtNonOption)
	if err == nil && p.has("help") {
		c.printActionHelp(a)
		return 0
	}
	var cl *client
	if err == nil && a.remote {
		var closeIdle func()
		cl, closeIdle, err = c.newClient(p)
		if closeIdle != nil {
			defer closeIdle()
		}
	}
	if err == nil {
		err = a.do(c, ctx, p, cl)
	}
	return c.report(err)
}

// report prints err as Flink's CliFrontend does (a wrong command line with a pointer to the
// help; any other error under Flink's banner) and returns the exit code.
func (c *cli) report(err error) int {
	if err == nil {
		return 0
	}
	if ae := (*argsError)(nil); errors.As(err, &ae) {
		fmt.Fprintln(c.stderr, ae.msg)
		fmt.Fprintln(c.stderr)
		fmt.Fprintln(c.stderr, "Use the help option (-h or --help) to get help on the command.")
		return 1
	}
	fmt.Fprintln(c.stderr)
	fmt.Fprintln(c.stderr, "------------------------------------------------------------")
	fmt.Fprintln(c.stderr, " The program finished with the following exception:")
	fmt.Fprintln(c.stderr)
	fmt.Fprintln(c.stderr, err)
	return 1
}

// newClient makes the REST client of -m/--jobmanager and the TLS options. The returned func
// closes the connections the run left open.
func (c *cli) newClient(p parsed) (*client, func(), error) {
	address := defaultJobManager
	if p.has("jobmanager") {
		address = p.value("jobmanager")
	}
	tc, err := tlsConfig(p.value("tls-ca"), p.value("tls-cert"), p.value("tls-key"))
	if err != nil {
		return nil, nil, err
	}
	base, err := jobManagerURL(address, tc != nil)
	if err != nil {
		return nil, nil, err
	}
	rt := c.transport
	var closeIdle func()
	if rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = tc
		rt, closeIdle = t, t.CloseIdleConnections
	}
	return &client{base: base, http: &http.Client{Transport: rt}, timeout: c.clientTimeout}, closeIdle, nil
}

// causedBy is an action's failure: Flink's message for it, then its cause.
type causedBy struct {
	msg   string
	cause error
}

func (e *causedBy) Error() string { return e.msg + "\nCaused by: " + e.cause.Error() }
func (e *causedBy) Unwrap() error { return e.cause }

// jobID reads a Job ID argument (Flink's parseJobId).
func jobID(s string) (string, error) {
	id, err := jobgraph.ParseJobID(s)
	if err != nil {
		return "", argsErrorf("Cannot parse JobID from %q: the expected format is 32 hexadecimal characters, e.g. fd72014d4c864993a2e5a9287b4a9c5d.", jobgraph.Truncate(s))
	}
	return id.String(), nil
}

// list prints the jobs as Flink's CliFrontend.listJobs does: without -r, -s or -a the running
// and the scheduled ones; CREATED and INITIALIZING jobs are scheduled, the globally terminal ones
// (FINISHED, CANCELED, FAILED) terminated and shown with -a only, all others (RESTARTING,
// SUSPENDED…) running. Each section is ordered by start time (Flink's sortJobStatusMessages:
// ties by state name, then in the server's order).
func (c *cli) list(ctx context.Context, p parsed, cl *client) error {
	showRunning, showScheduled, showAll := p.has("running"), p.has("scheduled"), p.has("all")
	if !showRunning && !showScheduled && !showAll {
		showRunning, showScheduled = true, true
	}
	fmt.Fprintln(c.stdout, "Waiting for response...")
	jobs, err := cl.listJobs(ctx)
	if err != nil {
		return &causedBy{"Failed to retrieve job list.", err}
	}
	var running, scheduled, terminated []jobDetails
	for _, j := range jobs {
		switch j.State {
		case "CREATED", "INITIALIZING":
			scheduled = append(scheduled, j)
		case "FINISHED", "CANCELED", "FAILED":
			terminated = append(terminated, j)
		default:
			running = append(running, j)
		}
	}
	section := func(header string, jobs []jobDetails) {
		fmt.Fprintln(c.stdout, header)
		slices.SortStableFunc(jobs, func(a, b jobDetails) int {
			return cmp.Or(cmp.Compare(a.StartTime, b.StartTime), cmp.Compare(strings.ToLower(a.State), strings.ToLower(b.State)))
		})
		for _, j := range jobs {
			fmt.Fprintf(c.stdout, "%s : %s : %s (%s)\n", time.UnixMilli(j.StartTime).In(c.loc).Format("02.01.2006 15:04:05"), j.JID, j.Name, j.State)
		}
		fmt.Fprintln(c.stdout, "--------------------------------------------------------------")
	}
	if showRunning || showAll {
		if len(running) == 0 {
			fmt.Fprintln(c.stdout, "No running jobs.")
		} else {
			section("------------------ Running/Restarting Jobs -------------------", running)
		}
	}
	if showScheduled || showAll {
		if len(scheduled) == 0 {
			fmt.Fprintln(c.stdout, "No scheduled jobs.")
		} else {
			section("----------------------- Scheduled Jobs -----------------------", scheduled)
		}
	}
	if showAll && len(terminated) > 0 {
		section("---------------------- Terminated Jobs -----------------------", terminated)
	}
	return nil
}

// readGraph reads and decodes a GRAPH.json file.
func readGraph(p parsed, action string) (*jobgraph.JobGraph, error) {
	switch len(p.args) {
	case 0:
		return nil, argsErrorf("Missing GRAPH.json. Specify the job graph file to %s.", action)
	case 1:
	default:
		return nil, argsErrorf("Unexpected arguments after %s: %q (a job graph takes no program arguments).", p.args[0], p.args[1:])
	}
	data, err := os.ReadFile(p.args[0])
	if err != nil {
		return nil, err
	}
	g, err := jobgraph.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.args[0], err)
	}
	return g, nil
}

// info prints the plan of GRAPH.json under Flink's "Execution Plan" lines. Flink's info runs a
// jar's main method and prints the StreamGraph's JSON (one node per operator); a GRAPH.json is a
// JobGraph already, so this prints the JobGraph's plan (one node per vertex), the JSON
// GET /jobs/:jobid/plan serves once it runs. The graph is validated first; an invalid one is an
// error naming the rule it breaks.
func (c *cli) info(_ context.Context, p parsed, _ *client) error {
	g, err := readGraph(p, "show")
	if err != nil {
		return err
	}
	if err := g.Validate(); err != nil {
		return fmt.Errorf("%s: %w", p.args[0], err)
	}
	pl, err := jobPlan(g)
	if err != nil {
		return fmt.Errorf("%s: %w", p.args[0], err)
	}
	out, err := marshalPlan(pl)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "----------------------- Execution Plan -----------------------")
	c.stdout.Write(out)
	fmt.Fprintln(c.stdout, "--------------------------------------------------------------")
	return nil
}

// runJob submits GRAPH.json with POST /jobs. A graph without a jobId gets a random one, as
// Flink's client gives every JobGraph one; -s and -n set its savepointRestore. It prints the
// JobID as Flink's ContextEnvironment does. Without -d it then waits for the job to end (polling
// GET /jobs/:jobid): FINISHED prints Flink's JobExecutionResult lines, any other end is an error
// with the job's root exception.
func (c *cli) runJob(ctx context.Context, p parsed, cl *client) error {
	g, err := readGraph(p, "run")
	if err != nil {
		return err
	}
	if g.JobID.IsZero() {
		g.JobID = jobgraph.NewJobID()
	}
	if p.has("fromSavepoint") {
		g.SavepointRestore.Path = p.value("fromSavepoint")
	}
	if p.has("allowNonRestoredState") {
		g.SavepointRestore.AllowNonRestoredState = true
	}
	body, err := json.Marshal(g)
	if err != nil {
		return err
	}
	id := g.JobID.String()
	if _, err := cl.submitJob(ctx, body); err != nil {
		return &causedBy{fmt.Sprintf("Failed to submit job %s.", id), err}
	}
	fmt.Fprintf(c.stdout, "Job has been submitted with JobID %s\n", id)
	if p.has("detached") {
		return nil
	}
	wait := c.pollInitial
	for {
		j, err := cl.job(ctx, id)
		if err != nil && ctx.Err() != nil {
			return &causedBy{fmt.Sprintf("Stopped waiting for job %s, which goes on.", id), ctx.Err()}
		}
		if err != nil {
			return &causedBy{fmt.Sprintf("Failed to wait for job %s.", id), err}
		}
		switch j.State {
		case "FINISHED":
			fmt.Fprintln(c.stdout, "Program execution finished")
			fmt.Fprintf(c.stdout, "Job with JobID %s has finished.\n", id)
			fmt.Fprintf(c.stdout, "Job Runtime: %d ms\n", j.Duration)
			return nil
		case "FAILED", "CANCELED":
			msg := fmt.Sprintf("Job execution failed: job %s is %s.", id, j.State)
			root, err := cl.rootException(ctx, id)
			if err != nil {
				return &causedBy{msg, fmt.Errorf("reading its root exception: %w", err)}
			}
			if root == "" {
				return errors.New(msg)
			}
			return &causedBy{msg, errors.New(strings.TrimRight(root, "\n"))}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return &causedBy{fmt.Sprintf("Stopped waiting for job %s, which goes on.", id), ctx.Err()}
		case <-t.C:
		}
		wait = min(2*wait, c.pollMax)
	}
}

// cancel is PATCH /jobs/:jobid?mode=cancel, with Flink's lines before and after.
func (c *cli) cancel(ctx context.Context, p parsed, cl *client) error {
	if len(p.args) == 0 {
		return argsErrorf("Missing JobID. Specify a JobID to cancel a job.")
	}
	id, err := jobID(p.args[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "Cancelling job %s.\n", id)
	if err := cl.cancelJob(ctx, id); err != nil {
		return &causedBy{fmt.Sprintf("Could not cancel job %s.", id), err}
	}
	fmt.Fprintf(c.stdout, "Cancelled job %s.\n", id)
	return nil
}

// savepoint triggers a savepoint (into the target directory, else the cluster's
// execution.checkpointing.savepoint-dir) and waits for it, printing Flink's lines and the
// savepoint's path.
func (c *cli) savepoint(ctx context.Context, p parsed, cl *client) error {
	if len(p.args) == 0 {
		return argsErrorf("Missing JobID. Specify a Job ID to trigger a savepoint.")
	}
	id, err := jobID(p.args[0])
	if err != nil {
		return err
	}
	var dir string
	if len(p.args) >= 2 {
		dir = p.args[1]
	}
	if len(p.args) >= 3 {
		fmt.Fprintln(c.stdout, "Provided more arguments than required. Ignoring not needed arguments.")
	}
	fmt.Fprintf(c.stdout, "Triggering savepoint for job %s.\n", id)
	fail := func(err error) error {
		return &causedBy{fmt.Sprintf("Failed to trigger a savepoint for the job %s.", id), err}
	}
	trigger, err := cl.triggerSavepoint(ctx, id, dir)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(c.stdout, "Waiting for response...")
	path, err := cl.awaitSavepoint(ctx, id, trigger, c.pollInitial, c.pollMax, c.clientTimeout)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(c.stdout, "Savepoint completed. Path: %s\n", path)
	fmt.Fprintln(c.stdout, "You can resume your program from this savepoint with the run command.")
	return nil
}

// stop stops the job with a savepoint (POST /jobs/:jobid/stop) and waits for it as savepoint
// does. As in Flink, "stop -p JOBID" (no directory) takes the value of -p as the Job ID.
func (c *cli) stop(ctx context.Context, p parsed, cl *client) error {
	var rawID, dir string
	switch {
	case len(p.args) > 0:
		rawID = p.args[0]
		if p.has("savepointPath") {
			dir = p.value("savepointPath")
		}
	case p.value("savepointPath") != "":
		rawID = p.value("savepointPath")
	default:
		return argsErrorf("Missing JobID. Specify a Job ID to stop a job.")
	}
	if len(p.args) > 1 {
		return argsErrorf("Unexpected arguments after the Job ID: %q.", p.args[1:])
	}
	id, err := jobID(rawID)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "Suspending job %q with a savepoint.\n", id)
	fail := func(err error) error {
		return &causedBy{fmt.Sprintf("Could not stop with a savepoint job %q.", id), err}
	}
	trigger, err := cl.stopWithSavepoint(ctx, id, dir)
	if err != nil {
		return fail(err)
	}
	path, err := cl.awaitSavepoint(ctx, id, trigger, c.pollInitial, c.pollMax, c.clientTimeout)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(c.stdout, "Savepoint completed. Path: %s\n", path)
	return nil
}

// printHelp prints every action's help (Flink's CliFrontendParser.printHelp).
func (c *cli) printHelp() {
	fmt.Fprintln(c.stdout, "jobgraph <ACTION> [OPTIONS] [ARGUMENTS]")
	fmt.Fprintln(c.stdout)
	fmt.Fprintln(c.stdout, "The following actions are available:")
	for i := range actions {
		c.printActionHelp(&actions[i])
	}
}

func (c *cli) printActionHelp(a *action) {
	fmt.Fprintf(c.stdout, "\nAction %q %s\n\n  Syntax: %s\n  %q action options:\n", a.name, a.purpose, a.syntax, a.name)
	tw := tabwriter.NewWriter(c.stdout, 0, 8, 3, ' ', 0)
	for _, o := range a.options() {
		if !a.remote && (o.long == "jobmanager" || strings.HasPrefix(o.long, "tls-")) {
			continue
		}
		var names string
		switch {
		case o.short != "":
			names = "-" + o.short + ",--" + o.long
		default:
			names = "   --" + o.long
		}
		if o.takesArg() {
			arg := " <" + o.arg + ">"
			if o.optionalArg {
				arg = " [<" + o.arg + ">]"
			}
			names += arg
		}
		fmt.Fprintf(tw, "     %s\t%s\n", names, o.help)
	}
	tw.Flush()
}
