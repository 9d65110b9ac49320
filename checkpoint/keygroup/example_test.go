package keygroup_test

import (
	"fmt"

	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

// A key's group depends only on the max parallelism; which subtask owns the group depends on the
// parallelism. Restored at 2 or at 8, the job finds the key's state at the subtask that owns its
// group.
func Example() {
	const maxParallelism = 128
	kg := keygroup.AssignToKeyGroup(keygroup.HashString("hello"), maxParallelism)
	fmt.Println("key group of \"hello\":", kg)
	for _, p := range []int{4, 2, 8} {
		sub := keygroup.ComputeOperatorIndexForKeyGroup(maxParallelism, p, kg)
		r, err := keygroup.ComputeKeyGroupRangeForOperatorIndex(maxParallelism, p, sub)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("p=%d: subtask %d owns %v\n", p, sub, r)
	}
	// Output:
	// key group of "hello": 35
	// p=4: subtask 1 owns [32, 63]
	// p=2: subtask 0 owns [0, 63]
	// p=8: subtask 2 owns [32, 47]
}
