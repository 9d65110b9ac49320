package jobgraph_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

func TestJobTypeAndDistributionPatternNames(t *testing.T) {
	assert.Equal(t, "STREAMING", jobgraph.Streaming.String())
	assert.Equal(t, "BATCH", jobgraph.Batch.String())
	assert.Equal(t, jobgraph.Streaming, jobgraph.JobType(0), "STREAMING is the zero value")
	jt, err := jobgraph.ParseJobType("BATCH")
	require.NoError(t, err)
	assert.Equal(t, jobgraph.Batch, jt)
	_, err = jobgraph.ParseJobType("MICRO_BATCH")
	require.EqualError(t, err, `jobgraph: unknown JobType "MICRO_BATCH" (want one of [STREAMING BATCH])`)
	assert.Equal(t, "JobType(7)", jobgraph.JobType(7).String())

	assert.Equal(t, "ALL_TO_ALL", jobgraph.AllToAll.String())
	assert.Equal(t, "POINTWISE", jobgraph.Pointwise.String())
	dp, err := jobgraph.ParseDistributionPattern("POINTWISE")
	require.NoError(t, err)
	assert.Equal(t, jobgraph.Pointwise, dp)
	_, err = jobgraph.ParseDistributionPattern("ALL_TO_SOME")
	require.EqualError(t, err, `jobgraph: unknown DistributionPattern "ALL_TO_SOME" (want one of [ALL_TO_ALL POINTWISE])`)

	assert.Equal(t, "NO_CLAIM", jobgraph.NoClaim.String())
	assert.Equal(t, "CLAIM", jobgraph.Claim.String())
	assert.Equal(t, "LEGACY", jobgraph.Legacy.String())
	var m jobgraph.RestoreMode
	require.NoError(t, json.Unmarshal([]byte(`"LEGACY"`), &m))
	assert.Equal(t, jobgraph.Legacy, m)
	require.Error(t, json.Unmarshal([]byte(`"RECLAIM"`), &m))
}

func TestResultPartitionType(t *testing.T) {
	tests := []struct {
		rt                                                                   jobgraph.ResultPartitionType
		name                                                                 string
		reconnectable, pipelined, blocking, hybrid, backPressure, persistent bool
	}{
		{jobgraph.PipelinedBounded, "PIPELINED_BOUNDED", false, true, false, false, true, false},
		{jobgraph.Pipelined, "PIPELINED", false, true, false, false, true, false},
		{jobgraph.Blocking, "BLOCKING", true, false, true, false, false, false},
		{jobgraph.BlockingPersistent, "BLOCKING_PERSISTENT", true, false, true, false, false, true},
		{jobgraph.PipelinedApproximate, "PIPELINED_APPROXIMATE", true, true, false, false, true, false},
		{jobgraph.HybridFull, "HYBRID_FULL", true, false, false, true, false, false},
		{jobgraph.HybridSelective, "HYBRID_SELECTIVE", true, false, false, true, false, false},
	}
	assert.Equal(t, jobgraph.PipelinedBounded, jobgraph.ResultPartitionType(0), "PIPELINED_BOUNDED is the zero value")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.name, tc.rt.String())
			parsed, err := jobgraph.ParseResultPartitionType(tc.name)
			require.NoError(t, err)
			assert.Equal(t, tc.rt, parsed)
			assert.Equal(t, tc.reconnectable, tc.rt.IsReconnectable(), "IsReconnectable")
			assert.Equal(t, tc.pipelined, tc.rt.IsPipelined(), "IsPipelined")
			assert.Equal(t, tc.blocking, tc.rt.IsBlocking(), "IsBlocking")
			assert.Equal(t, tc.hybrid, tc.rt.IsHybrid(), "IsHybrid")
			assert.Equal(t, tc.backPressure, tc.rt.HasBackPressure(), "HasBackPressure")
			assert.Equal(t, tc.persistent, tc.rt.IsPersistent(), "IsPersistent")
			data, err := json.Marshal(tc.rt)
			require.NoError(t, err)
			assert.Equal(t, `"`+tc.name+`"`, string(data))
		})
	}
	assert.Equal(t, "ResultPartitionType(7)", jobgraph.ResultPartitionType(7).String())
	_, err := json.Marshal(jobgraph.ResultPartitionType(7))
	require.Error(t, err)
	_, err = jobgraph.ParseResultPartitionType("blocking")
	require.Error(t, err)
}
