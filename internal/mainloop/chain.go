package mainloop

import (
	"sync"

	"github.com/jobgraph/jobgraph/internal/gopool"
)

// Chain runs operations off a main loop strictly one after another, in the order they were
// added: Flink's sequentialOperation of its leadership runners (the previous session's close
// before the next session's store reads, before the confirmation). The zero value is empty and
// ready. Then and Tail are called on the owning loop only (a Chain has no lock); the operations
// run on goroutines of the WaitGroup given to Then, which the owner waits for on Close.
type Chain struct {
	tail chan struct{} // closed once the last operation added has finished; nil when none was
}

// Then runs op on a goroutine of wg once every operation added before it has finished.
func (c *Chain) Then(wg *sync.WaitGroup, op func()) { c.ThenOn(nil, wg, op) }

// ThenOn is Then with op's goroutine started by run (a gopool.Pool's Go, as for NewNamedOn; nil
// means a go statement); wg counts it as Then's does, so the owner's wait also covers it.
func (c *Chain) ThenOn(run func(fn func()), wg *sync.WaitGroup, op func()) {
	prev, next := c.tail, make(chan struct{})
	c.tail = next
	wg.Add(1)
	fn := func() {
		defer wg.Done()
		defer close(next)
		if prev != nil {
			<-prev
		}
		op()
	}
	gopool.Start(run, fn)
}

// Tail returns a channel closed once every operation added so far has finished (already closed
// when none was added).
func (c *Chain) Tail() <-chan struct{} {
	if c.tail == nil {
		c.tail = make(chan struct{})
		close(c.tail)
	}
	return c.tail
}
