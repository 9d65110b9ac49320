package jobgraph_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jobgraph/jobgraph"
)

// BenchmarkDecode decodes a chain of 1,000 vertices (about 330 KB of JSON): the struct decode
// plus the duplicate-key pass.
func BenchmarkDecode(b *testing.B) {
	g := jobgraph.New("chain", jobgraph.Streaming)
	prev := g.AddVertex("v0", "run", 4)
	for i := 1; i < 1000; i++ {
		v := g.AddVertex(fmt.Sprintf("v%d", i), "run", 4)
		g.Connect(prev, v, jobgraph.Pointwise, jobgraph.Pipelined).ShipStrategy = "FORWARD"
		prev = v
	}
	data, err := json.Marshal(g)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jobgraph.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
