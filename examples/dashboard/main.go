// Command dashboard runs a MiniCluster with the streaming example's job (examples/streaming:
// source → keyed running sum → exactly-once file sink, checkpointed) and serves the REST API
// (package rest, Flink's REST API v1, with the cluster's metrics under Flink's names at
// /jobs/:jobid/metrics) with the dashboard (package rest/web) on 127.0.0.1:8081 until it is
// interrupted:
//
//	go run ./examples/dashboard                 # then open http://127.0.0.1:8081/
//	go run ./cmd/jobgraph list -m 127.0.0.1:8081
//
// The job never ends (its sources emit -rate records per second of an endless sequence) and
// restarts now and then: a source task fails every -failure-interval (20 s) of each execution
// attempt, and the fixed-delay restart strategy restarts it -restart-delay later from the latest
// checkpoint. SIGINT or SIGTERM cancels the job, waits for it to end and closes the server and
// the cluster. The sink's output goes to -out (default: a temporary directory removed at the
// end); savepoints without a directory go to -savepoint-dir
// (execution.checkpointing.savepoint-dir; default: a savepoints directory in the temporary one,
// also removed, so pass -savepoint-dir to keep them).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/examples/streaming/keyedsum"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/rest"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, nil)
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

// options are the command line flags.
type options struct {
	addr               string
	parallelism        int
	rate               float64
	failureInterval    time.Duration
	failures           int
	checkpointInterval time.Duration
	restartDelay       time.Duration
	out, savepointDir  string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("dashboard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8081", "rest.bind-address:rest.port of the REST endpoint and dashboard (port 0: any free port)")
	fs.IntVar(&o.parallelism, "parallelism", 2, "the parallelism of every vertex")
	fs.Float64Var(&o.rate, "rate", 200, "records per second of all sources together")
	fs.DurationVar(&o.failureInterval, "failure-interval", 20*time.Second, "a source task fails this long into each execution attempt (0: never)")
	fs.IntVar(&o.failures, "failures", 1000, "how many failures to inject at most (the job runs on without any after them)")
	fs.DurationVar(&o.checkpointInterval, "checkpoint-interval", time.Second, "execution.checkpointing.interval")
	fs.DurationVar(&o.restartDelay, "restart-delay", 2*time.Second, "restart-strategy.fixed-delay.delay after each failure")
	fs.StringVar(&o.out, "out", "", "the directory the sink writes part-<subtask> into (default: a temporary directory, removed at the end)")
	fs.StringVar(&o.savepointDir, "savepoint-dir", "", "execution.checkpointing.savepoint-dir: where savepoints without a directory go (default: in the temporary directory)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.parallelism < 1:
		return o, fmt.Errorf("-parallelism %d is below 1", o.parallelism)
	case !(o.rate > 0) || math.IsInf(o.rate, 0):
		return o, fmt.Errorf("-rate %v is not a positive number of records per second", o.rate)
	case o.failureInterval < 0 || o.failures < 0 || o.restartDelay < 0:
		return o, errors.New("-failure-interval, -failures and -restart-delay must not be negative")
	case o.checkpointInterval <= 0:
		return o, errors.New("-checkpoint-interval must be positive: the sink commits its output on checkpoints")
	}
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		return o, fmt.Errorf("-addr %q is not host:port: %w", o.addr, err)
	}
	return o, nil
}

// records is the length of the sources' sequence: at any -rate, more than the program lives.
const records = 1 << 50

// jobOptions are o as the streaming job's options: endless records, and a failure of source
// subtask 0 in each of the first o.failures execution attempts once it emitted
// o.failureInterval's worth of its share of o.rate in that attempt.
func jobOptions(o options, out string) keyedsum.JobOptions {
	jo := keyedsum.JobOptions{Records: records, Keys: 10, Parallelism: o.parallelism, OutDir: out,
		CheckpointInterval: o.checkpointInterval, RestartDelay: o.restartDelay, Rate: o.rate,
		RestartAttempts: math.MaxInt32}
	if o.failureInterval > 0 {
		after := max(1, int64(o.rate/float64(o.parallelism)*o.failureInterval.Seconds()))
		for k := range o.failures {
			jo.Failures = append(jo.Failures, keyedsum.Failure{Vertex: keyedsum.SourceVertex, Subtask: 0, Attempt: k, AfterRecords: after})
		}
	}
	return jo
}

// statusLog prints the job's status transitions and tells running the first RUNNING.
type statusLog struct {
	mu      sync.Mutex
	w       io.Writer
	start   time.Time
	running chan struct{}
	once    sync.Once
}

func (l *statusLog) record(job jobgraph.JobID, status jobgraph.JobStatus, at time.Time) {
	l.mu.Lock()
	fmt.Fprintf(l.w, "  %8s  job %s is %s\n", at.Sub(l.start).Round(time.Millisecond), job.String()[:8], status)
	l.mu.Unlock()
	if status == jobgraph.JobStatusRunning {
		l.once.Do(func() { close(l.running) })
	}
}

