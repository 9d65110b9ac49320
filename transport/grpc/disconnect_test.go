package grpctransport_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// disconnectableTaskExecutor is a fakeTaskExecutor that is an rpc.ResourceManagerDisconnector.
type disconnectableTaskExecutor struct{ fakeTaskExecutor }

func (f *disconnectableTaskExecutor) DisconnectResourceManager(_ context.Context, rm jobgraph.ResourceManagerID, cause *jobgraph.ErrorInfo) error {
	return f.rec("DisconnectResourceManager", rm, cause)
}

var _ rpc.ResourceManagerDisconnector = (*disconnectableTaskExecutor)(nil)

// The TaskExecutor stub is an rpc.ResourceManagerDisconnector: the ResourceManagerID and the
// cause arrive unchanged at a TaskExecutor that is one, and its answer (a fencing error) comes
// back matching rpc.ErrFencingTokenMismatch.
func TestDisconnectResourceManagerRoundTrip(t *testing.T) {
	f := &disconnectableTaskExecutor{}
	gw := connect[rpc.TaskExecutorGateway](t, f)
	d, ok := gw.(rpc.ResourceManagerDisconnector)
	require.True(t, ok, "the stub %T is an rpc.ResourceManagerDisconnector", gw)
	rm, c := jobgraph.NewResourceManagerID(), cause()
	require.NoError(t, d.DisconnectResourceManager(t.Context(), rm, c))
	assert.Equal(t, call{"DisconnectResourceManager", []any{rm, c}}, f.last(t))
	require.NoError(t, d.DisconnectResourceManager(t.Context(), rm, nil))
	assert.Equal(t, call{"DisconnectResourceManager", []any{rm, (*jobgraph.ErrorInfo)(nil)}}, f.last(t), "no cause")

	f.err = &rpc.FencingError{Endpoint: "TaskExecutor te-1 (ResourceManagerID)", Expected: "a", Got: rm.String()}
	err := d.DisconnectResourceManager(t.Context(), rm, c)
	require.ErrorIs(t, err, rpc.ErrFencingTokenMismatch)
	var fe *rpc.FencingError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, rpc.FencingError{Endpoint: "TaskExecutor te-1 (ResourceManagerID)", Expected: "a", Got: rm.String()}, *fe)
}

// A TaskExecutor whose gateway is no rpc.ResourceManagerDisconnector answers the call with
// codes.Unimplemented, which the stub returns as an error that is neither a fencing error nor
// unreachable (so no heartbeat counts it); nothing is called.
func TestDisconnectResourceManagerOfATaskExecutorWithoutItIsUnimplemented(t *testing.T) {
	f := &fakeTaskExecutor{}
	gw := connect[rpc.TaskExecutorGateway](t, f)
	err := gw.(rpc.ResourceManagerDisconnector).DisconnectResourceManager(t.Context(), jobgraph.NewResourceManagerID(), cause())
	require.Error(t, err)
	assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	assert.NotErrorIs(t, err, rpc.ErrFencingTokenMismatch)
	assert.False(t, rpc.IsUnreachable(err))
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Empty(t, f.calls)
}
