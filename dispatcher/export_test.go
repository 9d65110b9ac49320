package dispatcher

// PanicOnLoop makes d's main loop run a closure that panics with v, as a broken invariant of the
// Dispatcher would.
func PanicOnLoop(d *StandaloneDispatcher, v any) { d.loop.Execute(func() { panic(v) }) }

// PanicOnRunnerLoop makes r's main loop run a closure that panics with v.
func PanicOnRunnerLoop(r *Runner, v any) { r.loop.Execute(func() { panic(v) }) }
