package etcd

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/minicluster/hascenarios"
)

// TestHAScenarios runs the HA scenario suite on ha/etcd: one real etcd server for the test, a
// fresh key prefix (one cluster) per scenario, each client its own Services over it; Revoke is
// DropLeadership (the lease revoked), after which the client campaigns again. Real time: etcd's
// goroutines do not belong to a bubble.
func TestHAScenarios(t *testing.T) {
	srv := startServer(t)
	hascenarios.Run(t, hascenarios.Backend{
		Name: "etcd",
		New: func(t *testing.T) func(t *testing.T) ha.Services {
			prefix := newPrefix()
			return func(t *testing.T) ha.Services { return srv.open(t, prefix) }
		},
		Revoke: func(t *testing.T, s ha.Services) {
			require.NoError(t, s.(*Services).DropLeadership(t.Context()))
		},
		OneLeaderPerClient: true,
	})
}
