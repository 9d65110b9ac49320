// Package dispatcher accepts jobs and runs each under its own JobMasterServiceLeadershipRunner:
// submit (validate, reject duplicates, persist, then run), cancel, status, result, list, and the
// archive of finished jobs. Flink: org.apache.flink.runtime.dispatcher.Dispatcher.
package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/internal/mainloop"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// ErrDuplicateJobSubmission matches every *DuplicateJobSubmissionError.
var ErrDuplicateJobSubmission = errors.New("duplicate job submission")

// ErrJobNotFound is returned for a JobID the Dispatcher does not know. Flink: FlinkJobNotFoundException.
var ErrJobNotFound = errors.New("job not found")

// ErrJobAlreadyTerminated is returned by CancelJob for a job that ended otherwise than CANCELED.
// Flink: FlinkJobTerminatedWithoutCancellationException.
var ErrJobAlreadyTerminated = errors.New("job already terminated")

// ErrShuttingDown is returned by SubmitJob once Close has begun.
var ErrShuttingDown = errors.New("dispatcher is shutting down")

// DuplicateJobSubmissionError says a JobID was submitted while a job under it runs (or is being
// submitted), or after a job under it reached a globally terminal state (its result is in the
// JobResultStore). Flink: DuplicateJobSubmissionException.
type DuplicateJobSubmissionError struct {
	JobID jobgraph.JobID
	// GloballyTerminated is true when the earlier job already ended for good.
	GloballyTerminated bool
}

func (e *DuplicateJobSubmissionError) Error() string {
	if e.GloballyTerminated {
		return fmt.Sprintf("duplicate job submission: job %s already reached a globally terminal state", e.JobID)
	}
	return fmt.Sprintf("duplicate job submission: job %s is already running or being submitted", e.JobID)
}

func (e *DuplicateJobSubmissionError) Is(target error) bool {
	return target == ErrDuplicateJobSubmission
}

// RunnerFactory builds the JobMaster factory for a submitted graph (the MiniCluster wires the
// slot pool, scheduler and connections into it). Flink: JobManagerRunnerFactory.
type RunnerFactory func(g *jobgraph.JobGraph) (jobmaster.ServiceFactory, error)

// Config configures a Dispatcher.
type Config struct {
	// HA provides the stores and the per-job leader elections. Required.
	HA ha.Services
	// JobMasterFactory builds a job's JobMaster factory. Required.
	JobMasterFactory RunnerFactory
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Dispatcher runs submitted jobs. Its state lives on its own main loop; every method is safe for
// concurrent use and implements rpc.DispatcherGateway.
type Dispatcher struct {
	cfg  Config
	log  *slog.Logger
	loop *mainloop.Loop

	// Owned by loop.
	jobs     map[jobgraph.JobID]*job
	archive  map[jobgraph.JobID]*archivedJob
	closing  bool
	watchers sync.WaitGroup
}

type job struct {
	name      string
	submitted time.Time
	runner    *jobmaster.LeadershipRunner // nil while the graph is being persisted
	archived  chan struct{}               // closed once the job is in the archive
	final     *archivedJob                // written before archived is closed
}

type archivedJob struct {
	result *jobgraph.JobResult
	graph  *executiongraph.ArchivedExecutionGraph
}

var _ rpc.DispatcherGateway = (*Dispatcher)(nil)

// New returns a Dispatcher; it serves calls at once.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.HA == nil || cfg.JobMasterFactory == nil {
		return nil, errors.New("dispatcher: Config.HA and Config.JobMasterFactory are required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Dispatcher{
		cfg:     cfg,
		log:     log,
		loop:    mainloop.New("dispatcher"),
		jobs:    make(map[jobgraph.JobID]*job),
		archive: make(map[jobgraph.JobID]*archivedJob),
	}, nil
}

// SubmitJob validates g, rejects a duplicate, persists g to the ExecutionPlanStore and then starts
// the job's runner; it returns once the job runs (not when it ends). Errors: the
// *jobgraph.ValidationError; a *DuplicateJobSubmissionError (GloballyTerminated when the
// JobResultStore has the job); ErrShuttingDown; a store failure. On any error nothing is kept
// and a job already running under the ID is untouched. The Dispatcher keeps its own copy of g.
func (d *Dispatcher) SubmitJob(ctx context.Context, g *jobgraph.JobGraph) error {
	if err := g.Validate(); err != nil {
		return err
	}
	g, err := g.Clone()
	if err != nil {
		return fmt.Errorf("dispatcher: copy job graph: %w", err)
	}
	id := g.JobID
	// Reserve the JobID on the loop: of concurrent submissions exactly one gets here.
	entry := &job{name: g.Name, submitted: time.Now(), archived: make(chan struct{})}
	if err := d.loop.Call(ctx, func() error {
		if d.closing {
			return ErrShuttingDown
		}
		if _, running := d.jobs[id]; running {
			return &DuplicateJobSubmissionError{JobID: id}
		}
		if a, done := d.archive[id]; done && a.result.Status.IsGloballyTerminal() {
			return &DuplicateJobSubmissionError{JobID: id, GloballyTerminated: true}
		}
		d.jobs[id] = entry
		return nil
	}); err != nil {
		if errors.Is(err, mainloop.ErrClosed) {
			return ErrShuttingDown
		}
		return err
	}
	if err := d.persistAndRun(ctx, g, entry); err != nil {
		d.loop.Execute(func() {
			if d.jobs[id] == entry {
				delete(d.jobs, id)
			}
		})
		return err
	}
	return nil
}

