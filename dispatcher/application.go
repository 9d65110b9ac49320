package dispatcher

import (
	"context"
	"errors"
	"fmt"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/rpc"
)

// ErrInvalidApplication is matched (errors.Is) by RunApplication's error for a set of jobs it
// refuses before submitting any: none at all, or two with one JobID.
var ErrInvalidApplication = errors.New("dispatcher: invalid application")

// ErrApplicationSuspended is matched by RunApplication's error when a job of the application
// ended SUSPENDED — the Dispatcher closed, or lost its leadership, before the job reached a
// globally terminal state. The job's plan and checkpoints are kept: running the application
// again over the same HA services resumes it.
var ErrApplicationSuspended = errors.New("dispatcher: application suspended")

// RunApplication runs a fixed set of jobs on d and waits until every one of them reached a
// globally terminal state (FINISHED, FAILED or CANCELED): Flink's application mode, the
// ApplicationDispatcherBootstrap with its EmbeddedExecutor (and, for one job, the per-job
// MiniDispatcher). It returns one result per job, in jobs' order. It does not close d:
// minicluster.(*MiniCluster).RunApplication runs an application and then shuts the cluster down.
//
// Each job is submitted in order, and a job submitted before is never run a second time, so that
// running the application again after its process restarted (over the same HA services, the
// jobs under the same JobIDs) finishes what is left:
//   - a job the Dispatcher accepts runs, and is waited for;
//   - a *DuplicateJobSubmissionError with GloballyTerminated counts as success, as in Flink's
//     application mode since FLINK-21928: the job ended in an earlier run, and it is reported
//     with the result RequestJobResult answers (from the Dispatcher's archive or the
//     JobResultStore), without starting a JobMaster;
//   - a *DuplicateJobSubmissionError without it means the job runs already (a new leader
//     recovered it from the ExecutionPlanStore): it is waited for, not submitted again.
//
// Errors, each naming the job (its index in jobs, JobID and name):
//   - before anything is submitted: ErrInvalidApplication for no jobs or a JobID used twice; a
//     nil or invalid graph (matching jobgraph.ErrInvalidJobGraph; an invalid one is the
//     *jobgraph.ValidationError);
//   - a submission that fails otherwise (d closed, a store failure) ends RunApplication with
//     that error and nil results; the jobs submitted before it keep running on d (closing d
//     suspends them and keeps them for the next run);
//   - once every job is submitted, the results are collected in order and every result is
//     returned, with an error joining: a job that ended SUSPENDED (ErrApplicationSuspended; its
//     result is in the slice), a job whose result d no longer answers because d closed
//     (ErrApplicationSuspended and rpc.ErrClosed; its result is nil), and a job that had ended in an earlier run but whose result is
//     known no more (ErrJobNotFound, once the JobResultStore dropped its clean entry; its
//     result is nil — Flink reports an unknown result there);
//   - ctx ending returns the results learned so far (nil for the others) with ctx's error; the
//     jobs keep running on d.
//
// A FAILED or CANCELED job is a result, not an error: the caller reads each Status.
//
// Where we differ from Flink: Flink's application fails at its first job that did not finish
// and then cancels the others (execution.terminate-application-on-any-job-terminated-exceptionally,
// default true); RunApplication lets every job run to its end. Flink's bootstrap is handed the
// JobIDs its Dispatcher recovered and does not submit those, and fails the application on any
// other duplicate of a running job; here the Dispatcher's duplicate error is what says a job
// runs already, so a job under one of the application's JobIDs that some other caller submitted
// is waited for as if it were the application's. The JobIDs are the caller's: Flink fixes them
// in HA application mode ($internal.pipeline.job-id, or the zero JobID); here a restarted run
// must pass graphs with the JobIDs of the first.
//
// # Leadership
//
// A Dispatcher that may not lead — one with an AwaitLeadership(ctx) error method, which answers
// errors matching ha.ErrNotLeader while another process leads — runs the application only while
// it leads, as Flink runs the bootstrap in its Dispatcher's leader process: RunApplication first
// waits until d leads, and when an answer says the leadership ended under it (errors.Is
// ha.ErrNotLeader), it waits for the next leadership of d and runs the application again there:
// the jobs that ended meanwhile are globally terminated duplicates, the others were recovered by
// the new leader or are submitted again, so none runs twice. A Dispatcher without
// AwaitLeadership gets one run: its not-leader error is returned.
//
// Call it from any goroutine; it waits on d's methods only, never on d's loop.
func RunApplication(ctx context.Context, d Dispatcher, jobs []*jobgraph.JobGraph) ([]*jobgraph.JobResult, error) {
	if err := checkApplication(jobs); err != nil {
		return nil, err
	}
	awaiter, _ := d.(leadershipAwaiter)
	for {
		if awaiter != nil {
			if err := awaiter.AwaitLeadership(ctx); err != nil {
				return nil, fmt.Errorf("dispatcher: application: waiting for the Dispatcher's leadership: %w", err)
			}
		}
		results, err := runApplication(ctx, d, jobs)
		if awaiter == nil || ctx.Err() != nil || !errors.Is(err, ha.ErrNotLeader) {
			return results, err
		}
		// The leadership ended under the application: the next session, in this process or
		// another, recovers the unfinished jobs; run the application again under d's next one.
	}
}

