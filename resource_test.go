package jobgraph_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jobgraph/jobgraph"
)

func TestResourceProfileIsMatching(t *testing.T) {
	unknown := jobgraph.UnknownResourceProfile
	p1 := jobgraph.ResourceProfile{CPUCores: 1.7}
	p2 := jobgraph.ResourceProfile{ManagedMemory: 100 * jobgraph.MiB}
	big := jobgraph.ResourceProfile{CPUCores: 2, TaskHeapMemory: 1 * jobgraph.GiB, TaskOffHeapMemory: 128 * jobgraph.MiB,
		ManagedMemory: 200 * jobgraph.MiB, NetworkMemory: 64 * jobgraph.MiB}

	assert.True(t, unknown.IsUnknown())
	assert.Equal(t, jobgraph.ResourceProfile{}, unknown)
	assert.False(t, p1.IsUnknown())

	for _, tc := range []struct {
		name           string
		slot, required jobgraph.ResourceProfile
		want           bool
	}{
		{"UNKNOWN required, UNKNOWN slot", unknown, unknown, true},
		{"UNKNOWN required, P1 slot", p1, unknown, true},
		{"UNKNOWN required, big slot", big, unknown, true},
		{"P1 slot, P2 required", p1, p2, false},
		{"P2 slot, P1 required", p2, p1, false},
		{"P1 slot, P1 required", p1, p1, true},
		{"big slot, P1 required", big, p1, true},
		{"big slot, P2 required", big, p2, true},
		{"big slot, P1+P2 required", big, p1.Merge(p2), true},
		{"P1+P2 slot, big required", p1.Merge(p2), big, false},
		{"UNKNOWN slot, P1 required", unknown, p1, false},
		{"slot short of one byte of network memory", jobgraph.ResourceProfile{NetworkMemory: jobgraph.MiB - 1},
			jobgraph.ResourceProfile{NetworkMemory: jobgraph.MiB}, false},
		{"slot short on task heap", jobgraph.ResourceProfile{CPUCores: 4, TaskHeapMemory: 1},
			jobgraph.ResourceProfile{CPUCores: 1, TaskHeapMemory: 2}, false},
		{"slot short on task off-heap", jobgraph.ResourceProfile{CPUCores: 4},
			jobgraph.ResourceProfile{TaskOffHeapMemory: 1}, false},
	} {
		assert.Equal(t, tc.want, tc.slot.IsMatching(tc.required), tc.name)
	}
}

func TestResourceProfileMerge(t *testing.T) {
	a := jobgraph.ResourceProfile{CPUCores: 1.5, TaskHeapMemory: 512 * jobgraph.MiB, ManagedMemory: 100 * jobgraph.MiB}
	b := jobgraph.ResourceProfile{CPUCores: 0.25, TaskHeapMemory: 512 * jobgraph.MiB, TaskOffHeapMemory: 10 * jobgraph.KiB, NetworkMemory: 7}
	want := jobgraph.ResourceProfile{CPUCores: 1.75, TaskHeapMemory: 1 * jobgraph.GiB, TaskOffHeapMemory: 10 * jobgraph.KiB,
		ManagedMemory: 100 * jobgraph.MiB, NetworkMemory: 7}
	assert.Equal(t, want, a.Merge(b))
	assert.Equal(t, want, b.Merge(a))
	assert.Equal(t, a, a.Merge(jobgraph.UnknownResourceProfile))
	assert.True(t, jobgraph.UnknownResourceProfile.Merge(jobgraph.UnknownResourceProfile).IsUnknown())
	// Merge does not change its operands.
	assert.Equal(t, 1.5, a.CPUCores)

	// ResourceProfile is comparable: it can key a map.
	m := map[jobgraph.ResourceProfile]int{a: 1}
	m[jobgraph.ResourceProfile{CPUCores: 1.5, TaskHeapMemory: 512 * jobgraph.MiB, ManagedMemory: 100 * jobgraph.MiB}]++
	assert.Equal(t, 2, m[a])
}

func TestResourceProfileString(t *testing.T) {
	assert.Equal(t, int64(1024), jobgraph.KiB)
	assert.Equal(t, int64(1024*1024), jobgraph.MiB)
	assert.Equal(t, int64(1024*1024*1024), jobgraph.GiB)
	for _, tc := range []struct {
		p    jobgraph.ResourceProfile
		want string
	}{
		{jobgraph.ResourceProfile{}, "UNKNOWN"},
		{jobgraph.ResourceProfile{CPUCores: 1.7}, "{cpu=1.7}"},
		{jobgraph.ResourceProfile{CPUCores: 1.7, ManagedMemory: 100 * jobgraph.MiB}, "{cpu=1.7, managed=100MiB}"},
		{jobgraph.ResourceProfile{CPUCores: 2, TaskHeapMemory: 1 * jobgraph.GiB, TaskOffHeapMemory: 3 * jobgraph.KiB,
			ManagedMemory: 1536, NetworkMemory: 1000}, "{cpu=2, taskHeap=1GiB, taskOffHeap=3KiB, managed=1536B, network=1000B}"},
		{jobgraph.ResourceProfile{TaskHeapMemory: 1536 * jobgraph.MiB}, "{taskHeap=1536MiB}"},
		{jobgraph.ResourceProfile{NetworkMemory: 64 * jobgraph.MiB}, "{network=64MiB}"},
		{jobgraph.ResourceProfile{CPUCores: 0.125}, "{cpu=0.125}"},
	} {
		assert.Equal(t, tc.want, tc.p.String())
	}
}

func TestResourceProfileJSON(t *testing.T) {
	p := jobgraph.ResourceProfile{CPUCores: 1.7, ManagedMemory: 100 * jobgraph.MiB}
	data, err := json.Marshal(p)
	require.NoError(t, err)
	assert.Equal(t, `{"cpuCores":1.7,"managedMemory":104857600}`, string(data))
	var back jobgraph.ResourceProfile
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, p, back)
}
