package dispatcher_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/jobmaster"
)

// endWithAccumulators ends the fake JobMaster's job with status, its archive carrying accs.
func endWithAccumulators(f *fakeJobMaster, status jobgraph.JobStatus, accs map[string]jobgraph.SerializedAccumulator) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status = status
	a := f.archive(status)
	a.Accumulators = accs
	f.result = jobmaster.Result{Archived: a}
	close(f.done)
}

// The JobResult carries the archived job's accumulators, as a copy, and they survive the
// JobResultStore: once the archive expired, the result read back from the store has them.
func TestJobResultCarriesTheAccumulatorsThroughTheResultStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const expiration = time.Minute
		f := newStoreFixture(t, expiration, 0)
		ctx := context.Background()
		g := graph("with accumulators")
		require.NoError(t, f.d.SubmitJob(ctx, g))
		jm := <-f.jms
		accs := map[string]jobgraph.SerializedAccumulator{
			"words":  {Kind: "LongCounter", Value: json.RawMessage(`1234`)},
			"broken": {Kind: "IntCounter", Failure: &jobgraph.ErrorInfo{Message: "two types under one name: IntCounter and LongCounter", Codes: []string{"jobgraph.accumulator-type-mismatch"}}},
		}
		endWithAccumulators(jm, jobgraph.JobStatusFinished, accs)

		res, err := f.d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, accs, res.Accumulators)
		res.Accumulators["words"].Value[0] = '9'
		a, err := f.d.RequestJob(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, json.RawMessage(`1234`), a.Accumulators["words"].Value, "the result does not share the archive's values")

		time.Sleep(expiration)
		synctest.Wait()
		require.False(t, archived(t, f.d, g.JobID))
		stored, err := f.d.RequestJobResult(ctx, g.JobID)
		require.NoError(t, err)
		assert.Equal(t, accs, stored.Accumulators, "from the JobResultStore")
		words, err := jobgraph.AccumulatorValue[int64](stored.Accumulators, "words")
		require.NoError(t, err)
		assert.Equal(t, int64(1234), words)
		_, err = jobgraph.AccumulatorValue[int](stored.Accumulators, "broken")
		assert.ErrorIs(t, err, jobgraph.ErrAccumulatorTypeMismatch)
	})
}
