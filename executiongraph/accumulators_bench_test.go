package executiongraph

import (
	"testing"

	"github.com/jobgraph/jobgraph"
)

// BenchmarkAggregateUserAccumulators measures what every Archive (RequestJob, the job's end) adds
// for accumulators. source → sink ALL_TO_ALL BLOCKING at parallelism N (2N subtasks); each
// subtask reports an IntCounter, a LongCounter and a Histogram of 4 values, as a TaskExecutor
// sends them. "merge": one subtask's snapshot changed since the last call (a heartbeat came), so
// every snapshot is decoded and merged; "cached": nothing changed, the last result is copied.
func BenchmarkAggregateUserAccumulators(b *testing.B) {
	for _, bc := range []struct {
		p     int
		merge bool
	}{{4000, true}, {10000, true}, {10000, false}} {
		name := "cached"
		if bc.merge {
			name = "merge"
		}
		p := bc.p
		b.Run(name+"-"+itoa(2*p)+"-subtasks", func(b *testing.B) {
			eg, err := Build(benchJobGraph(p, jobgraph.Batch, jobgraph.Blocking))
			if err != nil {
				b.Fatal(err)
			}
			for v := range eg.Vertices() {
				ic, lc, h := new(jobgraph.IntCounter), new(jobgraph.LongCounter), new(jobgraph.Histogram)
				ic.Add(v.SubtaskIndex())
				lc.Add(int64(v.SubtaskIndex()) << 20)
				for k := range 4 {
					h.Add(v.SubtaskIndex()%16 + k)
				}
				v.CurrentExecution().SetAccumulators(map[string]jobgraph.SerializedAccumulator{
					"records": jobgraph.SerializeAccumulator(ic),
					"bytes":   jobgraph.SerializeAccumulator(lc),
					"keys":    jobgraph.SerializeAccumulator(h),
				})
			}
			first := eg.JobVertices()[0].Vertex(0).CurrentExecution()
			snap := first.UserAccumulators()
			b.ReportAllocs()
			for b.Loop() {
				if bc.merge {
					first.SetAccumulators(snap)
				}
				if accs := eg.AggregateUserAccumulators(); len(accs) != 3 {
					b.Fatalf("%d accumulators", len(accs))
				}
			}
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var buf [20]byte
	i := len(buf)
	for ; n > 0; n /= 10 {
		i--
		buf[i] = byte('0' + n%10)
	}
	return string(buf[i:])
}
