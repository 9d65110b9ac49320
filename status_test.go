package jobgraph_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

func TestJobStatusNamesAndTerminality(t *testing.T) {
	tests := []struct {
		s                    jobgraph.JobStatus
		name                 string
		terminal, globalTerm bool
	}{
		{jobgraph.JobStatusInitializing, "INITIALIZING", false, false},
		{jobgraph.JobStatusCreated, "CREATED", false, false},
		{jobgraph.JobStatusRunning, "RUNNING", false, false},
		{jobgraph.JobStatusFailing, "FAILING", false, false},
		{jobgraph.JobStatusFailed, "FAILED", true, true},
		{jobgraph.JobStatusCancelling, "CANCELLING", false, false},
		{jobgraph.JobStatusCanceled, "CANCELED", true, true},
		{jobgraph.JobStatusFinished, "FINISHED", true, true},
		{jobgraph.JobStatusRestarting, "RESTARTING", false, false},
		{jobgraph.JobStatusSuspended, "SUSPENDED", true, false},
		{jobgraph.JobStatusReconciling, "RECONCILING", false, false},
	}
	// The table covers every status, in declaration order.
	all := jobgraph.AllJobStatuses()
	require.Len(t, all, len(tests))
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.s, all[i])
			assert.Equal(t, tc.name, tc.s.String())
			assert.Equal(t, tc.terminal, tc.s.IsTerminal())
			assert.Equal(t, tc.globalTerm, tc.s.IsGloballyTerminal())
			parsed, err := jobgraph.ParseJobStatus(tc.name)
			require.NoError(t, err)
			assert.Equal(t, tc.s, parsed)
			text, err := tc.s.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, tc.name, string(text))
		})
	}
}

func TestJobStatusTransitions(t *testing.T) {
	S := func(name string) jobgraph.JobStatus {
		s, err := jobgraph.ParseJobStatus(name)
		require.NoError(t, err)
		return s
	}
	for _, tc := range []struct {
		from, to string
		legal    bool
	}{
		{"INITIALIZING", "CREATED", true},
		{"CREATED", "RUNNING", true},
		{"RUNNING", "FINISHED", true},
		{"RUNNING", "RESTARTING", true},
		{"RESTARTING", "RUNNING", true},
		{"RUNNING", "FAILING", true},
		{"FAILING", "FAILED", true},
		{"RUNNING", "CANCELLING", true},
		{"CANCELLING", "CANCELED", true},
		{"RECONCILING", "RUNNING", true},
		{"RUNNING", "SUSPENDED", true},
		{"FINISHED", "RUNNING", false},
		{"FAILED", "RESTARTING", false},
		{"CANCELED", "RUNNING", false},
		{"SUSPENDED", "RUNNING", false},
		{"SUSPENDED", "INITIALIZING", false},
		{"CREATED", "FINISHED", false},
		{"INITIALIZING", "RUNNING", false},
		{"RUNNING", "CREATED", false},
		{"RUNNING", "RUNNING", false},
	} {
		assert.Equal(t, tc.legal, S(tc.from).CanTransitionTo(S(tc.to)), "%s → %s", tc.from, tc.to)
	}

	for _, s := range jobgraph.AllJobStatuses() {
		out := jobgraph.JobStatusTransitions(s)
		if s.IsTerminal() {
			assert.Empty(t, out, "terminal %s has no way out", s)
			for _, t2 := range jobgraph.AllJobStatuses() {
				assert.False(t, s.CanTransitionTo(t2), "%s → %s", s, t2)
			}
			continue
		}
		// Every non-terminal status can fail for good and can be suspended by leadership loss.
		assert.True(t, s.CanTransitionTo(jobgraph.JobStatusFailed), "%s → FAILED", s)
		assert.True(t, s.CanTransitionTo(jobgraph.JobStatusSuspended), "%s → SUSPENDED", s)
		assert.False(t, s.CanTransitionTo(s), "no self transition for %s", s)
		for _, to := range out {
			assert.True(t, s.CanTransitionTo(to))
			assert.NotContains(t, to.String(), "JobStatus(", "transition target of %s is a valid status", s)
		}
	}

	// JobStatusTransitions returns a copy.
	out := jobgraph.JobStatusTransitions(jobgraph.JobStatusRunning)
	require.Equal(t, []jobgraph.JobStatus{jobgraph.JobStatusFinished, jobgraph.JobStatusFailing, jobgraph.JobStatusFailed,
		jobgraph.JobStatusCancelling, jobgraph.JobStatusRestarting, jobgraph.JobStatusSuspended}, out)
	out[0] = jobgraph.JobStatusCreated
	assert.True(t, jobgraph.JobStatusRunning.CanTransitionTo(jobgraph.JobStatusFinished))
	assert.False(t, jobgraph.JobStatusRunning.CanTransitionTo(jobgraph.JobStatusCreated))
}

