package jobmaster_test

import (
	"runtime/metrics"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

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
