package checkpoint

import (
	"testing"

	"github.com/jobgraph/jobgraph/coordination"
)

func TestNoCheckpointEqualsCoordinationNoCheckpoint(t *testing.T) {
	if int64(NoCheckpoint) != coordination.NoCheckpoint {
		t.Fatalf("checkpoint.NoCheckpoint = %d, coordination.NoCheckpoint = %d", NoCheckpoint, coordination.NoCheckpoint)
	}
}
