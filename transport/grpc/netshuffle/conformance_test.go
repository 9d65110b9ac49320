package netshuffle_test

import (
	"testing"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/scheduler"
	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/jobgraph/jobgraph/taskexecutor/shuffletest"
	"github.com/jobgraph/jobgraph/transport/grpc/netshuffle"
)

// The suite's Environment: small batches and frames, so that the back-pressure bound
// is small and a reader in the middle of a partition has not received all of it.
var suiteConfig = netshuffle.Config{
	DefaultCodec:      "shuffletest",
	BufferSize:        512,
	BuffersPerChannel: 2,
	Local:             taskexecutor.ShuffleConfig{BatchSize: 16},
}

// suiteBound is what a pipelined subpartition whose reader does not read accepts before Emit
// blocks: the writer's batch, the in-memory gate's queue and the batch the data server reads
// from, then three frames (the two of the initial credit and the one the frame at the reader
// gave back), each of at most BufferSize/3+1 of the suite's ints (a length, a tag and a
// varint: at least 3 bytes each), and one record that did not fit the last frame.
func suiteBound() int {
	local := suiteConfig.Local.BatchSize * (taskexecutor.DefaultQueueCapacity + 2)
	perFrame := suiteConfig.BufferSize/3 + 1
	return local + (suiteConfig.BuffersPerChannel+1)*perFrame + 1
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
