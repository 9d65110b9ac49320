// Command streaming runs a STREAMING job with checkpoints and exactly-once output on an
// in-process jobgraph cluster: a source of the integers 1..N (in S splits, their positions in
// checkpointed operator state) → ALL_TO_ALL PIPELINED_BOUNDED shuffle by key group of i mod K → a
// keyed running sum (sums in checkpointed keyed state) → a two-phase-commit sink that writes
// "key<TAB>sum<TAB>i" lines into OUT/part-<subtask>, committing a checkpoint's lines only once the
// checkpoint completed. It runs on a MiniCluster, as examples/wordcount does, and checks its own
// output at the end (package keyedsum's Check):
//
//	go run ./examples/streaming -out /tmp/s1
//	go run ./examples/streaming -failures 3 -seed 7 -out /tmp/s2      # 3 injected task failures
//
// Rescaling: stop with a savepoint once the records 1..M are through, then restore it at another
// parallelism into a new directory; the check then reads both runs one after the other:
//
//	go run ./examples/streaming -records 20000 -parallelism 4 -stop-with-savepoint-after 10000 -savepoint-dir /tmp/sp -out /tmp/r1
//	go run ./examples/streaming -records 20000 -restore /tmp/sp/savepoint-… -parallelism 2 -out /tmp/r2 -previous-out /tmp/r1
//
// A run with -stop-with-savepoint-after prints the savepoint's path as its last line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/examples/streaming/keyedsum"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "streaming:", err)
		os.Exit(1)
	}
}

// options are the command line flags.
type options struct {
	records, keys      int64
	splits             int
	parallelism        int
	maxParallelism     int
	checkpointInterval time.Duration
	failures           int
	seed               uint64
	restartDelay       time.Duration
	rate               float64
	out                string
	stopAfter          int64
	savepointDir       string
	restore            string
	previousOut        []string
	taskExecutors      int
	slots              int
	// extraFailures are added to the planned ones (no flag: for tests).
	extraFailures []keyedsum.Failure
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("streaming", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var previous string
	fs.Int64Var(&o.records, "records", 1_000_000, "N: the source emits the integers 1..N")
	fs.Int64Var(&o.keys, "keys", 100, "K: record i has key i mod K")
	fs.IntVar(&o.splits, "splits", keyedsum.DefaultSplits, "S: split j holds the i with i mod S = j")
	fs.IntVar(&o.parallelism, "parallelism", 2, "p: the parallelism of every vertex")
	fs.IntVar(&o.maxParallelism, "max-parallelism", keyedsum.DefaultMaxParallelism, "the number of key groups")
	fs.DurationVar(&o.checkpointInterval, "checkpoint-interval", 100*time.Millisecond, "execution.checkpointing.interval (0: no checkpoints, no exactly-once)")
	fs.IntVar(&o.failures, "failures", 0, "F: task failures to inject at seeded random record counts")
	fs.Uint64Var(&o.seed, "seed", 1, "the seed of the failures")
	fs.DurationVar(&o.restartDelay, "restart-delay", 10*time.Millisecond, "restart-strategy.fixed-delay.delay after each failure")
	fs.Float64Var(&o.rate, "rate", 0, "records per second of all sources together (0: as fast as possible)")
	fs.StringVar(&o.out, "out", "", "the directory the sink writes part-<subtask> into; it must hold no part files (required)")
	fs.Int64Var(&o.stopAfter, "stop-with-savepoint-after", 0, "M: stop with a savepoint once the records 1..M are through")
	fs.StringVar(&o.savepointDir, "savepoint-dir", "", "state.savepoints.dir: where -stop-with-savepoint-after puts the savepoint")
	fs.StringVar(&o.restore, "restore", "", "execution.savepoint.path: the savepoint to start from")
	fs.StringVar(&previous, "previous-out", "", "with -restore: the -out directories of the earlier runs, comma-separated, for the check")
	fs.IntVar(&o.taskExecutors, "taskexecutors", 2, "number of TaskExecutors")
	fs.IntVar(&o.slots, "slots", 0, "slots per TaskExecutor (default: enough for the parallelism)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if previous != "" {
		o.previousOut = strings.Split(previous, ",")
	}
	switch {
	case o.out == "":
		return o, errors.New("-out is required")
	case o.parallelism < 1 || o.taskExecutors < 1 || o.slots < 0:
		return o, errors.New("-parallelism and -taskexecutors must be at least 1, -slots at least 0")
	case o.failures < 0 || o.stopAfter < 0 || o.restartDelay < 0:
		return o, errors.New("-failures, -stop-with-savepoint-after and -restart-delay must not be negative")
	case o.failures > 0 && o.checkpointInterval == 0:
		return o, errors.New("-failures needs checkpoints (-checkpoint-interval > 0): without them the output is not exactly-once")
	case o.stopAfter > 0 && o.savepointDir == "":
		return o, errors.New("-stop-with-savepoint-after needs -savepoint-dir")
	case o.stopAfter >= o.records:
		return o, fmt.Errorf("-stop-with-savepoint-after %d must be below -records %d", o.stopAfter, o.records)
	case len(o.previousOut) > 0 && o.restore == "":
		return o, errors.New("-previous-out goes with -restore")
	}
	if o.slots == 0 {
		o.slots = (o.parallelism + o.taskExecutors - 1) / o.taskExecutors
	}
	return o, nil
}

// statusLog prints the job's status transitions as they happen and counts restarted executions.
type statusLog struct {
	mu        sync.Mutex
	start     time.Time
	w         io.Writer
	restarted int
}

func (l *statusLog) record(job jobgraph.JobID, status jobgraph.JobStatus, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "  %8s  job %s is %s\n", at.Sub(l.start).Round(time.Millisecond), job.String()[:8], status)
}