func TestJobStatusOutOfRange(t *testing.T) {
	bad := jobgraph.JobStatus(200)
	assert.Equal(t, "JobStatus(200)", bad.String())
	assert.False(t, bad.IsTerminal())
	assert.False(t, bad.IsGloballyTerminal())
	assert.Nil(t, jobgraph.JobStatusTransitions(bad))
	assert.False(t, bad.CanTransitionTo(jobgraph.JobStatusRunning))
	_, err := bad.MarshalText()
	require.EqualError(t, err, "jobgraph: invalid JobStatus 200")
	_, err = json.Marshal(bad)
	require.Error(t, err)

	for _, name := range []string{"running", "CANCELLED", "", "DONE"} {
		_, err := jobgraph.ParseJobStatus(name)
		require.Error(t, err, "%q", name)
		assert.Contains(t, err.Error(), "unknown JobStatus")
	}
}

func TestExecutionStateNamesAndTerminality(t *testing.T) {
	tests := []struct {
		s        jobgraph.ExecutionState
		name     string
		terminal bool
	}{
		{jobgraph.ExecutionStateCreated, "CREATED", false},
		{jobgraph.ExecutionStateScheduled, "SCHEDULED", false},
		{jobgraph.ExecutionStateDeploying, "DEPLOYING", false},
		{jobgraph.ExecutionStateInitializing, "INITIALIZING", false},
		{jobgraph.ExecutionStateRunning, "RUNNING", false},
		{jobgraph.ExecutionStateFinished, "FINISHED", true},
		{jobgraph.ExecutionStateCanceling, "CANCELING", false},
		{jobgraph.ExecutionStateCanceled, "CANCELED", true},
		{jobgraph.ExecutionStateFailed, "FAILED", true},
		{jobgraph.ExecutionStateReconciling, "RECONCILING", false},
	}
	all := jobgraph.AllExecutionStates()
	require.Len(t, all, len(tests))
	require.Equal(t, len(tests), jobgraph.NumExecutionStates)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.s, all[i])
			assert.Equal(t, tc.name, tc.s.String())
			assert.Equal(t, tc.terminal, tc.s.IsTerminal())
			parsed, err := jobgraph.ParseExecutionState(tc.name)
			require.NoError(t, err)
			assert.Equal(t, tc.s, parsed)
		})
	}
}

