package flinkplan

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/jobgraph/jobgraph"
)

// FuzzImport feeds Parse every testdata plan, some broken plans, and what the fuzzer makes of
// them. Parse must not panic; it either fails with a *PlanError or returns a graph that passes
// Validate, holds every plan node in exactly one vertex, and is the same on a second import.
func FuzzImport(f *testing.F) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		``,
		`{`,
		`null`,
		`{"nodes":null}`,
		`{"jid":"` + idA + `","nodes":[]}`,
		string(restPlanJSON("", restNodeJSON(idB, "sink", 1, restInputJSON(0, idX, "HASH", "")))),
		string(restPlanJSON("", restNodeJSON(idA, "a", 1, restInputJSON(0, idA, "FORWARD", "blocking")))),
		string(restPlanJSON(`,"type":"batch"`, restNodeJSON(idB, "b", "2", restInputJSON(1, idA, "rescale", "hybrid_selective")), restNodeJSON(idA, "a &amp; b<br/>", 2))),
		string(restPlanJSON("", restNodeJSON(idA, "a", 0))),
		string(restPlanJSON("", restNodeJSON(idB, "b", 1, restInputJSON(0, idA, "HASH", "nope")), restNodeJSON(idA, "a", 1))),
		string(execPlanJSON("", execNodeJSON(1, "A", 2), execNodeJSON(2, "B", 2, pred(1, "FORWARD")), execNodeJSON(3, "C", 2, pred(1, "FORWARD")), execNodeJSON(4, "D", 1, pred(2, "HASH"), pred(3, "REBALANCE")))),
		string(execPlanJSON("", execNodeJSON(1, "A", 1, pred(2, "FORWARD")), execNodeJSON(2, "B", 1, pred(1, "FORWARD")))),
		string(execPlanJSON("", execNodeJSON(1, "A", "default"))),
		string(execPlanJSON("", execNodeJSON(1, "A", 1), execNodeJSON(1, "B", 1))),
		"== Physical Execution Plan ==\n" + string(execPlanJSON("", execNodeJSON(1, "A", 1))),
	} {
		f.Add([]byte(seed))
	}
	jobID := jobgraph.NewJobID()
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, WithJobID(jobID))
		if err != nil {
			if !errors.Is(err, ErrInvalidPlan) {
				t.Fatalf("error is not a *PlanError: %v", err)
			}
			return
		}
		if err := p.Graph.Validate(); err != nil {
			t.Fatalf("imported graph does not validate: %v", err)
		}
		if len(p.Operators) != len(p.Graph.Vertices) {
			t.Fatalf("%d operator lists for %d vertices", len(p.Operators), len(p.Graph.Vertices))
		}
		// Every plan node lands in exactly one vertex.
		var top struct{ Nodes []json.RawMessage }
		body, _ := planJSON(data)
		if err := json.Unmarshal(body, &top); err != nil {
			t.Fatalf("imported a plan whose nodes do not decode: %v", err)
		}
		seen := map[string]bool{}
		for _, ops := range p.Operators {
			for _, op := range ops {
				if seen[op.ID] {
					t.Fatalf("node %s is in two vertices", op.ID)
				}
				seen[op.ID] = true
			}
		}
		if len(seen) != len(top.Nodes) {
			t.Fatalf("%d nodes in vertices, %d in the plan", len(seen), len(top.Nodes))
		}
		again, err := Parse(data, WithJobID(jobID))
		if err != nil {
			t.Fatalf("second import failed: %v", err)
		}
		if !reflect.DeepEqual(p.Graph, again.Graph) {
			t.Fatalf("two imports differ")
		}
	})
}
