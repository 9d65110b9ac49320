package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/scheduler"
)

// The defaults of Flink's cleanup-strategy exponential-delay (the default cleanup-strategy).
const (
	// DefaultCleanupInitialBackoff is cleanup-strategy.exponential-delay.initial-backoff's default.
	DefaultCleanupInitialBackoff = time.Second
	// DefaultCleanupMaxBackoff is cleanup-strategy.exponential-delay.max-backoff's default.
	DefaultCleanupMaxBackoff = time.Hour
)

// cleanupRetry is the resolved retry strategy of the global cleanup's steps.
type cleanupRetry struct {
	initial, max time.Duration
	attempts     int // retries after the first try; 0: unlimited
}

// resolveCleanupRetry checks and defaults the cleanup-strategy fields of cfg.
func resolveCleanupRetry(cfg Config) (cleanupRetry, error) {
	r := cleanupRetry{initial: cfg.CleanupExponentialDelayInitialBackoff, max: cfg.CleanupExponentialDelayMaxBackoff, attempts: cfg.CleanupExponentialDelayAttempts}
	switch {
	case r.initial < 0:
		return r, fmt.Errorf("%w: CleanupExponentialDelayInitialBackoff (cleanup-strategy.exponential-delay.initial-backoff) is %v, negative (0 means %v)", ErrInvalidConfig, r.initial, DefaultCleanupInitialBackoff)
	case r.max < 0:
		return r, fmt.Errorf("%w: CleanupExponentialDelayMaxBackoff (cleanup-strategy.exponential-delay.max-backoff) is %v, negative (0 means %v)", ErrInvalidConfig, r.max, DefaultCleanupMaxBackoff)
	case r.attempts < 0:
		return r, fmt.Errorf("%w: CleanupExponentialDelayAttempts (cleanup-strategy.exponential-delay.attempts) is %d, negative (0 means unlimited)", ErrInvalidConfig, r.attempts)
	}
	if r.initial == 0 {
		r.initial = DefaultCleanupInitialBackoff
	}
	if r.max == 0 {
		r.max = DefaultCleanupMaxBackoff
	}
	if r.max < r.initial {
		return r, fmt.Errorf("%w: CleanupExponentialDelayMaxBackoff (cleanup-strategy.exponential-delay.max-backoff) %v is below the initial backoff %v", ErrInvalidConfig, r.max, r.initial)
	}
	return r, nil
}

// retry runs step until it succeeds, reporting true. It reports false, trying no more, once the
// Dispatcher closes (Close cancels the ctx step gets and ends a wait between tries), once the
// configured retries are used up, after a failure matching ha.ErrNotLeader (the Dispatcher's
// leader session is over: the next leader recovers the job and its dirty entry), and after one
// matching ha.ErrUnrecoverable; for that one and for retries used up it also returns
// an error naming the job, the step and the last failure (the caller decides whether that is
// fatal), for a close or ErrNotLeader none. After the n-th
// failure (n = 1, 2, …) it waits initial·2^(n-1), at most max, before trying again: with the
// defaults the tries are at 0 s, 1 s, 3 s, 7 s, … Flink: FutureUtils.retryWithDelay with the
// ExponentialBackoffRetryStrategy of cleanup-strategy exponential-delay (no jitter). Called off
// the Dispatcher's loop, on a goroutine the Dispatcher waits for in Close.
func (d *StandaloneDispatcher) retry(id jobgraph.JobID, label string, step func(ctx context.Context) error) (bool, error) {
	delay := d.retryStrategy.initial
	for retries := 0; ; retries++ {
		err := step(d.stopped)
		if err == nil {
			return true, nil
		}
		if d.stopped.Err() != nil {
			d.log.Info("cleanup step stopped: the Dispatcher is closing", "job", id, "step", label, "err", err)
			return false, nil
		}
		if errors.Is(err, ha.ErrNotLeader) {
			// Retrying cannot succeed: the session is over, and the next leader recovers the job.
			d.log.Info("cleanup step refused: this Dispatcher no longer leads; the next leader finishes the job's cleanup", "job", id, "step", label, "err", err)
			return false, nil
		}
		if errors.Is(err, ha.ErrUnrecoverable) {
			return false, fmt.Errorf("dispatcher: job %s: %s failed unrecoverably: %w", id, label, err)
		}
		if a := d.retryStrategy.attempts; a > 0 && retries >= a {
			return false, fmt.Errorf("dispatcher: job %s: %s failed; no retry left (cleanup-strategy.exponential-delay.attempts %d): %w", id, label, a, err)
		}
		d.log.Warn("cleanup step failed; retrying", "job", id, "step", label, "retry", retries+1, "in", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-d.stopped.Done():
			t.Stop()
			d.log.Info("cleanup step stopped: the Dispatcher is closing", "job", id, "step", label)
			return false, nil
		}
		if delay > d.retryStrategy.max/2 {
			delay = d.retryStrategy.max
		} else {
			delay *= 2
		}
	}
}

// recordGloballyTerminated writes the dirty JobResult of a job that reached a globally terminal
// state, retried as a cleanup step (an entry already there counts as written). It reports whether
// the JobResultStore has the result; false if the Dispatcher closed first, the retries ran out,
// the store's error matched ha.ErrUnrecoverable or the write was refused as not the leader's
// (nothing of the job is cleaned then: the job's plan and checkpoints stay for the next leader,
// which runs the job again, never losing it). The error is non-nil when the write failed for
// good (retries used up, ha.ErrUnrecoverable): the caller reports it as fatal. Flink:
// Dispatcher.registerGloballyTerminatedJobInJobResultStore, where any failure of the write is
// fatal at once; we retry under the cleanup strategy first.
func (d *StandaloneDispatcher) recordGloballyTerminated(result *jobgraph.JobResult) (bool, error) {
	return d.retry(result.JobID, "JobResultStore.CreateDirty", func(ctx context.Context) error {
		if err := d.cfg.HA.JobResultStore().CreateDirty(ctx, *result); err != nil && !errors.Is(err, ha.ErrAlreadyExists) {
			return err
		}
		return nil
	})
}

