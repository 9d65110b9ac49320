// Command cluster runs examples/wordcount's job on the process roles of package cluster over
// the gRPC transport and the network shuffle (transport/grpc, transport/grpc/netshuffle): one
// JobManager process and -taskexecutors TaskExecutor processes (this binary again, with -role),
// each with its own gRPC Service on 127.0.0.1, the TaskExecutors registering with the
// JobManager's ResourceManager at its fixed address and exchanging the job's records through
// their network shuffles.
//
//	go run ./examples/cluster                                    # $(go env GOROOT)/src
//	go run ./examples/cluster -input ~/src -out /tmp/words.tsv
//	go run ./examples/cluster -kill-taskexecutor-after 300ms     # SIGKILL one TaskExecutor mid-job
//	go run ./examples/cluster -cpuprofile /tmp/cpu               # /tmp/cpu.jobmanager, /tmp/cpu.taskexecutor-0, …
//	go run ./examples/cluster -archive-dir /tmp/archive           # keep the finished job's graph
//
// Without -role it is the launcher: it starts the JobManager, reads its addresses from the
// JobManager's stdout, starts the TaskExecutors, submits the job to the Dispatcher over gRPC
// and prints the totals and top words from the job's accumulators as examples/wordcount does.
// -kill-taskexecutor-after D SIGKILLs the first TaskExecutor process D after the submission:
// its heartbeat requests fail, the JobManager drops it at the second one (heartbeat.rpc-failure-threshold;
// heartbeat.interval is a fifth of -heartbeat-timeout, 1 s), its
// partitions are lost and the job fails over onto the others (fixed-delay restarts), so the
// counts stay exact; the launcher prints the instant of the kill. -archive-dir DIR makes the
// JobManager write each globally terminated job's ArchivedExecutionGraph (every subtask's final
// attempt with its location and state timestamps, the exception history) as JSON to
// DIR/<jobid>.json (Flink's jobmanager.archive.fs.dir), and the launcher prints the path once the
// JobManager has written it. -cpuprofile P makes each role process write its CPU profile
// (runtime/pprof, for go tool pprof) to P.jobmanager, P.taskexecutor-0, … from its start until it
// ends. Each role process ends when its stdin closes (the launcher's exit).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/examples/wordcount/wc"
	"github.com/jobgraph/jobgraph/rpc"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

// options are the command line flags.
type options struct {
	role          string
	input         string
	parallelism   int
	taskExecutors int
	slots         int
	out           string
	top           int
	kill          time.Duration
	heartbeat     time.Duration
	rm            string
	cpuprofile    string
	archiveDir    string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.role, "role", "", `"jobmanager" or "taskexecutor" (a process the launcher starts); empty: the launcher`)
	fs.StringVar(&o.input, "input", "", "directory whose .go files are counted (default $(go env GOROOT)/src)")
	fs.IntVar(&o.parallelism, "parallelism", 4, "parallelism of the source and count vertices")
	fs.IntVar(&o.taskExecutors, "taskexecutors", 3, "TaskExecutor processes")
	fs.IntVar(&o.slots, "slots", 2, "slots per TaskExecutor (taskmanager.numberOfTaskSlots)")
	fs.StringVar(&o.out, "out", "", "also write every word and its count, tab-separated and sorted, to this file")
	fs.IntVar(&o.top, "top", 20, "how many of the most frequent words to print")
	fs.DurationVar(&o.kill, "kill-taskexecutor-after", 0, "SIGKILL the first TaskExecutor process this long after the submission (0: never)")
	fs.DurationVar(&o.heartbeat, "heartbeat-timeout", defaultHeartbeatTimeout, "heartbeat.timeout of every role (heartbeat.interval is a fifth of it) and the restart delay")
	fs.StringVar(&o.rm, "resourcemanager", "", "-role taskexecutor: the ResourceManager's address (jobmanager.rpc.address)")
	fs.StringVar(&o.archiveDir, "archive-dir", "", "the JobManager writes each globally terminated job's ArchivedExecutionGraph as JSON to DIR/<jobid>.json (jobmanager.archive.fs.dir)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write each role process's CPU profile (runtime/pprof) to this file name suffixed with .jobmanager, .taskexecutor-0, …; with -role: to this file")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.parallelism < 1 || o.taskExecutors < 1 || o.slots < 1 || o.top < 0 || o.kill < 0 {
		return o, errors.New("-parallelism, -taskexecutors and -slots must be at least 1, -top and -kill-taskexecutor-after at least 0")
	}
	if o.heartbeat < 5*time.Millisecond {
		return o, fmt.Errorf("-heartbeat-timeout %v: must be at least 5ms", o.heartbeat)
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if o.role != "" && o.cpuprofile != "" {
		stopProfile, err := startCPUProfile(o.cpuprofile)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stopProfile()) }()
	}
	switch o.role {
	case "jobmanager":
		return runJobManagerRole(ctx, o, stdout, log)
	case "taskexecutor":
		return runTaskExecutorRole(ctx, o, stdout, log)
	case "":
		return launch(ctx, o, stdout, stderr, log)
	}
	return fmt.Errorf("-role %q: want jobmanager, taskexecutor or none", o.role)
}

