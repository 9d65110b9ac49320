package flinkplan_test

import (
	"fmt"

	"github.com/jobgraph/jobgraph/flinkplan"
)

// Import the plan Flink's REST API serves for a job (GET /jobs/:jobid/plan): every node is one
// operator chain and becomes one JobVertex in Flink's "default" slot-sharing group; every input
// becomes an edge whose ship strategy and exchange say how the data flows.
func ExampleParse() {
	plan := []byte(`{
	  "jid": "8ae3c1443d44142c861257df1fb2846c",
	  "name": "Streaming WordCount",
	  "nodes": [
	    {"id": "bc764cd8ddf7a0cff126f51c16239658", "parallelism": 1,
	     "description": "Source: Custom File Source"},
	    {"id": "20ba6b65f97481d5570070de90e4e791", "parallelism": 4,
	     "description": "Split Reader: Custom File Source -&gt; Flat Map",
	     "inputs": [{"num": 0, "id": "bc764cd8ddf7a0cff126f51c16239658",
	                 "ship_strategy": "REBALANCE", "exchange": "pipelined_bounded"}]},
	    {"id": "b5c8d46f3e7b141acf271f12622e752b", "parallelism": 4,
	     "description": "Keyed Aggregation -&gt; Sink: Unnamed",
	     "inputs": [{"num": 0, "id": "20ba6b65f97481d5570070de90e4e791",
	                 "ship_strategy": "HASH", "exchange": "pipelined_bounded"}]}
	  ]}`)

	p, err := flinkplan.Parse(plan)
	if err != nil {
		fmt.Println(err)
		return
	}
	g := p.Graph
	fmt.Println(p.Format, g.JobID, g.Name, g.Type)
	for _, v := range g.Vertices {
		fmt.Printf("%s  p=%d  group=%s\n", v.Name, v.Parallelism, v.SlotSharingGroup)
		for _, e := range v.Inputs {
			fmt.Printf("  <- %s %s\n", e.ShipStrategy, e.DistributionPattern)
		}
	}

	// A broken plan is a *PlanError naming the node.
	_, err = flinkplan.Parse([]byte(`{"nodes": [{"id": "bc764cd8ddf7a0cff126f51c16239658", "parallelism": 0,
	  "description": "Source: Custom File Source"}]}`))
	fmt.Println(err)
	// Output:
	// REST 8ae3c1443d44142c861257df1fb2846c Streaming WordCount STREAMING
	// Source: Custom File Source  p=1  group=default
	// Split Reader: Custom File Source -> Flat Map  p=4  group=default
	//   <- REBALANCE ALL_TO_ALL
	// Keyed Aggregation -> Sink: Unnamed  p=4  group=default
	//   <- HASH ALL_TO_ALL
	// flinkplan: invalid plan: node bc764cd8ddf7a0cff126f51c16239658 "Source: Custom File Source": parallelism 0 is below 1
}
