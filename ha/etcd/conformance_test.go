package etcd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/checkpointtest"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/hatest"
)

// leading returns Services over srv that lead, closed when the test ends.
func leading(t *testing.T, srv *server) *Services {
	svc := srv.open(t, newPrefix())
	t.Cleanup(func() { assert.NoError(t, svc.Close()) })
	lead(t, svc)
	return svc
}

// TestCheckpointStoreConformance runs checkpointtest's store suite on stores of leading clients.
func TestCheckpointStoreConformance(t *testing.T) {
	srv := startServer(t)
	checkpointtest.TestCompletedCheckpointStore(t, func(t *testing.T, maxRetained int) checkpoint.CompletedCheckpointStore {
		st, err := leading(t, srv).CheckpointRecoveryFactory().CreateRecoveredCompletedCheckpointStore(jobgraph.NewJobID(), maxRetained)
		require.NoError(t, err)
		return st
	})
}

// TestCheckpointIDCounterConformance runs checkpointtest's counter suite on counters of leading
// clients.
func TestCheckpointIDCounterConformance(t *testing.T) {
	srv := startServer(t)
	checkpointtest.TestCheckpointIDCounter(t, func(t *testing.T) checkpoint.CheckpointIDCounter {
		c, err := leading(t, srv).CheckpointRecoveryFactory().CreateCheckpointIDCounter(jobgraph.NewJobID())
		require.NoError(t, err)
		return c
	})
}

// TestConformance runs ha/hatest's one-client suite (real time) on clients of one embedded etcd
// server, each case under its own prefix.
func TestConformance(t *testing.T) {
	srv := startServer(t)
	hatest.TestServices(t, func(t *testing.T) ha.Services { return srv.open(t, newPrefix()) })
}

// TestConformanceShared runs ha/hatest's several-client suite with one leader per client: each
// case's clients share a prefix (one cluster) on one embedded etcd server.
func TestConformanceShared(t *testing.T) {
	srv := startServer(t)
	hatest.TestSharedServices(t, hatest.SharedOptions{OneLeaderPerClient: true}, func(t *testing.T) func(t *testing.T) ha.Services {
		prefix := newPrefix() // one backend per case
		return func(t *testing.T) ha.Services { return srv.open(t, prefix) }
	})
}
