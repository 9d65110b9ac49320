package mainloop

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph/internal/gopool"
	"github.com/jobgraph/jobgraph/internal/notifytest"
)

// Operations run one after another in the order added, each only once the one before ended,
// and Tail closes when the last has finished.
func TestChainRunsOperationsInOrderOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Chain
		var wg sync.WaitGroup
		select {
		case <-c.Tail():
		default:
			t.Fatal("the Tail of an empty chain is closed")
		}
		release := make(chan struct{})
		var order []int
		c.Then(&wg, func() { <-release; order = append(order, 1) })
		c.Then(&wg, func() { order = append(order, 2) })
		tail := c.Tail()
		synctest.Wait()
		assert.Empty(t, order, "the second waits for the first, which is held")
		select {
		case <-tail:
			t.Fatal("Tail closed while operations are pending")
		default:
		}
		close(release)
		<-tail
		assert.Equal(t, []int{1, 2}, order)
		wg.Wait()
	})
}

// ThenOn runs the operations on the goroutines run gives (a gopool.Pool: one after another on
// one goroutine), in order, counted by wg.
func TestChainThenOnRunsOnTheGivenGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Chain
		var wg sync.WaitGroup
		var pool gopool.Pool
		var order []int
		var on [3]uint64 // the goroutine each operation ran on
		c.ThenOn(pool.Go, &wg, func() { on[0] = notifytest.GoroutineID(); order = append(order, 1) })
		<-c.Tail()
		synctest.Wait()
		release := make(chan struct{})
		c.ThenOn(pool.Go, &wg, func() { on[1] = notifytest.GoroutineID(); <-release; order = append(order, 2) })
		c.ThenOn(pool.Go, &wg, func() { on[2] = notifytest.GoroutineID(); order = append(order, 3) })
		synctest.Wait()
		assert.Equal(t, []int{1}, order, "the third waits for the second, which is held")
		close(release)
		wg.Wait()
		assert.Equal(t, []int{1, 2, 3}, order)
		// Compared by goroutine, not by the process's count of goroutines created, which
		// goroutines outside the test also raise (it failed now and then under -cpu=1,4).
		assert.Equal(t, on[0], on[1], "the second reuses the first's goroutine")
		assert.NotEqual(t, on[1], on[2], "the third, added while the second ran, needs a goroutine of its own")
		pool.Close()
	})
}
