// Command wordcount counts the words of real input on an in-process jobgraph cluster: a BATCH job
// source (reads and tokenizes its share of the files, combining counts locally) → ALL_TO_ALL
// BLOCKING hash shuffle by word → count → sink, run by a MiniCluster with the Dispatcher,
// JobMaster, scheduler, slot pool, ResourceManager and TaskExecutors each doing their real work.
//
// By default it counts the Go standard library's source tree, $(go env GOROOT)/src:
//
//	go run ./examples/wordcount
//	go run ./examples/wordcount -input ~/src -parallelism 4 -out /tmp/words.tsv
//	go run ./examples/wordcount -fail-once count   # subtask 0 of count fails once; the job restarts it
//	go run ./examples/wordcount -slow-source 1ms   # source subtask 0 is slow: it gets fewer files
//
// The source is a FLIP-27 split-enumerator source (package source): its operator coordinator on
// the JobMaster hands the files out, a split (-split-bytes, 1 MiB, of consecutive files) at a
// time, to whichever source subtask asks, so a slow subtask reads fewer files ("files per source
// subtask" in the output).
//
// A word is a maximal run of letters, digits and '_' (unicode.IsLetter, unicode.IsDigit),
// case-sensitive; the input is every regular file ending in .go below -input.
//
// The totals it prints (files, bytes, words, distinct words) and the top words come from the job's
// accumulators in its JobResult, which the tasks add to; with -fail-once they are still exact,
// since a failed attempt's values are discarded when it is restarted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/examples/wordcount/wc"
	"github.com/jobgraph/jobgraph/executiongraph"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "wordcount:", err)
		os.Exit(1)
	}
}

// options are the command line flags.
type options struct {
	input         string
	parallelism   int
	taskExecutors int
	slots         int
	out           string
	top           int
	failOnce      string
	restartDelay  time.Duration
	slowSource    time.Duration
	splitBytes    int64
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("wordcount", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.input, "input", "", "directory whose .go files are counted (default $(go env GOROOT)/src)")
	fs.IntVar(&o.parallelism, "parallelism", runtime.NumCPU(), "parallelism of the source and count vertices")
	fs.IntVar(&o.taskExecutors, "taskexecutors", 2, "number of TaskExecutors")
	fs.IntVar(&o.slots, "slots", 0, "slots per TaskExecutor (default: enough for the parallelism)")
	fs.StringVar(&o.out, "out", "", "file to write every word as word<TAB>count, sorted by word")
	fs.IntVar(&o.top, "top", 20, "number of most frequent words to print")
	fs.StringVar(&o.failOnce, "fail-once", "", "make subtask 0 of this vertex (source, count or sink) fail once; the job restarts it (fixed-delay, 1 attempt)")
	fs.DurationVar(&o.restartDelay, "restart-delay", time.Second, "with -fail-once: restart-strategy.fixed-delay.delay")
	fs.DurationVar(&o.slowSource, "slow-source", 0, "make source subtask 0 wait this long before each file it reads: a slow reader, which gets fewer files")
	fs.Int64Var(&o.splitBytes, "split-bytes", wc.DefaultSplitBytes, "the source's split size: runs of consecutive files of at least this many bytes (1: a file per split)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.parallelism < 1 || o.taskExecutors < 1 || o.slots < 0 || o.restartDelay < 0 || o.slowSource < 0 || o.splitBytes < 1 {
		return o, fmt.Errorf("-parallelism, -taskexecutors and -split-bytes must be at least 1, -slots, -restart-delay and -slow-source at least 0")
	}
	if o.slots == 0 {
		o.slots = (o.parallelism + o.taskExecutors - 1) / o.taskExecutors
	}
	return o, nil
}

// statusLog records the job's status transitions as they happen.
type statusLog struct {
	mu    sync.Mutex
	start time.Time
	w     io.Writer

	// vertices maps the job's vertex IDs to names and parallelism, for naming restarted
	// executions; restarted lists them as "count (1/2) attempt 1".
	vertices  map[jobgraph.JobVertexID]*jobgraph.JobVertex
	restarted []string
}

