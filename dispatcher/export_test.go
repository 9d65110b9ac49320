package dispatcher

// PanicOnLoop makes d's main loop run a closure that panics with v, as a broken invariant of the
// Dispatcher would.
func PanicOnLoop(d *StandaloneDispatcher, v any) { d.loop.Execute(func() { panic(v) }) }

// PanicOnRunnerLoop makes r's main loop run a closure that panics with v.
func PanicOnRunnerLoop(r *Runner, v any) { r.loop.Execute(func() { panic(v) }) }

// HoldRunnerLoop makes r's main loop wait, inside a closure, until release is called.
func HoldRunnerLoop(r *Runner) (release func()) {
	held, gate := make(chan struct{}), make(chan struct{})
	r.loop.Execute(func() { close(held); <-gate })
	<-held
	return func() { close(gate) }
}

// HoldLoop makes d's main loop wait, inside a closure, until release is called. Call it only
// while the loop runs nothing else that waits for the caller.
func HoldLoop(d *StandaloneDispatcher) (release func()) {
	held, gate := make(chan struct{}), make(chan struct{})
	d.loop.Execute(func() { close(held); <-gate })
	<-held
	return func() { close(gate) }
}
