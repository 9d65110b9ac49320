package jobgraph

import "fmt"

// PanicError is the fatal error an endpoint reports when a closure on its main loop panicked: a
// broken invariant the code checks (the scheduler's and the ExecutionGraph's "broken invariant",
// the slot manager's) or a plain bug (a nil map, an index out of range). The endpoint's main loop
// has stopped for good by then: nothing queued behind the panic ran, and every call waiting on it
// and every later one returns an error that wraps this one and the endpoint's closed error. The
// endpoint hands it to its FatalErrorHandler (dispatcher.Config, dispatcher.RunnerConfig,
// jobmaster.Config, resourcemanager.Config, taskexecutor's FatalError; a MiniCluster's or a
// cluster.JobManager's closes it). errors.As finds it; when Value is an error, errors.Is and
// errors.As also see through to it (Unwrap). Flink: an RpcEndpoint's uncaught exception reaching
// the FatalErrorHandler.
type PanicError struct {
	// Endpoint is the name of the main loop that panicked: "dispatcher", "jobmaster-<JobID>",
	// "resourcemanager <address>", "taskexecutor <ResourceID>", and so on.
	Endpoint string
	// Value is what was passed to panic.
	Value any
	// Stack is the panicking goroutine's stack as runtime/debug.Stack formats it.
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("%s: panic: %v", e.Endpoint, e.Value) }

// Unwrap returns Value when it is an error (a runtime.Error included), else nil.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