func (l *statusLog) execution(attempt jobgraph.ExecutionAttemptID, state jobgraph.ExecutionState) {
	if attempt.AttemptNumber > 0 && state == jobgraph.ExecutionStateDeploying {
		l.mu.Lock()
		l.restarted++
		l.mu.Unlock()
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	if err := checkOutDir(o.out); err != nil {
		return err
	}
	mode := "fresh start"
	if o.restore != "" {
		mode = "restored from " + o.restore
	}
	fmt.Fprintf(stdout, "streaming: records 1..%d, %d keys, %d splits, parallelism %d (max %d), checkpoints every %v, %d failures; %s\n",
		o.records, o.keys, o.splits, o.parallelism, o.maxParallelism, o.checkpointInterval, o.failures, mode)
	log := &statusLog{start: time.Now(), w: stdout}
	r, err := runJob(ctx, o, log)
	if err != nil {
		return err
	}
	if r.result.Status != jobgraph.JobStatusFinished {
		return fmt.Errorf("job ended %s: %v", r.result.Status, r.result.RootCause)
	}
	if len(r.result.ExceptionHistory) > 0 {
		fmt.Fprintf(stdout, "\nfailures (exception history), %d executions restarted:\n", log.restarted)
		for _, e := range r.result.ExceptionHistory {
			fmt.Fprintf(stdout, "  %8s  %s: %s\n", e.Timestamp.Sub(log.start).Round(time.Millisecond), e.TaskName, e.Message)
		}
	}
	if st := r.archived.CheckpointStatistics; st != nil {
		fmt.Fprintf(stdout, "\ncheckpoints: %d completed, %d failed, %d restored\n", st.Counts.Completed, st.Counts.Failed, st.Counts.Restored)
		if f := st.Latest.Failed; f != nil {
			fmt.Fprintf(stdout, "  the latest failed: %d: %s\n", f.ID, f.FailureMessage)
		}
	}
	if restored, err := jobgraph.AccumulatorValue[[]keyedsum.RestoredSums](r.result.Accumulators, keyedsum.AccRestoredSums); err == nil {
		for _, rs := range restored {
			fmt.Fprintf(stdout, "  sum %d/%d restored key groups %v from checkpoint %d: %d keys\n", rs.Subtask+1, rs.Parallelism, rs.KeyGroups, rs.CheckpointID, len(rs.Sums))
		}
	}

	// The check: a full run holds 1..N; a stopped one exactly 1..M (the sources paused there);
	// a restored one continues the runs named by -previous-out.
	n, runs := o.records, []string{o.out}
	switch {
	case o.stopAfter > 0:
		n = o.stopAfter
	case o.restore != "":
		runs = append(append([]string(nil), o.previousOut...), o.out)
	}
	if o.restore != "" && len(o.previousOut) == 0 {
		fmt.Fprintf(stdout, "\ncheck: skipped (name the earlier runs' output with -previous-out)\n")
	} else if o.checkpointInterval > 0 {
		sum, err := keyedsum.Check(n, o.keys, runs...)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\ncheck: exactly-once: %d lines in %s of %s hold every record of 1..%d once and %d keys' running sums\n",
			sum.Lines, count(sum.Files, "part file"), count(sum.Runs, "run"), n, sum.Keys)
	}
	if o.restore == "" && o.stopAfter == 0 {
		fmt.Fprintf(stdout, "\ntotal %s, %.0f records/s\n", r.elapsed.Round(time.Millisecond), float64(o.records)/r.elapsed.Seconds())
	} else {
		fmt.Fprintf(stdout, "\ntotal %s\n", r.elapsed.Round(time.Millisecond))
	}
	if r.savepoint != "" {
		fmt.Fprintln(stdout, r.savepoint)
	}
	return nil
}

