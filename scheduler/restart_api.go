package scheduler

import (
	"errors"
	"time"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
)

// ErrNoFailureYet is returned by RestartBackoffTimeStrategy.BackoffTime before any failure was
// recorded: there is no restart to wait for.
var ErrNoFailureYet = errors.New("no failure recorded yet")

// RestartBackoffTimeStrategy decides, failure by failure, whether the job may restart and how
// long to wait first. Implementations are plain state driven from the JobMaster's main loop;
// their clock (and random source, for jitter) is injected.
// Flink: org.apache.flink.runtime.executiongraph.failover.RestartBackoffTimeStrategy.
type RestartBackoffTimeStrategy interface {
	// NotifyFailure records a failure at the clock's current time. It reports whether the
	// failure starts a new restart attempt (true), or merges into the attempt already pending
	// (false: it arrived before the restart it would cause was carried out, and is not counted
	// again). Flink: notifyFailure (FLIP-364 for the merging).
	NotifyFailure(cause error) bool
	// CanRestart reports whether the failures recorded so far allow another restart.
	CanRestart() bool
	// BackoffTime is how long to wait before the restart of the current attempt;
	// ErrNoFailureYet before any failure.
	BackoffTime() (time.Duration, error)
}

// AttemptDone is implemented by strategies that need to know when a restart was carried out, so
// that later failures start a new attempt (exponential-delay merges failures that arrive while a
// restart is pending). The scheduler calls it when it restarts the tasks of an attempt.
type AttemptDone interface {
	RestartDone()
}

// FailoverStrategy picks the vertices to restart when a task fails.
// Flink: org.apache.flink.runtime.executiongraph.failover.FailoverStrategy.
type FailoverStrategy interface {
	// TasksToRestart returns the vertices to restart because failed failed with cause, in
	// topological order, failed included. It reads the graph and partition availability as they
	// are now; it changes nothing.
	TasksToRestart(failed *executiongraph.ExecutionVertex, cause error) []*executiongraph.ExecutionVertex
}

// ResultPartitionAvailabilityChecker tells whether a produced partition can still be read (its
// producer finished and the TaskExecutor holding it is alive). Flink: ResultPartitionAvailabilityChecker.
type ResultPartitionAvailabilityChecker interface {
	IsAvailable(id jobgraph.IntermediateResultPartitionID) bool
}

// PartitionAvailabilityChecker is what a ResultPartitionAvailabilityChecker may implement besides
// to be asked with the partition itself, one of the strategy's graph, so it need not look the
// partition up by ID: region failover asks it instead of IsAvailable when it is there (for an
// ALL_TO_ALL BLOCKING edge of 10,000 producers that is 10,000 map lookups less per failure), and
// the answers must be IsAvailable's for p.ID(). The scheduler's own tracking implements it. Called
// on the scheduler's goroutine, like IsAvailable. (Flink has no such method: its checker is asked by
// ID.)
type PartitionAvailabilityChecker interface {
	IsPartitionAvailable(p *executiongraph.IntermediateResultPartition) bool
}

// UnavailablePartitionError is implemented by task failures caused by an input partition that
// could not be read (taskexecutor.PartitionError is one): region failover then restarts the
// partition's producer region too. Flink: PartitionException.
type UnavailablePartitionError interface {
	error
	UnavailablePartition() jobgraph.IntermediateResultPartitionID
}
