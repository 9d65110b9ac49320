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
// A job has one profile or a few (every slot of a job without fine-grained resources is UNKNOWN),
// and hashing a ResourceProfile as a map key costs more than comparing it with a few: the lines
// are a short list, with an index by profile only once there are more than smallCounter.
type counter struct {
	lines []counterLine
	index map[profile]int // position in lines, while len(lines) > smallCounter
}

type counterLine struct {
	profile profile
	n       int
}

const smallCounter = 8

func (c *counter) find(p profile) int {
	if c.index != nil {
		if i, ok := c.index[p]; ok {
			return i
		}
		return -1
	}
	for i := range c.lines {
		if c.lines[i].profile == p {
			return i
		}
	}
	return -1
}

// get is the count of p (0 when it has none).
func (c *counter) get(p profile) int {
	if i := c.find(p); i >= 0 {
		return c.lines[i].n
	}
	return 0
}

// len is the number of profiles with a positive count.
func (c *counter) len() int { return len(c.lines) }

func (c *counter) add(p profile, n int) {
	i := c.find(p)
	if i < 0 {
		if n <= 0 {
			return
		}
		c.lines = append(c.lines, counterLine{p, n})
		switch {
		case c.index != nil:
			c.index[p] = len(c.lines) - 1
		case len(c.lines) > smallCounter:
			c.index = make(map[profile]int, len(c.lines))
			for j, l := range c.lines {
				c.index[l.profile] = j
			}
		}
		return
	}
	if v := c.lines[i].n + n; v > 0 {
		c.lines[i].n = v
		return
	}
	// Remove line i: the last line takes its place.
	last := len(c.lines) - 1
	if c.index != nil {
		delete(c.index, p)
		if i != last {
			c.index[c.lines[last].profile] = i
		}
	}
	c.lines[i] = c.lines[last]
	c.lines[last] = counterLine{}
	c.lines = c.lines[:last]
	if c.index != nil && len(c.lines) <= smallCounter/2 {
		c.index = nil
	}
}

// sortedKeys returns the profiles with a positive count in compareProfiles order.
func (c *counter) sortedKeys() []profile {
	keys := make([]profile, 0, len(c.lines))
	for _, l := range c.lines {
		keys = append(keys, l.profile)
	}
	slices.SortFunc(keys, compareProfiles)
	return keys
}

func (c *counter) requirements() []rpc.ResourceRequirement {
	return c.appendRequirements(make([]rpc.ResourceRequirement, 0, len(c.lines)))
}

// appendRequirements appends one line per profile, sorted by profile, to out.
func (c *counter) appendRequirements(out []rpc.ResourceRequirement) []rpc.ResourceRequirement {
	start := len(out)
	for _, l := range c.lines {
		out = append(out, rpc.ResourceRequirement{Profile: l.profile, Count: l.n})
	}
	slices.SortFunc(out[start:], func(a, b rpc.ResourceRequirement) int { return compareProfiles(a.Profile, b.Profile) })
	return out
}

// equal reports whether reqs (one line per profile, no zero counts) are exactly c's lines.
func (c *counter) equal(reqs []rpc.ResourceRequirement) bool {
	if len(reqs) != len(c.lines) {
		return false
	}
	for _, r := range reqs {
		if c.get(r.Profile) != r.Count {
			return false
		}
	}
	return true
}
