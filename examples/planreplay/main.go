// Command planreplay replays a real Apache Flink job plan on an in-process jobgraph cluster: it
// imports the plan with flinkplan (the JobManager's REST /jobs/:jobid/plan body, or the JSON of
// getExecutionPlan() / EXPLAIN JSON_EXECUTION_PLAN, told apart by themselves), gives every vertex
// synthetic task code and runs the job on a MiniCluster with exactly the slots the job needs.
//
//	go run ./examples/planreplay -plan flinkplan/testdata/rest_streaming_wordcount_p4.json
//	go run ./examples/planreplay -plan plan.json -records 100000 -task-time 1ms -taskexecutors 2
//	go run ./examples/planreplay -plan plan.json -summary
//
// The synthetic task: a source (a vertex without inputs) generates -records records, split over
// its subtasks; every other vertex reads every record of all its inputs. Each record processed
// takes -task-time and is written to every output of the vertex, round-robin over the output's
// subpartitions (one per consumer subtask it reaches).
//
// Slots: the job needs, per slot-sharing group, as many slots as the group's largest
// parallelism, summed over the groups (a vertex without a group is a group of its own). Imported
// plans have every vertex in Flink's "default" group, so that is the largest parallelism. The
// cluster gets -taskexecutors TaskExecutors (default 1) with ceil(slots / taskexecutors) slots each
// unless -slots says otherwise, and slot requests time out after -slot-timeout, so a job given
// too few slots FAILS (no resource available) instead of waiting for ever.
//
// It prints the plan's shape, each status transition of the job, records and time per vertex,
// and a summary. With -summary it prints only one JSON line:
//
//	{"vertices":3,"edges":2,"tasks":9,"regions":1,"slots":4,"status":"FINISHED"}
//
// vertices and edges after chaining, tasks the sum of the parallelism, regions the pipelined
// regions of the ExecutionGraph, slots as above, status the job's final status. The exit code is
// 1 when the plan cannot be read or imported (the error names the offending node) or the job does
// not finish.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/flinkplan"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "planreplay:", err)
		os.Exit(1)
	}
}

// options are the command line flags.
type options struct {
	plan          string
	records       int
	taskTime      time.Duration
	taskExecutors int
	slots         int // per TaskExecutor; 0: ceil(needed / taskExecutors)
	slotTimeout   time.Duration
	summary       bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("planreplay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.plan, "plan", "", "Flink plan to replay: a REST /jobs/:jobid/plan body or getExecutionPlan() JSON (required)")
	fs.IntVar(&o.records, "records", 1000, "records each source vertex generates, split over its subtasks")
	fs.DurationVar(&o.taskTime, "task-time", 0, "time a task spends on each record it processes")
	fs.IntVar(&o.taskExecutors, "taskexecutors", 1, "number of TaskExecutors")
	fs.IntVar(&o.slots, "slots", 0, "slots per TaskExecutor (default: ceil(slots the job needs / taskexecutors))")
	fs.DurationVar(&o.slotTimeout, "slot-timeout", 10*time.Second, "slot request timeout (slot.request.timeout): a job without enough slots fails after it")
	fs.BoolVar(&o.summary, "summary", false, "print only one JSON line: vertices, edges, tasks, regions, slots, status")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.plan == "":
		return o, errors.New("-plan is required")
	case o.records < 0:
		return o, errors.New("-records must be at least 0")
	case o.taskTime < 0:
		return o, errors.New("-task-time must be at least 0")
	case o.taskExecutors < 1:
		return o, errors.New("-taskexecutors must be at least 1")
	case o.slots < 0:
		return o, errors.New("-slots must be at least 0")
	case o.slotTimeout <= 0:
		return o, errors.New("-slot-timeout must be positive")
	}
	return o, nil
}

