package resourcemanager

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

// compareProfiles orders resource profiles the way the slot manager serves requirements: specific
// profiles first, larger before smaller (CPU, then task heap, task off-heap, managed and network
// memory), and UNKNOWN last. Serving the most demanding requirements first keeps the big slots
// for those that cannot use anything else; UNKNOWN can use any slot, so it goes last.
func compareProfiles(a, b jobgraph.ResourceProfile) int {
	switch au, bu := a.IsUnknown(), b.IsUnknown(); {
	case au && bu:
		return 0
	case au:
		return 1
	case bu:
		return -1
	}
	if c := cmp.Compare(b.CPUCores, a.CPUCores); c != 0 {
		return c
	}
	if c := cmp.Compare(b.TaskHeapMemory, a.TaskHeapMemory); c != 0 {
		return c
	}
	if c := cmp.Compare(b.TaskOffHeapMemory, a.TaskOffHeapMemory); c != 0 {
		return c
	}
	if c := cmp.Compare(b.ManagedMemory, a.ManagedMemory); c != 0 {
		return c
	}
	return cmp.Compare(b.NetworkMemory, a.NetworkMemory)
}

// normalizeRequirements merges lines of the same profile, drops zero counts and sorts by
// compareProfiles. A negative count is refused.
func normalizeRequirements(reqs []rpc.ResourceRequirement) ([]rpc.ResourceRequirement, error) {
	counts := make(map[jobgraph.ResourceProfile]int, len(reqs))
	for _, r := range reqs {
		if r.Count < 0 {
			return nil, fmt.Errorf("%w: count %d for %v is negative", ErrInvalidRequirements, r.Count, r.Profile)
		}
		counts[r.Profile] += r.Count
	}
	out := make([]rpc.ResourceRequirement, 0, len(counts))
	for p, n := range counts {
		if n > 0 {
			out = append(out, rpc.ResourceRequirement{Profile: p, Count: n})
		}
	}
	slices.SortFunc(out, func(a, b rpc.ResourceRequirement) int { return compareProfiles(a.Profile, b.Profile) })
	return out, nil
}

// fulfilled says how many of each requirement the acquired slots (counted by slot profile) cover.
// A slot covers a requirement when its profile IsMatching the requirement's profile, and covers one
// requirement at most. The assignment is a maximum one: exact profile matches first, then
// augmenting paths between profile classes (a small max-flow), so that a slot is never counted
// for a requirement another slot could only serve while that other slot stays unused. Flink's
// JobScopedResourceTracker assigns greedily and keeps the excess aside; recomputing a maximum
// assignment gives the same answer where greedy works and a better one where it does not.
// The result is deterministic: classes are visited in compareProfiles order.
func fulfilled(reqs []rpc.ResourceRequirement, acquired map[jobgraph.ResourceProfile]int) []int {
	out := make([]int, len(reqs))
	if len(reqs) == 0 || len(acquired) == 0 {
		return out
	}
	profiles := make([]jobgraph.ResourceProfile, 0, len(acquired))
	for p, n := range acquired {
		if n > 0 {
			profiles = append(profiles, p)
		}
	}
	slices.SortFunc(profiles, compareProfiles)
	nl, nr := len(profiles), len(reqs)
	supply := make([]int, nl)
	for i, p := range profiles {
		supply[i] = acquired[p]
	}
	demand := make([]int, nr)
	for j, r := range reqs {
		demand[j] = r.Count
	}
	flow := make([][]int, nl)
	match := make([][]bool, nl)
	for i, p := range profiles {
		flow[i] = make([]int, nr)
		match[i] = make([]bool, nr)
		for j, r := range reqs {
			match[i][j] = p.IsMatching(r.Profile)
			if p == r.Profile {
				n := min(supply[i], demand[j])
				flow[i][j] += n
				supply[i] -= n
				demand[j] -= n
			}
		}
	}
	// Augment along shortest paths source → left → right (→ left → right …) → sink until none is
	// left. Left nodes are slot profiles, right nodes requirements.
	parentOfRight := make([]int, nr) // the left node a right node was reached from
	parentOfLeft := make([]int, nl)  // the right node a left node was reached from; -1 for a source
	for {
		for j := range parentOfRight {
			parentOfRight[j] = -2
		}
		for i := range parentOfLeft {
			parentOfLeft[i] = -2
		}
		queue := make([]int, 0, nl)
		for i := range nl {
			if supply[i] > 0 {
				parentOfLeft[i] = -1
				queue = append(queue, i)
			}
		}
		sink := -1
		for len(queue) > 0 && sink < 0 {
			i := queue[0]
			queue = queue[1:]
			for j := range nr {
				if !match[i][j] || parentOfRight[j] != -2 {
					continue
				}
				parentOfRight[j] = i
				if demand[j] > 0 {
					sink = j
					break
				}
				for k := range nl {
					if flow[k][j] > 0 && parentOfLeft[k] == -2 {
						parentOfLeft[k] = j
						queue = append(queue, k)
					}
				}
			}
		}
		if sink < 0 {
			break
		}
		// Bottleneck along the path.
		amount := demand[sink]
		for j := sink; ; {
			i := parentOfRight[j]
			if parentOfLeft[i] == -1 {
				amount = min(amount, supply[i])
				break
			}
			j = parentOfLeft[i]
			amount = min(amount, flow[i][j])
		}
		demand[sink] -= amount
		for j := sink; ; {
			i := parentOfRight[j]
			flow[i][j] += amount
			if parentOfLeft[i] == -1 {
				supply[i] -= amount
				break
			}
			j = parentOfLeft[i]
			flow[i][j] -= amount
		}
	}
	for j, r := range reqs {
		out[j] = r.Count - demand[j]
	}
	return out
}
