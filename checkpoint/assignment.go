package checkpoint

import (
	"errors"
	"fmt"
	"slices"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

// ErrStateAssignment is matched (errors.Is) by AssignStates' errors: the snapshot's state cannot
// be given to the job as it is now; the message names the vertex and the reason.
var ErrStateAssignment = errors.New("checkpoint: cannot assign the snapshot's state to the job")

func init() {
	jobgraph.RegisterErrorCode("checkpoint.state-assignment", ErrStateAssignment)
}

// VertexToRestore is one job vertex of the job being restored, as AssignStates needs it.
type VertexToRestore struct {
	ID   jobgraph.JobVertexID
	Name string
	// Parallelism is the vertex's parallelism now (≥ 1).
	Parallelism int
	// MaxParallelism is the vertex's effective max parallelism (its number of key groups:
	// jobgraph.JobVertex.EffectiveMaxParallelism).
	MaxParallelism int
}

// AssignStates gives every subtask of vertices its share of snapshot cp: the result holds, per
// vertex that has state in cp, one StateHandle per subtask of its current parallelism (index =
// subtask; a zero handle for a subtask that gets nothing). Vertices without state in cp have no
// entry. Flink: StateAssignmentOperation.assignStates.
//
// A vertex's parallelism in the snapshot is one more than the highest subtask index it holds
// state for. Per vertex:
//
//   - same parallelism: every subtask keeps exactly its own handle (operator list state in UNION
//     mode still goes whole to every subtask, as keygroup.RepartitionOperatorState does);
//   - another parallelism: KeyedState is redistributed by key group with the vertex's
//     MaxParallelism (keygroup.RedistributeKeyGroups: subtask i gets the groups of
//     KeyGroupRange i); OperatorState is repartitioned round robin
//     (keygroup.RepartitionOperatorState); a redistributed handle's Size is 0 (unknown);
//     opaque Data or Files cannot be split and fail the assignment.
//
// Errors, each matching ErrStateAssignment and naming the vertex: opaque Data or Files of a
// vertex restored at another parallelism; keyed state whose key groups do not fit the vertex's
// MaxParallelism (the max parallelism changed, which Flink refuses too) or overlap; a subtask
// index in cp outside [0, MaxParallelism); state for a vertex the job does not have, unless
// allowNonRestored (execution.savepoint.ignore-unclaimed-state) — a vertex whose handles are all
// empty does not count —, and likewise operator coordinator state (cp.CoordinatorStates) of a
// vertex the job does not have. Coordinator state is not part of the result: the scheduler
// hands it to the coordinators. cp is not modified; the result shares cp's byte slices.
func AssignStates(cp CompletedCheckpoint, vertices []VertexToRestore, allowNonRestored bool) (map[jobgraph.JobVertexID][]StateHandle, error) {
	byVertex := map[jobgraph.JobVertexID][]SubtaskState{}
	var order []jobgraph.JobVertexID
	for _, s := range cp.TaskStates {
		if _, seen := byVertex[s.JobVertexID]; !seen {
			order = append(order, s.JobVertexID)
		}
		byVertex[s.JobVertexID] = append(byVertex[s.JobVertexID], s)
	}
	known := make(map[jobgraph.JobVertexID]bool, len(vertices))
	out := map[jobgraph.JobVertexID][]StateHandle{}
	for _, v := range vertices {
		known[v.ID] = true
		states, ok := byVertex[v.ID]
		if !ok {
			continue
		}
		assigned, err := assignVertex(cp.CheckpointID, v, states)
		if err != nil {
			return nil, err
		}
		if assigned != nil {
			out[v.ID] = assigned
		}
	}
	if !allowNonRestored {
		for _, id := range order {
			if known[id] {
				continue
			}
			for _, s := range byVertex[id] {
				if !s.State.IsEmpty() {
					return nil, fmt.Errorf("%w: snapshot %d has state of job vertex %s, which the job does not have: state is matched to vertices by JobVertexID, so a job restored from a snapshot must give its vertices the IDs they had (set JobVertex.ID before Connect); execution.savepoint.ignore-unclaimed-state drops such state instead, and the vertices without state then start empty",
						ErrStateAssignment, cp.CheckpointID, id)
				}
			}
		}
		for _, cs := range cp.CoordinatorStates {
			if !known[cs.JobVertexID] {
				return nil, fmt.Errorf("%w: snapshot %d has operator coordinator state of job vertex %s, which the job does not have: state is matched to vertices by JobVertexID; execution.savepoint.ignore-unclaimed-state drops such state instead",
					ErrStateAssignment, cp.CheckpointID, cs.JobVertexID)
			}
		}
	}
	return out, nil
}

func assignVertex(id CheckpointID, v VertexToRestore, states []SubtaskState) ([]StateHandle, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: snapshot %d, job vertex %q (%s): %s", ErrStateAssignment, id, jobgraph.Truncate(v.Name), v.ID, fmt.Sprintf(format, args...))
	}
	if v.Parallelism < 1 {
		return nil, fail("parallelism %d is not positive", v.Parallelism)
	}
	oldPar, empty := 0, true
	for _, s := range states {
		if s.Subtask < 0 || (v.MaxParallelism > 0 && s.Subtask >= v.MaxParallelism) {
			return nil, fail("state of subtask %d outside the max parallelism %d", s.Subtask, v.MaxParallelism)
		}
		oldPar = max(oldPar, s.Subtask+1)
		empty = empty && s.State.IsEmpty()
	}
	if empty {
		return nil, nil
	}
	old := make([]StateHandle, oldPar)
	for _, s := range states {
		old[s.Subtask] = s.State
	}
	if oldPar == v.Parallelism {
		return sameParallelism(old, fail)
	}
	out := make([]StateHandle, v.Parallelism)
	var keyed []keygroup.KeyGroupsState[[]byte]
	var ops []keygroup.OperatorState[[]byte]
	// Every old subtask takes part in the key-group redistribution, an empty range standing for
	// one without keyed state, so that RedistributeKeyGroups sees the old parallelism.
	allKeyed := make([]keygroup.KeyGroupsState[[]byte], len(old))
	for i, h := range old {
		if len(h.Data) > 0 || len(h.Files) > 0 {
			return nil, fail("subtask %d holds opaque state (Data or Files), which cannot be redistributed from parallelism %d to %d; use OperatorState or KeyedState",
				i, oldPar, v.Parallelism)
		}
		allKeyed[i] = keygroup.KeyGroupsState[[]byte]{Range: keygroup.EmptyKeyGroupRange}
		if h.KeyedState != nil {
			keyed = append(keyed, *h.KeyedState)
			allKeyed[i] = *h.KeyedState
		}
		if len(h.OperatorState) > 0 {
			ops = append(ops, h.OperatorState)
		}
	}
	if len(keyed) > 0 {
		if v.MaxParallelism < v.Parallelism || v.MaxParallelism > keygroup.UpperBoundMaxParallelism {
			return nil, fail("max parallelism %d does not fit parallelism %d", v.MaxParallelism, v.Parallelism)
		}
		for _, k := range keyed {
			if !k.Range.IsEmpty() && (k.Range.Start < 0 || k.Range.End >= v.MaxParallelism) {
				return nil, fail("keyed state of key groups %s does not fit max parallelism %d (the max parallelism changed?)", k.Range, v.MaxParallelism)
			}
		}
		// Ranges of old subtasks must not overlap (RedistributeKeyGroups checks the groups).
		sorted := slices.Clone(keyed)
		slices.SortFunc(sorted, func(a, b keygroup.KeyGroupsState[[]byte]) int { return a.Range.Start - b.Range.Start })
		for i := 1; i < len(sorted); i++ {
			if !sorted[i-1].Range.Intersection(sorted[i].Range).IsEmpty() {
				return nil, fail("keyed states of key groups %s and %s overlap", sorted[i-1].Range, sorted[i].Range)
			}
		}
		re, err := keygroup.RedistributeKeyGroups(allKeyed, v.MaxParallelism, v.Parallelism)
		if err != nil {
			return nil, fail("%v", err)
		}
		for i := range out {
			if len(re[i].Groups) > 0 {
				k := re[i]
				out[i].KeyedState = &k
			}
		}
	}
	if len(ops) > 0 {
		// Every old subtask takes part, also those without operator state, so that the
		// repartitioning is that of the old parallelism.
		all := make([]keygroup.OperatorState[[]byte], len(old))
		for i, h := range old {
			all[i] = h.OperatorState
		}
		re, err := keygroup.RepartitionOperatorState(all, v.Parallelism)
		if err != nil {
			return nil, fail("%v", err)
		}
		for i := range out {
			if len(re[i]) > 0 {
				out[i].OperatorState = re[i]
			}
		}
	}
	return out, nil
}

// sameParallelism keeps every subtask's handle, applying only the UNION redistribution of
// operator list state.
func sameParallelism(old []StateHandle, fail func(string, ...any) error) ([]StateHandle, error) {
	out := slices.Clone(old)
	union := false
	for _, h := range old {
		for _, l := range h.OperatorState {
			union = union || l.Mode == keygroup.Union
		}
	}
	if !union {
		return out, nil
	}
	all := make([]keygroup.OperatorState[[]byte], len(old))
	for i, h := range old {
		all[i] = h.OperatorState
	}
	re, err := keygroup.RepartitionOperatorState(all, len(old))
	if err != nil {
		return nil, fail("%v", err)
	}
	for i := range out {
		out[i].OperatorState = re[i]
	}
	return out, nil
}
