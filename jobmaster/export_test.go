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

// PanicOnRunnerLoop makes r's main loop run a closure that panics with v, as a broken invariant
// of the runner would.
func PanicOnRunnerLoop(r *LeadershipRunner, v any) { r.loop.Execute(func() { panic(v) }) }

// PanicOnLoop makes the main loop of jm (a *DefaultJobMaster) run a closure that panics with v.
func PanicOnLoop(jm JobMaster, v any) {
	d := jm.(*DefaultJobMaster)
	d.loop.Execute(func() { panic(v) })
}

// PanicOnOutbox makes jm's outbox (its outgoing calls' loop) run a closure that panics with v.
func PanicOnOutbox(jm JobMaster, v any) {
	d := jm.(*DefaultJobMaster)
	d.outbox.Execute(func() { panic(v) })
}

// HoldRunnerLoop makes r's main loop wait, inside a closure, until release is called.
func HoldRunnerLoop(r *LeadershipRunner) (release func()) {
	held, gate := make(chan struct{}), make(chan struct{})
	r.loop.Execute(func() { close(held); <-gate })
	<-held
	return func() { close(gate) }
}

// LoopPosts and OutboxPosts are how many closures jm's main loop and its outbox have accepted
// (mainloop.Loop.Posted).
func LoopPosts(jm JobMaster) uint64   { return jm.(*DefaultJobMaster).loop.Posted() }
func OutboxPosts(jm JobMaster) uint64 { return jm.(*DefaultJobMaster).outbox.Posted() }

// HoldLoop makes jm's main loop wait, inside a closure, until release is called.
func HoldLoop(jm JobMaster) (release func()) {
	d := jm.(*DefaultJobMaster)
	held, gate := make(chan struct{}), make(chan struct{})
	d.loop.Execute(func() { close(held); <-gate })
	<-held
	return func() { close(gate) }
}
