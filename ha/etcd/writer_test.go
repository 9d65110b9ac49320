package etcd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

var errInjected = errors.New("injected transaction failure")

// TestFailedLeaderInformationWriteIsReported: when the transaction that publishes a confirmed
// leader's information fails (here a gRPC interceptor fails every transaction that puts a leader
// information key), the contender that confirmed hears of it through HandleError, and the other
// contenders nothing.
func TestFailedLeaderInformationWriteIsReported(t *testing.T) {
	srv := startServer(t)
	prefix := newPrefix()
	failInfo := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if r, ok := req.(*pb.TxnRequest); ok {
			for _, op := range r.Success {
				if p := op.GetRequestPut(); p != nil && strings.HasPrefix(string(p.Key), prefix+"/leader/info/") {
					return errInjected
				}
			}
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.endpoint}, Logger: zap.NewNop(), DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(failInfo)}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	svc, err := New(Options{Client: c, Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, svc.Close()) })

	quiet, _ := lead(t, svc)
	h := newHolder()
	e := svc.ResourceManagerLeaderElection()
	require.NoError(t, e.Start(h))
	session := h.awaitGrant(t)
	e.ConfirmLeadership(session, "resourcemanager@a")
	select {
	case err := <-h.errs:
		require.ErrorIs(t, err, errInjected)
		assert.Contains(t, err.Error(), "publishing the resourcemanager leader information")
	case <-time.After(wait):
		require.FailNow(t, "the failed write was not reported")
	}
	assert.True(t, e.HasLeadership(session), "a failed publication does not end the leadership")
	select {
	case err := <-quiet.errs:
		assert.Fail(t, "the Dispatcher's contender heard of another component's failure", "%v", err)
	default:
	}
}
