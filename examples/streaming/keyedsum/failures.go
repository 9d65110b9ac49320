package keyedsum

import (
	"fmt"
	"math/rand/v2"

	"github.com/jobgraph/jobgraph/checkpoint/keygroup"
)

// PlanFailures draws n task failures for the job of opts from seed: failure k strikes in
// execution attempt k (every edge is pipelined, so each failure restarts every task and the
// attempt numbers move together), in a vertex and subtask drawn among those that handle records,
// after a record count drawn from [1, max(1, share/(4(n+1)))], where share is how many of the
// records 1..N that task handles on a fresh start. Small counts make each attempt fail early, so
// the job is not done before its last failure. The same opts and seed give the same plan.
// Errors: n < 0, or opts that BuildJob refuses.
func PlanFailures(opts JobOptions, n int, seed uint64) ([]Failure, error) {
	if n < 0 {
		return nil, fmt.Errorf("keyedsum: %d failures", n)
	}
	opts.Failures = nil
	if err := opts.check(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	p := opts.Parallelism
	shares := map[string][]int64{SourceVertex: make([]int64, p), SumVertex: make([]int64, p)}
	for j := range opts.Splits {
		shares[SourceVertex][j%p] += countCongruent(opts.Records, int64(opts.Splits), FirstOfSplit(j, opts.Splits))
	}
	for k := int64(0); k < min(opts.Keys, opts.Records+1); k++ {
		first := k
		if k == 0 {
			first = opts.Keys
		}
		s := keygroup.AssignKeyToParallelOperator(keygroup.HashInt64(k), opts.MaxParallelism, p)
		shares[SumVertex][s] += countCongruent(opts.Records, opts.Keys, first)
	}
	shares[SinkVertex] = shares[SumVertex]
	type task struct {
		vertex  string
		subtask int
		share   int64
	}
	var tasks []task
	for _, v := range []string{SourceVertex, SumVertex, SinkVertex} {
		for s, share := range shares[v] {
			if share > 0 {
				tasks = append(tasks, task{v, s, share})
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]Failure, n)
	for k := range out {
		t := tasks[rng.IntN(len(tasks))]
		most := max(1, t.share/int64(4*(n+1)))
		out[k] = Failure{Vertex: t.vertex, Subtask: t.subtask, Attempt: k, AfterRecords: 1 + rng.Int64N(most)}
	}
	return out, nil
}

// countCongruent is how many i in [first, records] are first plus a multiple of step.
func countCongruent(records, step, first int64) int64 {
	if first > records {
		return 0
	}
	return (records-first)/step + 1
}
