package mainloop

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
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
