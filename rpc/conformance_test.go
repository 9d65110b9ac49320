package rpc_test

import (
	"testing"

	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/rpc/rpctest"
)

func newLocalService(*testing.T) rpc.Service { return rpc.NewLocalService() }

// The in-process Service passes the conformance suite, in a bubble and in real time.
func TestLocalServiceConformance(t *testing.T) { rpctest.TestServiceInBubble(t, newLocalService) }

func TestLocalServiceConformanceRealTime(t *testing.T) { rpctest.TestService(t, newLocalService) }
