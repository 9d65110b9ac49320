package netshuffle_test

import (
	"testing"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/jobgraph/jobgraph/taskexecutor/shuffletest"
	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// The suite's Environment: small frames, so that the back-pressure bound is small and a reader
// in the middle of a partition has not received all of it.
var suiteConfig = netshuffle.Config{
	DefaultCodec:      "shuffletest",
	BufferSize:        512,
	BuffersPerChannel: 2,
}

// suiteBound is what a pipelined subpartition whose reader does not read accepts before Emit
// blocks, in chunks of at most BufferSize/3+1 of the suite's ints (a length, a tag and a
// varint: at least 3 bytes each; a chunk is handed over once it holds BufferSize bytes): the
// writer's chunk, the in-memory gate's queue of DefaultLocalQueueCapacity, one at the data
// server, then the frames of the initial credit and the one the frame at the reader gave back.
func suiteBound() int {
	perChunk := suiteConfig.BufferSize/3 + 1
	return (1 + netshuffle.DefaultLocalQueueCapacity + 1 + suiteConfig.BuffersPerChannel + 1) * perChunk
}

// The network shuffle passes the ShuffleEnvironment conformance suite over loopback, with its
// ShuffleMaster describing every partition (one Environment serves the suite's producers on
// both TaskExecutors and reads through its own data server).
func TestNetworkShuffleConformance(t *testing.T) {
	cfg := shuffletest.Config{
		NewEnvironment: func(t *testing.T) taskexecutor.ShuffleEnvironment {
			c := suiteConfig
			c.Codecs = netshuffle.NewCodecs()
			c.Codecs.Register("shuffletest", suiteCodec{})
			return newEnv(t, c)
		},
		NewShuffleMaster: func(_ *testing.T, env taskexecutor.ShuffleEnvironment) scheduler.ShuffleMaster {
			addr := env.(*netshuffle.Environment).Addr()
			return &netshuffle.ShuffleMaster{Resolve: func(jobgraph.ResourceID) (string, error) { return addr, nil }}
		},
		MaxBufferedRecords: suiteBound(),
		AcrossProcesses:    true,
	}
	shuffletest.TestShuffleEnvironment(t, cfg)
}
