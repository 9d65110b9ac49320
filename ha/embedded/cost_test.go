package embedded_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
)

// Every submission asks the JobResultStore about a job it does not hold (the Dispatcher's
// duplicate check and the runner's on its grant), and every finished job is marked clean: neither
// decodes or encodes the stored result. A miss allocates only its error (whose message is made
// when asked for), MarkClean nothing.
func TestResultStoreMissAndMarkCleanDecodeNothing(t *testing.T) {
	s := embedded.New()
	defer s.Close()
	ctx := context.Background()
	store := s.JobResultStore()
	missing := jobgraph.NewJobID()
	var err error
	allocs := testing.AllocsPerRun(100, func() { _, err = store.Get(ctx, missing) })
	require.ErrorIs(t, err, ha.ErrNotFound)
	assert.Equal(t, "ha/embedded: job result of "+missing.String()+": ha: not found", err.Error())
	assert.Equal(t, 1.0, allocs, "allocations of a Get of a missing job")

	// Each run marks another dirty entry clean (AllocsPerRun runs once more to warm up).
	results := make([]jobgraph.JobResult, 101)
	for i := range results {
		results[i] = finishedResult("marked")
		require.NoError(t, store.CreateDirty(ctx, results[i]))
	}
	next := 0
	allocs = testing.AllocsPerRun(100, func() {
		if err := store.MarkClean(ctx, results[next].JobID); err != nil {
			t.Fatal(err)
		}
		next++
	})
	assert.Equal(t, 0.0, allocs, "allocations of MarkClean")
	r := results[100]
	e, err := store.Get(ctx, r.JobID)
	require.NoError(t, err)
	assert.Equal(t, ha.JobResultEntry{Result: r, Clean: true}, e)
	dirty, err := store.DirtyResults(ctx)
	require.NoError(t, err)
	assert.Empty(t, dirty)
}
