package jobgraph_test

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/jobgraph/jobgraph"
)

// The JobMaster merges what each subtask's accumulators hold, snapshot by snapshot; a host reads
// the merged value from the JobResult by name.
func ExampleMergeAccumulators() {
	// Two subtasks' snapshots, as their TaskExecutors send them.
	words0, words1 := new(jobgraph.LongCounter), new(jobgraph.LongCounter)
	words0.Add(1200)
	words1.Add(34)
	lengths := new(jobgraph.Histogram)
	lengths.Add(3)
	lengths.Add(3)
	lengths.Add(5)
	merged := jobgraph.MergeAccumulators(
		map[string]jobgraph.SerializedAccumulator{"words": jobgraph.SerializeAccumulator(words0)},
		map[string]jobgraph.SerializedAccumulator{"words": jobgraph.SerializeAccumulator(words1), "lengths": jobgraph.SerializeAccumulator(lengths)},
	)
	res := jobgraph.JobResult{Status: jobgraph.JobStatusFinished, Accumulators: merged}

	words, err := jobgraph.AccumulatorValue[int64](res.Accumulators, "words")
	fmt.Println(words, err)
	hist, err := jobgraph.AccumulatorValue[map[int]int](res.Accumulators, "lengths")
	fmt.Println(hist, err)
	_, err = jobgraph.AccumulatorValue[int64](res.Accumulators, "files")
	fmt.Println(err)
	// Output:
	// 1234 <nil>
	// map[3:2 5:1] <nil>
	// accumulator "files": accumulator not found (the job has: "lengths", "words")
}

// maxAcc is a host-defined accumulator kind: the largest value added (0 when none). Safe for
// concurrent use, as accumulators must be.
type maxAcc struct{ v atomic.Int64 }

func (m *maxAcc) Add(v int64) {
	for old := m.v.Load(); v > old && !m.v.CompareAndSwap(old, v); old = m.v.Load() {
	}
}
func (m *maxAcc) Kind() string    { return "example.Max" }
func (m *maxAcc) LocalValue() any { return m.v.Load() }
func (m *maxAcc) Merge(other jobgraph.Accumulator) error {
	o, ok := other.(*maxAcc)
	if !ok {
		return fmt.Errorf("cannot merge a %s into an example.Max", other.Kind())
	}
	m.Add(o.v.Load())
	return nil
}
func (m *maxAcc) MarshalJSON() ([]byte, error) { return json.Marshal(m.v.Load()) }
func (m *maxAcc) UnmarshalJSON(data []byte) error {
	var v int64
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	m.v.Store(v)
	return nil
}

// A host registers its own accumulator kind once, in every process that runs the job's tasks or
// its JobMaster; then snapshots of it merge like the built-in ones.
func ExampleRegisterAccumulator() {
	if err := jobgraph.RegisterAccumulator(func() jobgraph.Accumulator { return new(maxAcc) }); err != nil {
		fmt.Println(err)
		return
	}
	a, b := new(maxAcc), new(maxAcc)
	a.Add(7)
	b.Add(42)
	merged := jobgraph.MergeAccumulators(
		map[string]jobgraph.SerializedAccumulator{"latency-ms": jobgraph.SerializeAccumulator(a)},
		map[string]jobgraph.SerializedAccumulator{"latency-ms": jobgraph.SerializeAccumulator(b)},
	)
	fmt.Println(string(merged["latency-ms"].Value), merged["latency-ms"].Kind)
	// Output: 42 example.Max
}