func TestExecutionStateTransitions(t *testing.T) {
	S := func(name string) jobgraph.ExecutionState {
		s, err := jobgraph.ParseExecutionState(name)
		require.NoError(t, err)
		return s
	}
	for _, tc := range []struct {
		from, to string
		legal    bool
	}{
		{"CREATED", "SCHEDULED", true},
		{"SCHEDULED", "DEPLOYING", true},
		{"DEPLOYING", "INITIALIZING", true},
		{"INITIALIZING", "RUNNING", true},
		{"RUNNING", "FINISHED", true},
		{"RUNNING", "CANCELING", true},
		{"CANCELING", "CANCELED", true},
		{"CREATED", "CANCELED", true}, // canceled before anything was deployed
		{"SCHEDULED", "CANCELED", true},
		{"RECONCILING", "RUNNING", true},
		{"RECONCILING", "FINISHED", true},
		{"CREATED", "DEPLOYING", false}, // stricter than Flink: SCHEDULED first
		{"CREATED", "RUNNING", false},
		{"SCHEDULED", "RUNNING", false},
		{"DEPLOYING", "RUNNING", false},
		{"INITIALIZING", "FINISHED", false},
		{"RUNNING", "CANCELED", false},
		{"RUNNING", "CREATED", false},
		{"CANCELING", "RUNNING", false},
		{"FINISHED", "RUNNING", false},
		{"FINISHED", "FAILED", false},
		{"CANCELED", "CREATED", false},
		{"FAILED", "CREATED", false},
	} {
		assert.Equal(t, tc.legal, S(tc.from).CanTransitionTo(S(tc.to)), "%s → %s", tc.from, tc.to)
	}

	for _, s := range jobgraph.AllExecutionStates() {
		out := jobgraph.ExecutionStateTransitions(s)
		if s.IsTerminal() {
			assert.Empty(t, out, "terminal %s has no way out", s)
			for _, t2 := range jobgraph.AllExecutionStates() {
				assert.False(t, s.CanTransitionTo(t2), "%s → %s", s, t2)
			}
			continue
		}
		assert.True(t, s.CanTransitionTo(jobgraph.ExecutionStateFailed), "every non-terminal state can fail: %s", s)
		assert.False(t, s.CanTransitionTo(s), "no self transition for %s", s)
	}

	// A copy is returned.
	out := jobgraph.ExecutionStateTransitions(jobgraph.ExecutionStateCreated)
	require.Equal(t, []jobgraph.ExecutionState{jobgraph.ExecutionStateScheduled, jobgraph.ExecutionStateCanceled,
		jobgraph.ExecutionStateFailed}, out)
	out[0] = jobgraph.ExecutionStateRunning
	assert.False(t, jobgraph.ExecutionStateCreated.CanTransitionTo(jobgraph.ExecutionStateRunning))

	bad := jobgraph.ExecutionState(jobgraph.NumExecutionStates)
	assert.Equal(t, "ExecutionState(10)", bad.String())
	assert.Nil(t, jobgraph.ExecutionStateTransitions(bad))
	assert.False(t, bad.CanTransitionTo(jobgraph.ExecutionStateFailed))
	assert.False(t, bad.IsTerminal())
	_, err := bad.MarshalText()
	require.EqualError(t, err, "jobgraph: invalid ExecutionState 10")
}

func TestStatesJSON(t *testing.T) {
	type states struct {
		Job       jobgraph.JobStatus        `json:"job"`
		Execution jobgraph.ExecutionState   `json:"execution"`
		History   []jobgraph.ExecutionState `json:"history"`
	}
	in := states{
		Job:       jobgraph.JobStatusCancelling,
		Execution: jobgraph.ExecutionStateCanceling,
		History:   []jobgraph.ExecutionState{jobgraph.ExecutionStateCreated, jobgraph.ExecutionStateReconciling},
	}
	data, err := json.Marshal(in)
	require.NoError(t, err)
	assert.Equal(t, `{"job":"CANCELLING","execution":"CANCELING","history":["CREATED","RECONCILING"]}`, string(data))
	var out states
	require.NoError(t, json.Unmarshal(data, &out))
	assert.Equal(t, in, out)

	all, err := json.Marshal(jobgraph.AllJobStatuses())
	require.NoError(t, err)
	assert.Equal(t, `["INITIALIZING","CREATED","RUNNING","FAILING","FAILED","CANCELLING","CANCELED","FINISHED","RESTARTING","SUSPENDED","RECONCILING"]`, string(all))
	all, err = json.Marshal(jobgraph.AllExecutionStates())
	require.NoError(t, err)
	assert.Equal(t, `["CREATED","SCHEDULED","DEPLOYING","INITIALIZING","RUNNING","FINISHED","CANCELING","CANCELED","FAILED","RECONCILING"]`, string(all))

	// Names only: numbers and unknown or mis-cased names are refused, and a failed decode leaves
	// the value as it was.
	out = states{Job: jobgraph.JobStatusRunning}
	for _, bad := range []string{`{"job":2}`, `{"job":"running"}`, `{"job":"CANCELED_"}`, `{"execution":"CANCELLING"}`} {
		require.Error(t, json.Unmarshal([]byte(bad), &out), bad)
	}
	assert.Equal(t, jobgraph.JobStatusRunning, out.Job)
}