// syncWriter serializes writes: the job status listener writes from the JobMaster's loop.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	plan, err := loadPlan(o.plan)
	if err != nil {
		return err
	}
	g := plan.Graph
	sum, err := describe(g)
	if err != nil {
		return err
	}
	slots := o.slots
	if slots == 0 {
		slots = (sum.Slots + o.taskExecutors - 1) / o.taskExecutors
	}
	out := &syncWriter{w: stdout}
	if !o.summary {
		printPlan(out, o, plan, sum, slots)
	}

	stats := make(map[jobgraph.JobVertexID]*vertexStats, len(g.Vertices))
	for _, v := range g.Vertices {
		stats[v.ID] = &vertexStats{}
	}
	reg := taskexecutor.NewRegistry()
	reg.Register(flinkplan.DefaultInvokable, (&syntheticTask{records: o.records, taskTime: o.taskTime, stats: stats}).invoke)

	var listener func(jobgraph.JobID, jobgraph.JobStatus, time.Time)
	start := time.Now()
	if !o.summary {
		fmt.Fprintln(out)
		listener = func(job jobgraph.JobID, status jobgraph.JobStatus, at time.Time) {
			fmt.Fprintf(out, "  %8s  job %s is %s\n", at.Sub(start).Round(time.Millisecond), job.String()[:8], status)
		}
	}
	res, archived, err := runJob(ctx, g, reg, minicluster.Config{
		TaskExecutors:        o.taskExecutors,
		SlotsPerTaskExecutor: slots,
		SlotRequestTimeout:   o.slotTimeout,
		JobStatusListener:    listener,
	})
	if err != nil {
		return err
	}
	total := time.Since(start)
	sum.Status = res.Status

	if o.summary {
		line, err := json.Marshal(sum)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s\n", line)
	} else {
		printVertices(out, g, archived, stats)
		fmt.Fprintf(out, "\n%s in %s: %d vertices, %d edges, %d tasks, %d pipelined regions, %d slots\n",
			res.Status, total.Round(time.Millisecond), sum.Vertices, sum.Edges, sum.Tasks, sum.Regions, sum.Slots)
	}
	if res.Status != jobgraph.JobStatusFinished {
		cause := res.RootCause
		if cause == nil && res.Failure != nil {
			cause = errors.New(res.Failure.Message)
		}
		if cause == nil {
			cause = errors.New("no cause given")
		}
		return fmt.Errorf("job %s ended %s: %w", g.JobID, res.Status, cause)
	}
	return nil
}

// runJob runs g on a fresh MiniCluster configured by cfg with the task code in reg, and returns
// the job's result and its archived ExecutionGraph.
func runJob(ctx context.Context, g *jobgraph.JobGraph, reg *taskexecutor.Registry, cfg minicluster.Config) (*jobgraph.JobResult, *executiongraph.ArchivedExecutionGraph, error) {
	cfg.Registry = reg
	mc, err := minicluster.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := mc.Start(ctx); err != nil {
		return nil, nil, errors.Join(err, mc.Close())
	}
	defer mc.Close()
	res, err := mc.Run(ctx, g)
	if err != nil {
		return nil, nil, err
	}
	archived, err := mc.RequestJob(ctx, g.JobID)
	if err != nil {
		return nil, nil, err
	}
	return res, archived, nil
}

// printPlan prints what was imported and the cluster it runs on.
func printPlan(w io.Writer, o options, plan *flinkplan.Plan, sum summary, slots int) {
	g := plan.Graph
	fmt.Fprintf(w, "planreplay: %s plan %s: %s job %q\n", plan.Format, o.plan, g.Type, g.Name)
	fmt.Fprintf(w, "  %d vertices, %d edges, %d tasks, %d pipelined regions; needs %d slots; %d TaskExecutor(s) × %d slots\n",
		sum.Vertices, sum.Edges, sum.Tasks, sum.Regions, sum.Slots, o.taskExecutors, slots)
	producers := g.Producers()
	for _, v := range g.Vertices {
		fmt.Fprintf(w, "  %s  parallelism %d  %s\n", v.ID.String()[:8], v.Parallelism, shortName(v.Name))
		for _, e := range v.Inputs {
			p := producers[e.Source]
			var rt jobgraph.ResultPartitionType
			for _, ds := range p.Results {
				if ds.ID == e.Source {
					rt = ds.ResultType
				}
			}
			fmt.Fprintf(w, "      <- %s  %s %s %s\n", p.ID.String()[:8], e.ShipStrategy, e.DistributionPattern, rt)
		}
	}
}

// printVertices prints, per vertex, the records processed and written and the time from the
// first subtask's deployment to the last one's end.
func printVertices(w io.Writer, g *jobgraph.JobGraph, archived *executiongraph.ArchivedExecutionGraph, stats map[jobgraph.JobVertexID]*vertexStats) {
	fmt.Fprintf(w, "\n  %-8s  %11s  %10s  %10s  %8s  %s\n", "vertex", "parallelism", "records", "written", "time", "name")
	for _, av := range archived.JobVertices {
		first, last := time.Time{}, time.Time{}
		for _, s := range av.Subtasks {
			if t, ok := s.StateTimestamps[jobgraph.ExecutionStateDeploying]; ok && (first.IsZero() || t.Before(first)) {
				first = t
			}
			for st, t := range s.StateTimestamps {
				if st.IsTerminal() && t.After(last) {
					last = t
				}
			}
		}
		var d time.Duration
		if !first.IsZero() && last.After(first) {
			d = last.Sub(first).Round(time.Millisecond)
		}
		var records, written int64
		if st := stats[av.ID]; st != nil {
			records, written = st.records.Load(), st.written.Load()
		}
		fmt.Fprintf(w, "  %-8s  %11d  %10d  %10d  %8s  %s\n", av.ID.String()[:8], av.Parallelism, records, written, d, shortName(av.Name))
	}
}

// shortName is the first line of a vertex name (REST descriptions span lines), at most 70 runes.
func shortName(name string) string {
	name, _, _ = strings.Cut(name, "\n")
	if r := []rune(name); len(r) > 70 {
		return string(r[:69]) + "…"
	}
	return name
}
