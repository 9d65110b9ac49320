package grpctransport_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
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
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

// Every sentinel the library registers an error code for (the list rpc/errorcodes_test.go
// checks across JSON, and the endpoints' own), wrapped by an endpoint's answer, still matches
// errors.Is on the calling side of a gRPC call, with the endpoint's text.
func TestSentinelsMatchAcrossTheCall(t *testing.T) {
	f := &fakeJobMaster{}
	gw := connect[rpc.JobMasterGateway](t, f)
	for _, sentinel := range []error{
		jobgraph.ErrInvalidJobGraph, jobgraph.ErrAccumulatorTypeMismatch,
		rpc.ErrFencingTokenMismatch, rpc.ErrUnknownAddress, rpc.ErrClosed, rpc.ErrServiceClosed, rpc.ErrHeartbeatTimeout,
		rpc.ErrTaskNotRunning, rpc.ErrNoOperatorCoordinator,
		ha.ErrNotFound, ha.ErrAlreadyExists,
		executiongraph.ErrIllegalTransition,
		scheduler.ErrUnknownStrategy, scheduler.ErrNoTimers, scheduler.ErrNoFailureYet,
		slotpool.ErrNoResourceAvailable, slotpool.ErrRequestCanceled, slotpool.ErrPoolClosed, slotpool.ErrIdleSlot,
		taskexecutor.ErrClosed, taskexecutor.ErrKilled, taskexecutor.ErrPartitionLost, taskexecutor.ErrPartitionReleased,
		taskexecutor.ErrProducerFailed, taskexecutor.ErrUnknownInvokable, taskexecutor.ErrTaskCancellationTimeout,
		taskexecutor.ErrTaskNotFound,
		jobmaster.ErrClosed, jobmaster.ErrJobInitialization, jobmaster.ErrJobAlreadyDone,
		resourcemanager.ErrClosed,
		dispatcher.ErrClosed, dispatcher.ErrDuplicateJobSubmission, dispatcher.ErrJobNotFound, dispatcher.ErrJobAlreadyTerminated,
		minicluster.ErrClosed, minicluster.ErrNotStarted, minicluster.ErrTaskExecutorRemoved,
		flinkplan.ErrInvalidPlan,
		grpctransport.ErrMessageTooLarge,
	} {
		t.Run(sentinel.Error(), func(t *testing.T) {
			f.err = fmt.Errorf("somewhere: %w", sentinel)
			err := gw.HeartbeatFromResourceManager(t.Context(), "rm-1")
			require.Error(t, err)
			assert.ErrorIs(t, err, sentinel, "%v does not match %q after the call", err, sentinel)
			assert.EqualError(t, err, "somewhere: "+sentinel.Error())
		})
	}
	f.err = nil
	require.NoError(t, gw.HeartbeatFromResourceManager(t.Context(), "rm-1"), "and a nil error stays nil")
}

