package jobgraph

import (
	"fmt"
	"strconv"
	"strings"
)

// Memory sizes in bytes, for ResourceProfile fields.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// ResourceProfile is what one slot offers, or what one slot request needs: CPU cores and memory
// in bytes. Flink: org.apache.flink.runtime.clusterframework.types.ResourceProfile.
//
// The zero value is Flink's ResourceProfile.UNKNOWN: a request with no stated needs, which any
// slot fulfils. ResourceProfile is comparable, so it can key a map (the slot pool keys its
// requirements by profile). We differ from Flink in leaving out extended resources (GPUs): no
// part of jobgraph uses them yet.
type ResourceProfile struct {
	// CPUCores is the number of CPU cores, fractions allowed (1.7).
	CPUCores float64 `json:"cpuCores,omitempty"`
	// TaskHeapMemory, TaskOffHeapMemory, ManagedMemory and NetworkMemory are in bytes.
	TaskHeapMemory    int64 `json:"taskHeapMemory,omitempty"`
	TaskOffHeapMemory int64 `json:"taskOffHeapMemory,omitempty"`
	ManagedMemory     int64 `json:"managedMemory,omitempty"`
	NetworkMemory     int64 `json:"networkMemory,omitempty"`
}

// UnknownResourceProfile is the zero ResourceProfile: needs nothing in particular.
var UnknownResourceProfile = ResourceProfile{}

// IsUnknown reports whether p is the zero (UNKNOWN) profile.
func (p ResourceProfile) IsUnknown() bool { return p == ResourceProfile{} }

// IsMatching reports whether a slot with profile p can serve a request for required: required is
// UNKNOWN, or p has at least as much of every resource. Flink: ResourceProfile.isMatching.
func (p ResourceProfile) IsMatching(required ResourceProfile) bool {
	if required.IsUnknown() {
		return true
	}
	return p.CPUCores >= required.CPUCores &&
		p.TaskHeapMemory >= required.TaskHeapMemory &&
		p.TaskOffHeapMemory >= required.TaskOffHeapMemory &&
		p.ManagedMemory >= required.ManagedMemory &&
		p.NetworkMemory >= required.NetworkMemory
}

// Merge returns the sum of p and q, as slot sharing adds up the needs of the tasks in one slot.
func (p ResourceProfile) Merge(q ResourceProfile) ResourceProfile {
	return ResourceProfile{
		CPUCores:          p.CPUCores + q.CPUCores,
		TaskHeapMemory:    p.TaskHeapMemory + q.TaskHeapMemory,
		TaskOffHeapMemory: p.TaskOffHeapMemory + q.TaskOffHeapMemory,
		ManagedMemory:     p.ManagedMemory + q.ManagedMemory,
		NetworkMemory:     p.NetworkMemory + q.NetworkMemory,
	}
}

func (p ResourceProfile) validate() error {
	switch {
	case p.CPUCores < 0:
		return fmt.Errorf("negative CPU cores %v", p.CPUCores)
	case p.TaskHeapMemory < 0, p.TaskOffHeapMemory < 0, p.ManagedMemory < 0, p.NetworkMemory < 0:
		return fmt.Errorf("negative memory size in %v", p)
	}
	return nil
}

// String prints the non-zero resources, e.g. "{cpu=1.7, managed=100MiB}", or "UNKNOWN".
func (p ResourceProfile) String() string {
	if p.IsUnknown() {
		return "UNKNOWN"
	}
	var parts []string
	if p.CPUCores != 0 {
		parts = append(parts, "cpu="+strconv.FormatFloat(p.CPUCores, 'g', -1, 64))
	}
	for _, m := range []struct {
		name string
		v    int64
	}{{"taskHeap", p.TaskHeapMemory}, {"taskOffHeap", p.TaskOffHeapMemory}, {"managed", p.ManagedMemory}, {"network", p.NetworkMemory}} {
		if m.v != 0 {
			parts = append(parts, m.name+"="+formatBytes(m.v))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func formatBytes(n int64) string {
	switch {
	case n%GiB == 0:
		return strconv.FormatInt(n/GiB, 10) + "GiB"
	case n%MiB == 0:
		return strconv.FormatInt(n/MiB, 10) + "MiB"
	case n%KiB == 0:
		return strconv.FormatInt(n/KiB, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10) + "B"
}