// checkOutDir refuses an output directory that already holds part files: the check reads every
// part file there.
func checkOutDir(dir string) error {
	matches, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil {
		return err
	}
	if len(matches) > 0 {
		return fmt.Errorf("-out %s already holds part files (%s…): use a new directory", dir, filepath.Base(matches[0]))
	}
	return nil
}

// outcome is what runJob saw.
type outcome struct {
	result    *jobgraph.JobResult
	archived  *executiongraph.ArchivedExecutionGraph
	savepoint string        // the stop-with-savepoint's path
	elapsed   time.Duration // from the submission to the result
}

// jobOptions are o as keyedsum.JobOptions, with the failures planned from the seed.
func jobOptions(o options) (keyedsum.JobOptions, error) {
	jo := keyedsum.JobOptions{Records: o.records, Keys: o.keys, Splits: o.splits, Parallelism: o.parallelism, MaxParallelism: o.maxParallelism,
		OutDir: o.out, CheckpointInterval: o.checkpointInterval, RestartDelay: o.restartDelay, PauseAfter: o.stopAfter,
		RestorePath: o.restore, Rate: o.rate}
	plan, err := keyedsum.PlanFailures(jo, o.failures, o.seed)
	if err != nil {
		return jo, err
	}
	jo.Failures = append(plan, o.extraFailures...)
	return jo, nil
}

// runJob runs the job on a fresh MiniCluster; with -stop-with-savepoint-after it waits for the
// sources to pause and stops the job with a savepoint.
func runJob(ctx context.Context, o options, log *statusLog) (outcome, error) {
	var r outcome
	jo, err := jobOptions(o)
	if err != nil {
		return r, err
	}
	g, err := keyedsum.BuildJob(jo)
	if err != nil {
		return r, err
	}
	defer keyedsum.ForgetPauses(g.JobID)
	reg := taskexecutor.NewRegistry()
	keyedsum.Register(reg)
	cfg := minicluster.Config{TaskExecutors: o.taskExecutors, SlotsPerTaskExecutor: o.slots, Registry: reg, SavepointDirectory: o.savepointDir}
	if log != nil {
		cfg.JobStatusListener, cfg.ExecutionStateListener = log.record, log.execution
	}
	mc, err := minicluster.Start(ctx, cfg)
	if err != nil {
		return r, err
	}
	defer mc.Close()

	start := time.Now()
	if o.stopAfter <= 0 {
		r.result, err = mc.Run(ctx, g)
	} else {
		r.savepoint, r.result, err = stopWhenPaused(ctx, mc, g, o.parallelism)
	}
	r.elapsed = time.Since(start)
	if err != nil {
		return r, err
	}
	r.archived, err = mc.RequestJob(ctx, g.JobID)
	return r, err
}

// stopWhenPaused submits g, waits until its sources paused and stops it with a savepoint. A stop
// that fails (a task failed and the job restarted meanwhile) is tried again once the restarted
// sources paused, up to 5 times.
func stopWhenPaused(ctx context.Context, mc *minicluster.MiniCluster, g *jobgraph.JobGraph, parallelism int) (string, *jobgraph.JobResult, error) {
	if err := mc.SubmitJob(ctx, g); err != nil {
		return "", nil, err
	}
	// The job's result ends the wait for the pause: a job that fails first is not waited for.
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan struct{})
	var res *jobgraph.JobResult
	var resErr error
	go func() {
		defer close(ended)
		res, resErr = mc.RequestJobResult(ctx, g.JobID)
		cancel()
	}()
	var path string
	var stopErr error
	for range 5 {
		if _, err := keyedsum.WaitSourcesPaused(waitCtx, g.JobID, parallelism); err != nil {
			break // the job ended (or ctx did)
		}
		if path, stopErr = mc.StopWithSavepoint(waitCtx, g.JobID, ""); stopErr == nil {
			break
		}
		// WaitSourcesPaused answers at once for the attempt that paused; wait for a newer one.
		keyedsum.ForgetPauses(g.JobID)
	}
	if path == "" {
		select {
		case <-ended:
		default:
			// Not stopped: cancel the job rather than leave it running.
			if err := mc.CancelJob(ctx, g.JobID); err != nil {
				return "", nil, errors.Join(stopErr, err)
			}
		}
	}
	<-ended
	if resErr != nil {
		return "", nil, resErr
	}
	if path == "" {
		return "", res, fmt.Errorf("the job ended %s without a savepoint (stop-with-savepoint: %v)", res.Status, stopErr)
	}
	return path, res, nil
}

// count spells n things: "1 run", "2 runs".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
