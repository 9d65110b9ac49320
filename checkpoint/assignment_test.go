package checkpoint_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

// keyedSnapshot is vertex v at parallelism p over maxPar key groups: each subtask holds its key
// groups' state "kg<n>" and one operator list state "offsets" element "s<i>".
func keyedSnapshot(t *testing.T, v jobgraph.JobVertexID, p, maxPar int) checkpoint.CompletedCheckpoint {
	t.Helper()
	cp := checkpoint.CompletedCheckpoint{CheckpointID: 3}
	ranges, err := keygroup.KeyGroupPartitions(maxPar, p)
	require.NoError(t, err)
	for i, r := range ranges {
		k := keygroup.KeyGroupsState[[]byte]{Range: r, Groups: map[int][]byte{}}
		for kg := range r.All() {
			k.Groups[kg] = fmt.Appendf(nil, "kg%d", kg)
		}
		cp.TaskStates = append(cp.TaskStates, checkpoint.SubtaskState{JobVertexID: v, Subtask: i, State: checkpoint.StateHandle{
			KeyedState:    &k,
			OperatorState: keygroup.OperatorState[[]byte]{"offsets": {Mode: keygroup.SplitDistribute, Elements: [][]byte{fmt.Appendf(nil, "s%d", i)}}},
			Size:          10,
		}})
	}
	return cp
}

// Max parallelism 128, keyed state at parallelism 4 restored at 2 and at 8: subtask i owns
// exactly the key groups [⌈i·128/p⌉, ⌈(i+1)·128/p⌉) with their state, and the operator list
// state is cut into contiguous shares.
func TestAssignStatesRedistributesKeyGroupsAndOperatorState(t *testing.T) {
	v := jobgraph.NewJobVertexID()
	cp := keyedSnapshot(t, v, 4, 128)
	for _, p := range []int{2, 4, 8} {
		t.Run(fmt.Sprint("p=", p), func(t *testing.T) {
			got, err := checkpoint.AssignStates(cp, []checkpoint.VertexToRestore{{ID: v, Name: "sum", Parallelism: p, MaxParallelism: 128}}, false)
			require.NoError(t, err)
			require.Len(t, got[v], p)
			var offsets []string
			for i, h := range got[v] {
				start, end := (i*128+p-1)/p, ((i+1)*128+p-1)/p-1
				require.NotNil(t, h.KeyedState, "subtask %d", i)
				assert.Equal(t, keygroup.KeyGroupRange{Start: start, End: end}, h.KeyedState.Range, "subtask %d", i)
				assert.Len(t, h.KeyedState.Groups, end-start+1)
				for kg := start; kg <= end; kg++ {
					assert.Equal(t, fmt.Sprintf("kg%d", kg), string(h.KeyedState.Groups[kg]))
				}
				var mine []string
				for _, e := range h.OperatorState["offsets"].Elements {
					mine = append(mine, string(e))
				}
				offsets = append(offsets, fmt.Sprint(mine))
			}
			want := map[int][]string{
				2: {"[s0 s1]", "[s2 s3]"},
				4: {"[s0]", "[s1]", "[s2]", "[s3]"},
				8: {"[s0]", "[s1]", "[s2]", "[s3]", "[]", "[]", "[]", "[]"},
			}[p]
			assert.Equal(t, want, offsets)
			if p == 4 {
				assert.Equal(t, int64(10), got[v][0].Size, "unchanged parallelism keeps each handle")
			}
		})
	}
}

