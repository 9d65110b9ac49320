package resourcemanager_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph/resourcemanager"
	"github.com/jobgraph/jobgraph/resourcemanager/rmtest"
)

// newConformingResourceManager starts an in-process ResourceManager as the conformance suite asks.
func newConformingResourceManager(t *testing.T, env rmtest.Env) rmtest.ResourceManager {
	rm, err := resourcemanager.New(resourcemanager.Config{ResourceID: "rmtest-rm", Address: "rmtest-rm", RPC: env.RPC,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, rm.Start(t.Context()))
	return rmtest.ResourceManager{Gateway: rm, Close: func() { assert.NoError(t, rm.Close()) }, ErrClosed: resourcemanager.ErrClosed}
}

// The in-process ResourceManager passes the ResourceManagerNotifier conformance suite, in a
// bubble and in real time.
func TestConformance(t *testing.T) {
	rmtest.TestResourceManagerInBubble(t, newConformingResourceManager)
}

func TestConformanceRealTime(t *testing.T) {
	rmtest.TestResourceManager(t, newConformingResourceManager)
}