// The library's typed errors cross with their fields: errors.As on the calling side finds a
// value equal to the one the endpoint answered with (a cause held inside one crosses as its text
// and sentinels), and errors.Is still matches what the typed error matches.
func TestTypedErrorsCrossWithTheirFields(t *testing.T) {
	f := &fakeJobMaster{}
	gw := connect[rpc.JobMasterGateway](t, f)
	call := func(t *testing.T, err error) error {
		t.Helper()
		f.err = fmt.Errorf("wrapped: %w", err)
		got := gw.HeartbeatFromResourceManager(t.Context(), "rm-1")
		require.Error(t, got)
		assert.Equal(t, f.err.Error(), got.Error())
		return got
	}
	dataSet, vertex := jobgraph.NewIntermediateDataSetID(), jobgraph.NewJobVertexID()

	t.Run("rpc.FencingError", func(t *testing.T) {
		want := &rpc.FencingError{Endpoint: "JobMaster jm-1", Expected: jobgraph.NewJobMasterID().String(), Got: jobgraph.NewJobMasterID().String()}
		err := call(t, want)
		var got *rpc.FencingError
		require.ErrorAs(t, err, &got)
		assert.Equal(t, want, got)
		assert.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
	})
	t.Run("rpc.HeartbeatTimeoutError", func(t *testing.T) {
		want := &rpc.HeartbeatTimeoutError{Target: "TaskExecutor te-1", Timeout: 50 * time.Second}
		var got *rpc.HeartbeatTimeoutError
		require.ErrorAs(t, call(t, want), &got)
		assert.Equal(t, want, got)
	})
	t.Run("jobgraph.ValidationError", func(t *testing.T) {
		want := &jobgraph.ValidationError{Rule: jobgraph.RuleNilGraph, Vertex: vertex, VertexName: "map", DataSet: dataSet, Detail: "what is wrong"}
		err := call(t, want)
		var got *jobgraph.ValidationError
		require.ErrorAs(t, err, &got)
		assert.Equal(t, want, got)
		assert.ErrorIs(t, err, jobgraph.ErrInvalidJobGraph)
	})
	t.Run("jobgraph.AccumulatorTypeError", func(t *testing.T) {
		want := &jobgraph.AccumulatorTypeError{Name: "lines", Have: "IntCounter", Got: "LongCounter"}
		var got *jobgraph.AccumulatorTypeError
		require.ErrorAs(t, call(t, want), &got)
		assert.Equal(t, want, got)
	})
	t.Run("slotpool.NoResourceAvailableError", func(t *testing.T) {
		want := &slotpool.NoResourceAvailableError{Profile: profile, Timeout: 5 * time.Minute}
		err := call(t, want)
		var got *slotpool.NoResourceAvailableError
		require.ErrorAs(t, err, &got)
		assert.Equal(t, want, got)
		assert.ErrorIs(t, err, slotpool.ErrNoResourceAvailable)
	})
	t.Run("jobmaster.MissingDeploymentError", func(t *testing.T) {
		want := &jobmaster.MissingDeploymentError{Attempt: attempt(3, 1), TaskExecutor: "te-2"}
		var got *jobmaster.MissingDeploymentError
		require.ErrorAs(t, call(t, want), &got)
		assert.Equal(t, want, got)
	})
	t.Run("taskexecutor.UnknownInvokableError", func(t *testing.T) {
		want := &taskexecutor.UnknownInvokableError{Name: "count-words", TaskExecutor: "te-1", Registered: []string{"a", "b"}}
		err := call(t, want)
		var got *taskexecutor.UnknownInvokableError
		require.ErrorAs(t, err, &got)
		assert.Equal(t, want, got)
		assert.ErrorIs(t, err, taskexecutor.ErrUnknownInvokable)
	})
	t.Run("taskexecutor.TaskCancellationTimeoutError", func(t *testing.T) {
		want := &taskexecutor.TaskCancellationTimeoutError{TaskExecutor: "te-1", ExecutionAttemptID: attempt(0, 2), TaskName: "v (1/1)",
			VertexName: "v", AttemptNumber: 2, Timeout: 3 * time.Minute}
		var got *taskexecutor.TaskCancellationTimeoutError
		require.ErrorAs(t, call(t, want), &got)
		assert.Equal(t, want, got)
	})
	t.Run("dispatcher.DuplicateJobSubmissionError", func(t *testing.T) {
		want := &dispatcher.DuplicateJobSubmissionError{JobID: jobgraph.NewJobID(), GloballyTerminated: true}
		err := call(t, want)
		var got *dispatcher.DuplicateJobSubmissionError
		require.ErrorAs(t, err, &got)
		assert.Equal(t, want, got)
		assert.ErrorIs(t, err, dispatcher.ErrDuplicateJobSubmission)
	})
	t.Run("checkpoint.CheckpointError", func(t *testing.T) {
		want := &checkpoint.CheckpointError{Reason: checkpoint.CheckpointExpired, CheckpointID: 8, Cause: fmt.Errorf("late: %w", rpc.ErrHeartbeatTimeout)}
		err := call(t, want)
		var got *checkpoint.CheckpointError
		require.ErrorAs(t, err, &got)
		assert.Equal(t, want.Reason, got.Reason)
		assert.Equal(t, want.CheckpointID, got.CheckpointID)
		assert.EqualError(t, got.Cause, "late: heartbeat timed out")
		assert.ErrorIs(t, got.Cause, rpc.ErrHeartbeatTimeout, "the cause keeps its sentinels")
		assert.Equal(t, want.Error(), got.Error())
	})
	t.Run("taskexecutor.PartitionError", func(t *testing.T) {
		want := &taskexecutor.PartitionError{Partition: rpc.ResultPartitionID{PartitionID: jobgraph.IntermediateResultPartitionID{IntermediateDataSetID: dataSet, PartitionIndex: 2},
			ProducerID: attempt(2, 0)}, Reason: taskexecutor.ErrPartitionLost, Cause: errors.New("process gone")}
		err := call(t, want)
		var got *taskexecutor.PartitionError
		require.ErrorAs(t, err, &got)
		assert.Equal(t, want.Partition, got.Partition)
		assert.ErrorIs(t, got.Reason, taskexecutor.ErrPartitionLost)
		assert.EqualError(t, got.Cause, "process gone")
		assert.ErrorIs(t, err, taskexecutor.ErrPartitionLost)
	})
	t.Run("Timeout", func(t *testing.T) {
		// An expired checkpoint's error has Timeout() true (as an expired savepoint's does for
		// TriggerSavepoint's callers); so has the error on the calling side.
		err := call(t, &checkpoint.CheckpointError{Reason: checkpoint.CheckpointExpired, CheckpointID: 3})
		var timeout interface{ Timeout() bool }
		require.ErrorAs(t, err, &timeout)
		assert.True(t, timeout.Timeout())
		err = call(t, &checkpoint.CheckpointError{Reason: checkpoint.CheckpointDeclined, CheckpointID: 3})
		require.ErrorAs(t, err, &timeout)
		assert.False(t, timeout.Timeout(), "a declined one is none")
		err = call(t, errors.New("plain"))
		assert.False(t, errors.As(err, &timeout), "a plain error is no timeout")
	})
}

