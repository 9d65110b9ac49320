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
	if len(reqs) == 1 {
		// One line (a job whose slots share one profile, the common case, checked on every slot
		// occupied): the maximum assignment is every matching slot, up to the line's count. No
		// flow network to build.
		n := 0
		for p, k := range acquired {
			if k > 0 && p.IsMatching(reqs[0].Profile) {
				n += k
			}
		}
		out[0] = min(n, reqs[0].Count)
		return out
	}
	a := newAssignment(reqs, acquired)
	a.matchExactly()
	for a.augment() { // each call counts at least one more slot; it ends when none can be
	}
	for j, r := range reqs {
		out[j] = r.Count - a.demand[j]
	}
	return out
}

// assignment is the flow network of fulfilled: left nodes are the acquired slot profiles (in
// compareProfiles order) with their unassigned supply, right nodes the requirement lines with
// their unmet demand; flow[i][j] slots of profile i are counted for line j, which they match
// (match[i][j]: IsMatching).
type assignment struct {
	profiles       []jobgraph.ResourceProfile
	reqs           []rpc.ResourceRequirement
	supply, demand []int
	flow           [][]int
	match          [][]bool
}

func newAssignment(reqs []rpc.ResourceRequirement, acquired map[jobgraph.ResourceProfile]int) *assignment {
	profiles := make([]jobgraph.ResourceProfile, 0, len(acquired))
	for p, n := range acquired {
		if n > 0 {
			profiles = append(profiles, p)
		}
	}
	slices.SortFunc(profiles, compareProfiles)
	a := &assignment{
		profiles: profiles,
		reqs:     reqs,
		supply:   make([]int, len(profiles)),
		demand:   make([]int, len(reqs)),
		flow:     make([][]int, len(profiles)),
		match:    make([][]bool, len(profiles)),
	}
	for j, r := range reqs {
		a.demand[j] = r.Count
	}
	for i, p := range profiles {
		a.supply[i] = acquired[p]
		a.flow[i] = make([]int, len(reqs))
		a.match[i] = make([]bool, len(reqs))
		for j, r := range reqs {
			a.match[i][j] = p.IsMatching(r.Profile)
		}
	}
	return a
}

// matchExactly first counts slots for the lines of exactly their profile.
func (a *assignment) matchExactly() {
	for i, p := range a.profiles {
		for j, r := range a.reqs {
			if p == r.Profile {
				n := min(a.supply[i], a.demand[j])
				a.flow[i][j] += n
				a.supply[i] -= n
				a.demand[j] -= n
			}
		}
	}
}

// augment finds one shortest augmenting path source → left → right (→ left → right …) → sink
// and pushes its bottleneck along it. It reports false when there is none: the assignment is
// maximal.
func (a *assignment) augment() bool {
	path, sink := a.shortestPath()
	if sink < 0 {
		return false
	}
	amount := a.bottleneck(path, sink)
	a.demand[sink] -= amount
	for j := sink; ; {
		i := path.fromLeft[j]
		a.flow[i][j] += amount
		if path.fromRight[i] == source {
			a.supply[i] -= amount
			return true
		}
		j = path.fromRight[i]
		a.flow[i][j] -= amount
	}
}

// Markers in augmentingPath: a left node reached from the source, a node not reached.
const (
	source    = -1
	unreached = -2
)

// augmentingPath is a breadth-first search tree: fromLeft[j] is the left node right node j was
// reached from; fromRight[i] the right node left node i was reached from (over flow counted
// for it), or source.
type augmentingPath struct {
	fromLeft, fromRight []int
}

// shortestPath searches breadth-first from every left node with supply left, over matching
// edges to right nodes and back over edges carrying flow, until it reaches a right node with
// demand left (the sink, returned) or runs out of nodes (sink -1).
func (a *assignment) shortestPath() (augmentingPath, int) {
	p := augmentingPath{fromLeft: make([]int, len(a.demand)), fromRight: make([]int, len(a.supply))}
	for j := range p.fromLeft {
		p.fromLeft[j] = unreached
	}
	queue := make([]int, 0, len(a.supply))
	for i := range p.fromRight {
		p.fromRight[i] = unreached
		if a.supply[i] > 0 {
			p.fromRight[i] = source
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for j := range a.demand {
			if !a.match[i][j] || p.fromLeft[j] != unreached {
				continue
			}
			p.fromLeft[j] = i
			if a.demand[j] > 0 {
				return p, j
			}
			for k := range a.supply {
				if a.flow[k][j] > 0 && p.fromRight[k] == unreached {
					p.fromRight[k] = j
					queue = append(queue, k)
				}
			}
		}
	}
	return p, -1
}

// bottleneck is the most that can be pushed along the path ending at sink: the sink's demand,
// the flow of every edge walked backwards, the supply of the path's first left node.
func (a *assignment) bottleneck(p augmentingPath, sink int) int {
	amount := a.demand[sink]
	for j := sink; ; {
		i := p.fromLeft[j]
		if p.fromRight[i] == source {
			return min(amount, a.supply[i])
		}
		j = p.fromRight[i]
		amount = min(amount, a.flow[i][j])
	}
}
