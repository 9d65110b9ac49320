package mainloop

import (
	"runtime/metrics"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph/internal/gopool"
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
		c.ThenOn(pool.Go, &wg, func() { order = append(order, 1) })
		<-c.Tail()
		synctest.Wait()
		before := goroutinesCreated()
		release := make(chan struct{})
		c.ThenOn(pool.Go, &wg, func() { <-release; order = append(order, 2) })
		c.ThenOn(pool.Go, &wg, func() { order = append(order, 3) })
		synctest.Wait()
		assert.Equal(t, []int{1}, order, "the third waits for the second, which is held")
		close(release)
		wg.Wait()
		assert.Equal(t, []int{1, 2, 3}, order)
		assert.Equal(t, uint64(1), goroutinesCreated()-before, "the second reuses the first's goroutine; the third, added while the second ran, needs one")
		pool.Close()
	})
}

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
