package shuffletest_test

import (
	"testing"

	"github.com/jobgraph/jobgraph/taskexecutor"
	"github.com/jobgraph/jobgraph/taskexecutor/shuffletest"
)

// inMemory is the in-memory default with its defaults: a gate holds QueueCapacity batches, its
// reader one more it hands out, and the writer one it is filling.
var inMemory = shuffletest.Config{
	NewEnvironment: func(*testing.T) taskexecutor.ShuffleEnvironment {
		return taskexecutor.NewShuffle(taskexecutor.ShuffleConfig{})
	},
	MaxBufferedRecords: (taskexecutor.DefaultQueueCapacity + 2) * taskexecutor.DefaultBatchSize,
}

// The in-memory *taskexecutor.Shuffle passes the ShuffleEnvironment conformance suite, in a
// bubble and in real time.
func TestInMemoryShuffleConformance(t *testing.T) {
	shuffletest.TestShuffleEnvironmentInBubble(t, inMemory)
}

func TestInMemoryShuffleConformanceRealTime(t *testing.T) {
	shuffletest.TestShuffleEnvironment(t, inMemory)
}
