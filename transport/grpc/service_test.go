package grpctransport_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

// Addresses are "<host:port>/<name>"; a bare name is the same endpoint on the Service at hand,
// and another Service's host:port is refused by Register.
func TestAddresses(t *testing.T) {
	s := newService(t, grpctransport.Options{})
	defer s.Close()
	f := &fakeJobMaster{}
	require.NoError(t, s.Register("jobmaster", f))
	assert.Equal(t, s.HostPort()+"/jobmaster", s.Address("jobmaster"))
	require.Error(t, s.Register(s.Address("jobmaster"), &fakeJobMaster{}), "the full address names the same, taken, endpoint")
	err := s.Register("127.0.0.1:1/other", &fakeJobMaster{})
	require.Error(t, err)
	assert.ErrorContains(t, err, "not on this Service")
	require.Error(t, s.Register(s.HostPort()+"/", &fakeJobMaster{}), "no name")

	for _, addr := range []string{"jobmaster", s.Address("jobmaster")} {
		gw, err := rpc.Connect[rpc.JobMasterGateway](t.Context(), s, addr)
		require.NoError(t, err, addr)
		require.NoError(t, gw.HeartbeatFromResourceManager(t.Context(), "rm-1"))
	}
	f.mu.Lock()
	assert.Len(t, f.calls, 2, "both addresses reach the one endpoint")
	f.mu.Unlock()
	_, err = s.Lookup(t.Context(), s.HostPort()+"/nothing")
	require.ErrorIs(t, err, rpc.ErrUnknownAddress)

	// A name may hold "/" (the MiniCluster's "jobmaster/<job>/<session>"): a first segment that
	// is no host:port makes the whole address a bare name.
	nested := &fakeJobMaster{}
	require.NoError(t, s.Register("jobmaster/job-1/session-2", nested))
	for _, addr := range []string{"jobmaster/job-1/session-2", s.Address("jobmaster/job-1/session-2")} {
		gw, err := rpc.Connect[rpc.JobMasterGateway](t.Context(), s, addr)
		require.NoError(t, err, addr)
		require.NoError(t, gw.HeartbeatFromResourceManager(t.Context(), "rm-1"))
	}
	nested.mu.Lock()
	assert.Len(t, nested.calls, 2)
	nested.mu.Unlock()
	s.Unregister("jobmaster/job-1/session-2")
	_, err = s.Lookup(t.Context(), s.Address("jobmaster/job-1/session-2"))
	require.ErrorIs(t, err, rpc.ErrUnknownAddress)
}

// A stub handed out before its endpoint was unregistered fails its later calls with an error
// matching rpc.ErrUnknownAddress; a stub of a closed Service fails with rpc.ErrServiceClosed; a
// stub whose server closed fails with the transport's error. Nothing reaches the endpoint then.
func TestUnregisterAndClose(t *testing.T) {
	server := newService(t, grpctransport.Options{})
	client := newService(t, grpctransport.Options{})
	f := &fakeJobMaster{}
	token := jobgraph.NewJobMasterID()
	require.NoError(t, server.Register("jobmaster", f))
	gw, err := rpc.Connect[rpc.JobMasterGateway](t.Context(), client, server.Address("jobmaster"))
	require.NoError(t, err)
	require.NoError(t, gw.FailSlot(t.Context(), token, "te-1", jobgraph.NewAllocationID(), nil))

	server.Unregister(server.Address("jobmaster"))
	err = gw.FailSlot(t.Context(), token, "te-1", jobgraph.NewAllocationID(), nil)
	require.ErrorIs(t, err, rpc.ErrUnknownAddress, "unregistered: later calls fail")
	assert.ErrorContains(t, err, server.Address("jobmaster"))

	require.NoError(t, server.Register("jobmaster", f))
	require.NoError(t, gw.FailSlot(t.Context(), token, "te-1", jobgraph.NewAllocationID(), nil), "registered again: the stub reaches it")

	require.NoError(t, server.Close())
	err = gw.FailSlot(t.Context(), token, "te-1", jobgraph.NewAllocationID(), nil)
	require.Error(t, err, "the server stopped serving")
	assert.NotErrorIs(t, err, rpc.ErrServiceClosed, "the caller's Service is open")

	require.NoError(t, client.Close())
	err = gw.FailSlot(t.Context(), token, "te-1", jobgraph.NewAllocationID(), nil)
	require.ErrorIs(t, err, rpc.ErrServiceClosed, "the caller's Service is closed")
	require.NoError(t, client.Close(), "closing twice is harmless")
	f.mu.Lock()
	assert.Len(t, f.calls, 2, "only the calls to a registered endpoint arrived")
	f.mu.Unlock()
}
