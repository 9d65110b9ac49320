package rpc_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/dispatcher"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/flinkplan"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/minicluster"
	"github.com/jobgraph/jobgraph/resourcemanager"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/slotpool"
	"github.com/jobgraph/jobgraph/taskexecutor"
)

// Every sentinel a job's result, a task's failure or a gateway answer can carry crosses a process
// boundary as plain data and still matches errors.Is on the far side: it is wrapped, turned into
// the ErrorInfo a message carries, encoded to JSON, decoded, and turned back into an error.
func TestLibrarySentinelsMatchAfterCrossingAsJSON(t *testing.T) {
	for _, sentinel := range []error{
		jobgraph.ErrInvalidJobGraph, jobgraph.ErrAccumulatorTypeMismatch,
		rpc.ErrFencingTokenMismatch, rpc.ErrUnknownAddress, rpc.ErrClosed, rpc.ErrHeartbeatTimeout, rpc.ErrHeartbeatTargetUnreachable,
		rpc.ErrNoOperatorCoordinator, rpc.ErrTaskNotRunning,
		ha.ErrNotFound, ha.ErrAlreadyExists,
		executiongraph.ErrIllegalTransition,
		scheduler.ErrUnknownStrategy, scheduler.ErrNoTimers, scheduler.ErrNoFailureYet,
		slotpool.ErrNoResourceAvailable, slotpool.ErrRequestCanceled, slotpool.ErrPoolClosed, slotpool.ErrIdleSlot,
		taskexecutor.ErrClosed, taskexecutor.ErrKilled, taskexecutor.ErrPartitionLost, taskexecutor.ErrPartitionReleased,
		taskexecutor.ErrProducerFailed, taskexecutor.ErrUnknownInvokable, taskexecutor.ErrTaskCancellationTimeout,
		jobmaster.ErrClosed, jobmaster.ErrJobInitialization, jobmaster.ErrJobAlreadyDone,
		resourcemanager.ErrClosed,
		dispatcher.ErrClosed, dispatcher.ErrDuplicateJobSubmission, dispatcher.ErrJobNotFound, dispatcher.ErrJobAlreadyTerminated,
		minicluster.ErrClosed, minicluster.ErrNotStarted, minicluster.ErrTaskExecutorRemoved,
		flinkplan.ErrInvalidPlan,
	} {
		t.Run(sentinel.Error(), func(t *testing.T) {
			data, err := json.Marshal(rpc.Failure(fmt.Errorf("somewhere: %w", sentinel)))
			require.NoError(t, err)
			var info jobgraph.ErrorInfo
			require.NoError(t, json.Unmarshal(data, &info))
			got := info.Err()
			assert.True(t, errors.Is(got, sentinel), "%s does not match %q after %s", got, sentinel, data)
			assert.Equal(t, "somewhere: "+sentinel.Error(), got.Error())
		})
	}
}
