package jobgraph_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

func TestErrorInfo(t *testing.T) {
	assert.Nil(t, jobgraph.NewErrorInfo(nil, time.Now()))
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	cause := errors.New("disk full")
	info := jobgraph.NewErrorInfo(fmt.Errorf("task map (2/4) failed: %w", cause), at)
	assert.Equal(t, &jobgraph.ErrorInfo{Message: "task map (2/4) failed: disk full", Timestamp: at}, info)
}

func TestJobResult(t *testing.T) {
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	cause := errors.New("boom")
	r := &jobgraph.JobResult{
		JobID: jid(1), Name: "job", Status: jobgraph.JobStatusFailed,
		Failure: jobgraph.NewErrorInfo(cause, at), NetRuntime: 1500 * time.Millisecond, RootCause: cause,
	}
	assert.False(t, r.Success())
	assert.True(t, (&jobgraph.JobResult{Status: jobgraph.JobStatusFinished}).Success())
	assert.False(t, (&jobgraph.JobResult{Status: jobgraph.JobStatusSuspended}).Success())
	assert.False(t, (&jobgraph.JobResult{Status: jobgraph.JobStatusCanceled}).Success())

	data, err := json.Marshal(r)
	require.NoError(t, err)
	assert.Equal(t, `{"jobId":"00000000000000000000000000000001","name":"job","status":"FAILED",`+
		`"failure":{"message":"boom","timestamp":"2024-05-01T12:00:00Z"},"netRuntime":1500000000}`, string(data),
		"RootCause is not persisted")
	var back jobgraph.JobResult
	require.NoError(t, json.Unmarshal(data, &back))
	want := *r
	want.RootCause = nil
	assert.Equal(t, want, back)
}