func TestAssignStatesRefusesWhatCannotBeRestored(t *testing.T) {
	v, other := jobgraph.NewJobVertexID(), jobgraph.NewJobVertexID()
	opaque := checkpoint.CompletedCheckpoint{CheckpointID: 9, TaskStates: []checkpoint.SubtaskState{
		{JobVertexID: v, Subtask: 0, State: checkpoint.StateHandle{Data: []byte("a")}},
		{JobVertexID: v, Subtask: 1, State: checkpoint.StateHandle{Data: []byte("b")}},
	}}
	vertex := func(p, maxPar int) []checkpoint.VertexToRestore {
		return []checkpoint.VertexToRestore{{ID: v, Name: "map", Parallelism: p, MaxParallelism: maxPar}}
	}

	got, err := checkpoint.AssignStates(opaque, vertex(2, 128), false)
	require.NoError(t, err)
	assert.Equal(t, "a", string(got[v][0].Data))
	assert.Equal(t, "b", string(got[v][1].Data))

	_, err = checkpoint.AssignStates(opaque, vertex(3, 128), false)
	require.ErrorIs(t, err, checkpoint.ErrStateAssignment)
	assert.Equal(t, fmt.Sprintf("checkpoint: cannot assign the snapshot's state to the job: snapshot 9, job vertex \"map\" (%s): subtask 0 holds opaque state (Data or Files), which cannot be redistributed from parallelism 2 to 3; use OperatorState or KeyedState", v), err.Error())

	keyed := keyedSnapshot(t, v, 4, 128)
	_, err = checkpoint.AssignStates(keyed, vertex(2, 64), false)
	require.ErrorIs(t, err, checkpoint.ErrStateAssignment)
	assert.ErrorContains(t, err, "does not fit max parallelism 64")

	// State of a vertex the job does not have: refused unless allowed; empty state does not count.
	_, err = checkpoint.AssignStates(keyed, []checkpoint.VertexToRestore{{ID: other, Name: "new", Parallelism: 1, MaxParallelism: 128}}, false)
	require.ErrorIs(t, err, checkpoint.ErrStateAssignment)
	assert.ErrorContains(t, err, "which the job does not have")
	got, err = checkpoint.AssignStates(keyed, []checkpoint.VertexToRestore{{ID: other, Name: "new", Parallelism: 1, MaxParallelism: 128}}, true)
	require.NoError(t, err)
	assert.Empty(t, got)
	empty := checkpoint.CompletedCheckpoint{TaskStates: []checkpoint.SubtaskState{{JobVertexID: v}}}
	got, err = checkpoint.AssignStates(empty, nil, false)
	require.NoError(t, err)
	assert.Empty(t, got)

	// Operator coordinator state of a vertex the job does not have: refused unless allowed,
	// naming the vertex; of a vertex it has: accepted, and not in the result.
	coordinated := checkpoint.CompletedCheckpoint{CheckpointID: 4, CoordinatorStates: []checkpoint.CoordinatorState{{JobVertexID: other, State: []byte("splits")}}}
	_, err = checkpoint.AssignStates(coordinated, vertex(2, 128), false)
	require.ErrorIs(t, err, checkpoint.ErrStateAssignment)
	assert.Equal(t, fmt.Sprintf("checkpoint: cannot assign the snapshot's state to the job: snapshot 4 has operator coordinator state of job vertex %s, which the job does not have: state is matched to vertices by JobVertexID; execution.savepoint.ignore-unclaimed-state drops such state instead", other), err.Error())
	got, err = checkpoint.AssignStates(coordinated, vertex(2, 128), true)
	require.NoError(t, err)
	assert.Empty(t, got)
	got, err = checkpoint.AssignStates(coordinated, []checkpoint.VertexToRestore{{ID: other, Name: "source", Parallelism: 1, MaxParallelism: 128}}, false)
	require.NoError(t, err)
	assert.Empty(t, got)
}

