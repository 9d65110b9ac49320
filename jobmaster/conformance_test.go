package jobmaster_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/jobmaster"
	"github.com/jobgraph/jobgraph/jobmaster/jmtest"
)

// newConformingJobMaster starts an in-process JobMaster as the conformance suite asks.
func newConformingJobMaster(t *testing.T, env jmtest.Env) jmtest.JobMaster {
	f, err := jobmaster.NewFactory(env.JobGraph, jobmaster.Config{RPC: env.RPC, ResourceManagerAddress: env.ResourceManagerAddress,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	jm, err := f.Create(t.Context(), env.JobMasterID)
	require.NoError(t, err)
	return jmtest.JobMaster{Gateway: jm.Gateway(), RequestJobStatus: jm.RequestJobStatus, Close: func() { jm.Close() },
		ErrClosed: jobmaster.ErrClosed}
}

// The in-process JobMaster passes the TaskExecutionStateNotifier conformance suite, in a bubble
// and in real time.
func TestConformance(t *testing.T) { jmtest.TestJobMasterInBubble(t, newConformingJobMaster) }

func TestConformanceRealTime(t *testing.T) { jmtest.TestJobMaster(t, newConformingJobMaster) }