func (d *Dispatcher) persistAndRun(ctx context.Context, g *jobgraph.JobGraph, entry *job) error {
	id := g.JobID
	if _, err := d.cfg.HA.JobResultStore().Get(ctx, id); err == nil {
		return &DuplicateJobSubmissionError{JobID: id, GloballyTerminated: true}
	} else if !errors.Is(err, ha.ErrNotFound) {
		return fmt.Errorf("dispatcher: job %s: reading the JobResultStore: %w", id, err)
	}
	factory, err := d.cfg.JobMasterFactory(g)
	if err != nil {
		return fmt.Errorf("dispatcher: job %s: %w", id, err)
	}
	if err := d.cfg.HA.ExecutionPlanStore().Put(ctx, g); err != nil {
		return fmt.Errorf("dispatcher: job %s: persisting the job graph: %w", id, err)
	}
	runner := jobmaster.NewLeadershipRunner(factory, d.cfg.HA.JobMasterLeaderElection(id), d.cfg.HA.JobResultStore())
	return d.loop.Call(context.Background(), func() error {
		if d.closing {
			runner.Close()
			_ = d.cfg.HA.ExecutionPlanStore().Remove(context.Background(), id)
			return ErrShuttingDown
		}
		entry.runner = runner
		if err := runner.Start(); err != nil {
			runner.Close()
			_ = d.cfg.HA.ExecutionPlanStore().Remove(context.Background(), id)
			return fmt.Errorf("dispatcher: job %s: starting its runner: %w", id, err)
		}
		d.watchers.Go(func() { d.watch(id, entry, runner) })
		d.log.Info("job submitted", "job", id, "name", g.Name)
		return nil
	})
}

// watch waits for the runner's result, records it, cleans up, and archives the job.
func (d *Dispatcher) watch(id jobgraph.JobID, entry *job, runner *jobmaster.LeadershipRunner) {
	res := runner.Result()
	runner.Close()
	a := res.Archived
	result := &jobgraph.JobResult{
		JobID:            id,
		Name:             entry.name,
		Status:           a.Status,
		Failure:          a.FailureCause,
		ExceptionHistory: a.ExceptionHistory,
		RootCause:        res.Err,
	}
	if end := a.StatusTimestamp(a.Status); !end.IsZero() && end.After(entry.submitted) {
		result.NetRuntime = end.Sub(entry.submitted)
	}
	ctx := context.Background()
	if a.Status.IsGloballyTerminal() {
		// Dirty first, then global cleanup, then clean: a crash in between leaves a dirty entry
		// that recovery finishes cleaning, and the job is never run again.
		if err := d.cfg.HA.JobResultStore().CreateDirty(ctx, *result); err != nil && !errors.Is(err, ha.ErrAlreadyExists) {
			d.log.Error("writing the job result failed", "job", id, "err", err)
		} else if err := d.cfg.HA.ExecutionPlanStore().Remove(ctx, id); err != nil {
			d.log.Error("removing the job graph failed", "job", id, "err", err)
		} else if err := d.cfg.HA.JobResultStore().MarkClean(ctx, id); err != nil {
			d.log.Error("marking the job result clean failed", "job", id, "err", err)
		}
	}
	entry.final = &archivedJob{result: result, graph: a}
	d.loop.Execute(func() {
		d.archive[id] = entry.final
		if d.jobs[id] == entry {
			delete(d.jobs, id)
		}
		close(entry.archived)
		d.log.Info("job ended", "job", id, "status", result.Status)
	})
}

type lookup struct {
	runner   *jobmaster.LeadershipRunner
	archived *archivedJob
	job      *job // the running job, when not archived
}

func (d *Dispatcher) lookup(ctx context.Context, id jobgraph.JobID) (lookup, error) {
	return mainloop.Submit(ctx, d.loop, func() (lookup, error) {
		if a, ok := d.archive[id]; ok {
			return lookup{archived: a}, nil
		}
		if j, ok := d.jobs[id]; ok {
			return lookup{runner: j.runner, job: j}, nil
		}
		return lookup{}, fmt.Errorf("%w: %s", ErrJobNotFound, id)
	})
}

