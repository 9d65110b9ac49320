package source_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph/coordination"
	"github.com/jobgraph/jobgraph/source"
)

func TestSplitAssignmentTracker(t *testing.T) {
	ids := func(s []source.Split) []string {
		out := []string{}
		for _, x := range s {
			out = append(out, x.ID)
		}
		return out
	}
	tr := source.NewSplitAssignmentTracker()
	tr.RecordSplitAssignment(0, splits("a")...)
	tr.RecordSplitAssignment(1, splits("b")...)
	tr.OnCheckpoint(1)
	tr.RecordSplitAssignment(0, splits("c", "d")...)
	tr.OnCheckpoint(2)
	tr.OnCheckpoint(3) // nothing since 2
	tr.RecordSplitAssignment(0, splits("e")...)
	tr.RecordSplitAssignment(1, splits("f")...)

	assert.Equal(t, []string{"c", "d", "e"}, ids(tr.GetAndRemoveUncheckpointedAssignment(0, 1)))
	assert.Equal(t, []string{}, ids(tr.GetAndRemoveUncheckpointedAssignment(0, 1)), "removed")
	assert.Equal(t, []string{"f"}, ids(tr.GetAndRemoveUncheckpointedAssignment(1, 3)))
	// Checkpoint 1 completed: b (before it) is forgotten even for a reset to no checkpoint.
	tr.RecordSplitAssignment(1, splits("g")...)
	assert.Equal(t, []string{"a"}, ids(tr.GetAndRemoveUncheckpointedAssignment(0, coordination.NoCheckpoint)), "a, given before checkpoint 1")
	tr.OnCheckpointComplete(1)
	assert.Equal(t, []string{"g"}, ids(tr.GetAndRemoveUncheckpointedAssignment(1, coordination.NoCheckpoint)))
	tr.RecordSplitAssignment(0, splits("h")...)
	tr.OnCheckpoint(4)
	tr.RecordSplitAssignment(0, splits("i")...)
	tr.Reset()
	assert.Equal(t, []string{}, ids(tr.GetAndRemoveUncheckpointedAssignment(0, coordination.NoCheckpoint)))
}
