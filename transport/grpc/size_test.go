package grpctransport_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
	grpctransport "github.com/jobgraph/jobgraph/transport/grpc"
)

const limit = 64 << 10

// pair serves ep on a Service with serverOpts and returns a stub of G from a Service with
// clientOpts.
func pair[G any](t *testing.T, ep any, serverOpts, clientOpts grpctransport.Options) G {
	t.Helper()
	server := newService(t, serverOpts)
	t.Cleanup(func() { assert.NoError(t, server.Close()) })
	client := newService(t, clientOpts)
	t.Cleanup(func() { assert.NoError(t, client.Close()) })
	require.NoError(t, server.Register("endpoint", ep))
	g, err := rpc.Connect[G](t.Context(), client, server.Address("endpoint"))
	require.NoError(t, err)
	return g
}

// A message of twice the limit fails its call with ErrMessageTooLarge, whichever side's limit it
// passes (the receiver's, the sender's, or the answer's), never reaches the endpoint when it is
// the request, and the next call on the same connection works.
func TestMessageSizeLimit(t *testing.T) {
	big := rpc.TaskDeploymentDescriptor{JobID: jobgraph.NewJobID(), Invokable: "big", Config: bytes.Repeat([]byte{7}, 2*limit)}
	small := rpc.TaskDeploymentDescriptor{JobID: jobgraph.NewJobID(), Invokable: "small", Config: []byte{1}}
	cases := map[string]struct{ server, client grpctransport.Options }{
		"TheReceiversLimit": {server: grpctransport.Options{MaxReceiveMessageSize: limit}},
		"TheSendersLimit":   {client: grpctransport.Options{MaxSendMessageSize: limit}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeTaskExecutor{}
			gw := pair[rpc.TaskExecutorGateway](t, f, tc.server, tc.client)
			token := jobgraph.NewJobMasterID()
			err := gw.SubmitTask(t.Context(), token, big)
			require.ErrorIs(t, err, grpctransport.ErrMessageTooLarge)
			assert.ErrorContains(t, err, "SubmitTask")
			f.mu.Lock()
			assert.Empty(t, f.calls, "the oversized call never reached the endpoint")
			f.mu.Unlock()

			require.NoError(t, gw.SubmitTask(t.Context(), token, small), "the connection serves the next call")
			assert.Equal(t, call{"SubmitTask", []any{token, small}}, f.last(t))
		})
	}
	t.Run("TheAnswer", func(t *testing.T) {
		f := &fakeDispatcher{}
		gw := pair[rpc.DispatcherGateway](t, f, grpctransport.Options{}, grpctransport.Options{MaxReceiveMessageSize: limit})
		dir := strings.Repeat("d", 2*limit)
		_, err := gw.TriggerSavepoint(t.Context(), jobgraph.NewJobID(), dir)
		// The request is within the server's default limit; the answer (dir + "/savepoint-1")
		// is past the client's.
		require.ErrorIs(t, err, grpctransport.ErrMessageTooLarge)
		path, err := gw.TriggerSavepoint(t.Context(), jobgraph.NewJobID(), "/sp")
		require.NoError(t, err, "the connection serves the next call")
		assert.Equal(t, "/sp/savepoint-1", path)
	})
	t.Run("DefaultIsPekkoFramesize", func(t *testing.T) {
		assert.Equal(t, 10485760, grpctransport.DefaultMaxMessageSize)
	})
}
