// Package gopool runs short functions off an endpoint's main loop on goroutines it keeps for
// reuse: the calls an endpoint makes to other endpoints (a TaskExecutor's slot offers, the
// ResourceManager's slot requests, the Dispatcher's watch of each job) would otherwise each start
// a goroutine, which costs its creation and, for a deep call, the growth of its fresh stack. A
// goroutine that finished its function waits for the next one instead of exiting, up to MaxIdle
// of them; Go never waits for a goroutine to become free (it starts a new one), so functions
// never wait for one another, exactly as with a go statement.
//
// The owner closes the Pool when it closes, after it waited for the functions it started (a Pool
// does not wait for them itself): Close ends the idle goroutines and waits until every goroutine
// of the Pool has exited. A Pool's goroutines are started by the goroutines that call Go, so a
// Pool used only inside one testing/synctest bubble keeps its goroutines in that bubble.
package gopool

import "sync"

// Start runs fn on a goroutine started by run — a Pool's Go, or whatever an owner was given to
// start its goroutines with — or, for a nil run, by a go statement. It never blocks.
func Start(run func(fn func()), fn func()) {
	if run != nil {
		run(fn)
		return
	}
	go fn()
}

// MaxIdle is how many finished goroutines a Pool keeps waiting for work by default (Pool.Idle);
// more exit.
const MaxIdle = 4

// Pool is a set of reusable goroutines. The zero value is ready; it must not be copied after
// first use. Safe for concurrent use.
type Pool struct {
	// Idle is how many finished goroutines the Pool keeps waiting for work; 0 means MaxIdle. An
	// owner whose functions run long and several at once (the main loops of a job, which end
	// together) keeps more, so the next job finds them. Set it before the first Go.
	Idle int

	mu      sync.Mutex
	idle    []chan func() // each an idle goroutine's own channel (capacity 1)
	closed  bool
	workers sync.WaitGroup
}

// Go runs fn on an idle goroutine of the Pool, or on a new one when none is idle. It never
// blocks. After Close, fn runs on a new goroutine that is not kept.
func (p *Pool) Go(fn func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		c <- fn // capacity 1 and handed out once per idle period: never blocks
		return
	}
	p.workers.Add(1)
	p.mu.Unlock()
	go p.work(fn)
}

func (p *Pool) work(fn func()) {
	defer p.workers.Done()
	var c chan func()
	for {
		fn()
		fn = nil // not kept alive while idle
		p.mu.Lock()
		if p.closed || len(p.idle) >= p.maxIdle() {
			p.mu.Unlock()
			return
		}
		if c == nil {
			c = make(chan func(), 1)
		}
		p.idle = append(p.idle, c)
		p.mu.Unlock()
		if fn = <-c; fn == nil { // Close
			return
		}
	}
}

func (p *Pool) maxIdle() int {
	if p.Idle > 0 {
		return p.Idle
	}
	return MaxIdle
}

// Close ends the idle goroutines and waits until every goroutine of the Pool has exited, so the
// owner calls it once the functions it started have returned. Closing twice is harmless.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		c <- nil
	}
	p.workers.Wait()
}