// The in-memory factory keeps each job's store and counter for the next JobMaster, and replaces
// them once they were shut down.
func TestStandaloneCheckpointRecoveryFactoryKeepsEachJobsStoreAndCounter(t *testing.T) {
	f := checkpoint.NewStandaloneCheckpointRecoveryFactory()
	job, other := jobgraph.NewJobID(), jobgraph.NewJobID()
	s1, err := f.CreateRecoveredCompletedCheckpointStore(job, 2)
	require.NoError(t, err)
	c1, err := f.CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	_, err = s1.Add(checkpoint.CompletedCheckpoint{JobID: job, CheckpointID: 1})
	require.NoError(t, err)
	id, err := c1.GetAndIncrement()
	require.NoError(t, err)
	require.Equal(t, checkpoint.CheckpointID(1), id)

	s2, err := f.CreateRecoveredCompletedCheckpointStore(job, 2)
	require.NoError(t, err)
	assert.Same(t, s1, s2)
	c2, err := f.CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	next, err := c2.Get()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(2), next)
	so, err := f.CreateRecoveredCompletedCheckpointStore(other, 1)
	require.NoError(t, err)
	assert.Empty(t, so.All())

	require.NoError(t, s1.Shutdown(true))
	require.NoError(t, c1.Shutdown(true))
	s3, err := f.CreateRecoveredCompletedCheckpointStore(job, 2)
	require.NoError(t, err)
	assert.NotSame(t, s1, s3)
	assert.Empty(t, s3.All())
	c3, err := f.CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	next, err = c3.Get()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(1), next)

	_, err = f.CreateRecoveredCompletedCheckpointStore(jobgraph.NewJobID(), -1)
	require.ErrorIs(t, err, checkpoint.ErrInvalidConfig)
}

// A JobMaster that loses leadership shuts its store and counter down without discard; the next
// JobMaster of the job in the process recovers the same checkpoints (with the first store's
// retention) and goes on counting, while the old store stays refused. Only a discard, the
// global cleanup's, starts the job over.
func TestStandaloneCheckpointRecoveryFactoryKeepsCheckpointsAfterShutdownWithoutDiscard(t *testing.T) {
	f := checkpoint.NewStandaloneCheckpointRecoveryFactory()
	job := jobgraph.NewJobID()
	s1, err := f.CreateRecoveredCompletedCheckpointStore(job, 2)
	require.NoError(t, err)
	c1, err := f.CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	for id := checkpoint.CheckpointID(1); id <= 3; id++ {
		got, err := c1.GetAndIncrement()
		require.NoError(t, err)
		require.Equal(t, id, got)
		_, err = s1.Add(checkpoint.CompletedCheckpoint{JobID: job, CheckpointID: id})
		require.NoError(t, err)
	}
	require.NoError(t, s1.Shutdown(false))
	require.NoError(t, c1.Shutdown(false))

	s2, err := f.CreateRecoveredCompletedCheckpointStore(job, 5)
	require.NoError(t, err)
	assert.Equal(t, []checkpoint.CompletedCheckpoint{{JobID: job, CheckpointID: 2}, {JobID: job, CheckpointID: 3}}, s2.All())
	assert.Equal(t, 2, s2.MaxRetained(), "the retention the job's store was created with")
	c2, err := f.CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	next, err := c2.GetAndIncrement()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(4), next)
	sub, err := s2.Add(checkpoint.CompletedCheckpoint{JobID: job, CheckpointID: 4})
	require.NoError(t, err)
	assert.Equal(t, []checkpoint.CompletedCheckpoint{{JobID: job, CheckpointID: 2}}, sub)
	_, err = s1.Add(checkpoint.CompletedCheckpoint{JobID: job, CheckpointID: 5})
	require.ErrorIs(t, err, checkpoint.ErrShutdown, "the old store stays shut down")
	_, err = c1.GetAndIncrement()
	require.ErrorIs(t, err, checkpoint.ErrShutdown, "the old counter stays shut down")
	assert.Equal(t, []checkpoint.CompletedCheckpoint{{JobID: job, CheckpointID: 3}, {JobID: job, CheckpointID: 4}}, s2.All(), "the old store's refused Add changes nothing")

	same, err := f.CreateRecoveredCompletedCheckpointStore(job, 5)
	require.NoError(t, err)
	assert.Same(t, s2, same, "a running store is handed out again")

	require.NoError(t, s2.Shutdown(true))
	require.NoError(t, c2.Shutdown(true))
	s3, err := f.CreateRecoveredCompletedCheckpointStore(job, 5)
	require.NoError(t, err)
	assert.Empty(t, s3.All())
	assert.Equal(t, 5, s3.MaxRetained())
	c3, err := f.CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	next, err = c3.Get()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.InitialCheckpointID, next)
}