// execution records executions deployed again after a failure (attempt > 0).
func (l *statusLog) execution(attempt jobgraph.ExecutionAttemptID, state jobgraph.ExecutionState) {
	if attempt.AttemptNumber == 0 || state != jobgraph.ExecutionStateDeploying {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	name := attempt.ExecutionVertexID.JobVertexID.String()
	if v := l.vertices[attempt.ExecutionVertexID.JobVertexID]; v != nil {
		name = fmt.Sprintf("%s (%d/%d)", v.Name, attempt.ExecutionVertexID.Subtask+1, v.Parallelism)
	}
	l.restarted = append(l.restarted, fmt.Sprintf("%s attempt %d", name, attempt.AttemptNumber))
}

func (l *statusLog) record(job jobgraph.JobID, status jobgraph.JobStatus, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "  %8s  job %s is %s\n", at.Sub(l.start).Round(time.Millisecond), job.String()[:8], status)
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	if o.input == "" {
		if o.input, err = wc.DefaultInputDir(); err != nil {
			return err
		}
	}
	files, err := wc.ListInputFiles(o.input)
	if err != nil {
		return err
	}
	var bytes int64
	for _, f := range files {
		bytes += f.Size
	}
	fmt.Fprintf(stdout, "wordcount: %d .go files, %.1f MB below %s; parallelism %d on %s × %s\n",
		len(files), float64(bytes)/1e6, o.input, o.parallelism, count(o.taskExecutors, "TaskExecutor"), count(o.slots, "slot"))

	start := time.Now()
	log := &statusLog{start: start, w: stdout}
	res, archived, err := runJob(ctx, files, o, log)
	if err != nil {
		return err
	}
	total := time.Since(start)
	if res.Status != jobgraph.JobStatusFinished {
		return fmt.Errorf("job ended %s: %v", res.Status, res.RootCause)
	}

	if len(res.ExceptionHistory) > 0 || len(log.restarted) > 0 {
		fmt.Fprintf(stdout, "\nfailures (exception history):\n")
		for _, e := range res.ExceptionHistory {
			fmt.Fprintf(stdout, "  %8s  %s on %s: %s\n", e.Timestamp.Sub(start).Round(time.Millisecond), e.TaskName, e.Location, e.Message)
			for _, c := range e.Concurrent {
				fmt.Fprintf(stdout, "            concurrent: %s on %s: %s\n", c.TaskName, c.Location, c.Message)
			}
		}
		fmt.Fprintf(stdout, "restarted executions:\n")
		for _, r := range log.restarted {
			fmt.Fprintf(stdout, "  %s\n", r)
		}
	}

	fmt.Fprintf(stdout, "\ntime per vertex:\n")
	for _, v := range archived.JobVertices {
		first, last := time.Time{}, time.Time{}
		for _, s := range v.Subtasks {
			if t, ok := s.StateTimestamps[jobgraph.ExecutionStateDeploying]; ok && (first.IsZero() || t.Before(first)) {
				first = t
			}
			if t, ok := s.StateTimestamps[jobgraph.ExecutionStateFinished]; ok && t.After(last) {
				last = t
			}
		}
		fmt.Fprintf(stdout, "  %-8s parallelism %-3d %8s\n", v.Name, v.Parallelism, last.Sub(first).Round(time.Millisecond))
	}

	// The tasks report their totals and the top words through accumulators: merged over the
	// subtasks' attempts that count, so a failed and restarted attempt is not counted twice.
	t, err := wc.ReadTotals(res.Accumulators, o.top)
	if err != nil {
		return err
	}
	t.Write(stdout, o.top)
	// The coordinator handed the files out on demand: a slower subtask read fewer.
	t.WriteFilesPerSource(stdout, o.parallelism)
	if o.out != "" {
		fmt.Fprintf(stdout, "\nwrote every word to %s\n", o.out)
	}
	fmt.Fprintf(stdout, "\ntotal %s\n", total.Round(time.Millisecond))
	return nil
}

// runJob runs the word count on a fresh MiniCluster (wc.RunOnMiniCluster) and returns the job's
// result and its archived ExecutionGraph.
func runJob(ctx context.Context, files []wc.InputFile, o options, log *statusLog) (*jobgraph.JobResult, *executiongraph.ArchivedExecutionGraph, error) {
	// The sink stores no result for wc.TakeResult: the host reads the accumulators.
	mo := wc.MiniClusterOptions{
		TaskExecutors:        o.taskExecutors,
		SlotsPerTaskExecutor: o.slots,
		Job:                  wc.JobOptions{Parallelism: o.parallelism, OutPath: o.out, FailOnce: o.failOnce, Top: o.top, SkipResult: true, SlowDelay: o.slowSource, SplitBytes: o.splitBytes},
		Prepare: func(g *jobgraph.JobGraph) {
			if o.failOnce != "" {
				g.RestartStrategy = jobgraph.FixedDelayRestart(1, o.restartDelay)
			}
			if log != nil {
				log.vertices = make(map[jobgraph.JobVertexID]*jobgraph.JobVertex)
				for _, v := range g.Vertices {
					log.vertices[v.ID] = v
				}
			}
		},
	}
	if log != nil {
		mo.JobStatusListener = log.record
		mo.ExecutionStateListener = log.execution
	}
	return wc.RunOnMiniCluster(ctx, files, mo)
}

// count spells n things: "1 slot", "2 slots".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