// startCPUProfile writes the process's CPU profile (runtime/pprof) to path until the function
// it returns is called.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, errors.Join(fmt.Errorf("-cpuprofile %s: %w", path, err), f.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// untilStdinCloses returns a context that ends with ctx or when stdin reaches EOF: a role
// process ends with its launcher.
func untilStdinCloses(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return ctx, cancel
}

// runJobManagerRole serves a JobManager and prints "RESOURCEMANAGER <address>" and
// "DISPATCHER <address>" once it leads. With -archive-dir it writes the archives of the jobs that
// ended before it closes.
func runJobManagerRole(ctx context.Context, o options, stdout io.Writer, log *slog.Logger) error {
	ctx, cancel := untilStdinCloses(ctx)
	defer cancel()
	// The JobManager runs until the archives of the jobs that ended are written, after ctx.
	jmCtx, stopJM := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJM()
	var arch *archiver
	if o.archiveDir != "" {
		arch = newArchiver(o.archiveDir, log)
	}
	jm, err := startArchivingJobManager(jmCtx, "", o.heartbeat, arch, log)
	if err != nil {
		return err
	}
	if err := jm.jm.AwaitLeadership(ctx); err != nil {
		return errors.Join(err, jm.close())
	}
	fmt.Fprintf(stdout, "RESOURCEMANAGER %s\nDISPATCHER %s\n", jm.jm.ResourceManagerAddress(), jm.jm.DispatcherAddress())
	<-ctx.Done()
	var archErr error
	if arch != nil {
		archErr = arch.wait()
	}
	return errors.Join(archErr, jm.close())
}

// runTaskExecutorRole serves a TaskExecutor registered with -resourcemanager and prints
// "TASKEXECUTOR <ResourceID>" once registered.
func runTaskExecutorRole(ctx context.Context, o options, stdout io.Writer, log *slog.Logger) error {
	ctx, cancel := untilStdinCloses(ctx)
	defer cancel()
	te, err := startTaskExecutor(ctx, o.rm, o.slots, o.heartbeat, log)
	if err != nil {
		return err
	}
	if _, err := te.te.TaskExecutor().WaitRegistered(ctx); err != nil {
		return errors.Join(err, te.close())
	}
	fmt.Fprintf(stdout, "TASKEXECUTOR %s\n", te.te.TaskExecutor().ResourceID())
	<-ctx.Done()
	return te.close()
}

// process is a role process the launcher started, and what it printed first.
type process struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   map[string]string // "RESOURCEMANAGER" → address, …
	stopped sync.Once
}

