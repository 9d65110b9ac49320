package embedded_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/ha"
	"github.com/jobgraph/jobgraph/ha/embedded"
	"github.com/jobgraph/jobgraph/ha/hatest"
)

// A capped store passes the conformance suite too (its cap is larger than what the suite keeps).
func TestConformanceWithMaxCleanResults(t *testing.T) {
	hatest.TestServicesInBubble(t, func(t *testing.T) ha.Services {
		s, err := embedded.NewWithOptions(embedded.Options{MaxCleanResults: 100})
		require.NoError(t, err)
		return s
	})
}

func finishedResult(name string) jobgraph.JobResult {
	return jobgraph.JobResult{JobID: jobgraph.NewJobID(), Name: name, Status: jobgraph.JobStatusFinished}
}

// With MaxCleanResults, marking one more entry clean evicts the entry marked clean the longest
// ago; dirty entries stay whatever their number.
func TestMaxCleanResultsEvictsTheOldestCleanEntry(t *testing.T) {
	s, err := embedded.NewWithOptions(embedded.Options{MaxCleanResults: 2})
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	store := s.JobResultStore()
	a, b, c, d := finishedResult("a"), finishedResult("b"), finishedResult("c"), finishedResult("d")
	for _, r := range []jobgraph.JobResult{a, b, c, d} {
		require.NoError(t, store.CreateDirty(ctx, r))
	}
	require.NoError(t, store.MarkClean(ctx, b.JobID))
	require.NoError(t, store.MarkClean(ctx, a.JobID))
	require.NoError(t, store.MarkClean(ctx, a.JobID), "marking a clean entry clean again changes nothing")
	require.NoError(t, store.MarkClean(ctx, c.JobID)) // evicts b, the oldest clean one

	_, err = store.Get(ctx, b.JobID)
	require.ErrorIs(t, err, ha.ErrNotFound)
	for _, r := range []jobgraph.JobResult{a, c} {
		e, err := store.Get(ctx, r.JobID)
		require.NoError(t, err)
		assert.Equal(t, ha.JobResultEntry{Result: r, Clean: true}, e)
	}
	dirty, err := store.DirtyResults(ctx)
	require.NoError(t, err)
	assert.Equal(t, []jobgraph.JobResult{d}, dirty, "dirty entries are never evicted")
	require.NoError(t, store.CreateDirty(ctx, b), "an evicted JobID can be recorded again")
}

func TestNewWithOptionsRejectsNegativeMaxCleanResults(t *testing.T) {
	s, err := embedded.NewWithOptions(embedded.Options{MaxCleanResults: -1})
	assert.Nil(t, s)
	assert.EqualError(t, err, "ha/embedded: Options.MaxCleanResults is -1, negative (0 means unlimited)")
}

// BenchmarkCleanResultMemory reports the heap one clean JobResultStore entry keeps of a job that
// finished without failures (B/entry): what an unbounded store grows by per job.
func BenchmarkCleanResultMemory(b *testing.B) {
	ctx := context.Background()
	const n = 10000
	results := make([]jobgraph.JobResult, n)
	for i := range results {
		results[i] = finishedResult("wordcount")
		results[i].NetRuntime = 1234567
	}
	var perEntry float64
	for b.Loop() {
		s := embedded.New()
		store := s.JobResultStore()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, r := range results {
			if err := store.CreateDirty(ctx, r); err != nil {
				b.Fatal(err)
			}
			if err := store.MarkClean(ctx, r.JobID); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perEntry = float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(store)
		s.Close()
	}
	b.ReportMetric(perEntry, "B/entry")
}
