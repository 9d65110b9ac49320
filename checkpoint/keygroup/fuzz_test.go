package keygroup_test

import (
	"testing"

	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

// For any valid (max, p): the ranges of subtasks 0..p−1 are contiguous and cover [0, max), so
// every key group belongs to exactly one subtask, and ComputeOperatorIndexForKeyGroup names that
// subtask.
func FuzzKeyGroupRanges(f *testing.F) {
	f.Add(uint16(128), uint16(3))
	f.Add(uint16(128), uint16(5))
	f.Add(uint16(32767), uint16(7))
	f.Add(uint16(10), uint16(10))
	f.Add(uint16(1), uint16(1))
	f.Add(uint16(65535), uint16(65535))
	f.Fuzz(func(t *testing.T, m, q uint16) {
		maxP := int(m)%keygroup.UpperBoundMaxParallelism + 1 // [1, 32768]
		p := int(q)%maxP + 1                                 // [1, maxP]
		ranges, err := keygroup.KeyGroupPartitions(maxP, p)
		if err != nil {
			t.Fatalf("max %d p %d: %v", maxP, p, err)
		}
		next := 0
		for i, r := range ranges {
			if r.Start != next {
				t.Fatalf("max %d p %d: subtask %d starts at %d, want %d", maxP, p, i, r.Start, next)
			}
			if n := r.NumberOfKeyGroups(); n != maxP/p && n != maxP/p+1 {
				t.Fatalf("max %d p %d: subtask %d has %d key groups", maxP, p, i, n)
			}
			for kg := range r.All() {
				if got := keygroup.ComputeOperatorIndexForKeyGroup(maxP, p, kg); got != i {
					t.Fatalf("max %d p %d: key group %d is in subtask %d's range %v but maps to %d", maxP, p, kg, i, r, got)
				}
			}
			next = r.End + 1
		}
		if next != maxP {
			t.Fatalf("max %d p %d: ranges end at %d", maxP, p, next-1)
		}
	})
}
