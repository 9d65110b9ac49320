package etcd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/checkpointtest"
)

// leading returns Services over srv that lead, closed when the test ends.
func leading(t *testing.T, srv *server) *Services {
	svc := srv.open(t, newPrefix())
	t.Cleanup(func() { assert.NoError(t, svc.Close()) })
	lead(t, svc)
	return svc
}

func TestCheckpointStoreConformance(t *testing.T) {
	srv := startServer(t)
	checkpointtest.TestCompletedCheckpointStore(t, func(t *testing.T, maxRetained int) checkpoint.CompletedCheckpointStore {
		st, err := leading(t, srv).CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(jobgraph.NewJobID(), maxRetained)
		require.NoError(t, err)
		return st
	})
}

func TestCheckpointIDCounterConformance(t *testing.T) {
	srv := startServer(t)
	checkpointtest.TestCheckpointIDCounter(t, func(t *testing.T) checkpoint.CheckpointIDCounter {
		c, err := leading(t, srv).CheckpointRecoveryFactory().CreateCheckpointIDCounter(jobgraph.NewJobID())
		require.NoError(t, err)
		return c
	})
}
