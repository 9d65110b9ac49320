package gopool

import (
	"runtime/metrics"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func (p *Pool) numIdle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// A function given after the previous one returned runs on the goroutine that ran it: no
// goroutine is created for it.
func TestGoReusesAnIdleGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p Pool
		ran := 0
		p.Go(func() { ran++ })
		synctest.Wait()
		require.Equal(t, 1, p.numIdle())
		before := goroutinesCreated()
		for range 10 {
			p.Go(func() { ran++ })
			synctest.Wait()
		}
		assert.Equal(t, uint64(0), goroutinesCreated()-before, "goroutines created for 10 functions run one after another")
		assert.Equal(t, 11, ran)
		assert.Equal(t, 1, p.numIdle())
		p.Close()
		assert.Equal(t, 0, p.numIdle())
	})
}

// Functions never wait for one another: six that block until all six run are all running at
// once; afterwards MaxIdle goroutines stay, the others exit.
func TestGoNeverWaitsForABusyGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p Pool
		const n = MaxIdle + 2
		var started sync.WaitGroup
		started.Add(n)
		release := make(chan struct{})
		for range n {
			p.Go(func() {
				started.Done()
				<-release
			})
		}
		started.Wait() // returns only if all n run at the same time
		close(release)
		synctest.Wait()
		assert.Equal(t, MaxIdle, p.numIdle())
		p.Close()
	})
}

// Close ends the idle goroutines and waits for them; a function given afterwards still runs.
func TestCloseEndsIdleGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p Pool
		for range 3 {
			p.Go(func() {})
		}
		synctest.Wait()
		p.Close()
		p.Close()
		done := make(chan struct{})
		p.Go(func() { close(done) })
		<-done
		synctest.Wait()
		assert.Equal(t, 0, p.numIdle(), "a goroutine started after Close is not kept")
	})
}

// Idle raises how many finished goroutines stay: ten that ran at once all stay with Idle 10,
// and the next ten functions, again all at once, create no goroutine.
func TestIdleKeepsThatManyGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := Pool{Idle: 10}
		runTogether := func(n int) {
			var started sync.WaitGroup
			started.Add(n)
			release := make(chan struct{})
			for range n {
				p.Go(func() {
					started.Done()
					<-release
				})
			}
			started.Wait()
			close(release)
			synctest.Wait()
		}
		runTogether(12)
		assert.Equal(t, 10, p.numIdle(), "Idle goroutines stay, the others exit")
		before := goroutinesCreated()
		runTogether(10)
		assert.Equal(t, uint64(0), goroutinesCreated()-before, "goroutines created for 10 functions at once")
		assert.Equal(t, 10, p.numIdle())
		p.Close()
		assert.Equal(t, 0, p.numIdle())
	})
}

// Start hands fn to run when there is one, else runs it on a goroutine of its own.
func TestStartUsesRunOrAGoStatement(t *testing.T) {
	var handed int
	ran := make(chan struct{}, 2)
	fn := func() { ran <- struct{}{} }
	Start(func(f func()) { handed++; f() }, fn)
	assert.Equal(t, 1, handed)
	<-ran
	Start(nil, fn)
	<-ran
	assert.Equal(t, 1, handed, "a nil run is a go statement")
}