// blockingJobMaster's HeartbeatFromResourceManager waits for its ctx to end and answers ctx's
// error; it tells whether its ctx had a deadline.
type blockingJobMaster struct {
	fakeJobMaster
	entered     chan struct{}
	hadDeadline chan bool
}

func (b *blockingJobMaster) HeartbeatFromResourceManager(ctx context.Context, _ jobgraph.ResourceID) error {
	_, ok := ctx.Deadline()
	b.hadDeadline <- ok
	close(b.entered)
	<-ctx.Done()
	return ctx.Err()
}

// deadlineJobMaster's HeartbeatFromResourceManager tells its ctx's deadline.
type deadlineJobMaster struct {
	fakeJobMaster
	deadline chan time.Time
}

func (d *deadlineJobMaster) HeartbeatFromResourceManager(ctx context.Context, _ jobgraph.ResourceID) error {
	dl, _ := ctx.Deadline()
	d.deadline <- dl
	return nil
}

// A caller's deadline reaches the endpoint (its ctx ends with the caller's), and a call whose ctx
// ends returns an error matching ctx's error: DeadlineExceeded and Canceled.
func TestContextEndsTheCall(t *testing.T) {
	t.Run("TheDeadlineReachesTheEndpoint", func(t *testing.T) {
		d := &deadlineJobMaster{deadline: make(chan time.Time, 1)}
		gw := connect[rpc.JobMasterGateway](t, d)
		deadline := time.Now().Add(time.Hour)
		ctx, cancel := context.WithDeadline(t.Context(), deadline)
		defer cancel()
		require.NoError(t, gw.HeartbeatFromResourceManager(ctx, "rm-1"))
		got := <-d.deadline
		// gRPC sends the time left, rounded up to its unit (seconds for an hour): the
		// endpoint's deadline is the caller's less the transit, plus at most that rounding.
		assert.False(t, got.After(deadline.Add(time.Second)), "%v is after the caller's %v", got, deadline)
		assert.True(t, got.After(deadline.Add(-time.Minute)), "%v is far before the caller's %v", got, deadline)
	})
	t.Run("DeadlineExceeded", func(t *testing.T) {
		b := &blockingJobMaster{entered: make(chan struct{}), hadDeadline: make(chan bool, 1)}
		gw := connect[rpc.JobMasterGateway](t, b)
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		err := gw.HeartbeatFromResourceManager(ctx, "rm-1")
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("Canceled", func(t *testing.T) {
		b := &blockingJobMaster{entered: make(chan struct{}), hadDeadline: make(chan bool, 1)}
		gw := connect[rpc.JobMasterGateway](t, b)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- gw.HeartbeatFromResourceManager(ctx, "rm-1") }()
		<-b.entered
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		assert.False(t, <-b.hadDeadline)
	})
	t.Run("TheEndpointsOwnContextError", func(t *testing.T) {
		f := &fakeJobMaster{}
		gw := connect[rpc.JobMasterGateway](t, f)
		f.err = fmt.Errorf("its own wait: %w", context.DeadlineExceeded)
		err := gw.HeartbeatFromResourceManager(t.Context(), "rm-1")
		require.ErrorIs(t, err, context.DeadlineExceeded, "an endpoint's context error crosses as one")
		assert.EqualError(t, err, "its own wait: context deadline exceeded")
	})
}

// hostError is a host's own error type, registered to cross with its fields.
type hostError struct {
	Shard int    `json:"shard"`
	Owner string `json:"owner"`
}

func (e *hostError) Error() string { return fmt.Sprintf("shard %d is owned by %s", e.Shard, e.Owner) }

func init() { grpctransport.RegisterErrorType[hostError]("test.hostError") }

// A host's error type registered with RegisterErrorType crosses like the library's; registering
// a kind twice panics.
func TestRegisterErrorType(t *testing.T) {
	f := &fakeJobMaster{}
	gw := connect[rpc.JobMasterGateway](t, f)
	want := &hostError{Shard: 7, Owner: "te-3"}
	f.err = fmt.Errorf("moved: %w", want)
	err := gw.HeartbeatFromResourceManager(t.Context(), "rm-1")
	var got *hostError
	require.ErrorAs(t, err, &got)
	assert.Equal(t, want, got)
	assert.EqualError(t, err, "moved: shard 7 is owned by te-3")
	assert.Panics(t, func() { grpctransport.RegisterErrorType[hostError]("test.hostError") })
	assert.Panics(t, func() { grpctransport.RegisterErrorType[hostError]("") })
}