// run starts the cluster, submits the job, serves the REST endpoint and the dashboard on o.addr
// and, once the job is RUNNING, prints the URL and calls ready (if not nil) with the server's
// address; then it serves until ctx ends, also after the job ended (canceled through the REST
// API, say). When ctx ends it cancels the job if it still runs, waits up to a minute for it to
// end, and closes the server and the cluster. Errors: the flags', and the cluster, the server or
// the job failing to start or to end.
func run(ctx context.Context, args []string, stdout io.Writer, ready func(addr string)) (err error) {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	host, portText, _ := net.SplitHostPort(o.addr)
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("-addr %q: the port is not a number in [0, 65535]", o.addr)
	}
	if port == 0 {
		port = rest.AnyPort
	}

	tmp, err := os.MkdirTemp("", "jobgraph-dashboard-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(tmp)) }()
	out, savepoints := o.out, o.savepointDir
	if out == "" {
		out = filepath.Join(tmp, "out")
	}
	if savepoints == "" {
		savepoints = filepath.Join(tmp, "savepoints")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}

	g, err := keyedsum.BuildJob(jobOptions(o, out))
	if err != nil {
		return err
	}
	defer keyedsum.ForgetPauses(g.JobID)
	reg := taskexecutor.NewRegistry()
	keyedsum.Register(reg)
	log := &statusLog{w: stdout, start: time.Now(), running: make(chan struct{})}
	mc, err := minicluster.Start(ctx, minicluster.Config{TaskExecutors: 2, SlotsPerTaskExecutor: (o.parallelism + 1) / 2,
		Registry: reg, SavepointDirectory: savepoints, JobStatusListener: log.record})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, mc.Close()) }()

	srv, err := rest.Start(rest.Config{Dispatcher: mc, Cluster: mc, Metrics: mc.Metrics(), BindAddress: host, Port: port})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, srv.Close()) }()

	if err := mc.SubmitJob(ctx, g); err != nil {
		return err
	}
	ended := make(chan struct{})
	var res *jobgraph.JobResult
	var resErr error
	go func() {
		defer close(ended)
		res, resErr = mc.RequestJobResult(context.WithoutCancel(ctx), g.JobID)
	}()
	// Serve until interrupted, also after the job ended (canceled or stopped through the REST
	// API, or failed): the dashboard shows it.
	select {
	case <-log.running:
		addr := srv.Addr()
		fmt.Fprintf(stdout, "\ndashboard: %s/  (job %q %s; Ctrl-C to stop)\n", srv.URL(), g.Name, g.JobID)
		fmt.Fprintf(stdout, "  go run ./cmd/jobgraph list -m %s\n", addr)
		fmt.Fprintf(stdout, "  go run ./cmd/jobgraph savepoint -m %s %s\n", addr, g.JobID)
		fmt.Fprintf(stdout, "  go run ./cmd/jobgraph cancel -m %s %s\n\n", addr, g.JobID)
		if ready != nil {
			ready(addr)
		}
	case <-ended:
	case <-ctx.Done():
	}
	select {
	case <-ended:
		fmt.Fprintf(stdout, "dashboard: %s; serving on until interrupted\n", jobEnded(res, resErr))
		<-ctx.Done()
		return nil
	case <-ctx.Done():
	}

	// Interrupted: cancel the job and wait for its end before closing anything.
	fmt.Fprintln(stdout, "\ndashboard: interrupted; canceling the job")
	cancelCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := mc.CancelJob(cancelCtx, g.JobID); err != nil && !jobIsTerminal(cancelCtx, mc, g.JobID) {
		return fmt.Errorf("canceling the job: %w", err)
	}
	select {
	case <-ended:
	case <-cancelCtx.Done():
		return errors.New("the job did not end within a minute of its cancellation")
	}
	if resErr != nil {
		return resErr
	}
	fmt.Fprintf(stdout, "dashboard: job %s ended %s\n", g.JobID, res.Status)
	return nil
}

// jobIsTerminal says whether the job already ended (a cancel after it ended fails).
func jobIsTerminal(ctx context.Context, mc *minicluster.MiniCluster, id jobgraph.JobID) bool {
	s, err := mc.RequestJobStatus(ctx, id)
	return err == nil && s.IsGloballyTerminal()
}

// jobEnded says how the job ended while the program was still serving it.
func jobEnded(res *jobgraph.JobResult, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("the job's result: %v", err)
	case res.RootCause != nil:
		return fmt.Sprintf("the job ended %s: %v", res.Status, res.RootCause)
	}
	return fmt.Sprintf("the job ended %s", res.Status)
}