// CancelJob cancels a running job (CANCELLING, then CANCELED). It is a no-op for a CANCELED
// job and fails with ErrJobAlreadyTerminated for a job that ended otherwise, and with
// ErrJobNotFound for an unknown JobID.
func (d *Dispatcher) CancelJob(ctx context.Context, id jobgraph.JobID) error {
	l, err := d.lookup(ctx, id)
	switch {
	case err != nil:
		return err
	case l.archived != nil:
		if l.archived.result.Status == jobgraph.JobStatusCanceled {
			return nil
		}
		return fmt.Errorf("%w: job %s ended with status %s", ErrJobAlreadyTerminated, id, l.archived.result.Status)
	case l.runner == nil:
		return fmt.Errorf("dispatcher: job %s is still being submitted; cancel it once SubmitJob returned", id)
	}
	return l.runner.Cancel(ctx)
}

// RequestJobStatus returns the job's current status, or ErrJobNotFound.
func (d *Dispatcher) RequestJobStatus(ctx context.Context, id jobgraph.JobID) (jobgraph.JobStatus, error) {
	l, err := d.lookup(ctx, id)
	switch {
	case err != nil:
		return 0, err
	case l.archived != nil:
		return l.archived.result.Status, nil
	case l.runner == nil:
		return jobgraph.JobStatusInitializing, nil
	}
	return l.runner.RequestJobStatus(ctx)
}

// RequestJob returns the job's ArchivedExecutionGraph (a live snapshot while it runs), or
// ErrJobNotFound.
func (d *Dispatcher) RequestJob(ctx context.Context, id jobgraph.JobID) (*executiongraph.ArchivedExecutionGraph, error) {
	l, err := d.lookup(ctx, id)
	switch {
	case err != nil:
		return nil, err
	case l.archived != nil:
		return l.archived.graph, nil
	case l.runner == nil:
		return nil, fmt.Errorf("dispatcher: job %s is still being submitted", id)
	}
	return l.runner.RequestJob(ctx)
}

// RequestJobResult waits until the job has ended and been archived, or ctx ends, and returns
// its result; ErrJobNotFound for an unknown JobID. Jobs still running when the Dispatcher closes
// end SUSPENDED.
func (d *Dispatcher) RequestJobResult(ctx context.Context, id jobgraph.JobID) (*jobgraph.JobResult, error) {
	l, err := d.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if l.archived != nil {
		return l.archived.result, nil
	}
	select {
	case <-l.job.archived:
		return l.job.final.result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ListJobs lists running and archived jobs, sorted by submission order of the running ones, then
// the archived ones by JobID.
func (d *Dispatcher) ListJobs(ctx context.Context) ([]rpc.JobStatusMessage, error) {
	type running struct {
		id jobgraph.JobID
		j  *job
	}
	var live []running
	var out []rpc.JobStatusMessage
	if err := d.loop.Call(ctx, func() error {
		for id, j := range d.jobs {
			live = append(live, running{id, j})
		}
		for id, a := range d.archive {
			out = append(out, rpc.JobStatusMessage{JobID: id, Name: a.result.Name, Status: a.result.Status,
				StartTime: a.graph.StatusTimestamp(jobgraph.JobStatusInitializing).UnixMilli()})
		}
		return nil
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b rpc.JobStatusMessage) int { return slices.Compare(a.JobID[:], b.JobID[:]) })
	slices.SortFunc(live, func(a, b running) int { return a.j.submitted.Compare(b.j.submitted) })
	msgs := make([]rpc.JobStatusMessage, 0, len(live)+len(out))
	for _, r := range live {
		status := jobgraph.JobStatusInitializing
		if r.j.runner != nil {
			s, err := r.j.runner.RequestJobStatus(ctx)
			if err != nil {
				return nil, err
			}
			status = s
		}
		msgs = append(msgs, rpc.JobStatusMessage{JobID: r.id, Name: r.j.name, Status: status, StartTime: r.j.submitted.UnixMilli()})
	}
	return append(msgs, out...), nil
}

// Close stops accepting jobs, closes every runner — jobs not yet ended are SUSPENDED, and pending
// RequestJobResult calls return that — and waits for everything the Dispatcher started.
// Persisted graphs of suspended jobs stay in the ExecutionPlanStore for recovery.
func (d *Dispatcher) Close() error {
	var runners []*jobmaster.LeadershipRunner
	_ = d.loop.Call(context.Background(), func() error {
		d.closing = true
		for _, j := range d.jobs {
			if j.runner != nil {
				runners = append(runners, j.runner)
			}
		}
		return nil
	})
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(r.Close)
	}
	wg.Wait()
	d.watchers.Wait()
	d.loop.Close()
	return nil
}