// startRole starts this binary with -role and args and reads want lines "KEY value" from its
// stdout.
func startRole(ctx context.Context, stderr io.Writer, want []string, args ...string) (*process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, stdin: stdin, lines: map[string]string{}}
	sc := bufio.NewScanner(out)
	for len(p.lines) < len(want) && sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		p.lines[k] = v
	}
	for _, k := range want {
		if p.lines[k] == "" {
			p.stop()
			return nil, fmt.Errorf("%v: no %s line (ctx: %v)", args, k, ctx.Err())
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return p, nil
}

// stop closes the process's stdin (it ends) and waits for it; again, it does nothing.
func (p *process) stop() {
	p.stopped.Do(func() {
		_ = p.stdin.Close()
		_ = p.cmd.Wait()
	})
}

// lockedWriter serializes writes from several goroutines (the role processes' stderr copiers,
// the kill timer) to one writer.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// launch starts the JobManager and TaskExecutor processes, runs the job and prints its totals.
func launch(ctx context.Context, o options, stdout, stderr io.Writer, log *slog.Logger) error {
	var mu sync.Mutex
	stdout, stderr = lockedWriter{&mu, stdout}, lockedWriter{&mu, stderr}
	if o.input == "" {
		var err error
		if o.input, err = wc.DefaultInputDir(); err != nil {
			return err
		}
	}
	files, err := wc.ListInputFiles(o.input)
	if err != nil {
		return err
	}
	procs, err := startProcesses(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer procs.stop()
	fmt.Fprintf(stdout, "counting %d files below %s: 1 JobManager and %d TaskExecutor processes, parallelism %d\n",
		len(files), o.input, len(procs.tes), o.parallelism)
	t, err := countWords(ctx, procs, files, o, stdout, log)
	if err != nil {
		return err
	}
	t.Write(stdout, o.top)
	if o.out != "" {
		fmt.Fprintf(stdout, "\nwrote every word to %s\n", o.out)
	}
	return nil
}

// roleProcesses are the role processes the launcher started: one JobManager, then
// -taskexecutors TaskExecutors registered with its ResourceManager.
type roleProcesses struct {
	jm  *process
	tes []*process
}

// startProcesses starts the JobManager process, then the TaskExecutor processes, each with
// o's heartbeat timeout (and -cpuprofile, the file's name suffixed with the role), and returns
// once every TaskExecutor is registered. On error it stops what it started.
func startProcesses(ctx context.Context, o options, stderr io.Writer) (_ *roleProcesses, err error) {
	profile := func(role string) []string {
		if o.cpuprofile == "" {
			return nil
		}
		return []string{"-cpuprofile", o.cpuprofile + "." + role}
	}
	jmArgs := []string{"-role", "jobmanager", "-heartbeat-timeout", o.heartbeat.String()}
	if o.archiveDir != "" {
		jmArgs = append(jmArgs, "-archive-dir", o.archiveDir)
	}
	jm, err := startRole(ctx, stderr, []string{"RESOURCEMANAGER", "DISPATCHER"}, append(jmArgs, profile("jobmanager")...)...)
	if err != nil {
		return nil, err
	}
	procs := &roleProcesses{jm: jm}
	defer func() {
		if err != nil {
			procs.stop()
		}
	}()
	for i := range o.taskExecutors {
		te, err := startRole(ctx, stderr, []string{"TASKEXECUTOR"}, append([]string{"-role", "taskexecutor",
			"-resourcemanager", jm.lines["RESOURCEMANAGER"], "-slots", fmt.Sprint(o.slots), "-heartbeat-timeout", o.heartbeat.String()},
			profile(fmt.Sprintf("taskexecutor-%d", i))...)...)
		if err != nil {
			return nil, err
		}
		procs.tes = append(procs.tes, te)
	}
	return procs, nil
}

// stop stops the TaskExecutor processes, then the JobManager's, and waits for them.
func (r *roleProcesses) stop() {
	for _, te := range r.tes {
		te.stop()
	}
	r.jm.stop()
}

// countWords submits the word count over files to the JobManager's Dispatcher over gRPC, waits
// for its result and returns its totals (with the o.top most frequent words). With o.kill it
// SIGKILLs the first TaskExecutor process o.kill after the submission and says so on stdout, with
// the instant. With o.archiveDir it stops the JobManager process once the job finished (it writes
// the job's archive before it ends) and prints the archive's path.
func countWords(ctx context.Context, procs *roleProcesses, files []wc.InputFile, o options, stdout io.Writer, log *slog.Logger) (wc.Totals, error) {
	g, err := buildJob(files, o.parallelism, o.out, o.top, o.heartbeat)
	if err != nil {
		return wc.Totals{}, err
	}
	client, err := grpctransport.New(grpctransport.Options{Logger: log})
	if err != nil {
		return wc.Totals{}, err
	}
	defer client.Close()
	d, err := rpc.Connect[rpc.DispatcherGateway](ctx, client, procs.jm.lines["DISPATCHER"])
	if err != nil {
		return wc.Totals{}, err
	}
	if err := d.SubmitJob(ctx, g); err != nil {
		return wc.Totals{}, err
	}
	if o.kill > 0 {
		victim := procs.tes[0]
		timer := time.AfterFunc(o.kill, func() {
			// The instant is taken first: the process is gone at most this long after it, which
			// the job's own timestamps (the JobManager's wall clock, the same machine's) compare with.
			at := time.Now()
			_ = victim.cmd.Process.Signal(syscall.SIGKILL)
			fmt.Fprintf(stdout, "SIGKILLed TaskExecutor %s (pid %d) after %v at %s\n", victim.lines["TASKEXECUTOR"],
				victim.cmd.Process.Pid, o.kill, at.UTC().Format(time.RFC3339Nano))
		})
		defer timer.Stop()
	}
	res, err := d.RequestJobResult(ctx, g.JobID)
	if err != nil {
		return wc.Totals{}, err
	}
	if res.Status != jobgraph.JobStatusFinished {
		return wc.Totals{}, fmt.Errorf("job %s: %v", res.Status, res.Failure) // Failure crosses the process boundary; RootCause lives only in the JobManager
	}
	if o.archiveDir != "" {
		procs.jm.stop() // it writes the archive before it ends
		path := archivePath(o.archiveDir, g.JobID)
		if _, err := os.Stat(path); err != nil {
			return wc.Totals{}, fmt.Errorf("the JobManager wrote no archive of job %s: %w", g.JobID, err)
		}
		fmt.Fprintf(stdout, "the JobManager archived the job to %s\n", path)
	}
	return wc.ReadTotals(res.Accumulators, o.top)
}