// leadershipAwaiter is a Dispatcher that may not lead now (its calls then fail with errors
// matching ha.ErrNotLeader) and can wait until it does: the Dispatcher run under the cluster's
// Dispatcher leader election (Flink's DefaultDispatcherRunner).
type leadershipAwaiter interface {
	AwaitLeadership(ctx context.Context) error
}

// runApplication is one run of RunApplication's, under one leadership of d.
func runApplication(ctx context.Context, d Dispatcher, jobs []*jobgraph.JobGraph) ([]*jobgraph.JobResult, error) {
	// earlier[i]: job i reached a globally terminal state in an earlier run.
	earlier := make([]bool, len(jobs))
	for i, g := range jobs {
		err := d.SubmitJob(ctx, g)
		var dup *DuplicateJobSubmissionError
		switch {
		case err == nil:
		case errors.As(err, &dup) && dup.JobID == g.JobID:
			earlier[i] = dup.GloballyTerminated
		default:
			return nil, fmt.Errorf("dispatcher: application: submitting %s: %w", describe(i, g), err)
		}
	}
	results := make([]*jobgraph.JobResult, len(jobs))
	var errs []error
	for i, g := range jobs {
		res, err := d.RequestJobResult(ctx, g.JobID)
		switch {
		case err != nil && ctx.Err() != nil:
			return results, errors.Join(append(errs, fmt.Errorf("dispatcher: application: waiting for %s: %w", describe(i, g), ctx.Err()))...)
		case err != nil && earlier[i] && errors.Is(err, ErrJobNotFound):
			errs = append(errs, fmt.Errorf("dispatcher: application: %s reached a globally terminal state in an earlier run, and its result is no longer known: %w", describe(i, g), err))
		case err != nil && errors.Is(err, rpc.ErrClosed):
			errs = append(errs, fmt.Errorf("%w: %s: the Dispatcher closed before the job reached a globally terminal state (%w); running the application again resumes it", ErrApplicationSuspended, describe(i, g), err))
		case err != nil:
			errs = append(errs, fmt.Errorf("dispatcher: application: waiting for %s: %w", describe(i, g), err))
		case !res.Status.IsGloballyTerminal():
			results[i] = res
			errs = append(errs, fmt.Errorf("%w: %s ended %s before it reached a globally terminal state; running the application again resumes it", ErrApplicationSuspended, describe(i, g), res.Status))
		default:
			results[i] = res
		}
	}
	return results, errors.Join(errs...)
}

// checkApplication refuses an application RunApplication cannot run, before it submits anything.
func checkApplication(jobs []*jobgraph.JobGraph) error {
	if len(jobs) == 0 {
		return fmt.Errorf("%w: no jobs (Flink: the application contains no execute() calls)", ErrInvalidApplication)
	}
	first := make(map[jobgraph.JobID]int, len(jobs))
	for i, g := range jobs {
		if g == nil {
			return fmt.Errorf("dispatcher: application: job %d: %w: the job graph is nil", i, jobgraph.ErrInvalidJobGraph)
		}
		if err := g.Validate(); err != nil {
			return fmt.Errorf("dispatcher: application: %s: %w", describe(i, g), err)
		}
		if j, ok := first[g.JobID]; ok {
			return fmt.Errorf("%w: %s has the JobID of job %d (%q)", ErrInvalidApplication, describe(i, g), j, jobs[j].Name)
		}
		first[g.JobID] = i
	}
	return nil
}

func describe(i int, g *jobgraph.JobGraph) string {
	return fmt.Sprintf("job %d (%s, %q)", i, g.JobID, g.Name)
}
