package slotpool

import (
	"cmp"
	"math"
	"slices"

	"github.com/jobgraph/jobgraph"
	"github.com/jobgraph/jobgraph/rpc"
)

type profile = jobgraph.ResourceProfile

// checkProfile refuses what cannot be a ResourceProfile: negative, NaN or infinite CPU cores
// (NaN would also make a useless map key) and negative memory sizes.
func checkProfile(p profile) error {
	if !(p.CPUCores >= 0) || math.IsInf(p.CPUCores, 0) {
		return invalid("resource profile %v: CPU cores %v is not a finite non-negative number", p, p.CPUCores)
	}
	if p.TaskHeapMemory < 0 || p.TaskOffHeapMemory < 0 || p.ManagedMemory < 0 || p.NetworkMemory < 0 {
		return invalid("resource profile %v: negative memory size", p)
	}
	return nil
}

// compareProfiles orders profiles by CPU cores, then task heap, task off-heap, managed and network
// memory; UNKNOWN (all zero) comes first.
func compareProfiles(a, b profile) int {
	return cmp.Or(
		cmp.Compare(a.CPUCores, b.CPUCores),
		cmp.Compare(a.TaskHeapMemory, b.TaskHeapMemory),
		cmp.Compare(a.TaskOffHeapMemory, b.TaskOffHeapMemory),
		cmp.Compare(a.ManagedMemory, b.ManagedMemory),
		cmp.Compare(a.NetworkMemory, b.NetworkMemory),
	)
}

// counter counts resources per profile (Flink's ResourceCounter). Only positive counts are kept.
type counter map[profile]int

func (c counter) add(p profile, n int) {
	if v := c[p] + n; v > 0 {
		c[p] = v
	} else {
		delete(c, p)
	}
}

// sortedKeys returns the profiles with a positive count in compareProfiles order.
func (c counter) sortedKeys() []profile {
	keys := make([]profile, 0, len(c))
	for p := range c {
		keys = append(keys, p)
	}
	slices.SortFunc(keys, compareProfiles)
	return keys
}

func (c counter) requirements() []rpc.ResourceRequirement {
	return c.appendRequirements(make([]rpc.ResourceRequirement, 0, len(c)))
}

// appendRequirements appends one line per profile, sorted by profile, to out.
func (c counter) appendRequirements(out []rpc.ResourceRequirement) []rpc.ResourceRequirement {
	start := len(out)
	for p, n := range c {
		out = append(out, rpc.ResourceRequirement{Profile: p, Count: n})
	}
	slices.SortFunc(out[start:], func(a, b rpc.ResourceRequirement) int { return compareProfiles(a.Profile, b.Profile) })
	return out
}

// equal reports whether reqs (one line per profile, no zero counts) are exactly c's lines.
func (c counter) equal(reqs []rpc.ResourceRequirement) bool {
	if len(reqs) != len(c) {
		return false
	}
	for _, r := range reqs {
		if n, ok := c[r.Profile]; !ok || n != r.Count {
			return false
		}
	}
	return true
}
