package jobmaster_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/rpc"
)

// FailSlot from a TaskExecutor: the slot leaves the pool and the task in it fails; with no
// restart strategy the job fails with the slot's cause once the other task is canceled. A stale
// JobMasterID is refused and changes nothing.
func TestFailSlotFailsTheTaskInIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newHBEnv(t, jobmaster.Config{HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second})
		te1, te2 := e.runSources()
		var slotA jobgraph.AllocationID
		for a, name := range e.names {
			if name == "A" {
				slotA = a
			}
		}
		cause := rpc.Failure(errors.New("slot A lost its memory"))

		err := e.gw.FailSlot(e.ctx, jobgraph.NewJobMasterID(), te1.id, slotA, cause)
		require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
		synctest.Wait()
		assert.Equal(t, jobgraph.JobStatusRunning, e.status())

		require.NoError(t, e.gw.FailSlot(e.ctx, e.token, te1.id, slotA, cause))
		synctest.Wait()
		assert.Equal(t, jobgraph.JobStatusFailing, e.status())
		e.report(te2, "src (2/2)", jobgraph.ExecutionStateCanceled)
		assert.Equal(t, jobgraph.JobStatusFailed, e.status())
		res := e.jm.Result()
		assert.ErrorContains(t, res.Err, "slot A lost its memory")
		assert.Contains(t, res.Archived.FailureCause.Message, "src (1/2)")
		// Closing the ended JobMaster returns the archive the job ended with; it builds no other.
		assert.Same(t, res.Archived, e.jm.Close())
	})
}
