package jobmaster_test

import (
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/jobgraph/jobgraph/internal/gopool"
	"github.com/jobgraph/jobgraph/jobmaster"
)

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A batch job's JobMaster starts two goroutines, its main loop and its outbox: the checkpoint
// I/O loop starts only with the first checkpoint I/O, which a batch job never makes.
func TestBatchJobMasterStartsNoCheckpointIOLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before := goroutinesCreated()
		e := newHBEnv(t, jobmaster.Config{}) // a batch job, nothing registered yet
		assert.Equal(t, uint64(2), goroutinesCreated()-before)
		e.jm.Close()
	})
}

// With Config.Goroutines a JobMaster starts no goroutine itself: its loop and outbox are the
// two functions it gives, and a second JobMaster on the same pool after the first closed runs on
// the first one's goroutines.
func TestJobMasterGoroutinesComeFromConfigGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pool gopool.Pool
		var given atomic.Int32
		cfg := jobmaster.Config{Goroutines: func(fn func()) { given.Add(1); pool.Go(fn) }}
		first := newHBEnv(t, cfg)
		assert.Equal(t, int32(2), given.Load(), "functions given for the first JobMaster")
		first.jm.Close()
		synctest.Wait()
		before := goroutinesCreated()
		second := newHBEnv(t, cfg)
		assert.Equal(t, uint64(0), goroutinesCreated()-before, "goroutines created for the second JobMaster")
		assert.Equal(t, int32(4), given.Load())
		second.jm.Close()
		pool.Close()
	})
}
