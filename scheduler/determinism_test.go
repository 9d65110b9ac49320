package scheduler

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/executiongraph"
	"github.com/jobgraph/jobgraph/rpc"
	"github.com/jobgraph/jobgraph/slotpool"
)

// counterIDs returns an ID source that yields 1, 2, 3… (big-endian in the last 8 bytes), and the
// IDs it gave out.
func counterIDs() (next func() slotpool.SlotRequestID, given *[]slotpool.SlotRequestID) {
	var n uint64
	given = new([]slotpool.SlotRequestID)
	return func() slotpool.SlotRequestID {
		n++
		var id slotpool.SlotRequestID
		binary.BigEndian.PutUint64(id[8:], n)
		*given = append(*given, id)
		return id
	}, given
}

func requestID(n uint64) slotpool.SlotRequestID {
	var id slotpool.SlotRequestID
	binary.BigEndian.PutUint64(id[8:], n)
	return id
}

// The allocator draws its slot request IDs from Config.NewSlotRequestID: one per shared slot, in
// the order the subtasks are scheduled, and the pool holds the requests under those IDs.
func TestSlotRequestIDsComeFromConfig(t *testing.T) {
	g := jobgraph.New("ids", jobgraph.Streaming)
	src := g.AddVertex("source", "noop", 2).WithSlotSharingGroup("default")
	sink := g.AddVertex("sink", "noop", 2).WithSlotSharingGroup("default")
	g.Connect(src, sink, jobgraph.AllToAll, jobgraph.Pipelined)
	next, given := counterIDs()
	h := newHarness(t, g, Config{NewSlotRequestID: next})
	h.s.StartScheduling()

	// One region, one slot-sharing group ("default"): two shared slots, so two requests.
	assert.Equal(t, []slotpool.SlotRequestID{requestID(1), requestID(2)}, *given)
	require.Equal(t, 2, h.pool.NumPendingRequests())
	for _, id := range *given {
		r, ok := h.pool.Request(id)
		require.True(t, ok, "the pool holds request %x", id)
		assert.Equal(t, id, r.ID())
	}
}

// The same job graph, clock and ID sources give byte-identical ArchivedExecutionGraph JSON: a
// run with a failure, a region restart after a backoff, and the job FINISHED, twice.
func TestSameInputsGiveTheSameArchive(t *testing.T) {
	g := jobgraph.New("determinism", jobgraph.Streaming)
	g.JobID = jobgraph.JobID(requestID(7))
	src := g.AddVertex("source", "noop", 2).WithSlotSharingGroup("default")
	src.ID = jobgraph.JobVertexID(requestID(1))
	sink := g.AddVertex("sink", "noop", 2).WithSlotSharingGroup("default")
	sink.ID = jobgraph.JobVertexID(requestID(2))
	g.Connect(src, sink, jobgraph.Pointwise, jobgraph.Pipelined).ShipStrategy = "FORWARD"
	src.Results[0].ID = jobgraph.IntermediateDataSetID(requestID(3))
	sink.Inputs[0].Source = src.Results[0].ID
	g.RestartStrategy = jobgraph.FixedDelayRestart(1, 5*time.Second)
	require.NoError(t, g.Validate())

	run := func() ([]byte, []slotpool.SlotRequestID) {
		next, given := counterIDs()
		var graphID jobgraph.ExecutionGraphID
		graphID[15] = 9
		h := newHarness(t, g, Config{
			NewSlotRequestID: next,
			GraphOptions:     []executiongraph.Option{executiongraph.WithExecutionGraphID(graphID)},
		})
		h.s.StartScheduling()
		h.timers.Advance(time.Second)
		offers := make([]rpc.SlotOffer, 2)
		for i := range offers {
			offers[i] = rpc.SlotOffer{AllocationID: jobgraph.AllocationID(requestID(uint64(100 + i))), SlotIndex: i}
		}
		require.Len(t, h.pool.OfferSlots("taskexecutor-a", offers), 2)
		h.timers.Advance(time.Second)
		h.runDeployed()
		h.timers.Advance(time.Second)
		require.True(t, h.fail("sink", 1, errors.New("disk full")))
		h.timers.Advance(time.Second)
		// The canceled partner reports back; the region restarts after 5 s.
		require.True(t, h.report("source", 1, jobgraph.ExecutionStateCanceled))
		h.timers.Advance(5 * time.Second)
		h.runDeployed()
		h.timers.Advance(time.Second)
		for _, name := range []string{"source", "sink"} {
			for i := range 2 {
				require.True(t, h.report(name, i, jobgraph.ExecutionStateFinished), "%s %d", name, i)
				h.timers.Advance(time.Millisecond)
			}
		}
		require.Equal(t, jobgraph.JobStatusFinished, h.s.JobStatus())
		require.Len(t, h.terminal, 1)
		data, err := json.Marshal(h.terminal[0].archived)
		require.NoError(t, err)
		again, err := json.Marshal(h.s.Archive())
		require.NoError(t, err)
		require.Equal(t, string(data), string(again), "the terminal archive and a later one agree")
		return data, *given
	}

	first, firstIDs := run()
	second, secondIDs := run()
	assert.Equal(t, string(first), string(second), "byte-identical archives")
	// 2 shared slots, then 1 more for the restarted region {source₁, sink₁}.
	assert.Equal(t, []slotpool.SlotRequestID{requestID(1), requestID(2), requestID(3)}, firstIDs)
	assert.Equal(t, firstIDs, secondIDs)

	// The archive is the run described above, not an empty one.
	var a executiongraph.ArchivedExecutionGraph
	require.NoError(t, json.Unmarshal(first, &a))
	assert.Equal(t, jobgraph.JobStatusFinished, a.Status)
	require.Len(t, a.JobVertices, 2)
	got := ""
	for _, jv := range a.JobVertices {
		for _, st := range jv.Subtasks {
			got += fmt.Sprintf("%s/%d %s#%d at %s; ", jv.Name, st.Subtask, st.State, st.AttemptNumber, st.Location)
		}
	}
	assert.Equal(t, "source/0 FINISHED#0 at taskexecutor-a; source/1 FINISHED#1 at taskexecutor-a; "+
		"sink/0 FINISHED#0 at taskexecutor-a; sink/1 FINISHED#1 at taskexecutor-a; ", got)
	require.Len(t, a.ExceptionHistory, 1)
	assert.Equal(t, "task sink (2/2) (attempt 0) on taskexecutor-a failed: disk full", a.ExceptionHistory[0].Message)
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	assert.Equal(t, t0.Add(3*time.Second), a.ExceptionHistory[0].Timestamp)
	assert.Equal(t, t0.Add(10*time.Second+3*time.Millisecond), a.StatusTimestamps[jobgraph.JobStatusFinished].UTC())
}
