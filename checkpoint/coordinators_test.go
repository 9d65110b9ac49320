package checkpoint_test

import (
	"testing"

	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/coordination"
)

// External test package: coordination imports checkpoint (its Holder implements
// OperatorCoordinatorCheckpointContext), so an internal test importing coordination is a cycle.
func TestNoCheckpointEqualsCoordinationNoCheckpoint(t *testing.T) {
	if int64(checkpoint.NoCheckpoint) != coordination.NoCheckpoint {
		t.Fatalf("checkpoint.NoCheckpoint = %d, coordination.NoCheckpoint = %d", checkpoint.NoCheckpoint, coordination.NoCheckpoint)
	}
}
