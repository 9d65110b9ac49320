package jobmaster

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph"
)

func attempt(n int) jobgraph.ExecutionAttemptID {
	return jobgraph.ExecutionAttemptID{ExecutionVertexID: jobgraph.ExecutionVertexID{Subtask: n}}
}

// Flink's DefaultExecutionDeploymentReconciler semantics: a reported attempt not tracked on the
// TaskExecutor is unknown; a tracked attempt not reported is missing only once its SubmitTask
// was acknowledged (DEPLOYED), never while PENDING; a terminal (stopped) attempt is neither;
// attempts of another TaskExecutor do not count.
func TestDeploymentTrackerReconcile(t *testing.T) {
	d := newDeploymentTracker()
	d.startPending(attempt(1), "te-1") // pending, not reported: nothing
	d.startPending(attempt(2), "te-1")
	d.complete(attempt(2)) // deployed, not reported: missing
	d.startPending(attempt(3), "te-1")
	d.complete(attempt(3)) // deployed and reported: fine
	d.startPending(attempt(4), "te-2")
	d.complete(attempt(4)) // another TaskExecutor's
	d.startPending(attempt(5), "te-1")
	d.complete(attempt(5))
	d.stop(attempt(5))     // terminal: no longer tracked
	d.complete(attempt(5)) // an acknowledgement after that tracks nothing again

	unknown, missing := d.reconcile("te-1", []jobgraph.ExecutionAttemptID{attempt(3), attempt(4), attempt(5)})
	assert.ElementsMatch(t, []jobgraph.ExecutionAttemptID{attempt(4), attempt(5)}, unknown)
	assert.Equal(t, []jobgraph.ExecutionAttemptID{attempt(2)}, missing)

	d.stopHost("te-1")
	unknown, missing = d.reconcile("te-1", nil)
	assert.Empty(t, unknown)
	assert.Empty(t, missing)
	_, missing = d.reconcile("te-2", nil)
	assert.Equal(t, []jobgraph.ExecutionAttemptID{attempt(4)}, missing, "te-2's attempts are still tracked")
}
