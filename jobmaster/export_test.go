package jobmaster

import (
	"github.com/jobgraph/jobgraph"
)

// OperatorEventHandlerFunc is an operatorCoordinatorHandler for tests.
type OperatorEventHandlerFunc func(vertex jobgraph.JobVertexID, subtask int, attempt jobgraph.ExecutionAttemptID, event []byte) error

func (f OperatorEventHandlerFunc) deliverOperatorEvent(vertex jobgraph.JobVertexID, subtask int, attempt jobgraph.ExecutionAttemptID, event []byte) error {
	return f(vertex, subtask, attempt, event)
}

// SetOperatorEventHandler installs h as jm's operator-coordinator handler, on its loop.
func SetOperatorEventHandler(jm JobMaster, h OperatorEventHandlerFunc) {
	d := jm.(*DefaultJobMaster)
	d.loop.Execute(func() { d.coordinators = h })
}

// SendOperatorEventsToTasks calls sendOperatorEventToTask for each event in order, in one task
// of jm's loop; ack gets each one's outcome with its index.
func SendOperatorEventsToTasks(jm JobMaster, attempt jobgraph.ExecutionAttemptID, events [][]byte, ack func(i int, err error)) {
	d := jm.(*DefaultJobMaster)
	d.loop.Execute(func() {
		for i, ev := range events {
			d.sendOperatorEventToTask(attempt, ev, func(err error) { ack(i, err) })
		}
	})
}