// cleanUpGlobally runs the global cleanup of a job whose dirty JobResult is in the
// JobResultStore (result is that entry's result), and then marks the entry clean. It reports
// whether the entry was marked clean. The steps run one after another, each retried on its own
// under cleanup-strategy exponential-delay (Config.CleanupExponentialDelay*) until it succeeds:
//
//  1. the job's checkpoints and checkpoint ID counter: opened through
//     HA.CheckpointRecoveryFactory() and shut down with discard, unless the job's
//     CheckpointingSettings.RetainOnCancellation keeps them because it did not finish (then this
//     step does nothing); only for a job with a CheckpointCoordinator
//     (scheduler.HasCheckpointCoordinator). Flink: CheckpointResourcesCleanup.
//  2. the plan: ExecutionPlanStore.Remove.
//  3. HA.CleanupJobData (Flink: HighAvailabilityServices.globalCleanupAsync).
//  4. JobResultStore.MarkClean, only once every step before succeeded.
//
// plan is the job's graph, which says what happens to the checkpoints; nil (a dirty result
// recovered with no JobMaster) reads it from the ExecutionPlanStore in step 1 (retried too). A
// plan that is gone there means an earlier cleanup of the job got past step 1 (the plan goes
// only after it), so step 1 does nothing. A closing Dispatcher starts no step (and ends the one
// under way, its ctx canceled), nor does one whose step was refused with ha.ErrNotLeader: the
// entry stays dirty for the next leader, which cleans it up again; every step may run again
// after it succeeded (removing what is gone is no error).
//
// It blocks until done; call it off the Dispatcher's loop on a goroutine that Close waits for
// (d.watchers). Flink: DispatcherResourceCleanerFactory's global ResourceCleaner (a
// DefaultResourceCleaner) followed by Dispatcher.markResultAsCleanAsync; Flink runs the steps
// after the prioritized one concurrently, we run them in this fixed order, so that the plan
// outlives the checkpoint decision that needs it and the order of store calls is deterministic.
func (d *StandaloneDispatcher) cleanUpGlobally(result *jobgraph.JobResult, plan *jobgraph.JobGraph) bool {
	id := result.JobID
	steps := []struct {
		label string
		run   func(ctx context.Context) error
	}{
		{"checkpoints", func(ctx context.Context) error { return d.cleanUpCheckpoints(ctx, result, plan) }},
		{"ExecutionPlanStore.Remove", func(ctx context.Context) error { return d.cfg.HA.ExecutionPlanStore().Remove(ctx, id) }},
		{"HA.CleanupJobData", func(ctx context.Context) error { return d.cfg.HA.CleanupJobData(ctx, id) }},
		{"JobResultStore.MarkClean", func(ctx context.Context) error { return d.cfg.HA.JobResultStore().MarkClean(ctx, id) }},
	}
	for _, s := range steps {
		if d.stopped.Err() != nil {
			d.log.Info("global cleanup stopped: the Dispatcher is closing; the job's JobResultStore entry stays dirty", "job", id, "next", s.label)
			return false
		}
		if ok, err := d.retry(id, s.label, s.run); !ok {
			if err != nil {
				// Flink logs a failed cleanup (Dispatcher.logCleanupErrorWarning) and goes on: the
				// job's result is safe in the JobResultStore, and the next leader cleans it up.
				d.log.Error("the job's global cleanup gave up: its JobResultStore entry stays dirty for the next leader", "job", id, "step", s.label, "err", err)
			}
			return false
		}
	}
	d.log.Info("job cleaned up", "job", id, "status", result.Status)
	return true
}

// cleanUpCheckpoints is step 1 of cleanUpGlobally.
func (d *StandaloneDispatcher) cleanUpCheckpoints(ctx context.Context, result *jobgraph.JobResult, plan *jobgraph.JobGraph) error {
	id := result.JobID
	if plan == nil {
		g, err := d.cfg.HA.ExecutionPlanStore().Get(ctx, id)
		switch {
		case errors.Is(err, ha.ErrNotFound):
			return nil // an earlier cleanup got past this step
		case err != nil:
			return fmt.Errorf("reading the job's plan for its checkpoint settings: %w", err)
		}
		plan = g
	}
	if !scheduler.HasCheckpointCoordinator(plan) {
		return nil
	}
	if plan.Checkpointing.RetainOnCancellation && result.Status != jobgraph.JobStatusFinished {
		// execution.checkpointing.externalized-checkpoint-retention = RETAIN_ON_CANCELLATION
		return nil
	}
	f := d.cfg.HA.CheckpointRecoveryFactory()
	if f == nil {
		return nil
	}
	store, err := f.CreateRecoveredCompletedCheckpointStore(id, plan.Checkpointing.NumRetained)
	if err != nil {
		return fmt.Errorf("opening the checkpoint store: %w", err)
	}
	if err := store.Shutdown(true); err != nil {
		return fmt.Errorf("discarding the checkpoints: %w", err)
	}
	counter, err := f.CreateCheckpointIDCounter(id)
	if err != nil {
		return fmt.Errorf("opening the checkpoint ID counter: %w", err)
	}
	if err := counter.Shutdown(true); err != nil {
		return fmt.Errorf("discarding the checkpoint ID counter: %w", err)
	}
	return nil
}