// A job whose store and counter were both discarded (its global cleanup) is forgotten: the
// factory holds nothing of it, so a long-running process does not grow per finished job.
// Discarding a store or counter that was already handed over changes nothing; shutting down
// without discard forgets nothing; a refused Create keeps nothing either.
func TestStandaloneCheckpointRecoveryFactoryForgetsADiscardedJob(t *testing.T) {
	f := checkpoint.NewStandaloneCheckpointRecoveryFactory()
	job, other := jobgraph.NewJobID(), jobgraph.NewJobID()
	if bytes.Compare(job[:], other[:]) > 0 {
		job, other = other, job
	}
	assert.Empty(t, f.Jobs())
	s1, err := f.CreateRecoveredCompletedCheckpointStore(job, 2)
	require.NoError(t, err)
	c1, err := f.CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	_, err = s1.Add(checkpoint.CompletedCheckpoint{JobID: job, CheckpointID: 1})
	require.NoError(t, err)
	_, err = f.CreateCheckpointIDCounter(other)
	require.NoError(t, err)
	assert.Equal(t, []jobgraph.JobID{job, other}, f.Jobs(), "ascending")

	require.NoError(t, s1.Shutdown(false))
	require.NoError(t, c1.Shutdown(false))
	assert.Equal(t, []jobgraph.JobID{job, other}, f.Jobs(), "kept for the next JobMaster and the cleanup")
	s2, err := f.CreateRecoveredCompletedCheckpointStore(job, 2)
	require.NoError(t, err)
	c2, err := f.CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	require.NoError(t, s1.Shutdown(true))
	require.NoError(t, c1.Shutdown(true))
	assert.Len(t, s2.All(), 1, "discarding the handed-over store changes nothing")
	assert.Equal(t, []jobgraph.JobID{job, other}, f.Jobs())

	require.NoError(t, s2.Shutdown(true))
	assert.Equal(t, []jobgraph.JobID{job, other}, f.Jobs(), "the counter is still held")
	require.NoError(t, c2.Shutdown(true))
	assert.Equal(t, []jobgraph.JobID{other}, f.Jobs(), "nothing of the discarded job is kept")

	_, err = f.CreateRecoveredCompletedCheckpointStore(job, -1)
	require.ErrorIs(t, err, checkpoint.ErrInvalidConfig)
	assert.Equal(t, []jobgraph.JobID{other}, f.Jobs(), "a refused Create keeps nothing")
	s3, err := f.CreateRecoveredCompletedCheckpointStore(job, 2)
	require.NoError(t, err)
	assert.Empty(t, s3.All(), "after the discard, a fresh store")
	require.NoError(t, s3.Shutdown(true))
	assert.Equal(t, []jobgraph.JobID{other}, f.Jobs())
}

func TestFileCheckpointRecoveryFactoryRecoversFromItsDirectory(t *testing.T) {
	dir := t.TempDir()
	f := checkpoint.FileCheckpointRecoveryFactory{Dir: dir}
	job := jobgraph.NewJobID()
	s, err := f.CreateRecoveredCompletedCheckpointStore(job, 1)
	require.NoError(t, err)
	_, err = s.Add(checkpoint.CompletedCheckpoint{JobID: job, CheckpointID: 4})
	require.NoError(t, err)
	c, err := f.CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	require.NoError(t, c.SetCount(5))
	assert.False(t, checkpoint.DoesNoIO(s, c))

	again, err := checkpoint.FileCheckpointRecoveryFactory{Dir: dir}.CreateRecoveredCompletedCheckpointStore(job, 1)
	require.NoError(t, err)
	latest, ok := again.Latest()
	require.True(t, ok)
	assert.Equal(t, checkpoint.CheckpointID(4), latest.CheckpointID)
	c2, err := f.CreateCheckpointIDCounter(job)
	require.NoError(t, err)
	next, err := c2.Get()
	require.NoError(t, err)
	assert.Equal(t, checkpoint.CheckpointID(5), next)

	_, err = checkpoint.FileCheckpointRecoveryFactory{}.CreateCheckpointIDCounter(job)
	require.ErrorIs(t, err, checkpoint.ErrInvalidConfig)
}
